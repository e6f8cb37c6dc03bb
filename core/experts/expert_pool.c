/* SPDX-License-Identifier: Apache-2.0 */
/* Worker threads for missed experts: jobs are claimed one by one under a mutex. */
#include "experts/expert_pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct st_expert_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t *threads;
    int n_threads, started;
    float *scratch;          /* [n_threads][2 * max_ff] */
    int64_t max_ff;
    st_expert_job *jobs;     /* current batch */
    int64_t n_jobs, next, finished;
    int running, quit;
};

typedef struct worker_arg {
    st_expert_pool *p;
    int id;
} worker_arg;

static void *worker(void *arg) {
    worker_arg *wa = arg;
    st_expert_pool *p = wa->p;
    float *scratch = p->scratch + (size_t)wa->id * 2u * (size_t)p->max_ff;
    free(wa);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && (!p->running || p->next >= p->n_jobs)) pthread_cond_wait(&p->work, &p->mu);
        if (p->quit) break;
        st_expert_job *j = &p->jobs[p->next++];
        pthread_mutex_unlock(&p->mu);
        j->status = j->slice.gate.rows > p->max_ff ? -1 : st_expert_cpu_ffn(&j->slice, j->x, j->n, j->out, scratch);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->n_jobs) pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void st_expert_pool_free(st_expert_pool *p) {
    if (!p) return;
    if (p->running) st_expert_pool_wait(p);
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p->scratch);
    free(p);
}

st_expert_pool *st_expert_pool_create(int n_threads, int64_t max_ff, char *err, size_t errlen) {
    if (n_threads < 1 || max_ff < 1) {
        snprintf(err, errlen, "expert pool: %d threads, %lld rows: both must be at least 1", n_threads,
                 (long long)max_ff);
        return NULL;
    }
    st_expert_pool *p = calloc(1, sizeof *p);
    if (!p) goto oom;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n_threads = n_threads;
    p->max_ff = max_ff;
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    p->scratch = malloc((size_t)n_threads * 2u * (size_t)max_ff * sizeof *p->scratch);
    if (!p->threads || !p->scratch) {
        st_expert_pool_free(p);
        goto oom;
    }
    for (int i = 0; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) {
            st_expert_pool_free(p);
            goto oom;
        }
        wa->p = p;
        wa->id = i;
        int rc = pthread_create(&p->threads[i], NULL, worker, wa);
        if (rc) {
            free(wa);
            snprintf(err, errlen, "expert pool: starting thread %d of %d failed (%s)", i + 1, n_threads, strerror(rc));
            st_expert_pool_free(p);
            return NULL;
        }
        p->started++;
    }
    return p;
oom:
    snprintf(err, errlen, "expert pool: out of host memory");
    return NULL;
}

int st_expert_pool_submit(st_expert_pool *p, st_expert_job *jobs, int64_t n) {
    pthread_mutex_lock(&p->mu);
    if (p->running) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    p->jobs = jobs;
    p->n_jobs = n;
    p->next = p->finished = 0;
    p->running = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int st_expert_pool_wait(st_expert_pool *p) {
    pthread_mutex_lock(&p->mu);
    while (p->running && p->finished < p->n_jobs) pthread_cond_wait(&p->done, &p->mu);
    int rc = 0;
    for (int64_t i = 0; p->running && i < p->n_jobs; i++) rc |= p->jobs[i].status;
    p->running = 0;
    p->jobs = NULL;
    p->n_jobs = p->next = p->finished = 0;
    pthread_mutex_unlock(&p->mu);
    return rc ? -1 : 0;
}
