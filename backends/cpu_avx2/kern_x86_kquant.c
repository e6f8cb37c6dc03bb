/* SPDX-License-Identifier: Apache-2.0 */
/* x86 kernels for the 256-element formats against Q8_K activations: the Q8_K quantizer and
 * the dots of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS. Weights of a
 * super-block are unpacked once into registers/L1 and reused for every activation row. */
#include <math.h>

#include "cpu_avx2/kern_x86.h"

#include "cpu/cpu_quant_util.h"

#define ROW(T, x, xs, j) ((const T *)((const char *)(x) + (size_t)(j) * (xs)))

/* ---------------------------------------------------------------- Q8_K quantizer */

static void x_q8_k_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_K *y = vy;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < k / ST_QK_K; b++, x += ST_QK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int i = 0; i < ST_QK_K; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float amax = _mm_cvtss_f32(h);
        float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        y[b].d = amax != 0.0f ? amax / 127.0f : 0.0f;
        __m256 vid = _mm256_set1_ps(id);
        for (int g = 0; g < ST_QK_K; g += 32) {
            __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + g), vid));
            __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + g + 8), vid));
            __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + g + 16), vid));
            __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + g + 24), vid));
            /* bsums of the two 16-groups */
            __m256i s01 = _mm256_add_epi32(i0, i1), s23 = _mm256_add_epi32(i2, i3);
            y[b].bsums[g / 16] = (int16_t)st_x86_hsum_i32(s01);
            y[b].bsums[g / 16 + 1] = (int16_t)st_x86_hsum_i32(s23);
            __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
            p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)(y[b].qs + g), p);
        }
    }
}

#if defined(__AVX512BW__)
/* Q8_K rows for this build's Q4_K kernel: the same values and sums as Q8_K, with the 32-value
 * sub-blocks of each 128 stored in the order 0, 2, 1, 3 (and their 16-value sums with them), so
 * the low and the high nibbles of 64 weight bytes meet their activations in one 64-byte load. */
static void x_q8_k_from_float_q4k(const float *x, void *vy, int64_t k) {
    static const int pos[8] = {0, 2, 1, 3, 4, 6, 5, 7}; /* storage position of sub-block i */
    x_q8_k_from_float(x, vy, k);
    st_block_q8_K *y = vy;
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        int8_t qs[ST_QK_K];
        int16_t bs[ST_QK_K / 16];
        memcpy(qs, y[b].qs, sizeof qs);
        memcpy(bs, y[b].bsums, sizeof bs);
        for (int i = 0; i < 8; i++) {
            memcpy(y[b].qs + 32 * pos[i], qs + 32 * i, 32);
            y[b].bsums[2 * pos[i]] = bs[2 * i];
            y[b].bsums[2 * pos[i] + 1] = bs[2 * i + 1];
        }
    }
}
#endif

/* 16 bsums -> 8 sums of pairs (one per 32-element sub-block). */
static inline __m128i bsums_pairs(const int16_t *bs) {
    __m128i lo = _mm_loadu_si128((const __m128i *)bs), hi = _mm_loadu_si128((const __m128i *)(bs + 8));
    return _mm_hadd_epi16(lo, hi);
}

static inline int hsum128_i32(__m128i s) {
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* ---------------------------------------------------------------- Q4_K / Q5_K */

/* Shared body: UNPACK fills q[8] (32 unsigned values each, sub-block order) for block b. */
#define ST_K4_DOT(name, WT, UNPACK)                                                                      \
    ST_X86_INLINE void name##_rows(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) { \
        const WT *w = vw;                                                                                \
        __m256 acc[8];                                                                                   \
        float accm[8];                                                                                   \
        for (int j = 0; j < NR; j++) {                                                                   \
            acc[j] = _mm256_setzero_ps();                                                                \
            accm[j] = 0.0f;                                                                              \
        }                                                                                                \
        for (int64_t b = 0; b < k / ST_QK_K; b++) {                                                      \
            uint8_t sc[8], mn[8];                                                                        \
            st_cpu_k4_scales(w[b].scales, sc, mn);                                                       \
            __m256i q[8];                                                                                \
            UNPACK(&w[b], q);                                                                            \
            __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn));                      \
            float d = st_x86_h2f(w[b].d), dmin = st_x86_h2f(w[b].dmin);                                  \
            for (int j = 0; j < NR; j++) {                                                               \
                const st_block_q8_K *xb = ROW(st_block_q8_K, x, xs, j) + b;                              \
                __m256i sumi = _mm256_setzero_si256();                                                   \
                for (int v = 0; v < 8; v++) {                                                            \
                    __m256i p = _mm256_maddubs_epi16(q[v], _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * v))); \
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_set1_epi16(sc[v])));       \
                }                                                                                        \
                int msum = hsum128_i32(_mm_madd_epi16(mins, bsums_pairs(xb->bsums)));                    \
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb->d), _mm256_cvtepi32_ps(sumi), acc[j]);   \
                accm[j] += dmin * xb->d * (float)msum;                                                   \
            }                                                                                            \
        }                                                                                                \
        for (int j = 0; j < NR; j++) s[j] = st_x86_hsum(acc[j]) - accm[j];                               \
    }                                                                                                    \
    ST_X86_VEC_DOT(name)

ST_X86_INLINE void unpack_q5_k(const st_block_q5_K *b, __m256i q[8]) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    __m256i hb = _mm256_loadu_si256((const __m256i *)b->qh);
    for (int c = 0; c < 4; c++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * c));
        __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one);
        __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one);
        q[2 * c] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_slli_epi16(h0, 4));
        q[2 * c + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), _mm256_slli_epi16(h1, 4));
    }
}

/* Q4_K: the hot format of decode, so a dedicated kernel. The 12 bytes of 6-bit scales and
 * mins are unpacked with byte shuffles into [sc0..7 | mn0..7]; scales are spread per
 * sub-block with byte shuffles, mins are applied to the activation's 16-element sums with one
 * multiply-add (each min duplicated over its two halves). With AVX-512BW one register holds the
 * low and the high nibbles of 32 bytes of weights, which are two consecutive sub-blocks, so the
 * activations are one contiguous 64-byte load; with VNNI the scale multiply and the sum fuse. */
ST_X86_INLINE __m128i k4_scales_mins(const uint8_t *scales) {
    const __m128i shuf_a = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11);
    const __m128i shuf_b = _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7);
    const __m128i m_a = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
    const __m128i m_a4 = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
    const __m128i m_b = _mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48);
    /* 16 bytes from the scales: the 12 scale bytes and the first 4 of qs (unused) */
    __m128i raw = _mm_loadu_si128((const __m128i *)scales);
    __m128i a = _mm_shuffle_epi8(raw, shuf_a), b = _mm_shuffle_epi8(raw, shuf_b);
    __m128i lo = _mm_or_si128(_mm_and_si128(a, m_a), _mm_and_si128(_mm_srli_epi16(a, 4), m_a4));
    return _mm_or_si128(lo, _mm_and_si128(_mm_srli_epi16(b, 2), m_b));
}

/* byte-shuffle index selecting int16 element e in every position */
#define K4_IDX(e) ((char)(2 * (e))), ((char)(2 * (e) + 1))
#define K4_IDX8(e) K4_IDX(e), K4_IDX(e), K4_IDX(e), K4_IDX(e), K4_IDX(e), K4_IDX(e), K4_IDX(e), K4_IDX(e)

ST_X86_INLINE void vd_q4_k_rows(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) {
    const st_block_q4_K *w = vw;
    const __m128i dup_mins = _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
    __m256 accm[8];
#if defined(__AVX512BW__)
    /* activations come from x_q8_k_from_float_q4k: sub-blocks stored 0 2 1 3 4 6 5 7 */
    const __m128i dup_pmins = _mm_setr_epi8(8, 8, 10, 10, 9, 9, 11, 11, 12, 12, 14, 14, 13, 13, 15, 15);
    __m512 acc[8];
    for (int j = 0; j < NR; j++) {
        acc[j] = _mm512_setzero_ps();
        accm[j] = _mm256_setzero_ps();
    }
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    /* register p holds sub-blocks {4(p/2) + p%2 (low 256 bits), 4(p/2) + p%2 + 2 (high)} */
    static const char idx_tab[4][64] = {
        {K4_IDX8(0), K4_IDX8(0), K4_IDX8(2), K4_IDX8(2)},
        {K4_IDX8(1), K4_IDX8(1), K4_IDX8(3), K4_IDX8(3)},
        {K4_IDX8(4), K4_IDX8(4), K4_IDX8(6), K4_IDX8(6)},
        {K4_IDX8(5), K4_IDX8(5), K4_IDX8(7), K4_IDX8(7)},
    };
    (void)dup_mins;
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        __m128i smb = k4_scales_mins(w[b].scales);
        __m512i scv = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(smb));
        __m256i mnd = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(smb, dup_pmins));
        __m512i q[4], sv[4];
        for (int h = 0; h < 2; h++) {
            __m512i v = _mm512_loadu_si512((const void *)(w[b].qs + 64 * h));
            q[2 * h] = _mm512_and_si512(v, m4);
            q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
        for (int p = 0; p < 4; p++) sv[p] = _mm512_shuffle_epi8(scv, _mm512_loadu_si512((const void *)idx_tab[p]));
        float d = st_x86_h2f(w[b].d), dmin = st_x86_h2f(w[b].dmin);
        for (int j = 0; j < NR; j++) {
            const st_block_q8_K *xb = ROW(st_block_q8_K, x, xs, j) + b;
            __m512i sumi = _mm512_setzero_si512();
            for (int p = 0; p < 4; p++) {
                __m512i pr = _mm512_maddubs_epi16(q[p], _mm512_loadu_si512((const void *)(xb->qs + 64 * p)));
#if defined(__AVX512VNNI__)
                sumi = _mm512_dpwssd_epi32(sumi, pr, sv[p]);
#else
                sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(pr, sv[p]));
#endif
            }
            __m256i ms = _mm256_madd_epi16(mnd, _mm256_loadu_si256((const __m256i *)xb->bsums));
            acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(d * xb->d), _mm512_cvtepi32_ps(sumi), acc[j]);
            accm[j] = _mm256_fmadd_ps(_mm256_set1_ps(dmin * xb->d), _mm256_cvtepi32_ps(ms), accm[j]);
        }
    }
    for (int j = 0; j < NR; j++) {
        __m256 a = _mm256_add_ps(_mm512_castps512_ps256(acc[j]), _mm512_extractf32x8_ps(acc[j], 1));
        s[j] = st_x86_hsum(a) - st_x86_hsum(accm[j]);
    }
#else
    __m256 acc[8];
    for (int j = 0; j < NR; j++) {
        acc[j] = _mm256_setzero_ps();
        accm[j] = _mm256_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    static const char idx_tab[8][32] = {
        {K4_IDX8(0), K4_IDX8(0)}, {K4_IDX8(1), K4_IDX8(1)}, {K4_IDX8(2), K4_IDX8(2)}, {K4_IDX8(3), K4_IDX8(3)},
        {K4_IDX8(4), K4_IDX8(4)}, {K4_IDX8(5), K4_IDX8(5)}, {K4_IDX8(6), K4_IDX8(6)}, {K4_IDX8(7), K4_IDX8(7)},
    };
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        __m128i smb = k4_scales_mins(w[b].scales);
        __m256i scv = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(smb));
        __m256i mnd = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(smb, dup_mins));
        __m256i q[8], sv[8];
        for (int c = 0; c < 4; c++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            q[2 * c] = _mm256_and_si256(v, m4);
            q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        }
        for (int v = 0; v < 8; v++) sv[v] = _mm256_shuffle_epi8(scv, _mm256_loadu_si256((const __m256i *)idx_tab[v]));
        float d = st_x86_h2f(w[b].d), dmin = st_x86_h2f(w[b].dmin);
        for (int j = 0; j < NR; j++) {
            const st_block_q8_K *xb = ROW(st_block_q8_K, x, xs, j) + b;
            __m256i sumi = _mm256_setzero_si256();
            for (int v = 0; v < 8; v += 2) {
                __m256i p0 = _mm256_maddubs_epi16(q[v], _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * v)));
                __m256i p1 = _mm256_maddubs_epi16(q[v + 1], _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * v + 32)));
                sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(_mm256_madd_epi16(p0, sv[v]), _mm256_madd_epi16(p1, sv[v + 1])));
            }
            __m256i ms = _mm256_madd_epi16(mnd, _mm256_loadu_si256((const __m256i *)xb->bsums));
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb->d), _mm256_cvtepi32_ps(sumi), acc[j]);
            accm[j] = _mm256_fmadd_ps(_mm256_set1_ps(dmin * xb->d), _mm256_cvtepi32_ps(ms), accm[j]);
        }
    }
    for (int j = 0; j < NR; j++) s[j] = st_x86_hsum(acc[j]) - st_x86_hsum(accm[j]);
#endif
}
ST_X86_VEC_DOT(vd_q4_k)

ST_K4_DOT(vd_q5_k, st_block_q5_K, unpack_q5_k)

/* ---------------------------------------------------------------- Q6_K */

ST_X86_INLINE void vd_q6_k_rows256(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) {
    const st_block_q6_K *w = vw;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
    __m256 acc[8];
    for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        __m256i q[8], sv[8];
        for (int n = 0; n < 2; n++) {
            __m256i l0 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * n));
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * n + 32));
            __m256i h = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * n));
            q[4 * n + 0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
            q[4 * n + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
            q[4 * n + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
            q[4 * n + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
        }
        for (int v = 0; v < 8; v++)
            sv[v] = _mm256_set_m128i(_mm_set1_epi16(w[b].scales[2 * v + 1]), _mm_set1_epi16(w[b].scales[2 * v]));
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
        float d = st_x86_h2f(w[b].d);
        for (int j = 0; j < NR; j++) {
            const st_block_q8_K *xb = ROW(st_block_q8_K, x, xs, j) + b;
            __m256i sumi = _mm256_setzero_si256();
            for (int v = 0; v < 8; v++) {
                __m256i p = _mm256_maddubs_epi16(q[v], _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * v)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sv[v]));
            }
            /* the values were stored +32: subtract 32 * sum_i sc[i] * bsums[i] */
            __m256i bs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)xb->bsums));
            sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(bs, 5));
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb->d), _mm256_cvtepi32_ps(sumi), acc[j]);
        }
    }
    for (int j = 0; j < NR; j++) s[j] = st_x86_hsum(acc[j]);
}
#if defined(__AVX512BW__)
/* Q6_K with 64-byte registers: sub-blocks 8n..8n+3 and 8n+4..8n+7 are each one register whose
 * activations are contiguous; per-16 scales come from one 16-bit permute per register. */
ST_X86_INLINE void vd_q6_k_rows512(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) {
    const st_block_q6_K *w = vw;
    const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(3);
    static const short idx_tab[4][32] = {
        {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
        {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
        {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
        {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13,
         14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15},
    };
    __m256 acc[8];
    for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        __m512i q[4], sv[4];
        for (int n = 0; n < 2; n++) {
            __m512i l = _mm512_loadu_si512((const void *)(w[b].ql + 64 * n));
            __m256i h = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * n));
            __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(h), _mm256_srli_epi16(h, 2), 1);
            q[2 * n] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(_mm512_and_si512(hh, m2), 4));
            q[2 * n + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                           _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hh, 4), m2), 4));
        }
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
        __m512i sca = _mm512_castsi256_si512(sc16);
        for (int v = 0; v < 4; v++) sv[v] = _mm512_permutexvar_epi16(_mm512_loadu_si512((const void *)idx_tab[v]), sca);
        float d = st_x86_h2f(w[b].d);
        for (int j = 0; j < NR; j++) {
            const st_block_q8_K *xb = ROW(st_block_q8_K, x, xs, j) + b;
            __m512i sumi = _mm512_setzero_si512();
            for (int v = 0; v < 4; v++) {
                __m512i p = _mm512_maddubs_epi16(q[v], _mm512_loadu_si512((const void *)(xb->qs + 64 * v)));
                sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(p, sv[v]));
            }
            __m256i si = _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
            __m256i bs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)xb->bsums));
            si = _mm256_sub_epi32(si, _mm256_slli_epi32(bs, 5));
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb->d), _mm256_cvtepi32_ps(si), acc[j]);
        }
    }
    for (int j = 0; j < NR; j++) s[j] = st_x86_hsum(acc[j]);
}
#endif

ST_X86_INLINE void vd_q6_k_rows(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) {
#if defined(__AVX512BW__)
    vd_q6_k_rows512(k, vw, x, xs, s, NR);
#else
    vd_q6_k_rows256(k, vw, x, xs, s, NR);
#endif
}
ST_X86_VEC_DOT(vd_q6_k)

/* ---------------------------------------------------------------- Q2_K / Q3_K */

/* 16 bytes of per-16 scales reordered even-first: as int16 the low 128-bit lane holds the
 * scales of even sub-blocks, the high lane odd ones, so one byte shuffle gives register v
 * (sub-blocks 2v | 2v+1) its two scales. */
static const char k_even_odd[16] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};
#define K2_IDX(e) (char)(2 * (e)), (char)(2 * (e) + 1)
#define K2_IDX16(e) K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), \
                    K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e), K2_IDX(e)
static const char k_pair_idx[8][32] = {{K2_IDX16(0)}, {K2_IDX16(1)}, {K2_IDX16(2)}, {K2_IDX16(3)},
                                       {K2_IDX16(4)}, {K2_IDX16(5)}, {K2_IDX16(6)}, {K2_IDX16(7)}};

ST_X86_INLINE __m256i pair_scale(__m256i t, int v) {
    return _mm256_shuffle_epi8(t, _mm256_loadu_si256((const __m256i *)k_pair_idx[v]));
}

ST_X86_INLINE void vd_q2_k_rows(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) {
    const st_block_q2_K *w = vw;
    const __m128i m4 = _mm_set1_epi8(0x0f);
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc[8];
    for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        __m128i raw = _mm_loadu_si128((const __m128i *)w[b].scales);
        __m128i lo = _mm_and_si128(raw, m4);
        __m256i t = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(lo, _mm_loadu_si128((const __m128i *)k_even_odd)));
        __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
        __m256i q[8], sv[8];
        for (int n = 0; n < 2; n++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * n));
            for (int j = 0; j < 4; j++) q[4 * n + j] = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3);
        }
        for (int v = 0; v < 8; v++) sv[v] = pair_scale(t, v);
        float d = st_x86_h2f(w[b].d), dmin = st_x86_h2f(w[b].dmin);
        for (int j = 0; j < NR; j++) {
            const st_block_q8_K *xb = ROW(st_block_q8_K, x, xs, j) + b;
            __m256i sumi = _mm256_setzero_si256();
            for (int v = 0; v < 8; v++) {
                __m256i p = _mm256_maddubs_epi16(q[v], _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * v)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sv[v]));
            }
            __m256i ms = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)xb->bsums));
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb->d), _mm256_cvtepi32_ps(sumi), acc[j]);
            acc[j] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * xb->d), _mm256_cvtepi32_ps(ms), acc[j]);
        }
    }
    for (int j = 0; j < NR; j++) s[j] = st_x86_hsum(acc[j]);
}
ST_X86_VEC_DOT(vd_q2_k)

ST_X86_INLINE void vd_q3_k_rows(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) {
    const st_block_q3_K *w = vw;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc[8];
    for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        int8_t scb[16];
        st_cpu_q3k_scales(w[b].scales, scb);
        __m128i raw = _mm_loadu_si128((const __m128i *)scb);
        __m256i t = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(raw, _mm_loadu_si128((const __m128i *)k_even_odd)));
        __m256i sc16 = _mm256_cvtepi8_epi16(raw);
        __m256i hm = _mm256_loadu_si256((const __m256i *)w[b].hmask);
        __m256i q[8], sv[8];
        for (int n = 0; n < 2; n++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * n));
            for (int j = 0; j < 4; j++) {
                __m256i lo = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3);
                __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * n + j), one);
                q[4 * n + j] = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 2)); /* value + 4, 0..7 */
            }
        }
        for (int v = 0; v < 8; v++) sv[v] = pair_scale(t, v);
        float d = st_x86_h2f(w[b].d);
        for (int j = 0; j < NR; j++) {
            const st_block_q8_K *xb = ROW(st_block_q8_K, x, xs, j) + b;
            __m256i sumi = _mm256_setzero_si256();
            for (int v = 0; v < 8; v++) {
                __m256i p = _mm256_maddubs_epi16(q[v], _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * v)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sv[v]));
            }
            /* remove the +4 offset: 4 * sum_g sc[g] * bsums[g] */
            __m256i bs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)xb->bsums));
            sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(bs, 2));
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb->d), _mm256_cvtepi32_ps(sumi), acc[j]);
        }
    }
    for (int j = 0; j < NR; j++) s[j] = st_x86_hsum(acc[j]);
}
ST_X86_VEC_DOT(vd_q3_k)

/* ---------------------------------------------------------------- IQ4_XS */

ST_X86_INLINE void vd_iq4_xs_rows(int64_t k, const void *vw, const void *x, size_t xs, float *s, const int NR) {
    const st_block_iq4_xs *w = vw;
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)st_iq4nl_values));
    __m256 acc[8];
    for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        __m256i q[8], aq[8], sv[8];
        for (int ib = 0; ib < 8; ib++) {
            q[ib] = _mm256_shuffle_epi8(tab, st_x86_nibbles(w[b].qs + 16 * ib));
            aq[ib] = _mm256_sign_epi8(q[ib], q[ib]);
            sv[ib] = _mm256_set1_epi16((short)(st_cpu_iq4xs_scale(&w[b], ib) - 32));
        }
        float d = st_x86_h2f(w[b].d);
        for (int j = 0; j < NR; j++) {
            const st_block_q8_K *xb = ROW(st_block_q8_K, x, xs, j) + b;
            __m256i sumi = _mm256_setzero_si256();
            for (int ib = 0; ib < 8; ib++) {
                __m256i xv = _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * ib));
                __m256i p = _mm256_maddubs_epi16(aq[ib], _mm256_sign_epi8(xv, q[ib]));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sv[ib]));
            }
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb->d), _mm256_cvtepi32_ps(sumi), acc[j]);
        }
    }
    for (int j = 0; j < NR; j++) s[j] = st_x86_hsum(acc[j]);
}
ST_X86_VEC_DOT(vd_iq4_xs)

void st_x86_kquant_kernels(st_cpu_kernels *k) {
    static const uint32_t types[] = {ST_TYPE_Q2_K, ST_TYPE_Q3_K, ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_XS};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) k->wt[types[i]].from_float = x_q8_k_from_float;
    k->wt[ST_TYPE_Q2_K].vec_dot = vd_q2_k;
    k->wt[ST_TYPE_Q2_K].vec_dot_rows = vd_q2_k_mr;
    k->wt[ST_TYPE_Q3_K].vec_dot = vd_q3_k;
    k->wt[ST_TYPE_Q3_K].vec_dot_rows = vd_q3_k_mr;
    k->wt[ST_TYPE_Q4_K].vec_dot = vd_q4_k;
#if defined(__AVX512BW__)
    k->wt[ST_TYPE_Q4_K].from_float = x_q8_k_from_float_q4k;
#endif
    k->wt[ST_TYPE_Q4_K].vec_dot_rows = vd_q4_k_mr;
    k->wt[ST_TYPE_Q5_K].vec_dot = vd_q5_k;
    k->wt[ST_TYPE_Q5_K].vec_dot_rows = vd_q5_k_mr;
    k->wt[ST_TYPE_Q6_K].vec_dot = vd_q6_k;
    k->wt[ST_TYPE_Q6_K].vec_dot_rows = vd_q6_k_mr;
    k->wt[ST_TYPE_IQ4_XS].vec_dot = vd_iq4_xs;
    k->wt[ST_TYPE_IQ4_XS].vec_dot_rows = vd_iq4_xs_mr;
}
