/* SPDX-License-Identifier: Apache-2.0 */
/* KV cache and work buffers of a model, sized for n_batch tokens and n_out_max logit rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static int buf_f32(st_model *m, float **out, int64_t n, const char *what, char *err, size_t errlen) {
    return st_model_alloc(m, (uint64_t)n * sizeof(float), (void **)out, what, err, errlen);
}

static int buf_i32(st_model *m, int32_t **out, int64_t n, const char *what, char *err, size_t errlen) {
    return st_model_alloc(m, (uint64_t)n * sizeof(int32_t), (void **)out, what, err, errlen);
}

static int upload_i32(st_model *m, int32_t *dst, const int32_t *src, int64_t n, char *err, size_t errlen) {
    st_status s = st_dev_h2d(&m->dev, m->stream, dst, src, (uint64_t)n * sizeof(int32_t));
    if (s == ST_OK) s = st_dev_sync(&m->dev, m->stream);
    if (s != ST_OK) {
        snprintf(err, errlen, "uploading index tables: %s", st_dev_error());
        return -1;
    }
    return 0;
}

/* The index tables of multi-head latent attention (core/plan counts them in the work buffers). */
static int mla_buffers(st_model *m, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    st_work *w = &m->w;
    const int64_t H = hp->n_head, nh = m->p.n_batch * H;
    if ((int64_t)hp->n_lora_q > H * hp->head_dim) {
        snprintf(err, errlen, "q_lora_rank %d exceeds the attention buffer row (%lld)", hp->n_lora_q,
                 (long long)(H * hp->head_dim));
        return -1;
    }
    if (buf_i32(m, &w->hid, nh, "head ids", err, errlen) || buf_i32(m, &w->hrow, nh, "head rows", err, errlen) ||
        buf_i32(m, &w->hslots, H, "head slots", err, errlen))
        return -1;
    int32_t *h = malloc((size_t)nh * sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int rc = 0;
    for (int64_t a = 0; a < nh; a++) h[a] = (int32_t)(a % H);
    rc = rc || upload_i32(m, w->hid, h, nh, err, errlen);
    for (int64_t a = 0; a < nh; a++) h[a] = (int32_t)a;
    rc = rc || upload_i32(m, w->hrow, h, nh, err, errlen);
    rc = rc || upload_i32(m, w->hslots, h, H, err, errlen);
    free(h);
    return rc ? -1 : 0;
}

int st_model_buffers_create(st_model *m, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    st_work *w = &m->w;
    const int64_t n = m->p.n_batch, no = m->p.n_out_max, E = hp->n_embd;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim, kd = (int64_t)hp->n_head_kv * hp->head_dim;
    int64_t F = hp->n_ff > hp->n_ff_shexp ? hp->n_ff : hp->n_ff_shexp;
    if (hp->n_expert == 0 && F == 0) F = 1;

    st_kv_params kp;
    memset(&kp, 0, sizeof kp);
    kp.n_layer = m->l1 - m->l0; /* this stage's layers: the cache is indexed il - l0 */
    kp.n_head_kv = hp->n_head_kv;
    kp.head_dim = hp->head_dim;
    kp.type = m->p.kv_type;
    kp.n_seq = m->p.n_seq;
    kp.n_ctx = m->p.n_ctx;
    kp.k_only = hp->n_lora_kv > 0; /* MLA: the cache holds the latent rows only */
    st_model_consumer(m, "kv");
    m->kv = st_kv_create(&m->dev, m->stream, &kp, err, errlen);
    if (!m->kv) return -1;

    w->inp_host = calloc((size_t)(5 * n + no), sizeof(int32_t));
    m->seq_len0 = calloc((size_t)m->p.n_seq, sizeof(int32_t));
    m->seq_len_run = calloc((size_t)m->p.n_seq, sizeof(int32_t));
    if (!w->inp_host || !m->seq_len0 || !m->seq_len_run) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    st_model_consumer(m, "work");
    if (buf_i32(m, &w->inp, 5 * n + no, "batch inputs", err, errlen)) return -1;
    if (buf_f32(m, &w->x, n * E, "activations", err, errlen)) return -1;
    if (buf_f32(m, &w->cur, n * E, "activations", err, errlen)) return -1;
    if (buf_f32(m, &w->tmp, n * E, "activations", err, errlen)) return -1;
    const uint64_t qb = st_model_round((uint64_t)(n * qd) * 4u), kb = st_model_round((uint64_t)(n * kd) * 4u);
    void *qkv = NULL;
    if (st_model_alloc(m, qb + 2 * kb, &qkv, "Q, K, V", err, errlen)) return -1;
    w->q = qkv;
    w->k = (float *)((char *)qkv + qb);
    w->v = (float *)((char *)qkv + qb + kb);
    if (buf_f32(m, &w->att, n * qd, "attention output", err, errlen)) return -1;
    if (F > 0) {
        if (buf_f32(m, &w->fg, n * F, "FFN gate", err, errlen)) return -1;
        if (buf_f32(m, &w->fu, n * F, "FFN up", err, errlen)) return -1;
    }
    if (hp->n_expert > 0) {
        const int64_t k = hp->n_expert_used, A = n * k, Fe = hp->n_ff_exp;
        if (buf_f32(m, &w->rlog, n * hp->n_expert, "router logits", err, errlen)) return -1;
        if (buf_i32(m, &w->rids, A, "router choices", err, errlen)) return -1;
        if (buf_f32(m, &w->rw, A, "router weights", err, errlen)) return -1;
        if (buf_i32(m, &w->xrow, A, "expert rows", err, errlen)) return -1;
        if (buf_i32(m, &w->ident, A, "expert rows", err, errlen)) return -1;
        if (buf_i32(m, &w->slots, hp->n_expert, "slot table", err, errlen)) return -1;
        if (buf_f32(m, &w->eg, A * Fe, "expert gate", err, errlen)) return -1;
        if (buf_f32(m, &w->eu, A * Fe, "expert up", err, errlen)) return -1;
        if (buf_f32(m, &w->ed, A * E, "expert down", err, errlen)) return -1;
        if (hp->arch == ST_ARCH_GPTOSS && buf_f32(m, &w->eb, A * (Fe > E ? Fe : E), "expert bias rows", err, errlen))
            return -1;
        if (hp->n_ff_shexp > 0 && hp->arch != ST_ARCH_DEEPSEEK2 && buf_f32(m, &w->sg, n, "shared expert gate", err, errlen))
            return -1;
        int32_t *h = malloc((size_t)(A > hp->n_expert ? A : hp->n_expert) * sizeof *h);
        m->expert_counts = calloc((size_t)hp->n_layer * (size_t)hp->n_expert, sizeof *m->expert_counts);
        m->rids_host = malloc((size_t)A * sizeof *m->rids_host);
        if (!h || !m->expert_counts || !m->rids_host) {
            free(h);
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        int rc = 0;
        for (int64_t a = 0; a < A; a++) h[a] = (int32_t)(a / k);
        rc = rc || upload_i32(m, w->xrow, h, A, err, errlen);
        for (int64_t a = 0; a < A; a++) h[a] = (int32_t)a;
        rc = rc || upload_i32(m, w->ident, h, A, err, errlen);
        for (int64_t e = 0; e < hp->n_expert; e++) h[e] = (int32_t)e; /* every expert resident */
        rc = rc || upload_i32(m, w->slots, h, hp->n_expert, err, errlen);
        free(h);
        if (rc) return -1;
    }
    if (hp->n_lora_kv > 0 && mla_buffers(m, err, errlen)) return -1;
    if (!m->last) return 0; /* the output's buffers live on the last stage */
    st_model_consumer(m, "logits");
    if (buf_f32(m, &w->sel, no * E, "output rows", err, errlen)) return -1;
    if (buf_f32(m, &w->logits, no * hp->n_vocab, "logits", err, errlen)) return -1;
    if (buf_i32(m, &w->oid, no * m->p.topk_max, "top-k ids", err, errlen)) return -1;
    if (buf_f32(m, &w->oval, no * m->p.topk_max, "top-k values", err, errlen)) return -1;
    return 0;
}
