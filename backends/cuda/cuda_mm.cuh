/* SPDX-License-Identifier: Apache-2.0 */
/* Building blocks of the matmul kernels: a warp dot product of one weight row with up to
 * eight activation rows (each weight byte read once for all of them), and a 64x64 shared-
 * memory tile of W.x^T on FP32 cores with weights dequantized on the fly (the tensor-core tile
 * is cuda_hmm.cuh). Used by k_matmul.cu and k_moe.cu. */
#ifndef STRATA_CUDA_MM_CUH
#define STRATA_CUDA_MM_CUH

#include "cuda/cuda_quant.cuh"

#define ST_GEMV_COLS 8  /* activation rows per GEMV pass */
#define ST_TILE_M 64
#define ST_TILE_N 64
#define ST_TILE_K 32
#define ST_TILE_THREADS 256

/* acc[i] (lane partials, not reduced) += W[row] . x_i for i < n; K elements. */
template <int T>
__device__ __forceinline__ void st_gemv_row(const uint8_t *row, int64_t K, int n, const char *const *xr,
                                            int xtype, float *acc) {
    const int lane = threadIdx.x % ST_WARP;
    const int64_t ng = K / 8;
    for (int64_t g = lane; g < ng; g += ST_WARP) {
        float w[8];
        st_qt<T>::deq8(row, g, w);
#pragma unroll
        for (int i = 0; i < ST_GEMV_COLS; i++) {
            if (i < n) {
                float s = 0.0f;
                if (xtype == ST_TYPE_F32) {
                    const float *xp = (const float *)xr[i] + g * 8;
#pragma unroll
                    for (int t = 0; t < 8; t++) s += w[t] * xp[t];
                } else {
#pragma unroll
                    for (int t = 0; t < 8; t++) s += w[t] * st_ld(xr[i], xtype, g * 8 + t);
                }
                acc[i] += s;
            }
        }
    }
    if constexpr (st_qt<T>::plain != 0) {
        for (int64_t e = ng * 8 + lane; e < K; e += ST_WARP) {
            const float wv = st_qt_plain_deq1<T>(row, e);
#pragma unroll
            for (int i = 0; i < ST_GEMV_COLS; i++)
                if (i < n) acc[i] += wv * st_ld(xr[i], xtype, e);
        }
    }
}

/* Shared memory of one GEMM tile. */
struct st_tile_smem {
    float w[ST_TILE_K][ST_TILE_M + 4];
    float x[ST_TILE_K][ST_TILE_N + 4];
};

/* acc[i][j] = sum_k W[m0 + tm + i][k] * X[col tn + j][k], tm = (tid%16)*4, tn = (tid/16)*4.
 * xr[c] (shared, ST_TILE_N entries) is the activation row of column c or NULL. */
template <int T>
__device__ void st_gemm_tile(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, int64_t m0,
                             const char *const *xr, int xtype, st_tile_smem &sm, float acc[4][4]) {
    const int tid = threadIdx.x;
    const int tm = (tid % 16) * 4, tn = (tid / 16) * 4;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    const int lr = tid / 4, lj = (tid % 4) * 8; /* loader: row/col lr, k offset lj */
    const uint8_t *wrow = m0 + lr < M ? W + (m0 + lr) * w_nb1 : NULL;
    const char *xrow = xr[lr];
    for (int64_t k0 = 0; k0 < K; k0 += ST_TILE_K) {
        float w[8];
        const int64_t kk = k0 + lj;
        if (!wrow) {
#pragma unroll
            for (int t = 0; t < 8; t++) w[t] = 0.0f;
        } else if (kk + 8 <= K) {
            st_qt<T>::deq8(wrow, kk / 8, w);
        } else {
#pragma unroll
            for (int t = 0; t < 8; t++) w[t] = kk + t < K ? st_qt_plain_deq1<T>(wrow, kk + t) : 0.0f;
        }
#pragma unroll
        for (int t = 0; t < 8; t++) sm.w[lj + t][lr] = w[t];
#pragma unroll
        for (int t = 0; t < 8; t++) sm.x[lj + t][lr] = xrow && kk + t < K ? st_ld(xrow, xtype, kk + t) : 0.0f;
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < ST_TILE_K; k++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = sm.w[k][tm + i];
#pragma unroll
            for (int j = 0; j < 4; j++) b[j] = sm.x[k][tn + j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
}

#endif
