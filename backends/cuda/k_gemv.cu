/* SPDX-License-Identifier: Apache-2.0 */
/* Fast GEMV for decode: MATMUL with n <= 8 activation rows and MOE_MATMUL with few assignments.
 * Quantized weights (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K): the activations are quantized once per call
 * to 8 bits (one float scale per 32 elements, in the CPU module's block form for the weight
 * format: cuda_gemv.cuh) into the stream workspace, and every
 * weight unit (32 weights) is dotted with integer dp4a. F16/BF16 weights: 16-byte loads dotted
 * with F32 activations. Each block of 128 threads covers ST_GV_ROWS rows per group of `tpr`
 * threads (tpr = 32, 64 or 128 chosen from the row length), so short rows still fill the GPU;
 * partial sums meet through warp shuffles and shared memory (no atomics). Other formats and
 * shapes return false from the entry points and run on the generic kernels. */
#include "cuda/cuda_gemv.cuh"

#define ST_GV_THREADS 128
#define ST_GV_ROWS 2

/* ---- loads ----------------------------------------------------------------------------- */
/* N little-endian 32-bit words starting at any byte address p (reads whole aligned words). */
template <int N>
__device__ __forceinline__ void st_ldw_u(const uint8_t *p, uint32_t *out) {
    const uintptr_t a = (uintptr_t)p;
    const uint32_t *w = (const uint32_t *)(a & ~(uintptr_t)3);
    const int sh = (int)(a & 3) * 8;
    uint32_t prev = __ldg(w);
#pragma unroll
    for (int i = 0; i < N; i++) {
        const uint32_t next = (sh || i + 1 < N) ? __ldg(w + i + 1) : 0u;
        out[i] = __funnelshift_r(prev, next, sh);
        prev = next;
    }
}

__device__ __forceinline__ float st_ldh_g(const uint8_t *p) { return st_h2f(__ldg((const uint16_t *)p)); }
__device__ __forceinline__ int st_dp4(int a, int b, int c) { return __dp4a(a, b, c); }
__device__ __forceinline__ int st_byte(uint32_t w, int i) { return (int)((w >> (8 * i)) & 0xFFu); }

/* q8 activations of one row: qs[K] int8 and d[K/32] scales. */
struct st_q8row {
    const int8_t *q;
    const float *d;
};

/* ---- per-format units: load weights once, dot with any number of activation rows ------- */
template <int T> struct st_gvf;

/* Q4_0: unit = one block of 32 (18 bytes). */
template <> struct st_gvf<ST_TYPE_Q4_0> {
    static constexpr int epu = 32, qa = 1;
    struct wt { uint32_t q[4]; float d; };
    struct xt { int4 x0, x1; float d; int s; };
    __device__ static void load(const uint8_t *row, int u, wt &w) {
        const uint8_t *b = row + (int64_t)u * 18;
        w.d = st_ldh_g(b);
        st_ldw_u<4>(b + 2, w.q);
    }
    __device__ static void loadx(const st_q8row &r, int u, xt &x) {
        const int4 *p = (const int4 *)(r.q + (int64_t)u * 32);
        x.x0 = p[0];
        x.x1 = p[1];
        x.d = r.d[u];
        int s = 0;
        s = st_dp4(0x01010101, x.x0.x, s); s = st_dp4(0x01010101, x.x0.y, s);
        s = st_dp4(0x01010101, x.x0.z, s); s = st_dp4(0x01010101, x.x0.w, s);
        s = st_dp4(0x01010101, x.x1.x, s); s = st_dp4(0x01010101, x.x1.y, s);
        s = st_dp4(0x01010101, x.x1.z, s); s = st_dp4(0x01010101, x.x1.w, s);
        x.s = s;
    }
    __device__ static float dot(const wt &w, const xt &x, int) {
        const int *a = (const int *)&x.x0, *b = (const int *)&x.x1;
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = st_dp4((int)(w.q[i] & 0x0F0F0F0Fu), a[i], s);
            s = st_dp4((int)((w.q[i] >> 4) & 0x0F0F0F0Fu), b[i], s);
        }
        return w.d * x.d * (float)(s - 8 * x.s);
    }
};

/* Q8_0: unit = one block of 32 (34 bytes). */
template <> struct st_gvf<ST_TYPE_Q8_0> {
    static constexpr int epu = 32, qa = 1;
    struct wt { uint32_t q[8]; float d; };
    struct xt { int4 x0, x1; float d; };
    __device__ static void load(const uint8_t *row, int u, wt &w) {
        const uint8_t *b = row + (int64_t)u * 34;
        w.d = st_ldh_g(b);
        st_ldw_u<8>(b + 2, w.q);
    }
    __device__ static void loadx(const st_q8row &r, int u, xt &x) {
        const int4 *p = (const int4 *)(r.q + (int64_t)u * 32);
        x.x0 = p[0];
        x.x1 = p[1];
        x.d = r.d[u];
    }
    __device__ static float dot(const wt &w, const xt &x, int) {
        const int *a = (const int *)&x.x0, *b = (const int *)&x.x1;
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = st_dp4((int)w.q[i], a[i], s);
            s = st_dp4((int)w.q[4 + i], b[i], s);
        }
        return w.d * x.d * (float)s;
    }
};

/* Q4_K / Q5_K activation unit: 16 elements of sub-block 2qq and the matching 16 of 2qq+1. */
struct st_xk4 {
    int4 lo, hi;
    float d0, d1;
    int s0, s1;
};
__device__ __forceinline__ void st_loadx_k4(const st_q8row &r, int u, st_xk4 &x) {
    const int b = u >> 3, j = u & 7, qq = j >> 1, hh = j & 1;
    const int8_t *p = r.q + (int64_t)b * 256 + qq * 64 + hh * 16;
    x.lo = *(const int4 *)p;
    x.hi = *(const int4 *)(p + 32);
    x.d0 = r.d[b * 8 + 2 * qq];
    x.d1 = r.d[b * 8 + 2 * qq + 1];
    int s = 0, t = 0;
    s = st_dp4(0x01010101, x.lo.x, s); s = st_dp4(0x01010101, x.lo.y, s);
    s = st_dp4(0x01010101, x.lo.z, s); s = st_dp4(0x01010101, x.lo.w, s);
    t = st_dp4(0x01010101, x.hi.x, t); t = st_dp4(0x01010101, x.hi.y, t);
    t = st_dp4(0x01010101, x.hi.z, t); t = st_dp4(0x01010101, x.hi.w, t);
    x.s0 = s;
    x.s1 = t;
}
/* 6-bit scale and min of sub-block j from the 12 scale bytes held in words s0..s2. */
__device__ __forceinline__ void st_k4_sm(uint32_t s0, uint32_t s1, uint32_t s2, int j, int &sc, int &m) {
    if (j < 4) {
        sc = st_byte(s0, j) & 63;
        m = st_byte(s1, j) & 63;
    } else {
        const int c = st_byte(s2, j - 4);
        sc = (c & 0xF) | ((st_byte(s0, j - 4) >> 6) << 4);
        m = (c >> 4) | ((st_byte(s1, j - 4) >> 6) << 4);
    }
}
/* d * (sc0*d0*dot_lo + sc1*d1*dot_hi) - dmin * (m0*d0*s0 + m1*d1*s1) for unit u of a K-quant. */
__device__ __forceinline__ float st_k4_combine(const uint4 &h, int u, const st_xk4 &x, int dlo, int dhi) {
    const int qq = (u & 7) >> 1;
    int sc0, m0, sc1, m1;
    st_k4_sm(h.y, h.z, h.w, 2 * qq, sc0, m0);
    st_k4_sm(h.y, h.z, h.w, 2 * qq + 1, sc1, m1);
    const float d = st_h2f((uint16_t)(h.x & 0xFFFF)), dmin = st_h2f((uint16_t)(h.x >> 16));
    return d * (x.d0 * (float)(sc0 * dlo) + x.d1 * (float)(sc1 * dhi)) -
           dmin * (x.d0 * (float)(m0 * x.s0) + x.d1 * (float)(m1 * x.s1));
}

/* Q4_K: unit u = 16 qs bytes (32 weights) of block u/8; header (d, dmin, scales) is 16 bytes. */
template <> struct st_gvf<ST_TYPE_Q4_K> {
    static constexpr int epu = 32, qa = 1;
    struct wt { uint4 h, q; };
    typedef st_xk4 xt;
    __device__ static void load(const uint8_t *row, int u, wt &w) {
        const uint8_t *b = row + (int64_t)(u >> 3) * 144;
        w.h = __ldg((const uint4 *)b);
        w.q = __ldg((const uint4 *)(b + 16 + 16 * (u & 7)));
    }
    __device__ static void loadx(const st_q8row &r, int u, xt &x) { st_loadx_k4(r, u, x); }
    __device__ static float dot(const wt &w, const xt &x, int u) {
        const uint32_t *q = (const uint32_t *)&w.q;
        const int *a = (const int *)&x.lo, *b = (const int *)&x.hi;
        int lo = 0, hi = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            lo = st_dp4((int)(q[i] & 0x0F0F0F0Fu), a[i], lo);
            hi = st_dp4((int)((q[i] >> 4) & 0x0F0F0F0Fu), b[i], hi);
        }
        return st_k4_combine(w.h, u, x, lo, hi);
    }
};

/* Q5_K: as Q4_K plus the fifth bit from qh (32 bytes @16); qs @48. */
template <> struct st_gvf<ST_TYPE_Q5_K> {
    static constexpr int epu = 32, qa = 1;
    struct wt { uint4 h, q, qh; };
    typedef st_xk4 xt;
    __device__ static void load(const uint8_t *row, int u, wt &w) {
        const uint8_t *b = row + (int64_t)(u >> 3) * 176;
        const int j = u & 7;
        w.h = __ldg((const uint4 *)b);
        w.qh = __ldg((const uint4 *)(b + 16 + 16 * (j & 1)));
        w.q = __ldg((const uint4 *)(b + 48 + 16 * j));
    }
    __device__ static void loadx(const st_q8row &r, int u, xt &x) { st_loadx_k4(r, u, x); }
    __device__ static float dot(const wt &w, const xt &x, int u) {
        const int sub = ((u & 7) >> 1) * 2;
        const uint32_t *q = (const uint32_t *)&w.q, *qh = (const uint32_t *)&w.qh;
        const int *a = (const int *)&x.lo, *b = (const int *)&x.hi;
        int lo = 0, hi = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t vl = (q[i] & 0x0F0F0F0Fu) | (((qh[i] >> sub) & 0x01010101u) << 4);
            const uint32_t vh = ((q[i] >> 4) & 0x0F0F0F0Fu) | (((qh[i] >> (sub + 1)) & 0x01010101u) << 4);
            lo = st_dp4((int)vl, a[i], lo);
            hi = st_dp4((int)vh, b[i], hi);
        }
        return st_k4_combine(w.h, u, x, lo, hi);
    }
};

/* Q6_K: ql[128] @0, qh[64] @128, scales[16] @192, d @208. Unit u of block u/8: half h = (u&7)/4,
 * l0 = 8*(u&3); its 32 weights are l0..l0+7 of each of the four 32-element quarters of half h. */
template <> struct st_gvf<ST_TYPE_Q6_K> {
    static constexpr int epu = 32, qa = 1;
    struct wt { uint32_t ql0[2], ql1[2], qh[2], sc[2]; float d; };
    struct xt { int2 x[4]; float d[4]; int s[4]; };
    __device__ static void load(const uint8_t *row, int u, wt &w) {
        const uint8_t *b = row + (int64_t)(u >> 3) * 210;
        const int h = (u & 7) >> 2, l0 = (u & 3) * 8;
        st_ldw_u<2>(b + h * 64 + l0, w.ql0);
        st_ldw_u<2>(b + h * 64 + 32 + l0, w.ql1);
        st_ldw_u<2>(b + 128 + h * 32 + l0, w.qh);
        st_ldw_u<2>(b + 192 + h * 8, w.sc);
        w.d = st_ldh_g(b + 208);
    }
    __device__ static void loadx(const st_q8row &r, int u, xt &x) {
        const int b = u >> 3, h = (u & 7) >> 2, l0 = (u & 3) * 8;
#pragma unroll
        for (int qu = 0; qu < 4; qu++) {
            x.x[qu] = *(const int2 *)(r.q + (int64_t)b * 256 + h * 128 + qu * 32 + l0);
            x.d[qu] = r.d[b * 8 + h * 4 + qu];
            x.s[qu] = st_dp4(0x01010101, x.x[qu].y, st_dp4(0x01010101, x.x[qu].x, 0));
        }
    }
    __device__ static float dot(const wt &w, const xt &x, int u) {
        const int l16 = (u & 3) >> 1; /* l0 / 16 */
        float acc = 0.0f;
#pragma unroll
        for (int qu = 0; qu < 4; qu++) {
            const uint32_t *ql = (qu & 1) ? w.ql1 : w.ql0;
            const int sh = qu >= 2 ? 4 : 0;
            const uint32_t v0 = ((ql[0] >> sh) & 0x0F0F0F0Fu) | (((w.qh[0] >> (2 * qu)) & 0x03030303u) << 4);
            const uint32_t v1 = ((ql[1] >> sh) & 0x0F0F0F0Fu) | (((w.qh[1] >> (2 * qu)) & 0x03030303u) << 4);
            const int dotv = st_dp4((int)v1, x.x[qu].y, st_dp4((int)v0, x.x[qu].x, 0)) - 32 * x.s[qu];
            const int si = 2 * qu + l16; /* scale byte index within this half's 8 */
            const int sc = (int)(int8_t)(uint8_t)st_byte(w.sc[si >> 2], si & 3);
            acc += x.d[qu] * (float)(sc * dotv);
        }
        return w.d * acc;
    }
};

/* F16 / BF16: unit = 8 weights (16 bytes) against F32 activations. */
template <int T> struct st_gvf_plain {
    static constexpr int epu = 8, qa = 0;
    struct wt { uint4 q; };
    struct xt { float4 a, b; };
    __device__ static void load(const uint8_t *row, int u, wt &w) { w.q = __ldg((const uint4 *)(row + (int64_t)u * 16)); }
    __device__ static void loadx(const float *xr, int u, xt &x) {
        x.a = *(const float4 *)(xr + (int64_t)u * 8);
        x.b = *(const float4 *)(xr + (int64_t)u * 8 + 4);
    }
    __device__ static float2 two(uint32_t v) {
        if (T == ST_TYPE_F16) {
            __half2_raw r;
            r.x = (unsigned short)(v & 0xFFFF);
            r.y = (unsigned short)(v >> 16);
            return __half22float2(__half2(r));
        }
        return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xFFFF0000u));
    }
    __device__ static float dot(const wt &w, const xt &x, int) {
        const float2 p0 = two(w.q.x), p1 = two(w.q.y), p2 = two(w.q.z), p3 = two(w.q.w);
        float s = p0.x * x.a.x;
        s = fmaf(p0.y, x.a.y, s); s = fmaf(p1.x, x.a.z, s); s = fmaf(p1.y, x.a.w, s);
        s = fmaf(p2.x, x.b.x, s); s = fmaf(p2.y, x.b.y, s); s = fmaf(p3.x, x.b.z, s);
        return fmaf(p3.y, x.b.w, s);
    }
};
template <> struct st_gvf<ST_TYPE_F16> : st_gvf_plain<ST_TYPE_F16> {};
template <> struct st_gvf<ST_TYPE_BF16> : st_gvf_plain<ST_TYPE_BF16> {};

/* ---- activation quantization ------------------------------------------------------------ */
/* Row r of x [n_x][K] -> q[r*K + k] int8 and d[r*(K/32) + b] in form `kind` (cuda_gemv.cuh).
 * One warp per block of 32, lane = element; a block of 8 warps is one 256-element super-block
 * (ST_Q8_256 needs K % 256 == 0, which every K-quant row has). */
__global__ void __launch_bounds__(8 * ST_WARP) k_q8_act(st_view x, int64_t K, int8_t *q, float *d, int kind) {
    __shared__ float wmax[8];
    st_pdl_begin();
    const int64_t r = blockIdx.y;
    const int warp = threadIdx.x / ST_WARP, lane = threadIdx.x % ST_WARP;
    const int64_t b = (int64_t)blockIdx.x * 8 + warp;
    if (kind == ST_Q8_32 && b * 32 >= K) return;
    const float v = st_ld(st_row(x, r), x.type, b * 32 + lane);
    float amax = st_warp_max(fabsf(v));
    if (kind == ST_Q8_256) {
        if (lane == 0) wmax[warp] = amax;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < 8; i++) amax = fmaxf(amax, wmax[i]);
    }
    float dd, id;
    st_q8_scales(amax, kind, &dd, &id);
    q[r * K + b * 32 + lane] = (int8_t)st_q8_one(v, id);
    if (lane == 0) d[r * (K / 32) + b] = dd;
}

/* ---- the kernel --------------------------------------------------------------------------- */
/* What one launch computes. DENSE: out[c][m] = W[m] . x[c] for NC activation rows. MOE: row
 * a = blockIdx.y of MOE_MATMUL. GATE_UP: row a of MOE_GATE_UP, two weights (W, W2) dotted
 * with the same activations, out = silu(gate) * up. DOWN: token t = blockIdx.y of MOE_DOWN,
 * out[t][m] = sum_j wt[j] W_j[m] . x[t k + j]; the (choice, unit) pairs of a row are spread
 * over the row's threads, so every lane works even when a row has few units. */
enum { ST_GV_DENSE = 0, ST_GV_MOE = 1, ST_GV_GATE_UP = 2, ST_GV_DOWN = 3 };
#define ST_GV_MAX_K 16 /* choices per token the DOWN kernel takes */

struct st_gv_params {
    const uint8_t *W, *W2;
    int64_t w_nb1, w_nb2, M;
    int units, tpr, n;      /* units per row, threads per row group, activation rows (dense) */
    const int8_t *xq;       /* q8 activations [n_x][K] (quantized formats) */
    const float *xd;        /* their scales [n_x][K/32] */
    int64_t K;
    st_view x;              /* F32 activations (plain formats) */
    st_view out;
    /* MOE / GATE_UP: assignment a = blockIdx.y */
    const int32_t *slot_table, *expert, *x_row;
    const float *scale;
    int64_t n_x;            /* rows of x */
    /* DOWN: k choices of token t = blockIdx.y, expert ids and weights [n][k] */
    int k, accumulate;
    const int32_t *ids;
    const float *wts;
};

template <int T, int NC, int MODE>
__global__ void __launch_bounds__(ST_GV_THREADS) k_gv(st_gv_params p) {
    typedef st_gvf<T> F;
    constexpr int NW = MODE == ST_GV_GATE_UP ? 2 : 1; /* weights per row */
    constexpr int NR = ST_GV_ROWS * NC * NW;           /* sums per thread */
    __shared__ float red[ST_GV_THREADS / ST_WARP][NR];
    __shared__ const uint8_t *dw[ST_GV_MAX_K];         /* DOWN: slot base of each choice (NULL: skipped) */
    __shared__ float dwt[ST_GV_MAX_K];
    st_pdl_begin();
    const int tpr = p.tpr, t = threadIdx.x % tpr, g = threadIdx.x / tpr, G = ST_GV_THREADS / tpr;
    const int64_t m0 = ((int64_t)blockIdx.x * G + g) * ST_GV_ROWS;
    const uint8_t *W = p.W, *W2 = p.W2;
    int xr[NC];
    int a = 0;
    if (MODE == ST_GV_MOE || MODE == ST_GV_GATE_UP) {
        a = blockIdx.y;
        const int32_t e = p.expert[a];
        const int32_t slot = e >= 0 ? p.slot_table[e] : -1;
        const int32_t row = p.x_row[a];
        if (slot < 0 || row < 0 || row >= p.n_x) return; /* whole block: uniform */
        W += (int64_t)slot * p.w_nb2;
        if (MODE == ST_GV_GATE_UP) W2 += (int64_t)slot * p.w_nb2;
        xr[0] = row;
    } else if (MODE == ST_GV_DOWN) {
        a = blockIdx.y;
        if (threadIdx.x < p.k) {
            const int32_t e = p.ids[a * p.k + threadIdx.x];
            const int32_t slot = e >= 0 ? p.slot_table[e] : -1;
            dw[threadIdx.x] = slot >= 0 ? W + (int64_t)slot * p.w_nb2 : NULL;
            dwt[threadIdx.x] = p.wts[a * p.k + threadIdx.x];
        }
        __syncthreads();
        xr[0] = 0;
    } else {
#pragma unroll
        for (int c = 0; c < NC; c++) xr[c] = c;
    }
    const int nc = MODE != ST_GV_DENSE ? 1 : (NC == 1 ? 1 : p.n);
    float acc[NW][ST_GV_ROWS][NC];
#pragma unroll
    for (int w = 0; w < NW; w++)
#pragma unroll
        for (int r = 0; r < ST_GV_ROWS; r++)
#pragma unroll
            for (int c = 0; c < NC; c++) acc[w][r][c] = 0.0f;
    if (MODE == ST_GV_DOWN) {
        if (m0 < p.M) {
            const int total = p.k * p.units;
#pragma unroll 2
            for (int idx = t; idx < total; idx += tpr) {
                const int j = idx / p.units, u = idx - j * p.units;
                const uint8_t *Wj = dw[j];
                if (!Wj) continue;
                typename F::wt w[ST_GV_ROWS];
#pragma unroll
                for (int r = 0; r < ST_GV_ROWS; r++)
                    F::load(Wj + (m0 + r < p.M ? m0 + r : p.M - 1) * p.w_nb1, u, w[r]);
                typename F::xt xv;
                const int64_t qr = (int64_t)a * p.k + j;
                if constexpr (F::qa) {
                    st_q8row q8{p.xq + qr * p.K, p.xd + qr * (p.K / 32)};
                    F::loadx(q8, u, xv);
                } else {
                    F::loadx((const float *)st_row(p.x, qr), u, xv);
                }
#pragma unroll
                for (int r = 0; r < ST_GV_ROWS; r++) acc[0][r][0] += dwt[j] * F::dot(w[r], xv, u);
            }
        }
    } else if (m0 < p.M) {
        const uint8_t *wr[NW][ST_GV_ROWS];
#pragma unroll
        for (int r = 0; r < ST_GV_ROWS; r++) {
            const int64_t mr = m0 + r < p.M ? m0 + r : p.M - 1;
            wr[0][r] = W + mr * p.w_nb1;
            if (NW == 2) wr[NW - 1][r] = W2 + mr * p.w_nb1;
        }
#pragma unroll 2
        for (int u = t; u < p.units; u += tpr) {
            typename F::wt w[NW][ST_GV_ROWS];
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int r = 0; r < ST_GV_ROWS; r++) F::load(wr[q][r], u, w[q][r]);
#pragma unroll
            for (int c = 0; c < NC; c++) {
                if (c < nc) {
                    typename F::xt xv;
                    if constexpr (F::qa) {
                        const int64_t qr = (int64_t)xr[c];
                        st_q8row q8{p.xq + qr * p.K, p.xd + qr * (p.K / 32)};
                        F::loadx(q8, u, xv);
                    } else {
                        F::loadx((const float *)st_row(p.x, xr[c]), u, xv);
                    }
#pragma unroll
                    for (int q = 0; q < NW; q++)
#pragma unroll
                        for (int r = 0; r < ST_GV_ROWS; r++) acc[q][r][c] += F::dot(w[q][r], xv, u);
                }
            }
        }
    }
    const int warp = threadIdx.x / ST_WARP, lane = threadIdx.x % ST_WARP;
#pragma unroll
    for (int q = 0; q < NW; q++)
#pragma unroll
        for (int r = 0; r < ST_GV_ROWS; r++)
#pragma unroll
            for (int c = 0; c < NC; c++) acc[q][r][c] = st_warp_sum(acc[q][r][c]);
    if (tpr > ST_WARP) {
        if (lane == 0) {
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int r = 0; r < ST_GV_ROWS; r++)
#pragma unroll
                    for (int c = 0; c < NC; c++) red[warp][(q * ST_GV_ROWS + r) * NC + c] = acc[q][r][c];
        }
        __syncthreads();
    }
    /* the first warp of each group writes; lane i writes (row, column) entry i = r*NC + c */
    if (t >= ST_WARP) return;
    const int i = lane;
    if (i >= ST_GV_ROWS * NC) return;
    const int r = i / NC, c = i % NC;
    if (c >= nc || m0 + r >= p.M) return;
    float v[NW];
#pragma unroll
    for (int q = 0; q < NW; q++) {
        const int e = (q * ST_GV_ROWS + r) * NC + c;
        v[q] = 0.0f;
        if (tpr > ST_WARP) {
            const int w0 = g * (tpr / ST_WARP);
            for (int k = 0; k < tpr / ST_WARP; k++) v[q] += red[w0 + k][e];
        } else {
            /* lane 0 holds every sum after the shuffles; fetch entry i from it */
#pragma unroll
            for (int qq = 0; qq < NW; qq++)
#pragma unroll
                for (int rr = 0; rr < ST_GV_ROWS; rr++)
#pragma unroll
                    for (int cc = 0; cc < NC; cc++)
                        if ((qq * ST_GV_ROWS + rr) * NC + cc == e) v[q] = acc[qq][rr][cc];
        }
    }
    if (MODE == ST_GV_MOE) {
        st_st(st_row(p.out, a), p.out.type, m0 + r, p.scale ? v[0] * p.scale[a] : v[0]);
    } else if (MODE == ST_GV_GATE_UP) {
        const float gt = v[0];
        st_st(st_row(p.out, a), p.out.type, m0 + r, gt / (1.0f + expf(-gt)) * v[NW - 1]);
    } else if (MODE == ST_GV_DOWN) {
        char *o = st_row(p.out, a);
        st_st(o, p.out.type, m0 + r, (p.accumulate ? st_ld(o, p.out.type, m0 + r) : 0.0f) + v[0]);
    } else {
        st_st(st_row(p.out, c), p.out.type, m0 + r, v[0]);
    }
}

/* ---- host side -------------------------------------------------------------------------- */
static bool st_gv_format(uint32_t t) {
    switch (t) {
    case ST_TYPE_Q4_0: case ST_TYPE_Q8_0: case ST_TYPE_Q4_K: case ST_TYPE_Q5_K: case ST_TYPE_Q6_K:
    case ST_TYPE_F16: case ST_TYPE_BF16: return true;
    default: return false;
    }
}
static bool st_gv_quantized(uint32_t t) { return t != ST_TYPE_F16 && t != ST_TYPE_BF16; }
static int st_gv_epu(uint32_t t) { return st_gv_quantized(t) ? 32 : 8; }
/* Weight loads need 16-byte alignment (uint4 formats) or 2-byte alignment (the others). */
static bool st_gv_aligned(uint32_t t, uintptr_t addr, int64_t nb1, int64_t nb2) {
    const int64_t al = (t == ST_TYPE_Q4_K || t == ST_TYPE_Q5_K || !st_gv_quantized(t)) ? 16 : 2;
    return addr % al == 0 && nb1 % al == 0 && nb2 % al == 0;
}
static int st_gv_tpr(int units) { return units <= 32 ? 32 : units <= 64 ? 64 : 128; }

/* Quantize the n_x rows of x into the stream workspace, or reuse what the previous GEMV on
 * this stream left there for the same rows (see st_stream.q8_valid); false when they do not
 * fit. */
bool st_q8_layout(st_stream *s, int64_t n_x, int64_t K, int8_t **q, float **d) {
    const uint64_t qbytes = ((uint64_t)(n_x * K) + 255) & ~(uint64_t)255;
    const uint64_t need = qbytes + (uint64_t)(n_x * (K / 32)) * sizeof(float);
    if (need > s->ws_bytes || n_x > 65535) return false;
    *q = (int8_t *)s->ws;
    *d = (float *)((char *)s->ws + qbytes);
    return true;
}

void st_q8_mark(st_stream *s, const st_tensor &x, int64_t n_x, int64_t K, int kind) {
    s->q8_src = x.data;
    s->q8_kind = kind;
    s->q8_type = x.type;
    s->q8_nb1 = x.nb[1];
    s->q8_rows = n_x;
    s->q8_K = K;
    s->q8_valid = n_x == 1 || x.ne[2] * x.ne[3] == 1;
}

/* Quantize the n_x rows of x into the stream workspace, or reuse what the previous op on this
 * stream left there for the same rows (see st_stream.q8_valid); false when they do not fit. */
static bool st_gv_quantize(st_stream *s, const st_tensor &x, int64_t n_x, int64_t K, int kind, st_gv_params &p) {
    int8_t *q;
    float *d;
    if ((kind == ST_Q8_256 && K % 256) || !st_q8_layout(s, n_x, K, &q, &d)) return false;
    p.xq = q;
    p.xd = d;
    p.n_x = n_x;
    s->q8_pref = kind;
    if (s->q8_valid && s->q8_kind == kind && s->q8_src == x.data && s->q8_type == x.type && s->q8_nb1 == x.nb[1] &&
        s->q8_rows == n_x && s->q8_K == K && (n_x == 1 || (x.ne[2] * x.ne[3] == 1)))
        return true;
    dim3 grid(st_blocks(K / 32, 8), (unsigned)n_x);
    st_launch(s, k_q8_act, grid, dim3(8 * ST_WARP), 0, st_view_of(x), K, q, d, kind);
    st_q8_mark(s, x, n_x, K, kind);
    return true;
}

/* Keeps the quantized rows valid across this GEMV's launch check unless its output overlaps
 * them. */
static void st_gv_keep(st_stream *s, const st_tensor &x, const st_tensor &out) {
    const char *x0 = (const char *)x.data, *x1 = x0 + s->q8_rows * x.nb[1];
    const char *o0 = (const char *)out.data, *o1 = o0 + st_nrows(out) * out.nb[1];
    s->q8_keep = s->q8_valid && (o1 <= x0 || o0 >= x1);
}

template <int T> static void st_gv_launch(const st_gv_params &p, dim3 grid, const st_stream *s, int mode) {
    const dim3 block(ST_GV_THREADS);
    switch (mode) {
    case ST_GV_MOE: st_launch(s, k_gv<T, 1, ST_GV_MOE>, grid, block, 0, p); break;
    case ST_GV_GATE_UP: st_launch(s, k_gv<T, 1, ST_GV_GATE_UP>, grid, block, 0, p); break;
    case ST_GV_DOWN: st_launch(s, k_gv<T, 1, ST_GV_DOWN>, grid, block, 0, p); break;
    default:
        if (p.n == 1) st_launch(s, k_gv<T, 1, ST_GV_DENSE>, grid, block, 0, p);
        else st_launch(s, k_gv<T, 8, ST_GV_DENSE>, grid, block, 0, p);
    }
}

static void st_gv_dispatch(uint32_t t, const st_gv_params &p, dim3 grid, const st_stream *s, int mode) {
    switch (t) {
    case ST_TYPE_Q4_0: st_gv_launch<ST_TYPE_Q4_0>(p, grid, s, mode); break;
    case ST_TYPE_Q8_0: st_gv_launch<ST_TYPE_Q8_0>(p, grid, s, mode); break;
    case ST_TYPE_Q4_K: st_gv_launch<ST_TYPE_Q4_K>(p, grid, s, mode); break;
    case ST_TYPE_Q5_K: st_gv_launch<ST_TYPE_Q5_K>(p, grid, s, mode); break;
    case ST_TYPE_Q6_K: st_gv_launch<ST_TYPE_Q6_K>(p, grid, s, mode); break;
    case ST_TYPE_F16: st_gv_launch<ST_TYPE_F16>(p, grid, s, mode); break;
    case ST_TYPE_BF16: st_gv_launch<ST_TYPE_BF16>(p, grid, s, mode); break;
    default: break;
    }
}

static bool st_gv_env_off(void) {
    static int off = -1;
    if (off < 0) {
        const char *e = getenv("STRATA_CUDA_NO_FAST_GEMV");
        off = e && *e && strcmp(e, "0") ? 1 : 0;
    }
    return off != 0;
}

/* The part every entry shares: format, shape and alignment checks, the weight and activation
 * fields of p (slot stride nb2, 0 for a plain matrix) and the q8 activations of n_x rows of x.
 * False when the fast path does not take the call (nothing launched then). */
static bool st_gv_prepare(st_stream *s, const st_tensor &w, int64_t nb2, const st_tensor &x, int64_t n_x,
                          const st_tensor &out, st_gv_params &p) {
    const uint32_t t = w.type;
    const int64_t K = w.ne[0];
    if (st_gv_env_off() || !st_gv_format(t) || K % st_gv_epu(t) || K / st_gv_epu(t) > 0x7fffffff) return false;
    if (!st_gv_aligned(t, (uintptr_t)w.data, w.nb[1], nb2)) return false;
    memset(&p, 0, sizeof p);
    p.W = (const uint8_t *)w.data;
    p.w_nb1 = w.nb[1];
    p.w_nb2 = nb2;
    p.M = w.ne[1];
    p.K = K;
    p.units = (int)(K / st_gv_epu(t));
    p.tpr = st_gv_tpr(p.units);
    p.n = 1;
    p.x = st_view_of(x);
    p.out = st_view_of(out);
    p.n_x = n_x;
    if (st_gv_quantized(t)) return st_gv_quantize(s, x, n_x, K, st_q8_kind_of(t), p);
    return x.type == ST_TYPE_F32 && x.nb[1] % 16 == 0 && (uintptr_t)x.data % 16 == 0 &&
           (x.ne[2] * x.ne[3] == 1 || (x.nb[2] % 16 == 0 && x.nb[3] % 16 == 0));
}

/* Launches mode over `cols` block columns of M rows; keeps the q8 rows of x unless out overlaps. */
static st_status st_gv_run(st_stream *s, uint32_t t, st_gv_params &p, unsigned cols, int mode, const st_tensor &x,
                           const st_tensor &out, const char *op) {
    const int64_t rows_per_block = (int64_t)(ST_GV_THREADS / p.tpr) * ST_GV_ROWS;
    dim3 grid(st_blocks(p.M, (int)rows_per_block), cols);
    st_gv_dispatch(t, p, grid, s, mode);
    if (st_gv_quantized(t)) st_gv_keep(s, x, out);
    return st_cuda_launched(s, op);
}

bool st_gemv_fast(st_stream *s, const st_matmul_args *a, st_status *st) {
    const int64_t n = st_nrows(a->x);
    st_gv_params p;
    if (n < 1 || n > 8 || !st_gv_prepare(s, a->w, 0, a->x, n, a->out, p)) return false;
    p.n = (int)n;
    *st = st_gv_run(s, a->w.type, p, 1, ST_GV_DENSE, a->x, a->out, "matmul");
    return true;
}

bool st_moe_gemv_fast(st_stream *s, const st_moe_matmul_args *a, st_status *st) {
    st_gv_params p;
    if (a->n_assign > ST_GV_MOE_MAX_ASSIGN || !st_gv_prepare(s, a->w, a->w.nb[2], a->x, st_nrows(a->x), a->out, p))
        return false;
    p.slot_table = a->slot_table;
    p.expert = a->expert;
    p.x_row = a->x_row;
    p.scale = a->scale;
    *st = st_gv_run(s, a->w.type, p, (unsigned)a->n_assign, ST_GV_MOE, a->x, a->out, "moe_matmul");
    return true;
}

bool st_moe_gateup_gemv_fast(st_stream *s, const st_moe_gate_up_args *a, st_status *st) {
    const st_tensor &g = a->w_gate, &u = a->w_up;
    if (a->n_assign > ST_GV_MOE_MAX_ASSIGN || u.nb[1] != g.nb[1] || u.nb[2] != g.nb[2] ||
        !st_gv_aligned(u.type, (uintptr_t)u.data, u.nb[1], u.nb[2]))
        return false;
    st_gv_params p;
    if (!st_gv_prepare(s, g, g.nb[2], a->x, st_nrows(a->x), a->out, p)) return false;
    p.W2 = (const uint8_t *)u.data;
    p.slot_table = a->slot_table;
    p.expert = a->expert;
    p.x_row = a->x_row;
    *st = st_gv_run(s, g.type, p, (unsigned)a->n_assign, ST_GV_GATE_UP, a->x, a->out, "moe_gate_up");
    return true;
}

bool st_moe_down_gemv_fast(st_stream *s, const st_moe_down_args *a, st_status *st) {
    const int64_t n = st_nrows(a->out), A = n * a->k;
    st_gv_params p;
    if (a->k > ST_GV_MAX_K || A > ST_GV_MOE_MAX_ASSIGN || !st_gv_prepare(s, a->w, a->w.nb[2], a->x, A, a->out, p))
        return false;
    p.tpr = st_gv_tpr(a->k * p.units); /* the row's threads share its (choice, unit) pairs */
    p.k = a->k;
    p.accumulate = a->accumulate;
    p.ids = a->ids;
    p.wts = a->weights;
    p.slot_table = a->slot_table;
    *st = st_gv_run(s, a->w.type, p, (unsigned)n, ST_GV_DOWN, a->x, a->out, "moe_down");
    return true;
}
