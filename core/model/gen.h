/* SPDX-License-Identifier: Apache-2.0 */
/* Random-weight model files for tests, demos and benchmarks: any supported family and
 * shape, any weight format, a real tokenizer copied from another GGUF or a small built-in
 * byte-level one. Tensors are streamed to disk one at a time, so huge files need little RAM.
 * Weights are finite and small (activations stay sane, norms near 1). */
#ifndef STRATA_MODEL_GEN_H
#define STRATA_MODEL_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Router modes. PLAIN: every matrix at its usual scale, router rows scaled by router_skew; with
 * random weights the residual stream drifts to a direction shared by all tokens, so the router
 * picks nearly the same experts at every position (good for exercising a cache, useless for
 * judging one). BALANCED: the output projections (attention output, FFN and expert down) are
 * written ST_GEN_BALANCED_OUT_SCALE times smaller (times ST_GEN_BALANCED_DEPTH / n_layer in
 * deeper models: the outputs of all layers share a component, whose sum would otherwise grow
 * with depth and skew the deep layers' routing), so the residual stream stays dominated by the
 * current token's embedding and routing is token-dependent and spread over every expert, as a
 * trained router with a load-balancing loss is (docs/memory.md lists the statistics it reaches;
 * tests/experts/test_route_stats.c checks them). */
#define ST_GEN_ROUTER_PLAIN 0
#define ST_GEN_ROUTER_BALANCED 1
#define ST_GEN_BALANCED_OUT_SCALE 0.05f
#define ST_GEN_BALANCED_DEPTH 8 /* beyond this many layers the factor shrinks as 1/n_layer */

typedef struct st_gen_params {
    st_hparams hp;          /* arch and sizes; n_vocab is set from the vocabulary */
    uint32_t wtype;         /* matrices' type (rows that do not fit its blocks fall back) */
    uint32_t expert_type;   /* routed experts' type (0: wtype; MXFP4 for gpt-oss files) */
    uint64_t seed;
    float router_skew;      /* ST_GEN_ROUTER_PLAIN: 0 = uniform rows; larger = a few experts dominate */
    int router;             /* ST_GEN_ROUTER_PLAIN or ST_GEN_ROUTER_BALANCED */
    const char *vocab_from; /* GGUF whose tokenizer.* keys are copied, or NULL (built-in) */
    int32_t vocab_size;     /* built-in vocabulary padded to this many tokens (0 = natural) */
    int progress;           /* nonzero: a progress line on stderr */
    int merged_gate_up;     /* deepseek2: experts' gate and up as one ffn_gate_up_exps tensor */
    int saver_extras;       /* nonzero: also what llama.cpp's model saver writes for every family:
                               Q/K/V biases, every weight's ".scale" (values near 1) and
                               ".input_scale", and hparam keys at values these families ignore or
                               hold neutral (gating keys, softcapping, group counts 0, ...) */
} st_gen_params;

/* Fills p for a named preset: "tiny", "demo" (the default: a few MB), "dense-500m",
 * "bench-moe-1.5g", "qwen3-30b-a3b". `arch` (may be NULL) overrides the preset's family
 * where the preset allows it (tiny, demo). Returns 0, or -1 for an unknown name. */
int st_gen_preset(const char *name, const char *arch, st_gen_params *p);
/* Names of the presets, ", "-separated (static storage). */
const char *st_gen_preset_names(void);

/* Copies metadata pair i of g (scalar, string or array) into w under `key`. 0 or -1. */
int st_gen_copy_key(st_gguf_writer *w, const st_gguf *g, int64_t i, const char *key);

/* Writes the model to `path`. Returns 0, or -1 with a message in err (the file is removed). */
int st_gen_model(const st_gen_params *p, const char *path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
