/* SPDX-License-Identifier: Apache-2.0 */
/* Where a missed expert is computed: on the CPU from RAM (time grows with its rows), or
 * uploaded to a staging slot and computed on the device (time grows with its bytes). The
 * model is linear in both, calibrated at start (a measured copy bandwidth; the CPU FFN timed
 * on a real expert), and its choice changes with the batch: one row favours the CPU, a long
 * prefill favours the upload. Numbers are seconds. */
#ifndef STRATA_EXPERT_COST_H
#define STRATA_EXPERT_COST_H

#include <stdint.h>

#include "experts/expert_tiers.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_expert_cost {
    double upload_bytes_per_s;   /* host -> device copy bandwidth */
    double upload_latency_s;     /* fixed cost of one copy */
    double device_s_per_expert;  /* computing one resident expert's rows on the device */
    double cpu_s_per_expert;     /* the CPU's fixed cost of one expert (weights read once) */
    double cpu_s_per_row;        /* the CPU's cost of each further row */
} st_expert_cost;

/* Predicted seconds: computing n_rows of an expert on the CPU; uploading `bytes` and computing
 * on the device. */
double st_expert_cost_cpu_s(const st_expert_cost *c, int64_t n_rows);
double st_expert_cost_upload_s(const st_expert_cost *c, uint64_t bytes);
/* Nonzero when the upload is predicted faster for an expert of `bytes` used by n_rows rows. */
int st_expert_cost_prefer_upload(const st_expert_cost *c, uint64_t bytes, int64_t n_rows);
/* The fewest rows for which the upload wins (INT64_MAX when it never does). */
int64_t st_expert_cost_break_even(const st_expert_cost *c, uint64_t bytes);
/* Both pipes for one layer's misses: the device pipe is busy for dev_s already (its hits, the
 * cache's admissions), the CPU starts idle. Missed expert i needs rows[i] rows; choose which to
 * upload (and compute on the device) so that the later of the two pipes finishes first: the
 * experts with the most rows move first, one at a time, while that lowers the finish. Writes
 * upload[i] (1 = upload) and, when t_out is not NULL, the predicted finish. Returns the count
 * uploaded, at most max_upload (staging slots; 0 = every miss on the CPU). */
int64_t st_expert_cost_split(const st_expert_cost *c, uint64_t bytes, double dev_s, const int32_t *rows, int64_t n,
                             int64_t max_upload, uint8_t *upload, double *t_out);
/* Times st_expert_cpu_ffn on `s` for 1 and n_rows (> 1) rows (best of a few runs) and sets
 * cpu_s_per_expert / cpu_s_per_row. 0, or -1 when the FFN cannot run on this slice. */
int st_expert_cost_calibrate_cpu(st_expert_cost *c, const st_expert_slice *s, int64_t n_rows);

#ifdef __cplusplus
}
#endif
#endif
