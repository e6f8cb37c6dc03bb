/* Tensor-core GEMM tile for prefill: a 128 (weight rows) x 64 (activation rows) block of
 * W.x^T with F16 inputs and F32 sums (sm_80+). Weights are dequantized on the fly from any
 * format into shared memory, activations (F32/F16/BF16) are converted to F16 as they are
 * staged; both are double-buffered through registers so the next K slice is read while the
 * current one is multiplied. Used by k_matmul.cu (dense) and k_moe.cu (per expert slot). */
#ifndef STRATA_CUDA_HMM_CUH
#define STRATA_CUDA_HMM_CUH

#include <mma.h>

#include "cuda/cuda_quant.cuh"

#define ST_HMM_BM 128
#define ST_HMM_BN 64
#define ST_HMM_BK 32
#define ST_HMM_THREADS 256
#define ST_HMM_LD (ST_HMM_BK + 8) /* halfs per staged row: 80 bytes keeps 32-byte fragment alignment */

/* Columns of one tile: the activation row, the output row and the factor of each column
 * (NULL rows are padding). Filled by the calling kernel, read by every thread. */
struct st_hmm_cols {
    const char *x[ST_HMM_BN];
    char *out[ST_HMM_BN];
    float scale[ST_HMM_BN];
};

struct __align__(32) st_hmm_smem {
    union {
        struct {
            __half w[2][ST_HMM_BM][ST_HMM_LD];
            __half x[2][ST_HMM_BN][ST_HMM_LD];
        } in;
        float stage[ST_HMM_THREADS / ST_WARP][16][16 + 4];
    };
};

/* Eight consecutive activations of a row as four half2 (16-byte aligned source). */
__device__ __forceinline__ uint4 st_hmm_x8(const char *row, int type, int64_t k) {
    uint4 r;
    if (!row) return make_uint4(0, 0, 0, 0);
    if (type == ST_TYPE_F16) return *(const uint4 *)(row + k * 2);
    __half2 h[4];
    if (type == ST_TYPE_F32) {
        const float4 a = *(const float4 *)(row + k * 4), b = *(const float4 *)(row + k * 4 + 16);
        h[0] = __floats2half2_rn(a.x, a.y);
        h[1] = __floats2half2_rn(a.z, a.w);
        h[2] = __floats2half2_rn(b.x, b.y);
        h[3] = __floats2half2_rn(b.z, b.w);
    } else {
        const uint4 u = *(const uint4 *)(row + k * 2);
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) h[i] = __floats2half2_rn(st_b2f((uint16_t)(w[i] & 0xffff)), st_b2f((uint16_t)(w[i] >> 16)));
    }
    memcpy(&r, h, 16);
    return r;
}

/* Eight dequantized weights as four half2. */
template <int T>
__device__ __forceinline__ uint4 st_hmm_w8(const uint8_t *row, int64_t g) {
    uint4 r;
    if (!row) return make_uint4(0, 0, 0, 0);
    float v[8];
    st_qt<T>::deq8(row, g, v);
    __half2 h[4];
#pragma unroll
    for (int i = 0; i < 4; i++) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    memcpy(&r, h, 16);
    return r;
}

/* out[col][m0 + i] = scale[col] * sum_k W[m0 + i][k] * x[col][k] for the tile's rows i < 128
 * (rows >= M skipped), columns col < ncols with an output row, and k in [k0, k1) (multiples
 * of ST_HMM_BK). With `atomic` the sums are added to F32 outputs atomically (split K). All
 * threads call; PF K slices are read ahead. */
template <int T, int PF>
__device__ void st_hmm_tile_pf(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t k0, int64_t k1, int64_t m0,
                               const st_hmm_cols &cols, int ncols, int xtype, int otype, bool atomic,
                               st_hmm_smem &sm) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    const int tid = threadIdx.x, warp = tid / ST_WARP, lane = tid % ST_WARP;
    const int wm = (warp % 4) * 32, wn = (warp / 4) * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> cf[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(cf[i][j], 0.0f);
    /* fragments of columns past ncols multiply zeros: their warps skip them */
    const int jn = ncols > wn + 16 ? 2 : (ncols > wn ? 1 : 0);
    /* loaders: weights rows r0, r0 + 64 at group gk; activations row xr at group gk; PF slices
       are in flight in registers */
    const int r0 = tid / 4, gk = tid % 4;
    const uint8_t *w0 = m0 + r0 < M ? W + (m0 + r0) * w_nb1 : NULL;
    const uint8_t *w1 = m0 + r0 + 64 < M ? W + (m0 + r0 + 64) * w_nb1 : NULL;
    const char *xrow = cols.x[r0];
    const int64_t g0 = k0 / 8;
    const int nk = (int)((k1 - k0) / ST_HMM_BK);
    uint4 rw0[PF], rw1[PF], rx[PF];
#pragma unroll
    for (int f = 0; f < PF; f++) {
        const int64_t g = g0 + (int64_t)f * (ST_HMM_BK / 8) + gk;
        const bool in = f < nk;
        rw0[f] = st_hmm_w8<T>(in ? w0 : NULL, g);
        rw1[f] = st_hmm_w8<T>(in ? w1 : NULL, g);
        rx[f] = st_hmm_x8(in ? xrow : NULL, xtype, g * 8);
    }
    for (int ks = 0; ks < nk; ks++) {
        const int b = ks & 1;
        *(uint4 *)&sm.in.w[b][r0][gk * 8] = rw0[0];
        *(uint4 *)&sm.in.w[b][r0 + 64][gk * 8] = rw1[0];
        *(uint4 *)&sm.in.x[b][r0][gk * 8] = rx[0];
        __syncthreads();
#pragma unroll
        for (int f = 0; f + 1 < PF; f++) {
            rw0[f] = rw0[f + 1];
            rw1[f] = rw1[f + 1];
            rx[f] = rx[f + 1];
        }
        if (ks + PF < nk) {
            const int64_t g = g0 + (int64_t)(ks + PF) * (ST_HMM_BK / 8) + gk;
            rw0[PF - 1] = st_hmm_w8<T>(w0, g);
            rw1[PF - 1] = st_hmm_w8<T>(w1, g);
            rx[PF - 1] = st_hmm_x8(xrow, xtype, g * 8);
        }
        if (jn > 0) {
#pragma unroll
            for (int kk = 0; kk < ST_HMM_BK; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af[2];
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> bf[2];
#pragma unroll
                for (int i = 0; i < 2; i++) wmma::load_matrix_sync(af[i], &sm.in.w[b][wm + 16 * i][kk], ST_HMM_LD);
#pragma unroll
                for (int j = 0; j < 2; j++)
                    if (j < jn) wmma::load_matrix_sync(bf[j], &sm.in.x[b][wn + 16 * j][kk], ST_HMM_LD);
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int j = 0; j < 2; j++)
                        if (j < jn) wmma::mma_sync(cf[i][j], af[i], bf[j], cf[i][j]);
            }
        }
        /* the other buffer is written next iteration: no second barrier needed, since every
           thread passed this iteration's barrier after finishing the previous reads of it */
    }
    __syncthreads(); /* the staging area overlaps the input buffers */
    float(*st)[16 + 4] = sm.stage[warp];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            if (j >= jn) continue;
            /* stage[n][m]: column-major store of C(m, n) */
            wmma::store_matrix_sync(&st[0][0], cf[i][j], 16 + 4, wmma::mem_col_major);
            __syncwarp();
            for (int e = lane; e < 256; e += ST_WARP) {
                const int nl = e / 16, ml = e % 16;
                const int c = wn + 16 * j + nl;
                const int64_t m = m0 + wm + 16 * i + ml;
                char *orow = cols.out[c];
                if (orow && m < M) {
                    if (atomic) atomicAdd((float *)orow + m, st[nl][ml] * cols.scale[c]);
                    else st_st(orow, otype, m, st[nl][ml] * cols.scale[c]);
                }
            }
            __syncwarp();
        }
    __syncthreads(); /* the caller refills cols and the buffers next */
#else
    (void)W; (void)w_nb1; (void)M; (void)k0; (void)k1; (void)m0; (void)cols; (void)ncols; (void)xtype; (void)otype;
    (void)atomic; (void)sm;
#endif
}

/* K slices the tile keeps in flight in registers. Measured on an H200 (8-layer qwen3-30b-a3b
 * shape, Q4_K, 2048-token prefill): depth 1 gave 26.5k tok/s at 512-token steps and 33.5k at
 * 2048, depth 2 26.2k and 33.2k, so the kernels use 1. */
#define ST_HMM_PF 1

/* Whether the half tile can run: sm_80+, tensor cores allowed for the weight type, K a
 * multiple of the K slice, activation rows 16-byte aligned. */
static inline bool st_hmm_ok(const st_device *d, uint32_t wtype, int64_t K, const st_tensor &x) {
    return d->cc_major >= 8 && !d->no_tc && wtype != ST_TYPE_F32 && K % ST_HMM_BK == 0 &&
           ((uintptr_t)x.data % 16) == 0 && x.nb[1] % 16 == 0 && (x.ne[2] * x.ne[3] == 1 || x.nb[2] % 16 == 0) &&
           (x.ne[3] == 1 || x.nb[3] % 16 == 0);
}

#endif
