/* SPDX-License-Identifier: Apache-2.0 */
/* A model over several devices (the layer split) for the commands that run one: which devices
 * take part, the memory plan over all of them, one arena per device carving the model's
 * buffers, and the reports (start-up table, /metrics, time per device). The options are those
 * of the one option table (core/cli): --split-mode, --tensor-split, --main-device, -ngl.
 * docs/layer-split.md. */
#ifndef STRATA_ENGINE_SPLIT_H
#define STRATA_ENGINE_SPLIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/backend_registry.h"
#include "backend/dev.h"
#include "model/model.h"
#include "plan/plan.h"
#include "plan/plan_arena.h"

typedef struct st_split_opts {
    const char *backend;      /* --backend: the module whose devices take part; NULL = every GPU-like one */
    int split_none;           /* --split-mode none: the main device alone */
    const char *tensor_split; /* --tensor-split a,b,...: layer ratios over the devices, NULL = the planner's */
    int32_t main_device;      /* --main-device i: with none, the device used; with layer, the one holding
                                 the output (last in the chain); -1 = not given */
    int32_t n_gpu_layers;     /* -ngl N: N layers on the devices, the others on the CPU module; -1 = not given */
    uint64_t vram_budget;     /* --vram-budget, per device (0 = none) */
    uint64_t reserve;         /* --vram-reserve-mib, per device */
    int32_t n_slots;          /* concurrent sequences the model serves */
    int64_t expert_cache;     /* --expert-cache: -1 = every expert resident where it fits, else a cache of
                                 what is left per device (expert offload per device); N >= 0 = N slots
                                 per device. Misses run on the CPU module. */
    int32_t n_exclude;        /* devices left out ("sim1": lost earlier in the run) */
    char exclude[ST_PLAN_MAX_DEVICES][ST_DEV_NAME_MAX];
} st_split_opts;

/* Nonzero when the options ask for a model over more than one device: -ngl below the layer
 * count, --tensor-split, or more than one device of the chosen kind (without --split-mode none). */
int st_split_wanted(const st_split_opts *o, st_backend_registry *reg, int32_t n_layer);

typedef struct st_split {
    int32_t n;                                   /* devices in the chain, in order */
    int with_cpu;                                /* dev[0] is the CPU module, for -ngl's other layers */
    double ratio[ST_PLAN_MAX_DEVICES];           /* --tensor-split, per device after the CPU */
    st_dev dev[ST_PLAN_MAX_DEVICES];             /* opened here */
    st_plan *plan;
    st_plan_arena *arena[ST_PLAN_MAX_DEVICES];
    st_backend_api bound[ST_PLAN_MAX_DEVICES];   /* each device's table carving from its arena */
    st_dev cpu;                                  /* the CPU module computing expert misses (offload) */
    int offload;                                 /* some device caches its layers' experts */
} st_split;

/* Chooses and opens the devices, plans the model over them (the table on `log`), and creates the
 * arenas. 0, or -1 with err (a refused plan's reason, a device that does not open, a module
 * lacking an op the layers placed on it need). */
int st_split_prepare(st_split *s, const st_split_opts *o, st_backend_registry *reg, const st_model_desc *d,
                     const st_model_params *mp, FILE *log, char *err, size_t errlen);
/* Loads the model as planned (NULL with err). */
st_model *st_split_load(st_split *s, const st_model_desc *d, const st_model_params *mp, char *err, size_t errlen);
/* After a step failed: when a stage's device was lost, frees *m and the split, leaves the lost
 * devices out (added to o->exclude) and plans and loads the model again on the devices that
 * remain, saying so on `log` as a WARNING. 1 when it did (*m is the new model), 0 when no device
 * was lost (nothing changed), -1 with err when the model no longer fits or loads (*m is NULL and
 * the split released: the caller refuses with err). */
int st_split_replan(st_split *s, st_model **m, st_split_opts *o, st_backend_registry *reg, const st_model_desc *d,
                    const st_model_params *mp, FILE *log, char *err, size_t errlen);
/* Releases the arenas, the plan and the devices (after st_model_free). */
void st_split_release(st_split *s);
/* One line per stage: device, layers, bytes, modelled share and measured time (start-up table and
 * the end of a run). */
void st_split_report(const st_split *s, const st_model *m, FILE *f);
/* "sim0 12.1 ms, sim1 4.0 ms": the time each stage took since the last call (busy seconds
 * differences; `last` is caller storage of ST_PLAN_MAX_DEVICES entries, zeroed at first). */
size_t st_split_times(const st_model *m, double *last, char *buf, size_t len);
/* Prometheus lines of the stages (strata_device_layers, strata_device_bytes,
 * strata_device_busy_seconds). Returns the bytes written. */
size_t st_split_format_metrics(const st_model *m, char *buf, size_t len);

#endif
