/* SPDX-License-Identifier: Apache-2.0 */
/* Values of the Jinja engine: the arena, construction, truth, equality, ordering, and their
 * text as Python prints them (str() and json.dumps()). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_int.h"

struct jn_chunk {
    struct jn_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *jn_alloc(jn_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!n) n = 16;
    struct jn_chunk *h = a->head;
    if (!h || h->used + n > h->cap) {
        size_t cap = n > 65536 ? n : 65536;
        if (a->used + cap > a->limit) {
            if (a->oom) longjmp(*a->oom, 1);
            return NULL;
        }
        h = malloc(sizeof *h + cap);
        if (!h) {
            if (a->oom) longjmp(*a->oom, 1);
            return NULL;
        }
        h->next = a->head;
        h->used = 0;
        h->cap = cap;
        a->head = h;
        a->used += cap;
    }
    void *p = h->data + h->used;
    h->used += n;
    return p;
}

void jn_arena_free(jn_arena *a) {
    struct jn_chunk *h = a->head;
    while (h) {
        struct jn_chunk *n = h->next;
        free(h);
        h = n;
    }
    a->head = NULL;
    a->used = 0;
}

jv jv_undef(void) { return (jv){.t = JV_UNDEF}; }
jv jv_none(void) { return (jv){.t = JV_NONE}; }
jv jv_bool(int b) { return (jv){.t = JV_BOOL, .u.b = !!b}; }
jv jv_int(int64_t i) { return (jv){.t = JV_INT, .u.i = i}; }
jv jv_float(double f) { return (jv){.t = JV_FLOAT, .u.f = f}; }

jv jv_str(jn_arena *a, const char *p, size_t n) {
    char *s = jn_alloc(a, n + 1);
    if (n) memcpy(s, p, n);
    s[n] = 0;
    return (jv){.t = JV_STR, .u.s = {s, n}};
}

jv jv_cstr(const char *s) { return (jv){.t = JV_STR, .u.s = {s, strlen(s)}}; }

jv jv_list(jn_arena *a) {
    jn_list *l = jn_alloc(a, sizeof *l);
    memset(l, 0, sizeof *l);
    return (jv){.t = JV_LIST, .u.l = l};
}

jv jv_dict(jn_arena *a) {
    jn_dict *d = jn_alloc(a, sizeof *d);
    memset(d, 0, sizeof *d);
    return (jv){.t = JV_DICT, .u.d = d};
}

void jn_list_push(jn_arena *a, jn_list *l, jv v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        jv *nv = jn_alloc(a, cap * sizeof *nv);
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
}

static int key_eq(jv k, const char *s, size_t n) { return k.t == JV_STR && k.u.s.n == n && !memcmp(k.u.s.p, s, n); }

jv *jn_dict_get(const jn_dict *d, const char *k, size_t n) {
    for (size_t i = 0; i < d->n; i++)
        if (key_eq(d->k[i], k, n)) return &d->v[i];
    return NULL;
}

void jn_dict_set(jn_arena *a, jn_dict *d, jv k, jv v) {
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->k[i], k)) {
            d->v[i] = v;
            return;
        }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        jv *nk = jn_alloc(a, cap * sizeof *nk), *nv = jn_alloc(a, cap * sizeof *nv);
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof *nk);
            memcpy(nv, d->v, d->n * sizeof *nv);
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = k;
    d->v[d->n++] = v;
}

int jv_truthy(jv v) {
    switch (v.t) {
    case JV_UNDEF:
    case JV_NONE: return 0;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return v.u.s.n != 0;
    case JV_LIST: return v.u.l->n != 0;
    case JV_DICT: return v.ns || v.u.d->n != 0;
    default: return 1;
    }
}

static int is_num(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double num(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b; }

int jv_equal(jv a, jv b) {
    if (is_num(a) && is_num(b)) {
        if (a.t != JV_FLOAT && b.t != JV_FLOAT) return (a.t == JV_INT ? a.u.i : a.u.b) == (b.t == JV_INT ? b.u.i : b.u.b);
        return num(a) == num(b);
    }
    if (a.t != b.t) return 0;
    switch (a.t) {
    case JV_UNDEF:
    case JV_NONE: return 1;
    case JV_STR: return a.u.s.n == b.u.s.n && !memcmp(a.u.s.p, b.u.s.p, a.u.s.n);
    case JV_LIST:
        if (a.u.l->n != b.u.l->n) return 0;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!jv_equal(a.u.l->v[i], b.u.l->v[i])) return 0;
        return 1;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n) return 0;
        for (size_t i = 0; i < a.u.d->n; i++) {
            jv k = a.u.d->k[i];
            jv *o = k.t == JV_STR ? jn_dict_get(b.u.d, k.u.s.p, k.u.s.n) : NULL;
            if (!o || !jv_equal(a.u.d->v[i], *o)) return 0;
        }
        return 1;
    default: return a.u.fn == b.u.fn;
    }
}

int jv_compare(jv a, jv b, int *ok) {
    *ok = 1;
    if (is_num(a) && is_num(b)) {
        double x = num(a), y = num(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.t == JV_STR && b.t == JV_STR) {
        size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int r = memcmp(a.u.s.p, b.u.s.p, n);
        if (r) return r < 0 ? -1 : 1;
        return a.u.s.n < b.u.s.n ? -1 : a.u.s.n > b.u.s.n ? 1 : 0;
    }
    if (a.t == JV_LIST && b.t == JV_LIST) {
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            int r = jv_compare(a.u.l->v[i], b.u.l->v[i], ok);
            if (!*ok || r) return r;
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n ? 1 : 0;
    }
    *ok = 0;
    return 0;
}

const char *jv_type_name(jv v) {
    static const char *names[] = {"undefined", "none", "boolean", "integer", "float", "string", "list", "dict", "function"};
    return v.ns ? "namespace" : names[v.t];
}

jv jv_from_cjson(jn_arena *a, const cJSON *j) {
    if (!j || cJSON_IsNull(j)) return jv_none();
    if (cJSON_IsBool(j)) return jv_bool(cJSON_IsTrue(j));
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (d == floor(d) && fabs(d) < 9.0e15) return jv_int((int64_t)d);
        return jv_float(d);
    }
    if (cJSON_IsString(j)) return jv_str(a, j->valuestring, strlen(j->valuestring));
    if (cJSON_IsArray(j)) {
        jv l = jv_list(a);
        const cJSON *e;
        cJSON_ArrayForEach(e, j) jn_list_push(a, l.u.l, jv_from_cjson(a, e));
        return l;
    }
    if (cJSON_IsObject(j)) {
        jv d = jv_dict(a);
        const cJSON *e;
        cJSON_ArrayForEach(e, j) jn_dict_set(a, d.u.d, jv_str(a, e->string, strlen(e->string)), jv_from_cjson(a, e));
        return d;
    }
    return jv_none();
}

/* ---- text -------------------------------------------------------------------------------- */
void jn_buf_put(jn_buf *b, const char *s, size_t n) {
    if (!n) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = jn_alloc(b->a, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jn_buf_puts(jn_buf *b, const char *s) { jn_buf_put(b, s, strlen(s)); }

/* Python's repr() of a float: the shortest text that reads back the same, with ".0" when
 * it looks like an integer. */
static void write_float(jn_buf *b, double f) {
    char t[40];
    if (isnan(f)) {
        jn_buf_puts(b, "nan");
        return;
    }
    if (isinf(f)) {
        jn_buf_puts(b, f < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, f);
        if (strtod(t, NULL) == f) break;
    }
    jn_buf_puts(b, t);
    if (!strpbrk(t, ".eEn")) jn_buf_puts(b, ".0");
}

static void write_int(jn_buf *b, int64_t i) {
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)i);
    jn_buf_puts(b, t);
}

/* A string as Python's repr() shows it: single quotes unless it holds one and no double. */
static void write_repr_str(jn_buf *b, const char *p, size_t n) {
    int dq = memchr(p, '\'', n) && !memchr(p, '"', n);
    char q = dq ? '"' : '\'';
    jn_buf_put(b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '\\') jn_buf_puts(b, "\\\\");
        else if (c == '\n') jn_buf_puts(b, "\\n");
        else if (c == '\t') jn_buf_puts(b, "\\t");
        else if (c == '\r') jn_buf_puts(b, "\\r");
        else if (c == q) {
            jn_buf_puts(b, "\\");
            jn_buf_put(b, &c, 1);
        } else jn_buf_put(b, &c, 1);
    }
    jn_buf_put(b, &q, 1);
}

static void write_repr(jn_buf *b, jv v) {
    if (v.t == JV_STR) write_repr_str(b, v.u.s.p, v.u.s.n);
    else jv_write_str(b, v);
}

void jv_write_str(jn_buf *b, jv v) {
    switch (v.t) {
    case JV_UNDEF: return;
    case JV_NONE: jn_buf_puts(b, "None"); return;
    case JV_BOOL: jn_buf_puts(b, v.u.b ? "True" : "False"); return;
    case JV_INT: write_int(b, v.u.i); return;
    case JV_FLOAT: write_float(b, v.u.f); return;
    case JV_STR: jn_buf_put(b, v.u.s.p, v.u.s.n); return;
    case JV_LIST:
        jn_buf_puts(b, "[");
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jn_buf_puts(b, ", ");
            write_repr(b, v.u.l->v[i]);
        }
        jn_buf_puts(b, "]");
        return;
    case JV_DICT:
        jn_buf_puts(b, v.ns ? "<Namespace {" : "{");
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jn_buf_puts(b, ", ");
            write_repr(b, v.u.d->k[i]);
            jn_buf_puts(b, ": ");
            write_repr(b, v.u.d->v[i]);
        }
        jn_buf_puts(b, v.ns ? "}>" : "}");
        return;
    default: jn_buf_puts(b, "<function>"); return;
    }
}

/* A JSON string literal through the project's one JSON writer (cJSON): escapes '"', '\\' and
 * control characters, keeps UTF-8 as is, as json.dumps(ensure_ascii=False) does. */
static void write_json_str(jn_buf *b, const char *p, size_t n) {
    char small[256], *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp) longjmp(*b->a->oom, 1);
    memcpy(tmp, p, n);
    tmp[n] = 0;
    cJSON *s = cJSON_CreateString(tmp);
    char *out = s ? cJSON_PrintUnformatted(s) : NULL;
    if (tmp != small) free(tmp);
    cJSON_Delete(s);
    if (!out) longjmp(*b->a->oom, 1);
    jn_buf_puts(b, out);
    cJSON_free(out);
}

static void newline_indent(jn_buf *b, int indent, int depth) {
    jn_buf_puts(b, "\n");
    for (int i = 0; i < indent * depth; i++) jn_buf_puts(b, " ");
}

static int cmp_keys(const void *x, const void *y) {
    const jv *a = *(const jv *const *)x, *b = *(const jv *const *)y;
    int ok;
    return jv_compare(*a, *b, &ok);
}

static void write_json_dict(jn_buf *b, jv v, int indent, int depth, const char *isep, const char *ksep, int sort) {
    size_t n = v.u.d->n;
    if (!n) {
        jn_buf_puts(b, "{}");
        return;
    }
    jv **order = jn_alloc(b->a, n * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = &v.u.d->k[i];
    if (sort) qsort(order, n, sizeof *order, cmp_keys);
    jn_buf_puts(b, "{");
    for (size_t i = 0; i < n; i++) {
        size_t at = (size_t)(order[i] - v.u.d->k);
        if (i) jn_buf_puts(b, isep);
        if (indent >= 0) newline_indent(b, indent, depth + 1);
        jv k = v.u.d->k[at];
        if (k.t == JV_STR) write_json_str(b, k.u.s.p, k.u.s.n);
        else {
            jn_buf_puts(b, "\"");
            jv_write_str(b, k);
            jn_buf_puts(b, "\"");
        }
        jn_buf_puts(b, ksep);
        jv_write_json(b, v.u.d->v[at], indent, depth + 1, isep, ksep, sort);
    }
    if (indent >= 0) newline_indent(b, indent, depth);
    jn_buf_puts(b, "}");
}

void jv_write_json(jn_buf *b, jv v, int indent, int depth, const char *isep, const char *ksep, int sort) {
    switch (v.t) {
    case JV_UNDEF:
    case JV_NONE: jn_buf_puts(b, "null"); return;
    case JV_BOOL: jn_buf_puts(b, v.u.b ? "true" : "false"); return;
    case JV_INT: write_int(b, v.u.i); return;
    case JV_FLOAT:
        if (isnan(v.u.f)) jn_buf_puts(b, "NaN");
        else if (isinf(v.u.f)) jn_buf_puts(b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else write_float(b, v.u.f);
        return;
    case JV_STR: write_json_str(b, v.u.s.p, v.u.s.n); return;
    case JV_LIST:
        if (!v.u.l->n) {
            jn_buf_puts(b, "[]");
            return;
        }
        jn_buf_puts(b, "[");
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jn_buf_puts(b, isep);
            if (indent >= 0) newline_indent(b, indent, depth + 1);
            jv_write_json(b, v.u.l->v[i], indent, depth + 1, isep, ksep, sort);
        }
        if (indent >= 0) newline_indent(b, indent, depth);
        jn_buf_puts(b, "]");
        return;
    case JV_DICT: write_json_dict(b, v, indent, depth, isep, ksep, sort); return;
    default: jn_buf_puts(b, "null"); return;
    }
}

jv jv_to_string(jn_arena *a, jv v) {
    if (v.t == JV_STR) return v;
    jn_buf b = {.a = a};
    jv_write_str(&b, v);
    return b.n ? (jv){.t = JV_STR, .u.s = {b.p, b.n}} : jv_cstr("");
}
