/* SPDX-License-Identifier: Apache-2.0 */
/* Inline helpers shared by the x86 kernel files (compiled with AVX2/FMA/F16C, optionally
 * AVX-512). Integer dot products use VNNI when the build enables it; the results are the same
 * integers either way, because the operands never saturate the 16-bit AVX2 path. */
#ifndef STRATA_KERN_X86_H
#define STRATA_KERN_X86_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_kernels.h"
#include "quant/quant.h"

static inline float st_x86_h2f(uint16_t h) { return _cvtsh_ss(h); }

static inline float st_x86_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int st_x86_hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* Sum of groups of 4 products u8 * s8 into 8 int32 lanes. */
static inline __m256i st_x86_dot_u8s8(__m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

/* Sum of groups of 4 products s8 * s8 into 8 int32 lanes (w may not be -128 with x = -128). */
static inline __m256i st_x86_dot_s8s8(__m256i w, __m256i x) {
    return st_x86_dot_u8s8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

/* 16 packed bytes of nibbles -> 32 bytes: low nibbles in bytes 0..15, high in 16..31. */
static inline __m256i st_x86_nibbles(const uint8_t *q) {
    __m128i v = _mm_loadu_si128((const __m128i *)q);
    __m256i b = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
    return _mm256_and_si256(b, _mm256_set1_epi8(0x0f));
}

/* 32 bits -> 32 bytes, 0xff where the bit is set. */
static inline __m256i st_x86_bits_to_bytes(const uint8_t *p) {
    uint32_t x;
    memcpy(&x, p, 4);
    __m256i v = _mm256_set1_epi32((int)x);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0);
    v = _mm256_shuffle_epi8(v, shuf);
    v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfeLL));
    return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

/* e^x for 8 floats (within ~2 ulp): range reduction by ln 2 and a degree-5 polynomial of the
 * classic single-precision kind; x < -87.3 gives 0 (so -inf gives 0), x > 88.7 gives inf, NaN
 * stays NaN. */
static inline __m256 st_x86_exp8(__m256 x) {
    const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-87.3365447505531f);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* Bytes ahead of the current weight row that the row-range kernels prefetch: streams of weight
 * rows cross page boundaries every few rows, where hardware prefetchers stop. */
#define ST_X86_PREFETCH_AHEAD 4096

/* Expands a kernel body template `name##_rows(k, w, x, xs, s, NR)` into a vec_dot with the row
 * count as a compile-time constant (accumulators stay in registers), and name##_mr, the same
 * body looped over a range of weight rows (st_cpu_vec_dot_rows_fn; identical bits). */
#define ST_X86_VEC_DOT_MR(name, NR)                                                                     \
    for (int64_t m = 0; m < mr; m++) {                                                                  \
        const char *wm = (const char *)w + (size_t)m * ws;                                              \
        for (size_t o = 0; o < ws; o += 64) _mm_prefetch(wm + ST_X86_PREFETCH_AHEAD + o, _MM_HINT_T0);  \
        name##_rows(k, wm, x, xs, s + (size_t)m * ss, NR);                                              \
    }
#define ST_X86_VEC_DOT(name)                                                                            \
    static void name(int64_t k, const void *w, const void *x, size_t xs, int nr, float *s) {            \
        switch (nr) {                                                                                   \
        case 1: name##_rows(k, w, x, xs, s, 1); break;                                                  \
        case 2: name##_rows(k, w, x, xs, s, 2); break;                                                  \
        case 3: name##_rows(k, w, x, xs, s, 3); break;                                                  \
        case 4: name##_rows(k, w, x, xs, s, 4); break;                                                  \
        case 5: name##_rows(k, w, x, xs, s, 5); break;                                                  \
        case 6: name##_rows(k, w, x, xs, s, 6); break;                                                  \
        case 7: name##_rows(k, w, x, xs, s, 7); break;                                                  \
        default: name##_rows(k, w, x, xs, s, 8); break;                                                 \
        }                                                                                               \
    }                                                                                                   \
    static void name##_mr(int64_t k, const void *w, size_t ws, int64_t mr, const void *x, size_t xs,    \
                          int nr, float *s, size_t ss) {                                                \
        switch (nr) {                                                                                   \
        case 1: ST_X86_VEC_DOT_MR(name, 1) break;                                                       \
        case 2: ST_X86_VEC_DOT_MR(name, 2) break;                                                       \
        case 3: ST_X86_VEC_DOT_MR(name, 3) break;                                                       \
        case 4: ST_X86_VEC_DOT_MR(name, 4) break;                                                       \
        case 8: ST_X86_VEC_DOT_MR(name, 8) break;                                                       \
        default:                                                                                        \
            for (int64_t m = 0; m < mr; m++) name(k, (const char *)w + (size_t)m * ws, x, xs, nr, s + (size_t)m * ss); \
            break;                                                                                      \
        }                                                                                               \
    }

#define ST_X86_INLINE static inline __attribute__((always_inline))

/* Slot setters of each kernel file. */
void st_x86_float_kernels(st_cpu_kernels *k);
void st_x86_legacy_kernels(st_cpu_kernels *k);
void st_x86_kquant_kernels(st_cpu_kernels *k);
void st_x86_attn_kernels(st_cpu_kernels *k);
void st_x86_x8_kernels(st_cpu_kernels *k);

#endif
