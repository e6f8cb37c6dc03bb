/* SPDX-License-Identifier: Apache-2.0 */
/* The forward recipe: embedding, per layer (norm, QKV, Q/K norm, rope, KV write, attention,
 * output, norm, dense FFN or router + experts + shared expert), final norm, output rows,
 * logits. Only backend ops touch device memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_graph.h"
#include "platform/platform.h"
#include "model/model_internal.h"
#include "quant/quant.h"

/* Calls op `slot` through the device door (which checks, names, profiles and injects faults)
 * and turns a failure into "layer L: what: OP on DEV failed: backend text". */
#define RUN(slot, args, what)                                                                  \
    do {                                                                                       \
        (args).size = sizeof(args);                                                            \
        if (st_dev_##slot(&m->dev, m->stream, &(args), what) != ST_OK) {                       \
            snprintf(err, errlen, "%s%s", layer_txt, st_dev_error());                          \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

static st_tensor none(void) {
    st_tensor t;
    memset(&t, 0, sizeof t);
    return t;
}

static st_tensor f32(float *p, int64_t ne0, int64_t ne1) { return st_model_view2(p, ST_TYPE_F32, ne0, ne1); }
static st_tensor f32_3(float *p, int64_t ne0, int64_t ne1, int64_t ne2) {
    return st_model_view3(p, ST_TYPE_F32, ne0, ne1, ne2);
}

/* out = rmsnorm(x (+ residual -> residual)) * weight */
static int norm(st_model *m, float *x, float *residual, const st_tensor *weight, float *out, int64_t rows,
                int64_t cols, const char *layer_txt, char *err, size_t errlen) {
    st_rms_norm_args a;
    memset(&a, 0, sizeof a);
    a.eps = m->hp.rms_eps;
    a.x = f32(x, cols, rows);
    a.residual = residual ? f32(residual, cols, rows) : none();
    a.sum_out = residual ? f32(residual, cols, rows) : none();
    a.weight = weight ? *weight : none();
    a.out = f32(out, cols, rows);
    RUN(rms_norm, a, "norm");
    return 0;
}

static int matmul(st_model *m, const st_tensor *w, float *x, float *out, int64_t n, const char *layer_txt,
                  const char *what, char *err, size_t errlen) {
    st_matmul_args a;
    memset(&a, 0, sizeof a);
    a.w = *w;
    a.x = f32(x, w->ne[0], n);
    a.out = f32(out, w->ne[1], n);
    RUN(matmul, a, what);
    return 0;
}

/* out = (W . x) * s: the layer's weight of `role` with its per-tensor scale (none when 1). */
static int project(st_model *m, const st_layer_w *L, int role, float *x, float *out, int64_t n,
                   const char *layer_txt, const char *what, char *err, size_t errlen) {
    const st_tensor *w = &L->t[role];
    if (matmul(m, w, x, out, n, layer_txt, what, err, errlen)) return -1;
    if (L->scale[role] == 1.0f) return 0;
    st_binary_args a;
    memset(&a, 0, sizeof a);
    a.s = L->scale[role];
    a.a = f32(out, w->ne[1], n); /* [n][M] */
    a.out = a.a;
    RUN(scale, a, what);
    return 0;
}

static int add_bias(st_model *m, const st_tensor *b, float *x, int64_t n, const char *layer_txt, char *err,
                    size_t errlen) {
    if (!b->data) return 0;
    st_binary_args a;
    memset(&a, 0, sizeof a);
    a.a = f32(x, b->ne[0], n);
    a.b = f32(b->data, b->ne[0], 1);
    a.out = a.a;
    RUN(add, a, "bias");
    return 0;
}

/* out = W_down . (silu(W_gate . in) * (W_up . in)) with the layer's weights of roles gate,
 * gate + 1 (up) and gate + 2 (down): the dense FFN or the shared expert. */
static int ffn_dense(st_model *m, const st_layer_w *L, int gate, float *in, float *out, int64_t n,
                     const char *layer_txt, char *err, size_t errlen) {
    st_work *w = &m->w;
    const int64_t F = L->t[gate].ne[1];
    if (project(m, L, gate, in, w->fg, n, layer_txt, "ffn_gate", err, errlen)) return -1; /* [n][F] */
    if (project(m, L, gate + 1, in, w->fu, n, layer_txt, "ffn_up", err, errlen)) return -1; /* [n][F] */
    st_swiglu_args s;
    memset(&s, 0, sizeof s);
    s.gate = f32(w->fg, F, n);
    s.up = f32(w->fu, F, n);
    s.out = s.gate;
    RUN(swiglu, s, "ffn");
    return project(m, L, gate + 2, w->fg, out, n, layer_txt, "ffn_down", err, errlen); /* [n][E] */
}

static int count_experts(st_model *m, int il, int64_t n, char *err, size_t errlen) {
    const int64_t A = n * m->hp.n_expert_used;
    st_status s = st_dev_d2h(&m->dev, m->stream, m->rids_host, m->w.rids, (uint64_t)A * sizeof(int32_t));
    if (s == ST_OK) s = st_dev_sync(&m->dev, m->stream);
    if (s != ST_OK) {
        snprintf(err, errlen, "layer %d: reading router choices: %s", il, st_dev_error());
        return -1;
    }
    st_model_note_routing(m, il, m->rids_host, n);
    return 0;
}

/* Shared expert of layer il: tmp = ffn_shexp(cur) * sigmoid(gate_inp_shexp . cur). */
static int shared_expert(st_model *m, const st_layer_w *L, int64_t n, const char *layer_txt, char *err,
                         size_t errlen) {
    st_work *w = &m->w;
    const int64_t E = m->hp.n_embd;
    if (ffn_dense(m, L, ST_T_FFN_GATE_SHEXP, w->cur, w->tmp, n, layer_txt, err, errlen)) return -1;
    if (matmul(m, &L->t[ST_T_FFN_GATE_INP_SHEXP], w->cur, w->sg, n, layer_txt, "ffn_gate_inp_shexp", err, errlen))
        return -1;
    st_binary_args b;
    memset(&b, 0, sizeof b);
    b.a = f32(w->tmp, E, n);
    b.b = f32(w->sg, n, 1);
    b.out = b.a;
    b.sigmoid = 1;
    RUN(mul_rows, b, "shared expert gate");
    return 0;
}

/* The shared expert of layer il into tmp when the layer has one (*accumulate = 1: the routed
 * experts add to tmp), else nothing (*accumulate stays 0). 0 or -1 with err. */
static int shared_expert_into_tmp(st_model *m, const st_layer_w *L, int64_t n, int *accumulate,
                                  const char *layer_txt, char *err, size_t errlen) {
    if (!L->t[ST_T_FFN_GATE_SHEXP].data) return 0;
    *accumulate = 1;
    if (!L->t[ST_T_FFN_GATE_INP_SHEXP].data) /* ungated (deepseek2) */
        return ffn_dense(m, L, ST_T_FFN_GATE_SHEXP, m->w.cur, m->w.tmp, n, layer_txt, err, errlen);
    return shared_expert(m, L, n, layer_txt, err, errlen);
}

/* Routed experts of a hybrid model after its router (model_experts.c): hits on the device
 * through the slot cache, the shared expert, misses on the CPU module, then one combine. */
static int ffn_moe_hybrid(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen) {
    const st_layer_w *L = &m->layers[il];
    const int64_t k = m->hp.n_expert_used, E = m->hp.n_embd;
    const int resident = st_model_experts_resident(m, il, n);
    if (resident ? st_model_experts_resident_ffn(m, il, n, layer_txt, err, errlen)
                 : st_model_experts_launch(m, il, n, layer_txt, err, errlen))
        return -1;
    int accumulate = 0;
    if (shared_expert_into_tmp(m, L, n, &accumulate, layer_txt, err, errlen)) return -1;
    float *rows = m->w.ed; /* [A][E] in the router's order when resident */
    int64_t n_rows = n * k;
    int32_t *row_of = m->w.ident;
    if (!resident && st_model_experts_finish(m, il, n, &rows, &n_rows, &row_of, layer_txt, err, errlen)) return -1;
    st_moe_combine_args c;
    memset(&c, 0, sizeof c);
    c.k = (int32_t)k;
    c.rows = f32(rows, E, n_rows);
    c.out = f32(m->w.tmp, E, n);
    c.row_of = row_of;
    c.weights = m->w.rw;
    c.accumulate = accumulate;
    RUN(moe_combine, c, "experts");
    return resident ? 0 : st_model_experts_admit(m, il, err, errlen);
}

/* Routed experts of a fully resident layer after its router, with the fused ops: gate, up and
 * SwiGLU in one op, the shared expert (when present) into tmp, then down projections weighted
 * and summed into tmp in one op. */
static int ffn_moe_fused(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    const st_layer_w *L = &m->layers[il];
    st_work *w = &m->w;
    const int64_t k = hp->n_expert_used, A = n * k, E = hp->n_embd, Fe = hp->n_ff_exp;
    st_moe_gate_up_args g;
    memset(&g, 0, sizeof g);
    g.n_assign = (int32_t)A;
    g.w_gate = L->t[ST_T_FFN_GATE_EXPS];
    g.w_up = L->t[ST_T_FFN_UP_EXPS];
    g.x = f32(w->cur, E, n);
    g.out = f32(w->eg, Fe, A);
    g.scratch = f32(w->eu, Fe, A);
    g.slot_table = w->slots;
    g.expert = w->rids;
    g.x_row = w->xrow;
    RUN(moe_gate_up, g, "ffn_gate_up_exps");
    int accumulate = 0;
    if (shared_expert_into_tmp(m, L, n, &accumulate, layer_txt, err, errlen)) return -1;
    st_moe_down_args d;
    memset(&d, 0, sizeof d);
    d.k = (int32_t)k;
    d.w = L->t[ST_T_FFN_DOWN_EXPS];
    d.x = f32(w->eg, Fe, A);
    d.out = f32(w->tmp, E, n);
    d.scratch = f32(w->ed, E, A);
    d.slot_table = w->slots;
    d.ids = w->rids;
    d.weights = w->rw;
    d.accumulate = accumulate;
    RUN(moe_down, d, "ffn_down_exps");
    return 0;
}

/* Per-assignment factors of the per-expert weight scale `role` ([n_expert]): *scale =
 * rlog[a] = s[rids[a]] for the A assignments (rlog is free once the router has run), or NULL
 * when the layer has none. */
static int expert_scales(st_model *m, const st_layer_w *L, int role, int64_t A, const float **scale,
                         const char *layer_txt, char *err, size_t errlen) {
    *scale = NULL;
    if (!L->t[role].data) return 0;
    st_get_rows_args g;
    memset(&g, 0, sizeof g);
    g.w = f32(L->t[role].data, 1, L->t[role].ne[0]); /* [n_expert][1] */
    g.ids = m->w.rids;                               /* [A] */
    g.out = f32(m->w.rlog, 1, A);                    /* [A][1] */
    RUN(get_rows, g, "expert scales");
    *scale = m->w.rlog;
    return 0;
}

/* rows[a][:] += b[rids[a]][:] for the A assignments, with the expert bias `role`
 * ([n_expert][M]) gathered into eb; nothing when the layer has none. */
static int expert_bias(st_model *m, const st_layer_w *L, int role, float *rows, int64_t A, const char *layer_txt,
                       char *err, size_t errlen) {
    const st_tensor *b = &L->t[role];
    if (!b->data) return 0;
    const int64_t M = b->ne[0];
    st_get_rows_args g;
    memset(&g, 0, sizeof g);
    g.w = f32(b->data, M, b->ne[1]); /* [n_expert][M] */
    g.ids = m->w.rids;               /* [A] */
    g.out = f32(m->w.eb, M, A);      /* [A][M] */
    RUN(get_rows, g, "expert bias");
    st_binary_args a;
    memset(&a, 0, sizeof a);
    a.a = f32(rows, M, A);
    a.b = g.out;
    a.out = a.a;
    RUN(add, a, "expert bias");
    return 0;
}

/* Routed experts (+ shared expert) of layer il: cur -> tmp. */
static int ffn_moe(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    const st_layer_w *L = &m->layers[il];
    st_work *w = &m->w;
    const int64_t k = hp->n_expert_used, A = n * k, E = hp->n_embd, Fe = hp->n_ff_exp;

    if (matmul(m, &L->t[ST_T_FFN_GATE_INP], w->cur, w->rlog, n, layer_txt, "ffn_gate_inp", err, errlen))
        return -1;
    if (add_bias(m, &L->t[ST_T_FFN_GATE_INP_BIAS], w->rlog, n, layer_txt, err, errlen)) return -1; /* [n][X] */
    st_router_args r;
    memset(&r, 0, sizeof r);
    r.gating = (uint32_t)hp->expert_gating;
    r.logits = f32(w->rlog, hp->n_expert, n);
    r.k = (int32_t)k;
    r.normalize = hp->expert_weights_norm;
    r.weight_scale = hp->expert_weights_scale;
    r.bias = L->t[ST_T_FFN_EXP_PROBS_B].data; /* [n_expert] selection bias, or NULL */
    r.ids = w->rids;
    r.weights = w->rw;
    if (hp->n_expert_groups > 1) { /* only the best groups of experts compete (DeepSeek-V3) */
        st_router_groups_args rg;
        memset(&rg, 0, sizeof rg);
        rg.n_group = hp->n_expert_groups;
        rg.n_group_used = hp->n_group_used;
        rg.base = r;
        rg.base.size = sizeof rg.base;
        RUN(router_groups, rg, "router");
    } else {
        RUN(router, r, "router");
    }
    if (m->hx) return ffn_moe_hybrid(m, il, n, layer_txt, err, errlen);
    if (m->count_experts && count_experts(m, il, n, err, errlen)) return -1;
    if (m->fused_moe) return ffn_moe_fused(m, il, n, layer_txt, err, errlen);

    st_moe_matmul_args g;
    memset(&g, 0, sizeof g);
    g.n_assign = (int32_t)A;
    g.w = L->t[ST_T_FFN_GATE_EXPS];
    g.x = f32(w->cur, E, n);
    g.out = f32(w->eg, Fe, A);
    g.slot_table = w->slots;
    g.expert = w->rids;
    g.x_row = w->xrow;
    if (expert_scales(m, L, ST_T_FFN_GATE_EXPS_SCALE, A, &g.scale, layer_txt, err, errlen)) return -1;
    RUN(moe_matmul, g, "ffn_gate_exps");
    g.w = L->t[ST_T_FFN_UP_EXPS];
    g.out = f32(w->eu, Fe, A);
    if (expert_scales(m, L, ST_T_FFN_UP_EXPS_SCALE, A, &g.scale, layer_txt, err, errlen)) return -1;
    RUN(moe_matmul, g, "ffn_up_exps");
    if (expert_bias(m, L, ST_T_FFN_GATE_EXPS_BIAS, w->eg, A, layer_txt, err, errlen)) return -1;
    if (expert_bias(m, L, ST_T_FFN_UP_EXPS_BIAS, w->eu, A, layer_txt, err, errlen)) return -1;
    if (hp->arch == ST_ARCH_GPTOSS) { /* eg = clamped SwiGLU(eg, eu): [A][Fe] */
        st_swiglu_oai_args o;
        memset(&o, 0, sizeof o);
        o.alpha = 1.702f; /* gpt-oss's constants (as in the reference) */
        o.limit = 7.0f;
        o.gate = f32(w->eg, Fe, A);
        o.up = f32(w->eu, Fe, A);
        o.out = o.gate;
        RUN(swiglu_oai, o, "experts");
    } else {
        st_swiglu_args s;
        memset(&s, 0, sizeof s);
        s.gate = f32(w->eg, Fe, A);
        s.up = f32(w->eu, Fe, A);
        s.out = s.gate;
        RUN(swiglu, s, "experts");
    }
    g.w = L->t[ST_T_FFN_DOWN_EXPS];
    g.x = f32(w->eg, Fe, A);
    g.out = f32(w->ed, E, A);
    g.x_row = w->ident;
    if (expert_scales(m, L, ST_T_FFN_DOWN_EXPS_SCALE, A, &g.scale, layer_txt, err, errlen)) return -1;
    RUN(moe_matmul, g, "ffn_down_exps");
    if (expert_bias(m, L, ST_T_FFN_DOWN_EXPS_BIAS, w->ed, A, layer_txt, err, errlen)) return -1;

    int accumulate = 0;
    if (shared_expert_into_tmp(m, L, n, &accumulate, layer_txt, err, errlen)) return -1;
    st_moe_combine_args c;
    memset(&c, 0, sizeof c);
    c.k = (int32_t)k;
    c.rows = f32(w->ed, E, A);
    c.out = f32(w->tmp, E, n);
    c.row_of = w->ident;
    c.weights = w->rw;
    c.accumulate = accumulate;
    RUN(moe_combine, c, "experts");
    return 0;
}

static void rope_params(const st_hparams *hp, const int32_t *d_pos, st_rope_args *r) {
    memset(r, 0, sizeof *r);
    r->size = sizeof *r;
    r->mode = (uint32_t)hp->rope_mode;
    r->pos = d_pos;
    r->n_rot = hp->n_rot;
    r->n_ctx_orig = hp->n_ctx_orig;
    r->freq_base = hp->rope_freq_base;
    r->freq_scale = hp->rope_freq_scale;
    r->ext_factor = hp->yarn_ext_factor;
    r->attn_factor = hp->yarn_attn_factor;
    r->beta_fast = hp->yarn_beta_fast;
    r->beta_slow = hp->yarn_beta_slow;
}

static st_attention_args attention_args(st_model *m, int il, float *q, float *out, int64_t n) {
    const st_hparams *hp = &m->hp;
    const int64_t N = m->p.n_batch; /* inp holds tok[N] pos[N] seq[N] kvlen[N] cell[N] out[] */
    st_attention_args at;
    memset(&at, 0, sizeof at);
    at.scale = hp->attn_scale;
    at.q = f32_3(q, hp->head_dim, hp->n_head, n);
    at.k_cache = st_kv_k(m->kv, il - m->l0);
    at.v_cache = st_kv_v(m->kv, il - m->l0);
    at.out = f32_3(out, hp->head_dim, hp->n_head, n);
    at.seq = m->w.inp + 2 * N;
    at.kv_len = m->w.inp + 3 * N;
    at.cell_table = st_kv_table_dev(m->kv);
    at.max_pos = st_kv_params_of(m->kv)->n_ctx;
    return at;
}

/* The fused attention block: one QKV matmul over the merged weight into the q|k|v block, one
 * ATTN_PREP (norms, rotation, cache write) with the rotated Q into att, attention from att into
 * the q block, and the output projection from there. */
static int attention_fused(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    const st_layer_w *L = &m->layers[il];
    st_work *w = &m->w;
    const int64_t H = hp->n_head, Hk = hp->n_head_kv, D = hp->head_dim, row = (H + 2 * Hk) * D;
    if (matmul(m, &L->qkv, w->cur, w->q, n, layer_txt, "attn_qkv", err, errlen)) return -1;
    st_attn_prep_args p;
    memset(&p, 0, sizeof p);
    p.eps = hp->rms_eps;
    p.q = f32_3(w->q, D, H, n);
    p.q.nb[2] = row * 4;
    p.q.nb[3] = p.q.nb[2] * n;
    p.k = p.q;
    p.k.data = w->q + H * D;
    p.k.ne[1] = Hk;
    p.v = p.k;
    p.v.data = w->q + (H + Hk) * D;
    if (hp->qk_norm == ST_QK_NORM_HEAD) {
        p.q_norm = L->t[ST_T_ATTN_Q_NORM];
        p.k_norm = L->t[ST_T_ATTN_K_NORM];
    }
    p.q_out = f32_3(w->att, D, H, n);
    p.k_cache = st_kv_k(m->kv, il - m->l0);
    p.v_cache = st_kv_v(m->kv, il - m->l0);
    p.cells = w->inp + 4 * m->p.n_batch;
    rope_params(hp, w->inp + m->p.n_batch, &p.rope);
    RUN(attn_prep, p, "attention prologue");
    st_attention_args at = attention_args(m, il, w->att, w->q, n);
    RUN(attention, at, "attention");
    return project(m, L, ST_T_ATTN_OUT, w->q, w->tmp, n, layer_txt, "attn_output", err, errlen);
}

static int attention_mla(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen);

static int attention(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    const st_layer_w *L = &m->layers[il];
    st_work *w = &m->w;
    const int64_t H = hp->n_head, Hk = hp->n_head_kv, D = hp->head_dim;
    const int64_t N = m->p.n_batch; /* inp holds tok[N] pos[N] seq[N] kvlen[N] cell[N] out[] */
    int32_t *d_pos = w->inp + N, *d_cell = w->inp + 4 * N;

    if (hp->n_lora_kv > 0) return attention_mla(m, il, n, layer_txt, err, errlen);
    const int plain_qkv = !L->t[ST_T_ATTN_Q_BIAS].data && !L->t[ST_T_ATTN_K_BIAS].data &&
                          !L->t[ST_T_ATTN_V_BIAS].data && L->scale[ST_T_ATTN_Q] == 1.0f &&
                          L->scale[ST_T_ATTN_K] == 1.0f && L->scale[ST_T_ATTN_V] == 1.0f;
    if (m->fused_attn && L->qkv.data && hp->qk_norm != ST_QK_NORM_FULL && plain_qkv)
        return attention_fused(m, il, n, layer_txt, err, errlen);
    if (project(m, L, ST_T_ATTN_Q, w->cur, w->q, n, layer_txt, "attn_q", err, errlen)) return -1; /* [n][H*D] */
    if (project(m, L, ST_T_ATTN_K, w->cur, w->k, n, layer_txt, "attn_k", err, errlen)) return -1; /* [n][Hk*D] */
    if (project(m, L, ST_T_ATTN_V, w->cur, w->v, n, layer_txt, "attn_v", err, errlen)) return -1; /* [n][Hk*D] */
    if (add_bias(m, &L->t[ST_T_ATTN_Q_BIAS], w->q, n, layer_txt, err, errlen)) return -1;
    if (add_bias(m, &L->t[ST_T_ATTN_K_BIAS], w->k, n, layer_txt, err, errlen)) return -1;
    if (add_bias(m, &L->t[ST_T_ATTN_V_BIAS], w->v, n, layer_txt, err, errlen)) return -1;
    if (hp->qk_norm == ST_QK_NORM_HEAD) {
        if (norm(m, w->q, NULL, &L->t[ST_T_ATTN_Q_NORM], w->q, n * H, D, layer_txt, err, errlen)) return -1;
        if (norm(m, w->k, NULL, &L->t[ST_T_ATTN_K_NORM], w->k, n * Hk, D, layer_txt, err, errlen)) return -1;
    } else if (hp->qk_norm == ST_QK_NORM_FULL) {
        if (norm(m, w->q, NULL, &L->t[ST_T_ATTN_Q_NORM], w->q, n, H * D, layer_txt, err, errlen)) return -1;
        if (norm(m, w->k, NULL, &L->t[ST_T_ATTN_K_NORM], w->k, n, Hk * D, layer_txt, err, errlen)) return -1;
    }
    st_rope_args r;
    rope_params(hp, d_pos, &r);
    if (st_hparams_is_swa(hp, il)) r.freq_base = hp->rope_freq_base_swa;
    r.x = f32_3(w->q, D, H, n);
    r.out = r.x;
    RUN(rope, r, "rope q");
    r.x = f32_3(w->k, D, Hk, n);
    r.out = r.x;
    RUN(rope, r, "rope k");

    st_kv_write_args kw;
    memset(&kw, 0, sizeof kw);
    kw.k = f32_3(w->k, D, Hk, n);
    kw.v = f32_3(w->v, D, Hk, n);
    kw.k_cache = st_kv_k(m->kv, il - m->l0);
    kw.v_cache = st_kv_v(m->kv, il - m->l0);
    kw.cells = d_cell;
    RUN(kv_write, kw, "kv");

    st_attention_args at = attention_args(m, il, w->q, w->att, n);
    if (hp->arch == ST_ARCH_GPTOSS) { /* per-head sinks; sliding window on its layers */
        st_attention_ex_args ax;
        memset(&ax, 0, sizeof ax);
        ax.base = at;
        ax.base.size = sizeof ax.base;
        ax.window = st_hparams_is_swa(hp, il) ? hp->n_swa : 0;
        ax.sinks = L->t[ST_T_ATTN_SINKS].data; /* [H] */
        RUN(attention_ex, ax, "attention");
    } else {
        RUN(attention, at, "attention");
    }
    if (project(m, L, ST_T_ATTN_OUT, w->att, w->tmp, n, layer_txt, "attn_output", err, errlen)) return -1;
    return add_bias(m, &L->t[ST_T_ATTN_OUT_BIAS], w->tmp, n, layer_txt, err, errlen); /* [n][E] */
}

/* An F32 view [ne2][ne1][ne0] of rows `row` floats apart and planes `plane` floats apart. */
static st_tensor strided(float *p, int64_t ne0, int64_t ne1, int64_t ne2, int64_t row, int64_t plane) {
    st_tensor t = f32_3(p, ne0, ne1, ne2);
    t.nb[1] = row * 4;
    t.nb[2] = plane * 4;
    t.nb[3] = t.nb[2] * ne2;
    return t;
}

/* The latent c = [rmsnorm(latent) (Lkv) | rope(k_rope) (R)] in place in k ([n][Lkv + R]). */
static int mla_latent(st_model *m, const st_layer_w *L, int64_t n, const char *layer_txt, char *err,
                      size_t errlen) {
    const st_hparams *hp = &m->hp;
    const int64_t D = hp->head_dim, Lkv = hp->n_lora_kv, R = hp->n_rot;
    st_rms_norm_args a;
    memset(&a, 0, sizeof a);
    a.eps = m->hp.rms_eps;
    a.x = strided(m->w.k, Lkv, n, 1, D, D * n); /* [n][Lkv] of rows D apart */
    a.out = a.x;
    a.weight = L->t[ST_T_ATTN_KV_A_NORM];
    RUN(rms_norm, a, "attn_kv_a_norm");
    st_rope_args r;
    rope_params(hp, m->w.inp + m->p.n_batch, &r);
    r.x = strided(m->w.k + Lkv, R, 1, n, D, D); /* [n][1][R] */
    r.out = r.x;
    RUN(rope, r, "rope k");
    return 0;
}

/* Per-head matmul out[t][h] = W[h] . x[t][h] over the n*H (token, head) rows, as a grouped
 * matmul whose "experts" are the heads. x rows are xs floats apart, out rows os apart. */
static int per_head(st_model *m, const st_tensor *w, float *x, int64_t xs, float *out, int64_t os, int64_t n,
                    const char *layer_txt, const char *what, char *err, size_t errlen) {
    const int64_t nh = n * m->hp.n_head;
    st_moe_matmul_args g;
    memset(&g, 0, sizeof g);
    g.n_assign = (int32_t)nh;
    g.w = *w;                                     /* [H][M][K] */
    g.x = strided(x, w->ne[0], nh, 1, xs, xs * nh);  /* [n*H][K] */
    g.out = strided(out, w->ne[1], nh, 1, os, os * nh); /* [n*H][M] */
    g.slot_table = m->w.hslots;
    g.expert = m->w.hid;
    g.x_row = m->w.hrow;
    RUN(moe_matmul, g, what);
    return 0;
}

/* Multi-head latent attention (deepseek2) with K absorbed into Q; per token:
 *   q    = W_qb rmsnorm(W_qa x)   [H][Dq], Dq = nope + R   (or W_q x)
 *   c    = [rmsnorm(latent) | rope(k_rope)] from W_kva x   [Lkv + R]: the cached row
 *   q'_h = [W_kb[h] . q_nope_h | rope(q_rope_h)]           [Lkv + R]
 *   o_h  = sum_j softmax_j(scale q'_h . c_j) c_j[:Lkv]      (V = the latent)
 *   out  = W_o [W_vb[h] . o_h]_h
 * att holds q_a then q'; q holds q then the attention output; k holds c. */
static int attention_mla(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    const st_layer_w *L = &m->layers[il];
    st_work *w = &m->w;
    const int64_t H = hp->n_head, D = hp->head_dim, R = hp->n_rot, Lkv = hp->n_lora_kv;
    const int64_t Dq = hp->mla_k, nope = Dq - R;
    if (hp->n_lora_q > 0) {
        if (matmul(m, &L->t[ST_T_ATTN_Q_A], w->cur, w->att, n, layer_txt, "attn_q_a", err, errlen)) return -1;
        if (norm(m, w->att, NULL, &L->t[ST_T_ATTN_Q_A_NORM], w->att, n, hp->n_lora_q, layer_txt, err, errlen))
            return -1; /* [n][Lq] */
        if (matmul(m, &L->t[ST_T_ATTN_Q_B], w->att, w->q, n, layer_txt, "attn_q_b", err, errlen)) return -1;
    } else if (matmul(m, &L->t[ST_T_ATTN_Q], w->cur, w->q, n, layer_txt, "attn_q", err, errlen)) {
        return -1; /* q: [n][H][Dq] */
    }
    if (matmul(m, &L->t[ST_T_ATTN_KV_A_MQA], w->cur, w->k, n, layer_txt, "attn_kv_a_mqa", err, errlen)) return -1;
    if (mla_latent(m, L, n, layer_txt, err, errlen)) return -1; /* k: [n][1][D] */
    /* q' = [W_kb q_nope | rope(q_rope)]: [n][H][D] in att */
    if (per_head(m, &L->t[ST_T_ATTN_K_B], w->q, Dq, w->att, D, n, layer_txt, "attn_k_b", err, errlen)) return -1;
    st_rope_args r;
    rope_params(hp, w->inp + m->p.n_batch, &r);
    r.x = strided(w->q + nope, R, H, n, Dq, H * Dq);
    r.out = strided(w->att + Lkv, R, H, n, D, H * D);
    RUN(rope, r, "rope q");
    st_kv_write_args kw;
    memset(&kw, 0, sizeof kw);
    kw.k = f32_3(w->k, D, 1, n);
    kw.v = kw.k; /* the V cache is the K cache (k_only): attention reads V = c */
    kw.k_cache = st_kv_k(m->kv, il - m->l0);
    kw.v_cache = st_kv_v(m->kv, il - m->l0);
    kw.cells = w->inp + 4 * m->p.n_batch;
    RUN(kv_write, kw, "kv");
    st_attention_args at = attention_args(m, il, w->att, w->q, n); /* o: [n][H][D] in q */
    RUN(attention, at, "attention");
    /* W_vb o_h over the first Lkv values of each head's output: [n][H*mla_v] in att */
    if (per_head(m, &L->t[ST_T_ATTN_V_B], w->q, D, w->att, hp->mla_v, n, layer_txt, "attn_v_b", err, errlen))
        return -1;
    return project(m, L, ST_T_ATTN_OUT, w->att, w->tmp, n, layer_txt, "attn_output", err, errlen);
}

/* Host side of a batch: cells, causal lengths, output rows; one upload. */
static int prepare(st_model *m, const st_batch *b, int32_t *n_out, char *err, size_t errlen) {
    const int64_t N = m->p.n_batch;
    /* the previous forward's uploads borrowed inp_host and the KV table rows: on an
     * asynchronous stream they may still be in flight */
    if (st_dev_sync(&m->dev, m->stream) != ST_OK) {
        snprintf(err, errlen, "before the batch: %s", st_dev_error());
        return -1;
    }
    int32_t *h = m->w.inp_host;
    int32_t *tok = h, *pos = h + N, *seq = h + 2 * N, *kvlen = h + 3 * N, *cell = h + 4 * N, *out = h + 5 * N;
    int32_t *len0 = m->seq_len0, *len = m->seq_len_run;
    for (int32_t s = 0; s < m->p.n_seq; s++) len0[s] = len[s] = st_kv_seq_len(m->kv, s);
    /* check the whole batch first: a refused batch leaves the cache as it was */
    int32_t no = 0;
    for (int32_t i = 0; i < b->n; i++) {
        int32_t t = b->token[i], p = b->pos[i], s = b->seq ? b->seq[i] : 0;
        if (t < 0 || t >= m->hp.n_vocab) {
            snprintf(err, errlen, "token %d at batch row %d is outside the vocabulary (%d)", t, i, m->hp.n_vocab);
            return -1;
        }
        if (s < 0 || s >= m->p.n_seq) {
            snprintf(err, errlen, "sequence %d at batch row %d: the cache holds %d sequence(s)", s, i, m->p.n_seq);
            return -1;
        }
        if (p < 0 || p >= m->p.n_ctx) {
            snprintf(err, errlen, "position %d at batch row %d is outside the context (%d)", p, i, m->p.n_ctx);
            return -1;
        }
        if (p > len[s]) {
            snprintf(err, errlen, "position %d of sequence %d leaves a gap (the cache holds %d positions)", p, s,
                     len[s]);
            return -1;
        }
        if (p + 1 > len[s]) len[s] = p + 1;
        int want = b->logits ? b->logits[i] != 0 : i == b->n - 1;
        if (want) {
            if (no >= m->p.n_out_max) {
                snprintf(err, errlen, "batch asks for more than %d logit rows", m->p.n_out_max);
                return -1;
            }
            out[no++] = i;
        }
    }
    for (int32_t i = 0; i < b->n; i++) {
        int32_t p = b->pos[i], s = b->seq ? b->seq[i] : 0;
        int32_t c = st_kv_cell(m->kv, s, p);
        if (c < 0) {
            for (int32_t q = 0; q < m->p.n_seq; q++) st_kv_seq_truncate(m->kv, q, len0[q]);
            snprintf(err, errlen, "KV cache full: no free cell for sequence %d position %d", s, p);
            return -1;
        }
        tok[i] = b->token[i];
        pos[i] = p;
        seq[i] = s;
        kvlen[i] = p + 1;
        cell[i] = c;
    }
    *n_out = no;
    /* pad unused rows so every device array is defined */
    st_status s = st_dev_h2d(&m->dev, m->stream, m->w.inp, h, (uint64_t)(5 * N + m->p.n_out_max) * sizeof(int32_t));
    if (s == ST_OK) s = st_kv_sync(m->kv, m->stream);
    if (s != ST_OK) {
        snprintf(err, errlen, "uploading the batch: %s", st_dev_error());
        return -1;
    }
    return 0;
}

/* The device ops of a step whose inputs prepare() uploaded (captured as a graph at decode): the
 * stage's layers, with the embedding on the first stage and the output on the last. */
static int forward_ops(st_model *m, int64_t n, int32_t n_out, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    st_work *w = &m->w;
    const char *layer_txt = "";
    char lt[32];
    const int64_t E = hp->n_embd, N = m->p.n_batch;
    st_get_rows_args g;
    if (m->first) {
        memset(&g, 0, sizeof g);
        g.w = m->tok_embd;
        g.ids = w->inp;
        g.out = f32(w->x, E, n);
        RUN(get_rows, g, "token_embd");
    }
    for (int il = m->l0; il < m->l1; il++) {
        snprintf(lt, sizeof lt, "layer %d: ", il);
        layer_txt = lt;
        const st_layer_w *L = &m->layers[il];
        /* il == 0: cur = norm(x); else x += tmp (previous block), cur = norm(x) */
        if (norm(m, il ? w->tmp : w->x, il ? w->x : NULL, &L->t[ST_T_ATTN_NORM], w->cur, n, E, layer_txt, err,
                 errlen))
            return -1;
        if (attention(m, il, n, layer_txt, err, errlen)) return -1;
        if (norm(m, w->tmp, w->x, &L->t[ST_T_FFN_NORM], w->cur, n, E, layer_txt, err, errlen)) return -1;
        if (m->desc->layers[il].is_moe) {
            if (ffn_moe(m, il, n, layer_txt, err, errlen)) return -1;
        } else if (ffn_dense(m, L, ST_T_FFN_GATE, w->cur, w->tmp, n, layer_txt, err, errlen)) {
            return -1;
        }
    }
    if (!m->last) return 0;
    layer_txt = "output: ";
    if (norm(m, w->tmp, w->x, &m->output_norm, w->cur, n, E, layer_txt, err, errlen)) return -1;
    if (n_out > 0) {
        memset(&g, 0, sizeof g);
        g.w = f32(w->cur, E, n);
        g.ids = w->inp + 5 * N;
        g.out = f32(w->sel, E, n_out);
        RUN(get_rows, g, "output rows");
        if (matmul(m, &m->output, w->sel, w->logits, n_out, layer_txt, "output", err, errlen)) return -1;
    }
    return 0;
}

/* One stage's step: its ops (a graph at decode), then, in a split model, the wait for them
 * (timed per device) and the hidden state's move to the next stage. */
static int stage_step(st_model *s, int64_t n, int32_t n_out, int split, char *err, size_t errlen) {
    const uint64_t t0 = split ? st_now_ns() : 0;
    if (s->hx) st_model_experts_step(s, n);
    int rc = 0;
    if (!st_model_graph_run(s, n, n_out, forward_ops, &rc, err, errlen)) rc = forward_ops(s, n, n_out, err, errlen);
    if (rc || !split) return rc;
    if (st_dev_sync(&s->dev, s->stream) != ST_OK) {
        snprintf(err, errlen, "layers %d-%d: %s", s->l0, s->l1 - 1, st_dev_error());
        return -1;
    }
    s->busy_s += (double)(st_now_ns() - t0) / 1e9;
    return s->next ? st_model_pass_hidden(s, n, err, errlen) : 0;
}

int st_model_forward(st_model *m, const st_batch *b, char *err, size_t errlen) {
    st_model *tail = st_model_tail(m);
    m->n_out = tail->n_out = 0;
    if (!b || b->n <= 0 || b->n > m->p.n_batch) {
        snprintf(err, errlen, "batch of %d tokens (must be 1..%d)", b ? b->n : 0, m->p.n_batch);
        return -1;
    }
    /* every stage takes the batch's cells in its own cache (the same cells: the caches have one
       geometry and see the same positions); a refusal on a later stage rolls the earlier back */
    int32_t n_out = 0;
    for (st_model *s = m; s; s = s->next)
        if (prepare(s, b, &n_out, err, errlen)) {
            for (st_model *r = m; r != s; r = r->next)
                for (int32_t q = 0; q < r->p.n_seq; q++) st_kv_seq_truncate(r->kv, q, r->seq_len0[q]);
            return -1;
        }
    for (st_model *s = m; s; s = s->next)
        if (stage_step(s, b->n, n_out, m->next != NULL, err, errlen)) return -1;
    m->n_out = tail->n_out = n_out;
    return 0;
}

/* Copies bytes of a device buffer of the last forward to dst; 0 or -1 with err. */
static int read_out(st_model *m, void *dst, const void *src, uint64_t bytes, const char *what, char *err, size_t errlen) {
    st_status s = st_dev_d2h(&m->dev, m->stream, dst, src, bytes);
    if (s == ST_OK) s = st_dev_sync(&m->dev, m->stream);
    if (s != ST_OK) {
        snprintf(err, errlen, "reading %s: %s", what, st_dev_error());
        return -1;
    }
    return 0;
}

int st_model_logits(st_model *m, float *dst, char *err, size_t errlen) {
    m = st_model_tail(m);
    uint64_t bytes = (uint64_t)m->n_out * (uint64_t)m->hp.n_vocab * sizeof(float);
    return read_out(m, dst, m->w.logits, bytes, "logits", err, errlen);
}

int st_model_hidden(st_model *m, int32_t n, float *dst, char *err, size_t errlen) {
    /* forward_ops leaves the output norm of every batch row in the last stage's w.cur: [n][E] */
    m = st_model_tail(m);
    uint64_t bytes = (uint64_t)n * (uint64_t)m->hp.n_embd * sizeof(float);
    return read_out(m, dst, m->w.cur, bytes, "hidden states", err, errlen);
}

static int topk_common(st_model *m, int32_t k, int32_t *ids, float *vals, char *err, size_t errlen) {
    m = st_model_tail(m);
    const char *layer_txt = "";
    const int argmax = k == 1 && !vals;
    if (k < 1 || k > m->p.topk_max) {
        snprintf(err, errlen, "top-k of %d (must be 1..%d)", k, m->p.topk_max);
        return -1;
    }
    if (m->n_out == 0) return 0;
    st_topk_args a;
    memset(&a, 0, sizeof a);
    a.k = k;
    a.x = f32(m->w.logits, m->hp.n_vocab, m->n_out);
    a.ids = m->w.oid;
    a.values = vals ? m->w.oval : NULL;
    if (argmax) {
        if (!st_dev_has_op(&m->dev, ST_OP_ARGMAX)) goto host;
        RUN(argmax, a, "logits");
    } else {
        if (!st_dev_has_op(&m->dev, ST_OP_TOPK)) goto host;
        RUN(topk, a, "logits");
    }
    uint64_t nb = (uint64_t)m->n_out * (uint64_t)k * sizeof(int32_t);
    st_status s = st_dev_d2h(&m->dev, m->stream, ids, m->w.oid, nb);
    if (s == ST_OK && vals) s = st_dev_d2h(&m->dev, m->stream, vals, m->w.oval, nb);
    if (s == ST_OK) s = st_dev_sync(&m->dev, m->stream);
    if (s != ST_OK) {
        snprintf(err, errlen, "reading top-k: %s", st_dev_error());
        return -1;
    }
    return 0;
host: {
    /* the module lacks the op: read the logits and select on the host */
    const int64_t V = m->hp.n_vocab;
    float *l = malloc((size_t)m->n_out * (size_t)V * sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    if (st_model_logits(m, l, err, errlen)) {
        free(l);
        return -1;
    }
    for (int32_t r = 0; r < m->n_out; r++) {
        const float *row = l + (size_t)r * (size_t)V;
        int32_t *ri = ids + (size_t)r * (size_t)k;
        float *rv = vals ? vals + (size_t)r * (size_t)k : NULL;
        int32_t have = 0;
        for (int64_t j = 0; j < V; j++) { /* insertion into a sorted list of k */
            float x = row[j];
            int32_t at = have;
            while (at > 0 && row[ri[at - 1]] < x) at--;
            if (at >= k) continue;
            int32_t last = have < k ? have : k - 1;
            for (int32_t q = last; q > at; q--) ri[q] = ri[q - 1];
            ri[at] = (int32_t)j;
            if (have < k) have++;
        }
        if (rv)
            for (int32_t q = 0; q < k; q++) rv[q] = row[ri[q]];
    }
    free(l);
    return 0;
}
}

int st_model_argmax(st_model *m, int32_t *ids, char *err, size_t errlen) {
    return topk_common(m, 1, ids, NULL, err, errlen);
}

int st_model_topk(st_model *m, int32_t k, int32_t *ids, float *vals, char *err, size_t errlen) {
    return topk_common(m, k, ids, vals, err, errlen);
}

int st_model_eval(st_model *m, int32_t seq, const int32_t *tokens, int32_t n, int32_t pos0, int all_logits,
                  float *out, char *err, size_t errlen) {
    const int32_t B = m->p.n_batch;
    if (all_logits && m->p.n_out_max < B) {
        snprintf(err, errlen, "all logits need n_out_max >= n_batch (%d < %d)", m->p.n_out_max, B);
        return -1;
    }
    int32_t *pos = malloc((size_t)B * sizeof *pos), *sq = malloc((size_t)B * sizeof *sq);
    int8_t *want = malloc((size_t)B);
    int rc = 0;
    if (!pos || !sq || !want) {
        snprintf(err, errlen, "out of host memory");
        rc = -1;
    }
    for (int32_t i0 = 0; rc == 0 && i0 < n; i0 += B) {
        int32_t c = n - i0 < B ? n - i0 : B;
        for (int32_t i = 0; i < c; i++) {
            pos[i] = pos0 + i0 + i;
            sq[i] = seq;
            want[i] = all_logits ? 1 : (i0 + i == n - 1);
        }
        st_batch b = {c, tokens + i0, pos, sq, want};
        rc = st_model_forward(m, &b, err, errlen);
        if (rc == 0 && all_logits)
            rc = st_model_logits(m, out + (size_t)i0 * (size_t)m->hp.n_vocab, err, errlen);
    }
    free(pos);
    free(sq);
    free(want);
    return rc;
}
