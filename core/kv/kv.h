/* SPDX-License-Identifier: Apache-2.0 */
/* KV cache: paged cells on one device.
 *
 * Each layer has k and v tensors [n_cells][n_head_kv][head_dim] (F16 default, F32 or Q8_0).
 * Cells come in pages of page_size; a sequence owns pages, and the cell table
 * [n_seq][n_ctx] maps (sequence, position) -> cell. The host keeps the table and the free
 * page list; st_kv_sync uploads the rows that changed so the device's ATTENTION op reads
 * cells through it (see st_attention_args). Not thread-safe: one owner at a time. */
#ifndef STRATA_KV_H
#define STRATA_KV_H

#include <stddef.h>
#include <stdint.h>

#include "backend/dev.h"
#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_kv_params {
    int32_t n_layer;
    int32_t n_head_kv;
    int32_t head_dim;
    uint32_t type;      /* ST_TYPE_F16 (the usual choice), ST_TYPE_F32, or ST_TYPE_Q8_0
                           (head_dim a multiple of 32) */
    int32_t n_seq;      /* sequences: rows of the cell table */
    int32_t n_ctx;      /* positions per sequence: columns of the cell table */
    int32_t n_cells;    /* cells in all (0 = n_seq * n_ctx rounded up to pages) */
    int32_t page_size;  /* cells per page (0 = 16) */
    int32_t k_only;     /* nonzero: one cache per layer, V reads the K rows (multi-head latent
                           attention caches one latent row per token: V is part of it) */
} st_kv_params;

typedef struct st_kv st_kv;

/* Parses "f16", "f32", "q8_0" (any case) into a cache type; -1 if not one of them. */
int st_kv_type_from_name(const char *name);

/* Bytes of the cache for these parameters (all layers, K and V), without allocating. */
uint64_t st_kv_bytes_for(const st_kv_params *p);

/* Allocates the cache on `dev` (zero-filled on `stream`; `dev` is borrowed and must outlive the
 * cache) and the device copy of the cell table. Returns NULL with a message in err (naming the size and the device's
 * error) on failure. The caller owns the result; st_kv_free releases it before the device
 * closes. */
st_kv *st_kv_create(st_dev *dev, st_stream *stream, const st_kv_params *p, char *err, size_t errlen);
/* Frees device memory and the handle. NULL is ok. */
void st_kv_free(st_kv *kv);

/* Parameters the cache was created with (n_cells and page_size resolved). */
const st_kv_params *st_kv_params_of(const st_kv *kv);

/* Cell for (seq, pos), allocating a page when pos enters a new one. Returns the cell, or -1
 * when seq/pos are out of range or no page is free. Marks the sequence's table row dirty. */
int32_t st_kv_cell(st_kv *kv, int32_t seq, int32_t pos);
/* Positions of `seq` that hold a cell (highest allocated position + 1). */
int32_t st_kv_seq_len(const st_kv *kv, int32_t seq);
/* Forgets positions >= n_pos of seq and returns the pages no longer used. */
void st_kv_seq_truncate(st_kv *kv, int32_t seq, int32_t n_pos);
/* Forgets every position of every sequence. */
void st_kv_clear(st_kv *kv);
/* Free cells (whole free pages times page_size). */
int64_t st_kv_cells_free(const st_kv *kv);

/* Queues uploads of the changed table rows on `stream`. The host rows stay borrowed until
 * the stream syncs, so callers sync before the next st_kv_cell. Returns the copy's status
 * (text through st_dev_error). */
st_status st_kv_sync(st_kv *kv, st_stream *stream);

/* Device address of the cell table [n_seq][n_ctx] (row stride n_ctx). */
const int32_t *st_kv_table_dev(const st_kv *kv);
/* Views of layer il's caches: [n_cells][n_head_kv][head_dim]. */
st_tensor st_kv_k(const st_kv *kv, int32_t il);
st_tensor st_kv_v(const st_kv *kv, int32_t il);
/* Bytes one position occupies across all layers (K and V). */
uint64_t st_kv_bytes_per_pos(const st_kv *kv);
/* Total device bytes of the cache (K and V of every layer, plus the table). */
uint64_t st_kv_bytes(const st_kv *kv);

#ifdef __cplusplus
}
#endif
#endif
