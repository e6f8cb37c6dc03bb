/* SPDX-License-Identifier: Apache-2.0 */
/* MATMUL (GEMV for n <= 8 activation rows, tiled GEMM above) and GET_ROWS for every weight
 * format. Launchers validate shapes and return statuses; kernels dequantize on the fly. */
#include "cuda/cuda_gemv.cuh"
#include "cuda/cuda_hmm.cuh"
#include "cuda/cuda_mm.cuh"

#define ST_GEMV_WARPS 4

/* One warp per output row m; every weight byte is read once for all n (<= 8) rows of x. */
template <int T>
__global__ void __launch_bounds__(ST_GEMV_WARPS * ST_WARP)
k_gemv(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, st_view x, int n, st_view out) {
    const int64_t m = (int64_t)blockIdx.x * ST_GEMV_WARPS + threadIdx.x / ST_WARP;
    if (m >= M) return;
    const char *xr[ST_GEMV_COLS];
    float acc[ST_GEMV_COLS];
#pragma unroll
    for (int i = 0; i < ST_GEMV_COLS; i++) {
        xr[i] = i < n ? st_row(x, i) : NULL;
        acc[i] = 0.0f;
    }
    st_gemv_row<T>(W + m * w_nb1, K, n, xr, x.type, acc);
#pragma unroll
    for (int i = 0; i < ST_GEMV_COLS; i++) {
        if (i < n) {
            const float v = st_warp_sum(acc[i]);
            if (threadIdx.x % ST_WARP == 0) st_st(st_row(out, i), out.type, m, v);
        }
    }
}

/* FP32 cores, 64x64 output tiles: block (mx, ny) computes out[ny*64 ..][mx*64 ..]. For F32
 * weights, devices without tensor cores, and rows the half tile cannot take. */
template <int T>
__global__ void __launch_bounds__(ST_TILE_THREADS)
k_gemm(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, st_view x, int64_t n, st_view out) {
    __shared__ st_tile_smem sm;
    __shared__ const char *xr[ST_TILE_N];
    const int64_t m0 = (int64_t)blockIdx.x * ST_TILE_M, n0 = (int64_t)blockIdx.y * ST_TILE_N;
    if (threadIdx.x < ST_TILE_N) xr[threadIdx.x] = n0 + threadIdx.x < n ? st_row(x, n0 + threadIdx.x) : NULL;
    __syncthreads();
    float acc[4][4];
    st_gemm_tile<T>(W, w_nb1, M, K, m0, xr, x.type, sm, acc);
    const int tm = (threadIdx.x % 16) * 4, tn = (threadIdx.x / 16) * 4;
    for (int j = 0; j < 4; j++) {
        const int64_t c = n0 + tn + j;
        if (c >= n) break;
        char *orow = st_row(out, c);
        for (int i = 0; i < 4; i++)
            if (m0 + tm + i < M) st_st(orow, out.type, m0 + tm + i, acc[i][j]);
    }
}

/* Tensor cores: block (mx, ny, kz) computes out[ny*64 ..][mx*128 ..] with F16 inputs over K
 * slice kz of kchunk elements (kchunk = K: whole rows; else sums added atomically into a
 * zeroed F32 output). */
template <int T>
__global__ void __launch_bounds__(ST_HMM_THREADS)
k_hgemm(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, int64_t kchunk, st_view x, int64_t n, st_view out) {
    __shared__ st_hmm_smem sm;
    __shared__ st_hmm_cols cols;
    const int64_t m0 = (int64_t)blockIdx.x * ST_HMM_BM, n0 = (int64_t)blockIdx.y * ST_HMM_BN;
    if (threadIdx.x < ST_HMM_BN) {
        const int64_t c = n0 + threadIdx.x;
        cols.x[threadIdx.x] = c < n ? st_row(x, c) : NULL;
        cols.out[threadIdx.x] = c < n ? st_row(out, c) : NULL;
        cols.scale[threadIdx.x] = 1.0f;
    }
    __syncthreads();
    const int64_t k0 = (int64_t)blockIdx.z * kchunk, k1 = k0 + kchunk < K ? k0 + kchunk : K;
    const int ncols = n - n0 < ST_HMM_BN ? (int)(n - n0) : ST_HMM_BN;
    st_hmm_tile_pf<T, ST_HMM_PF>(W, w_nb1, M, k0, k1, m0, cols, ncols, x.type, out.type, kchunk < K, sm);
}

/* The same on the register-fragment tile: block (mx, ny, kz) computes out[ny*8NB ..][mx*128 ..]. */
template <int T, int NB>
__global__ void __launch_bounds__(ST_HM2_THREADS, st_hm2_minb<T>::v)
k_hgemm2(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, int64_t kchunk, st_view x, int64_t n, st_view out) {
    __shared__ st_hm2_smem<NB> sm;
    __shared__ st_hmm_cols cols;
    const int64_t m0 = (int64_t)blockIdx.x * ST_HM2_BM, n0 = (int64_t)blockIdx.y * (NB * 8);
    if (threadIdx.x < NB * 8) {
        const int64_t c = n0 + threadIdx.x;
        cols.x[threadIdx.x] = c < n ? st_row(x, c) : NULL;
        cols.out[threadIdx.x] = c < n ? st_row(out, c) : NULL;
        cols.scale[threadIdx.x] = 1.0f;
    }
    __syncthreads();
    const int64_t k0 = (int64_t)blockIdx.z * kchunk, k1 = k0 + kchunk < K ? k0 + kchunk : K;
    const int ncols = n - n0 < NB * 8 ? (int)(n - n0) : NB * 8;
    st_hm2_tile<T, NB>(W, w_nb1, M, k0, k1, m0, cols, ncols, x.type, out.type, kchunk < K, sm);
}

/* Columns per register-fragment tile of MATMUL. */
#define ST_MM_HM2_NB 4

struct st_mm_launch {
    const st_matmul_args *a;
    cudaStream_t s;
    int64_t M, K, n;
    bool half, frag;
    int64_t kchunk; /* split K for the tensor-core tiles (K: no split) */
    st_view x16;    /* x for the register-fragment and big tiles (an F16 copy when one fits) */
    bool big;       /* the 128 x 128 shared-memory tile (many columns) */
    int64_t bm() const { return big ? ST_HM3_BM : frag ? ST_HM2_BM : ST_HMM_BM; }
    int64_t bn() const { return big ? ST_HM3_BN : half ? (frag ? ST_MM_HM2_NB * 8 : ST_HMM_BN) : ST_TILE_N; }
    template <int T> cudaError_t run() const {
        st_view x = st_view_of(a->x), out = st_view_of(a->out);
        const uint8_t *W = (const uint8_t *)a->w.data;
        if (n <= ST_GEMV_COLS) {
            k_gemv<T><<<st_blocks(M, ST_GEMV_WARPS), ST_GEMV_WARPS * ST_WARP, 0, s>>>(W, a->w.nb[1], M, K, x,
                                                                                    (int)n, out);
            return cudaSuccess;
        }
        const int64_t bn = this->bn();
        for (int64_t n0 = 0; n0 < n; n0 += 65535ll * bn) {
            /* grid.y is limited: shift the views for very large n */
            st_view xs = x, os = out;
            const int64_t nn = n - n0 < 65535ll * bn ? n - n0 : 65535ll * bn;
            if (n0) {
                if (x.ne2 * x.ne3 != 1 || out.ne2 * out.ne3 != 1) return cudaErrorInvalidValue;
                xs.p += n0 * x.nb1;
                os.p += n0 * out.nb1;
                xs.ne1 = nn;
                os.ne1 = nn;
            }
            if (half && frag) {
                st_view x16s = x16;
                if (n0) {
                    x16s.p += n0 * x16.nb1;
                    x16s.ne1 = nn;
                }
                dim3 grid(st_blocks(M, (int)bm()), st_blocks(nn, (int)bn), (unsigned)st_blocks(K, (int)kchunk));
                if (big) k_hgemm3<T><<<grid, ST_HM3_THREADS, ST_HM3_SMEM, s>>>(W, a->w.nb[1], M, K, kchunk, x16s, nn, os);
                else k_hgemm2<T, ST_MM_HM2_NB><<<grid, ST_HM2_THREADS, 0, s>>>(W, a->w.nb[1], M, K, kchunk, x16s, nn, os);
            } else if (half) {
                dim3 grid(st_blocks(M, ST_HMM_BM), st_blocks(nn, ST_HMM_BN), (unsigned)st_blocks(K, (int)kchunk));
                k_hgemm<T><<<grid, ST_HMM_THREADS, 0, s>>>(W, a->w.nb[1], M, K, kchunk, xs, nn, os);
            } else {
                dim3 grid(st_blocks(M, ST_TILE_M), st_blocks(nn, ST_TILE_N));
                k_gemm<T><<<grid, ST_TILE_THREADS, 0, s>>>(W, a->w.nb[1], M, K, xs, nn, os);
            }
        }
        return cudaSuccess;
    }
};

/* Shared checks of a weight tensor [M][K]. */
static st_status check_weight(const st_tensor &w, const char *op) {
    const int qk = st_w_qk(w.type);
    if (!w.data) return st_mod_fail(ST_INVALID, "cuda %s: weight has no data", op);
    if (!qk) return st_mod_fail(ST_UNSUPPORTED, "cuda %s: weight type %s not supported", op, st_cuda_type_name(w.type));
    if (w.ne[0] % qk)
        return st_mod_fail(ST_INVALID, "cuda %s: %s row of %lld elements is not a multiple of %d", op,
                           st_cuda_type_name(w.type), (long long)w.ne[0], qk);
    if (qk == 1 && w.nb[0] != st_act_size(w.type))
        return st_mod_fail(ST_UNSUPPORTED, "cuda %s: weight not contiguous in dim 0", op);
    return ST_OK;
}

extern "C" st_status st_cuda_matmul(st_stream *s, const st_matmul_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda matmul: NULL argument");
    ST_TRY(check_weight(a->w, "matmul"));
    ST_TRY(st_check_act(a->x, "matmul", "x"));
    ST_TRY(st_check_act(a->out, "matmul", "out"));
    const int64_t K = a->w.ne[0], M = a->w.ne[1], n = st_nrows(a->x);
    if (a->x.ne[0] != K || a->out.ne[0] != M || st_nrows(a->out) != n)
        return st_mod_fail(ST_INVALID, "cuda matmul: shapes w[%lld][%lld] x[%lld][%lld] out[%lld][%lld] disagree",
                           (long long)M, (long long)K, (long long)n, (long long)a->x.ne[0],
                           (long long)st_nrows(a->out), (long long)a->out.ne[0]);
    if (!M || !n) return ST_OK;
    ST_TRY(st_cuda_use(s->dev));
    st_status fast_st;
    if (st_gemv_fast(s, a, &fast_st)) return fast_st;
    const bool half = st_hmm_ok(s->dev, a->w.type, K, a->x);
    st_mm_launch L{a, s->s, M, K, n, half, half && st_hm2_ok(a->w.type, a->w.data, a->w.nb[1], 0), K, {}, false};
    L.big = L.frag && st_hm3_min_cols() > 0 && n >= st_hm3_min_cols();
#define ST_HM3_READY(T) st_hm3_ready<T>(s->dev)
    if (L.big) {
        L.big = [&]() -> bool { ST_WEIGHT_DISPATCH(a->w.type, ST_HM3_READY) return false; }();
    }
#undef ST_HM3_READY
    L.x16 = L.frag && n > ST_GEMV_COLS ? st_hm2_x16_view(s, a->x, 0) : st_view_of(a->x);
    /* the big tile copies F16 activations with 16-byte cp.async (rows 16-byte aligned: st_hmm_ok
     * checked x's, the copy's are); other activations take the 128 x 32 tile */
    if (L.x16.type != ST_TYPE_F16) L.big = false;
    if (L.half && n > ST_GEMV_COLS && n <= 65535ll * L.bn()) {
        /* Too few tiles to fill the device (short weight matrices such as K/V projections or a
         * router): split K, summing atomically into a zeroed F32 output. */
        const int64_t tiles = (int64_t)st_blocks(M, (int)L.bm()) * st_blocks(n, (int)L.bn());
        const int64_t want = (L.big ? 1ll : 2ll) * (s->dev->n_sm > 0 ? s->dev->n_sm : 32); /* blocks per SM */
        const bool flat = a->out.type == ST_TYPE_F32 && a->out.nb[1] == M * 4 &&
                          (a->out.ne[2] * a->out.ne[3] == 1 || (a->out.nb[2] == a->out.ne[1] * a->out.nb[1] &&
                                                                (a->out.ne[3] == 1 || a->out.nb[3] == a->out.ne[2] * a->out.nb[2])));
        if (flat && tiles < want) {
            int64_t split = (want + tiles - 1) / tiles;
            const int64_t bk = L.frag ? ST_HM2_BK : ST_HMM_BK; /* split points on K slices (the big tile's too) */
            int64_t chunk = (K / split + bk - 1) / bk * bk;
            if (chunk < 256) chunk = 256;
            if (chunk < K) {
                if (cudaMemsetAsync(a->out.data, 0, (size_t)(n * M * 4), s->s) != cudaSuccess)
                    return st_cuda_launched(s, "matmul (zero for split K)");
                L.kchunk = chunk;
            }
        }
    }
#define ST_MM_CALL(T)                                                                                 \
    (L.run<T>() != cudaSuccess ? st_mod_fail(ST_UNSUPPORTED, "cuda matmul: n = %lld rows of a 3-D/4-D view", \
                                             (long long)n)                                             \
                               : st_cuda_launched(s, "matmul"))
    ST_WEIGHT_DISPATCH(a->w.type, ST_MM_CALL)
#undef ST_MM_CALL
    return st_mod_fail(ST_UNSUPPORTED, "cuda matmul: weight type %s", st_cuda_type_name(a->w.type));
}

/* GET_ROWS: block i writes out[i][:] = dequant(w[ids[i]][:]); ids outside [0, n_rows) give 0. */
template <int T>
__global__ void k_get_rows(const uint8_t *W, int64_t w_nb1, int64_t n_rows, int64_t K, const int32_t *ids,
                           st_view out) {
    const int64_t i = blockIdx.x;
    const int32_t id = ids[i];
    char *orow = st_row(out, i);
    if (id < 0 || id >= n_rows) {
        for (int64_t e = threadIdx.x; e < K; e += blockDim.x) st_st(orow, out.type, e, 0.0f);
        return;
    }
    const uint8_t *row = W + (int64_t)id * w_nb1;
    const int64_t ng = K / 8;
    for (int64_t g = threadIdx.x; g < ng; g += blockDim.x) {
        float v[8];
        st_qt<T>::deq8(row, g, v);
#pragma unroll
        for (int t = 0; t < 8; t++) st_st(orow, out.type, g * 8 + t, v[t]);
    }
    for (int64_t e = ng * 8 + threadIdx.x; e < K; e += blockDim.x) st_st(orow, out.type, e, st_qt_plain_deq1<T>(row, e));
}

extern "C" st_status st_cuda_get_rows(st_stream *s, const st_get_rows_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda get_rows: NULL argument");
    ST_TRY(check_weight(a->w, "get_rows"));
    ST_TRY(st_check_act(a->out, "get_rows", "out"));
    const int64_t K = a->w.ne[0], n = st_nrows(a->out);
    if (a->out.ne[0] != K)
        return st_mod_fail(ST_INVALID, "cuda get_rows: out row %lld != weight row %lld", (long long)a->out.ne[0],
                           (long long)K);
    if (!n) return ST_OK;
    if (!a->ids) return st_mod_fail(ST_INVALID, "cuda get_rows: NULL ids");
    if (n > 0x7fffffff) return st_mod_fail(ST_UNSUPPORTED, "cuda get_rows: %lld rows", (long long)n);
    ST_TRY(st_cuda_use(s->dev));
    const st_view out = st_view_of(a->out);
    const int64_t nr = a->w.ne[1];
#define ST_GR_CALL(T)                                                                                    \
    (k_get_rows<T><<<(unsigned)n, 128, 0, s->s>>>((const uint8_t *)a->w.data, a->w.nb[1], nr, K, a->ids, out), \
     st_cuda_launched(s, "get_rows"))
    ST_WEIGHT_DISPATCH(a->w.type, ST_GR_CALL)
#undef ST_GR_CALL
    return st_mod_fail(ST_UNSUPPORTED, "cuda get_rows: weight type %s", st_cuda_type_name(a->w.type));
}
