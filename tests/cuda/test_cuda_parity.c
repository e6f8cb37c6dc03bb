/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA vs the CPU module on the decode GEMV: both multiply 8-bit activations, so the CUDA module
 * must quantize them exactly as the CPU module does (its scalar kernel table: from_float into
 * the weight format's partner blocks, then vec_dot). The two results may then differ only by
 * the order of float sums, so the bound here is 1e-5 normalized RMS; activations quantized any
 * other way (another block size, an unrounded F16 scale) land near 1e-4..1e-2 and fail.
 * Checked for a plain MATMUL (1 to 32 rows: decode and the batched column groups) and for the 8-bit rows RMS_NORM writes ahead for the next GEMV,
 * in both block forms (32 elements with an F16 scale; 256 with an F32 scale). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_kernels.h"
#include "cuda_harness.h"
#include "quant/quant.h"
#include "ref/ref.h"

#define PARITY_TOL 1e-5

/* out[j][m] = the CPU scalar kernels' W[m] . x[j] for the F32 rows x [n][K] (host memory). */
static int cpu_matmul(const st_cpu_kernels *k, const st_tensor *w, const float *x, int64_t n, float *out) {
    const st_cpu_weight_kernels *wk = &k->wt[w->type];
    const int64_t K = w->ne[0], M = w->ne[1];
    if (!wk->vec_dot || !wk->from_float) return -1;
    const size_t xs = st_row_size(wk->vec_type, K);
    char *xq = malloc(xs * (size_t)n);
    if (!xq) return -1;
    for (int64_t j = 0; j < n; j++) wk->from_float(x + j * K, xq + j * xs, K);
    for (int64_t m = 0; m < M; m++)
        for (int64_t j0 = 0; j0 < n; j0 += ST_CPU_MAX_NR) { /* the kernel takes up to ST_CPU_MAX_NR rows */
            const int nr = (int)(n - j0 < ST_CPU_MAX_NR ? n - j0 : ST_CPU_MAX_NR);
            float s[ST_CPU_MAX_NR];
            wk->vec_dot(K, (const char *)w->data + m * w->nb[1], xq + (size_t)j0 * xs, xs, nr, s);
            for (int j = 0; j < nr; j++) out[(j0 + j) * M + m] = s[j];
        }
    free(xq);
    return 0;
}

/* Device MATMUL of w by the device rows dx (F32 [n][K]), compared with the CPU kernels on the
 * host floats hx. */
static void parity_matmul(tc_ctx *c, const st_cpu_kernels *k, const st_tensor *w,
                          const st_tensor *dw, const float *hx, const st_tensor *dx, int64_t n) {
    const int64_t M = w->ne[1];
    st_tensor ho = tc_host_fill(ST_TYPE_F32, M, n, 1, -3.0f);
    st_tensor dout = tc_dev_tensor(c, &ho);
    char name[160];
    snprintf(name, sizeof name, "cpu parity matmul %s M=%lld K=%lld n=%lld", st_type_name(w->type), (long long)M,
             (long long)w->ne[0], (long long)n);
    st_matmul_args da = {.size = sizeof da, .w = *dw, .x = *dx, .out = dout};
    if (cpu_matmul(k, w, hx, n, (float *)ho.data)) tc_fail(c, "%s: the CPU kernels lack this format", name);
    else if (tc_status(c, name, c->api->ops->matmul(c->s, &da)))
        tc_compare_f32(c, name, (const float *)ho.data, (const float *)dout.data, (size_t)(M * n), PARITY_TOL);
    free(ho.data);
}

static void parity_case(tc_ctx *c, const st_cpu_kernels *k, uint32_t wt, int64_t n, int64_t M, int64_t K) {
    st_tensor w = tc_host_rand(wt, K, M, 1, -1, 1);
    st_tensor x = tc_host_rand(ST_TYPE_F32, K, n, 1, -1, 1);
    st_tensor dw = tc_dev_tensor(c, &w), dx = tc_dev_tensor(c, &x);
    parity_matmul(c, k, &w, &dw, (const float *)x.data, &dx, n);
    /* RMS_NORM of decode rows leaves the 8-bit form of its output for the GEMV that follows
     * (in the form the last GEMV wanted, which the matmul above set): the same integers */
    st_tensor nw = tc_host_rand(ST_TYPE_F32, K, 1, 1, 0.5f, 1.5f);
    st_tensor dnw = tc_dev_tensor(c, &nw);
    st_tensor y = tc_host_fill(ST_TYPE_F32, K, n, 1, 0.0f);
    st_tensor dy = tc_dev_tensor(c, &y);
    st_tensor ho = tc_host_fill(ST_TYPE_F32, M, n, 1, -3.0f);
    st_tensor dout = tc_dev_tensor(c, &ho); /* before the norm: a copy drops the 8-bit rows */
    st_rms_norm_args ra = {.size = sizeof ra, .eps = 1e-5f, .x = dx, .weight = dnw, .out = dy};
    char name[160];
    snprintf(name, sizeof name, "cpu parity rms_norm K=%lld n=%lld", (long long)K, (long long)n);
    if (tc_status(c, name, c->api->ops->rms_norm(c->s, &ra))) {
        st_matmul_args da = {.size = sizeof da, .w = dw, .x = dy, .out = dout};
        snprintf(name, sizeof name, "cpu parity rms_norm -> matmul %s M=%lld K=%lld n=%lld", st_type_name(wt),
                 (long long)M, (long long)K, (long long)n);
        /* the GEMV right after the norm reads the rows the norm wrote */
        if (tc_status(c, name, c->api->ops->matmul(c->s, &da)) && tc_down(c, y.data, dy.data, tc_bytes(&y))) {
            if (cpu_matmul(k, &w, (const float *)y.data, n, (float *)ho.data))
                tc_fail(c, "%s: the CPU kernels lack this format", name);
            else
                tc_compare_f32(c, name, (const float *)ho.data, (const float *)dout.data, (size_t)(M * n), PARITY_TOL);
        }
    }
    free(ho.data);
    free(w.data);
    free(x.data);
    free(nw.data);
    free(y.data);
}

void tc_test_cpu_parity(tc_ctx *c) {
    st_cpu_kernels k;
    st_cpu_kernels_scalar(&k);
    static const uint32_t types[] = {ST_TYPE_Q4_0, ST_TYPE_Q5_0, ST_TYPE_Q8_0, ST_TYPE_Q4_K,
                                     ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_MXFP4};
    /* decode of one sequence, of several, and the batched column groups up to the GEMV's 32 */
    static const int64_t ns[] = {1, 3, 8, 12, 32};
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 5; j++) parity_case(c, &k, types[i], ns[j], 133, 2048);
    /* a Q8_0 GEMV after a K-quant one on rows of 768 (the 32-element form follows the weight) */
    parity_case(c, &k, ST_TYPE_Q4_K, 1, 67, 768);
    parity_case(c, &k, ST_TYPE_Q8_0, 1, 67, 768);
    parity_case(c, &k, ST_TYPE_Q6_K, 2, 67, 768);
}
