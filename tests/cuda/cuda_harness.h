/* SPDX-License-Identifier: Apache-2.0 */
/* Harness of the CUDA op tests: loads the module, opens device 0, moves host tensors to the
 * device and compares device results with core/ref's. Every check prints one PASS/FAIL line. */
#ifndef STRATA_TEST_CUDA_HARNESS_H
#define STRATA_TEST_CUDA_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "strata/backend.h"

typedef struct tc_ctx {
    const st_backend_api *api;
    st_device *dev;
    st_stream *s;
    int n_pass, n_fail;
    int tc; /* the device runs GEMM tiles on TF32 tensor cores (sm_80+, STRATA_CUDA_NO_TC unset) */
    void *bufs[4096]; /* device buffers to free at the end */
    int n_bufs;
} tc_ctx;

/* Device copy of `bytes` host bytes (NULL host = uninitialised); owned by ctx. */
void *tc_up(tc_ctx *c, const void *host, size_t bytes);
/* Copy device bytes back and sync; returns 0 on failure (reported as FAIL). */
int tc_down(tc_ctx *c, void *host, const void *dev, size_t bytes);
/* Same tensor with data replaced by a device copy of its host data. */
st_tensor tc_dev_tensor(tc_ctx *c, const st_tensor *host);
/* Bytes spanned by a contiguous tensor. */
size_t tc_bytes(const st_tensor *t);
/* Record the result of an op call. Returns nonzero when status is OK. */
int tc_status(tc_ctx *c, const char *name, st_status got);
/* Compare device output (device tensor dv) against the host reference tensor (ref), both of
 * ref's type and shape, with normalized RMS error <= tol and no NaN where ref has none. */
int tc_compare(tc_ctx *c, const char *name, const st_tensor *ref, const st_tensor *dv, double tol);
/* The normalized RMS error tc_compare judges (no line printed), with the NaN/Inf mismatches
 * and the largest absolute difference; -1 when the device copy failed (reported). */
double tc_error(tc_ctx *c, const st_tensor *ref, const st_tensor *dv, int *nan_bad, double *max_abs);
/* Whether the module's 8-bit decode GEMV (k_gemv.cu) takes this weight format: MATMUL up to 32
 * rows, the expert ops up to 512 assignments. */
int tc_gv_format(uint32_t wt);
/* Compare raw int32 arrays exactly. */
int tc_compare_i32(tc_ctx *c, const char *name, const int32_t *ref, const int32_t *dev_ptr, size_t n);
/* Compare host float arrays (device copy fetched) with tolerance. */
int tc_compare_f32(tc_ctx *c, const char *name, const float *ref, const float *dev_ptr, size_t n, double tol);
/* Uniform random in [lo, hi). */
float tc_rand(float lo, float hi);
void tc_fill(float *x, size_t n, float lo, float hi);
/* Malloc'ed host tensor of `type` filled from random floats (quantized with st_quantize_row). */
st_tensor tc_host_rand(uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, float lo, float hi);
/* Malloc'ed host tensor with every element set to v (activation types). */
st_tensor tc_host_fill(uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, float v);
void tc_pass(tc_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tc_fail(tc_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Op groups (tests/cuda/test_cuda_*.c). */
void tc_test_dense(tc_ctx *c);
void tc_test_moe(tc_ctx *c);
void tc_test_batched(tc_ctx *c); /* batched decode sizes: 1..64 tokens per step, dense and experts */
void tc_test_cpu_parity(tc_ctx *c); /* decode GEMV vs the CPU module's kernels (device only) */
void tc_test_attention(tc_ctx *c);
void tc_test_misc(tc_ctx *c);     /* ops plus module services */
void tc_test_misc_ops(tc_ctx *c); /* the op part only */
void tc_bench(tc_ctx *c);
void tc_test_fault(tc_ctx *c);    /* device fault -> status at sync (argv[2] "fault", alone) */         /* timings, printed (argv[2] "bench") */
/* core/ref behind a host-memory table (harness self-check). */
const st_backend_api *tc_ref_mock_api(void);

#endif
