/* SPDX-License-Identifier: Apache-2.0 */
/* Encoding: special-token partition, then SPM or byte-level BPE on each text fragment. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "tokenizer/unicode.h"

/* ---- output ----------------------------------------------------------------------------- */

typedef struct idvec {
    int32_t *v;
    size_t n, cap;
    int oom;
} idvec;

static void push_id(idvec *o, int32_t id) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        int32_t *p = realloc(o->v, cap * sizeof *p);
        if (!p) {
            o->oom = 1;
            return;
        }
        o->v = p;
        o->cap = cap;
    }
    o->v[o->n++] = id;
}

/* ---- merge queue: a 4-ary heap of candidate pairs (shallower than a binary one, and each
 * node's children share cache lines) ---------------------------------------------------- */

#define HEAP_D 4

typedef struct pair {
    float score;   /* SPM: higher first */
    int32_t rank;  /* BPE: lower first */
    int32_t left;  /* symbol index; ties go to the leftmost */
    int32_t right;
    uint32_t size; /* bytes of left + right when queued */
} pair;

typedef struct heap {
    pair *v;
    size_t n, cap;
    int spm;
    int oom;
} heap;

static int pair_before(const heap *h, const pair *a, const pair *b) {
    if (h->spm) {
        if (a->score != b->score) return a->score > b->score;
    } else if (a->rank != b->rank) {
        return a->rank < b->rank;
    }
    return a->left < b->left;
}

static void heap_push(heap *h, pair p) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        pair *v = realloc(h->v, cap * sizeof *v);
        if (!v) {
            h->oom = 1;
            return;
        }
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t up = (i - 1) / HEAP_D;
        if (!pair_before(h, &p, &h->v[up])) break;
        h->v[i] = h->v[up];
        i = up;
    }
    h->v[i] = p;
}

/* Restores the heap order of all n entries at once (Floyd), after appending unordered. */
static void heap_sift_down(heap *h, size_t i) {
    pair x = h->v[i];
    for (;;) {
        size_t c = HEAP_D * i + 1;
        if (c >= h->n) break;
        size_t end = c + HEAP_D < h->n ? c + HEAP_D : h->n, best = c;
        for (size_t k = c + 1; k < end; k++)
            if (pair_before(h, &h->v[k], &h->v[best])) best = k;
        if (!pair_before(h, &h->v[best], &x)) break;
        h->v[i] = h->v[best];
        i = best;
    }
    h->v[i] = x;
}

static void heap_build(heap *h) {
    for (size_t i = h->n / HEAP_D + 1; i-- > 0;)
        if (i < h->n) heap_sift_down(h, i);
}

/* Appends without ordering; call heap_build before popping. */
static void heap_append(heap *h, pair p) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        pair *v = realloc(h->v, cap * sizeof *v);
        if (!v) {
            h->oom = 1;
            return;
        }
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = p;
}

static pair heap_pop(heap *h) {
    pair top = h->v[0];
    h->v[0] = h->v[--h->n];
    if (h->n) heap_sift_down(h, 0);
    return top;
}

/* ---- symbols: a doubly linked list over a byte string ----------------------------------- */

typedef struct sym {
    int32_t prev, next;
    uint32_t off, n; /* bytes [off, off + n) of the text; n == 0 once merged away */
} sym;

typedef struct work {
    sym *s;
    size_t n, cap;
    heap q;
    char *buf; /* scratch text */
    size_t buf_cap;
    int oom;
} work;

static int reserve_syms(work *w, size_t n) {
    if (n <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < n) cap *= 2;
    sym *s = realloc(w->s, cap * sizeof *s);
    if (!s) return -1;
    w->s = s;
    w->cap = cap;
    return 0;
}

static int reserve_buf(work *w, size_t n) {
    if (n <= w->buf_cap) return 0;
    size_t cap = w->buf_cap ? w->buf_cap : 256;
    while (cap < n) cap *= 2;
    char *b = realloc(w->buf, cap);
    if (!b) return -1;
    w->buf = b;
    w->buf_cap = cap;
    return 0;
}

/* Splits text[0..n) into UTF-8 characters (by lead byte, clamped at the end). */
static int make_syms(work *w, size_t n) {
    if (reserve_syms(w, n) != 0) return -1;
    w->n = 0;
    for (size_t off = 0; off < n;) {
        size_t len = st_utf8_len((unsigned char)w->buf[off]);
        if (len > n - off) len = n - off;
        sym *s = &w->s[w->n];
        s->prev = (int32_t)w->n - 1;
        s->off = (uint32_t)off;
        s->n = (uint32_t)len;
        off += len;
        s->next = off == n ? -1 : (int32_t)w->n + 1;
        w->n++;
    }
    return 0;
}

static void merge_pair(work *w, int32_t l, int32_t r) {
    sym *ls = &w->s[l], *rs = &w->s[r];
    ls->n += rs->n;
    rs->n = 0;
    ls->next = rs->next;
    if (rs->next >= 0) w->s[rs->next].prev = l;
}

/* ---- SPM ---------------------------------------------------------------------------------- */

static void spm_try_pair(const st_tokenizer *t, work *w, int32_t l, int32_t r, bool ordered) {
    if (l < 0 || r < 0) return;
    const sym *ls = &w->s[l], *rs = &w->s[r];
    int32_t id = st_tok_lookup(t, w->buf + ls->off, ls->n + rs->n);
    if (id < 0) return;
    pair p = {t->score[id], 0, l, r, ls->n + rs->n};
    if (ordered)
        heap_push(&w->q, p);
    else
        heap_append(&w->q, p);
}

/* Merges symbols [a, b) (one segment, linked only among themselves) and outputs them. */
static void spm_segment(const st_tokenizer *t, work *w, int32_t a, int32_t b, idvec *out) {
    w->s[a].prev = -1;
    w->s[b - 1].next = -1;
    w->q.n = 0;
    w->q.spm = 1;
    for (int32_t i = a + 1; i < b; i++) spm_try_pair(t, w, i - 1, i, false);
    heap_build(&w->q);
    while (w->q.n) {
        pair p = heap_pop(&w->q);
        sym *ls = &w->s[p.left], *rs = &w->s[p.right];
        if (ls->n == 0 || rs->n == 0 || ls->n + rs->n != p.size) continue; /* stale */
        merge_pair(w, p.left, p.right);
        spm_try_pair(t, w, w->s[p.left].prev, p.left, true);
        spm_try_pair(t, w, p.left, w->s[p.left].next, true);
    }
    if (w->q.oom) out->oom = 1;
    for (int32_t i = a; i >= 0; i = w->s[i].next) {
        const sym *s = &w->s[i];
        int32_t id = st_tok_lookup(t, w->buf + s->off, s->n);
        if (id >= 0) {
            push_id(out, id);
            continue;
        }
        for (uint32_t k = 0; k < s->n; k++) {
            int32_t by = t->byte_tok[(unsigned char)w->buf[s->off + k]];
            if (by < 0) by = t->unk;
            if (by >= 0) push_id(out, by);
        }
    }
}

/* Encodes w->buf[0..n) (spaces already replaced by U+2581): repeatedly merge the adjacent
 * pair whose concatenation is the best-scoring token (ties: leftmost); pieces that are no
 * token fall back to byte tokens. Merging is done segment by segment, cut where two
 * neighbouring characters occur together in no token: no merge can cross such a cut, and
 * merges on either side never interact, so the result equals merging the whole text. */
static void spm_encode(const st_tokenizer *t, work *w, size_t n, idvec *out) {
    if (n == 0) return;
    if (make_syms(w, n) != 0) {
        out->oom = 1;
        return;
    }
    int32_t start = 0;
    uint64_t prev = st_tok_sym_key(w->buf + w->s[0].off, w->s[0].n);
    for (int32_t i = 1; i < (int32_t)w->n; i++) {
        uint64_t k = st_tok_sym_key(w->buf + w->s[i].off, w->s[i].n);
        if (!st_tok_pair_possible(t, prev, k)) {
            spm_segment(t, w, start, i, out);
            start = i;
        }
        prev = k;
    }
    spm_segment(t, w, start, (int32_t)w->n, out);
}

/* SPM fragment: optional space prefix, spaces become U+2581. */
static void spm_fragment(const st_tokenizer *t, work *w, const char *text, size_t len,
                         bool prefix, idvec *out) {
    size_t spaces = (prefix ? 1 : 0);
    for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
    if (reserve_buf(w, len + 2 * spaces + 1) != 0) {
        out->oom = 1;
        return;
    }
    size_t n = 0;
    if (prefix) {
        memcpy(w->buf, "\xe2\x96\x81", 3);
        n = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(w->buf + n, "\xe2\x96\x81", 3);
            n += 3;
        } else {
            w->buf[n++] = text[i];
        }
    }
    spm_encode(t, w, n, out);
}

/* ---- byte-level BPE ------------------------------------------------------------------------- */

static void bpe_try_pair(const st_tokenizer *t, work *w, int32_t l, int32_t r, bool ordered) {
    if (l < 0 || r < 0) return;
    const sym *ls = &w->s[l], *rs = &w->s[r];
    int32_t rank = st_tok_merge_rank(t, w->buf + ls->off, ls->n, w->buf + rs->off, rs->n);
    if (rank < 0) return;
    pair p = {0.0f, rank, l, r, ls->n + rs->n};
    if (ordered)
        heap_push(&w->q, p);
    else
        heap_append(&w->q, p);
}

/* One word, already mapped to byte-level symbols in w->buf[0..n) (raw UTF-8 for raw_bpe). */
static void bpe_word(const st_tokenizer *t, work *w, size_t n, idvec *out) {
    bool whole = t->ignore_merges;
    if (t->newline_whole) { /* Gemma 4: a run of newlines that is a token is taken whole */
        whole = true;
        for (size_t i = 0; i < n && whole; i++) whole = w->buf[i] == '\n';
    }
    if (whole) {
        int32_t id = st_tok_lookup(t, w->buf, n);
        if (id >= 0) {
            push_id(out, id);
            return;
        }
    }
    if (make_syms(w, n) != 0) {
        out->oom = 1;
        return;
    }
    w->q.n = 0;
    w->q.spm = 0;
    for (size_t i = 1; i < w->n; i++) bpe_try_pair(t, w, (int32_t)i - 1, (int32_t)i, false);
    heap_build(&w->q);
    while (w->q.n) {
        pair p = heap_pop(&w->q);
        sym *ls = &w->s[p.left], *rs = &w->s[p.right];
        if (ls->n == 0 || rs->n == 0 || ls->next != p.right || ls->n + rs->n != p.size) continue;
        merge_pair(w, p.left, p.right);
        bpe_try_pair(t, w, w->s[p.left].prev, p.left, true);
        bpe_try_pair(t, w, p.left, w->s[p.left].next, true);
    }
    if (w->q.oom) out->oom = 1;
    for (int32_t i = 0; i >= 0; i = w->s[i].next) {
        const sym *s = &w->s[i];
        int32_t id = st_tok_lookup(t, w->buf + s->off, s->n);
        if (id >= 0) {
            push_id(out, id);
            continue;
        }
        /* not in the vocabulary: fall back to whatever single bytes are tokens */
        for (uint32_t k = 0; k < s->n; k++) {
            int32_t b = t->raw_bpe ? t->byte_tok[(unsigned char)w->buf[s->off + k]]
                                   : st_tok_lookup(t, w->buf + s->off + k, 1);
            if (b >= 0) push_id(out, b);
        }
    }
}

static void bpe_fragment(const st_tokenizer *t, work *w, const char *text, size_t len,
                         st_pretok_words *words, idvec *out) {
    size_t n_cps = 0;
    uint32_t *cps = st_utf8_to_cps(text, len, &n_cps);
    if (cps && t->raw_bpe) /* spaces are written U+2581 before splitting */
        for (size_t i = 0; i < n_cps; i++)
            if (cps[i] == ' ') cps[i] = 0x2581;
    if (!cps || st_pretok_split(t->pre, cps, n_cps, words) != 0) {
        free(cps);
        out->oom = 1;
        return;
    }
    size_t start = 0;
    for (size_t i = 0; i < words->n && !out->oom; i++) {
        size_t wl = words->len[i];
        /* each code point re-encoded to UTF-8, each byte mapped to its symbol (<= 2 bytes) */
        if (reserve_buf(w, wl * 8 + 1) != 0) {
            out->oom = 1;
            break;
        }
        size_t n = 0;
        for (size_t k = start; k < start + wl; k++) {
            char u[4];
            size_t ul = st_utf8_encode(cps[k], u);
            if (t->raw_bpe) {
                memcpy(w->buf + n, u, ul);
                n += ul;
                continue;
            }
            for (size_t j = 0; j < ul; j++) {
                unsigned char b = (unsigned char)u[j];
                memcpy(w->buf + n, t->byte_enc[b], t->byte_enc_len[b]);
                n += t->byte_enc_len[b];
            }
        }
        bpe_word(t, w, n, out);
        start += wl;
    }
    free(cps);
}

/* ---- special-token partition ------------------------------------------------------------ */

typedef struct frag {
    size_t off, len; /* text range, when id < 0 */
    int32_t id;      /* token, or -1 for text */
} frag;

typedef struct fragvec {
    frag *v;
    size_t n, cap;
} fragvec;

static int push_frag(fragvec *f, size_t off, size_t len, int32_t id) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        frag *v = realloc(f->v, cap * sizeof *v);
        if (!v) return -1;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = (frag){off, len, id};
    return 0;
}

static int is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0 || m > n) return NULL;
    const char *end = hay + n - m;
    for (const char *p = hay; p <= end; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) + 1);
        if (!p) return NULL;
        if (memcmp(p, needle, m) == 0) return p;
    }
    return NULL;
}

/* Byte ranges of the text where control tokens are not recognized (pairs start, len). */
typedef struct plain_ranges {
    const size_t *r;
    size_t n;
} plain_ranges;

static int in_plain(const plain_ranges *p, size_t at, size_t len) {
    for (size_t i = 0; p && i < p->n; i++)
        if (at < p->r[2 * i] + p->r[2 * i + 1] && p->r[2 * i] < at + len) return 1;
    return 0;
}

/* Splits the text fragments of *cur around every occurrence of token id (longer special
 * tokens are applied first by the caller). Spaces next to a match are dropped when the token
 * has LSTRIP / RSTRIP. A control token that overlaps a plain range stays text. */
static int split_on_token(const st_tokenizer *t, const char *text, int32_t id, const plain_ranges *plain,
                          fragvec *cur, fragvec *next) {
    const char *tok = st_tok_str(t, id);
    size_t tl = t->text_len[id];
    uint32_t a = t->attr[id];
    int guarded = (a & (ST_TOKEN_ATTR_CONTROL | ST_TOKEN_ATTR_UNKNOWN)) != 0;
    next->n = 0;
    for (size_t i = 0; i < cur->n; i++) {
        frag f = cur->v[i];
        if (f.id >= 0) {
            if (push_frag(next, f.off, f.len, f.id)) return -1;
            continue;
        }
        size_t pos = f.off, end = f.off + f.len, from = pos;
        for (;;) {
            const char *m = find_bytes(text + from, end - from, tok, tl);
            if (!m) break;
            size_t at = (size_t)(m - text), left = at - pos;
            if (guarded && in_plain(plain, at, tl)) {
                from = at + 1;
                continue;
            }
            if (a & ST_TOKEN_ATTR_LSTRIP)
                while (left > 0 && is_c_space(text[pos + left - 1])) left--;
            if (left > 0 && push_frag(next, pos, left, -1)) return -1;
            if (push_frag(next, 0, 0, id)) return -1;
            pos = at + tl;
            if (a & ST_TOKEN_ATTR_RSTRIP)
                while (pos < end && is_c_space(text[pos])) pos++;
            from = pos;
        }
        if (pos < end && push_frag(next, pos, end - pos, -1)) return -1;
    }
    return 0;
}

static int partition(const st_tokenizer *t, const char *text, size_t len, bool parse_special,
                     const plain_ranges *plain, fragvec *cur) {
    fragvec next = {0};
    cur->n = 0;
    if (push_frag(cur, 0, len, -1)) return -1;
    for (uint32_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        if (!parse_special && (t->attr[id] & (ST_TOKEN_ATTR_CONTROL | ST_TOKEN_ATTR_UNKNOWN))) continue;
        /* cheap reject: absent from the whole text */
        if (!find_bytes(text, len, st_tok_str(t, id), t->text_len[id])) continue;
        if (split_on_token(t, text, id, plain, cur, &next) != 0) {
            free(next.v);
            return -1;
        }
        fragvec tmp = *cur;
        *cur = next;
        next = tmp;
    }
    free(next.v);
    return 0;
}

/* ---- entry points ------------------------------------------------------------------------- */

static int encode_all(const st_tokenizer *t, const char *text, size_t len, bool add_special,
                      bool parse_special, const plain_ranges *plain, idvec *out) {
    fragvec frags = {0};
    work w = {0};
    st_pretok_words words = {0};
    if (len > ST_TOKENIZER_MAX_TEXT) return -1; /* symbol offsets are 32-bit */
    if (len > 0 && partition(t, text, len, parse_special, plain, &frags) != 0) out->oom = 1;
    if (add_special && t->add_bos) push_id(out, t->bos);
    bool prev_special = true; /* SPM: a space prefix goes at the start and after specials */
    for (size_t i = 0; i < frags.n && !out->oom; i++) {
        frag f = frags.v[i];
        if (f.id >= 0) {
            push_id(out, f.id);
            prev_special = true;
            continue;
        }
        if (t->kind == ST_TOKENIZER_SPM) {
            spm_fragment(t, &w, text + f.off, f.len, t->add_space_prefix && prev_special, out);
        } else {
            bpe_fragment(t, &w, text + f.off, f.len, &words, out);
        }
        prev_special = false;
    }
    if (add_special && t->add_eos) push_id(out, t->eos);
    if (w.oom) out->oom = 1;
    free(frags.v);
    free(w.s);
    free(w.q.v);
    free(w.buf);
    free(words.len);
    return out->oom ? -1 : 0;
}

static int64_t encode_alloc(const st_tokenizer *t, const char *text, size_t len, bool add_special,
                            bool parse_special, const plain_ranges *plain, int32_t **out) {
    idvec o = {0};
    *out = NULL;
    if (encode_all(t, text, len, add_special, parse_special, plain, &o) != 0) {
        free(o.v);
        return -1;
    }
    if (o.n == 0) {
        free(o.v);
        return 0;
    }
    *out = o.v;
    return (int64_t)o.n;
}

int64_t st_tokenizer_encode_alloc(const st_tokenizer *t, const char *text, size_t len,
                                  bool add_special, bool parse_special, int32_t **out) {
    return encode_alloc(t, text, len, add_special, parse_special, NULL, out);
}

int64_t st_tokenizer_encode_plain_ranges(const st_tokenizer *t, const char *text, size_t len, bool add_special,
                                         const size_t *ranges, size_t n_ranges, int32_t **out) {
    plain_ranges p = {ranges, n_ranges};
    return encode_alloc(t, text, len, add_special, true, &p, out);
}

int64_t st_tokenizer_encode(const st_tokenizer *t, const char *text, size_t len, bool add_special,
                            bool parse_special, int32_t *out, size_t cap) {
    int32_t *ids = NULL;
    int64_t n = st_tokenizer_encode_alloc(t, text, len, add_special, parse_special, &ids);
    if (n < 0) return -1;
    size_t k = (size_t)n < cap ? (size_t)n : cap;
    if (k) memcpy(out, ids, k * sizeof *out);
    free(ids);
    return n;
}
