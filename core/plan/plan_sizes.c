/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes of the plan's consumers, computed from the model's description the way core/model
 * and core/kv lay out their buffers (tests/plan compares them with a real load on the sim). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "quant/quant.h"

uint64_t st_plan_round(uint64_t bytes) {
    if (bytes == 0) bytes = 64; /* the model never asks for 0 bytes */
    return (bytes + ST_PLAN_ALIGN - 1) / ST_PLAN_ALIGN * ST_PLAN_ALIGN;
}

static uint64_t f32s(int64_t n) { return st_plan_round((uint64_t)n * 4u); }

uint64_t st_plan_work_bytes(const st_hparams *hp, int64_t n, int64_t no) {
    const int64_t E = hp->n_embd;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim, kd = (int64_t)hp->n_head_kv * hp->head_dim;
    int64_t F = hp->n_ff > hp->n_ff_shexp ? hp->n_ff : hp->n_ff_shexp;
    if (hp->n_expert == 0 && F == 0) F = 1;
    uint64_t b = 0;
    b += f32s(5 * n + no);            /* batch inputs: tok, pos, seq, kv_len, cell, out rows */
    b += 3 * f32s(n * E);             /* residual stream, normed input, block output */
    b += 2 * f32s(n * qd);            /* Q, attention output */
    b += 2 * f32s(n * kd);            /* K, V */
    if (F > 0) b += 2 * f32s(n * F);  /* FFN gate, up */
    if (hp->n_expert > 0) {
        const int64_t A = n * hp->n_expert_used, Fe = hp->n_ff_exp;
        b += f32s(n * hp->n_expert);  /* router logits */
        b += 4 * f32s(A);             /* choices, weights, activation rows, identity rows */
        b += f32s(hp->n_expert);      /* one layer's slot table */
        b += 2 * f32s(A * Fe);        /* expert gate, up */
        b += f32s(A * E);             /* expert down */
        if (hp->arch == ST_ARCH_GPTOSS) b += f32s(A * (Fe > E ? Fe : E)); /* expert bias rows */
        if (hp->n_ff_shexp > 0 && hp->arch != ST_ARCH_DEEPSEEK2) b += f32s(n); /* shared-expert gate */
    }
    if (hp->n_lora_kv > 0) b += 2 * f32s(n * hp->n_head) + f32s(hp->n_head); /* MLA head tables */
    return b;
}

uint64_t st_plan_logits_bytes(const st_hparams *hp, int64_t no, int64_t topk) {
    return f32s(no * hp->n_embd) + f32s(no * hp->n_vocab) + 2 * f32s(no * topk);
}

uint64_t st_plan_kv_bytes(const st_hparams *hp, uint32_t kv_type, int32_t n_layers, int32_t n_seq,
                          int32_t n_ctx) {
    if (n_layers <= 0 || n_seq <= 0 || n_ctx <= 0) return 0;
    const int64_t page = 16;
    const int64_t cells = ((int64_t)n_ctx + page - 1) / page * page * n_seq;
    const uint64_t row = (uint64_t)st_row_size(kv_type, hp->head_dim) * (uint64_t)hp->n_head_kv;
    const uint64_t layer = st_plan_round(row * (uint64_t)cells);
    const uint64_t caches = hp->n_lora_kv > 0 ? 1u : 2u; /* MLA: one latent cache, V is part of it */
    return caches * (uint64_t)n_layers * layer + st_plan_round((uint64_t)n_seq * (uint64_t)n_ctx * 4u);
}

uint64_t st_plan_expert_index_bytes(const st_hparams *hp, int64_t n_tok) {
    if (hp->n_expert <= 0) return 0;
    const uint64_t A = (uint64_t)n_tok * (uint64_t)hp->n_expert_used;
    return st_plan_round(A * 12u) + st_plan_round((uint64_t)hp->n_expert * 4u);
}

uint64_t st_plan_expert_resident_bytes(const st_model_desc *d, int32_t l0, int32_t n) {
    uint64_t b = 0;
    for (int32_t l = l0; l < l0 + n; l++)
        for (int r = 0; r < ST_T_ROLE_COUNT; r++)
            if (st_tensor_role_is_expert((st_tensor_role)r) && d->layers[l].t[r])
                b += st_plan_round(d->layers[l].t[r]->nbytes);
    return b;
}

/* Vectors (norms, biases, scales) that are not F32 are converted to F32 on the device. */
static int is_vector_role(int r) { return st_tensor_role_is_vector((st_tensor_role)r); }

static uint64_t tensor_bytes(const st_gguf_tensor *t, int role, int unified) {
    if (!t) return 0;
    if (is_vector_role(role) && t->type != ST_TYPE_F32)
        return f32s(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    if (unified) return 0; /* read in place from the mapped file */
    return st_plan_round(t->nbytes);
}

uint64_t st_plan_weight_bytes(const st_model_desc *d, int32_t l0, int32_t n, int first, int last,
                              int unified) {
    uint64_t b = 0;
    if (first) b += tensor_bytes(d->token_embd, ST_T_TOKEN_EMBD, unified);
    if (last) {
        b += tensor_bytes(d->output_norm, ST_T_OUTPUT_NORM, unified);
        if (d->output && d->output != d->token_embd) b += tensor_bytes(d->output, ST_T_OUTPUT, unified);
        else if (!first) b += tensor_bytes(d->token_embd, ST_T_OUTPUT, unified); /* tied, on another device */
    }
    for (int32_t l = l0; l < l0 + n; l++)
        for (int r = 0; r < ST_T_ROLE_COUNT; r++)
            if (!st_tensor_role_is_expert((st_tensor_role)r))
                b += tensor_bytes(d->layers[l].t[r], r, unified);
    return b;
}

int st_plan_parse_size(const char *s, uint64_t *out) {
    if (!s || !*s) return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    while (*end == ' ') end++;
    static const struct { const char *u; double m; } units[] = {
        {"", 1}, {"b", 1}, {"k", 1024.0}, {"kib", 1024.0}, {"m", 1048576.0}, {"mib", 1048576.0},
        {"g", 1073741824.0}, {"gib", 1073741824.0}, {"t", 1099511627776.0}, {"tib", 1099511627776.0},
        {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}};
    char u[8] = {0};
    size_t n = strlen(end);
    if (n >= sizeof u) return -1;
    for (size_t i = 0; i < n; i++) u[i] = (char)tolower((unsigned char)end[i]);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(u, units[i].u)) continue;
        double b = v * units[i].m;
        if (b >= 1.8e19) return -1;
        *out = (uint64_t)(b + 0.5);
        return 0;
    }
    return -1;
}
