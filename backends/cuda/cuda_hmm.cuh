/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor-core GEMM tiles for prefill, F16 inputs and F32 sums (sm_80+), used by k_matmul.cu
 * (dense) and k_moe.cu (per expert slot):
 * - st_hmm_tile_pf: a 128 (weight rows) x 64 (activation rows) block of W.x^T through wmma.
 *   Weights are dequantized on the fly from any format into shared memory, activations
 *   (F32/F16/BF16) are converted to F16 as they are staged; both are double-buffered through
 *   registers so the next K slice is read while the current one is multiplied.
 * - st_hm2_tile (below): 128 x 32 blocks on mma.sync with the weights dequantized straight into
 *   register fragments; the default where st_hm2_ok allows it. */
#ifndef STRATA_CUDA_HMM_CUH
#define STRATA_CUDA_HMM_CUH

#include <mma.h>
#include <stdlib.h>

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


/* ---- Register-fragment tile ------------------------------------------------------------
 * 128 weight rows x 8*NB activation columns per block of 4 warps; warp w owns rows 32w..32w+31
 * and every column, so each weight is dequantized once per block, straight into mma.sync
 * m16n8k16 A fragments (no shared-memory copy of the weights). K runs in chunks of 64: the
 * weights' raw bytes of chunk c+1 are loaded into registers while chunk c is multiplied, and the
 * activations (converted to F16) are double-buffered in shared memory, one barrier per chunk.
 *
 * K order inside the mma: the sum over k does not depend on the order, so the fragments use a
 * permuted one. Lane (g = lane/4, t = lane%4) supplies, for each 32 elements of a chunk,
 * elements 8t..8t+7 of its rows: mma step u (0, 1) takes 8t+4u..8t+4u+3, where the pair
 * 8t+4u, +1 sits in the fragment's k slots 2t, 2t+1 and the pair 8t+4u+2, +3 in 2t+8, 2t+9.
 * The activations' B fragments need the same elements of a column, which lie contiguous in
 * shared memory: one 16-byte load gives a lane both steps. */
#define ST_HM2_WARPS 4
/* Blocks per SM the register-fragment tile kernels of format T are compiled for (launch
 * bounds): 4 caps them at 128 registers per thread (16 warps per SM), 3 at 170 (12 warps).
 * On an H200 (2026-12-03) 4 made Q8_0 prefill 4.8% faster and Q4_K's 9% slower (its decoder
 * needs the registers); formats not measured keep 3. -DST_HM2_MINB=n forces n for all. */
template <int T> struct st_hm2_minb {
#ifdef ST_HM2_MINB
    static constexpr int v = ST_HM2_MINB;
#else
    static constexpr int v = T == ST_TYPE_Q8_0 ? 4 : 3;
#endif
};
#define ST_HM2_THREADS (ST_HM2_WARPS * ST_WARP)
#define ST_HM2_BM (ST_HM2_WARPS * 32)
#define ST_HM2_BK 64
#define ST_HM2_LDX (ST_HM2_BK + 32) /* halves per staged activation row: 192 bytes, so the 8 rows a
                                      quarter warp reads fall in different banks */

template <int NB> struct __align__(16) st_hm2_smem {
    __half x[2][NB * 8][ST_HM2_LDX];
};

/* Bit casts and the few half2 operations of the decoders (host versions for host-side checks). */
__host__ __device__ __forceinline__ uint32_t st_h2u(__half2 h) {
    const __half2_raw r = h;
    return (uint32_t)r.x | ((uint32_t)r.y << 16);
}
__host__ __device__ __forceinline__ __half2 st_u2h(uint32_t u) {
    __half2_raw r;
    r.x = (unsigned short)(u & 0xFFFF);
    r.y = (unsigned short)(u >> 16);
    return __half2(r);
}
__host__ __device__ __forceinline__ uint32_t st_f2h2(float a, float b) { return st_h2u(__floats2half2_rn(a, b)); }
__host__ __device__ __forceinline__ uint32_t st_prmt(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
    return __byte_perm(x, y, s);
#else
    const uint64_t v = ((uint64_t)y << 32) | x;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) r |= (uint32_t)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
    return r;
#endif
}
/* The 32 bits at byte 2 of the 64-bit value hi:lo. */
__host__ __device__ __forceinline__ uint32_t st_fshr16(uint32_t lo, uint32_t hi) {
#ifdef __CUDA_ARCH__
    return __funnelshift_r(lo, hi, 16);
#else
    return (lo >> 16) | (hi << 16);
#endif
}
/* A read-only load (through the non-coherent cache on the device). */
template <typename V> __host__ __device__ __forceinline__ V st_ldg(const V *p) {
#ifdef __CUDA_ARCH__
    return __ldg(p);
#else
    return *p;
#endif
}
/* (a - k) * b + c on half2 lanes; a - k is exact for the decoders' operands */
__host__ __device__ __forceinline__ uint32_t st_h2_subfma(uint32_t a, __half2 k, __half2 b, __half2 c) {
#ifdef __CUDA_ARCH__
    return st_h2u(__hfma2(__hsub2(st_u2h(a), k), b, c));
#else
    const float2 fa = __half22float2(st_u2h(a)), fk = __half22float2(k), fb = __half22float2(b), fc = __half22float2(c);
    return st_f2h2((fa.x - fk.x) * fb.x + fc.x, (fa.y - fk.y) * fb.y + fc.y);
#endif
}
__host__ __device__ __forceinline__ uint32_t st_h2_submul(uint32_t a, __half2 k, __half2 b) {
#ifdef __CUDA_ARCH__
    return st_h2u(__hmul2(__hsub2(st_u2h(a), k), b));
#else
    const float2 fa = __half22float2(st_u2h(a)), fk = __half22float2(k), fb = __half22float2(b);
    return st_f2h2((fa.x - fk.x) * fb.x, (fa.y - fk.y) * fb.y);
#endif
}

/* Weights of one row for 64-element chunk c as lane t of a quad holds them: h[0..3] are
 * elements 8t..8t+7 of the chunk's first 32 (pairs as half2, lower element in the low half),
 * h[4..7] the same of its second 32 (zero when `hi` is false: the row ends after the first).
 * fetch() only loads; decode() computes, so loads of the next chunk overlap this one's math.
 * Generic formats: deq8 at fetch time. */
template <int T> struct st_hm2_w {
    struct raw {
        uint32_t h[8];
    };
    static __host__ __device__ __forceinline__ void fetch(const uint8_t *row, int64_t c, int t, bool hi, raw &r) {
        float v[8];
        st_qt<T>::deq8(row, c * 8 + t, v);
#pragma unroll
        for (int i = 0; i < 4; i++) r.h[i] = st_f2h2(v[2 * i], v[2 * i + 1]);
        if (hi) {
            st_qt<T>::deq8(row, c * 8 + 4 + t, v);
#pragma unroll
            for (int i = 0; i < 4; i++) r.h[4 + i] = st_f2h2(v[2 * i], v[2 * i + 1]);
        } else {
#pragma unroll
            for (int i = 4; i < 8; i++) r.h[i] = 0;
        }
    }
    static __host__ __device__ __forceinline__ void decode(const raw &r, int64_t c, uint32_t *h) {
        (void)c;
#pragma unroll
        for (int i = 0; i < 8; i++) h[i] = r.h[i];
    }
};

/* Q4_K: the block's 16-byte head (d, dmin, 12 scale bytes) and the 8 quant bytes 8t..8t+7 of
 * the chunk's 32: their low nibbles are the first 32 elements, high nibbles the second. Rows
 * 16-byte aligned (st_hm2_ok). */
template <> struct st_hm2_w<ST_TYPE_Q4_K> {
    struct raw {
        uint4 hd;
        uint2 q;
    };
    static __host__ __device__ __forceinline__ void fetch(const uint8_t *row, int64_t c, int t, bool hi, raw &r) {
        (void)hi; /* K is a multiple of 256 */
        const uint8_t *b = row + (c >> 2) * 144;
        r.hd = st_ldg((const uint4 *)b);
        r.q = st_ldg((const uint2 *)(b + 16 + (c & 3) * 32 + 8 * t));
    }
    /* scale and min of sub-block s (0..7) from the scale words y = bytes 0-3, z = 4-7, w = 8-11 */
    static __host__ __device__ __forceinline__ void scale_min(uint32_t y, uint32_t z, uint32_t w, int s, float d, float dmin,
                                                     __half2 &dl, __half2 &nml) {
        const int sh = 8 * (s & 3);
        const uint32_t ys = y >> sh, zs = z >> sh, ws = w >> sh;
        int sc, m;
        if (s < 4) {
            sc = (int)(ys & 63);
            m = (int)(zs & 63);
        } else {
            sc = (int)((ws & 0xF) | (((ys >> 6) & 3) << 4));
            m = (int)(((ws >> 4) & 0xF) | (((zs >> 6) & 3) << 4));
        }
        dl = __float2half2_rn(d * (float)sc);
        nml = __float2half2_rn(-(dmin * (float)m));
    }
    /* four bytes: low nibbles -> lo[0..1] (pairs 0,1 and 2,3), high nibbles -> hi[0..1] */
    static __host__ __device__ __forceinline__ void nibbles(uint32_t wd, __half2 dl0, __half2 nm0, __half2 dl1, __half2 nm1,
                                                   uint32_t *lo, uint32_t *hi) {
        const __half2 k1024 = __float2half2_rn(1024.0f);
        const uint32_t p01 = st_prmt(wd, 0, 0x4140), p23 = st_prmt(wd, 0, 0x4342); /* bytes 0,1 / 2,3 in 16-bit lanes */
        lo[0] = st_h2_subfma((p01 & 0x000F000Fu) | 0x64006400u, k1024, dl0, nm0);
        lo[1] = st_h2_subfma((p23 & 0x000F000Fu) | 0x64006400u, k1024, dl0, nm0);
        hi[0] = st_h2_subfma(((p01 >> 4) & 0x000F000Fu) | 0x64006400u, k1024, dl1, nm1);
        hi[1] = st_h2_subfma(((p23 >> 4) & 0x000F000Fu) | 0x64006400u, k1024, dl1, nm1);
    }
    static __host__ __device__ __forceinline__ void decode(const raw &r, int64_t c, uint32_t *h) {
        const int j = (int)(c & 3);
        const float d = st_h2f((uint16_t)(r.hd.x & 0xFFFF)), dmin = st_h2f((uint16_t)(r.hd.x >> 16));
        __half2 dl0, nm0, dl1, nm1;
        scale_min(r.hd.y, r.hd.z, r.hd.w, 2 * j, d, dmin, dl0, nm0);
        scale_min(r.hd.y, r.hd.z, r.hd.w, 2 * j + 1, d, dmin, dl1, nm1);
        nibbles(r.q.x, dl0, nm0, dl1, nm1, h + 0, h + 4);
        nibbles(r.q.y, dl0, nm0, dl1, nm1, h + 2, h + 6);
    }
};

/* Q8_0: the chunk is blocks 2c and 2c+1 (34 bytes each, at least 2-byte aligned; 32-bit loads
 * when the chunk starts 4-byte aligned); quant bytes 8t..8t+7 of each and both scales. q * d
 * is exact in F32, so the F16 product rounds like the generic path. */
template <> struct st_hm2_w<ST_TYPE_Q8_0> {
    struct raw {
        uint32_t q[4];
        uint32_t d; /* d of block 2c (low half), 2c+1 (high half) */
    };
    static __host__ __device__ __forceinline__ uint32_t ld2(const uint8_t *p) { /* 2-byte aligned pair of halves */
        const uint16_t *u = (const uint16_t *)p;
        return (uint32_t)st_ldg(u) | ((uint32_t)st_ldg(u + 1) << 16);
    }
    static __host__ __device__ __forceinline__ void fetch(const uint8_t *row, int64_t c, int t, bool hi, raw &r) {
        const uint8_t *b = row + c * 68;
#ifdef __CUDA_ARCH__
        /* Every lane of the warp 4-byte aligned (rows 16-byte aligned make this depend on c only):
         * four loads per lane instead of seven. Each load instruction costs one L1 wavefront per
         * distinct row of the warp, and this loader was bound by them. Word pairs are read as one
         * 8-byte load where the warp's addresses allow; the scales, words 0 and 8, are lane 0's
         * first word and lane 3's third, passed through the quad. fetch() runs in uniform
         * control flow (rows past M are clamped, not skipped), so the votes and shuffles are
         * warp-wide. */
        const uint32_t full = 0xffffffffu;
        if (__all_sync(full, hi && ((uintptr_t)b & 3) == 0)) {
            const uint32_t *w = (const uint32_t *)b;
            uint32_t w0, w1;
            if (__all_sync(full, ((uintptr_t)(w + 2 * t) & 7) == 0)) {
                const uint2 v = st_ldg((const uint2 *)(w + 2 * t));
                w0 = v.x;
                w1 = v.y;
            } else {
                w0 = st_ldg(w + 2 * t);
                w1 = st_ldg(w + 2 * t + 1);
            }
            const uint32_t w2 = st_ldg(w + 2 * t + 2);
            r.q[0] = st_fshr16(w0, w1); /* bytes 2+8t .. 5+8t */
            r.q[1] = st_fshr16(w1, w2);
            if (__all_sync(full, ((uintptr_t)(w + 9 + 2 * t) & 7) == 0)) { /* bytes 36+8t .. 43+8t */
                const uint2 v = st_ldg((const uint2 *)(w + 9 + 2 * t));
                r.q[2] = v.x;
                r.q[3] = v.y;
            } else {
                r.q[2] = st_ldg(w + 9 + 2 * t);
                r.q[3] = st_ldg(w + 10 + 2 * t);
            }
            const int q0 = (int)(threadIdx.x & 31) & ~3;
            const uint32_t s0 = __shfl_sync(full, w0, q0), s8 = __shfl_sync(full, w2, q0 + 3);
            r.d = (s0 & 0xFFFFu) | (s8 & 0xFFFF0000u); /* bytes 0-1 and 34-35 */
            return;
        }
#else
        if (hi && ((uintptr_t)b & 3) == 0) { /* both blocks, 4-byte aligned: 32-bit words 0..16 */
            const uint32_t *w = (const uint32_t *)b;
            const uint32_t w0 = st_ldg(w + 2 * t), w1 = st_ldg(w + 2 * t + 1), w2 = st_ldg(w + 2 * t + 2);
            r.q[0] = st_fshr16(w0, w1);
            r.q[1] = st_fshr16(w1, w2);
            r.q[2] = st_ldg(w + 9 + 2 * t);
            r.q[3] = st_ldg(w + 10 + 2 * t);
            r.d = (st_ldg(w) & 0xFFFFu) | (st_ldg(w + 8) & 0xFFFF0000u);
            return;
        }
#endif
        r.q[0] = ld2(b + 2 + 8 * t);
        r.q[1] = ld2(b + 6 + 8 * t);
        uint32_t d = st_ldg((const uint16_t *)b);
        if (hi) {
            r.q[2] = ld2(b + 36 + 8 * t);
            r.q[3] = ld2(b + 40 + 8 * t);
            d |= (uint32_t)st_ldg((const uint16_t *)(b + 34)) << 16;
        } else {
            r.q[2] = r.q[3] = 0;
        }
        r.d = d;
    }
    static __host__ __device__ __forceinline__ void bytes(uint32_t wd, __half2 d, uint32_t *h) {
        const __half2 k1152 = __float2half2_rn(1152.0f); /* 1024 + the 128 the sign flip added */
        const uint32_t u = wd ^ 0x80808080u;
        h[0] = st_h2_submul(st_prmt(u, 0x64646464u, 0x5140), k1152, d);
        h[1] = st_h2_submul(st_prmt(u, 0x64646464u, 0x5342), k1152, d);
    }
    static __host__ __device__ __forceinline__ void decode(const raw &r, int64_t c, uint32_t *h) {
        (void)c;
        const __half2 d0 = st_u2h((r.d & 0xFFFFu) * 0x10001u), d1 = st_u2h((r.d >> 16) * 0x10001u);
        bytes(r.q[0], d0, h + 0);
        bytes(r.q[1], d0, h + 2);
        bytes(r.q[2], d1, h + 4);
        bytes(r.q[3], d1, h + 6);
    }
};

/* F16 and BF16: 16-byte loads of 8 elements (rows 16-byte aligned). */
template <int T> struct st_hm2_plain16 {
    struct raw {
        uint4 lo, hi;
    };
    static __host__ __device__ __forceinline__ void fetch(const uint8_t *row, int64_t c, int t, bool hi, raw &r) {
        const uint8_t *p = row + (c * 64 + 8 * t) * 2;
        r.lo = st_ldg((const uint4 *)p);
        r.hi = hi ? st_ldg((const uint4 *)(p + 64)) : make_uint4(0, 0, 0, 0);
    }
    static __host__ __device__ __forceinline__ uint32_t cvt(uint32_t w) {
        if constexpr (T == ST_TYPE_F16) return w;
        else return st_f2h2(st_b2f((uint16_t)(w & 0xFFFF)), st_b2f((uint16_t)(w >> 16)));
    }
    static __host__ __device__ __forceinline__ void decode(const raw &r, int64_t c, uint32_t *h) {
        (void)c;
        h[0] = cvt(r.lo.x); h[1] = cvt(r.lo.y); h[2] = cvt(r.lo.z); h[3] = cvt(r.lo.w);
        h[4] = cvt(r.hi.x); h[5] = cvt(r.hi.y); h[6] = cvt(r.hi.z); h[7] = cvt(r.hi.w);
    }
};
template <> struct st_hm2_w<ST_TYPE_F16> : st_hm2_plain16<ST_TYPE_F16> {};
template <> struct st_hm2_w<ST_TYPE_BF16> : st_hm2_plain16<ST_TYPE_BF16> {};

/* Chunks ahead whose weight bytes the tile asks L2 to fetch (a hint: no registers held), so the
 * register prefetch one chunk ahead finds them there instead of waiting on device memory. */
#define ST_HM2_L2AHEAD 3

/* L2 prefetch of chunk c of a row (it must lie inside the row): the quad's lanes cover the
 * chunk's share of the row's bytes, 32 bytes each, from c * 64 * bytes / qk on. */
template <int T> __device__ __forceinline__ void st_hm2_l2(const uint8_t *row, int64_t c, int t) {
    constexpr int64_t cb = 64 * st_qt<T>::bytes / st_qt<T>::qk;
#if defined(__CUDA_ARCH__)
    if (32 * t < cb) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + c * cb + 32 * t));
#else
    (void)row; (void)c; (void)t;
#endif
}

/* Eight activations of a column: raw loads, then conversion to four half2. */
struct st_hm2_xraw {
    uint4 a, b;
};
__host__ __device__ __forceinline__ void st_hm2_xfetch(const char *row, int type, int64_t k, bool ok, st_hm2_xraw &r) {
    r.a = r.b = make_uint4(0, 0, 0, 0);
    if (!row || !ok) return;
    if (type == ST_TYPE_F32) {
        r.a = st_ldg((const uint4 *)(row + k * 4));
        r.b = st_ldg((const uint4 *)(row + k * 4 + 16));
    } else {
        r.a = st_ldg((const uint4 *)(row + k * 2));
    }
}
__host__ __device__ __forceinline__ uint4 st_hm2_xcvt(const st_hm2_xraw &r, int type) {
    if (type == ST_TYPE_F16) return r.a;
    uint4 o;
    if (type == ST_TYPE_F32) {
        float f[8];
        memcpy(f, &r.a, 16);
        memcpy(f + 4, &r.b, 16);
        o.x = st_f2h2(f[0], f[1]);
        o.y = st_f2h2(f[2], f[3]);
        o.z = st_f2h2(f[4], f[5]);
        o.w = st_f2h2(f[6], f[7]);
    } else {
        o.x = st_f2h2(st_b2f((uint16_t)(r.a.x & 0xFFFF)), st_b2f((uint16_t)(r.a.x >> 16)));
        o.y = st_f2h2(st_b2f((uint16_t)(r.a.y & 0xFFFF)), st_b2f((uint16_t)(r.a.y >> 16)));
        o.z = st_f2h2(st_b2f((uint16_t)(r.a.z & 0xFFFF)), st_b2f((uint16_t)(r.a.z >> 16)));
        o.w = st_f2h2(st_b2f((uint16_t)(r.a.w & 0xFFFF)), st_b2f((uint16_t)(r.a.w >> 16)));
    }
    return o;
}

/* out[col][m0 + i] = scale[col] * sum_k W[m0 + i][k] * x[col][k] for rows i < ST_HM2_BM (rows >=
 * M skipped), columns col < ncols (<= 8*NB) with an output row, k in [k0, k1): k0 a multiple of
 * 64, k1 of 32. With `atomic` the sums are added to F32 outputs atomically (split K). All
 * threads of the block call; cols must be visible to all of them. */
template <int T, int NB>
__device__ void st_hm2_tile(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t k0, int64_t k1, int64_t m0,
                            const st_hmm_cols &cols, int ncols, int xtype, int otype, bool atomic,
                            st_hm2_smem<NB> &sm) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using WF = st_hm2_w<T>;
    constexpr int XG = NB / 2; /* groups of 8 activations each thread stages per chunk */
    static_assert(NB % 2 == 0 && NB * 8 <= ST_HMM_BN, "tile width");
    const int tid = threadIdx.x, warp = tid / ST_WARP, lane = tid % ST_WARP, g = lane / 4, t = lane % 4;
    const uint8_t *wr[4]; /* rows g, g+8 (m16 tile 0) and g+16, g+24 (tile 1) of the warp's 32 */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int64_t m = m0 + warp * 32 + g + 8 * i;
        if (m >= M) m = M - 1; /* read a real row; its results are not stored */
        wr[i] = W + m * w_nb1;
    }
    const char *xr[XG];
    int xc[XG], xk[XG];
#pragma unroll
    for (int j = 0; j < XG; j++) {
        const int q = tid + j * ST_HM2_THREADS;
        xc[j] = q / 8;
        xk[j] = q % 8;
        xr[j] = cols.x[xc[j]];
    }
    const int nbl = (ncols + 7) / 8; /* n8 blocks holding a column */
    float acc[2][NB][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < NB; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
    const int64_t c0 = k0 / ST_HM2_BK, c1 = (k1 + ST_HM2_BK - 1) / ST_HM2_BK;
    typename WF::raw rw[4];
    st_hm2_xraw rx[XG];
    {
        const bool hi = c0 * ST_HM2_BK + ST_HM2_BK <= k1;
#pragma unroll
        for (int i = 0; i < 4; i++) WF::fetch(wr[i], c0, t, hi, rw[i]);
#pragma unroll
        for (int j = 0; j < XG; j++) st_hm2_xfetch(xr[j], xtype, c0 * ST_HM2_BK + xk[j] * 8, xk[j] < 4 || hi, rx[j]);
        for (int64_t c = c0 + 2; c < c0 + ST_HM2_L2AHEAD && (c + 1) * ST_HM2_BK <= k1; c++)
#pragma unroll
            for (int i = 0; i < 4; i++) st_hm2_l2<T>(wr[i], c, t);
    }
    for (int64_t c = c0; c < c1; c++) {
        const int b = (int)((c - c0) & 1);
        const bool hi = c * ST_HM2_BK + ST_HM2_BK <= k1;
#pragma unroll
        for (int j = 0; j < XG; j++) *(uint4 *)&sm.x[b][xc[j]][xk[j] * 8] = st_hm2_xcvt(rx[j], xtype);
        uint32_t a[4][8];
#pragma unroll
        for (int i = 0; i < 4; i++) WF::decode(rw[i], c, a[i]);
        if (c + 1 < c1) {
            const bool hn = (c + 1) * ST_HM2_BK + ST_HM2_BK <= k1;
#pragma unroll
            for (int i = 0; i < 4; i++) WF::fetch(wr[i], c + 1, t, hn, rw[i]);
#pragma unroll
            for (int j = 0; j < XG; j++)
                st_hm2_xfetch(xr[j], xtype, (c + 1) * ST_HM2_BK + xk[j] * 8, xk[j] < 4 || hn, rx[j]);
        }
        if ((c + ST_HM2_L2AHEAD + 1) * ST_HM2_BK <= k1) {
#pragma unroll
            for (int i = 0; i < 4; i++) st_hm2_l2<T>(wr[i], c + ST_HM2_L2AHEAD, t);
        }
        /* one barrier: buffer b was last read two chunks ago, before the previous barrier */
        __syncthreads();
#pragma unroll
        for (int nb = 0; nb < NB; nb++) {
            if (nb >= nbl) break;
#pragma unroll
            for (int G = 0; G < 2; G++) {
                if (G == 1 && !hi) break;
                const uint4 bv = *(const uint4 *)&sm.x[b][nb * 8 + g][G * 32 + t * 8];
#pragma unroll
                for (int u = 0; u < 2; u++) {
                    const uint32_t b0 = u ? bv.z : bv.x, b1 = u ? bv.w : bv.y;
                    const int s = 4 * G + 2 * u;
#pragma unroll
                    for (int mt = 0; mt < 2; mt++)
                        st_mma16816(acc[mt][nb], a[2 * mt][s], a[2 * mt + 1][s], a[2 * mt][s + 1], a[2 * mt + 1][s + 1],
                                    b0, b1);
                }
            }
        }
    }
    /* acc[mt][nb][e]: row 16mt + g + 8(e/2) of the warp's 32, column 8nb + 2t + e%2 */
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) {
            if (nb >= nbl) break;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int col = nb * 8 + 2 * t + (e & 1);
                const int64_t m = m0 + warp * 32 + mt * 16 + g + (e >> 1) * 8;
                if (col >= ncols || m >= M) continue;
                char *orow = cols.out[col];
                if (!orow) continue;
                const float v = acc[mt][nb][e] * cols.scale[col];
                if (atomic) atomicAdd((float *)orow + m, v);
                else st_st(orow, otype, m, v);
            }
        }
#else
    (void)W; (void)w_nb1; (void)M; (void)k0; (void)k1; (void)m0; (void)cols; (void)ncols; (void)xtype; (void)otype;
    (void)atomic; (void)sm;
#endif
}

/* dst[r][k] = x row r, element k, rounded to F16 (the tile's own rounding) for r < nrows, k < K
 * (K a multiple of 8, rows 16-byte aligned); one thread per 8 elements. */
static __global__ void k_hm2_x16(st_view x, int64_t nrows, int64_t K, __half *dst) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, per = K / 8;
    if (i >= nrows * per) return;
    const int64_t r = i / per, k = (i % per) * 8;
    st_hm2_xraw raw;
    st_hm2_xfetch(st_row(x, r), x.type, k, true, raw);
    *(uint4 *)(dst + r * K + k) = st_hm2_xcvt(raw, x.type);
}

/* The tile reads every activation row once per 128 weight rows; F32 rows cost twice the bytes
 * of F16 ones. When x is F32 and an F16 copy of its nrows rows fits in the stream workspace
 * from byte `off` on, launches the conversion there and returns the copy's view (rows
 * 0..nrows-1 in st_row order); else returns x's own view. */
static inline st_view st_hm2_x16_view(st_stream *s, const st_tensor &x, uint64_t off) {
    st_view v = st_view_of(x);
    const int64_t K = x.ne[0], nrows = st_nrows(x);
    off = (off + 255) & ~(uint64_t)255;
    if (x.type != ST_TYPE_F32 || K % 8 || nrows <= 0 || off + (uint64_t)(nrows * K * 2) > s->ws_bytes) return v;
    __half *dst = (__half *)((char *)s->ws + off);
    const int64_t n8 = nrows * (K / 8);
    k_hm2_x16<<<st_blocks(n8, 256), 256, 0, s->s>>>(v, nrows, K, dst);
    st_view h;
    h.p = (char *)dst;
    h.type = ST_TYPE_F16;
    h.ne0 = K; h.ne1 = nrows; h.ne2 = 1; h.ne3 = 1;
    h.nb1 = K * 2; h.nb2 = h.nb3 = nrows * K * 2;
    return h;
}

/* ---- Shared-memory tile for many columns ----------------------------------------------
 * A 128 (weight rows) x 128 (activation columns) block of 8 warps for dense weights with many
 * columns (prefill steps). The register-fragment tile above decodes each weight once per 32
 * columns and keeps no copy; here a chunk of 64 K of the block's 128 weight rows is decoded
 * once into shared memory (the same loaders, st_hm2_w) and read by the 4 warps of each half of
 * the columns through ldmatrix, so the decode and the weight reads are shared by 128 columns.
 * Warp w computes rows 64(w/4)..+63 and columns 32(w%4)..+31 (4 x 4 m16n8k16 tiles). The
 * activations must be F16 (st_hm2_x16_view's copy): they are copied to shared memory with
 * cp.async, so no registers hold them. Two stages, one barrier per chunk: the raw weights of
 * chunk c+1 (registers) and its activations (cp.async) are in flight while chunk c is
 * multiplied. Shared rows hold 72 halves (144 bytes): the 8 rows an ldmatrix phase reads fall
 * in different banks. Natural K order: both operands come through ldmatrix. */
#define ST_HM3_THREADS 256
#define ST_HM3_BM 128
#define ST_HM3_BN 128
#define ST_HM3_LD 72
#define ST_HM3_SMEM (2 * (ST_HM3_BM + ST_HM3_BN) * ST_HM3_LD * 2) /* bytes of dynamic shared memory */

/* out[col][m] = sum_k W[m][k] x[col][k] for the block's 128 x 128 tile, k in [k0, k1) where
 * k0 = blockIdx.z * kchunk (a multiple of 64) and k1 = min(k0 + kchunk, K) a multiple of 32;
 * with kchunk < K the sums are added atomically to a zeroed F32 output. x is F16 with rows
 * 16-byte aligned. */
template <int T>
__global__ void __launch_bounds__(ST_HM3_THREADS, 2)
k_hgemm3(const uint8_t *W, int64_t w_nb1, int64_t M, int64_t K, int64_t kchunk, st_view x, int64_t n, st_view out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using WF = st_hm2_w<T>;
    extern __shared__ __align__(16) unsigned char hm3_smem[];
    __half(*sw)[ST_HM3_BM][ST_HM3_LD] = (__half(*)[ST_HM3_BM][ST_HM3_LD])hm3_smem;
    __half(*sx)[ST_HM3_BN][ST_HM3_LD] = (__half(*)[ST_HM3_BN][ST_HM3_LD])(hm3_smem + 2 * ST_HM3_BM * ST_HM3_LD * 2);
    const int tid = threadIdx.x, warp = tid / ST_WARP, lane = tid % ST_WARP, g = lane / 4, t = lane % 4;
    const int64_t m0 = (int64_t)blockIdx.x * ST_HM3_BM, n0 = (int64_t)blockIdx.y * ST_HM3_BN;
    const int64_t k0 = (int64_t)blockIdx.z * kchunk, k1 = k0 + kchunk < K ? k0 + kchunk : K;
    const bool atomic = kchunk < K;
    /* staging: weight units (row, quad lane t) tid and tid + 256 (rows past M clamped: read,
     * never stored); activation pieces (column, 8-element group) tid + 256j */
    const uint8_t *wr[2];
    int wrow[2];
#pragma unroll
    for (int j = 0; j < 2; j++) {
        wrow[j] = (tid + j * ST_HM3_THREADS) / 4;
        int64_t m = m0 + wrow[j];
        if (m >= M) m = M - 1;
        wr[j] = W + m * w_nb1;
    }
    const int xk = tid % 8;
    auto stage_x = [&](int64_t c, int b, bool hi) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int col = tid / 8 + 32 * j;
            const bool ok = n0 + col < n && (xk < 4 || hi);
            const char *src = ok ? st_row(x, n0 + col) + (c * ST_HM2_BK + xk * 8) * 2 : x.p;
            st_cp16((uint4 *)&sx[b][col][xk * 8], src, ok);
        }
        st_cp_commit();
    };
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
    const int wm = warp / 4, wn = warp % 4;
    const int64_t c0 = k0 / ST_HM2_BK, c1 = (k1 + ST_HM2_BK - 1) / ST_HM2_BK;
    typename WF::raw rw[2];
    {
        const bool hi = c0 * ST_HM2_BK + ST_HM2_BK <= k1;
#pragma unroll
        for (int j = 0; j < 2; j++) WF::fetch(wr[j], c0, t, hi, rw[j]);
        stage_x(c0, 0, hi);
        for (int64_t c = c0 + 1; c < c0 + ST_HM2_L2AHEAD && (c + 1) * ST_HM2_BK <= k1; c++)
#pragma unroll
            for (int j = 0; j < 2; j++) st_hm2_l2<T>(wr[j], c, t);
    }
    for (int64_t c = c0; c < c1; c++) {
        const int b = (int)((c - c0) & 1);
        const bool hi = c * ST_HM2_BK + ST_HM2_BK <= k1;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            uint32_t h[8];
            WF::decode(rw[j], c, h);
            *(uint4 *)&sw[b][wrow[j]][8 * t] = make_uint4(h[0], h[1], h[2], h[3]);
            *(uint4 *)&sw[b][wrow[j]][32 + 8 * t] = make_uint4(h[4], h[5], h[6], h[7]);
        }
        st_cp_wait0();
        /* one barrier: stage b is complete, and every warp is done with stage b^1 (chunk c-1) */
        __syncthreads();
        if (c + 1 < c1) {
            const bool hn = (c + 1) * ST_HM2_BK + ST_HM2_BK <= k1;
#pragma unroll
            for (int j = 0; j < 2; j++) WF::fetch(wr[j], c + 1, t, hn, rw[j]);
            stage_x(c + 1, b ^ 1, hn);
        }
        if ((c + ST_HM2_L2AHEAD + 1) * ST_HM2_BK <= k1) {
#pragma unroll
            for (int j = 0; j < 2; j++) st_hm2_l2<T>(wr[j], c + ST_HM2_L2AHEAD, t);
        }
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            if (ks == 2 && !hi) break; /* the chunk's second 32 are zeros */
            uint32_t a[4][4], bf[4][2];
#pragma unroll
            for (int mt = 0; mt < 4; mt++) st_ldsm4(a[mt], &sw[b][wm * 64 + mt * 16 + (lane % 16)][ks * 16 + (lane / 16) * 8]);
#pragma unroll
            for (int np = 0; np < 2; np++) {
                uint32_t r[4];
                st_ldsm4(r, &sx[b][wn * 32 + np * 16 + (lane % 8) + (lane / 16) * 8][ks * 16 + ((lane / 8) % 2) * 8]);
                bf[2 * np][0] = r[0];
                bf[2 * np][1] = r[1];
                bf[2 * np + 1][0] = r[2];
                bf[2 * np + 1][1] = r[3];
            }
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
                    st_mma16816(acc[mt][nt], a[mt][0], a[mt][1], a[mt][2], a[mt][3], bf[nt][0], bf[nt][1]);
        }
    }
    /* acc[mt][nt][e]: row 64wm + 16mt + g + 8(e/2), column 32wn + 8nt + 2t + e%2 */
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t m = m0 + wm * 64 + mt * 16 + g + (e >> 1) * 8, col = n0 + wn * 32 + nt * 8 + 2 * t + (e & 1);
                if (m >= M || col >= n) continue;
                char *orow = st_row(out, col);
                if (atomic) atomicAdd((float *)orow + m, acc[mt][nt][e]);
                else st_st(orow, out.type, m, acc[mt][nt][e]);
            }
#else
    (void)W; (void)w_nb1; (void)M; (void)K; (void)kchunk; (void)x; (void)n; (void)out;
#endif
}

/* Allows k_hgemm3<T> its dynamic shared memory on the current device (once per device);
 * false when the device cannot give it. */
template <int T> static bool st_hm3_ready(const st_device *d) {
    static int done[ST_CUDA_MAX_DEVICES];
    int &f = done[d->index % ST_CUDA_MAX_DEVICES];
    if (!f) {
        const bool ok = (size_t)ST_HM3_SMEM <= d->smem_optin &&
                        cudaFuncSetAttribute(k_hgemm3<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, ST_HM3_SMEM) == cudaSuccess;
        if (!ok) (void)cudaGetLastError();
        f = ok ? 1 : -1;
    }
    return f > 0;
}

/* The fewest activation columns for which MATMUL takes the 128 x 128 tile:
 * STRATA_CUDA_BIGTILE_MIN=n (0, the default, leaves it off: measured slower than the
 * register-fragment tile on an H200, see docs/cuda.md). Read once. */
static inline int64_t st_hm3_min_cols(void) {
    static int64_t v = -1;
    if (v < 0) {
        const char *e = getenv("STRATA_CUDA_BIGTILE_MIN");
        v = e && *e ? atoll(e) : 0;
        if (v < 0) v = 0;
    }
    return v;
}

/* STRATA_CUDA_TILE_OLD=1 selects the shared-memory wmma tile above instead of the register-
 * fragment tile (a switch for comparing the two on a device). Read once. */
static inline bool st_hm2_disabled(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("STRATA_CUDA_TILE_OLD");
        v = e && e[0] == '1';
    }
    return v != 0;
}

/* Whether the register-fragment tile takes a weight (on top of st_hmm_ok): the loaders of
 * Q4_K, F16 and BF16 read 16-byte units, Q8_0 2-byte units; other formats read bytes. */
static inline bool st_hm2_ok(uint32_t wtype, const void *W, int64_t nb1, int64_t nb2) {
    if (st_hm2_disabled()) return false;
    const uint64_t a = (uint64_t)(uintptr_t)W | (uint64_t)nb1 | (uint64_t)nb2;
    switch (wtype) {
    case ST_TYPE_Q4_K: case ST_TYPE_F16: case ST_TYPE_BF16: return a % 16 == 0;
    case ST_TYPE_Q8_0: return a % 2 == 0;
    default: return true;
    }
}

#endif
