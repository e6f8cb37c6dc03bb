/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata-key rule: every key of a file whose value changes the math is honoured or the
 * file is refused. Each key under "<arch>." is looked up in the table below:
 *   USED     Strata reads and applies it (st_arch_read_hparams);
 *   NEUTRAL  the reference reads it for this family and Strata does not implement it: accepted
 *            only at its neutral value (the one that leaves the math unchanged), else refused;
 *   NO_MATH  read by the reference without effect on the logits of these families.
 * A key absent from the table is not read by the reference implementation of the family
 * either (facts of llama.cpp's loader; its model saver writes every hparam it knows, most at
 * their defaults), so it cannot change the math: it is reported, not refused. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"

typedef enum key_policy { KEY_USED, KEY_NEUTRAL, KEY_NO_MATH } key_policy;

/* The value that leaves the math unchanged, for NEUTRAL keys. */
typedef enum key_neutral {
    NEUTRAL_ZERO,     /* 0 / false / an array of zeros */
    NEUTRAL_LE_ONE,   /* 0 or 1 (a group count) */
    NEUTRAL_TRUE,     /* true */
    NEUTRAL_ZERO_OR_EMBD /* 0 or n_embd (an output width) */
} key_neutral;

typedef struct key_rule {
    const char *suffix; /* after "<arch>." */
    key_policy policy;
    key_neutral neutral;
    const char *what;   /* what the key means, for messages */
    int family;         /* 0: every family; else st_arch_id + 1: that family only */
} key_rule;

#define DS2 (ST_ARCH_DEEPSEEK2 + 1)
#define GLM (ST_ARCH_GLM4MOE + 1)
#define OSS (ST_ARCH_GPTOSS + 1)

/* Keys llama.cpp's loader reads for every family Strata implements. */
static const key_rule k_rules[] = {
    {"context_length", KEY_USED, 0, "training context", 0},
    {"embedding_length", KEY_USED, 0, "model width", 0},
    {"block_count", KEY_USED, 0, "layers", 0},
    {"feed_forward_length", KEY_USED, 0, "FFN width", 0},
    {"attention.head_count", KEY_USED, 0, "heads", 0},
    {"attention.head_count_kv", KEY_USED, 0, "KV heads", 0},
    {"attention.key_length", KEY_USED, 0, "head dimension", 0},
    {"attention.value_length", KEY_USED, 0, "value head dimension", 0},
    {"attention.layer_norm_rms_epsilon", KEY_USED, 0, "RMS norm epsilon", 0},
    {"rope.dimension_count", KEY_USED, 0, "rotated dimensions", 0},
    {"rope.freq_base", KEY_USED, 0, "rope base", 0},
    {"rope.scaling.type", KEY_USED, 0, "rope scaling", 0},
    {"rope.scaling.factor", KEY_USED, 0, "rope scaling factor", 0},
    {"rope.scale_linear", KEY_USED, 0, "rope scaling factor (old name)", 0},
    {"rope.scaling.original_context_length", KEY_USED, 0, "YaRN original context", 0},
    {"rope.scaling.attn_factor", KEY_USED, 0, "rope magnitude factor", 0},
    {"expert_count", KEY_USED, 0, "experts", 0},
    {"expert_used_count", KEY_USED, 0, "experts per token", 0},
    {"expert_feed_forward_length", KEY_USED, 0, "expert FFN width", 0},
    {"expert_shared_feed_forward_length", KEY_USED, 0, "shared expert FFN width", 0},
    {"vocab_size", KEY_USED, 0, "vocabulary size", 0},
    {"nextn_predict_layers", KEY_NEUTRAL, NEUTRAL_ZERO, "multi-token-prediction layers at the end", 0},
    {"expert_group_count", KEY_NEUTRAL, NEUTRAL_LE_ONE, "group-limited expert routing", 0},
    {"attention.causal", KEY_NEUTRAL, NEUTRAL_TRUE, "causal attention", 0},
    {"embedding_length_out", KEY_NEUTRAL, NEUTRAL_ZERO_OR_EMBD, "output width", 0},
    {"expert_group_used_count", KEY_NO_MATH, 0, "used only with expert_group_count > 1", 0},
    {"rope.scaling.alpha", KEY_NO_MATH, 0, "used by no family Strata implements", 0},
    {"rope.scaling.finetuned", KEY_NO_MATH, 0, "informational", 0},
    {"pooling_type", KEY_NO_MATH, 0, "affects embeddings output only, not logits", 0},
    /* deepseek2 */
    {"leading_dense_block_count", KEY_USED, 0, "leading dense layers", DS2},
    {"attention.q_lora_rank", KEY_USED, 0, "Q rank", DS2},
    {"attention.kv_lora_rank", KEY_USED, 0, "KV latent rank", DS2},
    {"attention.key_length_mla", KEY_USED, 0, "MLA key head size", DS2},
    {"attention.value_length_mla", KEY_USED, 0, "MLA value head size", DS2},
    {"expert_shared_count", KEY_USED, 0, "shared experts", DS2},
    {"expert_weights_scale", KEY_USED, 0, "expert weight scale", DS2},
    {"expert_weights_norm", KEY_USED, 0, "expert weight renormalization", DS2},
    {"expert_gating_func", KEY_USED, 0, "expert gating", DS2},
    {"rope.scaling.yarn_log_multiplier", KEY_USED, 0, "YaRN attention magnitude", DS2},
    {"expert_group_count", KEY_USED, 0, "group-limited expert routing", DS2},
    {"expert_group_used_count", KEY_USED, 0, "expert groups kept per token", DS2},
    {"attention.temperature_scale", KEY_NEUTRAL, NEUTRAL_ZERO, "attention temperature tuning", DS2},
    {"attention.temperature_length", KEY_NO_MATH, 0, "used only with attention.temperature_scale", DS2},
    /* glm4moe */
    {"leading_dense_block_count", KEY_USED, 0, "leading dense layers", GLM},
    {"expert_shared_count", KEY_USED, 0, "shared experts", GLM},
    {"expert_weights_scale", KEY_USED, 0, "expert weight scale", GLM},
    {"expert_weights_norm", KEY_USED, 0, "expert weight renormalization", GLM},
    {"expert_gating_func", KEY_USED, 0, "expert gating", GLM},
    {"nextn_predict_layers", KEY_USED, 0, "NextN layers (loaded-unused)", GLM},
    {"rope.dimension_sections", KEY_NO_MATH, 0, "multi-section rope: for text tokens the plain rope", GLM},
    /* gpt-oss */
    {"attention.sliding_window", KEY_USED, 0, "sliding window", OSS},
    {"attention.sliding_window_pattern", KEY_USED, 0, "sliding-window layer period", OSS},
    {"rope.freq_base_swa", KEY_USED, 0, "rope base of the sliding-window layers", OSS},
};

/* The family's own rule for a key before the rule of every family. */
static const key_rule *find_rule(const char *suffix, int arch) {
    const key_rule *generic = NULL;
    for (size_t i = 0; i < sizeof k_rules / sizeof k_rules[0]; i++) {
        if (strcmp(k_rules[i].suffix, suffix)) continue;
        if (k_rules[i].family == arch + 1) return &k_rules[i];
        if (!k_rules[i].family) generic = &k_rules[i];
    }
    return generic;
}

/* Numeric value of a scalar (bools as 0/1); 0 for strings. */
static double scalar_value(const st_gguf_value *v) {
    switch (v->type) {
    case ST_GGUF_TYPE_I8: case ST_GGUF_TYPE_I16: case ST_GGUF_TYPE_I32: case ST_GGUF_TYPE_I64:
        return (double)v->v.i64;
    case ST_GGUF_TYPE_F32: case ST_GGUF_TYPE_F64: return v->v.f64;
    case ST_GGUF_TYPE_STRING: return 0.0;
    default: return (double)v->v.u64;
    }
}

/* Is pair i at the rule's neutral value? Arrays must hold it in every element. */
static int is_neutral(const st_gguf *g, int64_t i, const key_rule *r, const st_hparams *hp) {
    st_gguf_value v;
    if (st_gguf_kv_get(g, i, &v) != ST_GGUF_OK) return 0;
    uint64_t n = v.type == ST_GGUF_TYPE_ARRAY ? v.v.arr.len : 1;
    for (uint64_t j = 0; j < n; j++) {
        st_gguf_value e = v;
        if (v.type == ST_GGUF_TYPE_ARRAY && st_gguf_arr_get(g, i, j, &e) != ST_GGUF_OK) return 0;
        double x = scalar_value(&e);
        int ok = 0;
        switch (r->neutral) {
        case NEUTRAL_ZERO: ok = x == 0.0; break;
        case NEUTRAL_LE_ONE: ok = x <= 1.0; break;
        case NEUTRAL_TRUE: ok = x != 0.0; break;
        case NEUTRAL_ZERO_OR_EMBD: ok = x == 0.0 || x == (double)hp->n_embd; break;
        }
        if (!ok) return 0;
    }
    return 1;
}

/* Keys outside any architecture's namespace that never touch the forward. */
static int is_foreign_namespace(const char *key) {
    static const char *const ns[] = {"general.", "tokenizer.", "split.", "quantize.", "imatrix."};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        if (!strncmp(key, ns[i], strlen(ns[i]))) return 1;
    return 0;
}

int st_arch_audit_keys(const st_gguf *g, const st_hparams *hp, st_audit *a) {
    const char *an = hp->arch_name;
    const size_t alen = strlen(an);
    for (int64_t i = 0; i < st_gguf_kv_count(g); i++) {
        const char *key = st_gguf_kv_key(g, i);
        if (!key || is_foreign_namespace(key)) continue;
        if (strncmp(key, an, alen) || key[alen] != '.') {
            if (st_audit_add(a, ST_AUDIT_NOT_READ, key, "not in the '%s.' namespace: not read", an)) return -1;
            continue;
        }
        const key_rule *r = find_rule(key + alen + 1, hp->arch);
        if (!r) {
            if (st_audit_add(a, ST_AUDIT_NOT_READ, key, "not read by %s (nor by the reference implementation "
                             "of %s): no effect", an, an))
                return -1;
            continue;
        }
        if (r->policy == KEY_USED) continue;
        if (r->policy == KEY_NO_MATH) {
            if (st_audit_add(a, ST_AUDIT_NOT_READ, key, "%s: no effect on logits", r->what)) return -1;
            continue;
        }
        if (is_neutral(g, i, r, hp)) {
            if (st_audit_add(a, ST_AUDIT_NOT_READ, key, "%s: at its neutral value", r->what)) return -1;
            continue;
        }
        if (st_audit_add(a, ST_AUDIT_REFUSED, key, "%s: this value changes the math and Strata does not "
                         "implement it for %s", r->what, an))
            return -1;
    }
    return 0;
}

int st_audit_add(st_audit *a, st_audit_kind kind, const char *name, const char *fmt, ...) {
    if (a->n == a->cap) {
        int32_t cap = a->cap ? a->cap * 2 : 32;
        st_audit_item *it = realloc(a->items, (size_t)cap * sizeof *it);
        if (!it) return -1;
        a->items = it;
        a->cap = cap;
    }
    st_audit_item *it = &a->items[a->n++];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    snprintf(it->name, sizeof it->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->why, sizeof it->why, fmt, ap);
    va_end(ap);
    if (kind == ST_AUDIT_REFUSED) a->n_refused++;
    return 0;
}

void st_audit_free(st_audit *a) {
    if (!a) return;
    free(a->items);
    memset(a, 0, sizeof *a);
}
