/* SPDX-License-Identifier: Apache-2.0 */
/* The matcher: a set of stacks of element positions (a pushdown automaton run on all
 * alternatives at once), advanced byte by byte; and the vocabulary trie walked with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_int.h"

#define MAX_STACKS 2048
#define MAX_DEPTH 256
/* Work bounds: rule expansions for one byte (the start included), and for one whole mask.
 * A grammar whose alternatives multiply (anyOf of anyOf of ... of the same thing) meets these
 * instead of running for hours; the matcher then says so (st_gmatch_error). */
#define EXPAND_BUDGET (1u << 16)
#define MASK_BUDGET (1u << 22)

enum { OV_NONE = 0, OV_STACKS = 1, OV_STEPS = 2, OV_MEMORY = 3 };

/* ---- left recursion (at compile time) ------------------------------------------------------ */
static int first_refs_cycle(const st_grammar *g, const uint8_t *nullable, uint32_t r, uint8_t *state, uint32_t *bad) {
    if (state[r] == 1) {
        *bad = r;
        return 1;
    }
    if (state[r] == 2) return 0;
    state[r] = 1;
    for (uint32_t a = 0; a < g->rule_nalt[r]; a++) {
        for (uint32_t i = g->alt_start[g->rule_alt0[r] + a]; g->el[i].type == GE_RULE; i++) {
            if (first_refs_cycle(g, nullable, g->el[i].rule, state, bad)) return 1;
            if (!nullable[g->el[i].rule]) break;
        }
    }
    state[r] = 2;
    return 0;
}

int st_grammar_check_left_recursion(const st_grammar *g, uint32_t *bad_rule) {
    uint8_t *nullable = calloc(g->n_rules, 1), *state = calloc(g->n_rules, 1);
    int rc = 0;
    if (!nullable || !state) goto done;
    for (int changed = 1; changed;) { /* a rule is nullable when one alternative is all nullable */
        changed = 0;
        for (uint32_t r = 0; r < g->n_rules; r++) {
            if (nullable[r]) continue;
            for (uint32_t a = 0; a < g->rule_nalt[r] && !nullable[r]; a++) {
                uint32_t i = g->alt_start[g->rule_alt0[r] + a];
                while (g->el[i].type == GE_RULE && nullable[g->el[i].rule]) i++;
                if (g->el[i].type == GE_END) nullable[r] = 1, changed = 1;
            }
        }
    }
    for (uint32_t r = 0; r < g->n_rules && !rc; r++) {
        memset(state, 0, g->n_rules);
        if (first_refs_cycle(g, nullable, r, state, bad_rule)) rc = 1;
    }
done:
    free(nullable);
    free(state);
    return rc;
}

/* ---- stack sets in a bump arena ------------------------------------------------------------ */
typedef struct barena {
    uint32_t *p;
    size_t used, cap;
} barena;

typedef struct sset {
    size_t off; /* into the arena: [n][len0][stack0...][len1][stack1...]... */
    uint32_t n;
    int overflow; /* OV_*: the set is incomplete */
} sset;

static int reserve(barena *a, size_t more) {
    if (a->used + more <= a->cap) return 0;
    size_t cap = a->cap ? a->cap * 2 : 4096;
    while (cap < a->used + more) cap *= 2;
    uint32_t *p = realloc(a->p, cap * sizeof *p);
    if (!p) return -1;
    a->p = p;
    a->cap = cap;
    return 0;
}

typedef struct expander {
    const st_grammar *g;
    barena *a;
    sset *out;
    uint32_t steps; /* expansions left for this byte */
    uint32_t tmp[MAX_DEPTH + 2];
} expander;

/* Add the stack tmp[0..len) to out unless it is there already. */
static void emit(expander *x, uint32_t len) {
    sset *o = x->out;
    size_t at = o->off;
    for (uint32_t k = 0; k < o->n; k++) {
        uint32_t l = x->a->p[at];
        if (l == len && !memcmp(x->a->p + at + 1, x->tmp, len * sizeof(uint32_t))) return;
        at += 1 + l;
    }
    if (o->n >= MAX_STACKS || reserve(x->a, len + 1)) {
        o->overflow = o->n >= MAX_STACKS ? OV_STACKS : OV_MEMORY;
        return;
    }
    x->a->p[x->a->used++] = len;
    memcpy(x->a->p + x->a->used, x->tmp, len * sizeof(uint32_t));
    x->a->used += len;
    o->n++;
}

/* Expand the stack tmp[0..len) until its top is a byte set (or it is empty: the end). */
static void expand(expander *x, uint32_t len) {
    const st_grammar *g = x->g;
    while (len && g->el[x->tmp[len - 1]].type == GE_END) len--; /* finished frames */
    if (!len || g->el[x->tmp[len - 1]].type != GE_RULE) { /* bytes or a token next */
        emit(x, len);
        return;
    }
    if (len > MAX_DEPTH) {
        x->out->overflow = OV_STACKS;
        return;
    }
    if (!x->steps || x->out->overflow) { /* the set is incomplete anyway: stop working on it */
        if (!x->out->overflow) x->out->overflow = OV_STEPS;
        return;
    }
    x->steps--;
    uint32_t top = x->tmp[len - 1], r = g->el[top].rule;
    uint32_t base = len - 1;
    if (g->el[top + 1].type != GE_END) x->tmp[base++] = top + 1; /* the continuation (none after a tail call) */
    uint32_t saved[MAX_DEPTH + 2];
    memcpy(saved, x->tmp, base * sizeof *saved);
    for (uint32_t a = 0; a < g->rule_nalt[r]; a++) {
        memcpy(x->tmp, saved, base * sizeof *saved);
        x->tmp[base] = g->alt_start[g->rule_alt0[r] + a];
        expand(x, base + 1);
    }
}

static sset start_set(const st_grammar *g, barena *a) {
    sset s = {.off = a->used};
    expander x = {.g = g, .a = a, .out = &s, .steps = EXPAND_BUDGET};
    for (uint32_t k = 0; k < g->rule_nalt[g->root]; k++) {
        x.tmp[0] = g->alt_start[g->rule_alt0[g->root] + k];
        expand(&x, 1);
    }
    return s;
}

static int has_byte(const gelem *e, unsigned char c) { return (e->set[c >> 3] >> (c & 7)) & 1; }

/* Does the element e take `what` next: a byte, or (token) the vocabulary token by id? */
static int takes(const gelem *e, int token, uint32_t what) {
    return token ? e->type == GE_TOKEN && e->rule == what : has_byte(e, (unsigned char)what);
}

/* The stacks after `what` (a byte c, or with token a token id named by <[id]>), allocated
 * after in's in the arena; the expansions it took are added to *work. */
static sset advance_on(const st_grammar *g, barena *a, sset in, int token, uint32_t what, uint64_t *work) {
    sset out = {.off = a->used};
    expander x = {.g = g, .a = a, .out = &out, .steps = EXPAND_BUDGET};
    size_t at = in.off;
    for (uint32_t k = 0; k < in.n; k++) {
        uint32_t len = a->p[at];
        const uint32_t *stk = a->p + at + 1;
        at += 1 + len;
        if (!len || !takes(&g->el[stk[len - 1]], token, what)) continue;
        memcpy(x.tmp, stk, len * sizeof *stk);
        x.tmp[len - 1]++;
        expand(&x, len);
        stk = NULL; /* the arena may have moved */
    }
    *work += EXPAND_BUDGET - x.steps;
    return out;
}

static sset advance(const st_grammar *g, barena *a, sset in, unsigned char c, uint64_t *work) {
    return advance_on(g, a, in, 0, c, work);
}

/* Nonzero when some stack of s waits for token id by name. */
static int set_names(const st_grammar *g, const barena *a, sset s, uint32_t id) {
    size_t at = s.off;
    for (uint32_t k = 0; k < s.n; k++) {
        uint32_t len = a->p[at];
        const gelem *e = len ? &g->el[a->p[at + len]] : NULL;
        if (e && e->type == GE_TOKEN && e->rule == id) return 1;
        at += 1 + len;
    }
    return 0;
}

static int set_can_end(const barena *a, sset s) {
    size_t at = s.off;
    for (uint32_t k = 0; k < s.n; k++) {
        if (!a->p[at]) return 1;
        at += 1 + a->p[at];
    }
    return 0;
}

/* ---- matcher -------------------------------------------------------------------------------- */
#define MASK_CACHE 4 /* masks kept per matcher, by the state they were computed in */

typedef struct mcache {
    uint64_t key;     /* hash of the stack set; 0 = empty */
    uint32_t *state;  /* the stack set itself (a hash is not proof) */
    size_t n_state;
    uint8_t *allowed; /* [n_vocab] */
    int32_t count, n_vocab;
    uint64_t used;
} mcache;

struct st_gmatch {
    const st_grammar *g;
    barena cur;  /* the current set at offset 0 */
    sset s;
    barena work; /* scratch for checks and masks */
    mcache cache[MASK_CACHE];
    uint64_t tick;
    int ov; /* the last bound met (OV_*, or OV_MASK), for st_gmatch_error */
};

enum { OV_MASK = 4 };

static const char *ov_text(int ov) {
    switch (ov) {
    case OV_STACKS: return "the grammar is too ambiguous: more than 2048 parses alive at once, or rules nested deeper than 256";
    case OV_STEPS: return "the grammar is too ambiguous: following one byte takes more than 65536 rule expansions";
    case OV_MASK: return "the grammar is too ambiguous: the tokens allowed next take more than 4194304 rule expansions to find";
    case OV_MEMORY: return "out of memory";
    default: return NULL;
    }
}

const char *st_gmatch_error(const st_gmatch *m) { return ov_text(m->ov); }

int st_grammar_check(const st_grammar *g, char *err, size_t errlen) {
    barena a = {0};
    sset s = start_set(g, &a);
    free(a.p);
    if (!s.overflow && s.n) return 0;
    snprintf(err, errlen, "%s", s.overflow ? ov_text(s.overflow) : "the grammar matches nothing");
    return -1;
}

st_gmatch *st_gmatch_new(const st_grammar *g) {
    st_gmatch *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->g = g;
    m->s = start_set(g, &m->cur);
    if (m->s.overflow) {
        st_gmatch_free(m);
        return NULL;
    }
    return m;
}

void st_gmatch_free(st_gmatch *m) {
    if (!m) return;
    for (int i = 0; i < MASK_CACHE; i++) {
        free(m->cache[i].state);
        free(m->cache[i].allowed);
    }
    free(m->cur.p);
    free(m->work.p);
    free(m);
}

/* Copy the current set into the work arena at offset 0. */
static sset load_work(const st_gmatch *m, barena *w) {
    w->used = 0;
    if (reserve(w, m->cur.used)) return (sset){.overflow = OV_MEMORY};
    memcpy(w->p, m->cur.p, m->cur.used * sizeof *w->p);
    w->used = m->cur.used;
    sset s = m->s;
    return s;
}

static sset run(st_gmatch *m, const char *s, size_t n) {
    barena *w = &m->work;
    uint64_t work = 0;
    m->ov = OV_NONE;
    sset cur = load_work(m, w);
    for (size_t i = 0; i < n && cur.n && !cur.overflow; i++) cur = advance(m->g, w, cur, (unsigned char)s[i], &work);
    if (cur.overflow) m->ov = cur.overflow;
    return cur;
}

int st_gmatch_check(const st_gmatch *m, const char *s, size_t n) {
    sset r = run((st_gmatch *)m, s, n); /* the work arena and the error are not observable state */
    return r.n > 0 && !r.overflow;
}

/* The set r (in the work arena) becomes the current one, moved to offset 0. */
static int take_work(st_gmatch *m, sset r);

int st_gmatch_accept(st_gmatch *m, const char *s, size_t n) {
    return take_work(m, run(m, s, n));
}

static int take_work(st_gmatch *m, sset r) {
    if (!r.n || r.overflow) return -1;
    /* the result becomes the current set, moved to offset 0 */
    size_t len = m->work.used - r.off;
    m->cur.used = 0;
    if (reserve(&m->cur, len)) return -1;
    memcpy(m->cur.p, m->work.p + r.off, len * sizeof *m->cur.p);
    m->cur.used = len;
    m->s = (sset){.off = 0, .n = r.n};
    return 0;
}

int st_gmatch_can_end(const st_gmatch *m) { return set_can_end(&m->cur, m->s); }

/* ---- vocabulary trie --------------------------------------------------------------------- */
typedef struct tnode {
    uint32_t child, sibling; /* 0 = none (node 0 is the root, never a child) */
    int32_t tok;             /* first token ending here, -1 none; more via next_tok */
    unsigned char byte;
} tnode;

struct st_gvocab {
    tnode *nodes;
    uint32_t n_nodes, cap;
    int32_t *next_tok; /* [n] tokens ending at the same node */
    char **texts;      /* [n] pointers into blob */
    char *blob;        /* copies of the texts */
    size_t *lens;
    uint8_t *eog;
    int32_t n;
};

static uint32_t child_of(st_gvocab *v, uint32_t node, unsigned char c) {
    uint32_t k = v->nodes[node].child;
    for (; k; k = v->nodes[k].sibling)
        if (v->nodes[k].byte == c) return k;
    if (v->n_nodes == v->cap) {
        uint32_t cap = v->cap * 2;
        tnode *p = realloc(v->nodes, cap * sizeof *p);
        if (!p) return 0;
        v->nodes = p;
        v->cap = cap;
    }
    k = v->n_nodes++;
    v->nodes[k] = (tnode){.child = 0, .sibling = v->nodes[node].child, .tok = -1, .byte = c};
    v->nodes[node].child = k;
    return k;
}

st_gvocab *st_gvocab_new(const char *const *texts, const size_t *lens, const uint8_t *eog, int32_t n) {
    st_gvocab *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->cap = 1024;
    v->nodes = malloc(v->cap * sizeof *v->nodes);
    v->next_tok = malloc((size_t)(n > 0 ? n : 1) * sizeof *v->next_tok);
    v->lens = malloc((size_t)(n > 0 ? n : 1) * sizeof *v->lens);
    v->eog = calloc((size_t)(n > 0 ? n : 1), 1);
    v->texts = malloc((size_t)(n > 0 ? n : 1) * sizeof *v->texts);
    if (!v->nodes || !v->next_tok || !v->lens || !v->eog || !v->texts) goto fail;
    size_t total = 0;
    for (int32_t t = 0; t < n; t++) total += (v->lens[t] = lens ? lens[t] : strlen(texts[t]));
    if (!(v->blob = malloc(total + 1))) goto fail;
    total = 0;
    for (int32_t t = 0; t < n; t++) {
        v->texts[t] = v->blob + total;
        if (v->lens[t]) memcpy(v->texts[t], texts[t], v->lens[t]);
        total += v->lens[t];
    }
    v->nodes[0] = (tnode){.tok = -1};
    v->n_nodes = 1;
    v->n = n;
    for (int32_t t = 0; t < n; t++) {
        v->eog[t] = eog ? eog[t] : 0;
        v->next_tok[t] = -1;
        if (!v->lens[t] || v->eog[t]) continue;
        uint32_t node = 0;
        for (size_t i = 0; i < v->lens[t] && (node || i == 0); i++) node = child_of(v, node, (unsigned char)v->texts[t][i]);
        if (!node) goto fail;
        v->next_tok[t] = v->nodes[node].tok;
        v->nodes[node].tok = t;
    }
    return v;
fail:
    st_gvocab_free(v);
    return NULL;
}

void st_gvocab_free(st_gvocab *v) {
    if (!v) return;
    free(v->nodes);
    free(v->texts);
    free(v->blob);
    free(v->next_tok);
    free(v->lens);
    free(v->eog);
    free(v);
}

/* The trie walk runs on interned states: each distinct stack set gets an id once, and the
 * move of a state on a byte is computed once and remembered (next[]). Inside a JSON string the
 * walk then meets a handful of states over hundreds of thousands of trie nodes. */
typedef struct istate {
    size_t off, len; /* content in the store: [len][stack...] per stack */
    uint32_t n;      /* stacks */
    uint64_t hash;
    int32_t next[256]; /* -2 unknown, -1 refused, else the state id */
} istate;

typedef struct itab {
    istate *v;
    int32_t n, cap;
    barena store, scratch;
    int overflow;  /* OV_*: some move was cut short; OV_MASK: the walk's budget ran out */
    uint64_t work; /* rule expansions so far */
} itab;

static size_t set_len(const barena *a, sset s) {
    size_t at = s.off;
    for (uint32_t k = 0; k < s.n; k++) at += 1 + a->p[at];
    return at - s.off;
}

static uint64_t content_hash(const uint32_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The id of the state s (in arena a), added when new; -1 when out of memory. */
static int32_t intern(itab *t, const barena *a, sset s) {
    size_t len = set_len(a, s);
    uint64_t h = content_hash(a->p + s.off, len);
    for (int32_t i = 0; i < t->n; i++)
        if (t->v[i].hash == h && t->v[i].len == len && !memcmp(t->store.p + t->v[i].off, a->p + s.off, len * sizeof(uint32_t)))
            return i;
    if (t->n == t->cap) {
        int32_t cap = t->cap ? t->cap * 2 : 16;
        istate *v = realloc(t->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        t->v = v;
        t->cap = cap;
    }
    if (reserve(&t->store, len)) return -1;
    istate *st = &t->v[t->n];
    st->off = t->store.used;
    st->len = len;
    st->n = s.n;
    st->hash = h;
    for (int c = 0; c < 256; c++) st->next[c] = -2;
    memcpy(t->store.p + t->store.used, a->p + s.off, len * sizeof(uint32_t));
    t->store.used += len;
    return t->n++;
}

static int32_t step(const st_grammar *g, itab *t, int32_t id, unsigned char c) {
    int32_t r = t->v[id].next[c];
    if (r != -2) return r;
    if (t->work > MASK_BUDGET) {
        t->overflow = OV_MASK;
        return -1;
    }
    barena *w = &t->scratch;
    w->used = 0;
    if (reserve(w, t->v[id].len)) return -1;
    memcpy(w->p, t->store.p + t->v[id].off, t->v[id].len * sizeof(uint32_t));
    w->used = t->v[id].len;
    sset out = advance(g, w, (sset){.off = 0, .n = t->v[id].n}, c, &t->work);
    if (out.overflow) t->overflow = out.overflow;
    r = out.n && !out.overflow ? intern(t, w, out) : -1;
    t->v[id].next[c] = r;
    return r;
}

typedef struct walk {
    const st_grammar *g;
    const st_gvocab *v;
    itab *t;
    uint8_t *allowed;
    int32_t count;
} walk;

static void walk_node(walk *w, uint32_t node, int32_t id) {
    for (uint32_t k = w->v->nodes[node].child; k; k = w->v->nodes[k].sibling) {
        int32_t id2 = step(w->g, w->t, id, w->v->nodes[k].byte);
        if (id2 < 0) continue;
        for (int32_t t = w->v->nodes[k].tok; t >= 0; t = w->v->next_tok[t]) {
            w->allowed[t] = 1;
            w->count++;
        }
        walk_node(w, k, id2);
    }
}

static uint64_t state_hash(const st_gmatch *m) {
    uint64_t h = 1469598103934665603ull ^ m->s.n;
    for (size_t i = 0; i < m->cur.used; i++) h = (h ^ m->cur.p[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* A mask computed before in the same state (inside a JSON string the state repeats at every
 * character, so a model that keeps straying pays for the walk once). */
static mcache *cache_find(st_gmatch *m, uint64_t key, int32_t n_vocab) {
    for (int i = 0; i < MASK_CACHE; i++) {
        mcache *c = &m->cache[i];
        if (c->key == key && c->n_vocab == n_vocab && c->n_state == m->cur.used &&
            !memcmp(c->state, m->cur.p, m->cur.used * sizeof *c->state))
            return c;
    }
    return NULL;
}

static void cache_put(st_gmatch *m, uint64_t key, const uint8_t *allowed, int32_t count, int32_t n_vocab) {
    mcache *c = &m->cache[0];
    for (int i = 1; i < MASK_CACHE; i++)
        if (m->cache[i].used < c->used) c = &m->cache[i];
    uint32_t *st = realloc(c->state, (m->cur.used ? m->cur.used : 1) * sizeof *st);
    uint8_t *al = c->n_vocab == n_vocab && c->allowed ? c->allowed : realloc(c->allowed, (size_t)n_vocab);
    if (st) c->state = st;
    if (al) c->allowed = al;
    if (!st || !al) {
        c->key = 0;
        return;
    }
    memcpy(c->state, m->cur.p, m->cur.used * sizeof *st);
    memcpy(c->allowed, allowed, (size_t)n_vocab);
    c->n_state = m->cur.used;
    c->key = key;
    c->count = count;
    c->n_vocab = n_vocab;
    c->used = ++m->tick;
}

static int32_t mask_walk(st_gmatch *m, const st_gvocab *v, uint8_t *allowed);

int32_t st_gmatch_mask(const st_gmatch *cm, const st_gvocab *v, uint8_t *allowed) {
    st_gmatch *m = (st_gmatch *)cm; /* the cache is not part of the observable state */
    uint64_t key = state_hash(m);
    mcache *c = cache_find(m, key, v->n);
    if (c) {
        memcpy(allowed, c->allowed, (size_t)v->n);
        c->used = ++m->tick;
        return c->count;
    }
    int32_t n = mask_walk(m, v, allowed);
    if (n >= 0) cache_put(m, key, allowed, n, v->n);
    return n;
}

/* The allowed tokens, or -1 when a bound was met (m->ov says which: the mask would be
 * incomplete, and a token refused only for the bound would steer the text wrongly). */
static int32_t mask_walk(st_gmatch *m, const st_gvocab *v, uint8_t *allowed) {
    memset(allowed, 0, (size_t)v->n);
    m->ov = OV_NONE;
    itab t = {0};
    walk wk = {m->g, v, &t, allowed, 0};
    int32_t root = intern(&t, &m->cur, m->s);
    if (root >= 0) walk_node(&wk, 0, root);
    free(t.v);
    free(t.store.p);
    free(t.scratch.p);
    if (root < 0 || t.overflow) {
        m->ov = root < 0 ? OV_MEMORY : t.overflow;
        return -1;
    }
    if (st_gmatch_can_end(m))
        for (int32_t i = 0; i < v->n; i++)
            if (v->eog[i] && !allowed[i]) allowed[i] = 1, wk.count++;
    size_t at = 0; /* tokens named by <[id]> */
    for (uint32_t k = 0; k < m->s.n; k++) {
        uint32_t len = m->cur.p[at];
        const gelem *e = len ? &m->g->el[m->cur.p[at + len]] : NULL;
        if (e && e->type == GE_TOKEN && e->rule < (uint32_t)v->n && !allowed[e->rule]) allowed[e->rule] = 1, wk.count++;
        at += 1 + len;
    }
    return wk.count;
}

int st_gmatch_token_ok(const st_gmatch *m, const st_gvocab *v, int32_t t) {
    if (t < 0 || t >= v->n) return 0;
    if (set_names(m->g, &m->cur, m->s, (uint32_t)t)) return 1; /* <[t]> */
    if (v->eog[t]) return st_gmatch_can_end(m);
    if (!v->lens[t]) return 0;
    return st_gmatch_check(m, v->texts[t], v->lens[t]);
}

int st_gmatch_accept_token(st_gmatch *m, const st_gvocab *v, int32_t t) {
    if (t < 0 || t >= v->n) return -1;
    if (set_names(m->g, &m->cur, m->s, (uint32_t)t)) { /* <[t]> */
        uint64_t work = 0;
        sset r = advance_on(m->g, &m->work, load_work(m, &m->work), 1, (uint32_t)t, &work);
        if (r.overflow) m->ov = r.overflow;
        return take_work(m, r);
    }
    if (v->eog[t]) return st_gmatch_can_end(m) ? 0 : -1;
    return st_gmatch_accept(m, v->texts[t], v->lens[t]);
}
