/* SPDX-License-Identifier: Apache-2.0 */
/* Hyperparameters from GGUF metadata and the tensor table matched against the family's
 * expected tensors. Reads only; never executes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "quant/quant.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Integer key "<arch>.<suffix>": required or with a default. */
static int key_i32(const st_gguf *g, const char *arch, const char *suffix, int required, int32_t def,
                   int32_t *out, char *err, size_t errlen) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int rc = st_gguf_get_i32(g, key, out);
    if (rc == ST_GGUF_OK) return 0;
    if (rc == ST_GGUF_ABSENT && !required) {
        *out = def;
        return 0;
    }
    if (rc == ST_GGUF_ABSENT) return fail(err, errlen, "%s: missing metadata key '%s'", arch, key);
    return fail(err, errlen, "%s: metadata key '%s' has an unusable type (expected one integer)",
                arch, key);
}

static int key_f32(const st_gguf *g, const char *arch, const char *suffix, int required, float def,
                   float *out, char *err, size_t errlen) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int rc = st_gguf_get_f32(g, key, out);
    if (rc == ST_GGUF_OK) return 0;
    if (rc == ST_GGUF_ABSENT && !required) {
        *out = def;
        return 0;
    }
    if (rc == ST_GGUF_ABSENT) return fail(err, errlen, "%s: missing metadata key '%s'", arch, key);
    return fail(err, errlen, "%s: metadata key '%s' has an unusable type (expected a float)", arch,
                key);
}

static const char *k_supported = "llama, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, deepseek2";

/* deepseek2 and glm4moe: leading dense layers, shared experts and the gating the file names
 * (0 or absent: `def`), weight renormalization and scale. */
static int read_moe_extras(const st_gguf *g, const char *a, st_hparams *hp, int def, char *err, size_t errlen) {
    int32_t n_shared = 0, func = 0;
    if (key_i32(g, a, "leading_dense_block_count", 0, 0, &hp->n_dense_lead, err, errlen)) return -1;
    if (key_i32(g, a, "expert_shared_count", 1, 0, &n_shared, err, errlen)) return -1;
    if (key_i32(g, a, "expert_gating_func", 0, 0, &func, err, errlen)) return -1;
    if (hp->n_dense_lead < 0 || hp->n_dense_lead > hp->n_layer)
        return fail(err, errlen, "%s: leading_dense_block_count %d out of range", a, hp->n_dense_lead);
    if (func == 0) func = def;
    if (func == 2) hp->expert_gating = ST_ROUTER_SIGMOID;
    else if (func == 1) hp->expert_gating = ST_ROUTER_SOFTMAX;
    else return fail(err, errlen, "%s: expert_gating_func %d is not supported (softmax, sigmoid)", a, func);
    bool norm = false;
    char key[128];
    snprintf(key, sizeof key, "%s.expert_weights_norm", a);
    if (st_gguf_get_bool(g, key, &norm) == ST_GGUF_WRONG_TYPE)
        return fail(err, errlen, "%s: metadata key '%s' must be a bool", a, key);
    hp->expert_weights_norm = norm;
    if (key_f32(g, a, "expert_weights_scale", 0, 0.0f, &hp->expert_weights_scale, err, errlen)) return -1;
    if (n_shared < 0) return fail(err, errlen, "%s: expert_shared_count %d", a, n_shared);
    hp->n_ff_shexp = hp->n_ff_exp * n_shared;
    return 0;
}

/* gpt-oss: the sliding window, which layers use it, and their rope base. */
static int read_gptoss(const st_gguf *g, const char *a, st_hparams *hp, char *err, size_t errlen) {
    if (key_i32(g, a, "attention.sliding_window", 1, 0, &hp->n_swa, err, errlen)) return -1;
    if (key_i32(g, a, "attention.sliding_window_pattern", 0, 2, &hp->swa_period, err, errlen)) return -1;
    if (key_f32(g, a, "rope.freq_base_swa", 0, hp->rope_freq_base, &hp->rope_freq_base_swa, err, errlen)) return -1;
    if (hp->n_swa <= 0 || hp->swa_period < 1)
        return fail(err, errlen, "%s: sliding_window %d / sliding_window_pattern %d", a, hp->n_swa, hp->swa_period);
    return 0;
}

/* deepseek2: MLA ranks and head sizes (after the generic keys; st_arch_apply_family_rules
 * derives the rest). */
static int read_deepseek2(const st_gguf *g, const char *a, st_hparams *hp, char *err, size_t errlen) {
    if (read_moe_extras(g, a, hp, 1, err, errlen)) return -1;
    if (key_i32(g, a, "attention.q_lora_rank", 0, 0, &hp->n_lora_q, err, errlen)) return -1;
    if (key_i32(g, a, "attention.kv_lora_rank", 1, 0, &hp->n_lora_kv, err, errlen)) return -1;
    if (key_i32(g, a, "attention.key_length_mla", 1, 0, &hp->mla_k, err, errlen)) return -1;
    if (key_i32(g, a, "attention.value_length_mla", 1, 0, &hp->mla_v, err, errlen)) return -1;
    if (key_i32(g, a, "expert_group_count", 0, 0, &hp->n_expert_groups, err, errlen)) return -1;
    if (key_i32(g, a, "expert_group_used_count", 0, 0, &hp->n_group_used, err, errlen)) return -1;
    if (hp->n_expert_groups > 1 && (hp->n_expert % hp->n_expert_groups || hp->n_group_used < 1 ||
                                    hp->n_group_used >= hp->n_expert_groups ||
                                    hp->n_group_used * (hp->n_expert / hp->n_expert_groups) < hp->n_expert_used))
        return fail(err, errlen, "%s: %d expert groups (%d used) of %d experts, %d per token: not a valid grouping", a,
                    hp->n_expert_groups, hp->n_group_used, hp->n_expert, hp->n_expert_used);
    if (hp->n_lora_kv <= 0 || hp->mla_k <= hp->n_rot || hp->mla_v <= 0 || hp->n_lora_q < 0)
        return fail(err, errlen, "%s: kv_lora_rank %d, key_length_mla %d (must exceed rope dims %d), "
                    "value_length_mla %d: not a latent-attention layout Strata implements", a, hp->n_lora_kv,
                    hp->mla_k, hp->n_rot, hp->mla_v);
    return 0;
}

/* deepseek2's attention scale: YaRN's magnitude enters squared through Q and K
 * (rope.scaling.yarn_log_multiplier, stored as 0.1 * mscale_all_dim), and the rotation's own
 * factor is divided by YaRN's built-in correction (facts of the reference's implementation). */
static int deepseek2_scales(const st_gguf *g, const char *a, st_hparams *hp, char *err, size_t errlen) {
    float log_mul = 0.0f;
    if (key_f32(g, a, "rope.scaling.yarn_log_multiplier", 0, 0.0f, &log_mul, err, errlen)) return -1;
    const float f = 1.0f / hp->rope_freq_scale, lf = logf(f);
    float cp = hp->yarn_attn_factor; /* rope.scaling.attn_factor */
    if (hp->rope_scaling == ST_ROPE_SCALING_YARN) {
        const float ms1 = f <= 1.0f ? 1.0f : 1.0f + 0.1f * lf; /* YaRN's magnitude at mscale 1 */
        cp = (log_mul != 0.0f ? 1.0f : ms1) * cp / (1.0f + 0.1f * lf);
    }
    const float mscale = cp * (1.0f + 0.1f * lf) * (1.0f + log_mul * lf);
    hp->attn_scale *= mscale * mscale;
    hp->yarn_attn_factor = cp;
    return 0;
}

/* Rope: rotated dimensions, base, scaling type and factor, YaRN's original context. */
static int read_rope(const st_gguf *g, const char *a, st_hparams *hp, char *err, size_t errlen) {
    if (key_i32(g, a, "rope.dimension_count", 0, hp->head_dim, &hp->n_rot, err, errlen)) return -1;
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2)
        return fail(err, errlen, "%s: rope.dimension_count %d must be even and <= head dim %d", a,
                    hp->n_rot, hp->head_dim);
    if (key_f32(g, a, "rope.freq_base", 0, 10000.0f, &hp->rope_freq_base, err, errlen)) return -1;
    char key[128];
    const char *stype = NULL;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    if (st_gguf_get_str(g, key, &stype, NULL) != ST_GGUF_OK) stype = "linear"; /* the reference's default */
    float factor = 1.0f;
    if (key_f32(g, a, "rope.scaling.factor", 0, 0.0f, &factor, err, errlen)) return -1;
    if (factor == 0.0f && key_f32(g, a, "rope.scale_linear", 0, 1.0f, &factor, err, errlen)) return -1;
    if (factor <= 0.0f) factor = 1.0f;
    if (!strcmp(stype, "none") || !strcmp(stype, "")) {
        hp->rope_scaling = ST_ROPE_SCALING_NONE;
        factor = 1.0f;
    } else if (!strcmp(stype, "linear")) {
        hp->rope_scaling = ST_ROPE_SCALING_LINEAR;
    } else if (!strcmp(stype, "yarn")) {
        hp->rope_scaling = ST_ROPE_SCALING_YARN;
    } else {
        return fail(err, errlen, "%s: rope scaling type '%s' is not supported (none, linear, yarn)",
                    a, stype);
    }
    hp->rope_freq_scale = 1.0f / factor;
    if (key_i32(g, a, "rope.scaling.original_context_length", 0, hp->n_ctx_train, &hp->n_ctx_orig,
                err, errlen))
        return -1;
    hp->yarn_ext_factor = hp->rope_scaling == ST_ROPE_SCALING_YARN ? 1.0f : 0.0f;
    /* the reference multiplies the rotation by rope.scaling.attn_factor in every mode; YaRN's
     * own magnitude correction is applied inside the rope op. The YaRN betas keep their
     * defaults: the reference reads them for none of these families. */
    if (key_f32(g, a, "rope.scaling.attn_factor", 0, 1.0f, &hp->yarn_attn_factor, err, errlen)) return -1;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;

    return 0;
}

/* Experts: counts and widths (the shared expert's for qwen2moe). */
static int read_experts(const st_gguf *g, const char *a, st_hparams *hp, char *err, size_t errlen) {
    if (st_arch_is_moe_family(hp->arch) && (hp->n_expert <= 0 || hp->n_expert_used <= 0))
        return fail(err, errlen, "%s: %s.expert_count and %s.expert_used_count must be > 0", a, a, a);
    if (hp->n_expert > 0) {
        if (hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert)
            return fail(err, errlen, "%s: expert_used_count %d must be in 1..expert_count %d", a,
                        hp->n_expert_used, hp->n_expert);
        /* llama (Mixtral) and olmoe store the expert width as feed_forward_length */
        int32_t def_ff = (hp->arch == ST_ARCH_LLAMA || hp->arch == ST_ARCH_OLMOE)
                             ? hp->n_ff
                             : (hp->n_ff > 0 ? hp->n_ff / hp->n_expert_used : 0);
        if (key_i32(g, a, "expert_feed_forward_length", 0, def_ff, &hp->n_ff_exp, err, errlen)) return -1;
        if (hp->n_ff_exp <= 0)
            return fail(err, errlen, "%s: missing metadata key '%s.expert_feed_forward_length'", a, a);
        if (hp->arch == ST_ARCH_QWEN2MOE) {
            if (key_i32(g, a, "expert_shared_feed_forward_length", 0, hp->n_ff, &hp->n_ff_shexp, err,
                        errlen))
                return -1;
            if (hp->n_ff_shexp <= 0)
                return fail(err, errlen, "%s: missing metadata key "
                            "'%s.expert_shared_feed_forward_length'", a, a);
        }
    }
    return 0;
}

int st_arch_read_hparams(const st_gguf *g, st_hparams *hp, char *err, size_t errlen) {
    memset(hp, 0, sizeof *hp);
    const char *an = NULL;
    if (st_gguf_get_str(g, "general.architecture", &an, NULL) != ST_GGUF_OK)
        return fail(err, errlen, "missing metadata key 'general.architecture'");
    int id = st_arch_from_name(an);
    if (id < 0)
        return fail(err, errlen, "unsupported architecture '%s' (supported: %s)", an, k_supported);
    hp->arch = (st_arch_id)id;
    const char *a = st_arch_name(id);

    if (key_i32(g, a, "block_count", 1, 0, &hp->n_layer, err, errlen)) return -1;
    if (key_i32(g, a, "embedding_length", 1, 0, &hp->n_embd, err, errlen)) return -1;
    if (key_i32(g, a, "attention.head_count", 1, 0, &hp->n_head, err, errlen)) return -1;
    if (key_i32(g, a, "expert_count", 0, 0, &hp->n_expert, err, errlen)) return -1;
    if (key_i32(g, a, "expert_used_count", 0, 0, &hp->n_expert_used, err, errlen)) return -1;
    if (key_i32(g, a, "feed_forward_length", hp->n_expert <= 0, 0, &hp->n_ff, err, errlen)) return -1;
    if (key_i32(g, a, "attention.head_count_kv", 0, hp->n_head, &hp->n_head_kv, err, errlen)) return -1;
    if (hp->n_layer <= 0 || hp->n_layer > 4096)
        return fail(err, errlen, "%s: %s.block_count = %d is out of range", a, a, hp->n_layer);
    if (hp->arch == ST_ARCH_GLM4MOE) { /* the NextN layers follow the trunk: not run */
        if (key_i32(g, a, "nextn_predict_layers", 0, 0, &hp->n_nextn, err, errlen)) return -1;
        if (hp->n_nextn < 0 || hp->n_nextn >= hp->n_layer)
            return fail(err, errlen, "%s: nextn_predict_layers %d with block_count %d", a, hp->n_nextn, hp->n_layer);
        hp->n_layer -= hp->n_nextn;
    }
    if (hp->n_embd <= 0) return fail(err, errlen, "%s: %s.embedding_length must be > 0", a, a);
    if (hp->n_head <= 0 || hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv)
        return fail(err, errlen, "%s: head_count %d / head_count_kv %d is not a valid grouping", a,
                    hp->n_head, hp->n_head_kv);
    if (key_i32(g, a, "attention.key_length", 0, hp->n_embd / hp->n_head, &hp->head_dim, err, errlen))
        return -1;
    if (key_i32(g, a, "attention.value_length", 0, hp->head_dim, &hp->head_dim_v, err, errlen))
        return -1;
    if (hp->head_dim <= 0 || hp->head_dim % 2 || (hp->head_dim_v != hp->head_dim && hp->arch != ST_ARCH_DEEPSEEK2))
        return fail(err, errlen, "%s: head dimension %d / value length %d not supported (must be "
                    "even and equal)", a, hp->head_dim, hp->head_dim_v);
    if (key_i32(g, a, "context_length", 0, 4096, &hp->n_ctx_train, err, errlen)) return -1;
    if (key_f32(g, a, "attention.layer_norm_rms_epsilon", 1, 0, &hp->rms_eps, err, errlen)) return -1;

    if (read_rope(g, a, hp, err, errlen) || read_experts(g, a, hp, err, errlen)) return -1;
    /* The gating of these families is fixed (softmax; renormalized for llama and qwen3moe):
     * expert_gating_func, expert_weights_norm and expert_weights_scale are not read for them
     * by the reference either, so a file's values there do not change the math (the audit
     * lists them). */
    if (hp->arch == ST_ARCH_DEEPSEEK2 && read_deepseek2(g, a, hp, err, errlen)) return -1;
    if (hp->arch == ST_ARCH_GLM4MOE && read_moe_extras(g, a, hp, 2, err, errlen)) return -1;
    if (hp->arch == ST_ARCH_GPTOSS && read_gptoss(g, a, hp, err, errlen)) return -1;
    st_arch_apply_family_rules(hp);
    if (hp->arch == ST_ARCH_DEEPSEEK2 && deepseek2_scales(g, a, hp, err, errlen)) return -1;

    /* vocabulary size from the embedding table (the authority), else the tokenizer */
    const st_gguf_tensor *te = st_gguf_tensor_find(g, "token_embd.weight");
    if (te) {
        hp->n_vocab = (int32_t)te->ne[1];
    } else {
        st_gguf_type et;
        uint64_t n = 0;
        if (st_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n) == ST_GGUF_OK) hp->n_vocab = (int32_t)n;
    }
    hp->tied_output = st_gguf_tensor_find(g, "output.weight") == NULL;
    return 0;
}

static void shape_str(char *buf, size_t len, int n_dims, const int64_t *ne) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int i = 0; i < n_dims && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)ne[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

/* Float types a norm/bias/scale vector may use (converted to F32 at load). */
static int is_float_type(uint32_t t) { return t == ST_TYPE_F32 || t == ST_TYPE_F16 || t == ST_TYPE_BF16; }

/* Checks tensor t against spec s: shape and type. 0, or -1 with err. */
static int check_spec(const char *a, const st_tensor_spec *s, const st_gguf_tensor *t, char *err, size_t errlen) {
    for (int k = 0; k < 4; k++) {
        int64_t have = k < (int)t->n_dims ? t->ne[k] : 1;
        if (have == s->ne[k]) continue;
        char want[96], got[96];
        shape_str(want, sizeof want, s->n_dims, s->ne);
        shape_str(got, sizeof got, (int)t->n_dims, t->ne);
        return fail(err, errlen, "%s: tensor '%s' has shape %s, expected %s", a, s->name, got, want);
    }
    if (!st_type_get(t->type))
        return fail(err, errlen, "%s: tensor '%s' has unknown type id %u", a, s->name, t->type);
    if (!s->unused && st_tensor_role_is_vector(s->role) && !is_float_type(t->type))
        return fail(err, errlen, "%s: tensor '%s' is %s; norms, biases and scales must be F32/F16/BF16", a,
                    s->name, st_type_name(t->type));
    return 0;
}

static int missing(const char *a, const st_gguf *g, const st_tensor_spec *s, char *err, size_t errlen) {
    if (s->role == ST_T_FFN_GATE_EXPS) { /* older converters wrote one tensor per expert */
        char old[96];
        snprintf(old, sizeof old, "blk.%d.ffn_gate.0.weight", s->layer);
        if (st_gguf_tensor_find(g, old))
            return fail(err, errlen, "%s: missing tensor '%s': this file stores experts one tensor each "
                        "('%s', an older layout); convert it again with a current converter", a, s->name, old);
    }
    return fail(err, errlen, "%s: missing tensor '%s'", a, s->name);
}

static void keep(st_model_desc *d, const st_tensor_spec *s, const st_gguf_tensor *t) {
    if (s->layer < 0) {
        if (s->role == ST_T_TOKEN_EMBD) d->token_embd = t;
        else if (s->role == ST_T_OUTPUT_NORM) d->output_norm = t;
        else if (s->role == ST_T_OUTPUT) d->output = t;
    } else {
        d->layers[s->layer].t[s->role] = t;
    }
    d->bytes_total += t->nbytes;
    if (st_tensor_role_is_expert(s->role)) d->bytes_experts += t->nbytes;
    else d->bytes_nonexpert += t->nbytes;
}

/* Matches the file's tensors with the family's specs: each spec found is checked and kept in
 * d (when given), a loaded-unused one is noted in the audit, and every tensor of the file no
 * spec names is a refusal in the audit. 0, or -1 with err (missing or misshaped tensor). */
static int match_tensors(const st_gguf *g, const st_hparams *hp, st_model_desc *d, st_audit *au, char *err,
                         size_t errlen) {
    const char *a = hp->arch_name;
    const int64_t n = st_arch_tensor_specs(hp, NULL, 0), nt = st_gguf_tensor_count(g);
    st_tensor_spec *specs = calloc((size_t)n, sizeof *specs);
    unsigned char *seen = calloc((size_t)nt + 1, 1);
    int rc = 0;
    if (!specs || !seen) rc = fail(err, errlen, "out of memory describing the model");
    if (!rc) st_arch_tensor_specs(hp, specs, n);
    for (int64_t i = 0; !rc && i < n; i++) {
        const st_tensor_spec *s = &specs[i];
        const int64_t ti = st_gguf_tensor_index(g, s->name);
        if (ti < 0) {
            if (s->required) rc = missing(a, g, s, err, errlen);
            continue;
        }
        const st_gguf_tensor *t = st_gguf_tensor_at(g, ti);
        seen[ti] = 1;
        if ((rc = check_spec(a, s, t, err, errlen))) break;
        if (s->unused) {
            const int nextn = s->layer >= hp->n_layer;
            if (st_audit_add(au, ST_AUDIT_UNUSED, s->name, "%s", nextn ? "NextN (multi-token prediction) layer: "
                             "loaded-unused until speculative decoding uses it" : "loaded but never used by the "
                             "family's forward (as in the reference): ignored"))
                rc = fail(err, errlen, "out of memory");
        } else if (d) {
            keep(d, s, t);
        }
    }
    for (int64_t i = 0; !rc && i < nt; i++) {
        if (seen[i]) continue;
        const char *name = st_gguf_tensor_at(g, i)->name;
        int layer = -1;
        if (hp->n_nextn > 0 && sscanf(name, "blk.%d.", &layer) == 1 && layer >= hp->n_layer &&
            layer < hp->n_layer + hp->n_nextn) {
            if (st_audit_add(au, ST_AUDIT_UNUSED, name, "NextN (multi-token prediction) layer: loaded-unused until "
                             "speculative decoding uses it"))
                rc = fail(err, errlen, "out of memory");
            continue;
        }
        if (st_audit_add(au, ST_AUDIT_REFUSED, st_gguf_tensor_at(g, i)->name, "not part of the %s layout "
                         "Strata implements: refused rather than ignored", a))
            rc = fail(err, errlen, "out of memory");
    }
    free(specs);
    free(seen);
    return rc;
}

int st_arch_audit(const st_gguf *g, st_audit *au, char *err, size_t errlen) {
    memset(au, 0, sizeof *au);
    st_hparams hp;
    if (st_arch_read_hparams(g, &hp, err, errlen)) return -1;
    if (match_tensors(g, &hp, NULL, au, err, errlen)) return -1;
    if (st_arch_audit_keys(g, &hp, au)) return fail(err, errlen, "out of memory auditing metadata");
    return 0;
}

/* The first refusal of an audit as an error message. */
static void refusal(const st_hparams *hp, const st_audit *au, char *err, size_t errlen) {
    for (int32_t i = 0; i < au->n; i++) {
        const st_audit_item *it = &au->items[i];
        if (it->kind != ST_AUDIT_REFUSED) continue;
        char more[96] = "";
        if (au->n_refused > 1) snprintf(more, sizeof more, " (and %d more)", au->n_refused - 1);
        fail(err, errlen, "%s: '%s' %s%s; 'strata gguf --check FILE' lists what the file holds that Strata "
             "does not use", hp->arch_name, it->name, it->why, more);
        return;
    }
}

/* glm4moe's per-head Q/K norms are optional: every layer has both or none. */
static int glm4moe_qk_norm(st_model_desc *d, char *err, size_t errlen) {
    const int have = d->layers[0].t[ST_T_ATTN_Q_NORM] != NULL;
    for (int l = 0; l < d->hp.n_layer; l++) {
        const st_layer_desc *L = &d->layers[l];
        if ((L->t[ST_T_ATTN_Q_NORM] != NULL) != have || (L->t[ST_T_ATTN_K_NORM] != NULL) != have)
            return fail(err, errlen, "%s: layer %d: attn_q_norm/attn_k_norm present in some layers only",
                        d->hp.arch_name, l);
    }
    d->hp.qk_norm = have ? ST_QK_NORM_HEAD : ST_QK_NORM_NONE;
    return 0;
}

st_model_desc *st_arch_describe(const st_gguf *g, char *err, size_t errlen) {
    st_hparams hp;
    if (st_arch_read_hparams(g, &hp, err, errlen)) return NULL;
    st_audit au;
    if (st_arch_audit(g, &au, err, errlen)) return NULL;
    if (au.n_refused) {
        refusal(&hp, &au, err, errlen);
        st_audit_free(&au);
        return NULL;
    }
    st_audit_free(&au);
    st_model_desc *d = calloc(1, sizeof *d);
    if (d) d->layers = calloc((size_t)hp.n_layer, sizeof *d->layers);
    if (!d || !d->layers) {
        st_model_desc_free(d);
        fail(err, errlen, "out of memory describing the model");
        return NULL;
    }
    d->hp = hp;
    d->gguf = g;
    st_audit none;
    memset(&none, 0, sizeof none);
    int rc = match_tensors(g, &hp, d, &none, err, errlen);
    st_audit_free(&none);
    if (rc) {
        st_model_desc_free(d);
        return NULL;
    }
    if (!d->output) d->output = d->token_embd;
    d->hp.tied_output = d->output == d->token_embd;
    if (hp.arch == ST_ARCH_GLM4MOE && glm4moe_qk_norm(d, err, errlen)) {
        st_model_desc_free(d);
        return NULL;
    }
    for (int l = 0; l < hp.n_layer; l++) {
        st_layer_desc *L = &d->layers[l];
        L->is_moe = hp.n_expert > 0 && l >= hp.n_dense_lead;
        if (L->t[ST_T_ATTN_Q_BIAS] || L->t[ST_T_ATTN_K_BIAS] || L->t[ST_T_ATTN_V_BIAS]) d->hp.has_qkv_bias = 1;
        if (!L->is_moe) continue;
        if (!L->t[ST_T_FFN_GATE_UP_EXPS] && (!L->t[ST_T_FFN_GATE_EXPS] || !L->t[ST_T_FFN_UP_EXPS])) {
            fail(err, errlen, "%s: missing tensor 'blk.%d.ffn_gate_exps.weight' (or 'blk.%d.ffn_gate_up_exps.weight')",
                 hp.arch_name, l, l);
            st_model_desc_free(d);
            return NULL;
        }
        uint64_t slice = 0;
        for (int r = 0; r < ST_T_ROLE_COUNT; r++)
            if (st_tensor_role_is_expert((st_tensor_role)r) && L->t[r])
                slice += L->t[r]->nbytes / (uint64_t)hp.n_expert;
        if (slice > d->bytes_expert_slice) d->bytes_expert_slice = slice;
    }
    return d;
}

void st_model_desc_free(st_model_desc *d) {
    if (!d) return;
    free(d->layers);
    free(d);
}

void st_model_desc_summary(const st_model_desc *d, char *buf, size_t len) {
    const st_hparams *h = &d->hp;
    int o = snprintf(buf, len, "%s: %d layers, embd %d, heads %d/%d x %d, vocab %d", h->arch_name,
                     h->n_layer, h->n_embd, h->n_head, h->n_head_kv, h->head_dim, h->n_vocab);
    if (o < 0 || (size_t)o >= len) return;
    if (h->n_expert > 0)
        o += snprintf(buf + o, len - (size_t)o, ", %d experts (%d used) ff %d%s", h->n_expert,
                      h->n_expert_used, h->n_ff_exp, h->n_ff_shexp ? " + shared" : "");
    else
        o += snprintf(buf + o, len - (size_t)o, ", ff %d", h->n_ff);
    if (o < 0 || (size_t)o >= len) return;
    snprintf(buf + o, len - (size_t)o, ", %.1f MiB", (double)d->bytes_total / (1024.0 * 1024.0));
}
