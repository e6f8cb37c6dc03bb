/* SPDX-License-Identifier: Apache-2.0 */
/* Portable x8 group kernels (cpu_kernels.h): the repack of 8 weight rows into one interleaved
 * group and the group dot with the numerics every ISA version keeps. They are the oracle of the
 * SIMD versions and what an ISA without its own repack can reuse. */
#include <math.h>
#include <string.h>

#include "cpu/cpu_half.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_quant_util.h"
#include "quant/quant.h"

/* ------------------------------------------------------------------ Q4_0 x8 */

/* Bytes of one 32-value block of an x8 group: 8 scales and 8 x 16 bytes of nibbles. */
#define X8_Q4_0_BLOCK ST_CPU_X8_Q4_0_BLOCK

/* The 4 interleaved words (chunks t = 0..3 of one row) of 32 nibble-packed values whose values
 * i (low nibbles, i < 16) and i + 16 (high nibbles) share byte i of q: with words a[k] = bytes
 * 4k..4k+3, chunk t holds values 8t + e (low nibble) and 8t + 4 + e (high) in byte e. */
static inline void interleave_nibbles(const uint8_t *q, uint32_t o[4]) {
    const uint32_t m = 0x0f0f0f0fu;
    uint32_t a[4];
    memcpy(a, q, 16);
    o[0] = (a[0] & m) | ((a[1] & m) << 4);
    o[1] = (a[2] & m) | ((a[3] & m) << 4);
    o[2] = ((a[0] >> 4) & m) | (a[1] & ~m);
    o[3] = ((a[2] >> 4) & m) | (a[3] & ~m);
}

void st_cpu_repack8_q4_0(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK4_0; b++, out += X8_Q4_0_BLOCK) {
        for (int r = 0; r < 8; r++) {
            const st_block_q4_0 *src = (const st_block_q4_0 *)((const char *)w + (size_t)r * ws) + b;
            memcpy(out + 2 * r, &src->d, 2);
            uint32_t o[4];
            interleave_nibbles(src->qs, o);
            for (int t = 0; t < 4; t++) memcpy(out + 16 + 32 * t + 4 * r, &o[t], 4);
        }
    }
}

/* Exact integer dot of row r of an x8 Q4_0 block with a Q8_0 block (values - 8). */
static int q4_0x8_isum(const uint8_t *blk, int r, const st_block_q8_0 *x) {
    int s = 0;
    for (int t = 0; t < 4; t++)
        for (int e = 0; e < 4; e++) {
            uint8_t v = blk[16 + 32 * t + 4 * r + e];
            s += ((v & 0xf) - 8) * x->qs[8 * t + e] + ((v >> 4) - 8) * x->qs[8 * t + 4 + e];
        }
    return s;
}

void st_cpu_dot8_q4_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    const int64_t nb = k / ST_QK4_0;
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * (size_t)nb * X8_Q4_0_BLOCK;
        for (int r = 0; r < 8; r++)
            for (int j = 0; j < nr; j++) {
                const st_block_q8_0 *xb = (const st_block_q8_0 *)((const char *)x + (size_t)j * xs);
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = grp + (size_t)b * X8_Q4_0_BLOCK;
                    uint16_t dh;
                    memcpy(&dh, blk + 2 * r, 2);
                    float d = st_cpu_h2f(dh) * st_cpu_h2f(xb[b].d);
                    acc = fmaf((float)q4_0x8_isum(blk, r, &xb[b]), d, acc);
                }
                s[(size_t)(8 * g + r) * ss + (size_t)j] = acc;
            }
    }
}

/* ------------------------------------------------------------------ Q4_K x8 */


/* Offsets inside one x8 super-block (ST_CPU_X8_Q4_K_BLOCK bytes). */
#define X8K_D 0      /* F16 d[8] */
#define X8K_DMIN 16  /* F16 dmin[8] */
#define X8K_SC 32    /* u8 sc[8 sub][8 rows][2] */
#define X8K_MN 160   /* int16 mn[4 pairs][8 rows][2] */
#define X8K_QS 288   /* 8 sub-blocks x 128 bytes of nibbles */

/* The 4 interleaved words of sub-block 2c (low nibbles of q = qs + 32c) or 2c + 1 (high). */
static inline void interleave_sub(const uint8_t *q, int high, uint32_t o[4]) {
    const uint32_t m = 0x0f0f0f0fu;
    uint32_t a[8];
    memcpy(a, q, 32);
    for (int t = 0; t < 4; t++)
        o[t] = high ? ((a[2 * t] >> 4) & m) | (a[2 * t + 1] & ~m) : (a[2 * t] & m) | ((a[2 * t + 1] & m) << 4);
}

void st_cpu_repack8_q4_k(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK_K; b++, out += ST_CPU_X8_Q4_K_BLOCK) {
        for (int r = 0; r < 8; r++) {
            const st_block_q4_K *src = (const st_block_q4_K *)((const char *)w + (size_t)r * ws) + b;
            uint8_t sc[8], mn[8];
            st_cpu_k4_scales(src->scales, sc, mn);
            memcpy(out + X8K_D + 2 * r, &src->d, 2);
            memcpy(out + X8K_DMIN + 2 * r, &src->dmin, 2);
            for (int j = 0; j < 8; j++) {
                out[X8K_SC + 16 * j + 2 * r] = sc[j];
                out[X8K_SC + 16 * j + 2 * r + 1] = sc[j];
                int16_t m = (int16_t)mn[j];
                memcpy(out + X8K_MN + 32 * (j / 2) + 4 * r + 2 * (j % 2), &m, 2);
                uint32_t o[4];
                interleave_sub(src->qs + 32 * (j / 2), j % 2, o);
                for (int t = 0; t < 4; t++) memcpy(out + X8K_QS + 128 * j + 32 * t + 4 * r, &o[t], 4);
            }
        }
    }
}

/* isum and msum (cpu_kernels.h) of row r of an x8 Q4_K super-block with a Q8_K block. */
static void q4_kx8_sums(const uint8_t *blk, int r, const st_block_q8_K *x, int *isum, int *msum) {
    int is = 0, ms = 0;
    for (int j = 0; j < 8; j++) {
        const uint8_t *q = blk + X8K_QS + 128 * j;
        int s = 0;
        for (int t = 0; t < 4; t++)
            for (int e = 0; e < 4; e++) {
                uint8_t v = q[32 * t + 4 * r + e];
                s += (v & 0xf) * x->qs[32 * j + 8 * t + e] + (v >> 4) * x->qs[32 * j + 8 * t + 4 + e];
            }
        int16_t m;
        memcpy(&m, blk + X8K_MN + 32 * (j / 2) + 4 * r + 2 * (j % 2), 2);
        is += blk[X8K_SC + 16 * j + 2 * r] * s;
        ms += m * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
    }
    *isum = is;
    *msum = ms;
}

void st_cpu_dot8_q4_k(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    const int64_t nb = k / ST_QK_K;
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * (size_t)nb * ST_CPU_X8_Q4_K_BLOCK;
        for (int r = 0; r < 8; r++)
            for (int j = 0; j < nr; j++) {
                const st_block_q8_K *xb = (const st_block_q8_K *)((const char *)x + (size_t)j * xs);
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = grp + (size_t)b * ST_CPU_X8_Q4_K_BLOCK;
                    uint16_t dh, mh;
                    memcpy(&dh, blk + X8K_D + 2 * r, 2);
                    memcpy(&mh, blk + X8K_DMIN + 2 * r, 2);
                    int isum, msum;
                    q4_kx8_sums(blk, r, &xb[b], &isum, &msum);
                    acc = fmaf((float)isum, st_cpu_h2f(dh) * xb[b].d, acc);
                    acc = fmaf(-(float)msum, st_cpu_h2f(mh) * xb[b].d, acc);
                }
                s[(size_t)(8 * g + r) * ss + (size_t)j] = acc;
            }
    }
}

/* ------------------------------------------------------------------ Q8_0 x8 */

void st_cpu_repack8_q8_0(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK8_0; b++, out += ST_CPU_X8_Q8_0_BLOCK) {
        for (int r = 0; r < 8; r++) {
            const st_block_q8_0 *src = (const st_block_q8_0 *)((const char *)w + (size_t)r * ws) + b;
            memcpy(out + 2 * r, &src->d, 2);
            for (int s = 0; s < 8; s++) memcpy(out + 16 + 32 * s + 4 * r, src->qs + 4 * s, 4);
        }
    }
}

void st_cpu_dot8_q8_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    const int64_t nb = k / ST_QK8_0;
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * (size_t)nb * ST_CPU_X8_Q8_0_BLOCK;
        for (int r = 0; r < 8; r++)
            for (int j = 0; j < nr; j++) {
                const st_block_q8_0 *xb = (const st_block_q8_0 *)((const char *)x + (size_t)j * xs);
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = grp + (size_t)b * ST_CPU_X8_Q8_0_BLOCK;
                    uint16_t dh;
                    memcpy(&dh, blk + 2 * r, 2);
                    int isum = 0;
                    for (int st = 0; st < 8; st++)
                        for (int e = 0; e < 4; e++)
                            isum += (int8_t)blk[16 + 32 * st + 4 * r + e] * xb[b].qs[4 * st + e];
                    acc = fmaf((float)isum, st_cpu_h2f(dh) * st_cpu_h2f(xb[b].d), acc);
                }
                s[(size_t)(8 * g + r) * ss + (size_t)j] = acc;
            }
    }
}
