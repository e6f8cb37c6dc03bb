/* Hyperparameters from GGUF metadata and the tensor table matched against the family's
 * expected tensors. Reads only; never executes. */
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

static const char *k_supported = "llama, qwen2, qwen3, qwen2moe, qwen3moe, olmoe";

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

    int32_t v;
    if (key_i32(g, a, "block_count", 1, 0, &hp->n_layer, err, errlen)) return -1;
    if (key_i32(g, a, "embedding_length", 1, 0, &hp->n_embd, err, errlen)) return -1;
    if (key_i32(g, a, "attention.head_count", 1, 0, &hp->n_head, err, errlen)) return -1;
    if (key_i32(g, a, "expert_count", 0, 0, &hp->n_expert, err, errlen)) return -1;
    if (key_i32(g, a, "expert_used_count", 0, 0, &hp->n_expert_used, err, errlen)) return -1;
    const int moe = hp->n_expert > 0;
    if (key_i32(g, a, "feed_forward_length", !moe, 0, &hp->n_ff, err, errlen)) return -1;
    if (key_i32(g, a, "attention.head_count_kv", 0, hp->n_head, &hp->n_head_kv, err, errlen)) return -1;
    if (hp->n_layer <= 0 || hp->n_layer > 4096)
        return fail(err, errlen, "%s: %s.block_count = %d is out of range", a, a, hp->n_layer);
    if (hp->n_embd <= 0) return fail(err, errlen, "%s: %s.embedding_length must be > 0", a, a);
    if (hp->n_head <= 0 || hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv)
        return fail(err, errlen, "%s: head_count %d / head_count_kv %d is not a valid grouping", a,
                    hp->n_head, hp->n_head_kv);
    if (key_i32(g, a, "attention.key_length", 0, hp->n_embd / hp->n_head, &hp->head_dim, err, errlen))
        return -1;
    if (key_i32(g, a, "attention.value_length", 0, hp->head_dim, &hp->head_dim_v, err, errlen))
        return -1;
    if (hp->head_dim <= 0 || hp->head_dim % 2 || hp->head_dim_v != hp->head_dim)
        return fail(err, errlen, "%s: head dimension %d / value length %d not supported (must be "
                    "even and equal)", a, hp->head_dim, hp->head_dim_v);
    if (key_i32(g, a, "context_length", 0, 4096, &hp->n_ctx_train, err, errlen)) return -1;
    if (key_f32(g, a, "attention.layer_norm_rms_epsilon", 1, 0, &hp->rms_eps, err, errlen)) return -1;

    /* rope */
    if (key_i32(g, a, "rope.dimension_count", 0, hp->head_dim, &hp->n_rot, err, errlen)) return -1;
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2)
        return fail(err, errlen, "%s: rope.dimension_count %d must be even and <= head dim %d", a,
                    hp->n_rot, hp->head_dim);
    if (key_f32(g, a, "rope.freq_base", 0, 10000.0f, &hp->rope_freq_base, err, errlen)) return -1;
    char key[128];
    const char *stype = NULL;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    if (st_gguf_get_str(g, key, &stype, NULL) != ST_GGUF_OK) stype = "none";
    float factor = 1.0f;
    if (key_f32(g, a, "rope.scaling.factor", 0, 1.0f, &factor, err, errlen)) return -1;
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
    hp->yarn_attn_factor = 1.0f;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    if (key_f32(g, a, "rope.scaling.yarn_beta_fast", 0, 32.0f, &hp->yarn_beta_fast, err, errlen)) return -1;
    if (key_f32(g, a, "rope.scaling.yarn_beta_slow", 0, 1.0f, &hp->yarn_beta_slow, err, errlen)) return -1;

    /* experts */
    if (st_arch_is_moe_family(hp->arch) && (hp->n_expert <= 0 || hp->n_expert_used <= 0))
        return fail(err, errlen, "%s: %s.expert_count and %s.expert_used_count must be > 0", a, a, a);
    if (moe) {
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
    st_arch_apply_family_rules(hp);
    /* optional overrides of the family's gating rules */
    bool bnorm;
    snprintf(key, sizeof key, "%s.expert_weights_norm", a);
    if (st_gguf_get_bool(g, key, &bnorm) == ST_GGUF_OK) hp->expert_weights_norm = bnorm;
    float wscale;
    snprintf(key, sizeof key, "%s.expert_weights_scale", a);
    if (st_gguf_get_f32(g, key, &wscale) == ST_GGUF_OK && wscale > 0.0f) hp->expert_weights_scale = wscale;
    if (key_i32(g, a, "expert_gating_func", 0, 0, &v, err, errlen)) return -1;
    if (v == 2) hp->expert_gating = ST_ROUTER_SIGMOID;
    else if (v != 0 && v != 1)
        return fail(err, errlen, "%s: expert_gating_func %d is not supported", a, v);

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

/* Float types a norm/bias vector may use (converted to F32 at load). */
static int is_float_type(uint32_t t) { return t == ST_TYPE_F32 || t == ST_TYPE_F16 || t == ST_TYPE_BF16; }

static int role_is_vector(st_tensor_role r) {
    switch (r) {
    case ST_T_OUTPUT_NORM: case ST_T_ATTN_NORM: case ST_T_FFN_NORM: case ST_T_ATTN_Q_NORM:
    case ST_T_ATTN_K_NORM: case ST_T_ATTN_Q_BIAS: case ST_T_ATTN_K_BIAS: case ST_T_ATTN_V_BIAS:
        return 1;
    default: return 0;
    }
}

st_model_desc *st_arch_describe(const st_gguf *g, char *err, size_t errlen) {
    st_hparams hp;
    if (st_arch_read_hparams(g, &hp, err, errlen)) return NULL;
    const char *a = hp.arch_name;
    if (hp.arch == ST_ARCH_LLAMA && st_gguf_tensor_find(g, "rope_freqs.weight")) {
        fail(err, errlen, "%s: tensor 'rope_freqs.weight' (per-dimension rope frequency factors) "
             "is not supported", a);
        return NULL;
    }
    int64_t n = st_arch_tensor_specs(&hp, NULL, 0);
    st_tensor_spec *specs = calloc((size_t)n, sizeof *specs);
    st_model_desc *d = calloc(1, sizeof *d);
    if (d) d->layers = calloc((size_t)hp.n_layer, sizeof *d->layers);
    if (!specs || !d || !d->layers) {
        free(specs);
        st_model_desc_free(d);
        fail(err, errlen, "out of memory describing the model");
        return NULL;
    }
    st_arch_tensor_specs(&hp, specs, n);
    d->hp = hp;
    d->gguf = g;
    for (int64_t i = 0; i < n; i++) {
        const st_tensor_spec *s = &specs[i];
        const st_gguf_tensor *t = st_gguf_tensor_find(g, s->name);
        if (!t) {
            if (!s->required) continue;
            if (s->role == ST_T_FFN_GATE_EXPS) { /* older converters wrote one tensor per expert */
                char old[96];
                snprintf(old, sizeof old, "blk.%d.ffn_gate.0.weight", s->layer);
                if (st_gguf_tensor_find(g, old)) {
                    fail(err, errlen, "%s: missing tensor '%s': this file stores experts one tensor each "
                         "('%s', an older layout); convert it again with a current converter", a, s->name, old);
                    goto fail;
                }
            }
            fail(err, errlen, "%s: missing tensor '%s'", a, s->name);
            goto fail;
        }
        int ok = 1;
        for (int k = 0; k < 4; k++) {
            int64_t have = k < (int)t->n_dims ? t->ne[k] : 1;
            if (have != s->ne[k]) ok = 0;
        }
        if (!ok) {
            char want[96], have[96];
            shape_str(want, sizeof want, s->n_dims, s->ne);
            shape_str(have, sizeof have, (int)t->n_dims, t->ne);
            fail(err, errlen, "%s: tensor '%s' has shape %s, expected %s", a, s->name, have, want);
            goto fail;
        }
        if (!st_type_get(t->type)) {
            fail(err, errlen, "%s: tensor '%s' has unknown type id %u", a, s->name, t->type);
            goto fail;
        }
        if (role_is_vector(s->role) && !is_float_type(t->type)) {
            fail(err, errlen, "%s: tensor '%s' is %s; norms and biases must be F32/F16/BF16", a,
                 s->name, st_type_name(t->type));
            goto fail;
        }
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
    if (!d->output) d->output = d->token_embd;
    d->hp.tied_output = d->output == d->token_embd;
    /* the qwen2 families' biases come together or not at all */
    for (int l = 0; l < hp.n_layer; l++) {
        st_layer_desc *L = &d->layers[l];
        L->is_moe = hp.n_expert > 0;
        int nb = !!L->t[ST_T_ATTN_Q_BIAS] + !!L->t[ST_T_ATTN_K_BIAS] + !!L->t[ST_T_ATTN_V_BIAS];
        if (nb) d->hp.has_qkv_bias = 1;
        if (L->is_moe) {
            uint64_t slice = 0;
            for (int r = ST_T_FFN_GATE_EXPS; r <= ST_T_FFN_DOWN_EXPS; r++)
                slice += L->t[r]->nbytes / (uint64_t)hp.n_expert;
            if (slice > d->bytes_expert_slice) d->bytes_expert_slice = slice;
        }
    }
    free(specs);
    return d;
fail:
    free(specs);
    st_model_desc_free(d);
    return NULL;
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
