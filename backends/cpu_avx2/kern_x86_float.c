/* SPDX-License-Identifier: Apache-2.0 */
/* x86 kernels for float weights (F32, F16, BF16 rows dotted with F32 activations), the f32
 * vector helpers and the F16/BF16 row conversions. */
#include "cpu_avx2/kern_x86.h"

#include <math.h>

#include "cpu/cpu_half.h"

/* Loads 16 weights as two f32 vectors. */
ST_X86_INLINE void load16_f32(const float *w, __m256 *a, __m256 *b) {
    *a = _mm256_loadu_ps(w);
    *b = _mm256_loadu_ps(w + 8);
}
ST_X86_INLINE void load16_f16(const uint16_t *w, __m256 *a, __m256 *b) {
    *a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w));
    *b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 8)));
}
ST_X86_INLINE __m256 bf16x8(const uint16_t *w) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)w));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
ST_X86_INLINE void load16_bf16(const uint16_t *w, __m256 *a, __m256 *b) {
    *a = bf16x8(w);
    *b = bf16x8(w + 8);
}

/* Up to 4 activation rows per pass; each row always uses the same two accumulators and the
 * same scalar tail, so its result does not depend on the other rows. */
#define ST_FLOAT_DOT(name, wtype, load16, conv1)                                                        \
    ST_X86_INLINE void name##_4(int64_t k, const wtype *w, const float *x, size_t xs, float *s, int nr) { \
        __m256 a0[4], a1[4];                                                                           \
        for (int j = 0; j < 4; j++) a0[j] = a1[j] = _mm256_setzero_ps();                               \
        int64_t i = 0;                                                                                 \
        for (; i + 16 <= k; i += 16) {                                                                 \
            __m256 w0, w1;                                                                             \
            load16(w + i, &w0, &w1);                                                                   \
            for (int j = 0; j < nr; j++) {                                                             \
                const float *xj = (const float *)((const char *)x + (size_t)j * xs) + i;               \
                a0[j] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xj), a0[j]);                               \
                a1[j] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xj + 8), a1[j]);                           \
            }                                                                                          \
        }                                                                                              \
        for (int j = 0; j < nr; j++) {                                                                 \
            const float *xj = (const float *)((const char *)x + (size_t)j * xs);                       \
            float t = 0.0f;                                                                            \
            for (int64_t q = i; q < k; q++) t += conv1(w[q]) * xj[q];                                  \
            s[j] = st_x86_hsum(_mm256_add_ps(a0[j], a1[j])) + t;                                       \
        }                                                                                              \
    }                                                                                                  \
    static void name(int64_t k, const void *w, const void *x, size_t xs, int nr, float *s) {           \
        for (int j0 = 0; j0 < nr; j0 += 4) {                                                           \
            int n = nr - j0 < 4 ? nr - j0 : 4;                                                         \
            const float *xj = (const float *)((const char *)x + (size_t)j0 * xs);                      \
            switch (n) {                                                                               \
            case 1: name##_4(k, w, xj, xs, s + j0, 1); break;                                          \
            case 2: name##_4(k, w, xj, xs, s + j0, 2); break;                                          \
            case 3: name##_4(k, w, xj, xs, s + j0, 3); break;                                          \
            default: name##_4(k, w, xj, xs, s + j0, 4); break;                                         \
            }                                                                                          \
        }                                                                                              \
    }

static inline float id_f32(float v) { return v; }
ST_FLOAT_DOT(vd_f32, float, load16_f32, id_f32)
ST_FLOAT_DOT(vd_f16, uint16_t, load16_f16, st_x86_h2f)
ST_FLOAT_DOT(vd_bf16, uint16_t, load16_bf16, st_cpu_bf2f)

/* ---------------------------------------------------------------- f32 helpers */

static float x_dot_f32(const float *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float t = 0.0f;
    for (; i < n; i++) t += a[i] * b[i];
    return st_x86_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3))) + t;
}

static float x_sumsq_f32(const float *x, int64_t n) { return x_dot_f32(x, x, n); }

static void x_axpy_f32(float *y, float a, const float *x, int64_t n) {
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

static void x_scale_f32(float *y, float a, int64_t n) {
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] *= a;
}

static float x_max_f32(const float *x, int64_t n) {
    float m = x[0];
    int64_t i = 0;
    if (n >= 8) {
        __m256 vm = _mm256_loadu_ps(x);
        for (i = 8; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(vm), _mm256_extractf128_ps(vm, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        m = _mm_cvtss_f32(h);
    }
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

static float x_exp_sum_f32(float *x, float m, int64_t n) {
    __m256 vm = _mm256_set1_ps(m), s = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = st_x86_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        s = _mm256_add_ps(s, e);
    }
    float t = 0.0f;
    for (; i < n; i++) {
        x[i] = expf(x[i] - m);
        t += x[i];
    }
    return st_x86_hsum(s) + t;
}

static void x_silu_mul_f32(float *g, const float *u, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(g + i);
        __m256 e = st_x86_exp8(_mm256_xor_ps(v, neg));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(v, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* Per lane: the largest non-NaN value seen and its first index (-1: none yet); then the lanes
 * are merged by value, lower index on ties. */
static int64_t x_argmax_f32(const float *x, int64_t n) {
    int64_t best = -1;
    int64_t i = 0;
    if (n >= 8 && n < ((int64_t)1 << 31)) {
        __m256 vmax = _mm256_set1_ps(-INFINITY);
        __m256i vidx = _mm256_set1_epi32(-1), cur = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i step = _mm256_set1_epi32(8), none = _mm256_set1_epi32(-1);
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_loadu_ps(x + i);
            __m256 gt = _mm256_cmp_ps(v, vmax, _CMP_GT_OQ);
            __m256 first = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(vidx, none)), _mm256_cmp_ps(v, v, _CMP_ORD_Q));
            __m256 take = _mm256_or_ps(gt, first);
            vmax = _mm256_blendv_ps(vmax, v, take);
            vidx = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(vidx), _mm256_castsi256_ps(cur), take));
            cur = _mm256_add_epi32(cur, step);
        }
        float mv[8];
        int32_t mi[8];
        _mm256_storeu_ps(mv, vmax);
        _mm256_storeu_si256((__m256i *)mi, vidx);
        for (int l = 0; l < 8; l++) {
            if (mi[l] < 0) continue;
            if (best < 0 || mv[l] > x[best] || (mv[l] == x[best] && mi[l] < best)) best = mi[l];
        }
    }
    for (; i < n; i++)
        if (x[i] == x[i] && (best < 0 || x[i] > x[best])) best = i;
    return best;
}

/* ---------------------------------------------------------------- conversions */

static void x_f16_to_f32(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < n; i++) y[i] = st_x86_h2f(x[i]);
}

static void x_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) y[i] = st_cpu_f2h(x[i]);
}

static void x_bf16_to_f32(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, bf16x8(x + i));
    for (; i < n; i++) y[i] = st_cpu_bf2f(x[i]);
}

static void x_f32_to_bf16(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256i u = _mm256_castps_si256(v);
        __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
        r = _mm256_srli_epi32(r, 16);
        __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
        __m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        r = _mm256_blendv_epi8(r, nan, isnan);
        r = _mm256_and_si256(r, _mm256_set1_epi32(0xffff));
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128((__m128i *)(y + i), _mm256_castsi256_si128(p));
    }
    for (; i < n; i++) y[i] = st_cpu_f2bf(x[i]);
}

void st_x86_float_kernels(st_cpu_kernels *k) {
    k->wt[ST_TYPE_F32].vec_dot = vd_f32;
    k->wt[ST_TYPE_F16].vec_dot = vd_f16;
    k->wt[ST_TYPE_BF16].vec_dot = vd_bf16;
    k->dot_f32 = x_dot_f32;
    k->sumsq_f32 = x_sumsq_f32;
    k->axpy_f32 = x_axpy_f32;
    k->scale_f32 = x_scale_f32;
    k->max_f32 = x_max_f32;
    k->exp_sum_f32 = x_exp_sum_f32;
    k->silu_mul_f32 = x_silu_mul_f32;
    k->argmax_f32 = x_argmax_f32;
    k->f16_to_f32 = x_f16_to_f32;
    k->f32_to_f16 = x_f32_to_f16;
    k->bf16_to_f32 = x_bf16_to_f32;
    k->f32_to_bf16 = x_f32_to_bf16;
}
