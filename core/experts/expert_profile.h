/* SPDX-License-Identifier: Apache-2.0 */
/* Expert profile files: which (layer, expert) the router picks on real prompts, ranked, to seed
 * the device cache (st_expert_cache_seed) or to keep it fixed (policy profile). Text, so it can
 * be read and diffed:
 *   strata-expert-profile 1 <n_layer> <n_expert>
 *   <layer> <expert> <count>        one line per pair used at least once, count descending
 * Counts come from st_model_expert_counts ([n_layer][n_expert]) or any other recorder. */
#ifndef STRATA_EXPERT_PROFILE_H
#define STRATA_EXPERT_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_expert_profile {
    int32_t n_layer, n_expert;
    int64_t n;         /* ranked entries */
    int32_t *layer;    /* [n] */
    int32_t *expert;   /* [n] */
    uint64_t *count;   /* [n], non-increasing */
} st_expert_profile;

/* Ranks counts [n_layer][n_expert] (count descending; ties: lower layer, then lower expert)
 * into a profile owned by the caller (st_expert_profile_free). NULL with err when out of memory
 * or the sizes are not positive. */
st_expert_profile *st_expert_profile_from_counts(int32_t n_layer, int32_t n_expert, const uint64_t *counts,
                                                 char *err, size_t errlen);
/* A profile holding every expert of layers [first, last] (count 1 each, layer order): the static
 * split that keeps whole layers' experts on the device, as llama.cpp's --n-cpu-moe does for the
 * layers after its first N. NULL with err on bad bounds or out of memory. */
st_expert_profile *st_expert_profile_layers(int32_t n_layer, int32_t n_expert, int32_t first, int32_t last, char *err,
                                            size_t errlen);
/* Writes p to path. 0, or -1 with err naming the path and the OS error. */
int st_expert_profile_write(const st_expert_profile *p, const char *path, char *err, size_t errlen);
/* Reads a profile; refuses a bad header, an entry out of range, a duplicate or a count that
 * rises, naming the line. NULL with err. */
st_expert_profile *st_expert_profile_read(const char *path, char *err, size_t errlen);
/* Checks the profile was recorded for a model of this shape: 0, or -1 with err. */
int st_expert_profile_check(const st_expert_profile *p, int32_t n_layer, int32_t n_expert, char *err, size_t errlen);
/* Frees a profile. NULL is ok. */
void st_expert_profile_free(st_expert_profile *p);

#ifdef __cplusplus
}
#endif
#endif
