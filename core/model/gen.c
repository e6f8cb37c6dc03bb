/* SPDX-License-Identifier: Apache-2.0 */
/* Random-weight GGUF writer: metadata from hparams, the family's tensor table, and data
 * streamed tensor by tensor (row by row) through the GGUF writer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gen_internal.h"
#include "quant/quant.h"
#include "sample/sample.h"

static void base(st_gen_params *p, st_arch_id arch) {
    memset(p, 0, sizeof *p);
    p->hp.arch = arch;
    p->hp.n_ctx_train = 4096;
    p->hp.rms_eps = 1e-5f;
    p->hp.rope_freq_base = 10000.0f;
    p->wtype = ST_TYPE_Q8_0;
    p->seed = 1;
}

static void shape(st_gen_params *p, int layers, int embd, int ff, int heads, int kv_heads, int head_dim) {
    p->hp.n_layer = layers;
    p->hp.n_embd = embd;
    p->hp.n_ff = ff;
    p->hp.n_head = heads;
    p->hp.n_head_kv = kv_heads;
    p->hp.head_dim = head_dim;
    p->hp.head_dim_v = head_dim;
    p->hp.n_rot = head_dim;
}

static void experts(st_gen_params *p, int n, int used, int ff, int shexp_ff) {
    p->hp.n_expert = n;
    p->hp.n_expert_used = used;
    p->hp.n_ff_exp = ff;
    p->hp.n_ff_shexp = shexp_ff;
}

/* deepseek2 in the shape of DeepSeek-V3 (low-rank Q, sigmoid gating with a selection bias,
 * renormalized and scaled weights, one shared expert, one leading dense layer), scaled down. */
static void mla(st_gen_params *p, int tiny) {
    st_hparams *h = &p->hp;
    h->n_lora_q = tiny ? 32 : 128;
    h->n_lora_kv = tiny ? 64 : 128;
    h->n_rot = tiny ? 16 : 32;
    h->head_dim = h->n_rot;
    h->n_head_kv = h->n_head;
    h->mla_k = h->n_rot + (tiny ? 32 : 64);
    h->mla_v = tiny ? 32 : 64;
    h->n_dense_lead = 1;
    h->n_ff_shexp = h->n_ff_exp; /* one shared expert */
    h->expert_gating = ST_ROUTER_SIGMOID;
    h->expert_weights_norm = 1;
    h->expert_weights_scale = 2.5f;
}

/* glm4moe in the shape of GLM-4.5: half the head dimensions rotated, Q/K/V biases, per-head
 * Q/K norms, one leading dense layer, one shared expert, sigmoid gating with a selection bias,
 * renormalized weights scaled by 2.5, one NextN layer after the trunk. */
static void glm(st_gen_params *p) {
    st_hparams *h = &p->hp;
    h->has_qkv_bias = 1;
    h->qk_norm = ST_QK_NORM_HEAD;
    h->n_dense_lead = 1;
    h->n_nextn = 1;
    h->n_ff_shexp = h->n_ff_exp;
    h->expert_gating = ST_ROUTER_SIGMOID;
    h->expert_weights_norm = 1;
    h->expert_weights_scale = 2.5f;
}

const char *st_gen_preset_names(void) { return "tiny, demo, dense-500m, bench-moe-1.5g, qwen3-30b-a3b"; }

int st_gen_preset(const char *name, const char *arch, st_gen_params *p) {
    int a = arch ? st_arch_from_name(arch) : -1;
    if (arch && a < 0) return -1;
    if (!strcmp(name, "tiny") || !strcmp(name, "demo")) {
        int tiny = !strcmp(name, "tiny");
        base(p, a >= 0 ? (st_arch_id)a : ST_ARCH_LLAMA);
        if (tiny) {
            shape(p, 2, 64, 128, 4, 2, 16);
            p->wtype = ST_TYPE_F32;
        } else {
            shape(p, 4, 256, 512, 8, 4, 32);
        }
        /* olmoe's K norm spans the whole projection; peers size it as n_embd, so keep
         * n_head_kv == n_head for files other engines can read */
        if (p->hp.arch == ST_ARCH_OLMOE) p->hp.n_head_kv = p->hp.n_head;
        int moe = st_arch_is_moe_family(p->hp.arch);
        if (moe) experts(p, tiny ? 8 : 16, tiny ? 2 : 4, tiny ? 32 : 128,
                         p->hp.arch == ST_ARCH_QWEN2MOE ? (tiny ? 64 : 256) : 0);
        if (p->hp.arch == ST_ARCH_DEEPSEEK2) mla(p, tiny);
        if (p->hp.arch == ST_ARCH_GLM4MOE) glm(p);
        if (p->hp.arch == ST_ARCH_GPTOSS) { /* gpt-oss's layout; a window short enough for tests */
            p->hp.has_qkv_bias = 1;
            p->hp.n_swa = 8;
            p->hp.swa_period = 2;
            p->hp.rope_freq_base_swa = p->hp.rope_freq_base;
        }
        return 0;
    }
    if (!strcmp(name, "dense-500m")) {
        base(p, ST_ARCH_LLAMA);
        shape(p, 28, 1024, 4096, 16, 8, 64);
        return 0;
    }
    if (!strcmp(name, "bench-moe-1.5g")) {
        base(p, ST_ARCH_QWEN3MOE);
        shape(p, 24, 1024, 0, 16, 4, 64);
        experts(p, 64, 8, 512, 0);
        p->wtype = ST_TYPE_Q4_K;
        p->router_skew = 1.0f;
        return 0;
    }
    if (!strcmp(name, "qwen3-30b-a3b")) {
        base(p, ST_ARCH_QWEN3MOE);
        shape(p, 48, 2048, 6144, 32, 4, 128);
        experts(p, 128, 8, 768, 0);
        p->hp.n_ctx_train = 40960;
        p->hp.rms_eps = 1e-6f;
        p->hp.rope_freq_base = 1000000.0f;
        p->vocab_size = 151936; /* the real model's vocabulary size: the output matrix counts */
        p->wtype = ST_TYPE_Q4_K;
        p->router_skew = 1.0f;
        return 0;
    }
    return -1;
}

/* Type actually used for a matrix whose rows have ne0 elements. */
static uint32_t fit_type(uint32_t want, int64_t ne0) {
    if (st_row_size(want, ne0) > 0) return want;
    if (st_row_size(ST_TYPE_Q8_0, ne0) > 0 && want != ST_TYPE_F32 && want != ST_TYPE_BF16) return ST_TYPE_Q8_0;
    return want == ST_TYPE_F32 ? ST_TYPE_F32 : ST_TYPE_F16;
}

static int is_vector(st_tensor_role r) { return st_tensor_role_is_vector(r); }

static int is_scale(st_tensor_role r) { return r >= ST_T_ATTN_Q_SCALE && r <= ST_T_FFN_DOWN_EXPS_SCALE; }

/* Standard deviation of a matrix's values, per row `row` (router rows carry the skew); out_scale
 * multiplies the output projections (ST_GEN_ROUTER_BALANCED). */
static float row_std(const st_tensor_spec *s, const float *skew, int64_t row, float out_scale) {
    float k = 1.0f / sqrtf((float)s->ne[0]);
    switch (s->role) {
    case ST_T_TOKEN_EMBD:
    case ST_T_OUTPUT: return 2.0f * k;
    case ST_T_ATTN_OUT:
    case ST_T_FFN_DOWN:
    case ST_T_FFN_DOWN_EXPS:
    case ST_T_FFN_DOWN_SHEXP: return 0.5f * k * out_scale;
    case ST_T_FFN_GATE_INP: return skew ? k * skew[row % s->ne[1]] : k;
    default: return k;
    }
}

typedef struct gen_ctx {
    st_gguf_writer *w;
    st_rng rng;
    float *f;        /* one row of floats */
    uint8_t *q;      /* one row of encoded data */
    uint8_t *pool;   /* quantized blocks for large tensors */
    int64_t pool_blocks;
    uint64_t done, total;
    int progress;
    int64_t cur_t, n_t; /* tensor being written, of n_t */
    float out_scale;    /* output projections' factor (1, or ST_GEN_BALANCED_OUT_SCALE) */
} gen_ctx;

static void fill_uniform(gen_ctx *g, float *f, int64_t n, float std) {
    const float a = std * 1.7320508f;
    for (int64_t i = 0; i < n; i++) f[i] = (float)((st_rng_uniform(&g->rng) * 2.0 - 1.0) * a);
}

static int encode_row(uint32_t type, const float *f, void *dst, int64_t n) {
    if (type == ST_TYPE_F32) {
        memcpy(dst, f, (size_t)n * 4);
        return 0;
    }
    if (type == ST_TYPE_F16) {
        st_fp16 *h = dst;
        for (int64_t i = 0; i < n; i++) h[i] = st_f32_to_fp16(f[i]);
        return 0;
    }
    if (type == ST_TYPE_BF16) {
        st_bf16 *h = dst;
        for (int64_t i = 0; i < n; i++) h[i] = st_f32_to_bf16(f[i]);
        return 0;
    }
    return st_quantize_row(type, f, dst, n);
}

static void progress(gen_ctx *g) {
    if (!g->progress) return;
    fprintf(stderr, "\rwriting tensor %lld/%lld, %.2f/%.2f GiB", (long long)g->cur_t, (long long)g->n_t,
            (double)g->done / 1073741824.0, (double)g->total / 1073741824.0);
    fflush(stderr);
}

/* Writes one tensor's data. */
static int write_tensor(gen_ctx *g, const st_tensor_spec *s, uint32_t type, const float *skew, char *err,
                        size_t errlen) {
    const int64_t ne0 = s->ne[0], rows = s->ne[1] * s->ne[2] * s->ne[3];
    const size_t rs = st_row_size(type, ne0);
    const st_type_info *ti = st_type_get(type);
    const uint64_t bytes = (uint64_t)rs * (uint64_t)rows;
    /* big quantized tensors: rows assembled from a pool of random quantized blocks */
    const int pooled = ti->is_quantized && bytes > (1ull << 20) && s->role != ST_T_FFN_GATE_INP;
    if (pooled) {
        const int64_t bs = ti->block_size, nb = 4096;
        g->pool = realloc(g->pool, (size_t)nb * (size_t)ti->type_size);
        float *tmp = malloc((size_t)bs * sizeof *tmp);
        if (!g->pool || !tmp) {
            free(tmp);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        float std = row_std(s, NULL, 0, g->out_scale);
        for (int64_t b = 0; b < nb; b++) {
            fill_uniform(g, tmp, bs, std);
            st_quantize_row(type, tmp, g->pool + (size_t)b * (size_t)ti->type_size, bs);
        }
        free(tmp);
        g->pool_blocks = nb;
    }
    for (int64_t r = 0; r < rows; r++) {
        if (pooled) {
            const int64_t nblk = ne0 / ti->block_size;
            for (int64_t b = 0; b < nblk; b++) {
                uint64_t pick = st_rng_next(&g->rng) % (uint64_t)g->pool_blocks;
                memcpy(g->q + (size_t)b * (size_t)ti->type_size, g->pool + pick * (uint64_t)ti->type_size,
                       (size_t)ti->type_size);
            }
        } else {
            if (is_vector(s->role)) {
                if (s->role == ST_T_ATTN_Q_BIAS || s->role == ST_T_ATTN_K_BIAS || s->role == ST_T_ATTN_V_BIAS)
                    fill_uniform(g, g->f, ne0, 0.02f);
                else if (s->role == ST_T_FFN_EXP_PROBS_B) /* a selection bias of the size of sigmoid gaps */
                    fill_uniform(g, g->f, ne0, 0.05f);
                else if (s->role == ST_T_ATTN_SINKS) /* sink logits of the size of attention scores */
                    fill_uniform(g, g->f, ne0, 1.0f);
                else if (s->role >= ST_T_ATTN_OUT_BIAS && s->role <= ST_T_FFN_DOWN_EXPS_BIAS)
                    fill_uniform(g, g->f, ne0, 0.02f);
                else if (is_scale(s->role)) /* a weight scale: 0.5 .. 1.5 */
                    for (int64_t i = 0; i < ne0; i++) g->f[i] = 0.5f + (float)st_rng_uniform(&g->rng);
                else
                    for (int64_t i = 0; i < ne0; i++) g->f[i] = 1.0f + (float)(st_rng_uniform(&g->rng) - 0.5) * 0.1f;
            } else {
                fill_uniform(g, g->f, ne0, row_std(s, skew, r, g->out_scale));
            }
            if (encode_row(type, g->f, g->q, ne0)) {
                snprintf(err, errlen, "cannot encode %s as %s", s->name, st_type_name(type));
                return -1;
            }
        }
        if (st_gguf_writer_write(g->w, g->q, rs)) {
            snprintf(err, errlen, "writing %s: %s", s->name, st_gguf_writer_error(g->w));
            return -1;
        }
        g->done += rs;
        if (g->progress && (r & 4095) == 4095) progress(g);
    }
    return 0;
}

/* The keys of the families with their own extras (glm4moe, gpt-oss, deepseek2). */
static int set_family_meta(st_gguf_writer *w, const st_hparams *h) {
    char k[128];
    const char *a = st_arch_name(h->arch);
    int rc = 0;
#define U32(suffix, v) (snprintf(k, sizeof k, "%s." suffix, a), rc |= st_gguf_writer_set_u32(w, k, (uint32_t)(v)))
#define F32(suffix, v) (snprintf(k, sizeof k, "%s." suffix, a), rc |= st_gguf_writer_set_f32(w, k, (v)))
    if (h->arch == ST_ARCH_GLM4MOE) {
        U32("block_count", h->n_layer + h->n_nextn); /* replaces the trunk count: the file holds the NextN layers too */
        U32("nextn_predict_layers", h->n_nextn);
        U32("leading_dense_block_count", h->n_dense_lead);
        U32("expert_shared_count", h->n_ff_shexp / h->n_ff_exp);
        U32("expert_gating_func", h->expert_gating == ST_ROUTER_SIGMOID ? 2 : 1);
        F32("expert_weights_scale", h->expert_weights_scale);
        snprintf(k, sizeof k, "%s.expert_weights_norm", a);
        rc |= st_gguf_writer_set_bool(w, k, h->expert_weights_norm != 0);
    }
    if (h->arch == ST_ARCH_GPTOSS) {
        U32("attention.sliding_window", h->n_swa);
        U32("attention.sliding_window_pattern", h->swa_period);
        F32("rope.freq_base_swa", h->rope_freq_base_swa);
    }
    if (h->arch == ST_ARCH_DEEPSEEK2) {
        U32("attention.head_count_kv", 1);
        U32("attention.value_length", h->n_lora_kv);
        U32("leading_dense_block_count", h->n_dense_lead);
        U32("attention.q_lora_rank", h->n_lora_q); /* 0: one attn_q matrix (V2-Lite) */
        U32("attention.kv_lora_rank", h->n_lora_kv);
        U32("attention.key_length_mla", h->mla_k);
        U32("attention.value_length_mla", h->mla_v);
        U32("expert_shared_count", h->n_ff_shexp / h->n_ff_exp);
        U32("expert_gating_func", h->expert_gating == ST_ROUTER_SIGMOID ? 2 : 1);
        F32("expert_weights_scale", h->expert_weights_scale);
        snprintf(k, sizeof k, "%s.expert_weights_norm", a);
        rc |= st_gguf_writer_set_bool(w, k, h->expert_weights_norm != 0);
    }
    if (h->n_expert_groups > 1) { /* deepseek2's group-limited routing */
        U32("expert_group_count", h->n_expert_groups);
        U32("expert_group_used_count", h->n_group_used);
    }
#undef U32
#undef F32
    return rc;
}

static int set_meta(st_gguf_writer *w, const st_hparams *h) {
    char k[128];
    const char *a = st_arch_name(h->arch);
    int rc = 0;
#define U32(suffix, v) (snprintf(k, sizeof k, "%s." suffix, a), rc |= st_gguf_writer_set_u32(w, k, (uint32_t)(v)))
#define F32(suffix, v) (snprintf(k, sizeof k, "%s." suffix, a), rc |= st_gguf_writer_set_f32(w, k, (v)))
    rc |= st_gguf_writer_set_str(w, "general.architecture", a);
    snprintf(k, sizeof k, "strata random %s", a);
    rc |= st_gguf_writer_set_str(w, "general.name", k);
    U32("block_count", h->n_layer);
    U32("context_length", h->n_ctx_train);
    U32("embedding_length", h->n_embd);
    if (h->n_ff > 0) U32("feed_forward_length", h->n_ff);
    U32("attention.head_count", h->n_head);
    if (h->arch != ST_ARCH_DEEPSEEK2) U32("attention.head_count_kv", h->n_head_kv);
    U32("attention.key_length", h->head_dim);
    if (h->arch != ST_ARCH_DEEPSEEK2) U32("attention.value_length", h->head_dim);
    F32("attention.layer_norm_rms_epsilon", h->rms_eps);
    U32("rope.dimension_count", h->n_rot);
    F32("rope.freq_base", h->rope_freq_base);
    if (h->rope_scaling != ST_ROPE_SCALING_NONE) {
        snprintf(k, sizeof k, "%s.rope.scaling.type", a);
        rc |= st_gguf_writer_set_str(w, k, h->rope_scaling == ST_ROPE_SCALING_YARN ? "yarn" : "linear");
        F32("rope.scaling.factor", h->rope_freq_scale > 0 ? 1.0f / h->rope_freq_scale : 1.0f);
        U32("rope.scaling.original_context_length", h->n_ctx_orig > 0 ? h->n_ctx_orig : h->n_ctx_train);
    }
    if (h->n_expert > 0) {
        U32("expert_count", h->n_expert);
        U32("expert_used_count", h->n_expert_used);
        U32("expert_feed_forward_length", h->n_ff_exp);
        if (h->n_ff_shexp > 0 && h->arch == ST_ARCH_QWEN2MOE) U32("expert_shared_feed_forward_length", h->n_ff_shexp);
    }
    rc |= set_family_meta(w, h);
#undef U32
#undef F32
    return rc;
}

/* Keys llama.cpp's model saver writes for every family at values these families do not read
 * or hold neutral: a file with them must load and compute exactly as one without. */
static int set_saver_meta(st_gguf_writer *w, const st_hparams *h) {
    char k[128];
    const char *a = st_arch_name(h->arch);
    int rc = 0;
#define KEY(suffix) (snprintf(k, sizeof k, "%s." suffix, a), k)
    if (h->arch != ST_ARCH_DEEPSEEK2 && h->arch != ST_ARCH_GLM4MOE) { /* not read by these families */
        rc |= st_gguf_writer_set_bool(w, KEY("expert_weights_norm"), false);
        rc |= st_gguf_writer_set_f32(w, KEY("expert_weights_scale"), 0.0f);
        rc |= st_gguf_writer_set_u32(w, KEY("expert_gating_func"), 0);
    }
    if (h->n_expert_groups <= 1) {
        rc |= st_gguf_writer_set_u32(w, KEY("expert_group_count"), 0);
        rc |= st_gguf_writer_set_u32(w, KEY("expert_group_used_count"), 0);
    }
    rc |= st_gguf_writer_set_u32(w, KEY("nextn_predict_layers"), (uint32_t)h->n_nextn);
    rc |= st_gguf_writer_set_bool(w, KEY("attention.causal"), true);
    rc |= st_gguf_writer_set_f32(w, KEY("attention.clamp_kqv"), 0.0f);
    rc |= st_gguf_writer_set_f32(w, KEY("attn_logit_softcapping"), 50.0f);
    rc |= st_gguf_writer_set_f32(w, KEY("final_logit_softcapping"), 30.0f);
    rc |= st_gguf_writer_set_f32(w, KEY("rope.scaling.attn_factor"), 1.0f);
    rc |= st_gguf_writer_set_f32(w, KEY("rope.scaling.yarn_beta_fast"), 32.0f);
    if (h->rope_scaling == ST_ROPE_SCALING_NONE) {
        rc |= st_gguf_writer_set_str(w, KEY("rope.scaling.type"), "linear");
        rc |= st_gguf_writer_set_f32(w, KEY("rope.scaling.factor"), 0.0f);
    }
#undef KEY
    return rc;
}

int st_gen_model(const st_gen_params *pin, const char *path, char *err, size_t errlen) {
    st_gen_params p = *pin;
    st_hparams *h = &p.hp;
    if (h->head_dim <= 0 && h->n_head > 0) h->head_dim = h->n_embd / h->n_head;
    h->head_dim_v = h->head_dim;
    if (h->n_rot <= 0 || h->n_rot > h->head_dim) h->n_rot = h->head_dim;
    if (h->n_head_kv <= 0) h->n_head_kv = h->n_head;
    if (h->n_layer <= 0 || h->n_embd <= 0 || h->n_head <= 0 || h->head_dim <= 0 || h->head_dim % 2 ||
        h->n_head % h->n_head_kv) {
        snprintf(err, errlen, "invalid shape: layers %d, embd %d, heads %d/%d, head dim %d", h->n_layer,
                 h->n_embd, h->n_head, h->n_head_kv, h->head_dim);
        return -1;
    }
    if (h->arch == ST_ARCH_DEEPSEEK2 && (h->n_ff_exp <= 0 || h->n_ff_shexp <= 0 || h->n_ff_shexp % h->n_ff_exp)) {
        snprintf(err, errlen, "deepseek2: the shared expert width %d must be a multiple of the expert width %d",
                 h->n_ff_shexp, h->n_ff_exp);
        return -1;
    }
    if (st_arch_is_moe_family(h->arch) && h->n_expert <= 0) {
        snprintf(err, errlen, "%s needs --experts > 0", st_arch_name(h->arch));
        return -1;
    }
    if (h->n_expert > 0 && (h->n_expert_used <= 0 || h->n_expert_used > h->n_expert || h->n_ff_exp <= 0)) {
        snprintf(err, errlen, "invalid experts: %d, %d used, ff %d", h->n_expert, h->n_expert_used, h->n_ff_exp);
        return -1;
    }
    if (h->n_expert == 0 && h->n_ff <= 0) {
        snprintf(err, errlen, "a dense model needs --ff > 0");
        return -1;
    }
    if (h->arch == ST_ARCH_QWEN2MOE && h->n_ff_shexp <= 0) h->n_ff_shexp = h->n_ff_exp * 4;
    /* Mixtral-style llama and olmoe: the expert width is feed_forward_length */
    if ((h->arch == ST_ARCH_LLAMA || h->arch == ST_ARCH_OLMOE) && h->n_expert > 0) h->n_ff = h->n_ff_exp;
    if (!st_type_get(p.wtype)) {
        snprintf(err, errlen, "unknown weight type %u", p.wtype);
        return -1;
    }
    st_gguf_writer *w = st_gguf_writer_new();
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gen_ctx g;
    memset(&g, 0, sizeof g);
    g.w = w;
    g.progress = p.progress && isatty(2);
    g.out_scale = 1.0f;
    if (p.router == ST_GEN_ROUTER_BALANCED) /* the layers' summed outputs stay as small at any depth */
        g.out_scale = p.hp.n_layer > ST_GEN_BALANCED_DEPTH
                          ? ST_GEN_BALANCED_OUT_SCALE * (float)ST_GEN_BALANCED_DEPTH / (float)p.hp.n_layer
                          : ST_GEN_BALANCED_OUT_SCALE;
    st_rng_seed(&g.rng, p.seed);
    st_tensor_spec *specs = NULL;
    float *skew = NULL;
    int rc = -1;
    int32_t nv = 0;
    if (p.vocab_from ? st_gen_vocab_copy(w, p.vocab_from, &nv, err, errlen) : st_gen_vocab_builtin(w, p.vocab_size, &nv)) {
        if (!p.vocab_from) snprintf(err, errlen, "building the vocabulary: %s", st_gguf_writer_error(w));
        goto done;
    }
    h->n_vocab = nv;
    st_arch_apply_family_rules(h);
    if (set_meta(w, h) || (p.saver_extras && set_saver_meta(w, h))) {
        snprintf(err, errlen, "metadata: %s", st_gguf_writer_error(w));
        goto done;
    }
    int64_t n = st_arch_tensor_specs(h, NULL, 0);
    specs = calloc((size_t)n, sizeof *specs);
    if (!specs) goto oom;
    st_arch_tensor_specs(h, specs, n);
    int64_t max_row = 0;
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        st_tensor_spec *s = &specs[i];
        int bias = s->role == ST_T_ATTN_Q_BIAS || s->role == ST_T_ATTN_K_BIAS || s->role == ST_T_ATTN_V_BIAS;
        const int gu = s->role == ST_T_FFN_GATE_UP_EXPS, sep = s->role == ST_T_FFN_GATE_EXPS || s->role == ST_T_FFN_UP_EXPS;
        if (s->layer >= h->n_layer && is_scale(s->role)) continue; /* a NextN layer has no scales */
        if (h->arch == ST_ARCH_DEEPSEEK2 && (gu || sep)) { /* one of the two layouts */
            if (gu != (p.merged_gate_up != 0)) continue;
        } else if (s->role == ST_T_FFN_EXP_PROBS_B && h->arch == ST_ARCH_DEEPSEEK2) {
            if (h->expert_gating != ST_ROUTER_SIGMOID) continue;
        } else if (h->arch == ST_ARCH_GLM4MOE && (s->role == ST_T_ATTN_Q_NORM || s->role == ST_T_ATTN_K_NORM)) {
            if (h->qk_norm != ST_QK_NORM_HEAD) continue;
        } else if (s->layer >= h->n_layer && !is_scale(s->role)) {
            /* a NextN layer (every spec optional): its whole block */
        } else if (!s->required && !(s->role == ST_T_OUTPUT) && !(bias && h->has_qkv_bias) && !p.saver_extras) {
            continue;
        }
        const uint32_t want = st_tensor_role_is_expert(s->role) && p.expert_type ? p.expert_type : p.wtype;
        uint32_t type = is_vector(s->role) ? ST_TYPE_F32 : fit_type(want, s->ne[0]);
        if (st_gguf_writer_add_tensor(w, s->name, type, (uint32_t)s->n_dims, s->ne)) {
            snprintf(err, errlen, "declaring %s: %s", s->name, st_gguf_writer_error(w));
            goto done;
        }
        s->required = (int32_t)type + 1; /* remember the type (kept tensors only) */
        specs[kept++] = *s;
        g.total += st_gguf_writer_tensor_nbytes(w, kept - 1);
        if (s->ne[0] > max_row) max_row = s->ne[0];
    }
    g.f = malloc((size_t)max_row * sizeof *g.f);
    g.q = malloc((size_t)max_row * 4 + 64);
    if (h->n_expert > 0) skew = malloc((size_t)h->n_expert * sizeof *skew);
    if (!g.f || !g.q || (h->n_expert > 0 && !skew)) goto oom;
    if (st_gguf_writer_begin(w, path)) {
        snprintf(err, errlen, "%s", st_gguf_writer_error(w));
        goto done;
    }
    for (int64_t i = 0; i < kept; i++) {
        const st_tensor_spec *s = &specs[i];
        if (s->role == ST_T_FFN_GATE_INP) {
            /* per layer: experts get the scales (1 + rank)^(-skew/2) for a random ranking;
             * rows with larger scales win the top-k more often */
            for (int32_t e = 0; e < h->n_expert; e++) skew[e] = (float)e;
            for (int32_t e = h->n_expert - 1; e > 0; e--) {
                int32_t j = (int32_t)(st_rng_next(&g.rng) % (uint64_t)(e + 1));
                float t = skew[e];
                skew[e] = skew[j];
                skew[j] = t;
            }
            const float sk = p.router == ST_GEN_ROUTER_BALANCED ? 0.0f : p.router_skew;
            for (int32_t e = 0; e < h->n_expert; e++) skew[e] = powf(1.0f + skew[e], -0.5f * sk);
        }
        g.cur_t = i + 1;
        g.n_t = kept;
        if (write_tensor(&g, s, (uint32_t)(s->required - 1), s->role == ST_T_FFN_GATE_INP ? skew : NULL, err,
                         errlen))
            goto done;
        progress(&g);
    }
    if (st_gguf_writer_finish(w)) {
        snprintf(err, errlen, "%s", st_gguf_writer_error(w));
        goto done;
    }
    if (g.progress) fprintf(stderr, "\n");
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    st_gguf_writer_free(w);
    free(specs);
    free(skew);
    free(g.f);
    free(g.q);
    free(g.pool);
    return rc;
}
