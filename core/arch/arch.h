/* SPDX-License-Identifier: Apache-2.0 */
/* The model's description from GGUF metadata: hyperparameters, the tensor table with each
 * tensor's role, and the per-family rules (rope mode, Q/K norm, biases, expert gating).
 *
 * This layer never executes anything and never allocates device memory: the planner and
 * the model loader both read it. Supported families (GGUF general.architecture):
 *   llama    dense, or Mixtral-style MoE (ffn_*_exps) when <arch>.expert_count > 0
 *   qwen2    dense with Q/K/V bias
 *   qwen3    dense with per-head RMS norm of Q and K
 *   qwen2moe MoE + shared expert gated by sigmoid(ffn_gate_inp_shexp . x), Q/K/V bias
 *   qwen3moe MoE with per-head Q/K norm
 *   olmoe    MoE with Q/K RMS norm over the whole projection
 *   deepseek2 multi-head latent attention (MLA: low-rank Q, a compressed latent KV with a
 *            decoupled rope part, cached as one [kv_lora + n_rot] row per token), leading dense
 *            layers, routed + shared experts, softmax or sigmoid gating with a selection bias
 *   glm4moe  partial NeoX rope, Q/K/V biases, optional per-head Q/K norm, leading dense layers,
 *            ungated shared expert, sigmoid gating with a selection bias; the NextN (MTP)
 *            layers after the trunk are accepted and left unused
 *   gpt-oss  attention with per-head sinks, sliding-window layers alternating with full ones,
 *            biases on Q/K/V/output, the router and the experts, the clamped SwiGLU
 *            (SWIGLU_OAI), softmax over the chosen experts' logits
 * Conventions (facts of the GGUF converters): llama's Q/K weights are stored permuted for
 * the normal (adjacent pairs) rope; every other family here uses the NeoX (halves) rope. */
#ifndef STRATA_ARCH_H
#define STRATA_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum st_arch_id {
    ST_ARCH_LLAMA = 0,
    ST_ARCH_QWEN2 = 1,
    ST_ARCH_QWEN3 = 2,
    ST_ARCH_QWEN2MOE = 3,
    ST_ARCH_QWEN3MOE = 4,
    ST_ARCH_OLMOE = 5,
    ST_ARCH_DEEPSEEK2 = 6,
    ST_ARCH_GLM4MOE = 7,
    ST_ARCH_GPTOSS = 8,
    ST_ARCH_COUNT = 9
} st_arch_id;

/* How Q and K are normalized before rope. */
typedef enum st_qk_norm {
    ST_QK_NORM_NONE = 0,
    ST_QK_NORM_HEAD = 1, /* weight [head_dim], over each head (qwen3, qwen3moe) */
    ST_QK_NORM_FULL = 2  /* weight [n_head*head_dim], over the whole projection (olmoe) */
} st_qk_norm;

typedef enum st_rope_scaling {
    ST_ROPE_SCALING_NONE = 0,
    ST_ROPE_SCALING_LINEAR = 1,
    ST_ROPE_SCALING_YARN = 2
} st_rope_scaling;

/* Roles of tensors. Global ones have layer -1. */
typedef enum st_tensor_role {
    ST_T_TOKEN_EMBD = 0, /* [n_vocab][n_embd] */
    ST_T_OUTPUT_NORM,    /* [n_embd] */
    ST_T_OUTPUT,         /* [n_vocab][n_embd]; absent = tied to token_embd */
    ST_T_ATTN_NORM,      /* [n_embd] */
    ST_T_ATTN_Q,         /* [n_head*head_dim][n_embd] */
    ST_T_ATTN_K,         /* [n_head_kv*head_dim][n_embd] */
    ST_T_ATTN_V,         /* [n_head_kv*head_dim_v][n_embd] */
    ST_T_ATTN_OUT,       /* [n_embd][n_head*head_dim_v] */
    ST_T_ATTN_Q_BIAS,    /* [n_head*head_dim] */
    ST_T_ATTN_K_BIAS,    /* [n_head_kv*head_dim] */
    ST_T_ATTN_V_BIAS,    /* [n_head_kv*head_dim_v] */
    ST_T_ATTN_Q_NORM,    /* [head_dim] or [n_head*head_dim] (st_qk_norm) */
    ST_T_ATTN_K_NORM,    /* [head_dim] or [n_head_kv*head_dim] */
    ST_T_FFN_NORM,       /* [n_embd] */
    ST_T_FFN_GATE,       /* [n_ff][n_embd] (dense) */
    ST_T_FFN_UP,         /* [n_ff][n_embd] */
    ST_T_FFN_DOWN,       /* [n_embd][n_ff] */
    ST_T_FFN_GATE_INP,   /* [n_expert][n_embd] router */
    ST_T_FFN_GATE_EXPS,  /* [n_expert][n_ff_exp][n_embd] */
    ST_T_FFN_UP_EXPS,    /* [n_expert][n_ff_exp][n_embd] */
    ST_T_FFN_DOWN_EXPS,  /* [n_expert][n_embd][n_ff_exp] */
    ST_T_FFN_GATE_INP_SHEXP, /* [n_embd] shared-expert gate (one output) */
    ST_T_FFN_GATE_SHEXP, /* [n_ff_shexp][n_embd] */
    ST_T_FFN_UP_SHEXP,   /* [n_ff_shexp][n_embd] */
    ST_T_FFN_DOWN_SHEXP, /* [n_embd][n_ff_shexp] */
    /* Weight scales: the product W . x is multiplied by them (llama.cpp's "<weight>.scale",
     * written e.g. beside NVFP4 weights; its model saver writes them for every architecture). */
    ST_T_ATTN_Q_SCALE,   /* [1] */
    ST_T_ATTN_K_SCALE,   /* [1] */
    ST_T_ATTN_V_SCALE,   /* [1] */
    ST_T_ATTN_OUT_SCALE, /* [1] */
    ST_T_FFN_GATE_SCALE, /* [1] */
    ST_T_FFN_UP_SCALE,   /* [1] */
    ST_T_FFN_DOWN_SCALE, /* [1] */
    ST_T_FFN_GATE_SHEXP_SCALE, /* [1] */
    ST_T_FFN_UP_SHEXP_SCALE,   /* [1] */
    ST_T_FFN_DOWN_SHEXP_SCALE, /* [1] */
    ST_T_FFN_GATE_EXPS_SCALE,  /* [n_expert]: per expert */
    ST_T_FFN_UP_EXPS_SCALE,    /* [n_expert] */
    ST_T_FFN_DOWN_EXPS_SCALE,  /* [n_expert] */
    /* multi-head latent attention (deepseek2); Dq = mla_k = nope + n_rot */
    ST_T_ATTN_Q_A,       /* [n_lora_q][n_embd] */
    ST_T_ATTN_Q_A_NORM,  /* [n_lora_q] */
    ST_T_ATTN_Q_B,       /* [n_head*Dq][n_lora_q] */
    ST_T_ATTN_KV_A_MQA,  /* [n_lora_kv + n_rot][n_embd]: latent and the shared rope part of K */
    ST_T_ATTN_KV_A_NORM, /* [n_lora_kv] */
    ST_T_ATTN_K_B,       /* [n_head][n_lora_kv][nope]: latent -> K (absorbed into Q) */
    ST_T_ATTN_V_B,       /* [n_head][mla_v][n_lora_kv]: latent -> V per head */
    ST_T_FFN_EXP_PROBS_B, /* [n_expert] expert selection bias */
    ST_T_FFN_GATE_UP_EXPS, /* [n_expert][2*n_ff_exp][n_embd]: gate rows then up rows, in place of
                              ffn_gate_exps + ffn_up_exps (deepseek2 files may hold either) */
    /* gpt-oss */
    ST_T_ATTN_OUT_BIAS,  /* [n_embd] */
    ST_T_ATTN_SINKS,     /* [n_head] per-head sink logits */
    ST_T_FFN_GATE_INP_BIAS,  /* [n_expert] router bias */
    ST_T_FFN_GATE_EXPS_BIAS, /* [n_expert][n_ff_exp] */
    ST_T_FFN_UP_EXPS_BIAS,   /* [n_expert][n_ff_exp] */
    ST_T_FFN_DOWN_EXPS_BIAS, /* [n_expert][n_embd] */
    ST_T_ROLE_COUNT
} st_tensor_role;

/* Hyperparameters. Every field is filled (defaults applied) by st_arch_describe. */
typedef struct st_hparams {
    st_arch_id arch;
    char arch_name[32];     /* general.architecture */
    int32_t n_layer;        /* <arch>.block_count */
    int32_t n_embd;         /* <arch>.embedding_length */
    int32_t n_ff;           /* <arch>.feed_forward_length (dense FFN; 0 when MoE-only) */
    int32_t n_head;         /* <arch>.attention.head_count */
    int32_t n_head_kv;      /* <arch>.attention.head_count_kv (default n_head) */
    int32_t head_dim;       /* <arch>.attention.key_length (default n_embd / n_head) */
    int32_t head_dim_v;     /* <arch>.attention.value_length (default head_dim) */
    int32_t n_vocab;        /* rows of token_embd */
    int32_t n_ctx_train;    /* <arch>.context_length */
    float rms_eps;          /* <arch>.attention.layer_norm_rms_epsilon */
    /* rope */
    int32_t rope_mode;      /* ST_ROPE_NORMAL or ST_ROPE_NEOX (strata/backend.h) */
    int32_t n_rot;          /* <arch>.rope.dimension_count (default head_dim) */
    float rope_freq_base;   /* <arch>.rope.freq_base (default 10000) */
    st_rope_scaling rope_scaling; /* <arch>.rope.scaling.type */
    float rope_freq_scale;  /* 1 / <arch>.rope.scaling.factor (1 = none) */
    int32_t n_ctx_orig;     /* <arch>.rope.scaling.original_context_length (default n_ctx_train) */
    float yarn_ext_factor;  /* 1 for YaRN, else 0 */
    float yarn_attn_factor; /* 1 */
    float yarn_beta_fast;   /* 32 */
    float yarn_beta_slow;   /* 1 */
    /* attention details */
    st_qk_norm qk_norm;
    int32_t has_qkv_bias;   /* Q/K/V biases present */
    float attn_scale;       /* 1/sqrt(head_dim) */
    /* experts (all 0 for dense models) */
    int32_t n_expert;       /* <arch>.expert_count */
    int32_t n_expert_used;  /* <arch>.expert_used_count */
    int32_t n_ff_exp;       /* <arch>.expert_feed_forward_length (llama: feed_forward_length) */
    int32_t n_ff_shexp;     /* <arch>.expert_shared_feed_forward_length (0 = no shared expert) */
    int32_t expert_gating;  /* ST_ROUTER_SOFTMAX / ST_ROUTER_SIGMOID */
    int32_t expert_weights_norm;  /* selected weights renormalized to sum 1 */
    float expert_weights_scale;   /* factor on the final weights (1 = none) */
    int32_t tied_output;    /* output.weight absent: token_embd is the output matrix */
    int32_t n_dense_lead;   /* <arch>.leading_dense_block_count: first layers with a dense FFN */
    int32_t n_expert_groups;/* <arch>.expert_group_count (deepseek2; 0/1 = none): experts compete
                               only within the n_group_used best groups (ROUTER_GROUPS) */
    int32_t n_group_used;   /* <arch>.expert_group_used_count */
    int32_t n_nextn;        /* <arch>.nextn_predict_layers: MTP layers after the n_layer trunk
                               layers (block_count = n_layer + n_nextn); loaded-unused */
    /* multi-head latent attention (all 0 otherwise). head_dim is then the cached row,
     * n_lora_kv + n_rot, n_head_kv is 1 and attention runs over the latent (V = its first
     * n_lora_kv values), the output projected per head by attn_v_b. */
    int32_t n_lora_q;       /* <arch>.attention.q_lora_rank (0: one attn_q matrix) */
    int32_t n_lora_kv;      /* <arch>.attention.kv_lora_rank */
    int32_t mla_k;          /* <arch>.attention.key_length_mla: per-head Q/K (nope + n_rot) */
    int32_t mla_v;          /* <arch>.attention.value_length_mla: per-head V */
    /* sliding-window attention (gpt-oss; 0 otherwise): layer l attends to the last n_swa
     * positions when l % swa_period < swa_period - 1, with rope base rope_freq_base_swa */
    int32_t n_swa;          /* <arch>.attention.sliding_window */
    int32_t swa_period;     /* <arch>.attention.sliding_window_pattern (default 2) */
    float rope_freq_base_swa; /* <arch>.rope.freq_base_swa (default rope_freq_base) */
} st_hparams;

/* Expected tensor of a family for given hparams (what must or may be in the file). */
typedef struct st_tensor_spec {
    char name[64];          /* GGUF name, e.g. "blk.3.ffn_gate_exps.weight" */
    st_tensor_role role;    /* meaningless when unused */
    int32_t layer;          /* -1 for global tensors */
    int32_t required;       /* 0: optional (absence is allowed) */
    int32_t unused;         /* 1: the reference loads it for this family but its forward never
                               reads it (e.g. "*.input_scale"); accepted, not placed, reported */
    int32_t n_dims;
    int64_t ne[4];          /* ne[0] innermost, as in GGUF */
} st_tensor_spec;

/* Per-layer tensor views, indexed by role; NULL when absent. Owned by the st_gguf. */
typedef struct st_layer_desc {
    const st_gguf_tensor *t[ST_T_ROLE_COUNT];
    int32_t is_moe;         /* the FFN is routed experts */
} st_layer_desc;

/* The whole description. Created by st_arch_describe; pointers into the st_gguf, which
 * must outlive it. */
typedef struct st_model_desc {
    st_hparams hp;
    const st_gguf *gguf;
    const st_gguf_tensor *token_embd;  /* [n_vocab][n_embd] */
    const st_gguf_tensor *output_norm; /* [n_embd] */
    const st_gguf_tensor *output;      /* [n_vocab][n_embd]; == token_embd when tied */
    st_layer_desc *layers;             /* [n_layer] */
    /* byte counts (file bytes of the tensors as stored) */
    uint64_t bytes_total;       /* every tensor the model uses (tied output counted once) */
    uint64_t bytes_nonexpert;   /* everything except ffn_{gate,up,down}_exps */
    uint64_t bytes_experts;     /* all ffn_*_exps of all layers */
    uint64_t bytes_expert_slice;/* one expert of one layer: gate + up + down slices
                                   (max over layers) */
} st_model_desc;

/* Family id from a general.architecture string; -1 when unsupported. */
int st_arch_from_name(const char *name);
/* Name of a family id ("llama", ...); "?" when out of range. Static storage. */
const char *st_arch_name(int arch);
/* Nonzero when layer il uses sliding-window attention. */
int st_hparams_is_swa(const st_hparams *hp, int il);
/* Nonzero for families that are always MoE (qwen2moe, qwen3moe, olmoe). */
int st_arch_is_moe_family(int arch);
/* GGUF suffix of a role ("attn_q.weight", "token_embd.weight", ...). Static storage. */
const char *st_tensor_role_name(st_tensor_role role);
/* Nonzero for roles holding routed experts (ffn_{gate,up,down}_exps). */
int st_tensor_role_is_expert(st_tensor_role role);
/* Nonzero for vector roles (norms, biases, scales): placed as F32 whatever their file type. */
int st_tensor_role_is_vector(st_tensor_role role);
/* The scale role of a weight role (ST_T_ATTN_Q -> ST_T_ATTN_Q_SCALE), or -1 when it has none. */
int st_tensor_role_scale_of(st_tensor_role role);

/* Reads hparams from the metadata of `g` (does not look at tensors except token_embd for
 * n_vocab). Returns 0, or -1 with a message in err naming the key or architecture. */
int st_arch_read_hparams(const st_gguf *g, st_hparams *hp, char *err, size_t errlen);

/* Fills derived fields of hp for its family (rope mode, qk_norm, gating, ...) from
 * arch, leaving the numeric sizes as given. Used by the reader and by generators. */
void st_arch_apply_family_rules(st_hparams *hp);

/* The family's tensor table for hp: writes up to `cap` specs into `out` and returns the full
 * count (call with cap 0 to size). Optional tensors (biases, output) are included with
 * required = 0; tied_output removes output. Order: global first, then layer by layer. */
int64_t st_arch_tensor_specs(const st_hparams *hp, st_tensor_spec *out, int64_t cap);

/* What Strata does with a metadata key or tensor it does not simply use (st_arch_audit). */
typedef enum st_audit_kind {
    ST_AUDIT_REFUSED = 0,   /* would change the math and Strata does not implement it: the
                               file is refused */
    ST_AUDIT_NOT_READ = 1,  /* a key the reference implementation of this family does not read
                               either, or reads without effect on logits */
    ST_AUDIT_UNUSED = 2     /* a tensor the reference loads for this family but never uses */
} st_audit_kind;

typedef struct st_audit_item {
    st_audit_kind kind;
    char name[96];          /* the key or tensor */
    char why[192];
} st_audit_item;

/* Everything in a file outside what Strata uses: the two rules are "every tensor is used as
 * the reference uses it for the family, or the file is refused naming it" and "every key
 * whose value changes the math is honoured or refused". */
typedef struct st_audit {
    st_audit_item *items;   /* [n] */
    int32_t n, cap;
    int32_t n_refused;
} st_audit;

/* Audits the keys and tensors of `g` against its family (hparams are read first: a file whose
 * hparams are refused returns -1 with err). Fills `a` (free with st_audit_free) and returns 0;
 * a->n_refused > 0 means st_arch_describe refuses the file. */
int st_arch_audit(const st_gguf *g, st_audit *a, char *err, size_t errlen);
void st_audit_free(st_audit *a);
/* Adds an item (internal to arch/, exposed for the describe step). 0, or -1 out of memory. */
int st_audit_add(st_audit *a, st_audit_kind kind, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Audit of the metadata keys only (arch_keys.c). */
int st_arch_audit_keys(const st_gguf *g, const st_hparams *hp, st_audit *a);

/* Builds the description of the model in `g`. Refuses, with a message in err naming the
 * architecture, key or tensor (and expected vs found shape), an unsupported architecture, a
 * missing required tensor or a misshaped one. Returns NULL on error; free with
 * st_model_desc_free. */
st_model_desc *st_arch_describe(const st_gguf *g, char *err, size_t errlen);
/* Frees a description (not the st_gguf). NULL is ok. */
void st_model_desc_free(st_model_desc *d);

/* One-line summary ("qwen3moe: 48 layers, embd 2048, 128 experts (8 used) ...") into buf. */
void st_model_desc_summary(const st_model_desc *d, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
