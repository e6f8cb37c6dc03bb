/* SPDX-License-Identifier: Apache-2.0 */
/* x86 kernels for the 32-element formats: Q8_0 / Q8_1 activation quantizers and the dots of
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and IQ4_NL weights. Weight blocks are unpacked once per block
 * and reused for every activation row; each row keeps its own accumulator. */
#include <math.h>

#include "cpu_avx2/kern_x86.h"

#include "cpu/cpu_half.h"

/* ---------------------------------------------------------------- quantizers */

/* max |x| over 32 floats */
static inline float amax32(const float *x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_andnot_ps(sign, _mm256_loadu_ps(x));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8)));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 16)));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 24)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* round(x * id) of 32 floats into 32 int8 (same rounding as lrintf: nearest even). */
static inline __m256i quant32(const float *x, float id) {
    __m256 v = _mm256_set1_ps(id);
    __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), v));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), v));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), v));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), v));
    __m256i p01 = _mm256_packs_epi32(i0, i1), p23 = _mm256_packs_epi32(i2, i3);
    __m256i p = _mm256_packs_epi16(p01, p23);
    /* undo the per-lane interleave of the packs */
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static void x_q8_0_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_0 *y = vy;
    for (int64_t b = 0; b < k / ST_QK8_0; b++, x += ST_QK8_0) {
        float amax = amax32(x);
        float d = amax / 127.0f, id = d != 0.0f ? 127.0f / amax : 0.0f;
        y[b].d = st_cpu_f2h(d);
        _mm256_storeu_si256((__m256i *)y[b].qs, quant32(x, id));
    }
}

static void x_q8_1_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_1 *y = vy;
    for (int64_t b = 0; b < k / ST_QK8_1; b++, x += ST_QK8_1) {
        float amax = amax32(x);
        float d = amax / 127.0f, id = d != 0.0f ? 127.0f / amax : 0.0f;
        __m256i q = quant32(x, id);
        _mm256_storeu_si256((__m256i *)y[b].qs, q);
        int sum = st_x86_hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1)));
        y[b].d = st_cpu_f2h(d);
        y[b].s = st_cpu_f2h(d * (float)sum);
    }
}

/* ---------------------------------------------------------------- dots against Q8_0 */

#define ROW(T, x, xs, j) ((const T *)((const char *)(x) + (size_t)(j) * (xs)))

/* Signed weights (32 int8 in a vector) per block, from a block-unpacking expression. With
 * AVX-512 VNNI two blocks share one 64-byte register (the odd last block takes the 32-byte
 * path); either way each row's order of operations is fixed by k alone. */
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define ST_SIGNED_PAIRS(WT, UNPACK)                                                                      \
    for (; b + 1 < nb; b += 2) {                                                                         \
        __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(UNPACK(&w[b])), UNPACK(&w[b + 1]), 1);   \
        __m512i aw = _mm512_abs_epi8(wv);                                                                \
        __mmask64 neg = _mm512_movepi8_mask(wv);                                                         \
        float d0 = st_x86_h2f(w[b].d), d1 = st_x86_h2f(w[b + 1].d);                                      \
        for (int j = 0; j < NR; j++) {                                                                   \
            const st_block_q8_0 *xb = ROW(st_block_q8_0, x, xs, j) + b;                                  \
            __m512i xv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)xb[0].qs)), \
                                            _mm256_loadu_si256((const __m256i *)xb[1].qs), 1);           \
            xv = _mm512_mask_sub_epi8(xv, neg, _mm512_setzero_si512(), xv);                              \
            __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), aw, xv);                             \
            __m512 sc = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(d0 * st_x86_h2f(xb[0].d))), \
                                           _mm256_set1_ps(d1 * st_x86_h2f(xb[1].d)), 1);                 \
            acc2[j] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(p), acc2[j]);                               \
        }                                                                                                \
    }
#define ST_PAIR_ACC_DECL __m512 acc2[8];
#define ST_PAIR_ACC_INIT(j) acc2[j] = _mm512_setzero_ps()
#define ST_PAIR_ACC_SUM(j) _mm512_reduce_add_ps(acc2[j])
#else
#define ST_SIGNED_PAIRS(WT, UNPACK)
#define ST_PAIR_ACC_DECL
#define ST_PAIR_ACC_INIT(j) ((void)0)
#define ST_PAIR_ACC_SUM(j) 0.0f
#endif

#define ST_SIGNED_DOT(name, WT, UNPACK)                                                                  \
    ST_X86_INLINE void name##_rows(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) { \
        const WT *w = vw;                                                                                \
        __m256 acc[8];                                                                                   \
        ST_PAIR_ACC_DECL                                                                                 \
        for (int j = 0; j < NR; j++) {                                                                   \
            acc[j] = _mm256_setzero_ps();                                                                \
            ST_PAIR_ACC_INIT(j);                                                                         \
        }                                                                                                \
        int64_t b = 0, nb = k / 32;                                                                      \
        ST_SIGNED_PAIRS(WT, UNPACK)                                                                      \
        for (; b < nb; b++) {                                                                            \
            __m256i wv = UNPACK(&w[b]);                                                                  \
            __m256i aw = _mm256_sign_epi8(wv, wv);                                                       \
            float dw = st_x86_h2f(w[b].d);                                                               \
            for (int j = 0; j < NR; j++) {                                                               \
                const st_block_q8_0 *xb = ROW(st_block_q8_0, x, xs, j) + b;                              \
                __m256i xv = _mm256_loadu_si256((const __m256i *)xb->qs);                                \
                __m256i p = st_x86_dot_u8s8(aw, _mm256_sign_epi8(xv, wv));                               \
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * st_x86_h2f(xb->d)), _mm256_cvtepi32_ps(p), acc[j]); \
            }                                                                                            \
        }                                                                                                \
        for (int j = 0; j < NR; j++) s[j] = ST_PAIR_ACC_SUM(j) + st_x86_hsum(acc[j]);                    \
    }                                                                                                    \
    ST_X86_VEC_DOT(name)

ST_X86_INLINE __m256i unpack_q8_0(const st_block_q8_0 *b) { return _mm256_loadu_si256((const __m256i *)b->qs); }
ST_X86_INLINE __m256i unpack_q4_0(const st_block_q4_0 *b) {
    return _mm256_sub_epi8(st_x86_nibbles(b->qs), _mm256_set1_epi8(8));
}
ST_X86_INLINE __m256i unpack_q5_0(const st_block_q5_0 *b) {
    __m256i hi = _mm256_and_si256(st_x86_bits_to_bytes(b->qh), _mm256_set1_epi8(0x10));
    return _mm256_sub_epi8(_mm256_or_si256(st_x86_nibbles(b->qs), hi), _mm256_set1_epi8(16));
}
ST_X86_INLINE __m256i unpack_iq4_nl(const st_block_iq4_nl *b) {
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)st_iq4nl_values));
    return _mm256_shuffle_epi8(tab, st_x86_nibbles(b->qs));
}

ST_SIGNED_DOT(vd_q8_0, st_block_q8_0, unpack_q8_0)
ST_SIGNED_DOT(vd_q4_0, st_block_q4_0, unpack_q4_0)
ST_SIGNED_DOT(vd_q5_0, st_block_q5_0, unpack_q5_0)
ST_SIGNED_DOT(vd_iq4_nl, st_block_iq4_nl, unpack_iq4_nl)

/* ---------------------------------------------------------------- dots against Q8_1 (with min) */

#define ST_MIN_DOT(name, WT, UNPACK)                                                                     \
    ST_X86_INLINE void name##_rows(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) { \
        const WT *w = vw;                                                                                \
        __m256 acc[8];                                                                                   \
        float accm[8];                                                                                   \
        for (int j = 0; j < NR; j++) {                                                                   \
            acc[j] = _mm256_setzero_ps();                                                                \
            accm[j] = 0.0f;                                                                              \
        }                                                                                                \
        for (int64_t b = 0; b < k / 32; b++) {                                                           \
            __m256i wv = UNPACK(&w[b]); /* unsigned 0..31 */                                             \
            float dw = st_x86_h2f(w[b].d), mw = st_x86_h2f(w[b].m);                                      \
            for (int j = 0; j < NR; j++) {                                                               \
                const st_block_q8_1 *xb = ROW(st_block_q8_1, x, xs, j) + b;                              \
                __m256i p = st_x86_dot_u8s8(wv, _mm256_loadu_si256((const __m256i *)xb->qs));            \
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * st_x86_h2f(xb->d)), _mm256_cvtepi32_ps(p), acc[j]); \
                accm[j] += mw * st_x86_h2f(xb->s);                                                       \
            }                                                                                            \
        }                                                                                                \
        for (int j = 0; j < NR; j++) s[j] = st_x86_hsum(acc[j]) + accm[j];                               \
    }                                                                                                    \
    ST_X86_VEC_DOT(name)

ST_X86_INLINE __m256i unpack_q4_1(const st_block_q4_1 *b) { return st_x86_nibbles(b->qs); }
ST_X86_INLINE __m256i unpack_q5_1(const st_block_q5_1 *b) {
    __m256i hi = _mm256_and_si256(st_x86_bits_to_bytes(b->qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(st_x86_nibbles(b->qs), hi);
}

ST_MIN_DOT(vd_q4_1, st_block_q4_1, unpack_q4_1)
ST_MIN_DOT(vd_q5_1, st_block_q5_1, unpack_q5_1)

void st_x86_legacy_kernels(st_cpu_kernels *k) {
    k->wt[ST_TYPE_Q8_0].from_float = x_q8_0_from_float;
    k->wt[ST_TYPE_Q8_0].vec_dot = vd_q8_0;
    k->wt[ST_TYPE_Q8_0].vec_dot_rows = vd_q8_0_mr;
    k->wt[ST_TYPE_Q4_0].from_float = x_q8_0_from_float;
    k->wt[ST_TYPE_Q4_0].vec_dot = vd_q4_0;
    k->wt[ST_TYPE_Q4_0].vec_dot_rows = vd_q4_0_mr;
    k->wt[ST_TYPE_Q5_0].from_float = x_q8_0_from_float;
    k->wt[ST_TYPE_Q5_0].vec_dot = vd_q5_0;
    k->wt[ST_TYPE_Q5_0].vec_dot_rows = vd_q5_0_mr;
    k->wt[ST_TYPE_IQ4_NL].from_float = x_q8_0_from_float;
    k->wt[ST_TYPE_IQ4_NL].vec_dot = vd_iq4_nl;
    k->wt[ST_TYPE_IQ4_NL].vec_dot_rows = vd_iq4_nl_mr;
    k->wt[ST_TYPE_Q4_1].from_float = x_q8_1_from_float;
    k->wt[ST_TYPE_Q4_1].vec_dot = vd_q4_1;
    k->wt[ST_TYPE_Q4_1].vec_dot_rows = vd_q4_1_mr;
    k->wt[ST_TYPE_Q5_1].from_float = x_q8_1_from_float;
    k->wt[ST_TYPE_Q5_1].vec_dot = vd_q5_1;
    k->wt[ST_TYPE_Q5_1].vec_dot_rows = vd_q5_1_mr;
}
