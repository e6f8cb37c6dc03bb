/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU pool for missed experts: worker threads that compute st_expert_cpu_ffn jobs while
 * the caller's device computes the hits. Submit a batch, launch the device's work, then wait.
 * One batch at a time per pool; the pool's owner submits and waits from one thread. */
#ifndef STRATA_EXPERT_POOL_H
#define STRATA_EXPERT_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "experts/expert_tiers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One expert applied to n rows: out [n][down.rows] = ffn(slice, x [n][gate.cols]). */
typedef struct st_expert_job {
    st_expert_slice slice; /* views stay valid until the wait returns */
    const float *x;
    int64_t n;
    float *out;
    int status;            /* set by the pool: 0 done, -1 failed (shape or type) */
} st_expert_job;

typedef struct st_expert_pool st_expert_pool;

/* Starts n_threads workers (>= 1) with scratch for experts up to max_ff rows of gate. Returns
 * NULL with err when threads or memory are refused. Free with st_expert_pool_free. */
st_expert_pool *st_expert_pool_create(int n_threads, int64_t max_ff, char *err, size_t errlen);
/* Queues jobs[0..n) (borrowed until st_expert_pool_wait returns) and returns at once. -1 when
 * a batch is already running. */
int st_expert_pool_submit(st_expert_pool *p, st_expert_job *jobs, int64_t n);
/* Waits for the batch; returns 0, or -1 when a job failed (its status says which). */
int st_expert_pool_wait(st_expert_pool *p);
/* Joins the workers and frees the pool (waiting for a running batch first). NULL is ok. */
void st_expert_pool_free(st_expert_pool *p);

#ifdef __cplusplus
}
#endif
#endif
