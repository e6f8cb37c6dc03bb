/* SPDX-License-Identifier: Apache-2.0 */
/* GBNF to the compiled grammar (and <[id]>, one vocabulary token by its id): recursive descent; repetitions and groups become generated
 * rules (X* as R ::= X R | empty, X+ as X X*, X? as R ::= X | empty, X{m,n} as m copies and
 * a chain of nested optionals). One longjmp carries a syntax error out. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_int.h"

typedef struct galt {
    gelem *v;
    size_t n, cap;
} galt;

typedef struct grule {
    char *name;
    galt *alts;
    size_t n, cap;
    int defined;
    const char *ref_at; /* first reference, for "undefined rule" */
} grule;

typedef struct bld {
    grule *r;
    size_t n, cap;
    const char *src, *p;
    char *err;
    size_t errlen;
    jmp_buf fail;
    galt *pending[64]; /* sequences being built, on the heap (freed when an error jumps out) */
    int n_pending;
} bld;

__attribute__((format(printf, 3, 4))) _Noreturn static void gfail(bld *b, const char *at, const char *fmt, ...) {
    int line = 1, col = 1;
    for (const char *q = b->src; q < at; q++) {
        if (*q == '\n') line++, col = 1;
        else col++;
    }
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(b->err, b->errlen, "line %d, col %d: %s", line, col, msg);
    longjmp(b->fail, 1);
}

static void *grow(bld *b, void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap * 2 : 8;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) gfail(b, b->p, "out of memory");
    *cap = c;
    return q;
}

static uint32_t rule_id(bld *b, const char *name, size_t n, const char *at) {
    for (size_t i = 0; i < b->n; i++)
        if (strlen(b->r[i].name) == n && !memcmp(b->r[i].name, name, n)) return (uint32_t)i;
    b->r = grow(b, b->r, &b->cap, b->n + 1, sizeof *b->r);
    grule *r = &b->r[b->n];
    memset(r, 0, sizeof *r);
    r->name = malloc(n + 1);
    if (!r->name) gfail(b, at, "out of memory");
    memcpy(r->name, name, n);
    r->name[n] = 0;
    r->ref_at = at;
    return (uint32_t)b->n++;
}

static uint32_t anon_rule(bld *b, const char *at) {
    char name[48];
    snprintf(name, sizeof name, "_gen%zu", b->n);
    uint32_t id = rule_id(b, name, strlen(name), at);
    b->r[id].defined = 1;
    return id;
}

static void alt_push(bld *b, galt *a, gelem e) {
    a->v = grow(b, a->v, &a->cap, a->n + 1, sizeof *a->v);
    a->v[a->n++] = e;
}

static void rule_add_alt(bld *b, uint32_t r, galt a) {
    grule *g = &b->r[r];
    g->alts = grow(b, g->alts, &g->cap, g->n + 1, sizeof *g->alts);
    g->alts[g->n++] = a;
}

static gelem byte_elem(unsigned c) {
    gelem e;
    memset(&e, 0, sizeof e);
    e.type = GE_CHARS;
    e.set[c >> 3] |= (uint8_t)(1u << (c & 7));
    return e;
}

static gelem rule_elem(uint32_t r) {
    gelem e;
    memset(&e, 0, sizeof e);
    e.type = GE_RULE;
    e.rule = r;
    return e;
}

static gelem token_elem(uint32_t id) {
    gelem e;
    memset(&e, 0, sizeof e); /* no byte matches it */
    e.type = GE_TOKEN;
    e.rule = id;
    return e;
}

static void skip_space(bld *b, int newlines) {
    for (;;) {
        char c = *b->p;
        if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) b->p++;
        else if (c == '#') {
            while (*b->p && *b->p != '\n') b->p++;
        } else return;
    }
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One character of a literal or class: its code point; b->p moves past it. */
static uint32_t parse_char(bld *b) {
    const char *at = b->p;
    if (*b->p != '\\') return (unsigned char)*b->p++;
    b->p++;
    char c = *b->p++;
    int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; i++) {
            int h = hexval(*b->p);
            if (h < 0) gfail(b, at, "bad \\%c escape", c);
            v = v * 16 + (uint32_t)h;
            b->p++;
        }
        return v;
    }
    switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case '\\': case '"': case '\'': case '[': case ']': case '/': case '-': case '^': return (unsigned char)c;
    default: gfail(b, at, "unknown escape '\\%c'", c);
    }
}

static void push_utf8(bld *b, galt *a, uint32_t cp) {
    unsigned char u[4];
    int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (n == 1) u[0] = (unsigned char)cp;
    else {
        for (int i = n - 1; i > 0; i--, cp >>= 6) u[i] = (unsigned char)(0x80 | (cp & 0x3F));
        u[0] = (unsigned char)((n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0) | cp);
    }
    for (int i = 0; i < n; i++) alt_push(b, a, byte_elem(u[i]));
}

static gelem parse_class(bld *b) {
    const char *at = b->p++;
    gelem e;
    memset(&e, 0, sizeof e);
    e.type = GE_CHARS;
    int neg = *b->p == '^';
    if (neg) b->p++;
    while (*b->p && *b->p != ']') {
        uint32_t lo = parse_char(b), hi = lo;
        if (*b->p == '-' && b->p[1] && b->p[1] != ']') {
            b->p++;
            hi = parse_char(b);
        }
        if (hi > 0x7F) gfail(b, at, "character classes with non-ASCII characters are not supported");
        if (hi < lo) gfail(b, at, "empty range in a character class");
        for (uint32_t c = lo; c <= hi; c++) e.set[c >> 3] |= (uint8_t)(1u << (c & 7));
    }
    if (*b->p != ']') gfail(b, at, "unterminated character class");
    b->p++;
    if (neg)
        for (int i = 0; i < 32; i++) e.set[i] = (uint8_t)~e.set[i];
    return e;
}

static void parse_alternates(bld *b, uint32_t r, int nested);

/* Repeat the last symbol a->v[start..n) per the postfix at b->p. */
static void apply_postfix(bld *b, galt *a, size_t start) {
    char op = *b->p;
    if (op != '*' && op != '+' && op != '?' && op != '{') return;
    const char *at = b->p++;
    long m = 0, n = -1;
    if (op == '{') {
        char *end;
        m = strtol(b->p, &end, 10);
        if (end == b->p || m < 0 || m > 1000) gfail(b, at, "bad repetition count");
        b->p = end;
        n = m;
        if (*b->p == ',') {
            b->p++;
            n = -1;
            if (isdigit((unsigned char)*b->p)) {
                n = strtol(b->p, &end, 10);
                if (n < m || n > 1000) gfail(b, at, "bad repetition range");
                b->p = end;
            }
        }
        if (*b->p++ != '}') gfail(b, at, "expected '}'");
    } else if (op == '+') m = 1;
    else if (op == '?') n = 1;
    /* the symbol as one rule X */
    uint32_t x = anon_rule(b, at);
    galt body = {0};
    for (size_t i = start; i < a->n; i++) alt_push(b, &body, a->v[i]);
    rule_add_alt(b, x, body);
    a->n = start;
    for (long i = 0; i < m; i++) alt_push(b, a, rule_elem(x));
    if (n < 0) { /* X*: R ::= X R | empty */
        uint32_t rr = anon_rule(b, at);
        galt more = {0}, none = {0};
        alt_push(b, &more, rule_elem(x));
        alt_push(b, &more, rule_elem(rr));
        rule_add_alt(b, rr, more);
        rule_add_alt(b, rr, none);
        alt_push(b, a, rule_elem(rr));
        return;
    }
    uint32_t prev = UINT32_MAX; /* nested optionals: O_k ::= X O_{k-1} | empty */
    for (long k = 0; k < n - m; k++) {
        uint32_t o = anon_rule(b, at);
        galt more = {0}, none = {0};
        alt_push(b, &more, rule_elem(x));
        if (prev != UINT32_MAX) alt_push(b, &more, rule_elem(prev));
        rule_add_alt(b, o, more);
        rule_add_alt(b, o, none);
        prev = o;
    }
    if (prev != UINT32_MAX) alt_push(b, a, rule_elem(prev));
}

static int is_name_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_'; }

/* The sequence being built lives on the heap and is listed in b->pending, so an error that
 * jumps out of nested groups can free every unfinished one. */
static galt parse_sequence(bld *b, int nested) {
    if (b->n_pending == 64) gfail(b, b->p, "groups nest too deep");
    galt *a = calloc(1, sizeof *a), done;
    if (!a) gfail(b, b->p, "out of memory");
    b->pending[b->n_pending++] = a;
    for (;;) {
        skip_space(b, nested);
        size_t start = a->n;
        const char *at = b->p;
        char c = *b->p;
        if (c == '"') {
            b->p++;
            while (*b->p && *b->p != '"') {
                if (*b->p == '\n') gfail(b, at, "unterminated literal");
                push_utf8(b, a, parse_char(b));
            }
            if (*b->p != '"') gfail(b, at, "unterminated literal");
            b->p++;
            if (a->n == start) continue; /* "" matches nothing: no symbol to repeat */
        } else if (c == '[') {
            alt_push(b, a, parse_class(b));
        } else if (c == '<' && b->p[1] == '[') { /* <[id]>: exactly that token */
            char *end;
            long id = strtol(b->p + 2, &end, 10);
            if (end == b->p + 2 || id < 0 || id > 0x7FFFFFFF || end[0] != ']' || end[1] != '>') gfail(b, at, "bad token reference");
            b->p = end + 2;
            alt_push(b, a, token_elem((uint32_t)id));
        } else if (c == '.') {
            b->p++;
            gelem e = byte_elem(0);
            memset(e.set, 0xFF, sizeof e.set);
            alt_push(b, a, e);
        } else if (c == '(') {
            b->p++;
            uint32_t g = anon_rule(b, at);
            parse_alternates(b, g, 1);
            skip_space(b, 1);
            if (*b->p++ != ')') gfail(b, at, "expected ')'");
            alt_push(b, a, rule_elem(g));
        } else if (is_name_char(c)) {
            const char *s = b->p;
            while (is_name_char(*b->p)) b->p++;
            const char *save = b->p;
            skip_space(b, 0);
            if (!nested && b->p[0] == ':' && b->p[1] == ':' && b->p[2] == '=') gfail(b, s, "missing newline before rule '%.*s'", (int)(save - s), s);
            b->p = save;
            alt_push(b, a, rule_elem(rule_id(b, s, (size_t)(b->p - s), s)));
        } else {
            b->n_pending--;
            done = *a;
            free(a);
            return done;
        }
        apply_postfix(b, a, start);
    }
}

static void parse_alternates(bld *b, uint32_t r, int nested) {
    rule_add_alt(b, r, parse_sequence(b, nested));
    for (;;) {
        skip_space(b, nested);
        if (*b->p != '|') return;
        b->p++;
        skip_space(b, 1);
        rule_add_alt(b, r, parse_sequence(b, nested));
    }
}

static void parse_rules(bld *b) {
    skip_space(b, 1);
    while (*b->p) {
        const char *s = b->p;
        while (is_name_char(*b->p)) b->p++;
        if (b->p == s) gfail(b, s, "expected a rule name");
        uint32_t r = rule_id(b, s, (size_t)(b->p - s), s);
        if (b->r[r].defined) gfail(b, s, "rule '%s' is defined twice", b->r[r].name);
        b->r[r].defined = 1;
        skip_space(b, 0);
        if (strncmp(b->p, "::=", 3)) gfail(b, b->p, "expected '::='");
        b->p += 3;
        skip_space(b, 1);
        parse_alternates(b, r, 0);
        skip_space(b, 0);
        if (*b->p && *b->p != '\n' && *b->p != '\r') gfail(b, b->p, "unexpected '%c'", *b->p);
        skip_space(b, 1);
    }
}

/* The builder's rules into the flat form. */
static st_grammar *flatten(bld *b) {
    st_grammar *g = calloc(1, sizeof *g);
    size_t n_alts = 0, n_el = 0;
    for (size_t i = 0; i < b->n; i++) {
        n_alts += b->r[i].n;
        for (size_t k = 0; k < b->r[i].n; k++) n_el += b->r[i].alts[k].n + 1;
    }
    if (!g) return NULL;
    g->el = calloc(n_el, sizeof *g->el);
    g->alt_start = calloc(n_alts ? n_alts : 1, sizeof *g->alt_start);
    g->rule_alt0 = calloc(b->n, sizeof *g->rule_alt0);
    g->rule_nalt = calloc(b->n, sizeof *g->rule_nalt);
    if (!g->el || !g->alt_start || !g->rule_alt0 || !g->rule_nalt) {
        st_grammar_free(g);
        return NULL;
    }
    for (size_t i = 0; i < b->n; i++) {
        g->rule_alt0[i] = g->n_alts;
        g->rule_nalt[i] = (uint32_t)b->r[i].n;
        for (size_t k = 0; k < b->r[i].n; k++) {
            g->alt_start[g->n_alts++] = g->n_el;
            for (size_t j = 0; j < b->r[i].alts[k].n; j++) g->el[g->n_el++] = b->r[i].alts[k].v[j];
            g->el[g->n_el++].type = GE_END;
        }
    }
    g->n_rules = (uint32_t)b->n;
    return g;
}

static void bld_free(bld *b) {
    for (size_t i = 0; i < b->n; i++) {
        for (size_t k = 0; k < b->r[i].n; k++) free(b->r[i].alts[k].v);
        free(b->r[i].alts);
        free(b->r[i].name);
    }
    free(b->r);
}

/* Left recursion makes the matcher loop: refuse it (rule r reaches itself before any byte). */
int st_grammar_check_left_recursion(const st_grammar *g, uint32_t *bad_rule);

st_grammar *st_grammar_parse(const char *gbnf, char *err, size_t errlen) {
    bld b = {.src = gbnf, .p = gbnf, .err = err, .errlen = errlen};
    st_grammar *volatile g = NULL; /* set after setjmp */
    if (setjmp(b.fail)) goto fail;
    parse_rules(&b);
    for (size_t i = 0; i < b.n; i++)
        if (!b.r[i].defined) gfail(&b, b.r[i].ref_at, "undefined rule '%s'", b.r[i].name);
    uint32_t root = UINT32_MAX;
    for (size_t i = 0; i < b.n; i++)
        if (!strcmp(b.r[i].name, "root")) root = (uint32_t)i;
    if (root == UINT32_MAX) gfail(&b, b.p, "no 'root' rule");
    st_grammar *f = flatten(&b);
    if (!f) gfail(&b, b.p, "out of memory");
    f->root = root;
    g = f;
    uint32_t bad;
    if (st_grammar_check_left_recursion(f, &bad)) {
        snprintf(err, errlen, "rule '%s' is left-recursive (it can reach itself before matching a character)", b.r[bad].name);
        st_grammar_free(f);
        g = NULL;
    }
fail:
    for (int i = 0; i < b.n_pending; i++) {
        free(b.pending[i]->v);
        free(b.pending[i]);
    }
    bld_free(&b);
    return g;
}

void st_grammar_free(st_grammar *g) {
    if (!g) return;
    free(g->el);
    free(g->alt_start);
    free(g->rule_alt0);
    free(g->rule_nalt);
    free(g);
}
