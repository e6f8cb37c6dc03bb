/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance cases of the fused ops (ABI 1.1): ATTN_PREP, MOE_GATE_UP and MOE_DOWN against the
 * reference, whose fused ops are compositions of its unfused ones. Inputs come in the layouts
 * the model uses: Q, K and V as strided views into one fused QKV row, expert slots with
 * non-resident experts, and both the decode sizes and sizes past a module's fast path. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conformance/conf_ops.h"
#include "quant/quant.h"

/* The device's slot for fused op `f`, or NULL when its ops table (an older ABI's) ends before it. */
#define FUSED_SLOT(c, f) ((c)->ops->size > offsetof(st_backend_ops, f) ? (const void *)(c)->ops->f : NULL)

/* ---- ATTN_PREP ----------------------------------------------------------------------- */
typedef struct {
    int32_t n, heads, kv_heads, hd, n_rot, qnorm, knorm, neox, yarn;
} prep_shape;

/* A [n][heads][hd] view at column `col0` (in elements) of an F32 [n][row] buffer. */
static st_tensor qkv_view(void *base, int64_t row, int64_t col0, int64_t heads, int64_t hd, int64_t n) {
    st_tensor t = st_conf_tensor(ST_TYPE_F32, hd, heads, n);
    t.data = (char *)base + col0 * 4;
    t.nb[2] = row * 4;
    t.nb[3] = t.nb[2] * n;
    return t;
}

static void prep_case(st_conf_ctx *c, const prep_shape *sh, uint32_t cache_t) {
    char name[160];
    snprintf(name, sizeof name, "attn_prep %s n=%d heads=%d/%d hd=%d rot=%d%s%s%s%s", st_type_name(cache_t), sh->n,
             sh->heads, sh->kv_heads, sh->hd, sh->n_rot, sh->neox ? " neox" : "", sh->qnorm ? " qnorm" : "",
             sh->knorm ? " knorm" : "", sh->yarn ? " yarn" : "");
    if (!st_conf_claimed(c, FUSED_SLOT(c, attn_prep),
                         ST_OP_ATTN_PREP, cache_t, name))
        return;
    const int64_t n = sh->n, H = sh->heads, Hk = sh->kv_heads, D = sh->hd, row = (H + 2 * Hk) * D, n_cells = 48;
    st_attn_prep_args h = {.size = sizeof h, .eps = 1e-6f}, d;
    st_tensor qkv = st_conf_tensor(ST_TYPE_F32, row, n, 1);
    st_conf_random_tensor(c, &qkv, 3.0f);
    st_tensor dqkv = st_conf_to_device(c, &qkv);
    h.q = qkv_view(qkv.data, row, 0, H, D, n);
    h.k = qkv_view(qkv.data, row, H * D, Hk, D, n);
    h.v = qkv_view(qkv.data, row, (H + Hk) * D, Hk, D, n);
    st_tensor nq = st_conf_tensor(ST_TYPE_F32, D, 1, 1), nk = nq;
    if (sh->qnorm) st_conf_random_tensor(c, &nq, 2.0f);
    if (sh->knorm) st_conf_random_tensor(c, &nk, 2.0f);
    h.q_norm = sh->qnorm ? nq : (st_tensor){0};
    h.k_norm = sh->knorm ? nk : (st_tensor){0};
    int32_t *cells = st_conf_host(c, sizeof(int32_t) * (size_t)n);
    int32_t *pos = st_conf_host(c, sizeof(int32_t) * (size_t)n);
    if (!cells || !pos || !qkv.data) { st_conf_case_end(c, name, INFINITY, 0); return; }
    for (int64_t i = 0; i < n; i++) { /* distinct cells, the last one included */
        int dup;
        do {
            cells[i] = i == 0 ? (int32_t)n_cells - 1 : st_conf_randi(c, (int)n_cells);
            dup = 0;
            for (int64_t j = 0; j < i; j++) dup |= cells[j] == cells[i];
        } while (dup);
        pos[i] = st_conf_randi(c, 40000);
    }
    h.cells = cells;
    st_rope_args r = {.size = sizeof r, .mode = sh->neox ? ST_ROPE_NEOX : ST_ROPE_NORMAL, .n_rot = sh->n_rot,
                      .n_ctx_orig = 4096, .freq_base = 1000000.0f, .freq_scale = sh->yarn ? 0.25f : 1.0f,
                      .ext_factor = sh->yarn ? 1.0f : 0.0f, .attn_factor = 1.0f, .beta_fast = 32.0f, .beta_slow = 1.0f};
    r.pos = pos;
    h.rope = r;
    d = h;
    d.q = qkv_view(dqkv.data, row, 0, H, D, n);
    d.k = qkv_view(dqkv.data, row, H * D, Hk, D, n);
    d.v = qkv_view(dqkv.data, row, (H + Hk) * D, Hk, D, n);
    if (sh->qnorm) d.q_norm = st_conf_to_device(c, &nq);
    if (sh->knorm) d.k_norm = st_conf_to_device(c, &nk);
    d.cells = st_conf_upload(c, cells, sizeof(int32_t) * (size_t)n);
    d.rope.pos = st_conf_upload(c, pos, sizeof(int32_t) * (size_t)n);
    st_tensor qo = st_conf_tensor(ST_TYPE_F32, D, H, n), cache = st_conf_tensor(cache_t, D, Hk, n_cells);
    st_conf_output_pair(c, &qo, &h.q_out, &d.q_out);
    st_conf_output_pair(c, &cache, &h.k_cache, &d.k_cache);
    st_conf_output_pair(c, &cache, &h.v_cache, &d.v_cache);
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "attn_prep", c->ops->attn_prep(c->stream, &d))) {
        st_status rs = c->ref->attn_prep(NULL, &h);
        size_t bytes = st_conf_nbytes(&cache);
        const char *gk = st_conf_download(c, d.k_cache.data, bytes);
        const char *gv = st_conf_download(c, d.v_cache.data, bytes);
        if (rs == ST_OK && gk && gv) {
            int32_t rows[256];
            int64_t nr = 0;
            for (int64_t i = 0; i < n && nr + Hk <= 256; i++)
                for (int64_t g = 0; g < Hk; g++) rows[nr++] = (int32_t)(cells[i] * Hk + g);
            const double ek = st_conf_rows_error(cache_t, D, (size_t)cache.nb[1], gk, h.k_cache.data, rows, nr, NULL);
            const double ev = st_conf_rows_error(cache_t, D, (size_t)cache.nb[1], gv, h.v_cache.data, rows, nr, NULL);
            const double eq = st_conf_compare(c, &d.q_out, &h.q_out);
            err = fmax(eq, fmax(ek, ev));
            for (int64_t cell = 0; cell < n_cells && err < INFINITY; cell++) { /* untouched cells */
                int written = 0;
                for (int64_t i = 0; i < n; i++) written |= cells[i] == cell;
                const unsigned char *p = (const unsigned char *)gk + cell * cache.nb[2];
                const unsigned char *pv = (const unsigned char *)gv + cell * cache.nb[2];
                for (int64_t b = 0; !written && b < cache.nb[2]; b++)
                    if (p[b] != 0xFF || pv[b] != 0xFF) err = INFINITY;
            }
        }
    }
    const double lim = cache_t == ST_TYPE_Q8_0 ? 1e-4 : cache_t == ST_TYPE_F16 ? 2e-6 : 1e-9;
    st_conf_case_end(c, name, err, lim);
}

void st_conf_attn_prep(st_conf_ctx *c) {
    static const prep_shape shapes[] = {
        {1, 32, 4, 128, 128, 1, 1, 1, 0}, /* qwen3 decode: both norms, NeoX */
        {5, 8, 2, 64, 64, 0, 0, 0, 0},    /* llama-style: no norms, adjacent pairs, verify window */
        {3, 16, 4, 128, 64, 1, 0, 1, 1},  /* partial rotation, YaRN, Q norm only */
        {37, 4, 4, 96, 96, 0, 1, 1, 0},   /* prefill-sized, head dim 96 */
    };
    static const uint32_t caches[] = {ST_TYPE_F32, ST_TYPE_F16, ST_TYPE_Q8_0};
    const int ns = c->quick ? 2 : 4;
    for (int s = 0; s < ns; s++)
        for (int t = 0; t < 3; t++) prep_case(c, &shapes[s], caches[t]);
}

/* ---- MOE_GATE_UP / MOE_DOWN ---------------------------------------------------------- */
static const uint32_t k_fused_types[] = {
    ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0, ST_TYPE_Q5_1, ST_TYPE_Q8_0,
    ST_TYPE_Q3_K, ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_XS,
};

/* Expert tables: experts 0..slots-1 resident in reverse slot order, the rest not. */
static int32_t *slot_table(st_conf_ctx *c, int32_t E, int32_t slots) {
    int32_t *t = st_conf_host(c, sizeof(int32_t) * (size_t)E);
    for (int32_t e = 0; t && e < E; e++) t[e] = e < slots ? slots - 1 - e : -1;
    return t;
}

static double fused_limit(uint32_t wt) {
    return st_type_get(wt)->is_quantized ? 2e-3 : wt == ST_TYPE_F32 ? 1e-8 : 4e-4;
}

static void gate_up_case(st_conf_ctx *c, uint32_t wt, int32_t n_x, int32_t n_assign, int64_t F, int64_t K) {
    const int32_t E = 16, slots = 12;
    char name[128];
    snprintf(name, sizeof name, "moe_gate_up %s x=%d assign=%d F=%lld K=%lld", st_type_name(wt), n_x, n_assign,
             (long long)F, (long long)K);
    if (!st_conf_claimed(c, FUSED_SLOT(c, moe_gate_up),
                         ST_OP_MOE_GATE_UP, wt, name))
        return;
    st_moe_gate_up_args h = {.size = sizeof h, .n_assign = n_assign}, d;
    h.w_gate = st_conf_tensor(wt, K, F, slots);
    h.w_up = h.w_gate;
    h.x = st_conf_tensor(ST_TYPE_F32, K, n_x, 1);
    st_conf_random_tensor(c, &h.w_gate, 1.0f);
    st_conf_random_tensor(c, &h.w_up, 1.0f);
    st_conf_random_tensor(c, &h.x, 1.0f);
    int32_t *table = slot_table(c, E, slots);
    int32_t *expert = st_conf_host(c, sizeof(int32_t) * (size_t)n_assign);
    int32_t *x_row = st_conf_host(c, sizeof(int32_t) * (size_t)n_assign);
    int32_t *live = st_conf_host(c, sizeof(int32_t) * (size_t)n_assign);
    if (!table || !expert || !x_row || !live || !h.x.data) { st_conf_case_end(c, name, INFINITY, 0); return; }
    int32_t n_live = 0;
    for (int32_t a = 0; a < n_assign; a++) {
        expert[a] = st_conf_randi(c, E);
        x_row[a] = st_conf_randi(c, n_x);
        if (table[expert[a]] >= 0) live[n_live++] = a;
    }
    h.slot_table = table;
    h.expert = expert;
    h.x_row = x_row;
    d = h;
    d.w_gate = st_conf_to_device(c, &h.w_gate);
    d.w_up = st_conf_to_device(c, &h.w_up);
    d.x = st_conf_to_device(c, &h.x);
    d.slot_table = st_conf_upload(c, table, sizeof(int32_t) * (size_t)E);
    d.expert = st_conf_upload(c, expert, sizeof(int32_t) * (size_t)n_assign);
    d.x_row = st_conf_upload(c, x_row, sizeof(int32_t) * (size_t)n_assign);
    st_tensor o = st_conf_tensor(ST_TYPE_F32, F, n_assign, 1), scr;
    st_conf_output_pair(c, &o, &h.out, &d.out);
    st_conf_output_pair(c, &o, &scr, &d.scratch);
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "moe_gate_up", c->ops->moe_gate_up(c->stream, &d)) &&
        c->ref->moe_gate_up(NULL, &h) == ST_OK) {
        const char *got = st_conf_download(c, d.out.data, st_conf_nbytes(&o));
        if (got) {
            err = st_conf_rows_error(ST_TYPE_F32, F, (size_t)o.nb[1], got, h.out.data, live, n_live, NULL);
            for (int32_t a = 0; a < n_assign; a++) { /* rows of non-resident experts stay untouched */
                if (table[expert[a]] >= 0) continue;
                const unsigned char *p = (const unsigned char *)got + (size_t)a * (size_t)o.nb[1];
                for (int64_t b = 0; b < o.nb[1]; b++)
                    if (p[b] != 0xFF) err = INFINITY;
            }
        }
    }
    st_conf_case_end(c, name, err, fused_limit(wt));
}

static void down_case(st_conf_ctx *c, uint32_t wt, int32_t n, int32_t k, int64_t M, int64_t K, int acc) {
    const int32_t E = 16, slots = 12, A = n * k;
    char name[128];
    snprintf(name, sizeof name, "moe_down %s n=%d k=%d M=%lld K=%lld%s", st_type_name(wt), n, k, (long long)M,
             (long long)K, acc ? " accumulate" : "");
    if (!st_conf_claimed(c, FUSED_SLOT(c, moe_down),
                         ST_OP_MOE_DOWN, wt, name))
        return;
    st_moe_down_args h = {.size = sizeof h, .k = k, .accumulate = acc}, d;
    h.w = st_conf_tensor(wt, K, M, slots);
    h.x = st_conf_tensor(ST_TYPE_F32, K, A, 1);
    st_conf_random_tensor(c, &h.w, 1.0f);
    st_conf_random_tensor(c, &h.x, 1.0f);
    int32_t *table = slot_table(c, E, slots);
    int32_t *ids = st_conf_host(c, sizeof(int32_t) * (size_t)A);
    float *w = st_conf_host(c, sizeof(float) * (size_t)A);
    if (!table || !ids || !w || !h.x.data) { st_conf_case_end(c, name, INFINITY, 0); return; }
    for (int32_t t = 0; t < n; t++)
        for (int32_t j = 0; j < k; j++) { /* distinct experts per token, as a router gives */
            int dup;
            do {
                ids[t * k + j] = st_conf_randi(c, E);
                dup = 0;
                for (int32_t q = 0; q < j; q++) dup |= ids[t * k + q] == ids[t * k + j];
            } while (dup);
            w[t * k + j] = st_conf_randf(c, 0.0f, 1.0f);
        }
    h.slot_table = table;
    h.ids = ids;
    h.weights = w;
    d = h;
    d.w = st_conf_to_device(c, &h.w);
    d.x = st_conf_to_device(c, &h.x);
    d.slot_table = st_conf_upload(c, table, sizeof(int32_t) * (size_t)E);
    d.ids = st_conf_upload(c, ids, sizeof(int32_t) * (size_t)A);
    d.weights = st_conf_upload(c, w, sizeof(float) * (size_t)A);
    st_tensor o = st_conf_tensor(ST_TYPE_F32, M, n, 1), scr, so = st_conf_tensor(ST_TYPE_F32, M, A, 1);
    if (acc) {
        h.out = o;
        st_conf_random_tensor(c, &h.out, 1.0f);
        d.out = st_conf_to_device(c, &h.out);
    } else {
        st_conf_output_pair(c, &o, &h.out, &d.out);
    }
    st_conf_output_pair(c, &so, &scr, &d.scratch);
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "moe_down", c->ops->moe_down(c->stream, &d)) &&
        c->ref->moe_down(NULL, &h) == ST_OK)
        err = st_conf_compare(c, &d.out, &h.out);
    st_conf_case_end(c, name, err, fused_limit(wt));
}

void st_conf_moe_fused(st_conf_ctx *c) {
    for (size_t t = 0; t < sizeof k_fused_types / sizeof k_fused_types[0]; t++) {
        const uint32_t wt = k_fused_types[t];
        const int64_t bs = st_type_get(wt)->block_size, K1 = bs == 1 ? 96 : bs * 3, K2 = bs == 1 ? 768 : bs * 8;
        gate_up_case(c, wt, 1, 8, 24, K2);  /* decode: one token, 8 experts */
        gate_up_case(c, wt, 6, 48, 40, K1); /* a verify window */
        if (!c->quick) gate_up_case(c, wt, 40, 160, 64, K2); /* prefill: past the decode path */
        down_case(c, wt, 1, 8, 48, K2, 0);
        down_case(c, wt, 5, 4, 33, K1, 1);
        if (!c->quick) down_case(c, wt, 40, 8, 64, K2, 0);
    }
}
