/* SPDX-License-Identifier: Apache-2.0 */
/* Module file names and CPU variant choice, decided before any dlopen. Pure functions of
 * their inputs (the CPU's features are passed in), so tests can feed fake CPUs. */
#ifndef STRATA_BACKEND_VARIANT_H
#define STRATA_BACKEND_VARIANT_H

#include <stddef.h>
#include <stdint.h>

#include "platform/cpu_features.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Split a module file name: "strata-cpu-avx2.so" -> backend "cpu", variant "avx2";
 * "strata-sim.so" -> "sim", "". Returns 1 when the name has the strata-*.so form, else 0
 * (then backend is the name without directory and extension, variant ""). */
int st_module_name_parse(const char *file, char *backend, size_t blen, char *variant, size_t vlen);

/* Can this CPU run the cpu backend's `variant`? 1 = yes; 0 = no, with `why` set to
 * "CPU lacks AVX-512F" (naming the first missing feature); -1 = variant unknown to the host. */
int st_cpu_variant_check(const char *variant, const st_cpu_features *f, char *why, size_t wlen);
/* Preference among known variants: higher is better ("avx512" > "avx2" > "vsx" > ""); -1 unknown. */
int st_cpu_variant_rank(const char *variant);

typedef enum st_variant_action {
    ST_VARIANT_LOAD = 0,       /* load it: the best runnable known variant */
    ST_VARIANT_NO_CPU = 1,     /* never load: the CPU cannot run it */
    ST_VARIANT_NOT_BEST = 2,   /* runnable but a better variant is loaded instead */
    ST_VARIANT_ASK_SCORE = 3   /* unknown variant: load only if st_backend_score() > 0 */
} st_variant_action;

typedef struct st_variant_choice {
    int action;       /* st_variant_action */
    char reason[160]; /* "not loaded: CPU lacks AVX-512F", "skipped: avx512 variant preferred" */
} st_variant_choice;

/* Decide for each of the `n` cpu-backend variants (out[i] for variants[i]). Exactly one known
 * runnable variant (the best; the first among equals) gets LOAD when any is runnable. */
void st_cpu_variants_choose(const char *const *variants, size_t n, const st_cpu_features *f,
                            st_variant_choice *out);

#ifdef __cplusplus
}
#endif
#endif
