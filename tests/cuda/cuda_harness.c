/* SPDX-License-Identifier: Apache-2.0 */
/* Harness of the CUDA op tests (see cuda_harness.h) and main(): loads strata-cuda.so from
 * the path in argv[1], opens device 0 and runs every group. Exit 0 all passed, 1 any
 * failure, 77 no usable device (ctest reports that as skipped, never as passed). */
#include "cuda_harness.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "ref/ref.h"

void tc_pass(tc_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("PASS ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    c->n_pass++;
}

void tc_fail(tc_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    c->n_fail++;
}

void *tc_up(tc_ctx *c, const void *host, size_t bytes) {
    void *p = NULL;
    if (bytes == 0) bytes = 4;
    if (c->api->mem_alloc(c->dev, bytes, &p) != ST_OK) {
        tc_fail(c, "mem_alloc %zu: %s", bytes, c->api->last_error());
        return NULL;
    }
    if (c->n_bufs < 4096) c->bufs[c->n_bufs++] = p;
    if (host && c->api->copy_h2d(c->s, p, host, bytes) != ST_OK) tc_fail(c, "copy_h2d: %s", c->api->last_error());
    if (c->api->stream_sync(c->s) != ST_OK) tc_fail(c, "sync after upload: %s", c->api->last_error());
    return p;
}

int tc_down(tc_ctx *c, void *host, const void *dev, size_t bytes) {
    if (c->api->copy_d2h(c->s, host, dev, bytes) != ST_OK || c->api->stream_sync(c->s) != ST_OK) {
        tc_fail(c, "download: %s", c->api->last_error());
        return 0;
    }
    return 1;
}

size_t tc_bytes(const st_tensor *t) {
    size_t rows = (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
    return rows * (size_t)t->nb[1];
}

st_tensor tc_dev_tensor(tc_ctx *c, const st_tensor *host) {
    st_tensor d = *host;
    d.data = tc_up(c, host->data, tc_bytes(host));
    return d;
}

int tc_status(tc_ctx *c, const char *name, st_status got) {
    if (got == ST_OK) return 1;
    tc_fail(c, "%s: status %d: %s", name, (int)got, c->api->last_error());
    return 0;
}

static double compare_floats(const float *a, const float *r, size_t n, int *nan_bad, double *maxabs) {
    double num = 0, den = 0;
    *nan_bad = 0;
    *maxabs = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(r[i]) != isnan(a[i]) || isinf(r[i]) != isinf(a[i])) {
            (*nan_bad)++;
            continue;
        }
        if (isnan(r[i]) || isinf(r[i])) continue;
        double d = (double)a[i] - (double)r[i];
        num += d * d;
        den += (double)r[i] * r[i];
        if (fabs(d) > *maxabs) *maxabs = fabs(d);
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double tc_error(tc_ctx *c, const st_tensor *ref, const st_tensor *dv, int *nan_bad, double *max_abs) {
    size_t bytes = tc_bytes(ref);
    int64_t K = ref->ne[0], rows = ref->ne[1] * ref->ne[2] * ref->ne[3];
    uint8_t *got = malloc(bytes);
    float *fa = malloc(sizeof(float) * (size_t)(K * rows + 1)), *fr = malloc(sizeof(float) * (size_t)(K * rows + 1));
    double e = -1;
    *nan_bad = 0;
    *max_abs = 0;
    if (got && fa && fr && tc_down(c, got, dv->data, bytes)) {
        for (int64_t r = 0; r < rows; r++) {
            st_dequantize_row(ref->type, got + r * ref->nb[1], fa + r * K, K);
            st_dequantize_row(ref->type, (uint8_t *)ref->data + r * ref->nb[1], fr + r * K, K);
        }
        e = compare_floats(fa, fr, (size_t)(K * rows), nan_bad, max_abs);
    }
    free(got);
    free(fa);
    free(fr);
    return e;
}

int tc_gv_format(uint32_t wt) {
    return wt == ST_TYPE_Q4_0 || wt == ST_TYPE_Q5_0 || wt == ST_TYPE_Q8_0 || wt == ST_TYPE_Q4_K || wt == ST_TYPE_Q5_K ||
           wt == ST_TYPE_Q6_K || wt == ST_TYPE_MXFP4 || wt == ST_TYPE_F16 || wt == ST_TYPE_BF16;
}

int tc_compare(tc_ctx *c, const char *name, const st_tensor *ref, const st_tensor *dv, double tol) {
    int nan_bad;
    double mx, e = tc_error(c, ref, dv, &nan_bad, &mx);
    if (e < 0) return 0; /* the copy failed: reported by tc_down */
    if (nan_bad == 0 && e <= tol) {
        tc_pass(c, "%s (err %.2e, max abs %.2e)", name, e, mx);
        return 1;
    }
    tc_fail(c, "%s: normalized error %.3e > %.1e or %d NaN/Inf mismatches (max abs %.3e)", name, e, tol, nan_bad, mx);
    return 0;
}

int tc_compare_i32(tc_ctx *c, const char *name, const int32_t *ref, const int32_t *dev_ptr, size_t n) {
    int32_t *got = malloc(n * sizeof *got + 4);
    int ok = 0;
    if (got && tc_down(c, got, dev_ptr, n * sizeof *got)) {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (got[i] != ref[i] && bad++ == 0) first = i;
        if (!bad) {
            tc_pass(c, "%s (%zu ids exact)", name, n);
            ok = 1;
        } else {
            tc_fail(c, "%s: %zu of %zu ids differ (first at %zu: got %d, ref %d)", name, bad, n, first, got[first],
                    ref[first]);
        }
    }
    free(got);
    return ok;
}

int tc_compare_f32(tc_ctx *c, const char *name, const float *ref, const float *dev_ptr, size_t n, double tol) {
    float *got = malloc(n * sizeof *got + 4);
    int ok = 0;
    if (got && tc_down(c, got, dev_ptr, n * sizeof *got)) {
        int nan_bad;
        double mx, e = compare_floats(got, ref, n, &nan_bad, &mx);
        if (!nan_bad && e <= tol) {
            tc_pass(c, "%s (err %.2e)", name, e);
            ok = 1;
        } else {
            tc_fail(c, "%s: normalized error %.3e > %.1e, %d NaN mismatches", name, e, tol, nan_bad);
        }
    }
    free(got);
    return ok;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
float tc_rand(float lo, float hi) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return lo + (hi - lo) * (float)((g_rng >> 40) / (double)(1ull << 24));
}

void tc_fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = tc_rand(lo, hi);
}

st_tensor tc_host_rand(uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, float lo, float hi) {
    st_tensor t = st_ref_tensor_3d(NULL, type, ne0, ne1, ne2);
    size_t bytes = tc_bytes(&t);
    t.data = calloc(1, bytes + 64);
    float *row = malloc(sizeof(float) * (size_t)ne0 + 4);
    for (int64_t r = 0; r < ne1 * ne2; r++) {
        tc_fill(row, (size_t)ne0, lo, hi);
        if (st_quantize_row(type, row, (uint8_t *)t.data + r * t.nb[1], ne0) != 0) {
            fprintf(stderr, "st_quantize_row(%s) failed\n", st_type_name(type));
            break;
        }
    }
    free(row);
    return t;
}

st_tensor tc_host_fill(uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, float v) {
    st_tensor t = st_ref_tensor_3d(NULL, type, ne0, ne1, ne2);
    t.data = calloc(1, tc_bytes(&t) + 64);
    float *row = malloc(sizeof(float) * (size_t)ne0 + 4);
    for (int64_t i = 0; i < ne0; i++) row[i] = v;
    for (int64_t r = 0; r < ne1 * ne2; r++) st_quantize_row(type, row, (uint8_t *)t.data + r * t.nb[1], ne0);
    free(row);
    return t;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/strata-cuda.so\n", argv[0]);
        return 2;
    }
    const char *only = argc > 2 ? argv[2] : "";
    if (strcmp(argv[1], "--ref") == 0) {
        /* harness self-check: the "device" is core/ref in host memory; the batched group only
         * when asked (`--ref batched`: it takes minutes on the reference) */
        tc_ctx *c = calloc(1, sizeof *c);
        c->api = tc_ref_mock_api();
        if (strstr(only, "batched")) {
            tc_test_batched(c);
        } else {
            tc_test_dense(c);
            tc_test_moe(c);
            tc_test_attention(c);
            tc_test_misc_ops(c);
        }
        printf("%d passed, %d failed\n", c->n_pass, c->n_fail);
        return c->n_fail ? 1 : 0;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("FAIL dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    st_backend_entry_fn entry = (st_backend_entry_fn)dlsym(lib, ST_BACKEND_ENTRY_SYMBOL);
    tc_ctx *c = calloc(1, sizeof *c);
    st_host_api host = {.size = sizeof host, .abi_major = ST_ABI_MAJOR, .abi_minor = ST_ABI_MINOR};
    if (!entry || entry(&host, ST_ABI_MAJOR, ST_ABI_MINOR, &c->api) != ST_OK) {
        printf("FAIL entry\n");
        return 1;
    }
    st_probe_report rep = {.size = sizeof rep};
    st_status st = c->api->probe(&rep);
    printf("probe: status %u, %u devices, built for %s%s%s\n", rep.status, rep.n_devices, rep.build_archs,
           st == ST_OK ? "" : ", reason: ", st == ST_OK ? "" : rep.reason);
    if (st != ST_OK) {
        printf("SKIP no usable CUDA device\n");
        return 77;
    }
    st_device_props pr = {.size = sizeof pr};
    c->api->device_props(0, &pr);
    printf("device 0: %s %s, %u SMs, %.1f GiB (%.1f free), %.0f GB/s, caps %#llx, domain %#llx%s%s\n", pr.name,
           pr.arch, pr.n_cores, pr.mem_total / 1073741824.0, pr.mem_free / 1073741824.0, pr.mem_bw_gbs,
           (unsigned long long)pr.caps, (unsigned long long)pr.domain, pr.reason[0] ? ", note: " : "", pr.reason);
    const char *no_tc = getenv("STRATA_CUDA_NO_TC");
    c->tc = pr.compute_major >= 8 && !(no_tc && *no_tc && strcmp(no_tc, "0") != 0);
    if (c->api->device_open(0, &c->dev) != ST_OK || c->api->stream_create(c->dev, &c->s) != ST_OK) {
        printf("FAIL open: %s\n", c->api->last_error());
        return 1;
    }
    if (!*only || strstr(only, "dense")) tc_test_dense(c);
    if (!*only || strstr(only, "dense") || strstr(only, "parity")) tc_test_cpu_parity(c);
    if (!*only || strstr(only, "moe")) tc_test_moe(c);
    if (!*only || strstr(only, "batched")) tc_test_batched(c);
    if (!*only || strstr(only, "attention")) tc_test_attention(c);
    if (!*only || strstr(only, "misc")) tc_test_misc(c);
    if (strstr(only, "bench")) tc_bench(c);
    if (strcmp(only, "fault") == 0) {
        tc_test_fault(c);
        printf("%d passed, %d failed\n", c->n_pass, c->n_fail);
        return c->n_fail ? 1 : 0; /* the context is broken: no cleanup calls */
    }
    for (int i = 0; i < c->n_bufs; i++) c->api->mem_free(c->dev, c->bufs[i]);
    c->api->stream_destroy(c->s);
    if (c->api->device_close(c->dev) != ST_OK) tc_fail(c, "device_close: %s", c->api->last_error());
    c->api->shutdown();
    printf("%d passed, %d failed\n", c->n_pass, c->n_fail);
    return c->n_fail ? 1 : 0;
}
