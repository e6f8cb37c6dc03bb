/* SPDX-License-Identifier: Apache-2.0 */
/* Shared code of the planner tests: model files written from a shape (zero weights, optional YaRN
 * metadata) and simulated devices opened through the backend registry. */
#ifndef STRATA_TEST_PLAN_UTIL_H
#define STRATA_TEST_PLAN_UTIL_H

#include <stdio.h>

#include "arch/arch.h"
#include "gguf/gguf.h"
#include "plan/plan.h"
#include "strata/backend.h"

extern int g_fail;
#include "../common/check.h"

/* A MoE (qwen3moe) or dense (qwen3) shape for tests. */
typedef struct pt_shape {
    int arch;              /* ST_ARCH_QWEN3MOE, ST_ARCH_QWEN3, ... */
    int n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab;
    int n_expert, n_expert_used, n_ff_exp;
    int n_ctx_train;
    float yarn_factor;     /* > 0: rope.scaling.type yarn with this factor */
    int yarn_orig_ctx;     /* rope.scaling.original_context_length */
    uint32_t wtype;        /* matrices' type (vectors are F32) */
} pt_shape;

/* Writes the shape's model (all weights zero) to path. 0, or -1 with a message printed. */
int pt_write_model(const pt_shape *s, const char *path);
/* Temporary path "<tmpdir>/strata-plan-<pid>-<name>". */
void pt_tmp_path(char *buf, size_t len, const char *name);

/* An opened model description. */
typedef struct pt_model {
    st_gguf *g;
    st_model_desc *d;
} pt_model;
int pt_open_model(pt_model *m, const char *path);
void pt_close_model(pt_model *m);

/* Simulated devices from the module at `module_path` with STRATA_SIM=`config`. */
#define PT_MAX_DEV 8
typedef struct pt_sim {
    void *reg; /* st_backend_registry */
    const st_backend_api *api;
    int n;
    uint32_t index[PT_MAX_DEV];
    st_device *dev[PT_MAX_DEV];
    st_plan_device_in in[PT_MAX_DEV]; /* measured after opening: free, total, name */
} pt_sim;
/* Opens every sim device. 0, or -1 with a message printed. */
int pt_sim_open(pt_sim *s, const char *module_path, const char *config);
/* Used bytes of device i as the sim reports them (total - free). */
uint64_t pt_sim_used(const pt_sim *s, int i);
/* Closes the devices (reporting leaks through CHECK) and the registry. */
void pt_sim_close(pt_sim *s);

#endif
