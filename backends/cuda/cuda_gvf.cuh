/* SPDX-License-Identifier: Apache-2.0 */
/* Per-format units of the 8-bit decode GEMV (k_gemv.cu): for each weight format, a unit of
 * 32 weights (8 for F16/BF16) that is loaded once into registers and dotted with any number of
 * q8 activation rows by integer dp4a (F32 rows for the plain formats). F::load reads unit u of
 * a weight row, F::loadx the matching activations, F::dot multiplies them. The activation
 * forms are those of cuda_gemv.cuh (ST_Q8_32 for the 32-element formats, ST_Q8_256 for the
 * K-quants). */
#ifndef STRATA_CUDA_GVF_CUH
#define STRATA_CUDA_GVF_CUH

#include "cuda/cuda_gemv.cuh"
#include "cuda/cuda_quant.cuh"

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

/* Q5_0: unit = one block of 32 (22 bytes: d, qh[4], qs[16]); weight j = (nibble | bit j of qh
 * << 4) - 16, nibbles as Q4_0's. */
__device__ __forceinline__ uint32_t st_q5_spread(uint32_t h4) { /* 4 bits -> bit 4 of each byte */
    return ((h4 & 1u) << 4) | ((h4 & 2u) << 11) | ((h4 & 4u) << 18) | ((h4 & 8u) << 25);
}
template <> struct st_gvf<ST_TYPE_Q5_0> {
    static constexpr int epu = 32, qa = 1;
    struct wt { uint32_t q[4]; uint32_t h; float d; };
    typedef st_gvf<ST_TYPE_Q4_0>::xt xt;
    __device__ static void load(const uint8_t *row, int u, wt &w) {
        const uint8_t *b = row + (int64_t)u * 22;
        w.d = st_ldh_g(b);
        st_ldw_u<1>(b + 2, &w.h);
        st_ldw_u<4>(b + 6, w.q);
    }
    __device__ static void loadx(const st_q8row &r, int u, xt &x) { st_gvf<ST_TYPE_Q4_0>::loadx(r, u, x); }
    __device__ static float dot(const wt &w, const xt &x, int) {
        const int *a = (const int *)&x.x0, *b = (const int *)&x.x1;
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t lo = (w.q[i] & 0x0F0F0F0Fu) | st_q5_spread((w.h >> (4 * i)) & 0xFu);
            const uint32_t hi = ((w.q[i] >> 4) & 0x0F0F0F0Fu) | st_q5_spread((w.h >> (16 + 4 * i)) & 0xFu);
            s = st_dp4((int)lo, a[i], s);
            s = st_dp4((int)hi, b[i], s);
        }
        return w.d * x.d * (float)(s - 16 * x.s);
    }
};

/* MXFP4: unit = one block of 32 (17 bytes: E8M0 scale e, qs[16]); weight j = level(nibble) *
 * 2^(e - 128) with the doubled E2M1 levels of core/quant (cuda_quant.cuh), nibbles as Q4_0's. */
/* Four level indices (0..15, one per byte) -> their four int8 levels. */
__device__ __forceinline__ uint32_t st_mxfp4_levels(uint32_t v) {
    const uint32_t sel = (v & 7u) | ((v >> 4) & 0x70u) | ((v >> 8) & 0x700u) | ((v >> 12) & 0x7000u);
    const uint32_t pos = __byte_perm(0x03020100u, 0x0C080604u, sel);  /* levels 0, 1, 2, 3 | 4, 6, 8, 12 */
    const uint32_t neg = __byte_perm(0xFDFEFF00u, 0xF4F8FAFCu, sel);  /* 0, -1, -2, -3 | -4, -6, -8, -12 */
    const uint32_t m = ((v >> 3) & 0x01010101u) * 0xFFu;
    return (pos & ~m) | (neg & m);
}
template <> struct st_gvf<ST_TYPE_MXFP4> {
    static constexpr int epu = 32, qa = 1;
    struct wt { uint32_t q[4]; float d; };
    typedef st_gvf<ST_TYPE_Q8_0>::xt xt;
    __device__ static void load(const uint8_t *row, int u, wt &w) {
        const uint8_t *b = row + (int64_t)u * 17;
        w.d = st_e8m0_half(__ldg(b));
        st_ldw_u<4>(b + 1, w.q);
    }
    __device__ static void loadx(const st_q8row &r, int u, xt &x) { st_gvf<ST_TYPE_Q8_0>::loadx(r, u, x); }
    __device__ static float dot(const wt &w, const xt &x, int) {
        const int *a = (const int *)&x.x0, *b = (const int *)&x.x1;
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = st_dp4((int)st_mxfp4_levels(w.q[i] & 0x0F0F0F0Fu), a[i], s);
            s = st_dp4((int)st_mxfp4_levels((w.q[i] >> 4) & 0x0F0F0F0Fu), b[i], s);
        }
        return x.d * w.d * (float)s;
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

#endif
