/* Building blocks of the matmul kernels: a warp dot product of one weight row with up to
 * eight activation rows (each weight byte read once for all of them), and a 64x64 shared-
 * memory tile of W.x^T with weights dequantized on the fly. Used by k_matmul.cu and k_moe.cu. */
#ifndef STRATA_CUDA_MM_CUH
#define STRATA_CUDA_MM_CUH

#include <mma.h>

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

/* Shared memory of one tensor-core tile: W and X tiles as float (rounded to TF32 by the
 * fragments), then the 64x64 result as C[n][m]. */
struct __align__(32) st_tile_smem_tc {
    union {
        struct {
            float w[ST_TILE_M][ST_TILE_K + 4]; /* [m][k] */
            float x[ST_TILE_N][ST_TILE_K + 4]; /* [n][k] */
        } in;
        float c[ST_TILE_N][ST_TILE_M + 4];     /* [n][m] */
    };
};

/* Same contract as st_gemm_tile (acc in the same thread layout), computed with TF32 tensor
 * cores (sm_80+): inputs keep 10 mantissa bits, sums stay FP32. 8 warps, each 32(m) x 16(n). */
template <int T>
__device__ void st_gemm_tile_tc(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, int64_t m0,
                                const char *const *xr, int xtype, st_tile_smem_tc &sm, float acc[4][4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    const int tid = threadIdx.x, warp = tid / ST_WARP;
    const int wm = (warp % 2) * 32, wn = (warp / 2) * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> cf[2];
    wmma::fill_fragment(cf[0], 0.0f);
    wmma::fill_fragment(cf[1], 0.0f);
    const int lr = tid / 4, lj = (tid % 4) * 8;
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
        for (int t = 0; t < 8; t++) sm.in.w[lr][lj + t] = w[t];
#pragma unroll
        for (int t = 0; t < 8; t++) sm.in.x[lr][lj + t] = xrow && kk + t < K ? st_ld(xrow, xtype, kk + t) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < ST_TILE_K; ks += 8) {
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> bf;
            wmma::load_matrix_sync(bf, &sm.in.x[wn][ks], ST_TILE_K + 4);
#pragma unroll
            for (int e = 0; e < bf.num_elements; e++) bf.x[e] = wmma::__float_to_tf32(bf.x[e]);
#pragma unroll
            for (int f = 0; f < 2; f++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> af;
                wmma::load_matrix_sync(af, &sm.in.w[wm + 16 * f][ks], ST_TILE_K + 4);
#pragma unroll
                for (int e = 0; e < af.num_elements; e++) af.x[e] = wmma::__float_to_tf32(af.x[e]);
                wmma::mma_sync(cf[f], af, bf, cf[f]);
            }
        }
        __syncthreads();
    }
    /* C(m, n) at c[n][m]: column-major with leading dimension ST_TILE_M + 4 */
    wmma::store_matrix_sync(&sm.c[wn][wm], cf[0], ST_TILE_M + 4, wmma::mem_col_major);
    wmma::store_matrix_sync(&sm.c[wn][wm + 16], cf[1], ST_TILE_M + 4, wmma::mem_col_major);
    __syncthreads();
    const int tm = (tid % 16) * 4, tn = (tid / 16) * 4;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = sm.c[tn + j][tm + i];
    __syncthreads();
#else
    (void)W; (void)w_nb1; (void)M; (void)K; (void)m0; (void)xr; (void)xtype; (void)sm;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f; /* never launched below sm_80 */
#endif
}

/* Shared memory of either tile flavour and a dispatcher used by the GEMM kernels. */
template <bool TC> struct st_tile_pick;
template <> struct st_tile_pick<false> {
    typedef st_tile_smem smem;
    template <int T>
    __device__ static void run(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, int64_t m0,
                               const char *const *xr, int xtype, smem &sm, float acc[4][4]) {
        st_gemm_tile<T>(W, w_nb1, M, K, m0, xr, xtype, sm, acc);
    }
};
template <> struct st_tile_pick<true> {
    typedef st_tile_smem_tc smem;
    template <int T>
    __device__ static void run(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, int64_t m0,
                               const char *const *xr, int xtype, smem &sm, float acc[4][4]) {
        st_gemm_tile_tc<T>(W, w_nb1, M, K, m0, xr, xtype, sm, acc);
    }
};

/* Tensor cores for a weight type on a device: TF32 keeps F16/BF16/quantized weights exact
 * or within their format's error; F32 weights stay on FP32 cores. */
static inline bool st_use_tc(const st_device *d, uint32_t wtype) {
    return d->cc_major >= 8 && wtype != ST_TYPE_F32 && !d->no_tc;
}

#endif
