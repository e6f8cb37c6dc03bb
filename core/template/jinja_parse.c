/* SPDX-License-Identifier: Apache-2.0 */
/* The Jinja parser: tokens to a syntax tree, by recursive descent with Jinja2's precedence
 * (conditional < or < and < not < comparison < + - < ~ < * / // % < ** < unary < postfix,
 * filters and tests). Syntax errors end the parse through one longjmp and come back as a
 * message with the line and column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_lex.h"

typedef struct parser {
    st_jinja *t;
    jn_tok *tk;
    size_t i, n;
    char *err;
    size_t errlen;
    jmp_buf fail;
} parser;

__attribute__((format(printf, 3, 4))) _Noreturn static void pfail(parser *P, const jn_tok *at, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(P->err, P->errlen, "line %d, col %d: %s", at->line, at->col, msg);
    longjmp(P->fail, 1);
}

static jn_tok *peek(parser *P) { return &P->tk[P->i]; }
static jn_tok *peek2(parser *P) { return &P->tk[P->i + 1 < P->n ? P->i + 1 : P->i]; }
static jn_tok *next(parser *P) {
    jn_tok *t = &P->tk[P->i];
    if (P->i + 1 < P->n) P->i++;
    return t;
}
static int tok_is(const jn_tok *t, int kind, const char *s) {
    return t->kind == kind && t->n == strlen(s) && !memcmp(t->p, s, t->n);
}
static int is_op(parser *P, const char *s) { return tok_is(peek(P), JN_T_OP, s); }
static int is_name(parser *P, const char *s) { return tok_is(peek(P), JN_T_NAME, s); }
static int accept_op(parser *P, const char *s) { return is_op(P, s) ? (next(P), 1) : 0; }
static int accept_name(parser *P, const char *s) { return is_name(P, s) ? (next(P), 1) : 0; }
static void expect_op(parser *P, const char *s) {
    if (!accept_op(P, s)) pfail(P, peek(P), "expected '%s'", s);
}
static jn_tok *expect_kind(parser *P, int kind, const char *what) {
    if (peek(P)->kind != kind) pfail(P, peek(P), "expected %s", what);
    return next(P);
}

static jn_node *mk(parser *P, jn_kind k, const jn_tok *at) {
    jn_node *n = jn_alloc(&P->t->ast, sizeof *n);
    memset(n, 0, sizeof *n);
    n->k = k;
    n->line = at->line;
    n->col = at->col;
    return n;
}

typedef struct kidlist {
    jn_node **v;
    const char **names;
    size_t n, cap;
} kidlist;

static void kid_push(parser *P, kidlist *l, jn_node *n, const char *name) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        jn_node **v = jn_alloc(&P->t->ast, cap * sizeof *v);
        const char **nm = jn_alloc(&P->t->ast, cap * sizeof *nm);
        if (l->n) {
            memcpy(v, l->v, l->n * sizeof *v);
            memcpy(nm, l->names, l->n * sizeof *nm);
        }
        l->v = v;
        l->names = nm;
        l->cap = cap;
    }
    l->v[l->n] = n;
    l->names[l->n++] = name;
}

static const char *tok_str(parser *P, const jn_tok *t) {
    char *s = jn_alloc(&P->t->ast, t->n + 1);
    memcpy(s, t->p, t->n);
    s[t->n] = 0;
    return s;
}

static jn_node *parse_expr(parser *P, int with_cond);
static jn_node *parse_or(parser *P);
static jn_node *parse_unary(parser *P);
static jn_node *parse_postfix(parser *P, jn_node *n, int with_filters);

/* Arguments "(a, b, k=v)" after the '(' was consumed. */
static void parse_args(parser *P, jn_node *n) {
    kidlist l = {0};
    while (!accept_op(P, ")")) {
        if (l.n) expect_op(P, ",");
        if (accept_op(P, ")")) break; /* trailing comma */
        const char *kw = NULL;
        if (peek(P)->kind == JN_T_NAME && tok_is(peek2(P), JN_T_OP, "=")) {
            kw = tok_str(P, next(P));
            next(P);
        }
        kid_push(P, &l, parse_expr(P, 1), kw);
    }
    n->kids = l.v;
    n->knames = l.names;
    n->n_kids = l.n;
}

static jn_node *parse_literal_seq(parser *P, const jn_tok *at, const char *close, jn_kind k) {
    jn_node *n = mk(P, k, at);
    kidlist l = {0};
    while (!accept_op(P, close)) {
        if (l.n) expect_op(P, ",");
        if (accept_op(P, close)) break;
        kid_push(P, &l, parse_expr(P, 1), NULL);
        if (k == JN_DICT) {
            expect_op(P, ":");
            kid_push(P, &l, parse_expr(P, 1), NULL);
        }
    }
    n->kids = l.v;
    n->n_kids = l.n;
    return n;
}

static jn_node *lit(parser *P, const jn_tok *at, jv v) {
    jn_node *n = mk(P, JN_LIT, at);
    n->lit = v;
    return n;
}

static jn_node *parse_primary(parser *P) {
    jn_tok *t = next(P);
    switch (t->kind) {
    case JN_T_STR: {
        size_t len = t->n;
        size_t j = P->i;
        while (P->tk[j].kind == JN_T_STR) len += P->tk[j++].n; /* "a" "b" concatenates */
        char *s = jn_alloc(&P->t->ast, len + 1);
        memcpy(s, t->p, t->n);
        size_t o = t->n;
        while (peek(P)->kind == JN_T_STR) {
            jn_tok *u = next(P);
            memcpy(s + o, u->p, u->n);
            o += u->n;
        }
        s[o] = 0;
        return lit(P, t, (jv){.t = JV_STR, .u.s = {s, o}});
    }
    case JN_T_INT: {
        char buf[64];
        size_t o = 0;
        for (size_t i = 0; i < t->n && o < sizeof buf - 1; i++)
            if (t->p[i] != '_') buf[o++] = t->p[i];
        buf[o] = 0;
        return lit(P, t, jv_int(strtoll(buf, NULL, 10)));
    }
    case JN_T_FLOAT: return lit(P, t, jv_float(strtod(tok_str(P, t), NULL)));
    case JN_T_NAME:
        if (tok_is(t, JN_T_NAME, "true") || tok_is(t, JN_T_NAME, "True")) return lit(P, t, jv_bool(1));
        if (tok_is(t, JN_T_NAME, "false") || tok_is(t, JN_T_NAME, "False")) return lit(P, t, jv_bool(0));
        if (tok_is(t, JN_T_NAME, "none") || tok_is(t, JN_T_NAME, "None")) return lit(P, t, jv_none());
        {
            jn_node *n = mk(P, JN_NAME, t);
            n->name = tok_str(P, t);
            n->name_n = t->n;
            return n;
        }
    case JN_T_OP:
        if (tok_is(t, JN_T_OP, "(")) {
            if (accept_op(P, ")")) return mk(P, JN_TUPLE, t);
            jn_node *e = parse_expr(P, 1);
            if (!is_op(P, ",")) {
                expect_op(P, ")");
                return e;
            }
            kidlist l = {0};
            kid_push(P, &l, e, NULL);
            while (accept_op(P, ",") && !is_op(P, ")")) kid_push(P, &l, parse_expr(P, 1), NULL);
            expect_op(P, ")");
            jn_node *n = mk(P, JN_TUPLE, t);
            n->kids = l.v;
            n->n_kids = l.n;
            return n;
        }
        if (tok_is(t, JN_T_OP, "[")) return parse_literal_seq(P, t, "]", JN_LIST);
        if (tok_is(t, JN_T_OP, "{")) return parse_literal_seq(P, t, "}", JN_DICT);
        break;
    default: break;
    }
    pfail(P, t, "unexpected '%.*s'", (int)(t->n ? t->n : 3), t->n ? t->p : "end");
}

static jn_node *parse_subscript(parser *P, jn_node *obj, const jn_tok *at) {
    jn_node *start = NULL, *stop = NULL, *step = NULL;
    if (!is_op(P, ":")) start = parse_expr(P, 1);
    if (!accept_op(P, ":")) {
        expect_op(P, "]");
        jn_node *n = mk(P, JN_INDEX, at);
        n->a = obj;
        n->b = start;
        return n;
    }
    if (!is_op(P, "]") && !is_op(P, ":")) stop = parse_expr(P, 1);
    if (accept_op(P, ":") && !is_op(P, "]")) step = parse_expr(P, 1);
    expect_op(P, "]");
    jn_node *n = mk(P, JN_SLICE, at);
    n->a = obj;
    n->b = start;
    n->c = stop;
    n->d = step;
    return n;
}

static int starts_primary(const jn_tok *t) {
    if (t->kind == JN_T_STR || t->kind == JN_T_INT || t->kind == JN_T_FLOAT) return 1;
    if (t->kind == JN_T_OP) return tok_is(t, JN_T_OP, "(") || tok_is(t, JN_T_OP, "[") || tok_is(t, JN_T_OP, "{");
    if (t->kind != JN_T_NAME) return 0;
    static const char *const kw[] = {"else", "or", "and", "if", "in", "is", "not", NULL};
    for (int i = 0; kw[i]; i++)
        if (tok_is(t, JN_T_NAME, kw[i])) return 0;
    return 1;
}

static jn_node *parse_test(parser *P, jn_node *obj, const jn_tok *at) {
    jn_node *n = mk(P, JN_TEST, at);
    n->a = obj;
    n->op = accept_name(P, "not");
    jn_tok *name = expect_kind(P, JN_T_NAME, "a test name");
    n->name = tok_str(P, name);
    if (accept_op(P, "(")) parse_args(P, n);
    else if (starts_primary(peek(P))) {
        kidlist l = {0};
        kid_push(P, &l, parse_postfix(P, parse_primary(P), 0), NULL);
        n->kids = l.v;
        n->knames = l.names;
        n->n_kids = 1;
    }
    return n;
}

static jn_node *parse_postfix(parser *P, jn_node *n, int with_filters) {
    for (;;) {
        jn_tok *t = peek(P);
        if (accept_op(P, ".")) {
            jn_tok *name = next(P);
            if (name->kind == JN_T_INT) {
                jn_node *ix = mk(P, JN_INDEX, t);
                ix->a = n;
                ix->b = lit(P, name, jv_int(strtoll(tok_str(P, name), NULL, 10)));
                n = ix;
                continue;
            }
            if (name->kind != JN_T_NAME) pfail(P, name, "expected an attribute name");
            jn_node *at = mk(P, JN_ATTR, t);
            at->a = n;
            at->name = tok_str(P, name);
            at->name_n = name->n;
            n = at;
        } else if (accept_op(P, "[")) {
            n = parse_subscript(P, n, t);
        } else if (accept_op(P, "(")) {
            jn_node *c = mk(P, JN_CALL, t);
            c->a = n;
            parse_args(P, c);
            n = c;
        } else if (with_filters && accept_op(P, "|")) {
            jn_tok *name = expect_kind(P, JN_T_NAME, "a filter name");
            jn_node *f = mk(P, JN_FILTER, name);
            f->a = n;
            f->name = tok_str(P, name);
            if (accept_op(P, "(")) parse_args(P, f);
            n = f;
        } else if (with_filters && accept_name(P, "is")) {
            n = parse_test(P, n, t);
        } else return n;
    }
}

/* "-x|f" is "(-x)|f" in Jinja2: the operand takes no filters, the negation does. */
static jn_node *parse_unary_f(parser *P, int with_filters) {
    jn_tok *t = peek(P);
    if (accept_op(P, "-") || accept_op(P, "+")) {
        jn_node *n = mk(P, JN_UNARY, t);
        n->op = t->p[0];
        n->a = parse_unary_f(P, 0);
        return with_filters ? parse_postfix(P, n, 1) : n;
    }
    return parse_postfix(P, parse_primary(P), with_filters);
}

static jn_node *parse_unary(parser *P) { return parse_unary_f(P, 1); }

static jn_node *binary(parser *P, const jn_tok *at, int op, jn_node *a, jn_node *b) {
    jn_node *n = mk(P, JN_BINARY, at);
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static jn_node *parse_pow(parser *P) {
    jn_node *n = parse_unary(P);
    jn_tok *t;
    while ((t = peek(P)) && accept_op(P, "**")) n = binary(P, t, 'P', n, parse_unary(P));
    return n;
}

static jn_node *parse_math2(parser *P) {
    jn_node *n = parse_pow(P);
    for (;;) {
        jn_tok *t = peek(P);
        int op = accept_op(P, "*") ? '*' : accept_op(P, "//") ? 'F' : accept_op(P, "/") ? '/' : accept_op(P, "%") ? '%' : 0;
        if (!op) return n;
        n = binary(P, t, op, n, parse_pow(P));
    }
}

static jn_node *parse_concat(parser *P) {
    jn_node *n = parse_math2(P);
    jn_tok *t;
    while ((t = peek(P)) && accept_op(P, "~")) n = binary(P, t, '~', n, parse_math2(P));
    return n;
}

static jn_node *parse_math1(parser *P) {
    jn_node *n = parse_concat(P);
    for (;;) {
        jn_tok *t = peek(P);
        int op = accept_op(P, "+") ? '+' : accept_op(P, "-") ? '-' : 0;
        if (!op) return n;
        n = binary(P, t, op, n, parse_concat(P));
    }
}

static jn_node *parse_compare(parser *P) {
    jn_node *n = parse_math1(P);
    for (;;) {
        jn_tok *t = peek(P);
        int op = accept_op(P, "==") ? 'E' : accept_op(P, "!=") ? 'N' : accept_op(P, "<=") ? 'L'
               : accept_op(P, ">=") ? 'G' : accept_op(P, "<") ? '<' : accept_op(P, ">") ? '>'
               : accept_name(P, "in") ? 'I' : 0;
        if (!op && is_name(P, "not") && tok_is(peek2(P), JN_T_NAME, "in")) {
            next(P);
            next(P);
            op = 'X';
        }
        if (!op) return n;
        n = binary(P, t, op, n, parse_math1(P));
    }
}

static jn_node *parse_not(parser *P) {
    jn_tok *t = peek(P);
    if (accept_name(P, "not")) {
        jn_node *n = mk(P, JN_NOT, t);
        n->a = parse_not(P);
        return n;
    }
    return parse_compare(P);
}

static jn_node *parse_and(parser *P) {
    jn_node *n = parse_not(P);
    jn_tok *t;
    while ((t = peek(P)) && accept_name(P, "and")) {
        jn_node *x = mk(P, JN_AND, t);
        x->a = n;
        x->b = parse_not(P);
        n = x;
    }
    return n;
}

static jn_node *parse_or(parser *P) {
    jn_node *n = parse_and(P);
    jn_tok *t;
    while ((t = peek(P)) && accept_name(P, "or")) {
        jn_node *x = mk(P, JN_OR, t);
        x->a = n;
        x->b = parse_and(P);
        n = x;
    }
    return n;
}

static jn_node *parse_expr(parser *P, int with_cond) {
    jn_node *n = parse_or(P);
    while (with_cond && is_name(P, "if")) {
        jn_tok *t = next(P);
        jn_node *c = mk(P, JN_COND, t);
        c->a = n;
        c->b = parse_or(P);
        if (accept_name(P, "else")) c->c = parse_expr(P, 1);
        n = c;
    }
    return n;
}

/* ---- statements ------------------------------------------------------------------------- */
static jn_node *parse_body(parser *P, const char *const *stops, const char **which);

static void end_tag(parser *P) { expect_kind(P, JN_T_BLOCK_END, "'%}'"); }

static void parse_targets(parser *P, jn_node *n) {
    const char *v[16];
    size_t nv = 0;
    int paren = accept_op(P, "(");
    do {
        jn_tok *name = expect_kind(P, JN_T_NAME, "a variable name");
        if (nv == 16) pfail(P, name, "too many targets");
        v[nv++] = tok_str(P, name);
    } while (accept_op(P, ","));
    if (paren) expect_op(P, ")");
    n->vars = jn_alloc(&P->t->ast, nv * sizeof *n->vars);
    memcpy(n->vars, v, nv * sizeof *v);
    n->n_vars = nv;
}

static jn_node *parse_if(parser *P, const jn_tok *at) {
    static const char *const stops[] = {"elif", "else", "endif", NULL};
    static const char *const end[] = {"endif", NULL};
    jn_node *n = mk(P, JN_IF, at);
    n->a = parse_expr(P, 1);
    end_tag(P);
    const char *which;
    n->b = parse_body(P, stops, &which);
    if (!strcmp(which, "elif")) {
        n->c = parse_if(P, at);
        return n; /* the nested if consumed the endif */
    }
    if (!strcmp(which, "else")) {
        end_tag(P);
        n->c = parse_body(P, end, &which);
    }
    end_tag(P);
    return n;
}

static jn_node *parse_for(parser *P, const jn_tok *at) {
    static const char *const stops[] = {"else", "endfor", NULL};
    static const char *const end[] = {"endfor", NULL};
    jn_node *n = mk(P, JN_FOR, at);
    parse_targets(P, n);
    if (!accept_name(P, "in")) pfail(P, peek(P), "expected 'in'");
    n->a = parse_expr(P, 0);
    if (accept_name(P, "if")) n->d = parse_expr(P, 0);
    accept_name(P, "recursive");
    end_tag(P);
    const char *which;
    n->b = parse_body(P, stops, &which);
    if (!strcmp(which, "else")) {
        end_tag(P);
        n->c = parse_body(P, end, &which);
    }
    end_tag(P);
    return n;
}

static jn_node *parse_set(parser *P, const jn_tok *at) {
    static const char *const end[] = {"endset", NULL};
    jn_node *n = mk(P, JN_SET, at);
    if (peek(P)->kind == JN_T_NAME && tok_is(peek2(P), JN_T_OP, ".")) {
        jn_tok *obj = next(P);
        next(P);
        jn_node *o = mk(P, JN_NAME, obj);
        o->name = tok_str(P, obj);
        o->name_n = obj->n;
        n->d = o;
        jn_tok *attr = expect_kind(P, JN_T_NAME, "an attribute name");
        n->name = tok_str(P, attr);
        n->name_n = attr->n;
    } else parse_targets(P, n);
    if (accept_op(P, "=")) {
        jn_node *e = parse_expr(P, 1);
        if (is_op(P, ",")) { /* set a, b = x, y */
            kidlist l = {0};
            kid_push(P, &l, e, NULL);
            while (accept_op(P, ",")) kid_push(P, &l, parse_expr(P, 1), NULL);
            e = mk(P, JN_TUPLE, at);
            e->kids = l.v;
            e->n_kids = l.n;
        }
        n->a = e;
        end_tag(P);
        return n;
    }
    end_tag(P);
    n->k = JN_SET_BLOCK;
    const char *which;
    n->b = parse_body(P, end, &which);
    end_tag(P);
    return n;
}

static jn_node *parse_macro(parser *P, const jn_tok *at) {
    static const char *const end[] = {"endmacro", NULL};
    jn_node *n = mk(P, JN_MACRO, at);
    jn_tok *name = expect_kind(P, JN_T_NAME, "a macro name");
    n->name = tok_str(P, name);
    n->name_n = name->n;
    expect_op(P, "(");
    kidlist l = {0};
    while (!accept_op(P, ")")) {
        if (l.n) expect_op(P, ",");
        jn_tok *pn = expect_kind(P, JN_T_NAME, "a parameter name");
        jn_node *def = NULL;
        if (accept_op(P, "=")) def = parse_expr(P, 1);
        kid_push(P, &l, def, tok_str(P, pn));
    }
    n->kids = l.v;
    n->knames = l.names;
    n->n_kids = l.n;
    end_tag(P);
    const char *which;
    n->a = parse_body(P, end, &which);
    end_tag(P);
    return n;
}

static jn_node *parse_filter_block(parser *P, const jn_tok *at) {
    static const char *const end[] = {"endfilter", NULL};
    jn_node *n = mk(P, JN_FILTER_BLOCK, at);
    jn_tok *name = expect_kind(P, JN_T_NAME, "a filter name");
    n->name = tok_str(P, name);
    if (accept_op(P, "(")) parse_args(P, n);
    end_tag(P);
    const char *which;
    n->a = parse_body(P, end, &which);
    end_tag(P);
    return n;
}

static jn_node *parse_statement(parser *P, jn_tok *kw) {
    static const char *const gen_end[] = {"endgeneration", NULL};
    if (tok_is(kw, JN_T_NAME, "if")) return parse_if(P, kw);
    if (tok_is(kw, JN_T_NAME, "for")) return parse_for(P, kw);
    if (tok_is(kw, JN_T_NAME, "set")) return parse_set(P, kw);
    if (tok_is(kw, JN_T_NAME, "macro")) return parse_macro(P, kw);
    if (tok_is(kw, JN_T_NAME, "filter")) return parse_filter_block(P, kw);
    if (tok_is(kw, JN_T_NAME, "break") || tok_is(kw, JN_T_NAME, "continue")) {
        jn_node *n = mk(P, kw->p[0] == 'b' ? JN_BREAK : JN_CONTINUE, kw);
        end_tag(P);
        return n;
    }
    if (tok_is(kw, JN_T_NAME, "generation")) { /* an assistant-mask marker: renders its body */
        end_tag(P);
        const char *which;
        jn_node *b = parse_body(P, gen_end, &which);
        end_tag(P);
        return b;
    }
    pfail(P, kw, "unknown tag '%.*s'", (int)kw->n, kw->p);
}

static jn_node *parse_body(parser *P, const char *const *stops, const char **which) {
    jn_node *blk = mk(P, JN_BLOCK, peek(P));
    kidlist l = {0};
    for (;;) {
        jn_tok *t = next(P);
        if (t->kind == JN_T_EOF) {
            if (stops && stops[0]) {
                int last = 0;
                while (stops[last + 1]) last++;
                pfail(P, t, "expected '{%% %s %%}' before the end", stops[last]);
            }
            break;
        }
        if (t->kind == JN_T_TEXT) {
            jn_node *n = mk(P, JN_TEXT, t);
            n->lit = (jv){.t = JV_STR, .u.s = {t->p, t->n}};
            kid_push(P, &l, n, NULL);
        } else if (t->kind == JN_T_VAR_BEGIN) {
            jn_node *n = mk(P, JN_OUTPUT, t);
            n->a = parse_expr(P, 1);
            expect_kind(P, JN_T_VAR_END, "'}}'");
            kid_push(P, &l, n, NULL);
        } else if (t->kind == JN_T_BLOCK_BEGIN) {
            jn_tok *kw = expect_kind(P, JN_T_NAME, "a tag name");
            for (int i = 0; stops && stops[i]; i++)
                if (tok_is(kw, JN_T_NAME, stops[i])) {
                    *which = stops[i];
                    goto done;
                }
            kid_push(P, &l, parse_statement(P, kw), NULL);
        } else pfail(P, t, "unexpected '%.*s'", (int)t->n, t->p);
    }
done:
    blk->kids = l.v;
    blk->n_kids = l.n;
    return blk;
}

int jn_parse(st_jinja *t, char *err, size_t errlen) {
    parser P = {.t = t, .err = err, .errlen = errlen};
    jmp_buf oom;
    t->ast.oom = &oom;
    if (setjmp(oom)) {
        snprintf(err, errlen, "out of memory parsing the template");
        return -1;
    }
    if (jn_lex(&t->ast, t->src, &P.tk, &P.n, err, errlen)) return -1;
    if (setjmp(P.fail)) return -1;
    const char *which = NULL;
    t->root = parse_body(&P, NULL, &which);
    t->ast.oom = NULL;
    return 0;
}
