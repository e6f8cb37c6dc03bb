/* SPDX-License-Identifier: Apache-2.0 */
/* Jinja builtins used by chat templates: filters, tests, global functions. String, list and
 * dict methods (Python's, as templates call them) are in jinja_methods.c. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "template/jinja_int.h"

jv jn_arg(const jn_args *a, size_t pos, const char *kw) {
    for (size_t i = 0; kw && i < a->nkw; i++)
        if (!strcmp(a->kname[i], kw)) return a->kval[i];
    return pos < a->npos ? a->pos[pos] : jv_undef();
}

jn_list *jn_iterable(jn_ctx *c, jv v, const jn_node *at) {
    if (v.t == JV_LIST) return v.u.l;
    jn_list *l = jv_list(c->a).u.l;
    if (v.t == JV_UNDEF || v.t == JV_NONE) return l;
    if (v.t == JV_DICT) {
        for (size_t i = 0; i < v.u.d->n; i++) jn_list_push(c->a, l, v.u.d->k[i]);
        return l;
    }
    if (v.t == JV_STR) {
        for (size_t i = 0; i < v.u.s.n;) { /* one UTF-8 character each */
            size_t k = 1;
            while (i + k < v.u.s.n && ((unsigned char)v.u.s.p[i + k] & 0xC0) == 0x80) k++;
            jn_list_push(c->a, l, jv_str(c->a, v.u.s.p + i, k));
            i += k;
        }
        return l;
    }
    jn_fail(c, at, "%s is not iterable", jv_type_name(v));
}

static jv str_of(jn_ctx *c, jv v) { return jv_to_string(c->a, v); }

static size_t utf8_len(const char *p, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)p[i] & 0xC0) != 0x80;
    return k;
}

static jv map_case(jn_ctx *c, jv v, int mode) { /* 0 lower, 1 upper, 2 title, 3 capitalize */
    v = str_of(c, v);
    char *p = jn_alloc(c->a, v.u.s.n + 1);
    int word_start = 1;
    for (size_t i = 0; i < v.u.s.n; i++) {
        unsigned char ch = (unsigned char)v.u.s.p[i];
        int up = mode == 1 || (mode == 2 && word_start) || (mode == 3 && i == 0);
        p[i] = (char)(ch < 128 ? (up ? toupper(ch) : tolower(ch)) : ch);
        word_start = !isalnum(ch) && ch < 128;
    }
    p[v.u.s.n] = 0;
    return (jv){.t = JV_STR, .u.s = {p, v.u.s.n}};
}

/* Strip chars (default whitespace) from the left (1), right (2) or both (3). */
jv jn_strip(jn_ctx *c, jv v, jv chars, int sides) {
    v = str_of(c, v);
    const char *p = v.u.s.p;
    size_t b = 0, e = v.u.s.n;
    const char *set = chars.t == JV_STR ? chars.u.s.p : NULL;
#define IS_STRIP(ch) (set ? memchr(set, (ch), chars.u.s.n) != NULL : isspace((unsigned char)(ch)))
    if (sides & 1)
        while (b < e && IS_STRIP(p[b])) b++;
    if (sides & 2)
        while (e > b && IS_STRIP(p[e - 1])) e--;
#undef IS_STRIP
    return (jv){.t = JV_STR, .u.s = {jv_str(c->a, p + b, e - b).u.s.p, e - b}};
}

jv jn_replace(jn_ctx *c, jv v, jv from, jv to, int64_t count) {
    v = str_of(c, v);
    from = str_of(c, from);
    to = str_of(c, to);
    jn_buf o = {.a = c->a};
    size_t i = 0;
    int64_t done = 0;
    while (i <= v.u.s.n) {
        if ((count < 0 || done < count) && from.u.s.n && i + from.u.s.n <= v.u.s.n &&
            !memcmp(v.u.s.p + i, from.u.s.p, from.u.s.n)) {
            jn_buf_put(&o, to.u.s.p, to.u.s.n);
            i += from.u.s.n;
            done++;
        } else if (!from.u.s.n && (count < 0 || done < count)) { /* "" matches between characters */
            jn_buf_put(&o, to.u.s.p, to.u.s.n);
            done++;
            if (i < v.u.s.n) jn_buf_put(&o, v.u.s.p + i, 1);
            i++;
        } else {
            if (i < v.u.s.n) jn_buf_put(&o, v.u.s.p + i, 1);
            i++;
        }
    }
    return o.n ? (jv){.t = JV_STR, .u.s = {o.p, o.n}} : jv_cstr("");
}

static jv f_join(jn_ctx *c, jv v, const jn_args *a, const jn_node *at) {
    jv sep = jn_arg(a, 1, "d"), attr = jn_arg(a, 2, "attribute");
    jn_list *l = jn_iterable(c, v, at);
    jn_buf o = {.a = c->a};
    for (size_t i = 0; i < l->n; i++) {
        if (i && sep.t == JV_STR) jn_buf_put(&o, sep.u.s.p, sep.u.s.n);
        jv x = l->v[i];
        if (attr.t == JV_STR) x = jn_getitem(c, x, attr, at);
        jv_write_str(&o, x);
    }
    return o.n ? (jv){.t = JV_STR, .u.s = {o.p, o.n}} : jv_cstr("");
}

static jv f_tojson(jn_ctx *c, jv v, const jn_args *a) {
    jv ind = jn_arg(a, 1, "indent"), sk = jn_arg(a, 99, "sort_keys"), seps = jn_arg(a, 99, "separators");
    int indent = ind.t == JV_INT ? (int)ind.u.i : -1;
    const char *isep = indent >= 0 ? "," : ", ", *ksep = ": ";
    if (seps.t == JV_LIST && seps.u.l->n == 2 && seps.u.l->v[0].t == JV_STR && seps.u.l->v[1].t == JV_STR) {
        isep = seps.u.l->v[0].u.s.p;
        ksep = seps.u.l->v[1].u.s.p;
    }
    jn_buf o = {.a = c->a};
    jv_write_json(&o, v, indent, 0, isep, ksep, jv_truthy(sk));
    return (jv){.t = JV_STR, .u.s = {o.p, o.n}};
}

/* Attribute path "a.b" of x, as the attribute= arguments take it. */
static jv attr_path(jn_ctx *c, jv x, jv path, const jn_node *at) {
    if (path.t == JV_INT) return jn_getitem(c, x, path, at);
    if (path.t != JV_STR) return x;
    const char *p = path.u.s.p;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        x = jn_getitem(c, x, jv_str(c->a, p, n), at);
        p += n + (dot != NULL);
    }
    return x;
}

/* Arguments for a nested filter or test: a slot for the value, then a->pos[from..]. */
static jn_args sub_args(jn_ctx *c, const jn_args *a, size_t from) {
    jn_args r = {0};
    size_t extra = a->npos > from ? a->npos - from : 0;
    r.pos = jn_alloc(c->a, (extra + 1) * sizeof *r.pos);
    r.npos = extra + 1;
    for (size_t i = 0; i < extra; i++) r.pos[i + 1] = a->pos[from + i];
    return r;
}

/* select/reject/selectattr/rejectattr: keep items whose test (default: truthiness) is `want`. */
static jv f_select(jn_ctx *c, jv v, const jn_args *a, const jn_node *at, int want, int by_attr) {
    jn_list *l = jn_iterable(c, v, at);
    jv r = jv_list(c->a);
    size_t first = by_attr ? 2 : 1;
    jv test = jn_arg(a, first, NULL);
    jn_args ta = sub_args(c, a, first + 1);
    for (size_t i = 0; i < l->n; i++) {
        jv x = by_attr ? attr_path(c, l->v[i], jn_arg(a, 1, NULL), at) : l->v[i];
        ta.pos[0] = x;
        int ok = test.t == JV_STR ? jn_test(c, test.u.s.p, x, &ta, at) : jv_truthy(x);
        if (ok == want) jn_list_push(c->a, r.u.l, l->v[i]);
    }
    return r;
}

static jv f_map(jn_ctx *c, jv v, const jn_args *a, const jn_node *at) {
    jn_list *l = jn_iterable(c, v, at);
    jv r = jv_list(c->a), attr = jn_arg(a, 99, "attribute"), dflt = jn_arg(a, 99, "default");
    jv fname = jn_arg(a, 1, NULL);
    jn_args fa = sub_args(c, a, 2);
    for (size_t i = 0; i < l->n; i++) {
        jv x;
        if (attr.t != JV_UNDEF) {
            x = attr_path(c, l->v[i], attr, at);
            if (x.t == JV_UNDEF) x = dflt;
        } else if (fname.t == JV_STR) {
            fa.pos[0] = l->v[i];
            x = jn_filter(c, fname.u.s.p, l->v[i], &fa, at);
        } else x = l->v[i];
        jn_list_push(c->a, r.u.l, x);
    }
    return r;
}

typedef struct sort_ctx {
    jn_ctx *c;
    jv attr;
    int reverse, ci;
    const jn_node *at;
} sort_ctx;
static _Thread_local sort_ctx *t_sort; /* qsort has no user pointer in C11 */

static int sort_cmp(const void *x, const void *y) {
    sort_ctx *s = t_sort;
    jv a = *(const jv *)x, b = *(const jv *)y;
    if (s->attr.t != JV_UNDEF) {
        a = attr_path(s->c, a, s->attr, s->at);
        b = attr_path(s->c, b, s->attr, s->at);
    }
    if (s->ci && a.t == JV_STR && b.t == JV_STR) {
        a = map_case(s->c, a, 0);
        b = map_case(s->c, b, 0);
    }
    int ok, r = jv_compare(a, b, &ok);
    return s->reverse ? -r : r;
}

static jv sorted(jn_ctx *c, jv v, jv attr, int reverse, int ci, const jn_node *at) {
    jn_list *l = jn_iterable(c, v, at);
    jv r = jv_list(c->a);
    for (size_t i = 0; i < l->n; i++) jn_list_push(c->a, r.u.l, l->v[i]);
    sort_ctx s = {c, attr, reverse, ci, at};
    t_sort = &s;
    if (r.u.l->n > 1) qsort(r.u.l->v, r.u.l->n, sizeof(jv), sort_cmp);
    t_sort = NULL;
    return r;
}

static jv f_indent(jn_ctx *c, jv v, const jn_args *a) {
    jv w = jn_arg(a, 1, "width"), first = jn_arg(a, 2, "first"), blank = jn_arg(a, 3, "blank");
    jv pad = w.t == JV_STR ? w : jv_cstr("    ");
    if (w.t == JV_INT) {
        char *p = jn_alloc(c->a, (size_t)(w.u.i > 0 ? w.u.i : 0) + 1);
        int64_t i = 0;
        for (; i < w.u.i; i++) p[i] = ' ';
        p[i] = 0;
        pad = (jv){.t = JV_STR, .u.s = {p, (size_t)i}};
    }
    v = str_of(c, v);
    jn_buf o = {.a = c->a};
    const char *s = v.u.s.p, *e = s + v.u.s.n;
    int line = 0;
    while (s <= e) {
        const char *nl = memchr(s, '\n', (size_t)(e - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(e - s);
        if ((line > 0 || jv_truthy(first)) && (n || jv_truthy(blank))) jn_buf_put(&o, pad.u.s.p, pad.u.s.n);
        jn_buf_put(&o, s, n);
        if (!nl) break;
        jn_buf_put(&o, "\n", 1);
        s = nl + 1;
        line++;
    }
    return o.n ? (jv){.t = JV_STR, .u.s = {o.p, o.n}} : jv_cstr("");
}

static jv f_items(jn_ctx *c, jv v) {
    jv r = jv_list(c->a);
    if (v.t != JV_DICT) return r;
    for (size_t i = 0; i < v.u.d->n; i++) {
        jv pair = jv_list(c->a);
        jn_list_push(c->a, pair.u.l, v.u.d->k[i]);
        jn_list_push(c->a, pair.u.l, v.u.d->v[i]);
        jn_list_push(c->a, r.u.l, pair);
    }
    return r;
}

static jv f_length(jn_ctx *c, jv v, const jn_node *at) {
    if (v.t == JV_STR) return jv_int((int64_t)utf8_len(v.u.s.p, v.u.s.n));
    if (v.t == JV_DICT) return jv_int((int64_t)v.u.d->n);
    if (v.t == JV_UNDEF || v.t == JV_NONE) return jv_int(0);
    return jv_int((int64_t)jn_iterable(c, v, at)->n);
}

static jv f_int(jn_ctx *c, jv v, jv dflt) {
    (void)c;
    if (v.t == JV_INT) return v;
    if (v.t == JV_BOOL) return jv_int(v.u.b);
    if (v.t == JV_FLOAT) return jv_int((int64_t)v.u.f);
    if (v.t == JV_STR) {
        char *end;
        double d = strtod(v.u.s.p, &end);
        if (end != v.u.s.p) return jv_int((int64_t)d);
    }
    return dflt.t == JV_UNDEF ? jv_int(0) : dflt;
}

static jv f_minmax(jn_ctx *c, jv v, const jn_args *a, const jn_node *at, int want_max) {
    jn_list *l = jn_iterable(c, v, at);
    jv attr = jn_arg(a, 99, "attribute");
    if (!l->n) return jv_undef();
    size_t best = 0;
    for (size_t i = 1; i < l->n; i++) {
        int ok, r = jv_compare(attr_path(c, l->v[i], attr, at), attr_path(c, l->v[best], attr, at), &ok);
        if (ok && (want_max ? r > 0 : r < 0)) best = i;
    }
    return l->v[best];
}

static jv f_unique(jn_ctx *c, jv v, const jn_node *at) {
    jn_list *l = jn_iterable(c, v, at);
    jv r = jv_list(c->a);
    for (size_t i = 0; i < l->n; i++) {
        int seen = 0;
        for (size_t k = 0; k < r.u.l->n && !seen; k++) seen = jv_equal(r.u.l->v[k], l->v[i]);
        if (!seen) jn_list_push(c->a, r.u.l, l->v[i]);
    }
    return r;
}

static jv f_escape(jn_ctx *c, jv v) {
    v = str_of(c, v);
    jn_buf o = {.a = c->a};
    for (size_t i = 0; i < v.u.s.n; i++) {
        char ch = v.u.s.p[i];
        const char *rep = ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '"' ? "&#34;" : ch == '\'' ? "&#39;" : NULL;
        if (rep) jn_buf_puts(&o, rep);
        else jn_buf_put(&o, &ch, 1);
    }
    return o.n ? (jv){.t = JV_STR, .u.s = {o.p, o.n}} : jv_cstr("");
}

static jv f_sum(jn_ctx *c, jv v, const jn_args *a, const jn_node *at) {
    jn_list *l = jn_iterable(c, v, at);
    jv attr = jn_arg(a, 99, "attribute"), start = jn_arg(a, 99, "start");
    int64_t si = start.t == JV_INT ? start.u.i : 0;
    double sf = 0;
    int fl = 0;
    for (size_t i = 0; i < l->n; i++) {
        jv x = attr_path(c, l->v[i], attr, at);
        if (x.t == JV_FLOAT) {
            fl = 1;
            sf += x.u.f;
        } else if (x.t == JV_INT) si += x.u.i;
    }
    return fl ? jv_float(sf + (double)si) : jv_int(si);
}

/* Filters over sequences and numbers (the second half of jn_filter). */
static jv filter_seq(jn_ctx *c, const char *f, jv v, const jn_args *a, const jn_node *at) {
    if (!strcmp(f, "selectattr")) return f_select(c, v, a, at, 1, 1);
    if (!strcmp(f, "rejectattr")) return f_select(c, v, a, at, 0, 1);
    if (!strcmp(f, "select")) return f_select(c, v, a, at, 1, 0);
    if (!strcmp(f, "reject")) return f_select(c, v, a, at, 0, 0);
    if (!strcmp(f, "map")) return f_map(c, v, a, at);
    if (!strcmp(f, "sort"))
        return sorted(c, v, jn_arg(a, 3, "attribute"), jv_truthy(jn_arg(a, 1, "reverse")),
                      !jv_truthy(jn_arg(a, 2, "case_sensitive")), at);
    if (!strcmp(f, "dictsort")) return sorted(c, f_items(c, v), jv_int(0), jv_truthy(jn_arg(a, 3, "reverse")), 1, at);
    if (!strcmp(f, "unique")) return f_unique(c, v, at);
    if (!strcmp(f, "indent")) return f_indent(c, v, a);
    if (!strcmp(f, "int")) return f_int(c, v, jn_arg(a, 1, "default"));
    if (!strcmp(f, "float")) {
        if (v.t == JV_FLOAT) return v;
        if (v.t == JV_INT) return jv_float((double)v.u.i);
        if (v.t == JV_STR) return jv_float(strtod(v.u.s.p, NULL));
        return jv_float(0);
    }
    if (!strcmp(f, "abs")) return v.t == JV_INT ? jv_int(v.u.i < 0 ? -v.u.i : v.u.i) : v.t == JV_FLOAT ? jv_float(fabs(v.u.f)) : v;
    if (!strcmp(f, "round")) {
        jv p = jn_arg(a, 1, "precision");
        double m = pow(10.0, p.t == JV_INT ? (double)p.u.i : 0.0);
        double x = v.t == JV_INT ? (double)v.u.i : v.t == JV_FLOAT ? v.u.f : 0.0;
        return jv_float(round(x * m) / m);
    }
    if (!strcmp(f, "min")) return f_minmax(c, v, a, at, 0);
    if (!strcmp(f, "max")) return f_minmax(c, v, a, at, 1);
    if (!strcmp(f, "sum")) return f_sum(c, v, a, at);
    if (!strcmp(f, "e") || !strcmp(f, "escape") || !strcmp(f, "forceescape")) return f_escape(c, v);
    if (!strcmp(f, "wordcount")) {
        v = str_of(c, v);
        int64_t n = 0;
        for (size_t i = 0; i < v.u.s.n; i++)
            if (!isspace((unsigned char)v.u.s.p[i]) && (i == 0 || isspace((unsigned char)v.u.s.p[i - 1]))) n++;
        return jv_int(n);
    }
    if (!strcmp(f, "batch")) {
        jn_list *l = jn_iterable(c, v, at);
        jv sz = jn_arg(a, 1, "linecount"), r = jv_list(c->a), cur = jv_undef();
        int64_t k = sz.t == JV_INT && sz.u.i > 0 ? sz.u.i : 1;
        for (size_t i = 0; i < l->n; i++) {
            if (i % (size_t)k == 0) {
                cur = jv_list(c->a);
                jn_list_push(c->a, r.u.l, cur);
            }
            jn_list_push(c->a, cur.u.l, l->v[i]);
        }
        return r;
    }
    if (!strcmp(f, "format")) {
        jv args = jv_list(c->a);
        for (size_t i = 1; i < a->npos; i++) jn_list_push(c->a, args.u.l, a->pos[i]);
        return jn_format_percent(c, str_of(c, v), args, at);
    }
    jn_fail(c, at, "unknown filter '%s'", f);
}

/* ---- tests ---------------------------------------------------------------------------------- */
int jn_test(jn_ctx *c, const char *t, jv v, const jn_args *a, const jn_node *at) {
    jv arg = jn_arg(a, 1, NULL); /* pos[0] is the value itself */
    if (!strcmp(t, "defined")) return v.t != JV_UNDEF;
    if (!strcmp(t, "undefined")) return v.t == JV_UNDEF;
    if (!strcmp(t, "none")) return v.t == JV_NONE;
    if (!strcmp(t, "string")) return v.t == JV_STR;
    if (!strcmp(t, "number")) return v.t == JV_INT || v.t == JV_FLOAT;
    if (!strcmp(t, "integer")) return v.t == JV_INT;
    if (!strcmp(t, "float")) return v.t == JV_FLOAT;
    if (!strcmp(t, "boolean")) return v.t == JV_BOOL;
    if (!strcmp(t, "true")) return v.t == JV_BOOL && v.u.b;
    if (!strcmp(t, "false")) return v.t == JV_BOOL && !v.u.b;
    if (!strcmp(t, "mapping")) return v.t == JV_DICT;
    if (!strcmp(t, "sequence")) return v.t == JV_LIST || v.t == JV_STR || v.t == JV_DICT;
    if (!strcmp(t, "iterable")) return v.t == JV_LIST || v.t == JV_STR || v.t == JV_DICT;
    if (!strcmp(t, "callable")) return v.t == JV_FUNC;
    if (!strcmp(t, "even") || !strcmp(t, "odd")) {
        if (v.t != JV_INT) jn_fail(c, at, "'%s' needs an integer", t);
        return (v.u.i % 2 == 0) == (t[0] == 'e');
    }
    if (!strcmp(t, "divisibleby")) return v.t == JV_INT && arg.t == JV_INT && arg.u.i && v.u.i % arg.u.i == 0;
    if (!strcmp(t, "equalto") || !strcmp(t, "eq") || !strcmp(t, "==") || !strcmp(t, "sameas")) return jv_equal(v, arg);
    if (!strcmp(t, "ne")) return !jv_equal(v, arg);
    if (!strcmp(t, "lower") || !strcmp(t, "upper")) {
        if (v.t != JV_STR) return 0;
        for (size_t i = 0; i < v.u.s.n; i++)
            if (t[0] == 'l' ? isupper((unsigned char)v.u.s.p[i]) : islower((unsigned char)v.u.s.p[i])) return 0;
        return 1;
    }
    if (!strcmp(t, "in")) {
        jv hay = arg;
        if (hay.t == JV_LIST) {
            for (size_t i = 0; i < hay.u.l->n; i++)
                if (jv_equal(hay.u.l->v[i], v)) return 1;
            return 0;
        }
        if (hay.t == JV_DICT) return jn_getitem(c, hay, v, at).t != JV_UNDEF;
        if (hay.t == JV_STR && v.t == JV_STR) return strstr(hay.u.s.p, v.u.s.p) != NULL;
        return 0;
    }
    if (!strcmp(t, "gt") || !strcmp(t, "ge") || !strcmp(t, "lt") || !strcmp(t, "le")) {
        int ok, r = jv_compare(v, arg, &ok);
        if (!ok) return 0;
        return t[0] == 'g' ? (t[1] == 't' ? r > 0 : r >= 0) : (t[1] == 't' ? r < 0 : r <= 0);
    }
    jn_fail(c, at, "unknown test '%s'", t);
}


jv jn_filter(jn_ctx *c, const char *f, jv v, const jn_args *a, const jn_node *at) {
    if (!strcmp(f, "length") || !strcmp(f, "count")) return f_length(c, v, at);
    if (!strcmp(f, "string")) return str_of(c, v);
    if (!strcmp(f, "safe")) return v;
    if (!strcmp(f, "trim")) return jn_strip(c, v, jn_arg(a, 1, "chars"), 3);
    if (!strcmp(f, "upper")) return map_case(c, v, 1);
    if (!strcmp(f, "lower")) return map_case(c, v, 0);
    if (!strcmp(f, "title")) return map_case(c, v, 2);
    if (!strcmp(f, "capitalize")) return map_case(c, map_case(c, v, 0), 3);
    if (!strcmp(f, "tojson")) return f_tojson(c, v, a);
    if (!strcmp(f, "join")) return f_join(c, v, a, at);
    if (!strcmp(f, "items")) return f_items(c, v);
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        int use_bool = jv_truthy(jn_arg(a, 2, "boolean"));
        if (v.t == JV_UNDEF || (use_bool && !jv_truthy(v))) {
            jv d = jn_arg(a, 1, "default_value");
            return d.t == JV_UNDEF ? jv_cstr("") : d;
        }
        return v;
    }
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        jn_list *l = jn_iterable(c, v, at);
        return l->n ? l->v[f[0] == 'f' ? 0 : l->n - 1] : jv_undef();
    }
    if (!strcmp(f, "list")) return (jv){.t = JV_LIST, .u.l = jn_iterable(c, v, at)};
    if (!strcmp(f, "reverse")) {
        if (v.t == JV_STR) {
            jn_buf o = {.a = c->a};
            for (size_t i = v.u.s.n; i > 0; i--) jn_buf_put(&o, v.u.s.p + i - 1, 1);
            return o.n ? (jv){.t = JV_STR, .u.s = {o.p, o.n}} : jv_cstr("");
        }
        jn_list *l = jn_iterable(c, v, at);
        jv r = jv_list(c->a);
        for (size_t i = l->n; i > 0; i--) jn_list_push(c->a, r.u.l, l->v[i - 1]);
        return r;
    }
    if (!strcmp(f, "replace")) {
        jv cnt = jn_arg(a, 3, "count");
        return jn_replace(c, v, jn_arg(a, 1, "old"), jn_arg(a, 2, "new"), cnt.t == JV_INT ? cnt.u.i : -1);
    }
    return filter_seq(c, f, v, a, at);
}
