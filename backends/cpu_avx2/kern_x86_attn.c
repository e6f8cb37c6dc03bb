/* SPDX-License-Identifier: Apache-2.0 */
/* x86 kernels of decode/prefill attention over a block of cached K or V rows (F16 or F32):
 * scores of the g query heads of a GQA group against each K row, and the probability-weighted
 * sum of V rows. K rows are converted to f32 once per block of 8 and dotted with every head;
 * 8 dot products are reduced together. V rows are converted once per column slice and
 * accumulated into up to 4 heads held in registers. */
#include "cpu_avx2/kern_x86.h"

#include "cpu/cpu_half.h"

/* Widest head dimension the converted-row buffer of the score kernel holds; wider rows take
 * the portable path. */
#define ST_ATTN_MAX_D 512

ST_X86_INLINE const char *attn_row(const void *base, int64_t stride, const int32_t *cells, int i) {
    return (const char *)base + (cells ? (int64_t)cells[i] : (int64_t)i) * stride;
}

ST_X86_INLINE float attn_elem(uint32_t rtype, const char *r, int64_t e) {
    return rtype == ST_TYPE_F16 ? st_x86_h2f(((const uint16_t *)r)[e]) : ((const float *)r)[e];
}

/* Lane j of the result = sum of the 8 lanes of a[j]. */
ST_X86_INLINE __m256 reduce8(const __m256 a[8]) {
    __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
    __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
    __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

#if defined(__AVX512F__)
/* 8 sums of 16 lanes, through reduce8 of the folded halves. */
ST_X86_INLINE __m256 reduce8x16(const __m512 a[8]) {
    __m256 h[8];
    for (int j = 0; j < 8; j++) h[j] = _mm256_add_ps(_mm512_castps512_ps256(a[j]), _mm512_extractf32x8_ps(a[j], 1));
    return reduce8(h);
}

/* Scores of heads h0, h0 + 1 (HN = 1 or 2) against 8 f32 rows, 16 lanes wide; d16 = d rounded
 * down to 16, the rest done by the caller. */
ST_X86_INLINE void scores8_512(const float *const rp[8], int64_t d16, const float *q, int64_t ldq, __m256 *r,
                               const int HN) {
    __m512 acc[2][8];
    for (int h = 0; h < HN; h++)
        for (int j = 0; j < 8; j++) acc[h][j] = _mm512_setzero_ps();
    for (int64_t e = 0; e < d16; e += 16) {
        __m512 qv[2];
        for (int h = 0; h < HN; h++) qv[h] = _mm512_loadu_ps(q + h * ldq + e);
        for (int j = 0; j < 8; j++) {
            __m512 kv = _mm512_loadu_ps(rp[j] + e);
            for (int h = 0; h < HN; h++) acc[h][j] = _mm512_fmadd_ps(kv, qv[h], acc[h][j]);
        }
    }
    for (int h = 0; h < HN; h++) r[h] = reduce8x16(acc[h]);
}
#endif

/* Scores of g heads against 8 f32 rows rp[0..7]; the first nr are stored. */
ST_X86_INLINE void scores8(const float *const rp[8], int nr, int64_t d, const float *q, int64_t ldq, int g, float *s,
                           int64_t lds) {
#if defined(__AVX512F__)
    int64_t d16 = d & ~(int64_t)15;
    for (int h = 0; h < g; h += 2) {
        __m256 r[2];
        int hn = g - h < 2 ? 1 : 2;
        if (hn == 2) scores8_512(rp, d16, q + h * ldq, ldq, r, 2);
        else scores8_512(rp, d16, q + h * ldq, ldq, r, 1);
        for (int k = 0; k < hn; k++) {
            const float *qh = q + (h + k) * ldq;
            float t[8];
            _mm256_storeu_ps(t, r[k]);
            for (int j = 0; j < nr; j++) {
                float v = t[j];
                for (int64_t e = d16; e < d; e++) v += qh[e] * rp[j][e];
                s[(h + k) * lds + j] = v;
            }
        }
    }
#else
    int64_t d8 = d & ~(int64_t)7;
    for (int h = 0; h < g; h++) {
        const float *qh = q + h * ldq;
        __m256 acc[8];
        for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
        for (int64_t e = 0; e < d8; e += 8) {
            __m256 qv = _mm256_loadu_ps(qh + e);
            for (int j = 0; j < 8; j++) acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(rp[j] + e), qv, acc[j]);
        }
        float r[8];
        _mm256_storeu_ps(r, reduce8(acc));
        for (int j = 0; j < nr; j++) {
            float t = r[j];
            for (int64_t e = d8; e < d; e++) t += qh[e] * rp[j][e];
            s[h * lds + j] = t;
        }
    }
#endif
}

static void x_attn_scores(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int n, int64_t d,
                          const float *q, int64_t ldq, int g, float *s, int64_t lds) {
    if (rtype == ST_TYPE_F16 && d > ST_ATTN_MAX_D) { /* rare: no buffer for the converted rows */
        for (int h = 0; h < g; h++)
            for (int i = 0; i < n; i++) {
                const char *r = attn_row(base, stride, cells, i);
                float t = 0.0f;
                for (int64_t e = 0; e < d; e++) t += q[h * ldq + e] * attn_elem(rtype, r, e);
                s[h * lds + i] = t;
            }
        return;
    }
    float kb[8 * ST_ATTN_MAX_D] __attribute__((aligned(32)));
    int64_t d8 = d & ~(int64_t)7;
    for (int i0 = 0; i0 < n; i0 += 8) {
        int nr = n - i0 < 8 ? n - i0 : 8;
        const float *rp[8];
        for (int j = 0; j < 8; j++) {
            const char *r = attn_row(base, stride, cells, i0 + (j < nr ? j : nr - 1));
            if (rtype == ST_TYPE_F16) {
                float *dst = kb + j * d;
                const uint16_t *src = (const uint16_t *)r;
                if (j < nr) {
                    int64_t e = 0;
                    for (; e < d8; e += 8)
                        _mm256_storeu_ps(dst + e, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + e))));
                    for (; e < d; e++) dst[e] = st_x86_h2f(src[e]);
                    rp[j] = dst;
                } else {
                    rp[j] = rp[nr - 1];
                }
            } else {
                rp[j] = (const float *)r;
            }
        }
        scores8(rp, nr, d, q, ldq, g, s + i0, lds);
    }
}

/* o[h][e0 .. e0 + 8W) += sum_i p[h][i] * row_i[e0 ..] for HN heads starting at q-head h0. */
ST_X86_INLINE void accum_cols(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int n,
                              int64_t e0, const float *p, int64_t ldp, float *o, int64_t ldo, const int HN,
                              const int W) {
    __m256 acc[4][4];
    for (int h = 0; h < HN; h++)
        for (int w = 0; w < W; w++) acc[h][w] = _mm256_loadu_ps(o + h * ldo + e0 + 8 * w);
    for (int i = 0; i < n; i++) {
        const char *r = attn_row(base, stride, cells, i);
        __m256 v[4];
        if (rtype == ST_TYPE_F16) {
            const uint16_t *src = (const uint16_t *)r + e0;
            for (int w = 0; w < W; w++) v[w] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 8 * w)));
        } else {
            const float *src = (const float *)r + e0;
            for (int w = 0; w < W; w++) v[w] = _mm256_loadu_ps(src + 8 * w);
        }
        for (int h = 0; h < HN; h++) {
            __m256 pb = _mm256_broadcast_ss(p + h * ldp + i);
            for (int w = 0; w < W; w++) acc[h][w] = _mm256_fmadd_ps(pb, v[w], acc[h][w]);
        }
    }
    for (int h = 0; h < HN; h++)
        for (int w = 0; w < W; w++) _mm256_storeu_ps(o + h * ldo + e0 + 8 * w, acc[h][w]);
}

#if defined(__AVX512F__)
/* o[h][e0 .. e0 + 16W) += sum_i p[h][i] * row_i[e0 ..] for HN heads, 16 lanes wide. */
ST_X86_INLINE void accum_cols16(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int n,
                                int64_t e0, const float *p, int64_t ldp, float *o, int64_t ldo, const int HN,
                                const int W) {
    __m512 acc[4][4];
    for (int h = 0; h < HN; h++)
        for (int w = 0; w < W; w++) acc[h][w] = _mm512_loadu_ps(o + h * ldo + e0 + 16 * w);
    for (int i = 0; i < n; i++) {
        const char *r = attn_row(base, stride, cells, i);
        __m512 v[4];
        if (rtype == ST_TYPE_F16) {
            const uint16_t *src = (const uint16_t *)r + e0;
            for (int w = 0; w < W; w++) v[w] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + 16 * w)));
        } else {
            const float *src = (const float *)r + e0;
            for (int w = 0; w < W; w++) v[w] = _mm512_loadu_ps(src + 16 * w);
        }
        for (int h = 0; h < HN; h++) {
            __m512 pb = _mm512_set1_ps(p[h * ldp + i]);
            for (int w = 0; w < W; w++) acc[h][w] = _mm512_fmadd_ps(pb, v[w], acc[h][w]);
        }
    }
    for (int h = 0; h < HN; h++)
        for (int w = 0; w < W; w++) _mm512_storeu_ps(o + h * ldo + e0 + 16 * w, acc[h][w]);
}
#endif

/* Column slices of 8 * ST_ATTN_W floats: with AVX-512VL's 32 vector registers 4 heads x 4
 * slices stay in registers, with AVX2's 16 registers 4 heads x 2. */
#if defined(__AVX512VL__)
#define ST_ATTN_W 4
#else
#define ST_ATTN_W 2
#endif

static void x_attn_accum(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int n, int64_t d,
                         const float *p, int64_t ldp, int g, float *o, int64_t ldo) {
    int64_t d8 = d & ~(int64_t)7;
    int h0 = 0;
    for (; h0 < g; h0 += 4) {
        const float *ph = p + h0 * ldp;
        float *oh = o + h0 * ldo;
        int hn = g - h0 < 4 ? g - h0 : 4;
        int64_t e0 = 0;
#if defined(__AVX512F__)
        for (; e0 + 64 <= d8; e0 += 64) { /* 4 heads x 4 registers of 16 */
            switch (hn) {
            case 4: accum_cols16(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 4, 4); break;
            case 3: accum_cols16(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 3, 4); break;
            case 2: accum_cols16(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 2, 4); break;
            default: accum_cols16(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 1, 4); break;
            }
        }
#endif
        for (; e0 + 8 * ST_ATTN_W <= d8; e0 += 8 * ST_ATTN_W) {
            switch (hn) {
            case 4: accum_cols(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 4, ST_ATTN_W); break;
            case 3: accum_cols(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 3, ST_ATTN_W); break;
            case 2: accum_cols(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 2, ST_ATTN_W); break;
            default: accum_cols(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 1, ST_ATTN_W); break;
            }
        }
        for (; e0 < d8; e0 += 8) {
            switch (hn) {
            case 4: accum_cols(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 4, 1); break;
            case 3: accum_cols(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 3, 1); break;
            case 2: accum_cols(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 2, 1); break;
            default: accum_cols(rtype, base, stride, cells, n, e0, ph, ldp, oh, ldo, 1, 1); break;
            }
        }
        for (; e0 < d; e0++) /* tail columns of a head dimension that is not a multiple of 8 */
            for (int i = 0; i < n; i++) {
                float v = attn_elem(rtype, attn_row(base, stride, cells, i), e0);
                for (int h = 0; h < hn; h++) oh[h * ldo + e0] += ph[h * ldp + i] * v;
            }
    }
}

void st_x86_attn_kernels(st_cpu_kernels *k) {
    k->attn_scores = x_attn_scores;
    k->attn_accum = x_attn_accum;
}
