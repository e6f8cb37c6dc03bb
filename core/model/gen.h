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

typedef struct st_gen_params {
    st_hparams hp;          /* arch and sizes; n_vocab is set from the vocabulary */
    uint32_t wtype;         /* matrices' type (rows that do not fit its blocks fall back) */
    uint64_t seed;
    float router_skew;      /* 0 = uniform routing; larger = a few experts dominate */
    const char *vocab_from; /* GGUF whose tokenizer.* keys are copied, or NULL (built-in) */
    int32_t vocab_size;     /* built-in vocabulary padded to this many tokens (0 = natural) */
    int progress;           /* nonzero: a progress line on stderr */
} st_gen_params;

/* Fills p for a named preset: "tiny", "demo" (the default: a few MB), "dense-500m",
 * "bench-moe-1.5g", "qwen3-30b-a3b". `arch` (may be NULL) overrides the preset's family
 * where the preset allows it (tiny, demo). Returns 0, or -1 for an unknown name. */
int st_gen_preset(const char *name, const char *arch, st_gen_params *p);
/* Names of the presets, ", "-separated (static storage). */
const char *st_gen_preset_names(void);

/* Writes the model to `path`. Returns 0, or -1 with a message in err (the file is removed). */
int st_gen_model(const st_gen_params *p, const char *path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
