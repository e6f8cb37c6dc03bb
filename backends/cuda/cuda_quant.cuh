/* SPDX-License-Identifier: Apache-2.0 */
/* Device-side dequantization of every weight format, eight consecutive elements at a time
 * (deq8 of group g = elements 8g..8g+7 of a row) plus single elements for plain types.
 * Block layouts follow core/quant/quant.h (static_asserts below keep them in step). */
#ifndef STRATA_CUDA_QUANT_CUH
#define STRATA_CUDA_QUANT_CUH

#include "cuda/cuda_common.cuh"

static_assert(sizeof(st_block_q4_0) == 18, "q4_0");
static_assert(sizeof(st_block_q4_1) == 20, "q4_1");
static_assert(sizeof(st_block_q5_0) == 22, "q5_0");
static_assert(sizeof(st_block_q5_1) == 24, "q5_1");
static_assert(sizeof(st_block_q8_0) == 34, "q8_0");
static_assert(sizeof(st_block_iq4_nl) == 18, "iq4_nl");
static_assert(sizeof(st_block_q2_K) == 84, "q2_K");
static_assert(sizeof(st_block_q3_K) == 110, "q3_K");
static_assert(sizeof(st_block_q4_K) == 144, "q4_K");
static_assert(sizeof(st_block_q5_K) == 176, "q5_K");
static_assert(sizeof(st_block_q6_K) == 210, "q6_K");
static_assert(sizeof(st_block_iq4_xs) == 136, "iq4_xs");
static_assert(sizeof(st_block_mxfp4) == 17, "mxfp4");

/* The 16 levels of IQ4_NL / IQ4_XS (a fact of the format). The decoders are host+device so a
 * host test can check them against core/quant without a GPU. */
#define ST_IQ4NL_LEVELS {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
__constant__ static const int8_t st_kiq4nl_d[16] = ST_IQ4NL_LEVELS;
static const int8_t st_kiq4nl_h[16] = ST_IQ4NL_LEVELS;
#ifdef __CUDA_ARCH__
#define st_kiq4nl st_kiq4nl_d
#else
#define st_kiq4nl st_kiq4nl_h
#endif

/* The 16 MXFP4 levels (E2M1 values doubled, as core/quant keeps them) and the E8M0 scale as
 * the float 2^(e - 128) that multiplies them. */
#define ST_MXFP4_LEVELS {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}
__constant__ static const int8_t st_kmxfp4_d[16] = ST_MXFP4_LEVELS;
static const int8_t st_kmxfp4_h[16] = ST_MXFP4_LEVELS;
#ifdef __CUDA_ARCH__
#define st_kmxfp4 st_kmxfp4_d
#else
#define st_kmxfp4 st_kmxfp4_h
#endif
__host__ __device__ __forceinline__ float st_e8m0_half(uint32_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

__host__ __device__ __forceinline__ float st_ldh(const uint8_t *p) { return st_h2f((uint16_t)(p[0] | (p[1] << 8))); }

/* Q4_K / Q5_K: 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes. */
__host__ __device__ __forceinline__ void st_k4_scale_min(const uint8_t *q, int j, int &sc, int &m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

template <int T> struct st_qt;

#define ST_QT_HEAD(T_, QK_, BYTES_)                                   \
    template <> struct st_qt<T_> {                                    \
        static constexpr int qk = QK_, bytes = BYTES_, plain = 0;     \
        __host__ __device__ static __forceinline__ void deq8(const uint8_t *row, int64_t g, float *v) { \
            const uint8_t *b = row + (g / (qk / 8)) * bytes;          \
            const int e0 = (int)(g % (qk / 8)) * 8;

#define ST_QT_TAIL \
        }          \
    };

ST_QT_HEAD(ST_TYPE_Q4_0, 32, 18)
    const float d = st_ldh(b);
    const uint8_t *qs = b + 2 + (e0 & 15);
    const int sh = e0 >= 16 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++) v[t] = (float)(((qs[t] >> sh) & 0xF) - 8) * d;
ST_QT_TAIL

ST_QT_HEAD(ST_TYPE_Q4_1, 32, 20)
    const float d = st_ldh(b), m = st_ldh(b + 2);
    const uint8_t *qs = b + 4 + (e0 & 15);
    const int sh = e0 >= 16 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++) v[t] = (float)((qs[t] >> sh) & 0xF) * d + m;
ST_QT_TAIL

ST_QT_HEAD(ST_TYPE_Q5_0, 32, 22)
    const float d = st_ldh(b);
    const uint32_t qh = b[2] | (b[3] << 8) | (b[4] << 16) | ((uint32_t)b[5] << 24);
    const uint8_t *qs = b + 6 + (e0 & 15);
    const int sh = e0 >= 16 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++)
        v[t] = (float)((int)(((qs[t] >> sh) & 0xF) | (((qh >> (e0 + t)) & 1) << 4)) - 16) * d;
ST_QT_TAIL

ST_QT_HEAD(ST_TYPE_Q5_1, 32, 24)
    const float d = st_ldh(b), m = st_ldh(b + 2);
    const uint32_t qh = b[4] | (b[5] << 8) | (b[6] << 16) | ((uint32_t)b[7] << 24);
    const uint8_t *qs = b + 8 + (e0 & 15);
    const int sh = e0 >= 16 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++)
        v[t] = (float)(((qs[t] >> sh) & 0xF) | (((qh >> (e0 + t)) & 1) << 4)) * d + m;
ST_QT_TAIL

ST_QT_HEAD(ST_TYPE_Q8_0, 32, 34)
    const float d = st_ldh(b);
    const int8_t *qs = (const int8_t *)(b + 2 + e0);
#pragma unroll
    for (int t = 0; t < 8; t++) v[t] = (float)qs[t] * d;
ST_QT_TAIL

ST_QT_HEAD(ST_TYPE_IQ4_NL, 32, 18)
    const float d = st_ldh(b);
    const uint8_t *qs = b + 2 + (e0 & 15);
    const int sh = e0 >= 16 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++) v[t] = (float)st_kiq4nl[(qs[t] >> sh) & 0xF] * d;
ST_QT_TAIL

/* MXFP4: e @0, qs[16] @1; element j < 16 in the low nibble of qs[j], j + 16 in its high one. */
ST_QT_HEAD(ST_TYPE_MXFP4, 32, 17)
    const float d = st_e8m0_half(b[0]);
    const uint8_t *qs = b + 1 + (e0 & 15);
    const int sh = e0 >= 16 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++) v[t] = (float)st_kmxfp4[(qs[t] >> sh) & 0xF] * d;
ST_QT_TAIL

/* Q2_K: scales[16] @0, qs[64] @16, d @80, dmin @82. */
ST_QT_HEAD(ST_TYPE_Q2_K, 256, 84)
    const float d = st_ldh(b + 80), dmin = st_ldh(b + 82);
    const int sc = b[e0 / 16];
    const float dl = d * (float)(sc & 0xF), ml = dmin * (float)(sc >> 4);
    const int h = e0 / 128, r = e0 % 128;
    const uint8_t *q = b + 16 + h * 32 + (r % 32);
    const int sh = 2 * (r / 32);
#pragma unroll
    for (int t = 0; t < 8; t++) v[t] = dl * (float)((q[t] >> sh) & 3) - ml;
ST_QT_TAIL

/* Q3_K: hmask[32] @0, qs[64] @32, scales[12] @96, d @108. */
ST_QT_HEAD(ST_TYPE_Q3_K, 256, 110)
    const float d = st_ldh(b + 108);
    const uint8_t *sc12 = b + 96;
    const int i = e0 / 16;
    const int lo = i < 8 ? (sc12[i] & 0xF) : (sc12[i - 8] >> 4);
    const int hi = (sc12[8 + (i % 4)] >> (2 * (i / 4))) & 3;
    const float dl = d * (float)((lo | (hi << 4)) - 32);
    const int h = e0 / 128, r = e0 % 128, s = r / 32, l = r % 32;
    const uint8_t *q = b + 32 + h * 32 + l;
    const uint8_t *hm = b + l;
    const int hb = h * 4 + s;
#pragma unroll
    for (int t = 0; t < 8; t++)
        v[t] = dl * (float)((int)((q[t] >> (2 * s)) & 3) - (((hm[t] >> hb) & 1) ? 0 : 4));
ST_QT_TAIL

/* Q4_K: d @0, dmin @2, scales[12] @4, qs[128] @16. */
ST_QT_HEAD(ST_TYPE_Q4_K, 256, 144)
    const float d = st_ldh(b), dmin = st_ldh(b + 2);
    int sc, m;
    st_k4_scale_min(b + 4, e0 / 32, sc, m);
    const float dl = d * (float)sc, ml = dmin * (float)m;
    const int w = e0 % 64;
    const uint8_t *q = b + 16 + (e0 / 64) * 32 + (w % 32);
    const int sh = w >= 32 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++) v[t] = dl * (float)((q[t] >> sh) & 0xF) - ml;
ST_QT_TAIL

/* Q5_K: d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48. */
ST_QT_HEAD(ST_TYPE_Q5_K, 256, 176)
    const float d = st_ldh(b), dmin = st_ldh(b + 2);
    const int sub = e0 / 32;
    int sc, m;
    st_k4_scale_min(b + 4, sub, sc, m);
    const float dl = d * (float)sc, ml = dmin * (float)m;
    const int w = e0 % 64;
    const uint8_t *q = b + 48 + (e0 / 64) * 32 + (w % 32);
    const uint8_t *qh = b + 16 + (e0 % 32);
    const int sh = w >= 32 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++)
        v[t] = dl * (float)(((q[t] >> sh) & 0xF) | (((qh[t] >> sub) & 1) << 4)) - ml;
ST_QT_TAIL

/* Q6_K: ql[128] @0, qh[64] @128, scales[16] (int8) @192, d @208. */
ST_QT_HEAD(ST_TYPE_Q6_K, 256, 210)
    const float d = st_ldh(b + 208);
    const float dl = d * (float)(int8_t)b[192 + e0 / 16];
    const int h = e0 / 128, r = e0 % 128, qu = r / 32, l = r % 32;
    const uint8_t *ql = b + h * 64 + l + (qu & 1) * 32;
    const uint8_t *qh = b + 128 + h * 32 + l;
    const int sh = qu >= 2 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++)
        v[t] = dl * (float)((int)(((ql[t] >> sh) & 0xF) | (((qh[t] >> (2 * qu)) & 3) << 4)) - 32);
ST_QT_TAIL

/* IQ4_XS: d @0, scales_h @2, scales_l[4] @4, qs[128] @8. */
ST_QT_HEAD(ST_TYPE_IQ4_XS, 256, 136)
    const float d = st_ldh(b);
    const int ib = e0 / 32;
    const int sh_h = b[2] | (b[3] << 8);
    const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh_h >> (2 * ib)) & 3) << 4);
    const float dl = d * (float)(ls - 32);
    const int w = e0 % 32;
    const uint8_t *q = b + 8 + ib * 16 + (w % 16);
    const int sh = w >= 16 ? 4 : 0;
#pragma unroll
    for (int t = 0; t < 8; t++) v[t] = dl * (float)st_kiq4nl[(q[t] >> sh) & 0xF];
ST_QT_TAIL

/* Plain types: deq8 needs 8 whole elements; deq1 reads any single one. */
#define ST_QT_PLAIN(T_, SIZE_, EXPR_)                                                \
    template <> struct st_qt<T_> {                                                  \
        static constexpr int qk = 1, bytes = SIZE_, plain = 1;                       \
        __host__ __device__ static __forceinline__ float deq1(const uint8_t *row, int64_t e) { \
            const uint8_t *p = row + e * SIZE_;                                      \
            return EXPR_;                                                            \
        }                                                                            \
        __host__ __device__ static __forceinline__ void deq8(const uint8_t *row, int64_t g, float *v) { \
            _Pragma("unroll") for (int t = 0; t < 8; t++) v[t] = deq1(row, g * 8 + t);       \
        }                                                                            \
    };
ST_QT_PLAIN(ST_TYPE_F32, 4, (*(const float *)p))
ST_QT_PLAIN(ST_TYPE_F16, 2, st_h2f(*(const uint16_t *)p))
ST_QT_PLAIN(ST_TYPE_BF16, 2, st_b2f(*(const uint16_t *)p))

/* One element of a plain-typed row; block types never take this path (K % 8 == 0). */
template <int T> __host__ __device__ __forceinline__ float st_qt_plain_deq1(const uint8_t *row, int64_t e) {
    if constexpr (st_qt<T>::plain) return st_qt<T>::deq1(row, e);
    else { (void)row; (void)e; return 0.0f; }
}

/* Run `F::template run<T>()` for the weight type `t`; ST_UNSUPPORTED for others. */
#define ST_WEIGHT_DISPATCH(t, CALL)                                   \
    switch (t) {                                                      \
    case ST_TYPE_F32: return CALL(ST_TYPE_F32);                       \
    case ST_TYPE_F16: return CALL(ST_TYPE_F16);                       \
    case ST_TYPE_BF16: return CALL(ST_TYPE_BF16);                     \
    case ST_TYPE_Q4_0: return CALL(ST_TYPE_Q4_0);                     \
    case ST_TYPE_Q4_1: return CALL(ST_TYPE_Q4_1);                     \
    case ST_TYPE_Q5_0: return CALL(ST_TYPE_Q5_0);                     \
    case ST_TYPE_Q5_1: return CALL(ST_TYPE_Q5_1);                     \
    case ST_TYPE_Q8_0: return CALL(ST_TYPE_Q8_0);                     \
    case ST_TYPE_Q2_K: return CALL(ST_TYPE_Q2_K);                     \
    case ST_TYPE_Q3_K: return CALL(ST_TYPE_Q3_K);                     \
    case ST_TYPE_Q4_K: return CALL(ST_TYPE_Q4_K);                     \
    case ST_TYPE_Q5_K: return CALL(ST_TYPE_Q5_K);                     \
    case ST_TYPE_Q6_K: return CALL(ST_TYPE_Q6_K);                     \
    case ST_TYPE_IQ4_NL: return CALL(ST_TYPE_IQ4_NL);                 \
    case ST_TYPE_IQ4_XS: return CALL(ST_TYPE_IQ4_XS);                 \
    case ST_TYPE_MXFP4: return CALL(ST_TYPE_MXFP4);                   \
    default: break;                                                   \
    }

/* Block size and bytes per block of a weight type (host side); 0 when unknown. */
static inline int st_w_qk(uint32_t t) {
    switch (t) {
    case ST_TYPE_F32: case ST_TYPE_F16: case ST_TYPE_BF16: return 1;
    case ST_TYPE_Q4_0: case ST_TYPE_Q4_1: case ST_TYPE_Q5_0: case ST_TYPE_Q5_1: case ST_TYPE_Q8_0:
    case ST_TYPE_IQ4_NL: case ST_TYPE_MXFP4: return 32;
    case ST_TYPE_Q2_K: case ST_TYPE_Q3_K: case ST_TYPE_Q4_K: case ST_TYPE_Q5_K: case ST_TYPE_Q6_K:
    case ST_TYPE_IQ4_XS: return 256;
    default: return 0;
    }
}

#endif
