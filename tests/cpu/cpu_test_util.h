/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the CPU module tests: loading a module file, random data, normalized errors. */
#ifndef STRATA_CPU_TEST_UTIL_H
#define STRATA_CPU_TEST_UTIL_H

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "strata/backend.h"

typedef struct ct_module {
    void *dl;
    const st_backend_api *api;
} ct_module;

static uint64_t ct_rng = 0x9e3779b97f4a7c15ull;

static inline uint32_t ct_rand_u32(void) {
    ct_rng ^= ct_rng << 13;
    ct_rng ^= ct_rng >> 7;
    ct_rng ^= ct_rng << 17;
    return (uint32_t)(ct_rng >> 16);
}

/* uniform in [-1, 1) */
static inline float ct_randf(void) { return (float)((double)ct_rand_u32() / 2147483648.0 - 1.0); }

static inline void ct_fill(float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = ct_randf() * scale;
}

/* Load a module file and call its entry with `threads` worker threads (0 = default). */
static inline int ct_load(ct_module *m, const char *path, unsigned threads) {
    static st_host_api host;
    memset(&host, 0, sizeof host);
    host.size = sizeof host;
    host.abi_major = ST_ABI_MAJOR;
    host.abi_minor = ST_ABI_MINOR;
    host.n_threads = threads;
    if (!m->dl) m->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m->dl) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return 0;
    }
    st_backend_entry_fn entry = (st_backend_entry_fn)(uintptr_t)dlsym(m->dl, ST_BACKEND_ENTRY_SYMBOL);
    if (!entry) {
        fprintf(stderr, "%s: no %s\n", path, ST_BACKEND_ENTRY_SYMBOL);
        return 0;
    }
    st_status s = entry(&host, ST_ABI_MAJOR, ST_ABI_MINOR, &m->api);
    if (s != ST_OK || !m->api) {
        fprintf(stderr, "%s: entry failed (%d)\n", path, (int)s);
        return 0;
    }
    return 1;
}

/* Normalized mean squared error: sum (a-b)^2 / sum b^2 (b the reference). */
static inline double ct_nmse(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    if (num != num) return INFINITY;
    return den > 0 ? num / den : num;
}

/* A contiguous tensor view. */
static inline st_tensor ct_tensor(void *data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2) {
    st_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.type = type;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = ne2;
    t.ne[3] = 1;
    const st_type_info *ti = st_type_get(type);
    t.nb[0] = ti ? ti->type_size : 0;
    t.nb[1] = (int64_t)st_row_size(type, ne0);
    t.nb[2] = t.nb[1] * ne1;
    t.nb[3] = t.nb[2] * ne2;
    return t;
}

/* Floats -> a row buffer of an activation type (F32/F16/BF16). */
static inline void ct_to_act(uint32_t type, const float *src, void *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (type == ST_TYPE_F32) ((float *)dst)[i] = src[i];
        else if (type == ST_TYPE_F16) ((uint16_t *)dst)[i] = st_f32_to_fp16(src[i]);
        else ((uint16_t *)dst)[i] = st_f32_to_bf16(src[i]);
    }
}

static inline void ct_from_act(uint32_t type, const void *src, float *dst, int64_t n) {
    (void)st_dequantize_row(type, src, dst, n);
}

static inline size_t ct_act_size(uint32_t type) { return type == ST_TYPE_F32 ? 4 : 2; }

#endif
