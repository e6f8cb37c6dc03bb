/* SPDX-License-Identifier: Apache-2.0 */
/* Repacked weights: the first MATMUL / MOE_MATMUL on a weight matrix whose type has x8 group
 * kernels (cpu_kernels.h) copies it once into groups of 8 interleaved rows, in memory counted
 * against the device; later calls on the same matrix use the copy. The copy is made only when
 * it leaves enough host memory (MemAvailable minus the copy stays above max(1 GiB, 10% of
 * RAM)), so a model larger than RAM keeps reading its file in place. STRATA_CPU_REPACK=0 turns
 * repacking off.
 *
 * A copy is found by the matrix's address, type and shape. Before use, a fingerprint of the
 * source's first and last 64 bytes is compared, so a file mapped again at the same address
 * with other contents is repacked again, not read stale. Copies are freed at device close.
 * Copies live in anonymous mappings with transparent huge pages asked for (2 MiB aligned):
 * the kernels stream them, and 4 KiB pages cost a TLB miss every few rows. On a host with
 * several NUMA nodes the copies' pages are interleaved over the nodes (cpu_topo.c). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_internal.h"
#include "cpu/cpu_topo.h"

typedef struct rp_entry {
    const void *src;      /* the weight matrix as the host passed it */
    uint32_t type;
    int64_t ne[4];
    uint64_t tag;         /* fingerprint of the source bytes */
    void *data;           /* x8 groups; NULL = not repacked */
    void *map;            /* the mapping data lies in, and its length */
    size_t map_len;
} rp_entry;

/* Most matrices remembered (a model has a few per layer); later ones are computed in place. */
#define RP_MAX 4096
#define RP_SLOTS (2 * RP_MAX) /* open addressing by source address */

struct st_cpu_repack {
    pthread_mutex_t mu;
    rp_entry e[RP_MAX];   /* [n] */
    int slot[RP_SLOTS];   /* entry index + 1, 0 = empty */
    int n;
    uint64_t bytes;       /* held by copies */
    double seconds;       /* spent repacking */
    int refused_logged;
};

static int repack_enabled(void) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("STRATA_CPU_REPACK");
        on = !(e && *e == '0');
    }
    return on;
}

st_status st_cpu_repack_create(st_cpu_repack **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return st_mod_fail(ST_OOM, "cpu: repack table: out of host memory");
    pthread_mutex_init(&(*out)->mu, NULL);
    return ST_OK;
}

#define RP_HUGE ((size_t)2 << 20)

/* Memory for a copy, counted in mem; 0 or -1. */
static int rp_alloc(st_hostmem *mem, size_t bytes, rp_entry *e) {
    size_t len = bytes + RP_HUGE;
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return -1;
    uintptr_t a = ((uintptr_t)map + RP_HUGE - 1) & ~(uintptr_t)(RP_HUGE - 1);
#ifdef MADV_HUGEPAGE
    madvise((void *)a, bytes, MADV_HUGEPAGE); /* a hint: without it the copy still works */
#endif
    /* several NUMA nodes: spread the pages before the first touch, so every node's memory
     * serves a share of each matrix whichever thread reads it (work is claimed dynamically) */
    st_cpu_numa_interleave((void *)a, bytes);
    e->map = map;
    e->map_len = len;
    e->data = (void *)a;
    pthread_mutex_lock(&mem->mu);
    mem->used += len;
    if (mem->used > mem->peak) mem->peak = mem->used;
    pthread_mutex_unlock(&mem->mu);
    return 0;
}

static void rp_free(st_hostmem *mem, rp_entry *e) {
    if (!e->map) return;
    munmap(e->map, e->map_len);
    pthread_mutex_lock(&mem->mu);
    mem->used -= e->map_len;
    pthread_mutex_unlock(&mem->mu);
    e->map = e->data = NULL;
    e->map_len = 0;
}

void st_cpu_repack_destroy(st_cpu_repack *rp, st_hostmem *mem) {
    if (!rp) return;
    for (int i = 0; i < rp->n; i++) rp_free(mem, &rp->e[i]);
    if (rp->bytes)
        st_mod_log(ST_LOG_INFO, "cpu: freed %.1f MiB of repacked weights (%.2f s spent repacking)",
                   (double)rp->bytes / 1048576.0, rp->seconds);
    pthread_mutex_destroy(&rp->mu);
    free(rp);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static uint64_t src_tag(const st_tensor *w, size_t bytes) {
    size_t n = bytes < 64 ? bytes : 64;
    uint64_t h = fnv(14695981039346656037ull, w->data, n);
    return fnv(h, (const uint8_t *)w->data + bytes - n, n);
}

/* Bytes of a matrix whose rows, matrices and batches are contiguous, or 0 when they are not
 * (such views are computed in place). */
static size_t dense_bytes(const st_tensor *w) {
    size_t rs = st_row_size(w->type, w->ne[0]);
    if (rs == 0 || (size_t)w->nb[1] != rs || w->nb[2] != w->nb[1] * w->ne[1] || w->nb[3] != w->nb[2] * w->ne[2])
        return 0;
    return rs * (size_t)(w->ne[1] * w->ne[2] * w->ne[3]);
}

/* Bytes of the x8 copy of w (rows a multiple of 8). */
static size_t packed_bytes(const st_tensor *w) {
    return st_cpu_x8_group_bytes(w->type, w->ne[0]) * (size_t)(w->ne[1] / 8 * w->ne[2] * w->ne[3]);
}

typedef struct rp_job {
    st_cpu_repack8_fn fn;
    const char *src;
    char *dst;
    int64_t k, n_groups;
    size_t rs, gbytes; /* source row, x8 group */
} rp_job;

static void rp_task(void *vctx, int ith, int nth) {
    rp_job *j = vctx;
    int64_t g0, g1;
    st_cpu_split(j->n_groups, ith, nth, &g0, &g1);
    for (int64_t g = g0; g < g1; g++) j->fn(j->k, j->src + (size_t)g * 8 * j->rs, j->rs, j->dst + (size_t)g * j->gbytes);
}

/* Keep this much host memory available after a copy. */
static uint64_t reserve_bytes(void) {
    uint64_t total = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t r = total / 10;
    return r > (1ull << 30) ? r : (1ull << 30);
}

/* Makes the copy for entry e (data stays NULL when refused or out of memory). */
static void rp_make(st_device *d, st_cpu_repack *rp, rp_entry *e, const st_tensor *w, size_t bytes) {
    uint64_t avail = st_hostmem_free_bytes(&d->mem);
    if (avail < bytes || avail - bytes < reserve_bytes()) {
        if (!rp->refused_logged++)
            st_mod_log(ST_LOG_INFO, "cpu: weights computed in place, not repacked: %.1f MiB more would leave "
                       "%.1f MiB of host memory available", (double)bytes / 1048576.0,
                       (double)(avail > bytes ? avail - bytes : 0) / 1048576.0);
        return;
    }
    if (rp_alloc(&d->mem, bytes, e)) return;
    void *p = e->data;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t gb = st_cpu_x8_group_bytes(w->type, w->ne[0]);
    rp_job j = {st_cpu_k.wt[w->type].repack8, w->data, p, w->ne[0], (int64_t)(bytes / gb),
                st_row_size(w->type, w->ne[0]), gb};
    st_cpu_pool_run(d->pool, rp_task, &j, st_cpu_nth(d, j.n_groups, 64));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    rp->seconds += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    rp->bytes += bytes;
}

static unsigned rp_hash(const void *p) {
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> 40) & (RP_SLOTS - 1);
}

/* The entry of w, or NULL with *free_slot the slot where it would go. */
static rp_entry *rp_find(st_cpu_repack *rp, const st_tensor *w, unsigned *free_slot) {
    unsigned h = rp_hash(w->data);
    for (;; h = (h + 1) & (RP_SLOTS - 1)) {
        if (!rp->slot[h]) {
            *free_slot = h;
            return NULL;
        }
        rp_entry *e = &rp->e[rp->slot[h] - 1];
        if (e->src == w->data && e->type == w->type && !memcmp(e->ne, w->ne, sizeof e->ne)) return e;
    }
}

const void *st_cpu_repacked(st_device *d, const st_tensor *w) {
    st_cpu_repack *rp = d->repack;
    const st_cpu_weight_kernels *wk = &st_cpu_k.wt[w->type];
    if (!rp || !wk->dot8 || !wk->repack8 || !wk->x8_block_bytes || !repack_enabled() || w->ne[1] % 8 != 0)
        return NULL;
    size_t src_bytes = dense_bytes(w);
    if (src_bytes == 0) return NULL;
    size_t bytes = packed_bytes(w);
    uint64_t tag = src_tag(w, src_bytes);
    pthread_mutex_lock(&rp->mu);
    unsigned fs = 0;
    rp_entry *e = rp_find(rp, w, &fs);
    if (e && e->tag != tag) { /* same address, other contents: a new mapping */
        if (e->data) rp->bytes -= bytes;
        rp_free(&d->mem, e);
        e->tag = tag;
        rp_make(d, rp, e, w, bytes);
    } else if (!e && rp->n < RP_MAX) {
        e = &rp->e[rp->n++];
        rp->slot[fs] = rp->n;
        *e = (rp_entry){w->data, w->type, {w->ne[0], w->ne[1], w->ne[2], w->ne[3]}, tag, NULL, NULL, 0};
        rp_make(d, rp, e, w, bytes);
    }
    const void *p = e ? e->data : NULL;
    pthread_mutex_unlock(&rp->mu);
    return p;
}
