/* SPDX-License-Identifier: Apache-2.0 */
/* Routing traces and what a cache of a given size would have done with them: the replay of a
 * policy (lru / lfru / profile through st_expert_cache) and Belady's optimum (evict the expert
 * used farthest in the future, or do not admit one that is itself used later than every
 * resident), the best hit rate any policy can reach with that many slots: reported beside the
 * real one so a hit rate is read against what was possible. */
#ifndef STRATA_EXPERT_SIM_H
#define STRATA_EXPERT_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "experts/expert_cache.h"
#include "experts/expert_cost.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A routing trace: access i is (layer[i], expert[i]) in step step[i] (non-decreasing; one step
 * is one forward). Accesses of one layer within one step form one st_expert_cache_route call.
 * The arrays are borrowed. */
typedef struct st_expert_trace {
    int32_t n_layer, n_expert;
    int64_t n;
    const int32_t *layer;  /* [n] */
    const int32_t *expert; /* [n] */
    const int64_t *step;   /* [n] */
} st_expert_trace;

/* Belady's optimal hit count for n_slots slots over the trace (counted per access, like the
 * cache's statistics). Writes hits/misses/inserts/evictions into *out (bytes: 0). Returns 0,
 * or -1 with a message in err (bad trace, out of host memory). O(n log n). */
int st_expert_belady(const st_expert_trace *t, int64_t n_slots, st_expert_stats *out, char *err, size_t errlen);
/* The same starting from a warm cache: resident[n_layer * n_expert] (a slot table: >= 0 =
 * resident at the start, e.g. a copy of st_expert_cache_table taken where the trace starts;
 * NULL = empty). Residents cost no insert. The best any policy of n_slots slots could do from
 * that state, so the real cache's hits on the same trace never exceed it. -1 with err also when
 * more than n_slots experts are resident. */
int st_expert_belady_from(const st_expert_trace *t, int64_t n_slots, const int32_t *resident, st_expert_stats *out,
                          char *err, size_t errlen);

/* Replays the trace through a cache with parameters p (n_layer/n_expert taken from the
 * trace), admitting what the policy admits (as if each copy finished before the next step),
 * optionally seeded from a profile (seed_layer/seed_expert, n_seed; NULLs/0 for none). Writes
 * the summed statistics into *out and, when per_layer is not NULL, [n_layer] records. Returns 0
 * or -1 with err. */
int st_expert_simulate(const st_expert_trace *t, const st_expert_cache_params *p, const int32_t *seed_layer,
                       const int32_t *seed_expert, int64_t n_seed, st_expert_stats *out, st_expert_stats *per_layer,
                       char *err, size_t errlen);

/* What a placement costs on a trace, by the cost model (expert_cost.h): per (step, layer) the
 * device pipe computes the hit experts and copies the admissions, the misses run on the CPU or,
 * with both_pipes, are split between an upload (computed on the device) and the CPU
 * (st_expert_cost_split); the layer takes the longer pipe. */
typedef struct st_expert_time {
    double seconds;          /* summed over the trace */
    double s_per_step;       /* seconds / steps */
    int64_t steps;
    uint64_t streamed;       /* missed experts uploaded and computed on the device */
    uint64_t cpu_experts;    /* missed experts computed on the CPU */
    uint64_t admissions;     /* experts the cache copied in */
    st_expert_stats stats;   /* the cache's counters */
} st_expert_time;

/* Models the trace through a cache of parameters p (seeded like st_expert_simulate) with
 * experts of expert_bytes. 0, or -1 with err. The static split of llama.cpp's --n-cpu-moe is
 * the profile policy seeded with whole layers and both_pipes 0. */
int st_expert_model_time(const st_expert_trace *t, const st_expert_cache_params *p, const int32_t *seed_layer,
                         const int32_t *seed_expert, int64_t n_seed, const st_expert_cost *cost,
                         uint64_t expert_bytes, int both_pipes, st_expert_time *out, char *err, size_t errlen);

/* A ranked profile from a trace: every (layer, expert) seen, by use count descending (ties:
 * lower layer, then lower expert first). Writes up to cap entries; returns the full count. */
int64_t st_expert_profile_rank(const st_expert_trace *t, int32_t *layer, int32_t *expert, int64_t cap);

#ifdef __cplusplus
}
#endif
#endif
