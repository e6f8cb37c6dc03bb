/* SPDX-License-Identifier: Apache-2.0 */
/* Memory plan and expert placement for one model on one device, shared by `strata run`,
 * `strata bench` and the engine behind `strata serve`: the options (--vram-budget,
 * --vram-reserve-mib, --expert-cache, --expert-policy, --expert-profile, --cpu-threads), the
 * plan built BEFORE the model is loaded (core/plan, from the device's measured free memory and
 * the runtime's overhead), its table printed, and the model parameters it implies: every expert
 * resident when the plan says they fit, else an expert cache of the plan's slots with the misses
 * on a CPU module opened from the same registry. Statistics are formatted here too. */
#ifndef STRATA_ENGINE_OFFLOAD_H
#define STRATA_ENGINE_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arch/arch.h"
#include "backend/backend_registry.h"
#include "backend/dev.h"
#include "experts/expert_profile.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "plan/plan.h"
#include "plan/plan_arena.h"
#include "tokenizer/tokenizer.h"

typedef struct st_offload_opts {
    uint64_t vram_budget;      /* --vram-budget SIZE (0 = none) */
    uint64_t reserve;          /* --vram-reserve-mib N, bytes */
    int64_t expert_cache;      /* --expert-cache: -1 auto, N slots */
    uint64_t expert_cache_bytes; /* --expert-cache SIZE (0 = given as slots or auto) */
    int32_t policy;            /* --expert-policy (default ST_EXPERT_LFRU) */
    const char *profile;       /* --expert-profile FILE or NULL */
    int32_t cpu_threads;       /* --cpu-threads N (0 = the module's choice) */
    int32_t n_cpu_moe;         /* --n-cpu-moe N: the first N layers' experts stay on the CPU side, the
                                  rest are resident, fixed (a static split); --cpu-moe: every layer;
                                  -1 = not given */
    int32_t given;             /* nonzero when any of them was given */
} st_offload_opts;

/* Defaults: no budget, no reserve, auto cache, lfru, no profile. */
void st_offload_opts_init(st_offload_opts *o);
/* Consumes one option at argv[*i] ("--name V" or "--name=V"): 1 consumed, 0 not one of them,
 * -1 bad value (message on stderr naming `cmd`). */
int st_offload_opt(const char *cmd, int argc, char **argv, int *i, st_offload_opts *o);
/* Help lines of the options. */
void st_offload_opts_help(FILE *f);

/* The blocks of device d of plan p (which is ok) on dev, and *bound: a copy of api carving the
 * model's buffers from them (st_plan_api_bind). The number of blocks, or -1 with err. */
int st_offload_bind(const st_plan *p, int32_t d, const st_backend_api *api, st_device *dev, st_plan_arena **arena,
                    st_backend_api *bound, char *err, size_t errlen);

/* What a plan decided for a model; owned by the caller (st_offload_release). */
typedef struct st_offload {
    st_plan *plan;                /* NULL when no plan was built (weights read in place) */
    st_expert_profile *profile;   /* loaded --expert-profile, or NULL */
    const st_backend_api *cpu_api;/* the module computing misses, or NULL */
    st_device *cpu_dev;
    uint32_t cpu_index;
    st_dev cpu;                   /* its door (opened here, closed by st_offload_release) */
    int64_t expert_slots;         /* what the model was given (-1 = every expert resident) */
    char device[96];              /* the plan's device name */
    /* the plan's blocks on the device (one allocation per allocated consumer) and the device's
     * table carving the model's buffers from them; NULL/unused without a plan, and on devices
     * that read host memory (their weights are read in place) */
    st_plan_arena *arena;
    st_backend_api api;           /* valid when arena: load the model with st_offload_api */
    st_device *dev;               /* the bound device */
    int unified;                  /* the device reads host memory: no blocks */
} st_offload;

/* Builds the plan of `d` on the opened device `dev` (registry entry `pick`) for the sizes in
 * *mp (sequences, context, batch, KV type, top-k), prints its table on `log` (NULL = silent),
 * and sets mp's expert fields: every expert resident when they fit, else expert_slots, policy,
 * profile and the CPU module (the first CPU device of `reg`, opened here). The runtime overhead
 * counted includes the device memory of the model's streams (measured by creating one). Load the
 * model with st_offload_load to allocate it from the plan. A device that reads host memory
 * (ST_CAP_UNIFIED) reads every expert in place: no plan unless options were given, and never a
 * cache. Returns 0, or -1 with err (the plan refused: its table and refusal are printed; the
 * profile does not fit the model; no CPU module for the misses). */
int st_offload_prepare(const st_offload_opts *o, const st_model_desc *d, st_backend_registry *reg,
                       const st_backend_device *pick, st_device *dev, st_model_params *mp, FILE *log,
                       st_offload *out, char *err, size_t errlen);
/* Loads the model (st_model_load with *mp, dev of `api`'s module at `index`) inside the plan of
 * st_offload_prepare: on a device with its own memory the plan's blocks are allocated first (one
 * device allocation per consumer, so the driver's allocation granularity is paid once per
 * consumer, not once per tensor: o->arena), and every model buffer is carved from its consumer's
 * block through o->api; a buffer beyond its consumer's budget fails the load naming it. Without
 * a plan, or on a device that reads host memory, an ordinary load. Prints one line on `log`
 * (NULL = silent) when it allocates from the plan. Returns the model (free it before
 * st_offload_release), or NULL with err; o's blocks are released on failure. */
st_model *st_offload_load(st_offload *o, const st_model_desc *desc, const st_backend_api *api, st_device *dev,
                          uint32_t index, const st_model_params *mp, FILE *log, char *err, size_t errlen);
/* Unbinds and frees the plan's blocks, closes the CPU device and frees the plan and profile;
 * call after st_model_free, before the device and the registry close. Zeroes *o. */
void st_offload_release(st_offload *o);

/* Expert statistics of a model as JSON members (no braces), starting with a comma:
 * ,"experts":{"slots":..,"experts_total":..,"hit_rate":..,"belady_hit_rate":..,"bytes":{"device":..,
 * "host":..,"upload":..},"cpu_ms_per_token":..,...}. Writes "" for a model without a cache.
 * Returns the bytes written (truncated at len, always terminated). */
size_t st_offload_format_json(st_model *m, char *buf, size_t len);
/* Prometheus lines: the plan (st_plan_format_metrics) and the expert cache's statistics with the
 * Belady hit rate when a trace is recorded. Same return. */
size_t st_offload_format_metrics(const st_offload *o, st_model *m, char *buf, size_t len);

#endif
