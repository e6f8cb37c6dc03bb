/* SPDX-License-Identifier: Apache-2.0 */
/* The device tier of routed experts: a pool of fixed-size slots shared by the device's layers,
 * the (layer, expert) -> slot table the MOE_MATMUL op reads (row l is layer l's
 * st_moe_matmul_args.slot_table: expert -> slot or -1), the policy that decides what stays,
 * and honest statistics (hits and misses per layer, bytes served by each tier).
 *
 * A slot index s names the s-th entry of three device pools (gate, up, down), each
 * [n_slots][rows][cols] of the expert tensors' type, so one index serves all three matmuls.
 * The cache only decides; the caller copies an admitted expert into its slot (from the RAM
 * tier or the mapped file) and computes misses elsewhere (the CPU), so an expert admitted in
 * a step is a miss in that step and a hit from the next one.
 *
 * Policies:
 *   lru      admit every miss (up to the per-step cap), evict the least recently used
 *   lfru     frequency-weighted LRU: every (layer, expert) keeps a score decayed per step
 *            and bumped per use; a miss is admitted only when its score beats the weakest
 *            resident's by admit_margin uses (ties go to recency) and clears the
 *            residents' mean score by admit_z Poisson deviations, at most
 *            max_inserts_per_step per step (TinyLFU's rule: admit on evidence of reuse)
 *   profile  seeded from a ranked profile, then fixed
 * Not thread-safe: one owner (the engine's step) at a time. */
#ifndef STRATA_EXPERT_CACHE_H
#define STRATA_EXPERT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum st_expert_policy {
    ST_EXPERT_LRU = 0,
    ST_EXPERT_LFRU = 1,
    ST_EXPERT_PROFILE = 2
} st_expert_policy;

/* lfru's defaults, chosen on the cost model of balanced and skewed traces
 * (tests/experts/test_offload_policy.c, docs/memory.md): a memory of a few hundred steps, so a
 * score counts uses rather than the last few tokens, and admission only for a newcomer used two
 * more times than the weakest resident in that memory. With balanced routing that admits about
 * 10 experts per token instead of 200 (each a copy over PCIe that never paid back). */
#define ST_EXPERT_LFRU_DECAY 0.995f
#define ST_EXPERT_LFRU_MARGIN 2.0f
/* ... and only for a newcomer whose score clears the residents' mean by 3 Poisson deviations:
 * measured on the H200 (bench/results/2026-12-04-h200-offload.md), admitting on the margin alone
 * kept balanced routing's hit rate at the static split's and cost 5 ms per token of host work
 * and copies, 0.74x the static split's decode. */
#define ST_EXPERT_LFRU_Z 3.0f
/* Steps of more tokens than this (prompts) fill free slots but evict nothing: the model's
 * expert path passes no room for loads then. */
#define ST_EXPERT_ADMIT_MAX_TOKENS 16

typedef struct st_expert_cache_params {
    int32_t n_layer;              /* layers whose experts this cache serves (rows of the table) */
    int32_t n_expert;             /* experts per layer */
    int64_t n_slots;              /* device slots (0 = every expert is a miss) */
    st_expert_policy policy;
    int32_t max_inserts_per_step; /* admissions per step; 0 = unlimited (lfru default: 0 too) */
    float decay;                  /* lfru: score factor per step, (0, 1]; 0 = ST_EXPERT_LFRU_DECAY */
    float admit_margin;           /* lfru: a newcomer's score must beat the weakest resident's by
                                     this many uses; 0 = ST_EXPERT_LFRU_MARGIN, < 0 = none */
    float admit_z;                /* lfru: and the residents' mean score by this many sqrt(mean);
                                     0 = ST_EXPERT_LFRU_Z, < 0 = no such bar */
    uint64_t slot_bytes;          /* bytes of one expert (gate + up + down), for the statistics */
} st_expert_cache_params;

/* An admission: the caller copies expert (layer, expert) into `slot`; the slot held
 * (evicted_layer, evicted_expert) before, or -1 when it was free. */
typedef struct st_expert_load {
    int32_t layer, expert;
    int64_t slot;
    int32_t evicted_layer, evicted_expert;
} st_expert_load;

/* Counters; per layer or summed. Bytes: device = hits x slot_bytes (read where the expert was
 * resident), host = misses x slot_bytes (read by the CPU from RAM or the file), upload =
 * admissions x slot_bytes (copied to the device). */
typedef struct st_expert_stats {
    uint64_t hits, misses, inserts, evictions;
    uint64_t bytes_device, bytes_host, bytes_upload;
} st_expert_stats;

typedef struct st_expert_cache st_expert_cache;

/* Parses "lru", "lfru", "profile"; -1 otherwise. */
int st_expert_policy_from_name(const char *name);
/* "lru", "lfru", "profile"; "?" when out of range. Static storage. */
const char *st_expert_policy_name(int policy);

/* Creates an empty cache (every table entry -1). Returns NULL with a message in err on bad
 * parameters or out of host memory. The caller owns it: st_expert_cache_free. */
st_expert_cache *st_expert_cache_create(const st_expert_cache_params *p, char *err, size_t errlen);
/* Frees the cache and its table. NULL is ok. */
void st_expert_cache_free(st_expert_cache *c);

/* Fills free slots from a ranked profile ((layer[i], expert[i]) best first), in order, skipping
 * entries already resident or out of range, until the slots are full; each placement is
 * written to loads[] (up to loads_cap) for the caller to copy. Returns the number placed. Seeded
 * experts start with a score by rank, so lfru keeps the profile until routing says otherwise. */
int64_t st_expert_cache_seed(st_expert_cache *c, const int32_t *layer, const int32_t *expert, int64_t n,
                             st_expert_load *loads, int64_t loads_cap);

/* Starts a step (a forward): ages lfru scores and resets the per-step admission budget. */
void st_expert_cache_step(st_expert_cache *c);

/* One layer's routed experts of this step: ids[0..n) (repeats allowed, e.g. n tokens x k).
 * Writes slot_of[i] (the slot, or -1: a miss, computed elsewhere) when slot_of is not NULL,
 * counts hits and misses, updates the policy and admits misses it chooses, writing them to
 * loads[] (at most loads_cap; admissions stop there). Experts used in this call are never
 * evicted by it. Returns the number of admissions, or -1 for a layer or expert out of range. */
int64_t st_expert_cache_route(st_expert_cache *c, int32_t layer, const int32_t *ids, int64_t n, int32_t *slot_of,
                              st_expert_load *loads, int64_t loads_cap);

/* The table [n_layer][n_expert] of slots (-1 = not resident), host copy; row l is what the
 * device's slot table for layer l must hold. Borrowed; valid until the next call. */
const int32_t *st_expert_cache_table(const st_expert_cache *c);
/* Slot of (layer, expert), or -1. */
int64_t st_expert_cache_slot(const st_expert_cache *c, int32_t layer, int32_t expert);
/* Resident experts (occupied slots). */
int64_t st_expert_cache_resident(const st_expert_cache *c);
/* Nonzero when the table changed since the last st_expert_cache_table_clean (upload it then). */
int st_expert_cache_table_dirty(const st_expert_cache *c);
void st_expert_cache_table_clean(st_expert_cache *c);

/* Statistics of layer `layer`, or of every layer with layer = -1. */
void st_expert_cache_stats(const st_expert_cache *c, int32_t layer, st_expert_stats *out);
/* Hit rate hits / (hits + misses) of a stats record; 0 when empty. */
double st_expert_stats_hit_rate(const st_expert_stats *s);
/* Clears every counter (the residents stay). */
void st_expert_cache_stats_reset(st_expert_cache *c);
/* Counts n lookups of `distinct` different experts of `layer` that the caller served from the
 * device without routing them through the cache (every expert of the layer resident): hits and
 * device bytes only; no score or recency changes (use it only with a fixed policy). */
void st_expert_cache_count_resident(st_expert_cache *c, int32_t layer, uint64_t n, uint64_t distinct);

/* Writes the statistics as Prometheus lines labelled device="<device>" (per layer and in
 * total: strata_expert_hits_total, strata_expert_misses_total, strata_expert_inserts_total,
 * strata_expert_bytes_total{tier="device|host|upload"}, strata_expert_resident,
 * strata_expert_slots, strata_expert_hit_rate in total and per layer that routed anything, and
 * strata_expert_hit_rate_belady when belady_hit_rate >= 0). Returns
 * the bytes written (truncated at len, always terminated). */
size_t st_expert_cache_format_metrics(const st_expert_cache *c, const char *device, double belady_hit_rate, char *buf,
                                      size_t len);

#ifdef __cplusplus
}
#endif
#endif
