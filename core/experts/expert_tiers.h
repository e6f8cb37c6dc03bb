/* SPDX-License-Identifier: Apache-2.0 */
/* The host tiers of routed experts and the CPU path for misses.
 *
 * File tier: the GGUF mapped read-only in place; one expert of one layer is three contiguous
 * slices (gate, up, down) of the ffn_*_exps tensors. Reading them pages them in.
 * RAM tier: an arena of expert slots in host memory, pinned through the backend when it can
 * (host_alloc), else pageable, reported honestly either way; filled from the file on demand,
 * least recently used out, for models whose experts do not fit in RAM or to have pinned
 * sources for uploads.
 * CPU misses: st_expert_cpu_ffn computes one expert's SwiGLU FFN for a few rows from any tier,
 * so a step can compute its device hits and its misses at the same time and meet in
 * MOE_COMBINE. The arithmetic is the scalar reference of core/quant (double accumulation). */
#ifndef STRATA_EXPERT_TIERS_H
#define STRATA_EXPERT_TIERS_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One matrix of one expert: rows x cols of `type`, rows contiguous (row_bytes apart). */
typedef struct st_expert_part {
    const void *data;   /* host address (file mapping or RAM slot); borrowed */
    uint32_t type;
    int64_t rows, cols;
    uint64_t row_bytes;
    uint64_t bytes;     /* rows * row_bytes */
} st_expert_part;

/* One expert of one layer: gate [n_ff_exp][n_embd], up [n_ff_exp][n_embd], down [n_embd][n_ff_exp]. */
typedef struct st_expert_slice {
    st_expert_part gate, up, down;
    uint64_t bytes;     /* gate + up + down */
} st_expert_slice;

/* Fills *out with the slices of (layer, expert) in the mapped file of d. Returns 0, or -1 with
 * a message in err when the layer has no routed experts or an index is out of range. */
int st_expert_slice_of(const st_model_desc *d, int32_t layer, int32_t expert, st_expert_slice *out, char *err,
                       size_t errlen);
/* Asks the OS to read (layer, expert)'s slices ahead (madvise WILLNEED). 0, or -1 when refused
 * (harmless). */
int st_expert_prefetch(const st_model_desc *d, int32_t layer, int32_t expert);

/* out[i][:] = down . (silu(gate . x[i]) * (up . x[i])) for i < n; x is [n][cols of gate], out
 * [n][rows of down], scratch holds 2 * rows of gate floats. 0, or -1 when the shapes
 * disagree or a type has no reference dot product. */
int st_expert_cpu_ffn(const st_expert_slice *s, const float *x, int64_t n, float *out, float *scratch);

/* Counters of the RAM tier. */
typedef struct st_expert_ram_stats {
    uint64_t hits;          /* served from a RAM slot */
    uint64_t file_reads;    /* copied from the file into a slot */
    uint64_t bytes_file;    /* bytes copied from the file */
    uint64_t evictions;
} st_expert_ram_stats;

typedef struct st_expert_ram st_expert_ram;

/* Creates a RAM tier of n_slots expert slots for d (every layer's experts). When api has
 * host_alloc, the arena is asked for as pinned memory on dev; when that is refused it is
 * allocated pageable. `report` (may be NULL) receives one line saying which and how much
 * ("expert RAM tier: 46 slots (44.0 GiB) pinned" or "... pinned host memory refused (...);
 * 46 slots (44.0 GiB) pageable"). Returns NULL with err when host memory is out. */
st_expert_ram *st_expert_ram_create(const st_model_desc *d, int64_t n_slots, const st_backend_api *api,
                                    st_device *dev, char *report, size_t report_len, char *err, size_t errlen);
/* Frees the arena (through host_free when it was pinned). NULL is ok. */
void st_expert_ram_free(st_expert_ram *r);
/* Nonzero when the arena is pinned. */
int st_expert_ram_pinned(const st_expert_ram *r);
/* Slices of (layer, expert) in a RAM slot, copying them from the file when absent (evicting the
 * least recently used slot). The views stay valid until a later get evicts the slot. With 0
 * slots the file's own slices are returned. 0, or -1 with err. */
int st_expert_ram_get(st_expert_ram *r, int32_t layer, int32_t expert, st_expert_slice *out, char *err,
                      size_t errlen);
/* Copies the RAM tier's counters into *out. */
void st_expert_ram_stats_get(const st_expert_ram *r, st_expert_ram_stats *out);

#ifdef __cplusplus
}
#endif
#endif
