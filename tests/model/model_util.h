/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the model tests. */
#ifndef STRATA_TEST_MODEL_UTIL_H
#define STRATA_TEST_MODEL_UTIL_H

#include <stdio.h>

#include "arch/arch.h"
#include "gguf/gguf.h"
#include "model/gen.h"
#include "model/model.h"

extern int g_fail;
#include "../common/check.h"

/* A loaded model with everything it hangs on. */
typedef struct mt_model {
    st_gguf *g;
    st_model_desc *d;
    st_model *m;
    const st_backend_api *api;
    st_device *dev;
    int own_dev; /* dev was opened by mt_load_on (else borrowed) */
} mt_model;

/* Temporary file path "<tmpdir>/strata-test-<pid>-<name>" into buf. */
void mt_tmp_path(char *buf, size_t len, const char *name);
/* Writes a tiny random model of `arch` with weight type `wtype` (embd/ff overridable: 0 = keep). */
int mt_gen_tiny(const char *arch, uint32_t wtype, int embd, int ff, const char *path);
/* Opens + describes + loads on (api, device index). Returns 0 or -1 (message printed). */
int mt_load_on(mt_model *t, const char *path, const st_backend_api *api, uint32_t index,
               const st_model_params *p);
#define mt_load(t, path, api, p) mt_load_on(t, path, api, 0, p)
/* Same on an already open device (borrowed: not closed by mt_unload). */
int mt_load_dev(mt_model *t, const char *path, const st_backend_api *api, uint32_t index, st_device *dev,
                const st_model_params *p);
void mt_unload(mt_model *t);
/* Evaluates tokens from position 0 of seq 0 in one batch per n_batch, all logits into out. */
int mt_prefill_all(mt_model *t, const int32_t *tok, int n, float *out);
/* Same, one token per forward. */
int mt_stepwise_all(mt_model *t, const int32_t *tok, int n, float *out);
/* max |a-b| / max(1, max |b|) */
double mt_rel_diff(const float *a, const float *b, size_t n);

#endif
