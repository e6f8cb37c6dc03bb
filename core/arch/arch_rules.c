/* SPDX-License-Identifier: Apache-2.0 */
/* Per-family rules and the expected tensor table of each family. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch/arch.h"

static const char *const k_arch_names[ST_ARCH_COUNT] = {
    [ST_ARCH_LLAMA] = "llama",       [ST_ARCH_QWEN2] = "qwen2",
    [ST_ARCH_QWEN3] = "qwen3",       [ST_ARCH_QWEN2MOE] = "qwen2moe",
    [ST_ARCH_QWEN3MOE] = "qwen3moe", [ST_ARCH_OLMOE] = "olmoe",
    [ST_ARCH_DEEPSEEK2] = "deepseek2", [ST_ARCH_GLM4MOE] = "glm4moe",
    [ST_ARCH_GPTOSS] = "gpt-oss",
};

static const char *const k_role_names[ST_T_ROLE_COUNT] = {
    [ST_T_TOKEN_EMBD] = "token_embd.weight",
    [ST_T_OUTPUT_NORM] = "output_norm.weight",
    [ST_T_OUTPUT] = "output.weight",
    [ST_T_ATTN_NORM] = "attn_norm.weight",
    [ST_T_ATTN_Q] = "attn_q.weight",
    [ST_T_ATTN_K] = "attn_k.weight",
    [ST_T_ATTN_V] = "attn_v.weight",
    [ST_T_ATTN_OUT] = "attn_output.weight",
    [ST_T_ATTN_Q_BIAS] = "attn_q.bias",
    [ST_T_ATTN_K_BIAS] = "attn_k.bias",
    [ST_T_ATTN_V_BIAS] = "attn_v.bias",
    [ST_T_ATTN_Q_NORM] = "attn_q_norm.weight",
    [ST_T_ATTN_K_NORM] = "attn_k_norm.weight",
    [ST_T_FFN_NORM] = "ffn_norm.weight",
    [ST_T_FFN_GATE] = "ffn_gate.weight",
    [ST_T_FFN_UP] = "ffn_up.weight",
    [ST_T_FFN_DOWN] = "ffn_down.weight",
    [ST_T_FFN_GATE_INP] = "ffn_gate_inp.weight",
    [ST_T_FFN_GATE_EXPS] = "ffn_gate_exps.weight",
    [ST_T_FFN_UP_EXPS] = "ffn_up_exps.weight",
    [ST_T_FFN_DOWN_EXPS] = "ffn_down_exps.weight",
    [ST_T_FFN_GATE_INP_SHEXP] = "ffn_gate_inp_shexp.weight",
    [ST_T_FFN_GATE_SHEXP] = "ffn_gate_shexp.weight",
    [ST_T_FFN_UP_SHEXP] = "ffn_up_shexp.weight",
    [ST_T_FFN_DOWN_SHEXP] = "ffn_down_shexp.weight",
    [ST_T_ATTN_Q_SCALE] = "attn_q.scale",
    [ST_T_ATTN_K_SCALE] = "attn_k.scale",
    [ST_T_ATTN_V_SCALE] = "attn_v.scale",
    [ST_T_ATTN_OUT_SCALE] = "attn_output.scale",
    [ST_T_FFN_GATE_SCALE] = "ffn_gate.scale",
    [ST_T_FFN_UP_SCALE] = "ffn_up.scale",
    [ST_T_FFN_DOWN_SCALE] = "ffn_down.scale",
    [ST_T_FFN_GATE_SHEXP_SCALE] = "ffn_gate_shexp.scale",
    [ST_T_FFN_UP_SHEXP_SCALE] = "ffn_up_shexp.scale",
    [ST_T_FFN_DOWN_SHEXP_SCALE] = "ffn_down_shexp.scale",
    [ST_T_FFN_GATE_EXPS_SCALE] = "ffn_gate_exps.scale",
    [ST_T_FFN_UP_EXPS_SCALE] = "ffn_up_exps.scale",
    [ST_T_FFN_DOWN_EXPS_SCALE] = "ffn_down_exps.scale",
    [ST_T_ATTN_Q_A] = "attn_q_a.weight",
    [ST_T_ATTN_Q_A_NORM] = "attn_q_a_norm.weight",
    [ST_T_ATTN_Q_B] = "attn_q_b.weight",
    [ST_T_ATTN_KV_A_MQA] = "attn_kv_a_mqa.weight",
    [ST_T_ATTN_KV_A_NORM] = "attn_kv_a_norm.weight",
    [ST_T_ATTN_K_B] = "attn_k_b.weight",
    [ST_T_ATTN_V_B] = "attn_v_b.weight",
    [ST_T_FFN_EXP_PROBS_B] = "exp_probs_b.bias",
    [ST_T_FFN_GATE_UP_EXPS] = "ffn_gate_up_exps.weight",
    [ST_T_ATTN_OUT_BIAS] = "attn_output.bias",
    [ST_T_ATTN_SINKS] = "attn_sinks.weight",
    [ST_T_FFN_GATE_INP_BIAS] = "ffn_gate_inp.bias",
    [ST_T_FFN_GATE_EXPS_BIAS] = "ffn_gate_exps.bias",
    [ST_T_FFN_UP_EXPS_BIAS] = "ffn_up_exps.bias",
    [ST_T_FFN_DOWN_EXPS_BIAS] = "ffn_down_exps.bias",
};

/* Which optional tensors each family's forward reads (facts of llama.cpp's implementation:
 * it creates Q/K/V biases and every weight's ".scale"/".input_scale" for all of them, but
 * only some graphs use them; "input_scale" is used by none). */
typedef struct family_uses {
    unsigned qkv_bias : 1;    /* attn_{q,k,v}.bias */
    unsigned qkv_scale : 1;   /* attn_{q,k,v}.scale */
    unsigned ffn_scale : 1;   /* ffn_{gate,up,down}.scale (dense layers) */
    unsigned exps_scale : 1;  /* ffn_{gate,up,down}_exps.scale */
    unsigned shexp_scale : 1; /* ffn_{gate,up,down}_shexp.scale */
} family_uses;

static const family_uses k_uses[ST_ARCH_COUNT] = {
    [ST_ARCH_LLAMA] = {1, 1, 1, 1, 0},
    [ST_ARCH_QWEN2] = {1, 1, 0, 0, 0},
    [ST_ARCH_QWEN3] = {1, 1, 1, 0, 0},
    [ST_ARCH_QWEN2MOE] = {1, 1, 0, 0, 0},
    [ST_ARCH_QWEN3MOE] = {1, 1, 0, 1, 0},
    [ST_ARCH_OLMOE] = {0, 0, 0, 0, 0},
    [ST_ARCH_DEEPSEEK2] = {0, 0, 0, 0, 0},
    [ST_ARCH_GLM4MOE] = {1, 1, 0, 0, 0},
    [ST_ARCH_GPTOSS] = {1, 1, 0, 0, 0},
};

int st_arch_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < ST_ARCH_COUNT; i++)
        if (!strcmp(name, k_arch_names[i])) return i;
    return -1;
}

const char *st_arch_name(int arch) {
    return (arch >= 0 && arch < ST_ARCH_COUNT) ? k_arch_names[arch] : "?";
}

const char *st_tensor_role_name(st_tensor_role role) {
    return ((int)role >= 0 && role < ST_T_ROLE_COUNT) ? k_role_names[role] : "?";
}

int st_tensor_role_is_expert(st_tensor_role role) {
    return role == ST_T_FFN_GATE_EXPS || role == ST_T_FFN_UP_EXPS || role == ST_T_FFN_DOWN_EXPS ||
           role == ST_T_FFN_GATE_UP_EXPS;
}

int st_tensor_role_is_vector(st_tensor_role r) {
    switch (r) {
    case ST_T_OUTPUT_NORM: case ST_T_ATTN_NORM: case ST_T_FFN_NORM: case ST_T_ATTN_Q_NORM:
    case ST_T_ATTN_K_NORM: case ST_T_ATTN_Q_BIAS: case ST_T_ATTN_K_BIAS: case ST_T_ATTN_V_BIAS:
    case ST_T_ATTN_Q_A_NORM: case ST_T_ATTN_KV_A_NORM: case ST_T_FFN_EXP_PROBS_B:
    case ST_T_ATTN_OUT_BIAS: case ST_T_ATTN_SINKS: case ST_T_FFN_GATE_INP_BIAS: case ST_T_FFN_GATE_EXPS_BIAS:
    case ST_T_FFN_UP_EXPS_BIAS: case ST_T_FFN_DOWN_EXPS_BIAS:
        return 1;
    default: return r >= ST_T_ATTN_Q_SCALE && r <= ST_T_FFN_DOWN_EXPS_SCALE;
    }
}

int st_tensor_role_scale_of(st_tensor_role r) {
    switch (r) {
    case ST_T_ATTN_Q: return ST_T_ATTN_Q_SCALE;
    case ST_T_ATTN_K: return ST_T_ATTN_K_SCALE;
    case ST_T_ATTN_V: return ST_T_ATTN_V_SCALE;
    case ST_T_ATTN_OUT: return ST_T_ATTN_OUT_SCALE;
    case ST_T_FFN_GATE: return ST_T_FFN_GATE_SCALE;
    case ST_T_FFN_UP: return ST_T_FFN_UP_SCALE;
    case ST_T_FFN_DOWN: return ST_T_FFN_DOWN_SCALE;
    case ST_T_FFN_GATE_SHEXP: return ST_T_FFN_GATE_SHEXP_SCALE;
    case ST_T_FFN_UP_SHEXP: return ST_T_FFN_UP_SHEXP_SCALE;
    case ST_T_FFN_DOWN_SHEXP: return ST_T_FFN_DOWN_SHEXP_SCALE;
    case ST_T_FFN_GATE_EXPS: return ST_T_FFN_GATE_EXPS_SCALE;
    case ST_T_FFN_UP_EXPS: return ST_T_FFN_UP_EXPS_SCALE;
    case ST_T_FFN_DOWN_EXPS: return ST_T_FFN_DOWN_EXPS_SCALE;
    default: return -1;
    }
}

int st_hparams_is_swa(const st_hparams *hp, int il) {
    return hp->n_swa > 0 && hp->swa_period > 0 && il % hp->swa_period < hp->swa_period - 1;
}

int st_arch_is_moe_family(int a) {
    return a == ST_ARCH_QWEN2MOE || a == ST_ARCH_QWEN3MOE || a == ST_ARCH_OLMOE || a == ST_ARCH_DEEPSEEK2 ||
           a == ST_ARCH_GLM4MOE || a == ST_ARCH_GPTOSS;
}

void st_arch_apply_family_rules(st_hparams *hp) {
    snprintf(hp->arch_name, sizeof hp->arch_name, "%s", st_arch_name(hp->arch));
    hp->rope_mode = (hp->arch == ST_ARCH_LLAMA || hp->arch == ST_ARCH_DEEPSEEK2) ? ST_ROPE_NORMAL : ST_ROPE_NEOX;
    switch (hp->arch) {
    case ST_ARCH_QWEN3:
    case ST_ARCH_QWEN3MOE: hp->qk_norm = ST_QK_NORM_HEAD; break;
    case ST_ARCH_OLMOE: hp->qk_norm = ST_QK_NORM_FULL; break;
    case ST_ARCH_GLM4MOE: break; /* per-head when the file has the norms (st_arch_describe) */
    default: hp->qk_norm = ST_QK_NORM_NONE; break;
    }
    if (hp->arch != ST_ARCH_GLM4MOE && hp->arch != ST_ARCH_GPTOSS) /* optional: from the file (or generator) */
        hp->has_qkv_bias = hp->arch == ST_ARCH_QWEN2 || hp->arch == ST_ARCH_QWEN2MOE;
    const int own_gating = hp->arch == ST_ARCH_DEEPSEEK2 || hp->arch == ST_ARCH_GLM4MOE;
    if (!own_gating) { /* deepseek2 and glm4moe read their gating from the file */
        hp->expert_gating = ST_ROUTER_SOFTMAX;
        /* Mixtral (llama MoE) and qwen3moe renormalize the top-k weights; qwen2moe and olmoe
         * keep the softmax probabilities (norm_topk_prob false in their configs). */
        hp->expert_weights_norm = hp->arch == ST_ARCH_LLAMA || hp->arch == ST_ARCH_QWEN3MOE;
    }
    if (hp->expert_weights_scale == 0.0f) hp->expert_weights_scale = 1.0f;
    if (hp->arch != ST_ARCH_QWEN2MOE && !own_gating) hp->n_ff_shexp = 0;
    if (!own_gating) hp->n_dense_lead = 0;
    if (hp->arch != ST_ARCH_GLM4MOE) hp->n_nextn = 0;
    if (hp->arch != ST_ARCH_GPTOSS) hp->n_swa = hp->swa_period = 0;
    if (hp->rope_freq_base_swa <= 0.0f) hp->rope_freq_base_swa = hp->rope_freq_base;
    if (hp->arch == ST_ARCH_GPTOSS) { /* softmax over the chosen experts' logits */
        hp->expert_gating = ST_ROUTER_SOFTMAX;
        hp->expert_weights_norm = 1;
    }
    if (hp->n_expert == 0) hp->n_expert_used = 0;
    if (hp->arch != ST_ARCH_DEEPSEEK2) {
        hp->n_expert_groups = hp->n_group_used = 0;
        hp->n_lora_q = hp->n_lora_kv = hp->mla_k = hp->mla_v = 0;
    } else {
        hp->n_head_kv = 1; /* one latent row per token, shared by every head */
        hp->head_dim = hp->head_dim_v = hp->n_lora_kv + hp->n_rot;
    }
    /* MLA scores Q and K of mla_k dimensions (before absorption) */
    const int32_t dk = hp->n_lora_kv > 0 ? hp->mla_k : hp->head_dim;
    hp->attn_scale = dk > 0 ? 1.0f / sqrtf((float)dk) : 1.0f;
}

typedef struct spec_sink {
    st_tensor_spec *out;
    int64_t cap, n;
    int unused;       /* the next add() is loaded-unused */
    int all_unused;   /* every add() is (a NextN layer) */
    const char *name; /* the next add()'s name suffix instead of the role's */
} spec_sink;

static void add(spec_sink *s, st_tensor_role role, int layer, int required, int n_dims, int64_t ne0,
                int64_t ne1, int64_t ne2) {
    const char *suffix = s->name ? s->name : k_role_names[role];
    if (s->n < s->cap) {
        st_tensor_spec *t = &s->out[s->n];
        memset(t, 0, sizeof *t);
        int w = layer >= 0 ? snprintf(t->name, sizeof t->name, "blk.%d.%s", layer, suffix)
                           : snprintf(t->name, sizeof t->name, "%s", suffix);
        if (w < 0 || (size_t)w >= sizeof t->name) t->name[0] = 0; /* no role name is that long */
        t->unused = s->unused || s->all_unused;
        t->role = role;
        t->layer = layer;
        t->required = s->all_unused ? 0 : required; /* a file may carry its NextN layers or not */
        t->n_dims = n_dims;
        t->ne[0] = ne0;
        t->ne[1] = n_dims > 1 ? ne1 : 1;
        t->ne[2] = n_dims > 2 ? ne2 : 1;
        t->ne[3] = 1;
    }
    s->n++;
    s->unused = 0;
    s->name = NULL;
}

/* The optional ".scale" (used or not, per family) and ".input_scale" (never used) of the
 * weight `w` of layer l; per_expert: [n_expert] instead of [1]. */
static void add_scales(spec_sink *s, st_tensor_role w, int l, int used, int64_t n_expert) {
    const int sr = st_tensor_role_scale_of(w);
    const int64_t ne = n_expert > 0 ? n_expert : 1;
    s->unused = !used;
    add(s, (st_tensor_role)sr, l, 0, 1, ne, 1, 1);
    char base[48], in[64];
    snprintf(base, sizeof base, "%s", k_role_names[w]);
    char *dot = strrchr(base, '.');
    if (dot) *dot = 0;
    snprintf(in, sizeof in, "%s.input_scale", base);
    s->unused = 1;
    s->name = in;
    add(s, (st_tensor_role)sr, l, 0, 1, ne, 1, 1);
}

static void add_attention(spec_sink *s, const st_hparams *hp, const family_uses *u, int l) {
    const int64_t E = hp->n_embd;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim;
    const int64_t k_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    const int64_t v_dim = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const int64_t o_dim = (int64_t)hp->n_head * hp->head_dim_v;
    add(s, ST_T_ATTN_NORM, l, 1, 1, E, 1, 1);
    add(s, ST_T_ATTN_Q, l, 1, 2, E, q_dim, 1);
    add(s, ST_T_ATTN_K, l, 1, 2, E, k_dim, 1);
    add(s, ST_T_ATTN_V, l, 1, 2, E, v_dim, 1);
    add(s, ST_T_ATTN_OUT, l, 1, 2, o_dim, E, 1);
    /* biases: required by the qwen2 families, optional (used or not) elsewhere */
    s->unused = !u->qkv_bias;
    add(s, ST_T_ATTN_Q_BIAS, l, hp->has_qkv_bias, 1, q_dim, 1, 1);
    s->unused = !u->qkv_bias;
    add(s, ST_T_ATTN_K_BIAS, l, hp->has_qkv_bias, 1, k_dim, 1, 1);
    s->unused = !u->qkv_bias;
    add(s, ST_T_ATTN_V_BIAS, l, hp->has_qkv_bias, 1, v_dim, 1, 1);
    add_scales(s, ST_T_ATTN_Q, l, u->qkv_scale, 0);
    add_scales(s, ST_T_ATTN_K, l, u->qkv_scale, 0);
    add_scales(s, ST_T_ATTN_V, l, u->qkv_scale, 0);
    add_scales(s, ST_T_ATTN_OUT, l, 1, 0);
    if (hp->arch == ST_ARCH_GPTOSS) {
        add(s, ST_T_ATTN_OUT_BIAS, l, 1, 1, E, 1, 1);
        add(s, ST_T_ATTN_SINKS, l, 1, 1, hp->n_head, 1, 1);
    }
    if (hp->arch == ST_ARCH_GLM4MOE) { /* optional (GLM-4.5 has them, Air not) */
        add(s, ST_T_ATTN_Q_NORM, l, 0, 1, hp->head_dim, 1, 1);
        add(s, ST_T_ATTN_K_NORM, l, 0, 1, hp->head_dim, 1, 1);
    } else if (hp->qk_norm == ST_QK_NORM_HEAD) {
        add(s, ST_T_ATTN_Q_NORM, l, 1, 1, hp->head_dim, 1, 1);
        add(s, ST_T_ATTN_K_NORM, l, 1, 1, hp->head_dim, 1, 1);
    } else if (hp->qk_norm == ST_QK_NORM_FULL) {
        add(s, ST_T_ATTN_Q_NORM, l, 1, 1, q_dim, 1, 1);
        add(s, ST_T_ATTN_K_NORM, l, 1, 1, k_dim, 1, 1);
    }
}

/* Multi-head latent attention of layer l (deepseek2). */
static void add_attention_mla(spec_sink *s, const st_hparams *hp, int l) {
    const int64_t E = hp->n_embd, H = hp->n_head, R = hp->n_rot, Lkv = hp->n_lora_kv;
    const int64_t Dq = hp->mla_k, nope = hp->mla_k - hp->n_rot;
    add(s, ST_T_ATTN_NORM, l, 1, 1, E, 1, 1);
    if (hp->n_lora_q > 0) {
        add(s, ST_T_ATTN_Q_A, l, 1, 2, E, hp->n_lora_q, 1);
        add(s, ST_T_ATTN_Q_A_NORM, l, 1, 1, hp->n_lora_q, 1, 1);
        add(s, ST_T_ATTN_Q_B, l, 1, 2, hp->n_lora_q, H * Dq, 1);
    } else {
        add(s, ST_T_ATTN_Q, l, 1, 2, E, H * Dq, 1);
        add_scales(s, ST_T_ATTN_Q, l, 0, 0);
    }
    add(s, ST_T_ATTN_KV_A_MQA, l, 1, 2, E, Lkv + R, 1);
    add(s, ST_T_ATTN_KV_A_NORM, l, 1, 1, Lkv, 1, 1);
    add(s, ST_T_ATTN_K_B, l, 1, 3, nope, Lkv, H);
    add(s, ST_T_ATTN_V_B, l, 1, 3, Lkv, hp->mla_v, H);
    add(s, ST_T_ATTN_OUT, l, 1, 2, H * hp->mla_v, E, 1);
    add_scales(s, ST_T_ATTN_OUT, l, 1, 0);
}

/* The NextN block's own tensors (glm4moe): the projection of [embedding | hidden] and its
 * norms; the optional head norm (the other optional ones are whole-vocabulary copies). */
static void add_nextn(spec_sink *s, const st_hparams *hp, int l) {
    const int64_t E = hp->n_embd;
    s->name = "nextn.eh_proj.weight";
    add(s, ST_T_FFN_NORM, l, 1, 2, 2 * E, E, 1);
    s->name = "nextn.enorm.weight";
    add(s, ST_T_FFN_NORM, l, 1, 1, E, 1, 1);
    s->name = "nextn.hnorm.weight";
    add(s, ST_T_FFN_NORM, l, 1, 1, E, 1, 1);
    s->name = "nextn.shared_head_norm.weight";
    add(s, ST_T_FFN_NORM, l, 0, 1, E, 1, 1);
}

int64_t st_arch_tensor_specs(const st_hparams *hp, st_tensor_spec *out, int64_t cap) {
    spec_sink s = {out, cap, 0, 0, 0, NULL};
    const int64_t E = hp->n_embd, V = hp->n_vocab, X = hp->n_expert;
    const family_uses *u = &k_uses[hp->arch];

    add(&s, ST_T_TOKEN_EMBD, -1, 1, 2, E, V, 1);
    add(&s, ST_T_OUTPUT_NORM, -1, 1, 1, E, 1, 1);
    if (!hp->tied_output) add(&s, ST_T_OUTPUT, -1, 0, 2, E, V, 1);
    for (int l = 0; l < hp->n_layer + hp->n_nextn; l++) {
        s.all_unused = l >= hp->n_layer; /* a NextN layer: its block and its own tensors */
        if (s.all_unused) add_nextn(&s, hp, l);
        if (hp->n_lora_kv > 0) add_attention_mla(&s, hp, l);
        else add_attention(&s, hp, u, l);
        if (hp->arch == ST_ARCH_GLM4MOE || hp->arch == ST_ARCH_GPTOSS) s.name = "post_attention_norm.weight";
        add(&s, ST_T_FFN_NORM, l, 1, 1, E, 1, 1);
        if (X == 0 || l < hp->n_dense_lead) {
            add(&s, ST_T_FFN_GATE, l, 1, 2, E, hp->n_ff, 1);
            add(&s, ST_T_FFN_UP, l, 1, 2, E, hp->n_ff, 1);
            add(&s, ST_T_FFN_DOWN, l, 1, 2, hp->n_ff, E, 1);
            for (int r = ST_T_FFN_GATE; r <= ST_T_FFN_DOWN; r++) add_scales(&s, (st_tensor_role)r, l, u->ffn_scale, 0);
            continue;
        }
        add(&s, ST_T_FFN_GATE_INP, l, 1, 2, E, X, 1);
        const int merged_ok = hp->arch == ST_ARCH_DEEPSEEK2; /* separate or merged gate/up */
        if (merged_ok) {
            add(&s, ST_T_FFN_EXP_PROBS_B, l, 0, 1, X, 1, 1);
            add(&s, ST_T_FFN_GATE_UP_EXPS, l, 0, 3, E, 2 * hp->n_ff_exp, X);
        }
        if (hp->arch == ST_ARCH_GLM4MOE) add(&s, ST_T_FFN_EXP_PROBS_B, l, 1, 1, X, 1, 1);
        if (hp->arch == ST_ARCH_GPTOSS) {
            add(&s, ST_T_FFN_GATE_INP_BIAS, l, 1, 1, X, 1, 1);
            add(&s, ST_T_FFN_GATE_EXPS_BIAS, l, 1, 2, hp->n_ff_exp, X, 1);
            add(&s, ST_T_FFN_UP_EXPS_BIAS, l, 1, 2, hp->n_ff_exp, X, 1);
            add(&s, ST_T_FFN_DOWN_EXPS_BIAS, l, 1, 2, E, X, 1);
        }
        add(&s, ST_T_FFN_GATE_EXPS, l, !merged_ok, 3, E, hp->n_ff_exp, X);
        add(&s, ST_T_FFN_UP_EXPS, l, !merged_ok, 3, E, hp->n_ff_exp, X);
        add(&s, ST_T_FFN_DOWN_EXPS, l, 1, 3, hp->n_ff_exp, E, X);
        for (int r = ST_T_FFN_GATE_EXPS; r <= ST_T_FFN_DOWN_EXPS; r++)
            add_scales(&s, (st_tensor_role)r, l, u->exps_scale, X);
        if (hp->n_ff_shexp > 0) {
            /* qwen2moe gates its shared expert; deepseek2 and glm4moe add it ungated */
            if (hp->arch == ST_ARCH_QWEN2MOE) add(&s, ST_T_FFN_GATE_INP_SHEXP, l, 1, 1, E, 1, 1);
            add(&s, ST_T_FFN_GATE_SHEXP, l, 1, 2, E, hp->n_ff_shexp, 1);
            add(&s, ST_T_FFN_UP_SHEXP, l, 1, 2, E, hp->n_ff_shexp, 1);
            add(&s, ST_T_FFN_DOWN_SHEXP, l, 1, 2, hp->n_ff_shexp, E, 1);
            for (int r = ST_T_FFN_GATE_SHEXP; r <= ST_T_FFN_DOWN_SHEXP; r++)
                add_scales(&s, (st_tensor_role)r, l, u->shexp_scale, 0);
        }
    }
    return s.n;
}
