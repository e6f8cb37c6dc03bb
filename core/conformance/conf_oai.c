/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance cases of the ABI 1.2 ops: ATTENTION_EX (per-head sinks, sliding window, over the
 * paged cache as ATTENTION) and SWIGLU_OAI (clamped SwiGLU) for gpt-oss, ROUTER_GROUPS
 * (group-limited routing) for DeepSeek-V3, against the reference. Windows shorter and longer
 * than the sequences; sinks large enough to take most of the weight; gate and up values beyond
 * the clamp; groups kept of V2's and V3's shapes. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conformance/conf_ops.h"
#include "quant/quant.h"

/* The device's slot for op `f`, or NULL when its ops table (an older ABI's) ends before it. */
#define SLOT_1_2(c, f) ((c)->ops->size > offsetof(st_backend_ops, f) ? (const void *)(c)->ops->f : NULL)

typedef struct {
    int32_t n, heads, kv_heads, hd, n_seq, max_pos, window, sinks;
} ex_shape;

/* Host tables of an attention case: a permuted cell table, sequences and causal lengths. */
static int ex_tables(st_conf_ctx *c, const ex_shape *sh, int32_t n_cells, int32_t *table, int32_t *seq,
                     int32_t *kv_len) {
    for (int32_t i = 0; i < sh->n_seq * sh->max_pos; i++) table[i] = i;
    for (int32_t i = sh->n_seq * sh->max_pos - 1; i > 0; i--) {
        int32_t j = st_conf_randi(c, i + 1), t = table[i];
        table[i] = table[j];
        table[j] = t;
    }
    for (int32_t i = 0; i < sh->n_seq * sh->max_pos; i++) table[i] = (table[i] * 7 + 3) % n_cells;
    for (int32_t i = 0; i < sh->n; i++) {
        seq[i] = i % sh->n_seq;
        kv_len[i] = sh->n_seq == 1 ? sh->max_pos - sh->n + 1 + i : 1 + st_conf_randi(c, sh->max_pos);
    }
    return 0;
}

static void ex_case(st_conf_ctx *c, const ex_shape *sh, uint32_t cache_t) {
    char name[160];
    snprintf(name, sizeof name, "attention_ex cache=%s n=%d h=%d/%d hd=%d pos<=%d window=%d%s", st_type_name(cache_t),
             sh->n, sh->heads, sh->kv_heads, sh->hd, sh->max_pos, sh->window, sh->sinks ? " sinks" : "");
    if (!st_conf_claimed(c, SLOT_1_2(c, attention_ex), ST_OP_ATTENTION_EX, cache_t, name)) return;
    const int32_t n_cells = sh->n_seq * sh->max_pos + 5, tab = sh->n_seq * sh->max_pos;
    st_attention_ex_args h = {.size = sizeof h, .window = sh->window}, d;
    st_attention_args *b = &h.base;
    b->size = sizeof *b;
    b->scale = 1.0f / sqrtf((float)sh->hd);
    b->max_pos = sh->max_pos;
    b->q = st_conf_tensor(ST_TYPE_F32, sh->hd, sh->heads, sh->n);
    b->k_cache = st_conf_tensor(cache_t, sh->hd, sh->kv_heads, n_cells);
    b->v_cache = st_conf_tensor(cache_t, sh->hd, sh->kv_heads, n_cells);
    st_conf_random_tensor(c, &b->q, 2.0f);
    st_conf_random_tensor(c, &b->k_cache, 2.0f);
    st_conf_random_tensor(c, &b->v_cache, 2.0f);
    int32_t *table = st_conf_host(c, sizeof(int32_t) * (size_t)tab);
    int32_t *seq = st_conf_host(c, sizeof(int32_t) * (size_t)sh->n);
    int32_t *kv_len = st_conf_host(c, sizeof(int32_t) * (size_t)sh->n);
    float *sinks = st_conf_host(c, sizeof(float) * (size_t)sh->heads);
    if (!table || !seq || !kv_len || !sinks) { st_conf_case_end(c, name, INFINITY, 0); return; }
    ex_tables(c, sh, n_cells, table, seq, kv_len);
    for (int32_t hh = 0; hh < sh->heads; hh++) sinks[hh] = st_conf_randf(c, -2.0f, 6.0f);
    b->seq = seq;
    b->kv_len = kv_len;
    b->cell_table = table;
    h.sinks = sh->sinks ? sinks : NULL;
    d = h;
    d.base.q = st_conf_to_device(c, &b->q);
    d.base.k_cache = st_conf_to_device(c, &b->k_cache);
    d.base.v_cache = st_conf_to_device(c, &b->v_cache);
    d.base.seq = st_conf_upload(c, seq, sizeof(int32_t) * (size_t)sh->n);
    d.base.kv_len = st_conf_upload(c, kv_len, sizeof(int32_t) * (size_t)sh->n);
    d.base.cell_table = st_conf_upload(c, table, sizeof(int32_t) * (size_t)tab);
    d.sinks = sh->sinks ? st_conf_upload(c, sinks, sizeof(float) * (size_t)sh->heads) : NULL;
    st_conf_output_pair(c, &b->q, &b->out, &d.base.out);
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "attention_ex", c->ops->attention_ex(c->stream, &d))) {
        c->ref->attention_ex(NULL, &h);
        err = st_conf_compare(c, &d.base.out, &b->out);
    }
    st_conf_case_end(c, name, err, 1e-6);
}

static void oai_case(st_conf_ctx *c, uint32_t at, int64_t n, int64_t F) {
    char name[128];
    snprintf(name, sizeof name, "swiglu_oai %s n=%lld F=%lld", st_type_name(at), (long long)n, (long long)F);
    if (!st_conf_claimed(c, SLOT_1_2(c, swiglu_oai), ST_OP_SWIGLU_OAI, at, name)) return;
    st_swiglu_oai_args h = {.size = sizeof h, .alpha = 1.702f, .limit = 7.0f}, d;
    h.gate = st_conf_tensor(at, F, n, 1);
    h.up = st_conf_tensor(at, F, n, 1);
    st_conf_random_tensor(c, &h.gate, 12.0f); /* past the limit both ways */
    st_conf_random_tensor(c, &h.up, 12.0f);
    d = h;
    d.gate = st_conf_to_device(c, &h.gate);
    d.up = st_conf_to_device(c, &h.up);
    st_conf_output_pair(c, &h.gate, &h.out, &d.out);
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "swiglu_oai", c->ops->swiglu_oai(c->stream, &d))) {
        c->ref->swiglu_oai(NULL, &h);
        err = st_conf_compare(c, &d.out, &h.out);
    }
    st_conf_case_end(c, name, err, 1e-6 + (at == ST_TYPE_F16 ? 1e-5 : at == ST_TYPE_BF16 ? 1e-3 : 0));
}

/* ROUTER_GROUPS: groups of experts kept by their top-2 sums, then the router's top-k. */
static void groups_case(st_conf_ctx *c, int32_t n, int32_t E, int32_t k, int32_t groups, int32_t used, int sig) {
    char name[128];
    snprintf(name, sizeof name, "router_groups %s n=%d E=%d k=%d groups=%d/%d", sig ? "sigmoid" : "softmax", n, E,
             k, used, groups);
    if (!st_conf_claimed(c, SLOT_1_2(c, router_groups), ST_OP_ROUTER_GROUPS, ST_TYPE_F32, name)) return;
    st_router_groups_args h = {.size = sizeof h, .n_group = groups, .n_group_used = used}, d;
    st_router_args *b = &h.base;
    b->size = sizeof *b;
    b->gating = sig ? ST_ROUTER_SIGMOID : ST_ROUTER_SOFTMAX;
    b->k = k;
    b->normalize = sig;
    b->weight_scale = sig ? 2.5f : 1.0f;
    b->logits = st_conf_tensor(ST_TYPE_F32, E, n, 1);
    st_conf_random_tensor(c, &b->logits, 4.0f);
    float *bias = st_conf_host(c, sizeof(float) * (size_t)E);
    b->ids = st_conf_host(c, sizeof(int32_t) * (size_t)(n * k));
    b->weights = st_conf_host(c, sizeof(float) * (size_t)(n * k));
    if (!bias || !b->ids || !b->weights) { st_conf_case_end(c, name, INFINITY, 0); return; }
    for (int e = 0; e < E; e++) bias[e] = st_conf_randf(c, -0.5f, 0.5f);
    b->bias = sig ? bias : NULL;
    d = h;
    d.base.logits = st_conf_to_device(c, &b->logits);
    d.base.bias = sig ? st_conf_upload(c, bias, sizeof(float) * (size_t)E) : NULL;
    d.base.ids = st_conf_poisoned(c, sizeof(int32_t) * (size_t)(n * k));
    d.base.weights = st_conf_poisoned(c, sizeof(float) * (size_t)(n * k));
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "router_groups", c->ops->router_groups(c->stream, &d))) {
        c->ref->router_groups(NULL, &h);
        size_t first;
        if (!st_conf_compare_i32(c, d.base.ids, b->ids, (size_t)(n * k), &first)) {
            st_tensor vt = st_conf_tensor(ST_TYPE_F32, k, n, 1), vd = vt;
            vt.data = b->weights;
            vd.data = d.base.weights;
            err = st_conf_compare(c, &vd, &vt);
        }
    }
    st_conf_case_end(c, name, err, 1e-9);
}

void st_conf_oai(st_conf_ctx *c) {
    groups_case(c, 7, 256, 8, 8, 4, 1); /* DeepSeek-V3's shape */
    groups_case(c, 3, 64, 6, 8, 3, 0);  /* softmax, DeepSeek-V2's */
    groups_case(c, 5, 16, 2, 4, 1, 1);  /* one group kept */
    static const ex_shape shapes[] = {
        {1, 8, 2, 64, 1, 100, 16, 1},  /* decode, window shorter than the sequence */
        {6, 4, 4, 64, 1, 40, 8, 1},    /* prefill rows, each with its own window start */
        {5, 8, 1, 64, 3, 30, 64, 1},   /* several sequences, window longer than all */
        {3, 4, 2, 128, 1, 50, 0, 1},   /* sinks only */
        {3, 4, 2, 64, 1, 50, 10, 0},   /* window only */
    };
    static const uint32_t caches[] = {ST_TYPE_F32, ST_TYPE_F16, ST_TYPE_Q8_0};
    for (int ct = 0; ct < 3; ct++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) ex_case(c, &shapes[s], caches[ct]);
    static const uint32_t acts[] = {ST_TYPE_F32, ST_TYPE_F16, ST_TYPE_BF16};
    for (int a = 0; a < 3; a++) {
        oai_case(c, acts[a], 1, 37);
        oai_case(c, acts[a], 9, 256);
    }
}
