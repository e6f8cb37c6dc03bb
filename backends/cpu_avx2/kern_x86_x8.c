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

/* The fifth bit of the values of chunk s (values 4s + e) of a high-bit chunk (cpu_kernels.h),
 * moved to bit 4 of each byte. */
ST_X86_INLINE __m256i x8_hbit(__m256i h, const int s) {
    const __m256i m = _mm256_set1_epi8(0x10);
    switch (s) {
    case 0: return _mm256_and_si256(_mm256_slli_epi16(h, 4), m);
    case 1: return _mm256_and_si256(_mm256_slli_epi16(h, 3), m);
    case 2: return _mm256_and_si256(_mm256_slli_epi16(h, 2), m);
    case 3: return _mm256_and_si256(_mm256_slli_epi16(h, 1), m);
    case 4: return _mm256_and_si256(h, m);
    case 5: return _mm256_and_si256(_mm256_srli_epi16(h, 1), m);
    case 6: return _mm256_and_si256(_mm256_srli_epi16(h, 2), m);
    default: return _mm256_and_si256(_mm256_srli_epi16(h, 3), m);
    }
}

/* The 8 value chunks (4 values of each of the 8 rows) of 32 values: the nibble chunks at q
 * (4 x 32 bytes), with the high-bit chunk at q + 128 when HB (values 0..31, else 0..15). */
ST_X86_INLINE void x8_unpack32(const uint8_t *q, __m256i u[8], const int HB) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int t = 0; t < 4; t++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * t));
        u[2 * t] = _mm256_and_si256(v, m4);
        u[2 * t + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
    if (HB) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(q + 128));
        for (int s = 0; s < 8; s++) u[s] = _mm256_or_si256(u[s], x8_hbit(h, s));
    }
}

/* Row sums of 32 unsigned values of 8 rows (u, 8 chunks) against 32 activation bytes at xq,
 * as 16-bit pair sums: lane pair r holds row r's sum. Values up to 15 (4 bits) sum all 8 chunks
 * in 16 bits (8 x 2 x 15 x 127 < 2^15); 5-bit values go in two halves, widened by the caller. */
ST_X86_INLINE __m256i x8_pairs16(const __m256i *u, const int8_t *xq, int n) {
    __m256i acc16 = _mm256_setzero_si256();
    for (int s = 0; s < n; s++) {
        int32_t xw;
        memcpy(&xw, xq + 4 * s, 4);
        acc16 = _mm256_add_epi16(acc16, _mm256_maddubs_epi16(u[s], _mm256_set1_epi32(xw)));
    }
    return acc16;
}

/* Row sums of the 8 rows of one block against the activation block at xq (32 int8): lane r is
 * sum_i u[r][i] * x[i] with u the unsigned values (4 bits, or 5 when HB). */
ST_X86_INLINE __m256i x8_block_dot32(const __m256i u[8], const int8_t *xq, const int HB) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    (void)HB;
    __m256i acc = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        int32_t xw;
        memcpy(&xw, xq + 4 * s, 4);
        acc = _mm256_dpbusd_epi32(acc, u[s], _mm256_set1_epi32(xw));
    }
    return acc;
#else
    const __m256i ones = _mm256_set1_epi16(1);
    if (!HB) return _mm256_madd_epi16(x8_pairs16(u, xq, 8), ones);
    return _mm256_add_epi32(_mm256_madd_epi16(x8_pairs16(u, xq, 4), ones),
                            _mm256_madd_epi16(x8_pairs16(u + 4, xq + 16, 4), ones));
#endif
}

/* One group of Q4_0 (HB = 0) or Q5_0 (HB = 1) over blocks [0, nb) (prepared scales/sums dx,
 * xsum8 of the nr rows), accumulating into acc[j]: lane r is row r's running sum for
 * activation row j. The values' offset (8 or 16) is taken off with the activation sums. */
ST_X86_INLINE void x8_32_blocks(const uint8_t *grp, int64_t nb, const void *x, size_t xs, int64_t b0,
                                const float *dx, const int32_t *xsum8, __m256 *acc, const int NR, const int HB) {
    const size_t bb = HB ? ST_CPU_X8_Q5_0_BLOCK : X8_Q4_0_BLOCK;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = grp + (size_t)b * bb;
        _mm_prefetch((const char *)blk + 1024, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + 1024 + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + 1024 + 128, _MM_HINT_T0);
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
        __m256i u[8];
        x8_unpack32(blk + 16, u, HB);
        for (int j = 0; j < NR; j++) {
            const st_block_q8_0 *xb = (const st_block_q8_0 *)((const char *)x + (size_t)j * xs) + b0 + b;
            __m256i off = _mm256_set1_epi32(xsum8[j * X8_NB_MAX + b] * (1 << HB));
            __m256i is = _mm256_sub_epi32(x8_block_dot32(u, xb->qs, HB), off);
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

ST_X86_INLINE void x8_32_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                                const int NR, const int HB) {
    const int64_t nb = k / 32;
    const size_t bb = HB ? ST_CPU_X8_Q5_0_BLOCK : X8_Q4_0_BLOCK;
    const size_t gbytes = (size_t)nb * bb;
    float dx[8 * X8_NB_MAX];
    int32_t xsum8[8 * X8_NB_MAX];
    if (nb <= X8_NB_MAX) q8_0_prep(x, xs, NR, 0, nb, dx, xsum8);
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * gbytes;
        __m256 acc[8];
        for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
        if (nb <= X8_NB_MAX) {
            x8_32_blocks(grp, nb, x, xs, 0, dx, xsum8, acc, NR, HB);
        } else { /* long rows: prepare the activations piece by piece (same numerics) */
            for (int64_t b0 = 0; b0 < nb; b0 += X8_NB_MAX) {
                int64_t n = nb - b0 < X8_NB_MAX ? nb - b0 : X8_NB_MAX;
                q8_0_prep(x, xs, NR, b0, n, dx, xsum8);
                x8_32_blocks(grp + (size_t)b0 * bb, n, x, xs, b0, dx, xsum8, acc, NR, HB);
            }
        }
        q4_0x8_store(acc, NR, s + (size_t)(8 * g) * ss, ss);
    }
}

/* A group dot for nr = 1..8 activation rows from a body taking NR (1..4) as a constant: 5..8
 * rows are two passes of at most 4 (registers), each row's numerics unchanged. */
#define X8_DOT8(name, body)                                                                                 \
    static void name(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) { \
        switch (nr) {                                                                                       \
        case 1: body(k, wp, ng, x, xs, s, ss, 1); break;                                        \
        case 2: body(k, wp, ng, x, xs, s, ss, 2); break;                                        \
        case 3: body(k, wp, ng, x, xs, s, ss, 3); break;                                        \
        case 4: body(k, wp, ng, x, xs, s, ss, 4); break;                                        \
        default:                                                                                            \
            body(k, wp, ng, x, xs, s, ss, 4);                                                   \
            name(k, wp, ng, (const char *)x + 4 * xs, xs, nr - 4, s + 4, ss);                               \
            break;                                                                                          \
        }                                                                                                   \
    }

ST_X86_INLINE void q4_0x8_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                                 const int NR) {
    x8_32_groups(k, wp, ng, x, xs, s, ss, NR, 0);
}
ST_X86_INLINE void q5_0x8_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                                 const int NR) {
    x8_32_groups(k, wp, ng, x, xs, s, ss, NR, 1);
}
X8_DOT8(dot8_q4_0, q4_0x8_groups)
X8_DOT8(dot8_q5_0, q5_0x8_groups)

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

X8_DOT8(dot8_q8_0, q8_0x8_groups)

/* ---------------------------------------------------------------- Q4_K x8 */

#define X8K_NB_MAX 64 /* super-blocks prepared at once: K up to 16384 in one pass */
#define X8K_BLOCK ST_CPU_X8_Q4_K_BLOCK

#if defined(__AVX512BW__)
/* this build's Q4_K activations store the sub-blocks 0 2 1 3 4 6 5 7 (kern_x86_kquant.c);
 * Q5_K's (HB) keep the standard order */
static const int k_q4k_pos[8] = {0, 2, 1, 3, 4, 6, 5, 7};
#define X8K_XSUB(j, HB) (32 * ((HB) ? (j) : k_q4k_pos[j]))
#define X8K_PERMUTED 1
#else
#define X8K_XSUB(j, HB) (32 * (j))
#define X8K_PERMUTED 0
#endif

/* Per super-block of each activation row: the scale, and the 8 sub-block sums as int16 in
 * sub-block order (pairs of them are the 4 dwords that meet the paired mins). */
static void q8_k_prep(const void *x, size_t xs, int nr, int64_t b0, int64_t nb, float *dx, int32_t *bsp, int permuted) {
    for (int j = 0; j < nr; j++) {
        const st_block_q8_K *xb = (const st_block_q8_K *)((const char *)x + (size_t)j * xs) + b0;
        for (int64_t b = 0; b < nb; b++) {
            __m128i lo = _mm_loadu_si128((const __m128i *)xb[b].bsums);
            __m128i hi = _mm_loadu_si128((const __m128i *)(xb[b].bsums + 8));
            __m128i s = _mm_hadd_epi16(lo, hi); /* storage order */
            if (permuted) s = _mm_shuffle_epi8(s, _mm_setr_epi8(0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15));
            dx[j * X8K_NB_MAX + b] = xb[b].d;
            _mm_storeu_si128((__m128i *)(bsp + 4 * (j * X8K_NB_MAX + b)), s);
        }
    }
}

/* One group of Q4_K (HB = 0) or Q5_K (HB = 1) over super-blocks [0, nb) (prepared scales and
 * sub-block sums dx, bsp), accumulating into acc[j] (lane r: row r, activation row j). */
ST_X86_INLINE void kx8_blocks(const uint8_t *grp, int64_t nb, const void *x, size_t xs, int64_t b0,
                              const float *dx, const int32_t *bsp, __m256 *acc, const int NR, const int HB) {
    const size_t bb = HB ? ST_CPU_X8_Q5_K_BLOCK : X8K_BLOCK, sub = HB ? 160 : 128;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = grp + (size_t)b * bb;
        __m256i sumi[4];
        for (int j = 0; j < NR; j++) sumi[j] = _mm256_setzero_si256();
        for (int sb = 0; sb < 8; sb++) {
            const uint8_t *qs = blk + 288 + sub * sb;
            _mm_prefetch((const char *)qs + 1536, _MM_HINT_T0);
            _mm_prefetch((const char *)qs + 1536 + 64, _MM_HINT_T0);
            if (HB) _mm_prefetch((const char *)qs + 1536 + 128, _MM_HINT_T0);
            __m256i q[8];
            x8_unpack32(qs, q, HB);
            __m256i scv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(blk + 32 + 16 * sb)));
            for (int j = 0; j < NR; j++) {
                const int8_t *xq = ((const st_block_q8_K *)((const char *)x + (size_t)j * xs) + b0 + b)->qs + X8K_XSUB(sb, HB);
                /* 5-bit values: two halves of 4 chunks each stay inside 16 bits */
                __m256i a0 = x8_pairs16(q, xq, HB ? 4 : 8);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
                sumi[j] = _mm256_dpwssd_epi32(sumi[j], a0, scv);
                if (HB) sumi[j] = _mm256_dpwssd_epi32(sumi[j], x8_pairs16(q + 4, xq + 16, 4), scv);
#else
                sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(a0, scv));
                if (HB) sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(x8_pairs16(q + 4, xq + 16, 4), scv));
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

ST_X86_INLINE void kx8_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                              const int NR, const int HB) {
    const int64_t nb = k / ST_QK_K;
    const size_t bb = HB ? ST_CPU_X8_Q5_K_BLOCK : X8K_BLOCK;
    const size_t gbytes = (size_t)nb * bb;
    float dx[4 * X8K_NB_MAX];
    int32_t bsp[4 * 4 * X8K_NB_MAX];
    if (nb <= X8K_NB_MAX) q8_k_prep(x, xs, NR, 0, nb, dx, bsp, X8K_PERMUTED && !HB);
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * gbytes;
        __m256 acc[4];
        for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();
        if (nb <= X8K_NB_MAX) {
            kx8_blocks(grp, nb, x, xs, 0, dx, bsp, acc, NR, HB);
        } else {
            for (int64_t b0 = 0; b0 < nb; b0 += X8K_NB_MAX) {
                int64_t n = nb - b0 < X8K_NB_MAX ? nb - b0 : X8K_NB_MAX;
                q8_k_prep(x, xs, NR, b0, n, dx, bsp, X8K_PERMUTED && !HB);
                kx8_blocks(grp + (size_t)b0 * bb, n, x, xs, b0, dx, bsp, acc, NR, HB);
            }
        }
        q4_0x8_store(acc, NR, s + (size_t)(8 * g) * ss, ss);
    }
}

ST_X86_INLINE void q4_kx8_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                                 const int NR) {
    kx8_groups(k, wp, ng, x, xs, s, ss, NR, 0);
}
ST_X86_INLINE void q5_kx8_groups(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss,
                                 const int NR) {
    kx8_groups(k, wp, ng, x, xs, s, ss, NR, 1);
}
X8_DOT8(dot8_q4_k, q4_kx8_groups)
X8_DOT8(dot8_q5_k, q5_kx8_groups)

/* ---------------------------------------------------------------- Q6_K x8 */

#define X6K_BLOCK ST_CPU_X8_Q6_K_BLOCK

/* The 4 value chunks (values 4c + e of the 8 rows, 0..63) of the 16-value group at q: two
 * nibble chunks, then the chunk of 2-bit high parts (bits 2c, 2c + 1 of each byte). */
ST_X86_INLINE void q6_kx8_unpack(const uint8_t *q, __m256i u[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    __m256i l0 = _mm256_loadu_si256((const __m256i *)q);
    __m256i l1 = _mm256_loadu_si256((const __m256i *)(q + 32));
    __m256i h = _mm256_loadu_si256((const __m256i *)(q + 64));
    u[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
    u[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
    u[2] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(h, m30));
    u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}

/* int8 scales of 8 rows (8 bytes at p and at p2) as int16 pairs: lane pair r = (p[r], p2[r]). */
ST_X86_INLINE __m256i q6_kx8_scale_pairs(const uint8_t *p, const uint8_t *p2) {
    return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)p), _mm_loadl_epi64((const __m128i *)p2)));
}

/* Row sums of one group: sum over the 4 chunks of u * x, each pair of chunks in 16 bits
 * (2 x 2 x 63 x 128 < 2^15), times the group scales scv (int16 pairs), into sumi. */
ST_X86_INLINE __m256i q6_kx8_group_dot(__m256i sumi, const __m256i u[4], const int8_t *xq, __m256i scv) {
    __m256i p01 = x8_pairs16(u, xq, 2), p23 = x8_pairs16(u + 2, xq + 8, 2);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(_mm256_dpwssd_epi32(sumi, p01, scv), p23, scv);
#else
    return _mm256_add_epi32(sumi, _mm256_add_epi32(_mm256_madd_epi16(p01, scv), _mm256_madd_epi16(p23, scv)));
#endif
}

/* One group of rows over super-blocks [0, nb), accumulating into acc[j]. The +32 of the stored
 * values comes off per pair of groups: 32 * (sc[g] * bsum[g] + sc[g + 1] * bsum[g + 1]). */
ST_X86_INLINE void q6_kx8_blocks(const uint8_t *grp, int64_t nb, const void *x, size_t xs, __m256 *acc, const int NR) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = grp + (size_t)b * X6K_BLOCK;
        const st_block_q8_K *xb[4];
        __m256i sumi[4];
        for (int j = 0; j < NR; j++) {
            xb[j] = (const st_block_q8_K *)((const char *)x + (size_t)j * xs) + b;
            sumi[j] = _mm256_setzero_si256();
        }
        for (int g = 0; g < 16; g++) {
            const uint8_t *q = blk + 144 + 96 * g;
            _mm_prefetch((const char *)q + 2048, _MM_HINT_T0);
            _mm_prefetch((const char *)q + 2048 + 64, _MM_HINT_T0);
            __m256i u[4];
            q6_kx8_unpack(q, u);
            const uint8_t *sc = blk + 16 + 8 * g;
            __m256i scv = q6_kx8_scale_pairs(sc, sc);
            for (int j = 0; j < NR; j++) sumi[j] = q6_kx8_group_dot(sumi[j], u, xb[j]->qs + 16 * g, scv);
            if (g & 1) {
                __m256i scp = q6_kx8_scale_pairs(sc - 8, sc);
                for (int j = 0; j < NR; j++) {
                    int32_t bs;
                    memcpy(&bs, xb[j]->bsums + g - 1, 4);
                    __m256i off = _mm256_madd_epi16(scp, _mm256_set1_epi32(bs));
                    sumi[j] = _mm256_sub_epi32(sumi[j], _mm256_slli_epi32(off, 5));
                }
            }
        }
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
        for (int j = 0; j < NR; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[j]), _mm256_mul_ps(dw, _mm256_set1_ps(xb[j]->d)), acc[j]);
    }
}

/* name(k, wp, ng, x, xs, s, ss, NR): every group of a K-quant type whose activations need no
 * preparation, from its super-block loop blocks(grp, nb, x, xs, acc, NR). */
#define X8_PLAIN_GROUPS(name, blocks, block_bytes)                                                        \
    ST_X86_INLINE void name(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, float *s, size_t ss, \
                            const int NR) {                                                               \
        const int64_t nb = k / ST_QK_K;                                                                   \
        for (int64_t g = 0; g < ng; g++) {                                                                \
            __m256 acc[4];                                                                                \
            for (int j = 0; j < NR; j++) acc[j] = _mm256_setzero_ps();                                    \
            blocks((const uint8_t *)wp + (size_t)g * (size_t)nb * (block_bytes), nb, x, xs, acc, NR);     \
            q4_0x8_store(acc, NR, s + (size_t)(8 * g) * ss, ss);                                          \
        }                                                                                                 \
    }

X8_PLAIN_GROUPS(q6_kx8_groups, q6_kx8_blocks, X6K_BLOCK)
X8_DOT8(dot8_q6_k, q6_kx8_groups)

/* ---------------------------------------------------------------- IQ4_XS x8 */

#define XI4_BLOCK ST_CPU_X8_IQ4_XS_BLOCK

/* Row sums of one sub-block's 8 chunks of signed levels v (|v| in a) against 32 activation
 * bytes at xq: lane r is row r's dot. Products of two levels reach 2 x 127 x 127, so each
 * chunk's 16-bit pair sums are widened at once. */
ST_X86_INLINE __m256i iq4x8_sub_dot(const __m256i v[8], const __m256i a[8], const int8_t *xq) {
    __m256i acc = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        int32_t xw;
        memcpy(&xw, xq + 4 * s, 4);
        __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(xw), v[s]); /* x * sign(v), against |v| */
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
        acc = _mm256_dpbusd_epi32(acc, a[s], xs);
#else
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a[s], xs), _mm256_set1_epi16(1)));
#endif
    }
    return acc;
}

ST_X86_INLINE void iq4x8_blocks(const uint8_t *grp, int64_t nb, const void *x, size_t xs, __m256 *acc, const int NR) {
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)st_iq4nl_values));
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = grp + (size_t)b * XI4_BLOCK;
        const st_block_q8_K *xb[4];
        __m256i sumi[4];
        for (int j = 0; j < NR; j++) {
            xb[j] = (const st_block_q8_K *)((const char *)x + (size_t)j * xs) + b;
            sumi[j] = _mm256_setzero_si256();
        }
        for (int sb = 0; sb < 8; sb++) {
            const uint8_t *q = blk + 80 + 128 * sb;
            _mm_prefetch((const char *)q + 1536, _MM_HINT_T0);
            _mm_prefetch((const char *)q + 1536 + 64, _MM_HINT_T0);
            __m256i v[8], a[8];
            x8_unpack32(q, v, 0);
            for (int s = 0; s < 8; s++) {
                v[s] = _mm256_shuffle_epi8(tab, v[s]);
                a[s] = _mm256_abs_epi8(v[s]);
            }
            __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 16 + 8 * sb)));
            for (int j = 0; j < NR; j++)
                sumi[j] = _mm256_add_epi32(sumi[j], _mm256_mullo_epi32(iq4x8_sub_dot(v, a, xb[j]->qs + 32 * sb), sc));
        }
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
        for (int j = 0; j < NR; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[j]), _mm256_mul_ps(dw, _mm256_set1_ps(xb[j]->d)), acc[j]);
    }
}

X8_PLAIN_GROUPS(iq4x8_groups, iq4x8_blocks, XI4_BLOCK)
X8_DOT8(dot8_iq4_xs, iq4x8_groups)

static void set_x8(st_cpu_kernels *k, uint32_t t, st_cpu_repack8_fn repack, st_cpu_dot8_fn dot, uint32_t block_bytes) {
    k->wt[t].repack8 = repack;
    k->wt[t].dot8 = dot;
    k->wt[t].x8_block_bytes = block_bytes;
}

void st_x86_x8_kernels(st_cpu_kernels *k) {
    set_x8(k, ST_TYPE_Q4_0, st_cpu_repack8_q4_0, dot8_q4_0, ST_CPU_X8_Q4_0_BLOCK);
    set_x8(k, ST_TYPE_Q5_0, st_cpu_repack8_q5_0, dot8_q5_0, ST_CPU_X8_Q5_0_BLOCK);
    set_x8(k, ST_TYPE_Q8_0, st_cpu_repack8_q8_0, dot8_q8_0, ST_CPU_X8_Q8_0_BLOCK);
    set_x8(k, ST_TYPE_Q4_K, st_cpu_repack8_q4_k, dot8_q4_k, ST_CPU_X8_Q4_K_BLOCK);
    set_x8(k, ST_TYPE_Q5_K, st_cpu_repack8_q5_k, dot8_q5_k, ST_CPU_X8_Q5_K_BLOCK);
    set_x8(k, ST_TYPE_Q6_K, st_cpu_repack8_q6_k, dot8_q6_k, ST_CPU_X8_Q6_K_BLOCK);
    set_x8(k, ST_TYPE_IQ4_XS, st_cpu_repack8_iq4_xs, dot8_iq4_xs, ST_CPU_X8_IQ4_XS_BLOCK);
}
