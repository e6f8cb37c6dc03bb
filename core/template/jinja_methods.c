/* SPDX-License-Identifier: Apache-2.0 */
/* Python methods of strings, lists and dicts as chat templates call them
 * (content.strip(), name.startswith('x'), messages.pop(0), tool.get('x', y), ...), the global
 * functions (range, namespace, raise_exception, strftime_now, dict) and "%" formatting. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "template/jinja_int.h"

static jv mk_func(jn_ctx *c, jn_native fn, jv self, const char *name) {
    jn_func *f = jn_alloc(c->a, sizeof *f);
    memset(f, 0, sizeof *f);
    f->native = fn;
    f->self = self;
    f->name = name;
    return (jv){.t = JV_FUNC, .u.fn = f};
}

static jv strv(jn_ctx *c, jn_buf *o) {
    (void)c;
    return o->n ? (jv){.t = JV_STR, .u.s = {o->p, o->n}} : jv_cstr("");
}

static int has_prefix(jv s, jv p, int suffix) {
    if (p.t != JV_STR || p.u.s.n > s.u.s.n) return 0;
    return !memcmp(s.u.s.p + (suffix ? s.u.s.n - p.u.s.n : 0), p.u.s.p, p.u.s.n);
}

static int64_t find(jv s, jv sub, int reverse) {
    if (sub.t != JV_STR || sub.u.s.n > s.u.s.n) return -1;
    size_t last = s.u.s.n - sub.u.s.n;
    for (size_t k = 0; k <= last; k++) {
        size_t i = reverse ? last - k : k;
        if (!memcmp(s.u.s.p + i, sub.u.s.p, sub.u.s.n)) return (int64_t)i;
    }
    return -1;
}

static jv split(jn_ctx *c, jv s, jv sep, jv maxsplit, int reverse) {
    jv r = jv_list(c->a);
    int64_t max = maxsplit.t == JV_INT ? maxsplit.u.i : -1, done = 0;
    const char *p = s.u.s.p, *e = p + s.u.s.n;
    if (sep.t != JV_STR) { /* runs of whitespace, no empty items */
        while (p < e) {
            while (p < e && isspace((unsigned char)*p)) p++;
            if (p >= e) break;
            const char *q = p;
            if (max >= 0 && done >= max) q = e;
            else
                while (q < e && !isspace((unsigned char)*q)) q++;
            jn_list_push(c->a, r.u.l, jv_str(c->a, p, (size_t)(q - p)));
            done++;
            p = q;
        }
        return r;
    }
    if (reverse && max >= 0) { /* rsplit with a limit: split from the right */
        jv parts = jv_list(c->a);
        const char *end = e;
        while (done < max) {
            jv rest = {.t = JV_STR, .u.s = {p, (size_t)(end - p)}};
            int64_t at = find(rest, sep, 1);
            if (at < 0) break;
            jn_list_push(c->a, parts.u.l, jv_str(c->a, p + at + sep.u.s.n, (size_t)(end - p - at - (int64_t)sep.u.s.n)));
            end = p + at;
            done++;
        }
        jn_list_push(c->a, r.u.l, jv_str(c->a, p, (size_t)(end - p)));
        for (size_t i = parts.u.l->n; i > 0; i--) jn_list_push(c->a, r.u.l, parts.u.l->v[i - 1]);
        return r;
    }
    for (;;) {
        jv rest = {.t = JV_STR, .u.s = {p, (size_t)(e - p)}};
        int64_t at = (max >= 0 && done >= max) || !sep.u.s.n ? -1 : find(rest, sep, 0);
        if (at < 0) {
            jn_list_push(c->a, r.u.l, jv_str(c->a, p, (size_t)(e - p)));
            return r;
        }
        jn_list_push(c->a, r.u.l, jv_str(c->a, p, (size_t)at));
        p += at + (int64_t)sep.u.s.n;
        done++;
    }
}

/* str.format: "{}", "{0}", "{name}" (no format specs beyond a plain field). */
static jv str_format(jn_ctx *c, jv s, const jn_args *a) {
    jn_buf o = {.a = c->a};
    size_t auto_i = 0;
    for (size_t i = 0; i < s.u.s.n; i++) {
        char ch = s.u.s.p[i];
        if ((ch == '{' || ch == '}') && i + 1 < s.u.s.n && s.u.s.p[i + 1] == ch) {
            jn_buf_put(&o, &ch, 1);
            i++;
            continue;
        }
        if (ch != '{') {
            jn_buf_put(&o, &ch, 1);
            continue;
        }
        const char *close = memchr(s.u.s.p + i, '}', s.u.s.n - i);
        if (!close) break;
        size_t n = (size_t)(close - (s.u.s.p + i + 1));
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), s.u.s.p + i + 1);
        jv v;
        if (!name[0]) v = jn_arg(a, auto_i++, NULL);
        else if (isdigit((unsigned char)name[0])) v = jn_arg(a, (size_t)atoi(name), NULL);
        else v = jn_arg(a, (size_t)-1, name);
        jv_write_str(&o, v);
        i = (size_t)(close - s.u.s.p);
    }
    return strv(c, &o);
}

static jv str_method(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    jv s = f->self, a0 = jn_arg(a, 0, NULL), a1 = jn_arg(a, 1, NULL);
    const char *m = f->name;
    if (!strcmp(m, "strip")) return jn_strip(c, s, a0, 3);
    if (!strcmp(m, "lstrip")) return jn_strip(c, s, a0, 1);
    if (!strcmp(m, "rstrip")) return jn_strip(c, s, a0, 2);
    if (!strcmp(m, "upper") || !strcmp(m, "lower") || !strcmp(m, "title") || !strcmp(m, "capitalize"))
        return jn_filter(c, m, s, &(jn_args){.pos = &s, .npos = 1}, at);
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        int suffix = m[0] == 'e';
        if (a0.t == JV_LIST) {
            for (size_t i = 0; i < a0.u.l->n; i++)
                if (has_prefix(s, a0.u.l->v[i], suffix)) return jv_bool(1);
            return jv_bool(0);
        }
        return jv_bool(has_prefix(s, a0, suffix));
    }
    if (!strcmp(m, "split")) return split(c, s, a0.t == JV_UNDEF ? jn_arg(a, 99, "sep") : a0, a1.t == JV_UNDEF ? jn_arg(a, 99, "maxsplit") : a1, 0);
    if (!strcmp(m, "rsplit")) return split(c, s, a0.t == JV_UNDEF ? jn_arg(a, 99, "sep") : a0, a1.t == JV_UNDEF ? jn_arg(a, 99, "maxsplit") : a1, 1);
    if (!strcmp(m, "splitlines")) return split(c, jn_replace(c, s, jv_cstr("\r\n"), jv_cstr("\n"), -1), jv_cstr("\n"), jv_undef(), 0);
    if (!strcmp(m, "replace")) return jn_replace(c, s, a0, a1, jn_arg(a, 2, "count").t == JV_INT ? jn_arg(a, 2, "count").u.i : -1);
    if (!strcmp(m, "find")) return jv_int(find(s, a0, 0));
    if (!strcmp(m, "rfind")) return jv_int(find(s, a0, 1));
    if (!strcmp(m, "index")) {
        int64_t i = find(s, a0, 0);
        if (i < 0) jn_fail(c, at, "substring not found");
        return jv_int(i);
    }
    if (!strcmp(m, "count")) {
        int64_t n = 0;
        if (a0.t != JV_STR || !a0.u.s.n) return jv_int(0);
        for (size_t i = 0; i + a0.u.s.n <= s.u.s.n;)
            if (!memcmp(s.u.s.p + i, a0.u.s.p, a0.u.s.n)) {
                n++;
                i += a0.u.s.n;
            } else i++;
        return jv_int(n);
    }
    if (!strcmp(m, "join")) {
        jn_list *l = jn_iterable(c, a0, at);
        jn_buf o = {.a = c->a};
        for (size_t i = 0; i < l->n; i++) {
            if (i) jn_buf_put(&o, s.u.s.p, s.u.s.n);
            jv_write_str(&o, l->v[i]);
        }
        return strv(c, &o);
    }
    if (!strcmp(m, "removeprefix") || !strcmp(m, "removesuffix")) {
        int suffix = m[6] == 's';
        if (!has_prefix(s, a0, suffix)) return s;
        return jv_str(c->a, s.u.s.p + (suffix ? 0 : a0.u.s.n), s.u.s.n - a0.u.s.n);
    }
    if (!strcmp(m, "format")) return str_format(c, s, a);
    if (!strncmp(m, "is", 2)) {
        int (*cls)(int) = !strcmp(m, "isdigit") || !strcmp(m, "isnumeric") ? isdigit : !strcmp(m, "isalpha") ? isalpha
                        : !strcmp(m, "isalnum") ? isalnum : !strcmp(m, "isspace") ? isspace : !strcmp(m, "islower") ? islower
                        : isupper;
        if (!s.u.s.n) return jv_bool(0);
        for (size_t i = 0; i < s.u.s.n; i++)
            if (!cls((unsigned char)s.u.s.p[i]) && (cls == islower || cls == isupper ? isalpha((unsigned char)s.u.s.p[i]) : 1))
                return jv_bool(0);
        return jv_bool(1);
    }
    jn_fail(c, at, "strings have no method '%s'", m);
}

static jv list_method(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    jn_list *l = f->self.u.l;
    jv a0 = jn_arg(a, 0, NULL);
    const char *m = f->name;
    if (!strcmp(m, "append")) {
        jn_list_push(c->a, l, a0);
        return jv_none();
    }
    if (!strcmp(m, "extend")) {
        jn_list *src = jn_iterable(c, a0, at);
        for (size_t i = 0; i < src->n; i++) jn_list_push(c->a, l, src->v[i]);
        return jv_none();
    }
    if (!strcmp(m, "pop")) {
        if (!l->n) jn_fail(c, at, "pop from an empty list");
        int64_t i = a0.t == JV_INT ? a0.u.i : (int64_t)l->n - 1;
        if (i < 0) i += (int64_t)l->n;
        if (i < 0 || i >= (int64_t)l->n) jn_fail(c, at, "pop index out of range");
        jv v = l->v[i];
        memmove(l->v + i, l->v + i + 1, (l->n - (size_t)i - 1) * sizeof(jv));
        l->n--;
        return v;
    }
    if (!strcmp(m, "insert")) {
        int64_t i = a0.t == JV_INT ? a0.u.i : 0;
        if (i < 0) i += (int64_t)l->n;
        if (i < 0) i = 0;
        if (i > (int64_t)l->n) i = (int64_t)l->n;
        jn_list_push(c->a, l, jv_none());
        memmove(l->v + i + 1, l->v + i, (l->n - (size_t)i - 1) * sizeof(jv));
        l->v[i] = jn_arg(a, 1, NULL);
        return jv_none();
    }
    if (!strcmp(m, "index") || !strcmp(m, "count")) {
        int64_t n = 0;
        for (size_t i = 0; i < l->n; i++)
            if (jv_equal(l->v[i], a0)) {
                if (m[0] == 'i') return jv_int((int64_t)i);
                n++;
            }
        if (m[0] == 'i') jn_fail(c, at, "value is not in the list");
        return jv_int(n);
    }
    if (!strcmp(m, "copy")) {
        jv r = jv_list(c->a);
        for (size_t i = 0; i < l->n; i++) jn_list_push(c->a, r.u.l, l->v[i]);
        return r;
    }
    if (!strcmp(m, "reverse")) {
        for (size_t i = 0; i < l->n / 2; i++) {
            jv t = l->v[i];
            l->v[i] = l->v[l->n - 1 - i];
            l->v[l->n - 1 - i] = t;
        }
        return jv_none();
    }
    jn_fail(c, at, "lists have no method '%s'", m);
}

static jv dict_method(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    jn_dict *d = f->self.u.d;
    jv a0 = jn_arg(a, 0, NULL), a1 = jn_arg(a, 1, NULL);
    const char *m = f->name;
    if (!strcmp(m, "items") || !strcmp(m, "keys") || !strcmp(m, "values")) {
        if (m[0] == 'i') return jn_filter(c, "items", f->self, &(jn_args){.pos = (jv *)&f->self, .npos = 1}, at);
        jv r = jv_list(c->a);
        for (size_t i = 0; i < d->n; i++) jn_list_push(c->a, r.u.l, m[0] == 'k' ? d->k[i] : d->v[i]);
        return r;
    }
    if (!strcmp(m, "get")) {
        jv v = jn_getitem(c, f->self, a0, at);
        return v.t == JV_UNDEF ? (a1.t == JV_UNDEF ? jv_none() : a1) : v;
    }
    if (!strcmp(m, "setdefault")) {
        jv v = jn_getitem(c, f->self, a0, at);
        if (v.t != JV_UNDEF) return v;
        jn_dict_set(c->a, d, a0, a1.t == JV_UNDEF ? jv_none() : a1);
        return a1;
    }
    if (!strcmp(m, "update")) {
        if (a0.t == JV_DICT)
            for (size_t i = 0; i < a0.u.d->n; i++) jn_dict_set(c->a, d, a0.u.d->k[i], a0.u.d->v[i]);
        for (size_t i = 0; i < a->nkw; i++) jn_dict_set(c->a, d, jv_cstr(a->kname[i]), a->kval[i]);
        return jv_none();
    }
    if (!strcmp(m, "pop")) {
        for (size_t i = 0; i < d->n; i++)
            if (jv_equal(d->k[i], a0)) {
                jv v = d->v[i];
                memmove(d->k + i, d->k + i + 1, (d->n - i - 1) * sizeof(jv));
                memmove(d->v + i, d->v + i + 1, (d->n - i - 1) * sizeof(jv));
                d->n--;
                return v;
            }
        if (a1.t == JV_UNDEF) jn_fail(c, at, "key not found");
        return a1;
    }
    if (!strcmp(m, "copy")) {
        jv r = jv_dict(c->a);
        for (size_t i = 0; i < d->n; i++) jn_dict_set(c->a, r.u.d, d->k[i], d->v[i]);
        return r;
    }
    jn_fail(c, at, "dicts have no method '%s'", m);
}

jv jn_method(jn_ctx *c, jv obj, const char *name, size_t n) {
    static const char *const s_m[] = {"strip", "lstrip", "rstrip", "upper", "lower", "title", "capitalize",
                                      "startswith", "endswith", "split", "rsplit", "splitlines", "replace", "find",
                                      "rfind", "index", "count", "join", "removeprefix", "removesuffix", "format",
                                      "isdigit", "isnumeric", "isalpha", "isalnum", "isspace", "islower", "isupper", NULL};
    static const char *const l_m[] = {"append", "extend", "pop", "insert", "index", "count", "copy", "reverse", NULL};
    static const char *const d_m[] = {"items", "keys", "values", "get", "setdefault", "update", "pop", "copy", NULL};
    const char *const *tab = obj.t == JV_STR ? s_m : obj.t == JV_LIST ? l_m : obj.t == JV_DICT ? d_m : NULL;
    jn_native fn = obj.t == JV_STR ? str_method : obj.t == JV_LIST ? list_method : dict_method;
    for (int i = 0; tab && tab[i]; i++)
        if (strlen(tab[i]) == n && !memcmp(tab[i], name, n)) return mk_func(c, fn, obj, tab[i]);
    return jv_undef();
}

/* ---- globals ------------------------------------------------------------------------------ */
static jv g_range(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    (void)f;
    int64_t b = 0, e, st = 1;
    jv x0 = jn_arg(a, 0, NULL), x1 = jn_arg(a, 1, NULL), x2 = jn_arg(a, 2, NULL);
    if (x0.t != JV_INT) jn_fail(c, at, "range() needs integers");
    if (x1.t == JV_INT) {
        b = x0.u.i;
        e = x1.u.i;
        if (x2.t == JV_INT) st = x2.u.i;
    } else e = x0.u.i;
    if (!st) jn_fail(c, at, "range() step cannot be zero");
    if ((e - b) / st > 1000000) jn_fail(c, at, "range() too long");
    jv r = jv_list(c->a);
    for (int64_t i = b; st > 0 ? i < e : i > e; i += st) jn_list_push(c->a, r.u.l, jv_int(i));
    return r;
}

static jv g_namespace(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    (void)f;
    (void)at;
    jv d = jv_dict(c->a);
    d.ns = 1;
    if (a->npos && a->pos[0].t == JV_DICT)
        for (size_t i = 0; i < a->pos[0].u.d->n; i++) jn_dict_set(c->a, d.u.d, a->pos[0].u.d->k[i], a->pos[0].u.d->v[i]);
    for (size_t i = 0; i < a->nkw; i++) jn_dict_set(c->a, d.u.d, jv_cstr(a->kname[i]), a->kval[i]);
    return d;
}

static jv g_dict(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    jv d = g_namespace(c, f, a, at);
    d.ns = 0;
    return d;
}

static jv g_raise(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    (void)f;
    jv m = jv_to_string(c->a, jn_arg(a, 0, NULL));
    jn_fail(c, at, "template error: %s", m.u.s.p);
}

static jv g_strftime(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    (void)f;
    (void)at;
    jv fmt = jn_arg(a, 0, NULL);
    char out[256] = "";
    time_t now = c->now ? (time_t)c->now : time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    if (fmt.t == JV_STR) strftime(out, sizeof out, fmt.u.s.p, &tm);
    return jv_str(c->a, out, strlen(out));
}

jv jn_global(const char *name, size_t n) {
    static jn_func g[] = {{.native = g_range, .name = "range"},
                          {.native = g_namespace, .name = "namespace"},
                          {.native = g_dict, .name = "dict"},
                          {.native = g_raise, .name = "raise_exception"},
                          {.native = g_strftime, .name = "strftime_now"}};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        if (strlen(g[i].name) == n && !memcmp(g[i].name, name, n)) return (jv){.t = JV_FUNC, .u.fn = &g[i]};
    return jv_undef();
}

/* ---- "%" formatting ------------------------------------------------------------------------- */
jv jn_format_percent(jn_ctx *c, jv fmt, jv args, const jn_node *at) {
    jn_buf o = {.a = c->a};
    size_t k = 0;
    for (size_t i = 0; i < fmt.u.s.n; i++) {
        char ch = fmt.u.s.p[i];
        if (ch != '%' || i + 1 >= fmt.u.s.n) {
            jn_buf_put(&o, &ch, 1);
            continue;
        }
        char spec = fmt.u.s.p[++i];
        if (spec == '%') {
            jn_buf_put(&o, "%", 1);
            continue;
        }
        jv v = args.t == JV_LIST ? (k < args.u.l->n ? args.u.l->v[k] : jv_undef()) : (k == 0 ? args : jv_undef());
        k++;
        if (v.t == JV_UNDEF) jn_fail(c, at, "not enough arguments for format string");
        if (spec == 'd' || spec == 'i') {
            char t[32];
            snprintf(t, sizeof t, "%lld", (long long)(v.t == JV_FLOAT ? (int64_t)v.u.f : v.t == JV_INT ? v.u.i : 0));
            jn_buf_puts(&o, t);
        } else if (spec == 'f') {
            char t[64];
            snprintf(t, sizeof t, "%f", v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : 0.0);
            jn_buf_puts(&o, t);
        } else jv_write_str(&o, v);
    }
    return strv(c, &o);
}
