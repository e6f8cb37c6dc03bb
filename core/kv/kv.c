/* SPDX-License-Identifier: Apache-2.0 */
/* Paged KV cache: page allocation on the host, cache memory and cell table on the device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kv/kv.h"
#include "quant/quant.h"

struct st_kv {
    st_kv_params p;
    st_dev *dev;            /* borrowed: the device door of the cache's owner */
    void **k, **v;          /* [n_layer] device buffers */
    uint64_t layer_bytes;   /* bytes of one layer's K (same for V) */
    size_t row_bytes;       /* bytes of one cell's [n_head_kv][head_dim] */
    int32_t *table;         /* host [n_seq][n_ctx], -1 = no cell */
    int32_t *table_dev;     /* device copy */
    int32_t *seq_len;       /* [n_seq] */
    uint8_t *dirty;         /* [n_seq] */
    int32_t *dirty_lo, *dirty_hi; /* [n_seq] changed positions [lo, hi) of each row */
    int32_t *pages;         /* [n_seq][n_pages_per_seq]: page index or -1 */
    int32_t pages_per_seq;
    int32_t *free_pages;    /* stack of free page ids */
    int32_t n_free, n_pages;
};

int st_kv_type_from_name(const char *name) {
    if (!name) return -1;
    if (!strcasecmp(name, "f16")) return ST_TYPE_F16;
    if (!strcasecmp(name, "f32")) return ST_TYPE_F32;
    if (!strcasecmp(name, "q8_0")) return ST_TYPE_Q8_0;
    return -1;
}

static void resolve(st_kv_params *p) {
    if (p->page_size <= 0) p->page_size = 16;
    if (p->n_cells <= 0) {
        int64_t per = ((int64_t)p->n_ctx + p->page_size - 1) / p->page_size;
        p->n_cells = (int32_t)(per * p->page_size * p->n_seq);
    }
    p->n_cells = (p->n_cells + p->page_size - 1) / p->page_size * p->page_size;
}

uint64_t st_kv_bytes_for(const st_kv_params *in) {
    st_kv_params p = *in;
    resolve(&p);
    uint64_t row = st_row_size(p.type, p.head_dim) * (uint64_t)p.n_head_kv;
    return (p.k_only ? 1ull : 2ull) * (uint64_t)p.n_layer * row * (uint64_t)p.n_cells +
           (uint64_t)p.n_seq * (uint64_t)p.n_ctx * sizeof(int32_t);
}

st_kv *st_kv_create(st_dev *dev, st_stream *stream, const st_kv_params *pin, char *err, size_t errlen) {
    st_kv_params p = *pin;
    resolve(&p);
    if (p.type != ST_TYPE_F16 && p.type != ST_TYPE_F32 && p.type != ST_TYPE_Q8_0) {
        snprintf(err, errlen, "KV cache type %s is not supported (f16, f32, q8_0)", st_type_name(p.type));
        return NULL;
    }
    if (p.n_layer <= 0 || p.n_head_kv <= 0 || p.head_dim <= 0 || p.n_seq <= 0 || p.n_ctx <= 0) {
        snprintf(err, errlen, "KV cache: invalid shape (layers %d, kv heads %d, head dim %d, "
                 "sequences %d, context %d)", p.n_layer, p.n_head_kv, p.head_dim, p.n_seq, p.n_ctx);
        return NULL;
    }
    if (st_row_size(p.type, p.head_dim) == 0) {
        snprintf(err, errlen, "KV cache type %s needs a head dimension multiple of %d (model has %d)",
                 st_type_name(p.type), st_type_get(p.type)->block_size, p.head_dim);
        return NULL;
    }
    st_kv *kv = calloc(1, sizeof *kv);
    if (!kv) goto oom;
    kv->p = p;
    kv->dev = dev;
    kv->row_bytes = st_row_size(p.type, p.head_dim) * (size_t)p.n_head_kv;
    kv->layer_bytes = (uint64_t)kv->row_bytes * (uint64_t)p.n_cells;
    kv->n_pages = p.n_cells / p.page_size;
    kv->pages_per_seq = (p.n_ctx + p.page_size - 1) / p.page_size;
    kv->k = calloc((size_t)p.n_layer, sizeof *kv->k);
    kv->v = calloc((size_t)p.n_layer, sizeof *kv->v);
    kv->table = malloc((size_t)p.n_seq * (size_t)p.n_ctx * sizeof *kv->table);
    kv->seq_len = calloc((size_t)p.n_seq, sizeof *kv->seq_len);
    kv->dirty = calloc((size_t)p.n_seq, 1);
    kv->dirty_lo = calloc((size_t)p.n_seq, sizeof *kv->dirty_lo);
    kv->dirty_hi = calloc((size_t)p.n_seq, sizeof *kv->dirty_hi);
    kv->pages = malloc((size_t)p.n_seq * (size_t)kv->pages_per_seq * sizeof *kv->pages);
    kv->free_pages = malloc((size_t)kv->n_pages * sizeof *kv->free_pages);
    if (!kv->k || !kv->v || !kv->table || !kv->seq_len || !kv->dirty || !kv->dirty_lo || !kv->dirty_hi ||
        !kv->pages || !kv->free_pages)
        goto oom;
    st_kv_clear(kv);
    for (int32_t l = 0; l < p.n_layer; l++) {
        for (int w = 0; w < 2; w++) {
            void **dst = w ? &kv->v[l] : &kv->k[l];
            if (w && p.k_only) { /* V is the K rows */
                kv->v[l] = kv->k[l];
                break;
            }
            st_status s = st_dev_alloc(dev, kv->layer_bytes, dst);
            if (s == ST_OK) s = st_dev_memset(dev, stream, *dst, 0, kv->layer_bytes);
            if (s != ST_OK) {
                snprintf(err, errlen, "KV cache: allocating %.1f MiB for layer %d %s failed: %s",
                         (double)kv->layer_bytes / 1048576.0, l, w ? "V" : "K", st_dev_error());
                st_kv_free(kv);
                return NULL;
            }
        }
    }
    uint64_t tbytes = (uint64_t)p.n_seq * (uint64_t)p.n_ctx * sizeof(int32_t);
    st_status s = st_dev_alloc(dev, tbytes, (void **)&kv->table_dev);
    if (s == ST_OK) s = st_dev_h2d(dev, stream, kv->table_dev, kv->table, tbytes);
    if (s == ST_OK) s = st_dev_sync(dev, stream);
    if (s != ST_OK) {
        snprintf(err, errlen, "KV cache: cell table (%llu bytes): %s", (unsigned long long)tbytes,
                 st_dev_error());
        st_kv_free(kv);
        return NULL;
    }
    memset(kv->dirty, 0, (size_t)p.n_seq);
    return kv;
oom:
    snprintf(err, errlen, "KV cache: out of host memory");
    st_kv_free(kv);
    return NULL;
}

void st_kv_free(st_kv *kv) {
    if (!kv) return;
    for (int32_t l = 0; kv->k && kv->v && l < kv->p.n_layer; l++) {
        if (kv->k[l]) st_dev_free(kv->dev, kv->k[l]);
        if (kv->v[l] && kv->v[l] != kv->k[l]) st_dev_free(kv->dev, kv->v[l]);
    }
    if (kv->table_dev) st_dev_free(kv->dev, kv->table_dev);
    free(kv->k);
    free(kv->v);
    free(kv->table);
    free(kv->seq_len);
    free(kv->dirty);
    free(kv->dirty_lo);
    free(kv->dirty_hi);
    free(kv->pages);
    free(kv->free_pages);
    free(kv);
}

const st_kv_params *st_kv_params_of(const st_kv *kv) { return &kv->p; }

/* Records that positions [lo, hi) of seq's table row changed. */
static void mark(st_kv *kv, int32_t seq, int32_t lo, int32_t hi) {
    if (hi > kv->p.n_ctx) hi = kv->p.n_ctx;
    if (!kv->dirty[seq]) {
        kv->dirty[seq] = 1;
        kv->dirty_lo[seq] = lo;
        kv->dirty_hi[seq] = hi;
        return;
    }
    if (lo < kv->dirty_lo[seq]) kv->dirty_lo[seq] = lo;
    if (hi > kv->dirty_hi[seq]) kv->dirty_hi[seq] = hi;
}

void st_kv_clear(st_kv *kv) {
    const st_kv_params *p = &kv->p;
    for (int64_t i = 0; i < (int64_t)p->n_seq * p->n_ctx; i++) kv->table[i] = -1;
    for (int64_t i = 0; i < (int64_t)p->n_seq * kv->pages_per_seq; i++) kv->pages[i] = -1;
    kv->n_free = kv->n_pages;
    for (int32_t i = 0; i < kv->n_pages; i++) kv->free_pages[i] = kv->n_pages - 1 - i; /* pop 0 first */
    for (int32_t s = 0; s < p->n_seq; s++) {
        kv->seq_len[s] = 0;
        kv->dirty[s] = 0;
        mark(kv, s, 0, p->n_ctx);
    }
}

int32_t st_kv_cell(st_kv *kv, int32_t seq, int32_t pos) {
    const st_kv_params *p = &kv->p;
    if (seq < 0 || seq >= p->n_seq || pos < 0 || pos >= p->n_ctx) return -1;
    int32_t *row = kv->table + (int64_t)seq * p->n_ctx;
    if (pos + 1 > kv->seq_len[seq]) kv->seq_len[seq] = pos + 1;
    if (row[pos] >= 0) return row[pos];
    int32_t pi = pos / p->page_size;
    int32_t *pg = &kv->pages[(int64_t)seq * kv->pages_per_seq + pi];
    if (*pg < 0) {
        if (kv->n_free == 0) return -1;
        *pg = kv->free_pages[--kv->n_free];
        /* every position of the page maps to its cells */
        for (int32_t o = 0; o < p->page_size; o++) {
            int32_t q = pi * p->page_size + o;
            if (q < p->n_ctx) row[q] = *pg * p->page_size + o;
        }
        mark(kv, seq, pi * p->page_size, (pi + 1) * p->page_size);
    }
    return row[pos];
}

int32_t st_kv_seq_len(const st_kv *kv, int32_t seq) {
    return (seq >= 0 && seq < kv->p.n_seq) ? kv->seq_len[seq] : 0;
}

void st_kv_seq_truncate(st_kv *kv, int32_t seq, int32_t n_pos) {
    const st_kv_params *p = &kv->p;
    if (seq < 0 || seq >= p->n_seq) return;
    if (n_pos < 0) n_pos = 0;
    if (n_pos >= kv->seq_len[seq]) return;
    int32_t *row = kv->table + (int64_t)seq * p->n_ctx;
    int32_t first_free_page = (n_pos + p->page_size - 1) / p->page_size;
    for (int32_t pi = first_free_page; pi < kv->pages_per_seq; pi++) {
        int32_t *pg = &kv->pages[(int64_t)seq * kv->pages_per_seq + pi];
        if (*pg < 0) continue;
        kv->free_pages[kv->n_free++] = *pg;
        *pg = -1;
        for (int32_t o = 0; o < p->page_size; o++) {
            int32_t q = pi * p->page_size + o;
            if (q < p->n_ctx) row[q] = -1;
        }
        mark(kv, seq, pi * p->page_size, (pi + 1) * p->page_size);
    }
    kv->seq_len[seq] = n_pos;
}

int64_t st_kv_cells_free(const st_kv *kv) { return (int64_t)kv->n_free * kv->p.page_size; }

st_status st_kv_sync(st_kv *kv, st_stream *stream) {
    const st_kv_params *p = &kv->p;
    for (int32_t s = 0; s < p->n_seq; s++) {
        if (!kv->dirty[s]) continue;
        /* only the changed positions (page allocations and releases) */
        int64_t off = (int64_t)s * p->n_ctx + kv->dirty_lo[s];
        int32_t n = kv->dirty_hi[s] - kv->dirty_lo[s];
        st_status st = n <= 0 ? ST_OK
                              : st_dev_h2d(kv->dev, stream, kv->table_dev + off, kv->table + off,
                                                  (uint64_t)n * sizeof(int32_t));
        if (st != ST_OK) return st;
        kv->dirty[s] = 0;
    }
    return ST_OK;
}

const int32_t *st_kv_table_dev(const st_kv *kv) { return kv->table_dev; }

static st_tensor view(const st_kv *kv, void *data) {
    st_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.type = kv->p.type;
    t.ne[0] = kv->p.head_dim;
    t.ne[1] = kv->p.n_head_kv;
    t.ne[2] = kv->p.n_cells;
    t.ne[3] = 1;
    t.nb[0] = st_type_get(kv->p.type)->type_size; /* per element, or per block */
    t.nb[1] = (int64_t)st_row_size(kv->p.type, kv->p.head_dim);
    t.nb[2] = (int64_t)kv->row_bytes;
    t.nb[3] = t.nb[2] * kv->p.n_cells;
    return t;
}

st_tensor st_kv_k(const st_kv *kv, int32_t il) { return view(kv, kv->k[il]); }
st_tensor st_kv_v(const st_kv *kv, int32_t il) { return view(kv, kv->v[il]); }

uint64_t st_kv_bytes_per_pos(const st_kv *kv) {
    return (kv->p.k_only ? 1ull : 2ull) * kv->row_bytes * (uint64_t)kv->p.n_layer;
}

uint64_t st_kv_bytes(const st_kv *kv) {
    return (kv->p.k_only ? 1ull : 2ull) * kv->layer_bytes * (uint64_t)kv->p.n_layer +
           (uint64_t)kv->p.n_seq * (uint64_t)kv->p.n_ctx * sizeof(int32_t);
}
