/* SPDX-License-Identifier: Apache-2.0 */
/* A fixed pool of worker threads for the CPU ops. One parallel job runs at a time: callers
 * from several host threads are serialized. The calling thread takes part as thread 0. */
#ifndef STRATA_CPU_POOL_H
#define STRATA_CPU_POOL_H

#include "strata/backend.h"

typedef struct st_cpu_pool st_cpu_pool;

/* fn runs once for each ith in [0, nth); the calls may run concurrently. */
typedef void (*st_cpu_task_fn)(void *ctx, int ith, int nth);

/* Start a pool of n_threads (>= 1; n_threads - 1 worker threads are created). pin: NULL, or
 * [n_threads] CPU numbers: worker i (1..n_threads - 1) pins itself to pin[i] (pin[0] is left
 * to the calling thread, which is not pinned). *out is owned by the caller until
 * st_cpu_pool_destroy. ST_OOM / ST_INTERNAL with an error text on failure. */
st_status st_cpu_pool_create(int n_threads, const int *pin, st_cpu_pool **out);
/* Join every worker and free the pool; NULL is accepted. No job may be running. */
void st_cpu_pool_destroy(st_cpu_pool *p);
/* Threads of the pool, the caller's included. */
int st_cpu_pool_size(const st_cpu_pool *p);
/* Run fn(ctx, ith, nth) for ith in [0, nth) and return when all have finished. nth is clamped
 * to [1, pool size]; nth == 1 runs on the caller without waking anyone. */
void st_cpu_pool_run(st_cpu_pool *p, st_cpu_task_fn fn, void *ctx, int nth);

#endif
