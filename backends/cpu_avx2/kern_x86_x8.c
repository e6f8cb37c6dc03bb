/* SPDX-License-Identifier: Apache-2.0 */
/* x86 kernels on x8 groups (8 interleaved weight rows, cpu_kernels.h): one register holds 4
 * values of each of the 8 rows, so a broadcast of 4 activation bytes meets all 8 rows at once
 * and a block's 8 row sums end in the 8 lanes of one register, scaled by the 8 row scales with
 * one multiply-add. Per 8 rows x 32 values this is about 50 instructions instead of 8 x 17 for
 * row-at-a-time dots. The numerics are the portable oracle's (kernels_x8.c) bit for bit. */
#include "cpu_avx2/kern_x86.h"

#include "cpu/cpu_half.h"

/* Blocks whose activation scale and sum are prepared at once (K up to 16384 in one pass). */
#define X8_NB_MAX 512
#define X8_Q4_0_BLOCK ST_CPU_X8_Q4_0_BLOCK

/* Scale (float) and 8 * sum of the 32 values of each Q8_0 block [b0, b0 + nb) of nr rows. */
static void q8_0_prep(const void *x, size_t xs, int nr, int64_t b0, int64_t nb, float *dx, int32_t *xsum8) {
    const __m256i ones = _mm256_set1_epi8(1);
    for (int j = 0; j < nr; j++) {
        const st_block_q8_0 *xb = (const st_block_q8_0 *)((const char *)x + (size_t)j * xs) + b0;
        for (int64_t b = 0; b < nb; b++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)xb[b].qs);
            __m256i s16 = _mm256_maddubs_epi16(ones, v);
            dx[j * X8_NB_MAX + b] = st_x86_h2f(xb[b].d);
            xsum8[j * X8_NB_MAX + b] = 8 * st_x86_hsum_i32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
        }
    }
}

/* Row sums of the 8 rows of one block against the activation block at xq (32 int8): lane r is
 * sum_i u[r][i] * x[i] with u the unsigned nibbles. */
ST_X86_INLINE __m256i q4_0x8_block_dot(const __m256i q[8], const int8_t *xq) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    __m256i acc = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        int32_t xw;
        memcpy(&xw, xq + 4 * s, 4);
        acc = _mm256_dpbusd_epi32(acc, q[s], _mm256_set1_epi32(xw));
    }
    return acc;
#else
    /* 16 products per int16 lane at most 15 * 127 each: no saturation */
    __m256i acc16 = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        int32_t xw;
        memcpy(&xw, xq + 4 * s, 4);
        acc16 = _mm256_add_epi16(acc16, _mm256_maddubs_epi16(q[s], _mm256_set1_epi32(xw)));
    }
    return _mm256_madd_epi16(acc16, _mm256_set1_epi16(1));
#endif
}

/* One group over blocks [0, nb) (prepared scales/sums dx, xsum8 of the nr rows), accumulating
 * into acc[j]: lane r is row r's running sum for activation row j. */
ST_X86_INLINE void q4_0x8_blocks(const uint8_t *grp, int64_t nb, const void *x, size_t xs, int64_t b0,
                                 const float *dx, const int32_t *xsum8, __m256 *acc, const int NR) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = grp + (size_t)b * X8_Q4_0_BLOCK;
        _mm_prefetch((const char *)blk + 1024, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + 1024 + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + 1024 + 128, _MM_HINT_T0);
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
        __m256i q[8];
        for (int t = 0; t < 4; t++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * t));
            q[2 * t] = _mm256_and_si256(v, m4);
            q[2 * t + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        }
        for (int j = 0; j < NR; j++) {
            const st_block_q8_0 *xb = (const st_block_q8_0 *)((const char *)x + (size_t)j * xs) + b0 + b;
            __m256i is = _mm256_sub_epi32(q4_0x8_block_dot(q, xb->qs), _mm256_set1_epi32(xsum8[j * X8_NB_MAX + b]));
            __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(dx[j * X8_NB_MAX + b]));
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), d, acc[j]);
        }
    }
}

ST_X86_INLINE void q4_0x8_store(const __m256 *acc, int nr, float *s, size_t ss) {
    for (int j = 0; j < nr; j++) {
        float v[8];
        _mm256_storeu_ps(v, acc[j]);
        for (int r = 0; r < 8; r++) s[(size_t)r * ss + (size_t)j] = v[r];
    }
}

ST_X86_INLINE void q4_0x8_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                                 const int NR) {
    const int64_t nb = k / 32;
    const size_t gbytes = (size_t)nb * X8_Q4_0_BLOCK;
    float dx[8 * X8_NB_MAX];
    int32_t xsum8[8 * X8_NB_MAX];
    if (nb <= X8_NB_MAX) q8_0_prep(x, xs, NR, 0, nb, dx, xsum8);
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * gbytes;
        __m256 acc[8];
        for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
        if (nb <= X8_NB_MAX) {
            q4_0x8_blocks(grp, nb, x, xs, 0, dx, xsum8, acc, NR);
        } else { /* long rows: prepare the activations piece by piece (same numerics) */
            for (int64_t b0 = 0; b0 < nb; b0 += X8_NB_MAX) {
                int64_t n = nb - b0 < X8_NB_MAX ? nb - b0 : X8_NB_MAX;
                q8_0_prep(x, xs, NR, b0, n, dx, xsum8);
                q4_0x8_blocks(grp + (size_t)b0 * X8_Q4_0_BLOCK, n, x, xs, b0, dx, xsum8, acc, NR);
            }
        }
        q4_0x8_store(acc, NR, s + (size_t)(8 * g) * ss, ss);
    }
}

static void dot8_q4_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    switch (nr) {
    case 1: q4_0x8_groups(k, wp, ng, x, xs, s, ss, 1); break;
    case 2: q4_0x8_groups(k, wp, ng, x, xs, s, ss, 2); break;
    case 3: q4_0x8_groups(k, wp, ng, x, xs, s, ss, 3); break;
    case 4: q4_0x8_groups(k, wp, ng, x, xs, s, ss, 4); break;
    default:
        /* 5..8 rows: two passes of at most 4 (registers), each row's numerics unchanged */
        q4_0x8_groups(k, wp, ng, x, xs, s, ss, 4);
        dot8_q4_0(k, wp, ng, (const char *)x + 4 * xs, xs, nr - 4, s + 4, ss);
        break;
    }
}

/* ---------------------------------------------------------------- Q8_0 x8 */

/* Row sums of the 8 rows of one Q8_0 x8 block (signed weights) against 32 activation bytes. */
ST_X86_INLINE __m256i q8_0x8_block_dot(const __m256i w[8], const __m256i aw[8], const int8_t *xq) {
    __m256i acc = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        int32_t xw;
        memcpy(&xw, xq + 4 * s, 4);
        __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(xw), w[s]); /* x * sign(w), against |w| */
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
        acc = _mm256_dpbusd_epi32(acc, aw[s], xs);
#else
        /* a pair of products reaches 2 * 128 * 127: one step per 16-bit sum, then widen */
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(aw[s], xs), _mm256_set1_epi16(1)));
#endif
    }
    return acc;
}

ST_X86_INLINE void q8_0x8_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                                 const int NR) {
    const int64_t nb = k / 32;
    const size_t gbytes = (size_t)nb * ST_CPU_X8_Q8_0_BLOCK;
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * gbytes;
        __m256 acc[4];
        for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = grp + (size_t)b * ST_CPU_X8_Q8_0_BLOCK;
            for (int o = 0; o < 5; o++) _mm_prefetch((const char *)blk + 1024 + 64 * o, _MM_HINT_T0);
            __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
            __m256i w[8], aw[8];
            for (int t = 0; t < 8; t++) {
                w[t] = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * t));
                aw[t] = _mm256_sign_epi8(w[t], w[t]);
            }
            for (int j = 0; j < NR; j++) {
                const st_block_q8_0 *xb = (const st_block_q8_0 *)((const char *)x + (size_t)j * xs) + b;
                __m256i is = q8_0x8_block_dot(w, aw, xb->qs);
                __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(st_x86_h2f(xb->d)));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), d, acc[j]);
            }
        }
        q4_0x8_store(acc, NR, s + (size_t)(8 * g) * ss, ss);
    }
}

static void dot8_q8_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    switch (nr) {
    case 1: q8_0x8_groups(k, wp, ng, x, xs, s, ss, 1); break;
    case 2: q8_0x8_groups(k, wp, ng, x, xs, s, ss, 2); break;
    case 3: q8_0x8_groups(k, wp, ng, x, xs, s, ss, 3); break;
    case 4: q8_0x8_groups(k, wp, ng, x, xs, s, ss, 4); break;
    default:
        q8_0x8_groups(k, wp, ng, x, xs, s, ss, 4);
        dot8_q8_0(k, wp, ng, (const char *)x + 4 * xs, xs, nr - 4, s + 4, ss);
        break;
    }
}

/* ---------------------------------------------------------------- Q4_K x8 */

#define X8K_NB_MAX 64 /* super-blocks prepared at once: K up to 16384 in one pass */
#define X8K_BLOCK ST_CPU_X8_Q4_K_BLOCK

#if defined(__AVX512BW__)
/* this build's Q4_K activations store the sub-blocks 0 2 1 3 4 6 5 7 (kern_x86_kquant.c) */
static const int k_q4k_pos[8] = {0, 2, 1, 3, 4, 6, 5, 7};
#define X8K_XSUB(j) (32 * k_q4k_pos[j])
#else
#define X8K_XSUB(j) (32 * (j))
#endif

/* Per super-block of each activation row: the scale, and the 8 sub-block sums as int16 in
 * sub-block order (pairs of them are the 4 dwords that meet the paired mins). */
static void q8_k_prep(const void *x, size_t xs, int nr, int64_t b0, int64_t nb, float *dx, int32_t *bsp) {
    for (int j = 0; j < nr; j++) {
        const st_block_q8_K *xb = (const st_block_q8_K *)((const char *)x + (size_t)j * xs) + b0;
        for (int64_t b = 0; b < nb; b++) {
            __m128i lo = _mm_loadu_si128((const __m128i *)xb[b].bsums);
            __m128i hi = _mm_loadu_si128((const __m128i *)(xb[b].bsums + 8));
            __m128i s = _mm_hadd_epi16(lo, hi); /* storage order */
#if defined(__AVX512BW__)
            s = _mm_shuffle_epi8(s, _mm_setr_epi8(0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15));
#endif
            dx[j * X8K_NB_MAX + b] = xb[b].d;
            _mm_storeu_si128((__m128i *)(bsp + 4 * (j * X8K_NB_MAX + b)), s);
        }
    }
}

ST_X86_INLINE void q4_kx8_blocks(const uint8_t *grp, int64_t nb, const void *x, size_t xs, int64_t b0,
                                 const float *dx, const int32_t *bsp, __m256 *acc, const int NR) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = grp + (size_t)b * X8K_BLOCK;
        __m256i sumi[4];
        for (int j = 0; j < NR; j++) sumi[j] = _mm256_setzero_si256();
        for (int sb = 0; sb < 8; sb++) {
            const uint8_t *qs = blk + 288 + 128 * sb;
            _mm_prefetch((const char *)qs + 1536, _MM_HINT_T0);
            _mm_prefetch((const char *)qs + 1536 + 64, _MM_HINT_T0);
            __m256i q[8];
            for (int t = 0; t < 4; t++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * t));
                q[2 * t] = _mm256_and_si256(v, m4);
                q[2 * t + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            }
            __m256i scv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(blk + 32 + 16 * sb)));
            for (int j = 0; j < NR; j++) {
                const int8_t *xq = ((const st_block_q8_K *)((const char *)x + (size_t)j * xs) + b0 + b)->qs + X8K_XSUB(sb);
                __m256i acc16 = _mm256_setzero_si256();
                for (int st = 0; st < 8; st++) {
                    int32_t xw;
                    memcpy(&xw, xq + 4 * st, 4);
                    acc16 = _mm256_add_epi16(acc16, _mm256_maddubs_epi16(q[st], _mm256_set1_epi32(xw)));
                }
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
                sumi[j] = _mm256_dpwssd_epi32(sumi[j], acc16, scv);
#else
                sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(acc16, scv));
#endif
            }
        }
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
        __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + 16)));
        for (int j = 0; j < NR; j++) {
            const int32_t *bp = bsp + 4 * (j * X8K_NB_MAX + b);
            __m256i ms = _mm256_setzero_si256();
            for (int jp = 0; jp < 4; jp++)
                ms = _mm256_add_epi32(ms, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(blk + 160 + 32 * jp)),
                                                            _mm256_set1_epi32(bp[jp])));
            __m256 d = _mm256_set1_ps(dx[j * X8K_NB_MAX + b]);
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[j]), _mm256_mul_ps(dw, d), acc[j]);
            acc[j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_mul_ps(dm, d), acc[j]);
        }
    }
}

ST_X86_INLINE void q4_kx8_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                                 const int NR) {
    const int64_t nb = k / ST_QK_K;
    const size_t gbytes = (size_t)nb * X8K_BLOCK;
    float dx[4 * X8K_NB_MAX];
    int32_t bsp[4 * 4 * X8K_NB_MAX];
    if (nb <= X8K_NB_MAX) q8_k_prep(x, xs, NR, 0, nb, dx, bsp);
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * gbytes;
        __m256 acc[4];
        for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
        if (nb <= X8K_NB_MAX) {
            q4_kx8_blocks(grp, nb, x, xs, 0, dx, bsp, acc, NR);
        } else {
            for (int64_t b0 = 0; b0 < nb; b0 += X8K_NB_MAX) {
                int64_t n = nb - b0 < X8K_NB_MAX ? nb - b0 : X8K_NB_MAX;
                q8_k_prep(x, xs, NR, b0, n, dx, bsp);
                q4_kx8_blocks(grp + (size_t)b0 * X8K_BLOCK, n, x, xs, b0, dx, bsp, acc, NR);
            }
        }
        q4_0x8_store(acc, NR, s + (size_t)(8 * g) * ss, ss);
    }
}

static void dot8_q4_k(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    switch (nr) {
    case 1: q4_kx8_groups(k, wp, ng, x, xs, s, ss, 1); break;
    case 2: q4_kx8_groups(k, wp, ng, x, xs, s, ss, 2); break;
    case 3: q4_kx8_groups(k, wp, ng, x, xs, s, ss, 3); break;
    case 4: q4_kx8_groups(k, wp, ng, x, xs, s, ss, 4); break;
    default:
        q4_kx8_groups(k, wp, ng, x, xs, s, ss, 4);
        dot8_q4_k(k, wp, ng, (const char *)x + 4 * xs, xs, nr - 4, s + 4, ss);
        break;
    }
}

void st_x86_x8_kernels(st_cpu_kernels *k) {
    k->wt[ST_TYPE_Q4_0].repack8 = st_cpu_repack8_q4_0;
    k->wt[ST_TYPE_Q4_0].dot8 = dot8_q4_0;
    k->wt[ST_TYPE_Q4_0].x8_block_bytes = ST_CPU_X8_Q4_0_BLOCK;
    k->wt[ST_TYPE_Q8_0].repack8 = st_cpu_repack8_q8_0;
    k->wt[ST_TYPE_Q8_0].dot8 = dot8_q8_0;
    k->wt[ST_TYPE_Q8_0].x8_block_bytes = ST_CPU_X8_Q8_0_BLOCK;
    k->wt[ST_TYPE_Q4_K].repack8 = st_cpu_repack8_q4_k;
    k->wt[ST_TYPE_Q4_K].dot8 = dot8_q4_k;
    k->wt[ST_TYPE_Q4_K].x8_block_bytes = ST_CPU_X8_Q4_K_BLOCK;
}
