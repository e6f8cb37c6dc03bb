/* SPDX-License-Identifier: Apache-2.0 */
/* The Jinja evaluator: statements write to an output buffer, expressions give values, with
 * Jinja2's scoping (a for loop and a macro call open a scope; `set` inside them does not leak
 * out, which is why templates use namespace()). Failures longjmp to the render's entry. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_int.h"

_Noreturn void jn_fail(jn_ctx *c, const jn_node *at, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (at) snprintf(c->err, c->errlen, "line %d, col %d: %s", at->line, at->col, msg);
    else snprintf(c->err, c->errlen, "%s", msg);
    longjmp(c->fail, 1);
}

static jn_scope *scope_new(jn_ctx *c, jn_scope *parent) {
    jn_scope *s = jn_alloc(c->a, sizeof *s);
    memset(s, 0, sizeof *s);
    s->parent = parent;
    return s;
}

static void scope_set(jn_ctx *c, jn_scope *s, const char *name, jv v) {
    jn_dict_set(c->a, &s->vars, jv_cstr(name), v);
}

static jv lookup(jn_scope *s, const char *name, size_t n) {
    for (; s; s = s->parent) {
        jv *v = jn_dict_get(&s->vars, name, n);
        if (v) return *v;
    }
    return jn_global(name, n);
}

static void exec(jn_ctx *c, jn_scope *s, const jn_node *n, jn_buf *out);

static void exec_block(jn_ctx *c, jn_scope *s, const jn_node *blk, jn_buf *out) {
    if (!blk) return;
    for (size_t i = 0; i < blk->n_kids && !c->brk; i++) exec(c, s, blk->kids[i], out);
}

static void bind_targets(jn_ctx *c, jn_scope *s, const jn_node *n, jv v) {
    if (n->n_vars == 1) {
        scope_set(c, s, n->vars[0], v);
        return;
    }
    if (v.t != JV_LIST || v.u.l->n != n->n_vars)
        jn_fail(c, n, "cannot unpack %s into %zu names", jv_type_name(v), n->n_vars);
    for (size_t i = 0; i < n->n_vars; i++) scope_set(c, s, n->vars[i], v.u.l->v[i]);
}

static jv loop_cycle(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    (void)c;
    (void)at;
    jv *i0 = jn_dict_get(f->self.u.d, "index0", 6);
    if (!a->npos) return jv_undef();
    return a->pos[i0->u.i % (int64_t)a->npos];
}

static jv make_loop(jn_ctx *c, jn_list *items, size_t i) {
    jv d = jv_dict(c->a);
    jn_dict *L = d.u.d;
    size_t n = items->n;
    jn_dict_set(c->a, L, jv_cstr("index0"), jv_int((int64_t)i));
    jn_dict_set(c->a, L, jv_cstr("index"), jv_int((int64_t)i + 1));
    jn_dict_set(c->a, L, jv_cstr("revindex0"), jv_int((int64_t)(n - i - 1)));
    jn_dict_set(c->a, L, jv_cstr("revindex"), jv_int((int64_t)(n - i)));
    jn_dict_set(c->a, L, jv_cstr("first"), jv_bool(i == 0));
    jn_dict_set(c->a, L, jv_cstr("last"), jv_bool(i + 1 == n));
    jn_dict_set(c->a, L, jv_cstr("length"), jv_int((int64_t)n));
    jn_dict_set(c->a, L, jv_cstr("depth"), jv_int(1));
    jn_dict_set(c->a, L, jv_cstr("depth0"), jv_int(0));
    jn_dict_set(c->a, L, jv_cstr("previtem"), i ? items->v[i - 1] : jv_undef());
    jn_dict_set(c->a, L, jv_cstr("nextitem"), i + 1 < n ? items->v[i + 1] : jv_undef());
    jn_func *f = jn_alloc(c->a, sizeof *f);
    memset(f, 0, sizeof *f);
    f->native = loop_cycle;
    f->self = d;
    jn_dict_set(c->a, L, jv_cstr("cycle"), (jv){.t = JV_FUNC, .u.fn = f});
    return d;
}

static void exec_for(jn_ctx *c, jn_scope *s, const jn_node *n, jn_buf *out) {
    jn_list *src = jn_iterable(c, jn_eval(c, s, n->a), n->a);
    jn_scope *body = scope_new(c, s);
    jn_list *items = src;
    if (n->d) { /* "for x in xs if cond": filter first, so loop.length counts what is kept */
        items = jv_list(c->a).u.l;
        for (size_t i = 0; i < src->n; i++) {
            bind_targets(c, body, n, src->v[i]);
            if (jv_truthy(jn_eval(c, body, n->d))) jn_list_push(c->a, items, src->v[i]);
        }
    }
    for (size_t i = 0; i < items->n; i++) {
        bind_targets(c, body, n, items->v[i]);
        scope_set(c, body, "loop", make_loop(c, items, i));
        exec_block(c, body, n->b, out);
        if (c->brk == 1) {
            c->brk = 0;
            break;
        }
        c->brk = 0;
    }
    if (!items->n && n->c) exec_block(c, s, n->c, out);
}

static void exec_set(jn_ctx *c, jn_scope *s, const jn_node *n, jv v) {
    if (n->d) {
        jv obj = jn_eval(c, s, n->d);
        if (obj.t != JV_DICT) jn_fail(c, n, "cannot set attribute '%s' on %s", n->name, jv_type_name(obj));
        jn_dict_set(c->a, obj.u.d, jv_cstr(n->name), v);
        return;
    }
    bind_targets(c, s, n, v);
}

static jv render_to_string(jn_ctx *c, jn_scope *s, const jn_node *body) {
    jn_buf b = {.a = c->a};
    exec_block(c, s, body, &b);
    return b.n ? (jv){.t = JV_STR, .u.s = {b.p, b.n}} : jv_cstr("");
}

static jn_args eval_args(jn_ctx *c, jn_scope *s, const jn_node *n, jv first, int has_first);

static void exec(jn_ctx *c, jn_scope *s, const jn_node *n, jn_buf *out) {
    switch (n->k) {
    case JN_TEXT: jn_buf_put(out, n->lit.u.s.p, n->lit.u.s.n); return;
    case JN_OUTPUT: jv_write_str(out, jn_eval(c, s, n->a)); return;
    case JN_BLOCK: exec_block(c, s, n, out); return;
    case JN_IF:
        if (jv_truthy(jn_eval(c, s, n->a))) exec_block(c, s, n->b, out);
        else if (n->c) exec(c, s, n->c, out);
        return;
    case JN_FOR: exec_for(c, s, n, out); return;
    case JN_SET: exec_set(c, s, n, jn_eval(c, s, n->a)); return;
    case JN_SET_BLOCK: exec_set(c, s, n, render_to_string(c, s, n->b)); return;
    case JN_MACRO: {
        jn_func *f = jn_alloc(c->a, sizeof *f);
        memset(f, 0, sizeof *f);
        f->macro = n;
        f->closure = s;
        scope_set(c, s, n->name, (jv){.t = JV_FUNC, .u.fn = f});
        return;
    }
    case JN_BREAK: c->brk = 1; return;
    case JN_CONTINUE: c->brk = 2; return;
    case JN_FILTER_BLOCK: {
        jv body = render_to_string(c, s, n->a);
        jn_args a = eval_args(c, s, n, body, 1);
        jv_write_str(out, jn_filter(c, n->name, body, &a, n));
        return;
    }
    default: jn_fail(c, n, "not a statement");
    }
}

/* ---- calls ------------------------------------------------------------------------------- */
static jn_args eval_args(jn_ctx *c, jn_scope *s, const jn_node *n, jv first, int has_first) {
    jn_args a = {0};
    size_t cap = n->n_kids + 1;
    a.pos = jn_alloc(c->a, cap * sizeof *a.pos);
    a.kval = jn_alloc(c->a, cap * sizeof *a.kval);
    a.kname = jn_alloc(c->a, cap * sizeof *a.kname);
    if (has_first) a.pos[a.npos++] = first;
    for (size_t i = 0; i < n->n_kids; i++) {
        jv v = jn_eval(c, s, n->kids[i]);
        if (n->knames && n->knames[i]) {
            a.kname[a.nkw] = n->knames[i];
            a.kval[a.nkw++] = v;
        } else a.pos[a.npos++] = v;
    }
    return a;
}

static jv call_macro(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at) {
    const jn_node *m = f->macro;
    jn_scope *s = scope_new(c, f->closure);
    if (a->npos > m->n_kids) jn_fail(c, at, "macro '%s' takes %zu arguments, %zu given", m->name, m->n_kids, a->npos);
    for (size_t i = 0; i < m->n_kids; i++) {
        jv v = jv_undef();
        int set = 0;
        if (i < a->npos) {
            v = a->pos[i];
            set = 1;
        }
        for (size_t k = 0; k < a->nkw && !set; k++)
            if (!strcmp(a->kname[k], m->knames[i])) {
                v = a->kval[k];
                set = 1;
            }
        if (!set && m->kids[i]) v = jn_eval(c, s, m->kids[i]);
        scope_set(c, s, m->knames[i], v);
    }
    int brk = c->brk;
    jv r = render_to_string(c, s, m->a);
    c->brk = brk;
    return r;
}

jv jn_call_value(jn_ctx *c, jv f, const jn_args *a, const jn_node *at) {
    if (f.t != JV_FUNC) jn_fail(c, at, "%s is not callable", f.t == JV_UNDEF ? "an undefined value" : jv_type_name(f));
    if (f.u.fn->macro) return call_macro(c, f.u.fn, a, at);
    return f.u.fn->native(c, f.u.fn, a, at);
}

/* ---- attribute and item access ---------------------------------------------------------- */
jv jn_getattr(jn_ctx *c, jv obj, const char *name, size_t n, const jn_node *at) {
    (void)at;
    if (obj.t == JV_DICT) {
        jv *v = jn_dict_get(obj.u.d, name, n);
        jv m = obj.ns ? jv_undef() : jn_method(c, obj, name, n);
        if (m.t != JV_UNDEF) return m; /* Python: the method wins over an item of that name */
        return v ? *v : jv_undef();
    }
    if (obj.t == JV_STR || obj.t == JV_LIST) return jn_method(c, obj, name, n);
    return jv_undef();
}

static int64_t norm_index(int64_t i, size_t n) { return i < 0 ? i + (int64_t)n : i; }

jv jn_getitem(jn_ctx *c, jv obj, jv key, const jn_node *at) {
    if (obj.t == JV_DICT) {
        if (key.t == JV_STR) {
            jv *v = jn_dict_get(obj.u.d, key.u.s.p, key.u.s.n);
            return v ? *v : jv_undef();
        }
        for (size_t i = 0; i < obj.u.d->n; i++)
            if (jv_equal(obj.u.d->k[i], key)) return obj.u.d->v[i];
        return jv_undef();
    }
    if ((obj.t == JV_LIST || obj.t == JV_STR) && (key.t == JV_INT || key.t == JV_BOOL)) {
        size_t n = obj.t == JV_LIST ? obj.u.l->n : obj.u.s.n;
        int64_t i = norm_index(key.t == JV_INT ? key.u.i : key.u.b, n);
        if (i < 0 || i >= (int64_t)n) return jv_undef();
        return obj.t == JV_LIST ? obj.u.l->v[i] : jv_str(c->a, obj.u.s.p + i, 1);
    }
    if (obj.t == JV_STR && key.t == JV_STR) return jn_method(c, obj, key.u.s.p, key.u.s.n);
    if (obj.t == JV_UNDEF || obj.t == JV_NONE) return jv_undef();
    jn_fail(c, at, "cannot index %s with %s", jv_type_name(obj), jv_type_name(key));
}

static int64_t slice_bound(jv v, int64_t dflt, size_t n, int64_t step) {
    if (v.t != JV_INT) return dflt;
    int64_t i = v.u.i < 0 ? v.u.i + (int64_t)n : v.u.i;
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? (int64_t)n - 1 : (int64_t)n;
    return i < lo ? lo : i > hi ? hi : i;
}

static jv eval_slice(jn_ctx *c, jn_scope *s, const jn_node *n) {
    jv obj = jn_eval(c, s, n->a);
    jv b = n->b ? jn_eval(c, s, n->b) : jv_none(), e = n->c ? jn_eval(c, s, n->c) : jv_none();
    jv st = n->d ? jn_eval(c, s, n->d) : jv_none();
    int64_t step = st.t == JV_INT ? st.u.i : 1;
    if (step == 0) jn_fail(c, n, "slice step cannot be zero");
    if (obj.t != JV_LIST && obj.t != JV_STR) {
        if (obj.t == JV_UNDEF || obj.t == JV_NONE) return jv_undef();
        jn_fail(c, n, "cannot slice %s", jv_type_name(obj));
    }
    size_t len = obj.t == JV_LIST ? obj.u.l->n : obj.u.s.n;
    int64_t i0 = slice_bound(b, step > 0 ? 0 : (int64_t)len - 1, len, step);
    int64_t i1 = slice_bound(e, step > 0 ? (int64_t)len : -1, len, step);
    if (obj.t == JV_LIST) {
        jv r = jv_list(c->a);
        for (int64_t i = i0; step > 0 ? i < i1 : i > i1; i += step) jn_list_push(c->a, r.u.l, obj.u.l->v[i]);
        return r;
    }
    jn_buf out = {.a = c->a};
    for (int64_t i = i0; step > 0 ? i < i1 : i > i1; i += step) jn_buf_put(&out, obj.u.s.p + i, 1);
    return out.n ? (jv){.t = JV_STR, .u.s = {out.p, out.n}} : jv_cstr("");
}

/* ---- operators ------------------------------------------------------------------------------ */
static int is_num(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double num(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b; }
static int64_t inum(jv v) { return v.t == JV_INT ? v.u.i : v.u.b; }

static jv concat(jn_ctx *c, jv a, jv b) {
    a = jv_to_string(c->a, a);
    b = jv_to_string(c->a, b);
    char *p = jn_alloc(c->a, a.u.s.n + b.u.s.n + 1);
    memcpy(p, a.u.s.p, a.u.s.n);
    memcpy(p + a.u.s.n, b.u.s.p, b.u.s.n);
    p[a.u.s.n + b.u.s.n] = 0;
    return (jv){.t = JV_STR, .u.s = {p, a.u.s.n + b.u.s.n}};
}

static int contains(jn_ctx *c, jv hay, jv needle, const jn_node *at) {
    if (hay.t == JV_STR) {
        if (needle.t != JV_STR) jn_fail(c, at, "'in <string>' needs a string on the left");
        if (!needle.u.s.n) return 1;
        for (size_t i = 0; i + needle.u.s.n <= hay.u.s.n; i++)
            if (!memcmp(hay.u.s.p + i, needle.u.s.p, needle.u.s.n)) return 1;
        return 0;
    }
    if (hay.t == JV_LIST) {
        for (size_t i = 0; i < hay.u.l->n; i++)
            if (jv_equal(hay.u.l->v[i], needle)) return 1;
        return 0;
    }
    if (hay.t == JV_DICT) return jn_getitem(c, hay, needle, at).t != JV_UNDEF;
    if (hay.t == JV_UNDEF || hay.t == JV_NONE) return 0;
    jn_fail(c, at, "'in' needs a string, list or dict on the right, not %s", jv_type_name(hay));
}

static jv arith(jn_ctx *c, int op, jv a, jv b, const jn_node *at) {
    if (!is_num(a) || !is_num(b))
        jn_fail(c, at, "unsupported operand types for '%c': %s and %s", op == 'F' ? '/' : op == 'P' ? '*' : op,
                jv_type_name(a), jv_type_name(b));
    int ints = a.t != JV_FLOAT && b.t != JV_FLOAT;
    if ((op == '/' || op == 'F' || op == '%') && num(b) == 0) jn_fail(c, at, "division by zero");
    switch (op) {
    case '+': return ints ? jv_int(inum(a) + inum(b)) : jv_float(num(a) + num(b));
    case '-': return ints ? jv_int(inum(a) - inum(b)) : jv_float(num(a) - num(b));
    case '*': return ints ? jv_int(inum(a) * inum(b)) : jv_float(num(a) * num(b));
    case '/': return jv_float(num(a) / num(b));
    case 'F':
        if (ints) {
            int64_t q = inum(a) / inum(b);
            if ((inum(a) % inum(b) != 0) && ((inum(a) < 0) != (inum(b) < 0))) q--;
            return jv_int(q);
        }
        return jv_float(floor(num(a) / num(b)));
    case '%':
        if (ints) {
            int64_t r = inum(a) % inum(b);
            if (r && ((r < 0) != (inum(b) < 0))) r += inum(b);
            return jv_int(r);
        }
        return jv_float(num(a) - floor(num(a) / num(b)) * num(b));
    default: {
        if (ints && inum(b) >= 0) {
            int64_t r = 1;
            for (int64_t i = 0; i < inum(b); i++) r *= inum(a);
            return jv_int(r);
        }
        return jv_float(pow(num(a), num(b)));
    }
    }
}

static jv eval_binary(jn_ctx *c, jn_scope *s, const jn_node *n) {
    jv a = jn_eval(c, s, n->a), b = jn_eval(c, s, n->b);
    int ok, r;
    switch (n->op) {
    case '~': return concat(c, a, b);
    case 'E': return jv_bool(jv_equal(a, b));
    case 'N': return jv_bool(!jv_equal(a, b));
    case 'I': return jv_bool(contains(c, b, a, n));
    case 'X': return jv_bool(!contains(c, b, a, n));
    case '<': case '>': case 'L': case 'G':
        r = jv_compare(a, b, &ok);
        if (!ok) jn_fail(c, n, "cannot compare %s with %s", jv_type_name(a), jv_type_name(b));
        return jv_bool(n->op == '<' ? r < 0 : n->op == '>' ? r > 0 : n->op == 'L' ? r <= 0 : r >= 0);
    case '+':
        if (a.t == JV_STR && b.t == JV_STR) return concat(c, a, b);
        if (a.t == JV_LIST && b.t == JV_LIST) {
            jv l = jv_list(c->a);
            for (size_t i = 0; i < a.u.l->n; i++) jn_list_push(c->a, l.u.l, a.u.l->v[i]);
            for (size_t i = 0; i < b.u.l->n; i++) jn_list_push(c->a, l.u.l, b.u.l->v[i]);
            return l;
        }
        if ((a.t == JV_STR && b.t == JV_UNDEF) || (a.t == JV_UNDEF && b.t == JV_STR)) return concat(c, a, b);
        break;
    case '*':
        if ((a.t == JV_STR && b.t == JV_INT) || (a.t == JV_INT && b.t == JV_STR)) {
            jv str = a.t == JV_STR ? a : b;
            int64_t k = a.t == JV_INT ? a.u.i : b.u.i;
            jn_buf o = {.a = c->a};
            for (int64_t i = 0; i < k; i++) jn_buf_put(&o, str.u.s.p, str.u.s.n);
            return o.n ? (jv){.t = JV_STR, .u.s = {o.p, o.n}} : jv_cstr("");
        }
        break;
    case '%':
        if (a.t == JV_STR) return jn_format_percent(c, a, b, n);
        break;
    default: break;
    }
    return arith(c, n->op, a, b, n);
}

static jv eval_call(jn_ctx *c, jn_scope *s, const jn_node *n) {
    jv f = jn_eval(c, s, n->a);
    if (f.t == JV_UNDEF && n->a->k == JN_ATTR) jn_fail(c, n, "no method '%s'", n->a->name);
    if (f.t == JV_UNDEF && n->a->k == JN_NAME) jn_fail(c, n, "'%s' is undefined", n->a->name);
    jn_args a = eval_args(c, s, n, jv_undef(), 0);
    return jn_call_value(c, f, &a, n);
}

jv jn_eval(jn_ctx *c, jn_scope *s, const jn_node *n) {
    switch (n->k) {
    case JN_LIT: return n->lit;
    case JN_NAME: return lookup(s, n->name, n->name_n);
    case JN_ATTR: return jn_getattr(c, jn_eval(c, s, n->a), n->name, n->name_n, n);
    case JN_INDEX: return jn_getitem(c, jn_eval(c, s, n->a), jn_eval(c, s, n->b), n);
    case JN_SLICE: return eval_slice(c, s, n);
    case JN_CALL: return eval_call(c, s, n);
    case JN_FILTER: {
        jv v = jn_eval(c, s, n->a);
        jn_args a = eval_args(c, s, n, v, 1);
        return jn_filter(c, n->name, v, &a, n);
    }
    case JN_TEST: {
        jv v = jn_eval(c, s, n->a);
        jn_args a = eval_args(c, s, n, v, 1);
        return jv_bool(jn_test(c, n->name, v, &a, n) != n->op);
    }
    case JN_UNARY: {
        jv v = jn_eval(c, s, n->a);
        if (n->op == '+') return v;
        if (v.t == JV_INT || v.t == JV_BOOL) return jv_int(-inum(v));
        if (v.t == JV_FLOAT) return jv_float(-v.u.f);
        jn_fail(c, n, "bad operand type for unary -: %s", jv_type_name(v));
    }
    case JN_BINARY: return eval_binary(c, s, n);
    case JN_AND: {
        jv a = jn_eval(c, s, n->a);
        return jv_truthy(a) ? jn_eval(c, s, n->b) : a;
    }
    case JN_OR: {
        jv a = jn_eval(c, s, n->a);
        return jv_truthy(a) ? a : jn_eval(c, s, n->b);
    }
    case JN_NOT: return jv_bool(!jv_truthy(jn_eval(c, s, n->a)));
    case JN_COND:
        if (jv_truthy(jn_eval(c, s, n->b))) return jn_eval(c, s, n->a);
        return n->c ? jn_eval(c, s, n->c) : jv_undef();
    case JN_LIST:
    case JN_TUPLE: {
        jv l = jv_list(c->a);
        for (size_t i = 0; i < n->n_kids; i++) jn_list_push(c->a, l.u.l, jn_eval(c, s, n->kids[i]));
        return l;
    }
    case JN_DICT: {
        jv d = jv_dict(c->a);
        for (size_t i = 0; i + 1 < n->n_kids; i += 2)
            jn_dict_set(c->a, d.u.d, jn_eval(c, s, n->kids[i]), jn_eval(c, s, n->kids[i + 1]));
        return d;
    }
    default: jn_fail(c, n, "not an expression");
    }
}

/* ---- the public API -------------------------------------------------------------------------- */
st_jinja *st_jinja_parse(const char *src, char *err, size_t errlen) {
    st_jinja *t = calloc(1, sizeof *t);
    if (!t || !(t->src = strdup(src ? src : ""))) {
        free(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->ast.limit = (size_t)1 << 30;
    t->limit = (size_t)64 << 20;
    if (jn_parse(t, err, errlen)) {
        st_jinja_free(t);
        return NULL;
    }
    return t;
}

void st_jinja_free(st_jinja *t) {
    if (!t) return;
    jn_arena_free(&t->ast);
    free(t->src);
    free(t);
}

void st_jinja_set_limit(st_jinja *t, size_t bytes) { t->limit = bytes; }
void st_jinja_set_time(st_jinja *t, long long epoch_seconds) { t->now = epoch_seconds; }

char *st_jinja_render(const st_jinja *t, const cJSON *ctx, char *err, size_t errlen) {
    jn_arena a = {.limit = t->limit};
    jmp_buf oom;
    jn_ctx c = {.a = &a, .err = err, .errlen = errlen, .now = t->now};
    char *volatile res = NULL; /* set after the setjmp calls below */
    a.oom = &oom;
    if (setjmp(oom)) {
        snprintf(err, errlen, "the template used more than %zu MiB (output or values)", t->limit >> 20);
        goto fail;
    }
    if (setjmp(c.fail)) goto fail;
    c.globals = scope_new(&c, NULL);
    const cJSON *e;
    if (ctx) cJSON_ArrayForEach(e, ctx) {
            if (e->string) scope_set(&c, c.globals, e->string, jv_from_cjson(&a, e));
        }
    jn_buf out = {.a = &a};
    exec_block(&c, scope_new(&c, c.globals), t->root, &out);
    res = malloc(out.n + 1);
    if (!res) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (out.n) memcpy(res, out.p, out.n);
    res[out.n] = 0;
fail:
    jn_arena_free(&a);
    return res;
}
