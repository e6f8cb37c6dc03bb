/* SPDX-License-Identifier: Apache-2.0 */
/* Host-side check of the CUDA module's block decoders (backends/cuda/cuda_quant.cuh, compiled
 * for host and device) against core/quant's st_dequantize_row, for every weight format and
 * every 8-element group of several random rows. Runs without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cuda_quant.cuh"

static int g_fail;

template <int T> static void check_type(void) {
    const int64_t K = 512, rows = 8;
    const st_type_info *ti = st_type_get(T);
    size_t rb = st_row_size(T, K);
    uint8_t *q = (uint8_t *)calloc(rows, rb);
    float *x = (float *)malloc(sizeof(float) * K), *ref = (float *)malloc(sizeof(float) * K);
    double worst = 0;
    int64_t bad = 0;
    unsigned seed = 12345u + T;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < K; i++) {
            seed = seed * 1664525u + 1013904223u;
            x[i] = ((seed >> 8) / 16777216.0f - 0.5f) * (r + 1) * 3.0f;
        }
        if (st_quantize_row(T, x, q + r * rb, K) || st_dequantize_row(T, q + r * rb, ref, K)) {
            printf("FAIL %s: core/quant cannot (de)quantize\n", ti->name);
            g_fail++;
            return;
        }
        float amax = 0;
        for (int64_t i = 0; i < K; i++) amax = fmaxf(amax, fabsf(ref[i]));
        for (int64_t g = 0; g < K / 8; g++) {
            float v[8];
            st_qt<T>::deq8(q + r * rb, g, v);
            for (int t = 0; t < 8; t++) {
                double d = fabs((double)v[t] - ref[g * 8 + t]) / (amax > 0 ? amax : 1);
                if (d > worst) worst = d;
                if (d > 1e-6) bad++;
            }
        }
    }
    if (bad) {
        printf("FAIL deq8 %s: %lld of %lld values differ (worst %.3e of row max)\n", ti->name, (long long)bad,
               (long long)(K * rows), worst);
        g_fail++;
    } else {
        printf("PASS deq8 %s matches st_dequantize_row (worst %.1e)\n", ti->name, worst);
    }
    free(q);
    free(x);
    free(ref);
}

int main(void) {
    check_type<ST_TYPE_F32>();
    check_type<ST_TYPE_F16>();
    check_type<ST_TYPE_BF16>();
    check_type<ST_TYPE_Q4_0>();
    check_type<ST_TYPE_Q4_1>();
    check_type<ST_TYPE_Q5_0>();
    check_type<ST_TYPE_Q5_1>();
    check_type<ST_TYPE_Q8_0>();
    check_type<ST_TYPE_Q2_K>();
    check_type<ST_TYPE_Q3_K>();
    check_type<ST_TYPE_Q4_K>();
    check_type<ST_TYPE_Q5_K>();
    check_type<ST_TYPE_Q6_K>();
    check_type<ST_TYPE_IQ4_NL>();
    check_type<ST_TYPE_IQ4_XS>();
    check_type<ST_TYPE_MXFP4>();
    printf("%s\n", g_fail ? "FAILED" : "all passed");
    return g_fail ? 1 : 0;
}
