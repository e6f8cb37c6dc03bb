/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance cases of the ops that work on sequences and experts: KV write, attention,
 * grouped expert matmul and combine. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance/conf_ops.h"
#include "quant/quant.h"

static const uint32_t k_cache_types[] = {ST_TYPE_F32, ST_TYPE_F16, ST_TYPE_Q8_0};

/* ---- KV_WRITE ------------------------------------------------------------------------ */
void st_conf_kv_write(st_conf_ctx *c) {
    for (int ct = 0; ct < 3; ct++)
        for (int a = 0; a < 2; a++) {
            uint32_t cache_t = k_cache_types[ct], at = a ? ST_TYPE_F16 : ST_TYPE_F32;
            int64_t n = 5, n_kv = 4, hd = 128, n_cells = 64;
            char name[96];
            snprintf(name, sizeof name, "kv_write %s -> %s n=%lld kv_heads=%lld hd=%lld", st_type_name(at),
                     st_type_name(cache_t), (long long)n, (long long)n_kv, (long long)hd);
            if (!st_conf_claimed(c, (const void *)c->ops->kv_write, ST_OP_KV_WRITE, cache_t, name)) continue;
            st_kv_write_args h = {.size = sizeof h}, d;
            h.k = st_conf_tensor(at, hd, n_kv, n);
            h.v = st_conf_tensor(at, hd, n_kv, n);
            st_conf_random_tensor(c, &h.k, 2.0f);
            st_conf_random_tensor(c, &h.v, 2.0f);
            int32_t *cells = st_conf_host(c, sizeof(int32_t) * (size_t)n);
            for (int64_t i = 0; i < n; i++) { /* distinct cells, last one included */
                int dup;
                do {
                    cells[i] = i == 0 ? (int32_t)n_cells - 1 : st_conf_randi(c, (int)n_cells);
                    dup = 0;
                    for (int64_t j = 0; j < i; j++) dup |= cells[j] == cells[i];
                } while (dup);
            }
            h.cells = cells;
            d = h;
            d.k = st_conf_to_device(c, &h.k);
            d.v = st_conf_to_device(c, &h.v);
            d.cells = st_conf_upload(c, cells, sizeof(int32_t) * (size_t)n);
            st_tensor cache = st_conf_tensor(cache_t, hd, n_kv, n_cells);
            st_conf_output_pair(c, &cache, &h.k_cache, &d.k_cache);
            st_conf_output_pair(c, &cache, &h.v_cache, &d.v_cache);
            double err = INFINITY;
            if (!c->alloc_failed && st_conf_run_ok(c, "kv_write", c->ops->kv_write(c->stream, &d))) {
                c->ref->kv_write(NULL, &h);
                size_t bytes = st_conf_nbytes(&cache);
                const char *gk = st_conf_download(c, d.k_cache.data, bytes);
                const char *gv = st_conf_download(c, d.v_cache.data, bytes);
                if (gk && gv) {
                    /* rows = (cell, kv head) pairs of the written cells */
                    int32_t rows[64];
                    int64_t nr = 0;
                    for (int64_t i = 0; i < n; i++)
                        for (int64_t hh = 0; hh < n_kv; hh++) rows[nr++] = (int32_t)(cells[i] * n_kv + hh);
                    double ek = st_conf_rows_error(cache_t, hd, (size_t)cache.nb[1], gk, h.k_cache.data, rows, nr, NULL);
                    double ev = st_conf_rows_error(cache_t, hd, (size_t)cache.nb[1], gv, h.v_cache.data, rows, nr, NULL);
                    err = ek > ev ? ek : ev;
                    /* cells not written must keep their bytes */
                    for (int64_t cell = 0; cell < n_cells && err < INFINITY; cell++) {
                        int written = 0;
                        for (int64_t i = 0; i < n; i++) written |= cells[i] == cell;
                        const unsigned char *p = (const unsigned char *)gk + cell * cache.nb[2];
                        for (int64_t b = 0; !written && b < cache.nb[2]; b++)
                            if (p[b] != 0xFF) err = INFINITY;
                    }
                }
            }
            double lim = cache_t == ST_TYPE_Q8_0 ? 1e-4 : cache_t == ST_TYPE_F16 ? 1e-6 : 1e-12;
            st_conf_case_end(c, name, err, lim + (a ? 1e-6 : 0));
        }
}

/* ---- ATTENTION ----------------------------------------------------------------------- */
typedef struct {
    int32_t n, heads, kv_heads, hd, n_seq, max_pos, masked;
} attn_shape;

static void attention_case(st_conf_ctx *c, const attn_shape *sh, uint32_t cache_t, uint32_t at) {
    char name[128];
    snprintf(name, sizeof name, "attention %s cache=%s n=%d h=%d/%d hd=%d pos<=%d%s", st_type_name(at),
             st_type_name(cache_t), sh->n, sh->heads, sh->kv_heads, sh->hd, sh->max_pos, sh->masked ? " mask" : "");
    if (!st_conf_claimed(c, (const void *)c->ops->attention, ST_OP_ATTENTION, cache_t, name)) return;
    int32_t n_cells = sh->n_seq * sh->max_pos + 7;
    st_attention_args h = {.size = sizeof h, .scale = 1.0f / sqrtf((float)sh->hd), .max_pos = sh->max_pos}, d;
    h.q = st_conf_tensor(at, sh->hd, sh->heads, sh->n);
    st_conf_random_tensor(c, &h.q, 2.0f);
    h.k_cache = st_conf_tensor(cache_t, sh->hd, sh->kv_heads, n_cells);
    h.v_cache = st_conf_tensor(cache_t, sh->hd, sh->kv_heads, n_cells);
    st_conf_random_tensor(c, &h.k_cache, 2.0f);
    st_conf_random_tensor(c, &h.v_cache, 2.0f);
    /* cell table: a random permutation of cells, as pages scattered in the cache */
    int32_t *perm = st_conf_host(c, sizeof(int32_t) * (size_t)n_cells);
    int32_t *table = st_conf_host(c, sizeof(int32_t) * (size_t)(sh->n_seq * sh->max_pos));
    int32_t *seq = st_conf_host(c, sizeof(int32_t) * (size_t)sh->n);
    int32_t *kv_len = st_conf_host(c, sizeof(int32_t) * (size_t)sh->n);
    float *mask = sh->masked ? st_conf_host(c, sizeof(float) * (size_t)(sh->n * sh->max_pos)) : NULL;
    if (!perm || !table || !seq || !kv_len || (sh->masked && !mask)) { st_conf_case_end(c, name, INFINITY, 0); return; }
    for (int32_t i = 0; i < n_cells; i++) perm[i] = i;
    for (int32_t i = n_cells - 1; i > 0; i--) {
        int32_t j = st_conf_randi(c, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int32_t i = 0; i < sh->n_seq * sh->max_pos; i++) table[i] = perm[i];
    for (int32_t i = 0; i < sh->n; i++) {
        seq[i] = sh->n_seq > 1 ? i % sh->n_seq : 0;
        /* a verify window: consecutive positions at the end of the sequence */
        kv_len[i] = sh->n_seq == 1 && sh->n > 1 ? sh->max_pos - sh->n + 1 + i : 1 + st_conf_randi(c, sh->max_pos);
        if (i == 0 && sh->n_seq > 1) kv_len[i] = 1;
        for (int32_t p = 0; mask && p < sh->max_pos; p++)
            mask[(size_t)i * sh->max_pos + p] =
                p > 0 && st_conf_randi(c, 4) == 0 ? -INFINITY : st_conf_randf(c, -1.0f, 0.0f);
    }
    h.seq = seq;
    h.kv_len = kv_len;
    h.cell_table = table;
    h.mask = mask;
    d = h;
    d.q = st_conf_to_device(c, &h.q);
    d.k_cache = st_conf_to_device(c, &h.k_cache);
    d.v_cache = st_conf_to_device(c, &h.v_cache);
    d.seq = st_conf_upload(c, seq, sizeof(int32_t) * (size_t)sh->n);
    d.kv_len = st_conf_upload(c, kv_len, sizeof(int32_t) * (size_t)sh->n);
    d.cell_table = st_conf_upload(c, table, sizeof(int32_t) * (size_t)(sh->n_seq * sh->max_pos));
    d.mask = mask ? st_conf_upload(c, mask, sizeof(float) * (size_t)(sh->n * sh->max_pos)) : NULL;
    st_conf_output_pair(c, &h.q, &h.out, &d.out);
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "attention", c->ops->attention(c->stream, &d))) {
        c->ref->attention(NULL, &h);
        err = st_conf_compare(c, &d.out, &h.out);
    }
    st_conf_case_end(c, name, err, 1e-6 + (at == ST_TYPE_F32 ? 0 : 1e-5));
}

void st_conf_attention(st_conf_ctx *c) {
    static const attn_shape shapes[] = {
        {1, 8, 8, 64, 1, 1, 0},       /* one key: output is its value */
        {1, 32, 4, 128, 1, 1000, 0},  /* long decode, GQA 8 */
        {4, 16, 2, 128, 1, 77, 0},    /* verify window of 4 */
        {5, 8, 2, 64, 3, 300, 0},     /* several sequences */
        {3, 4, 4, 128, 2, 50, 1},     /* additive mask */
        {2, 16, 16, 96, 2, 4500, 0},  /* head dim 96, longer than one split */
    };
    int ns = c->quick ? 4 : 6;
    for (int ct = 0; ct < 3; ct++)
        for (int s = 0; s < ns; s++) {
            if (k_cache_types[ct] == ST_TYPE_Q8_0 && shapes[s].hd % 32) continue;
            attention_case(c, &shapes[s], k_cache_types[ct], ST_TYPE_F32);
        }
    attention_case(c, &shapes[3], ST_TYPE_F16, ST_TYPE_F16);
}

/* ---- MOE_MATMUL ---------------------------------------------------------------------- */
static const uint32_t k_moe_types[] = {
    ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0, ST_TYPE_Q4_1, ST_TYPE_Q5_0,   ST_TYPE_Q5_1,  ST_TYPE_Q8_0,
    ST_TYPE_Q2_K, ST_TYPE_Q3_K, ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_NL, ST_TYPE_IQ4_XS, ST_TYPE_MXFP4,
};

static void moe_case(st_conf_ctx *c, uint32_t wt, int32_t n_x, int32_t n_assign, int32_t E, int32_t slots,
                     int64_t M, int64_t K, int scaled) {
    char name[128];
    snprintf(name, sizeof name, "moe_matmul %s x=%d assign=%d E=%d slots=%d M=%lld K=%lld%s", st_type_name(wt), n_x,
             n_assign, E, slots, (long long)M, (long long)K, scaled ? " scaled" : "");
    if (!st_conf_claimed(c, (const void *)c->ops->moe_matmul, ST_OP_MOE_MATMUL, wt, name)) return;
    st_moe_matmul_args h = {.size = sizeof h, .n_assign = n_assign}, d;
    h.w = st_conf_tensor(wt, K, M, slots);
    h.x = st_conf_tensor(ST_TYPE_F32, K, n_x, 1);
    st_conf_random_tensor(c, &h.w, 1.0f);
    st_conf_random_tensor(c, &h.x, 1.0f);
    int32_t *table = st_conf_host(c, sizeof(int32_t) * (size_t)E);
    int32_t *expert = st_conf_host(c, sizeof(int32_t) * (size_t)n_assign);
    int32_t *x_row = st_conf_host(c, sizeof(int32_t) * (size_t)n_assign);
    float *scale = scaled ? st_conf_host(c, sizeof(float) * (size_t)n_assign) : NULL;
    int32_t *live = st_conf_host(c, sizeof(int32_t) * (size_t)n_assign);
    if (!table || !expert || !x_row || !live || (scaled && !scale)) { st_conf_case_end(c, name, INFINITY, 0); return; }
    /* experts 0..slots-1 map to slots in reverse order; the rest are not resident */
    for (int32_t e = 0; e < E; e++) table[e] = e < slots ? slots - 1 - e : -1;
    int32_t n_live = 0;
    for (int32_t a = 0; a < n_assign; a++) {
        expert[a] = st_conf_randi(c, E);
        x_row[a] = st_conf_randi(c, n_x);
        if (scale) scale[a] = st_conf_randf(c, 0.0f, 1.0f);
        if (table[expert[a]] >= 0) live[n_live++] = a;
    }
    h.slot_table = table;
    h.expert = expert;
    h.x_row = x_row;
    h.scale = scale;
    d = h;
    d.w = st_conf_to_device(c, &h.w);
    d.x = st_conf_to_device(c, &h.x);
    d.slot_table = st_conf_upload(c, table, sizeof(int32_t) * (size_t)E);
    d.expert = st_conf_upload(c, expert, sizeof(int32_t) * (size_t)n_assign);
    d.x_row = st_conf_upload(c, x_row, sizeof(int32_t) * (size_t)n_assign);
    d.scale = scale ? st_conf_upload(c, scale, sizeof(float) * (size_t)n_assign) : NULL;
    st_tensor o = st_conf_tensor(ST_TYPE_F32, M, n_assign, 1);
    st_conf_output_pair(c, &o, &h.out, &d.out);
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "moe_matmul", c->ops->moe_matmul(c->stream, &d))) {
        c->ref->moe_matmul(NULL, &h);
        const char *got = st_conf_download(c, d.out.data, st_conf_nbytes(&o));
        double *den = st_conf_host(c, sizeof(double) * (size_t)(n_live ? n_live : 1));
        for (int32_t i = 0; den && i < n_live; i++) { /* scale of each row's dot products */
            int32_t a = live[i];
            st_tensor ws = h.w, xs = h.x;
            ws.data = (char *)h.w.data + (size_t)table[expert[a]] * (size_t)h.w.nb[2];
            ws.ne[2] = 1;
            xs.data = (char *)h.x.data + (size_t)x_row[a] * (size_t)h.x.nb[1];
            xs.ne[1] = 1;
            if (st_conf_dot_scale_into(&ws, &xs, &den[i])) den[i] = 0;
            den[i] *= scale ? (double)scale[a] * scale[a] : 1.0;
        }
        if (got && den) {
            err = st_conf_rows_error(ST_TYPE_F32, M, (size_t)o.nb[1], got, h.out.data, live, n_live, den);
            /* rows of non-resident experts stay untouched */
            for (int32_t a = 0; a < n_assign; a++) {
                if (table[expert[a]] >= 0) continue;
                const unsigned char *p = (const unsigned char *)got + (size_t)a * (size_t)o.nb[1];
                for (int64_t b = 0; b < o.nb[1]; b++)
                    if (p[b] != 0xFF) err = INFINITY;
            }
        }
    }
    st_conf_case_end(c, name, err, st_type_get(wt)->is_quantized ? 5e-4 : wt == ST_TYPE_F32 ? 1e-8 : 1e-4);
}

void st_conf_moe_matmul(st_conf_ctx *c) {
    for (size_t t = 0; t < sizeof k_moe_types / sizeof k_moe_types[0]; t++) {
        uint32_t wt = k_moe_types[t];
        int64_t bs = st_type_get(wt)->block_size, K1 = bs == 1 ? 72 : bs * 2, K2 = bs == 1 ? 2048 : bs * 8;
        moe_case(c, wt, 1, 8, 16, 12, 24, K1, 0);  /* decode: one token, 8 experts */
        moe_case(c, wt, 6, 48, 32, 20, 33, K2, 1); /* several tokens sharing experts */
        if (!c->quick) moe_case(c, wt, 40, 160, 8, 8, 64, K2, 0); /* prefill: many rows per expert */
    }
}

/* ---- MOE_COMBINE --------------------------------------------------------------------- */
void st_conf_moe_combine(st_conf_ctx *c) {
    static const int32_t cfg[][4] = {{1, 8, 2048, 0}, {5, 4, 768, 1}, {17, 8, 1000, 0}};
    for (int i = 0; i < 3; i++) {
        int32_t n = cfg[i][0], k = cfg[i][1], acc = cfg[i][3];
        int64_t M = cfg[i][2];
        char name[96];
        snprintf(name, sizeof name, "moe_combine n=%d k=%d M=%lld%s", n, k, (long long)M, acc ? " accumulate" : "");
        if (!st_conf_claimed(c, (const void *)c->ops->moe_combine, ST_OP_MOE_COMBINE, ST_TYPE_F32, name)) continue;
        int32_t n_rows = n * k + 3;
        st_moe_combine_args h = {.size = sizeof h, .k = k, .accumulate = acc}, d;
        h.rows = st_conf_tensor(ST_TYPE_F32, M, n_rows, 1);
        st_conf_random_tensor(c, &h.rows, 2.0f);
        int32_t *row_of = st_conf_host(c, sizeof(int32_t) * (size_t)(n * k));
        float *w = st_conf_host(c, sizeof(float) * (size_t)(n * k));
        if (!row_of || !w) { st_conf_case_end(c, name, INFINITY, 0); return; }
        for (int32_t j = 0; j < n * k; j++) {
            row_of[j] = j % 5 == 3 ? -1 : st_conf_randi(c, n_rows);
            w[j] = st_conf_randf(c, 0.0f, 1.0f);
        }
        h.row_of = row_of;
        h.weights = w;
        d = h;
        d.rows = st_conf_to_device(c, &h.rows);
        d.row_of = st_conf_upload(c, row_of, sizeof(int32_t) * (size_t)(n * k));
        d.weights = st_conf_upload(c, w, sizeof(float) * (size_t)(n * k));
        if (acc) {
            h.out = st_conf_tensor(ST_TYPE_F32, M, n, 1);
            st_conf_random_tensor(c, &h.out, 1.0f);
            d.out = st_conf_to_device(c, &h.out);
        } else {
            st_tensor o = st_conf_tensor(ST_TYPE_F32, M, n, 1);
            st_conf_output_pair(c, &o, &h.out, &d.out);
        }
        double err = INFINITY;
        if (!c->alloc_failed && st_conf_run_ok(c, "moe_combine", c->ops->moe_combine(c->stream, &d))) {
            c->ref->moe_combine(NULL, &h);
            err = st_conf_compare(c, &d.out, &h.out);
        }
        st_conf_case_end(c, name, err, 1e-10);
    }
}
