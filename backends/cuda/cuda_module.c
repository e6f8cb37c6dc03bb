/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA module's table: entry point, devices, memory, copies, streams, events, graph
 * capture and shutdown, on the CUDA runtime (linked statically). Every CUDA error becomes a
 * status with the call and the device named in the per-thread error text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static st_device *g_open[ST_CUDA_MAX_DEVICES];
static int g_open_refs[ST_CUDA_MAX_DEVICES];
static uint64_t g_used[ST_CUDA_MAX_DEVICES]; /* bytes from mem_alloc; atomics */

const char *st_cuda_fmt_bytes(char *buf, size_t n, uint64_t b) {
    if (b >= (1ull << 30)) snprintf(buf, n, "%.1f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20)) snprintf(buf, n, "%.1f MiB", (double)b / (double)(1ull << 20));
    else if (b >= (1ull << 10)) snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else snprintf(buf, n, "%llu B", (unsigned long long)b);
    return buf;
}

uint64_t st_cuda_used_bytes(uint32_t index) {
    return index < ST_CUDA_MAX_DEVICES ? __atomic_load_n(&g_used[index], __ATOMIC_RELAXED) : 0;
}

st_status st_cuda_status(cudaError_t e, const char *what, const st_device *dev) {
    if (e == cudaSuccess) return ST_OK;
    st_status st;
    switch (e) {
    case cudaErrorMemoryAllocation: st = ST_OOM; break;
    case cudaErrorInvalidValue: case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle: case cudaErrorInvalidConfiguration:
    case cudaErrorHostMemoryAlreadyRegistered: case cudaErrorHostMemoryNotRegistered:
        st = ST_INVALID; break;
    case cudaErrorNoDevice: st = ST_NO_DEVICE; break;
    case cudaErrorInsufficientDriver: case cudaErrorNoKernelImageForDevice: st = ST_ARCH; break;
    case cudaErrorLaunchTimeout: st = ST_TIMEOUT; break;
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorECCUncorrectable:
    case cudaErrorHardwareStackError: case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress: case cudaErrorInvalidPc: case cudaErrorDevicesUnavailable:
    case cudaErrorDeviceUninitialized: case cudaErrorAssert:
        st = ST_DEVICE_LOST; break;
    case cudaErrorNotSupported: st = ST_UNSUPPORTED; break;
    default: st = ST_INTERNAL; break;
    }
    if (e == cudaErrorInsufficientDriver) st = ST_NO_DRIVER;
    return st_mod_fail(st, "%s on %s: %s (%s)", what, dev ? dev->name : "CUDA", cudaGetErrorString(e),
                       cudaGetErrorName(e));
}

st_status st_cuda_use(const st_device *dev) {
    return st_cuda_status(cudaSetDevice((int)dev->index), "cudaSetDevice", dev);
}

st_status st_cuda_launched(st_stream *s, const char *op) {
    s->last_op = op;
    if (!s->q8_keep) s->q8_valid = 0;
    s->q8_keep = 0;
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return ST_OK;
    char what[96];
    snprintf(what, sizeof what, "%s launch", op);
    return st_cuda_status(e, what, s->dev);
}

void st_cuda_q8_keep_unless(st_stream *s, const void *p, uint64_t bytes) {
    const char *x0 = (const char *)s->q8_src, *x1 = x0 + s->q8_rows * s->q8_nb1;
    const char *o0 = (const char *)p, *o1 = o0 + bytes;
    s->q8_keep = s->q8_valid && (o1 <= x0 || o0 >= x1);
}

/* ---- allocation tables ---------------------------------------------------------------- */
static int table_add(st_cuda_alloc_table *t, void *ptr, uint64_t bytes) {
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        st_cuda_alloc *it = realloc(t->items, cap * sizeof *it);
        if (!it) return 0;
        t->items = it;
        t->cap = cap;
    }
    t->items[t->n].ptr = ptr;
    t->items[t->n].bytes = bytes;
    t->n++;
    return 1;
}

/* Remove ptr; returns its size through *bytes; 0 when absent. */
static int table_remove(st_cuda_alloc_table *t, void *ptr, uint64_t *bytes) {
    for (uint32_t i = t->n; i-- > 0;)
        if (t->items[i].ptr == ptr) {
            *bytes = t->items[i].bytes;
            t->items[i] = t->items[--t->n];
            return 1;
        }
    return 0;
}

/* ---- devices ----------------------------------------------------------------------------- */
static st_status dev_open(uint32_t index, st_device **out) {
    if (!out) return st_mod_fail(ST_INVALID, "cuda device_open: NULL output");
    st_device_props p;
    p.size = sizeof p;
    st_status st = st_cuda_device_props(index, &p);
    if (st != ST_OK) return st;
    if (!p.usable) return st_mod_fail(ST_ARCH, "CUDA%u (%s): %s", index, p.name, p.reason);
    pthread_mutex_lock(&g_mu);
    if (g_open[index]) {
        g_open_refs[index]++;
        *out = g_open[index];
        pthread_mutex_unlock(&g_mu);
        return ST_OK;
    }
    st_device *d = calloc(1, sizeof *d);
    if (!d) {
        pthread_mutex_unlock(&g_mu);
        return st_mod_fail(ST_OOM, "cuda device_open: out of host memory");
    }
    d->index = index;
    snprintf(d->name, sizeof d->name, "CUDA%u", index);
    d->cc_major = (int)p.compute_major;
    d->cc_minor = (int)p.compute_minor;
    d->n_sm = (int)p.n_cores;
    d->domain = p.domain;
    const char *no_tc = getenv("STRATA_CUDA_NO_TC");
    d->no_tc = no_tc && *no_tc && strcmp(no_tc, "0") != 0;
    pthread_mutex_init(&d->mu, NULL);
    st = st_cuda_use(d);
    int optin = 0;
    if (st == ST_OK)
        st = st_cuda_status(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, (int)index),
                            "cudaDeviceGetAttribute", d);
    if (st == ST_OK) st = st_cuda_status(cudaFree(0), "creating the CUDA context", d);
    if (st != ST_OK) {
        pthread_mutex_destroy(&d->mu);
        free(d);
        pthread_mutex_unlock(&g_mu);
        return st;
    }
    d->smem_optin = (size_t)optin;
    /* Peer access with every open device of the same domain, both ways. */
    for (uint32_t j = 0; j < ST_CUDA_MAX_DEVICES; j++) {
        st_device *o = g_open[j];
        if (!o || o->domain != d->domain) continue;
        cudaSetDevice((int)index);
        cudaError_t e = cudaDeviceEnablePeerAccess((int)j, 0);
        cudaSetDevice((int)j);
        cudaError_t e2 = cudaDeviceEnablePeerAccess((int)index, 0);
        if ((e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) ||
            (e2 != cudaSuccess && e2 != cudaErrorPeerAccessAlreadyEnabled))
            st_mod_log(ST_LOG_WARN, "peer access CUDA%u <-> CUDA%u failed; copies go through the host",
                       index, j);
        cudaGetLastError();
    }
    cudaSetDevice((int)index);
    g_open[index] = d;
    g_open_refs[index] = 1;
    pthread_mutex_unlock(&g_mu);
    *out = d;
    return ST_OK;
}

static void dev_release_all(st_device *d) {
    cudaSetDevice((int)d->index);
    while (d->graphs) {
        st_graph *g = d->graphs;
        d->graphs = g->next;
        cudaGraphExecDestroy(g->x);
        cudaGraphDestroy(g->g);
        free(g);
    }
    while (d->events) {
        st_event *e = d->events;
        d->events = e->next;
        cudaEventDestroy(e->e);
        free(e);
    }
    while (d->streams) {
        st_stream *s = d->streams;
        d->streams = s->next;
        cudaStreamSynchronize(s->s);
        cudaStreamDestroy(s->s);
        cudaFree(s->ws);
        free(s);
    }
    for (uint32_t i = 0; i < d->dev_bufs.n; i++) cudaFree(d->dev_bufs.items[i].ptr);
    for (uint32_t i = 0; i < d->host_bufs.n; i++) cudaFreeHost(d->host_bufs.items[i].ptr);
    for (uint32_t i = 0; i < d->host_regs.n; i++) cudaHostUnregister(d->host_regs.items[i].ptr);
    free(d->dev_bufs.items);
    free(d->host_bufs.items);
    free(d->host_regs.items);
    __atomic_store_n(&g_used[d->index], 0, __ATOMIC_RELAXED);
    cudaGetLastError();
}

static st_status dev_close(st_device *d) {
    if (!d) return st_mod_fail(ST_INVALID, "cuda device_close: NULL device");
    pthread_mutex_lock(&g_mu);
    if (--g_open_refs[d->index] > 0) {
        pthread_mutex_unlock(&g_mu);
        return ST_OK;
    }
    g_open[d->index] = NULL;
    pthread_mutex_unlock(&g_mu);
    int leaked = d->dev_bufs.n || d->host_bufs.n || d->host_regs.n || d->streams || d->events || d->graphs;
    char what[160];
    snprintf(what, sizeof what, "%u buffers, %u pinned buffers, %u registrations, streams %s",
             d->dev_bufs.n, d->host_bufs.n, d->host_regs.n, d->streams ? "open" : "closed");
    dev_release_all(d);
    pthread_mutex_destroy(&d->mu);
    uint32_t idx = d->index;
    free(d);
    if (leaked)
        return st_mod_fail(ST_INVALID, "device_close CUDA%u with resources still held (%s); released them",
                           idx, what);
    return ST_OK;
}

static st_status dev_mem_info(st_device *d, uint64_t *free_b, uint64_t *total_b) {
    st_status st = st_cuda_use(d);
    if (st != ST_OK) return st;
    size_t f = 0, t = 0;
    st = st_cuda_status(cudaMemGetInfo(&f, &t), "cudaMemGetInfo", d);
    if (free_b) *free_b = f;
    if (total_b) *total_b = t;
    return st;
}

/* ---- memory ------------------------------------------------------------------------------ */
static st_status mem_alloc(st_device *d, uint64_t bytes, void **out) {
    if (!d || !out) return st_mod_fail(ST_INVALID, "cuda mem_alloc: NULL argument");
    *out = NULL;
    if (bytes == 0) return ST_OK;
    st_status st = st_cuda_use(d);
    if (st != ST_OK) return st;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t f = 0, t = 0;
        cudaMemGetInfo(&f, &t);
        char a[32], b[32];
        if (e == cudaErrorMemoryAllocation)
            return st_mod_fail(ST_OOM, "cudaMalloc %s on %s: out of memory (free %s)",
                               st_cuda_fmt_bytes(a, sizeof a, bytes), d->name,
                               st_cuda_fmt_bytes(b, sizeof b, f));
        char w[64];
        snprintf(w, sizeof w, "cudaMalloc %s", st_cuda_fmt_bytes(b, sizeof b, bytes));
        return st_cuda_status(e, w, d);
    }
    pthread_mutex_lock(&d->mu);
    int ok = table_add(&d->dev_bufs, p, bytes);
    pthread_mutex_unlock(&d->mu);
    if (!ok) {
        cudaFree(p);
        return st_mod_fail(ST_OOM, "cuda mem_alloc: out of host memory for bookkeeping");
    }
    __atomic_add_fetch(&g_used[d->index], bytes, __ATOMIC_RELAXED);
    *out = p;
    return ST_OK;
}

static st_status mem_free(st_device *d, void *ptr) {
    if (!d) return st_mod_fail(ST_INVALID, "cuda mem_free: NULL device");
    if (!ptr) return ST_OK;
    uint64_t bytes = 0;
    pthread_mutex_lock(&d->mu);
    int found = table_remove(&d->dev_bufs, ptr, &bytes);
    pthread_mutex_unlock(&d->mu);
    if (!found) return st_mod_fail(ST_INVALID, "cuda mem_free on %s: %p was not allocated here", d->name, ptr);
    __atomic_sub_fetch(&g_used[d->index], bytes, __ATOMIC_RELAXED);
    st_status st = st_cuda_use(d);
    if (st != ST_OK) return st;
    return st_cuda_status(cudaFree(ptr), "cudaFree", d);
}

static st_status host_alloc(st_device *d, uint64_t bytes, void **out) {
    if (!d || !out) return st_mod_fail(ST_INVALID, "cuda host_alloc: NULL argument");
    *out = NULL;
    if (bytes == 0) return ST_OK;
    st_status st = st_cuda_use(d);
    if (st != ST_OK) return st;
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        cudaGetLastError();
        char a[32], w[64];
        snprintf(w, sizeof w, "cudaHostAlloc %s (pinned)", st_cuda_fmt_bytes(a, sizeof a, bytes));
        return st_cuda_status(e == cudaErrorMemoryAllocation ? e : e, w, d);
    }
    pthread_mutex_lock(&d->mu);
    int ok = table_add(&d->host_bufs, p, bytes);
    pthread_mutex_unlock(&d->mu);
    if (!ok) {
        cudaFreeHost(p);
        return st_mod_fail(ST_OOM, "cuda host_alloc: out of host memory for bookkeeping");
    }
    *out = p;
    return ST_OK;
}

static st_status host_free(st_device *d, void *ptr) {
    if (!d) return st_mod_fail(ST_INVALID, "cuda host_free: NULL device");
    if (!ptr) return ST_OK;
    uint64_t bytes;
    pthread_mutex_lock(&d->mu);
    int found = table_remove(&d->host_bufs, ptr, &bytes);
    pthread_mutex_unlock(&d->mu);
    if (!found) return st_mod_fail(ST_INVALID, "cuda host_free on %s: %p was not allocated here", d->name, ptr);
    return st_cuda_status(cudaFreeHost(ptr), "cudaFreeHost", d);
}

static st_status host_register(st_device *d, void *ptr, uint64_t bytes) {
    if (!d || !ptr || !bytes) return st_mod_fail(ST_INVALID, "cuda host_register: empty range");
    st_status st = st_cuda_use(d);
    if (st != ST_OK) return st;
    cudaError_t e = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable);
    if (e != cudaSuccess) {
        /* A read-only mapping (a model file) needs the read-only flag where supported. */
        cudaGetLastError();
        int ro = 0;
        cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, (int)d->index);
        if (ro) e = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        char a[32], w[96];
        snprintf(w, sizeof w, "cudaHostRegister of %s at %p", st_cuda_fmt_bytes(a, sizeof a, bytes), ptr);
        return st_cuda_status(e, w, d);
    }
    pthread_mutex_lock(&d->mu);
    int ok = table_add(&d->host_regs, ptr, bytes);
    pthread_mutex_unlock(&d->mu);
    if (!ok) {
        cudaHostUnregister(ptr);
        return st_mod_fail(ST_OOM, "cuda host_register: out of host memory for bookkeeping");
    }
    return ST_OK;
}

static st_status host_unregister(st_device *d, void *ptr) {
    if (!d) return st_mod_fail(ST_INVALID, "cuda host_unregister: NULL device");
    uint64_t bytes;
    pthread_mutex_lock(&d->mu);
    int found = table_remove(&d->host_regs, ptr, &bytes);
    pthread_mutex_unlock(&d->mu);
    if (!found) return st_mod_fail(ST_INVALID, "cuda host_unregister on %s: %p is not registered", d->name, ptr);
    return st_cuda_status(cudaHostUnregister(ptr), "cudaHostUnregister", d);
}

static st_status copy_kind(st_stream *s, void *dst, const void *src, uint64_t bytes, const char *what) {
    if (!s) return st_mod_fail(ST_INVALID, "cuda %s: NULL stream", what);
    if (!bytes) return ST_OK;
    if (!dst || !src) return st_mod_fail(ST_INVALID, "cuda %s on %s: NULL pointer", what, s->dev->name);
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    s->last_op = what;
    s->q8_valid = 0;
    return st_cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s->s), what, s->dev);
}
static st_status copy_h2d(st_stream *s, void *dst, const void *src, uint64_t b) { return copy_kind(s, dst, src, b, "copy_h2d"); }
static st_status copy_d2h(st_stream *s, void *dst, const void *src, uint64_t b) { return copy_kind(s, dst, src, b, "copy_d2h"); }
static st_status copy_d2d(st_stream *s, void *dst, const void *src, uint64_t b) { return copy_kind(s, dst, src, b, "copy_d2d"); }

static st_status copy_peer(st_stream *s, void *dst, st_device *src_dev, const void *src, uint64_t bytes) {
    if (!s || !src_dev) return st_mod_fail(ST_INVALID, "cuda copy_peer: NULL argument");
    if (src_dev->domain != s->dev->domain)
        return st_mod_fail(ST_INVALID, "cuda copy_peer %s -> %s: different memory domains", src_dev->name,
                           s->dev->name);
    if (!bytes) return ST_OK;
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    s->last_op = "copy_peer";
    s->q8_valid = 0;
    return st_cuda_status(cudaMemcpyPeerAsync(dst, (int)s->dev->index, src, (int)src_dev->index, bytes, s->s),
                          "cudaMemcpyPeerAsync", s->dev);
}

static st_status memset_d(st_stream *s, void *dst, int value, uint64_t bytes) {
    if (!s) return st_mod_fail(ST_INVALID, "cuda memset: NULL stream");
    if (!bytes) return ST_OK;
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    s->last_op = "memset";
    s->q8_valid = 0;
    return st_cuda_status(cudaMemsetAsync(dst, value, bytes, s->s), "cudaMemsetAsync", s->dev);
}

/* ---- streams, events --------------------------------------------------------------------- */
static st_status stream_create(st_device *d, st_stream **out) {
    if (!d || !out) return st_mod_fail(ST_INVALID, "cuda stream_create: NULL argument");
    st_status st = st_cuda_use(d);
    if (st != ST_OK) return st;
    st_stream *s = calloc(1, sizeof *s);
    if (!s) return st_mod_fail(ST_OOM, "cuda stream_create: out of host memory");
    s->dev = d;
    s->last_op = "none";
    st = st_cuda_status(cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking), "cudaStreamCreate", d);
    if (st == ST_OK) {
        cudaError_t e = cudaMalloc(&s->ws, ST_CUDA_WORKSPACE_BYTES);
        if (e != cudaSuccess) {
            cudaGetLastError();
            cudaStreamDestroy(s->s);
            st = st_mod_fail(ST_OOM, "cudaMalloc 4.0 MiB (stream workspace) on %s: %s", d->name,
                             cudaGetErrorString(e));
        }
        s->ws_bytes = ST_CUDA_WORKSPACE_BYTES - ST_CUDA_IDENT_N * sizeof(int32_t);
        s->ident = (const int32_t *)((char *)s->ws + s->ws_bytes);
    }
    if (st == ST_OK) { /* the identity table, once */
        int32_t *h = malloc(ST_CUDA_IDENT_N * sizeof *h);
        cudaError_t e = cudaErrorMemoryAllocation;
        for (uint32_t i = 0; h && i < ST_CUDA_IDENT_N; i++) h[i] = (int32_t)i;
        if (h) e = cudaMemcpy((void *)s->ident, h, ST_CUDA_IDENT_N * sizeof *h, cudaMemcpyHostToDevice);
        free(h);
        if (e != cudaSuccess) {
            cudaGetLastError();
            cudaFree(s->ws);
            cudaStreamDestroy(s->s);
            st = st_mod_fail(ST_INTERNAL, "cuda stream_create: writing the identity table on %s: %s", d->name,
                             cudaGetErrorString(e));
        }
    }
    if (st != ST_OK) {
        free(s);
        return st;
    }
    pthread_mutex_lock(&d->mu);
    s->next = d->streams;
    d->streams = s;
    pthread_mutex_unlock(&d->mu);
    *out = s;
    return ST_OK;
}

static st_status stream_destroy(st_stream *s) {
    if (!s) return ST_OK;
    st_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    for (st_stream **pp = &d->streams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&d->mu);
    st_status st = st_cuda_use(d);
    cudaError_t e = cudaStreamSynchronize(s->s);
    cudaStreamDestroy(s->s);
    cudaFree(s->ws);
    free(s);
    if (st == ST_OK) st = st_cuda_status(e, "stream_destroy (pending work failed)", d);
    return st;
}

static st_status stream_sync(st_stream *s) {
    if (!s) return st_mod_fail(ST_INVALID, "cuda stream_sync: NULL stream");
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    cudaError_t e = cudaStreamSynchronize(s->s);
    if (e == cudaSuccess) return ST_OK;
    char what[128];
    snprintf(what, sizeof what, "stream_sync (last op: %s)", s->last_op ? s->last_op : "none");
    return st_cuda_status(e, what, s->dev);
}

static st_status event_create(st_device *d, st_event **out) {
    if (!d || !out) return st_mod_fail(ST_INVALID, "cuda event_create: NULL argument");
    st_status st = st_cuda_use(d);
    if (st != ST_OK) return st;
    st_event *e = calloc(1, sizeof *e);
    if (!e) return st_mod_fail(ST_OOM, "cuda event_create: out of host memory");
    e->dev = d;
    st = st_cuda_status(cudaEventCreateWithFlags(&e->e, cudaEventDisableTiming), "cudaEventCreate", d);
    if (st != ST_OK) {
        free(e);
        return st;
    }
    pthread_mutex_lock(&d->mu);
    e->next = d->events;
    d->events = e;
    pthread_mutex_unlock(&d->mu);
    *out = e;
    return ST_OK;
}

static st_status event_destroy(st_event *e) {
    if (!e) return ST_OK;
    st_device *d = e->dev;
    pthread_mutex_lock(&d->mu);
    for (st_event **pp = &d->events; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    pthread_mutex_unlock(&d->mu);
    st_status st = st_cuda_use(d);
    if (st == ST_OK) st = st_cuda_status(cudaEventDestroy(e->e), "cudaEventDestroy", d);
    free(e);
    return st;
}

static st_status event_record(st_event *e, st_stream *s) {
    if (!e || !s) return st_mod_fail(ST_INVALID, "cuda event_record: NULL argument");
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    return st_cuda_status(cudaEventRecord(e->e, s->s), "cudaEventRecord", s->dev);
}

static st_status event_wait(st_stream *s, st_event *e) {
    if (!e || !s) return st_mod_fail(ST_INVALID, "cuda event_wait: NULL argument");
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    s->q8_valid = 0; /* another stream may have written the rows */
    return st_cuda_status(cudaStreamWaitEvent(s->s, e->e, 0), "cudaStreamWaitEvent", s->dev);
}

static st_status event_sync(st_event *e) {
    if (!e) return st_mod_fail(ST_INVALID, "cuda event_sync: NULL event");
    st_status st = st_cuda_use(e->dev);
    if (st != ST_OK) return st;
    return st_cuda_status(cudaEventSynchronize(e->e), "event_sync", e->dev);
}

/* ---- graphs ------------------------------------------------------------------------------ */
static st_status graph_begin(st_stream *s) {
    if (!s) return st_mod_fail(ST_INVALID, "cuda graph_begin: NULL stream");
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    s->q8_valid = 0; /* a graph must quantize what it uses: replays run later */
    return st_cuda_status(cudaStreamBeginCapture(s->s, cudaStreamCaptureModeRelaxed),
                          "cudaStreamBeginCapture", s->dev);
}

static st_status graph_end(st_stream *s, st_graph **out) {
    if (!s || !out) return st_mod_fail(ST_INVALID, "cuda graph_end: NULL argument");
    *out = NULL;
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    cudaGraph_t g = NULL;
    s->q8_valid = 0;
    st = st_cuda_status(cudaStreamEndCapture(s->s, &g), "cudaStreamEndCapture", s->dev);
    if (st != ST_OK) {
        if (g) cudaGraphDestroy(g);
        return st;
    }
    cudaGraphExec_t x = NULL;
    st = st_cuda_status(cudaGraphInstantiate(&x, g, 0), "cudaGraphInstantiate", s->dev);
    if (st != ST_OK) {
        cudaGraphDestroy(g);
        return st;
    }
    st_graph *gr = calloc(1, sizeof *gr);
    if (!gr) {
        cudaGraphExecDestroy(x);
        cudaGraphDestroy(g);
        return st_mod_fail(ST_OOM, "cuda graph_end: out of host memory");
    }
    gr->dev = s->dev;
    gr->g = g;
    gr->x = x;
    pthread_mutex_lock(&s->dev->mu);
    gr->next = s->dev->graphs;
    s->dev->graphs = gr;
    pthread_mutex_unlock(&s->dev->mu);
    *out = gr;
    return ST_OK;
}

static st_status graph_launch(st_graph *g, st_stream *s) {
    if (!g || !s) return st_mod_fail(ST_INVALID, "cuda graph_launch: NULL argument");
    if (g->dev != s->dev)
        return st_mod_fail(ST_INVALID, "cuda graph_launch: graph of %s on a stream of %s", g->dev->name,
                           s->dev->name);
    st_status st = st_cuda_use(s->dev);
    if (st != ST_OK) return st;
    s->last_op = "graph_launch";
    s->q8_valid = 0;
    return st_cuda_status(cudaGraphLaunch(g->x, s->s), "cudaGraphLaunch", s->dev);
}

static st_status graph_destroy(st_graph *g) {
    if (!g) return ST_OK;
    st_device *d = g->dev;
    pthread_mutex_lock(&d->mu);
    for (st_graph **pp = &d->graphs; *pp; pp = &(*pp)->next)
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    pthread_mutex_unlock(&d->mu);
    st_cuda_use(d);
    cudaGraphExecDestroy(g->x);
    cudaError_t e = cudaGraphDestroy(g->g);
    free(g);
    return st_cuda_status(e, "cudaGraphDestroy", d);
}

/* ---- shutdown ---------------------------------------------------------------------------- */
static void module_shutdown(void) {
    pthread_mutex_lock(&g_mu);
    for (uint32_t i = 0; i < ST_CUDA_MAX_DEVICES; i++) {
        st_device *d = g_open[i];
        if (!d) continue;
        g_open[i] = NULL;
        g_open_refs[i] = 0;
        dev_release_all(d);
        cudaDeviceReset(); /* dev_release_all made d current: drops its primary context */
        pthread_mutex_destroy(&d->mu);
        free(d);
    }
    pthread_mutex_unlock(&g_mu);
    st_cuda_probe_reset();
}

static const char *last_error(void) { return st_mod_last_error(); }

static const st_backend_ops g_ops = {
    .size = sizeof(st_backend_ops),
    .get_rows = st_cuda_get_rows,
    .rms_norm = st_cuda_rms_norm,
    .matmul = st_cuda_matmul,
    .rope = st_cuda_rope,
    .kv_write = st_cuda_kv_write,
    .attention = st_cuda_attention,
    .swiglu = st_cuda_swiglu,
    .router = st_cuda_router,
    .moe_matmul = st_cuda_moe_matmul,
    .moe_combine = st_cuda_moe_combine,
    .add = st_cuda_add,
    .scale = st_cuda_scale,
    .convert = st_cuda_convert,
    .mul_rows = st_cuda_mul_rows,
    .argmax = st_cuda_argmax,
    .topk = st_cuda_topk,
    .attn_prep = st_cuda_attn_prep,
    .moe_gate_up = st_cuda_moe_gate_up,
    .moe_down = st_cuda_moe_down,
    .attention_ex = st_cuda_attention_ex,
    .swiglu_oai = st_cuda_swiglu_oai,
    .router_groups = st_cuda_router_groups,
};

static const st_backend_api g_api = {
    .size = sizeof(st_backend_api),
    .abi_major = ST_ABI_MAJOR,
    .abi_minor = ST_ABI_MINOR,
    .name = "cuda",
    .version = "0.1.0+cuda" ST_CUDA_TOOLKIT, /* the newer toolkit's module wins a shared device */
    .probe = st_cuda_probe,
    .device_props = st_cuda_device_props,
    .op_supported = st_cuda_op_supported,
    .last_error = last_error,
    .device_open = dev_open,
    .device_close = dev_close,
    .mem_info = dev_mem_info,
    .mem_alloc = mem_alloc,
    .mem_free = mem_free,
    .host_alloc = host_alloc,
    .host_free = host_free,
    .host_register = host_register,
    .host_unregister = host_unregister,
    .copy_h2d = copy_h2d,
    .copy_d2h = copy_d2h,
    .copy_d2d = copy_d2d,
    .copy_peer = copy_peer,
    .memset_d = memset_d,
    .stream_create = stream_create,
    .stream_destroy = stream_destroy,
    .stream_sync = stream_sync,
    .event_create = event_create,
    .event_destroy = event_destroy,
    .event_record = event_record,
    .event_wait = event_wait,
    .event_sync = event_sync,
    .ops = &g_ops,
    .graph_begin = graph_begin,
    .graph_end = graph_end,
    .graph_launch = graph_launch,
    .graph_destroy = graph_destroy,
    .shutdown = module_shutdown,
};

/* The module's only export: hands the host the table above (static storage, never freed).
 * ST_ABI (with *out still set, for its version fields) when the host's ABI major differs. */
ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor,
                                            const st_backend_api **out) {
    if (out) *out = &g_api;
    /* Load every kernel when the context is created, not at its first launch: the memory plan
     * measures the runtime's overhead right after device_open, and lazily loaded kernels would
     * take device memory after that (measured on an H200: ~20 MiB past a --vram-budget). Set
     * before the runtime's first call; a value the user set is kept. */
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    return st_mod_init(host, abi_major, abi_minor, "cuda");
}
