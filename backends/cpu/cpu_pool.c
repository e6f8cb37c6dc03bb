/* SPDX-License-Identifier: Apache-2.0 */
/* Worker pool. A job is nth task indices claimed from an atomic counter by whoever is there:
 * the caller always takes part, and workers join while the job is open. So a worker that is
 * asleep or not scheduled (a busy machine) never delays a job it has not started: the caller
 * runs the remaining tasks itself and only waits for tasks already running.
 * Workers wait for a new job with a short spin, then on a condition variable. */
#include "cpu/cpu_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/module_util.h"
#include "cpu/cpu_topo.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ST_CPU_RELAX() _mm_pause()
#elif defined(__powerpc__) || defined(__PPC__)
#define ST_CPU_RELAX() __asm__ __volatile__("or 27,27,27" ::: "memory")
#else
#define ST_CPU_RELAX() ((void)0)
#endif

/* Relax iterations (tens of microseconds) before a worker sleeps or the caller yields: long
 * enough to catch back-to-back ops of a decode step, short enough not to steal a busy
 * machine from the thread that has work (measured: longer spins lost decode speed there). */
/* Iterations a waiting thread spins before it sleeps (workers) or yields (the caller).
 * STRATA_CPU_SPIN overrides it: spinning longer wakes workers faster between the many small
 * ops of a decode step, spinning shorter leaves the cores to others on a busy machine. */
#define ST_POOL_SPIN_DEFAULT 1024
static int g_spin = -1;
static int pool_spin(void) {
    if (g_spin < 0) {
        const char *e = getenv("STRATA_CPU_SPIN");
        long v = e && *e ? strtol(e, NULL, 10) : ST_POOL_SPIN_DEFAULT;
        g_spin = v < 0 ? 0 : v > (1L << 30) ? (1 << 30) : (int)v;
    }
    return g_spin;
}
#define ST_POOL_SPIN pool_spin()

typedef struct st_pool_worker {
    struct st_cpu_pool *pool;
    pthread_t thread;
    int cpu; /* pinned to this CPU, or -1 */
} st_pool_worker;

struct st_cpu_pool {
    int n_threads;
    st_pool_worker *workers;  /* [n_threads - 1] */
    pthread_mutex_t run_mu;   /* one job at a time */
    pthread_mutex_t mu;       /* sleep/wake handshake */
    pthread_cond_t cv;
    atomic_uint gen;          /* bumped for each job and for stop */
    atomic_int sleepers;      /* workers blocked (or about to block) on cv */
    atomic_int open;          /* the current job accepts workers */
    atomic_int joined;        /* workers inside the current job */
    atomic_int next;          /* next task index to claim */
    atomic_int done;          /* tasks finished */
    atomic_int stop;
    st_cpu_task_fn fn;
    void *ctx;
    int nth;
};

/* Claim and run tasks until none are left. */
static void pool_work(struct st_cpu_pool *p) {
    for (;;) {
        int t = atomic_fetch_add(&p->next, 1);
        if (t >= p->nth) return;
        p->fn(p->ctx, t, p->nth);
        atomic_fetch_add(&p->done, 1);
    }
}

static void *pool_main(void *arg) {
    st_pool_worker *w = arg;
    struct st_cpu_pool *p = w->pool;
    if (w->cpu >= 0 && st_cpu_pin_self(w->cpu) != 0)
        st_mod_log(ST_LOG_WARN, "cpu: worker could not be pinned to CPU %d", w->cpu);
    /* Generation 0 is the pool's state at creation: a job or a stop posted before this thread
     * first ran still counts as new (reading gen here could miss it and sleep forever). */
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load(&p->gen)) == seen && spins < ST_POOL_SPIN) {
            ST_CPU_RELAX();
            spins++;
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while ((g = atomic_load(&p->gen)) == seen) pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        seen = g;
        if (atomic_load(&p->stop)) return NULL;
        /* join only while the job is open; the caller closes it before returning */
        atomic_fetch_add(&p->joined, 1);
        if (atomic_load(&p->open)) pool_work(p);
        atomic_fetch_sub(&p->joined, 1);
    }
}

st_status st_cpu_pool_create(int n_threads, const int *pin, st_cpu_pool **out) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    st_cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return st_mod_fail(ST_OOM, "cpu: thread pool: out of host memory");
    p->n_threads = n_threads;
    pthread_mutex_init(&p->run_mu, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->open, 0);
    atomic_init(&p->joined, 0);
    atomic_init(&p->next, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->stop, 0);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) {
            free(p);
            return st_mod_fail(ST_OOM, "cpu: thread pool: out of host memory");
        }
    }
    for (int i = 1; i < n_threads; i++) {
        st_pool_worker *w = &p->workers[i - 1];
        w->pool = p;
        w->cpu = pin ? pin[i] : -1;
        int rc = pthread_create(&w->thread, NULL, pool_main, w);
        if (rc != 0) {
            p->n_threads = i; /* join the ones that started */
            st_cpu_pool_destroy(p);
            return st_mod_fail(ST_INTERNAL, "cpu: could not start worker thread %d of %d (%s)", i, n_threads,
                               strerror(rc));
        }
    }
    *out = p;
    return ST_OK;
}

void st_cpu_pool_destroy(st_cpu_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++) pthread_join(p->workers[i - 1].thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_mu);
    free(p->workers);
    free(p);
}

int st_cpu_pool_size(const st_cpu_pool *p) { return p->n_threads; }

static void wait_until(atomic_int *v, int want) {
    int spins = 0;
    while (atomic_load(v) != want) {
        if (++spins < ST_POOL_SPIN) ST_CPU_RELAX();
        else sched_yield();
    }
}

void st_cpu_pool_run(st_cpu_pool *p, st_cpu_task_fn fn, void *ctx, int nth) {
    if (nth > p->n_threads) nth = p->n_threads;
    if (nth <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->run_mu);
    p->fn = fn;
    p->ctx = ctx;
    p->nth = nth;
    atomic_store(&p->next, 0);
    atomic_store(&p->done, 0);
    atomic_store(&p->open, 1);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    pool_work(p);
    wait_until(&p->done, nth);
    atomic_store(&p->open, 0);
    wait_until(&p->joined, 0);
    pthread_mutex_unlock(&p->run_mu);
}
