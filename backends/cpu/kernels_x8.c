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

/* ------------------------------------------------------------------ high bits */

/* The 4 bytes of one row in a 32-byte high-bit chunk of 32 values: byte e, bit s holds bit
 * `bit` of value 4s + e, so the value of chunk s (values 4s + e, e < 4) finds its bit at bit s
 * of its own byte. hv[i] is value i's high part. */
static inline void interleave_hbits(const uint8_t hv[32], int bit, uint8_t o[4]) {
    for (int e = 0; e < 4; e++) {
        unsigned b = 0;
        for (int s = 0; s < 8; s++) b |= (unsigned)((hv[4 * s + e] >> bit) & 1) << s;
        o[e] = (uint8_t)b;
    }
}

/* Bit of value 4s + e of row r in a high-bit chunk (as interleave_hbits stores it). */
static inline int hbit_of(const uint8_t *hb, int r, int s, int e) { return (hb[4 * r + e] >> s) & 1; }

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

/* Row r of an x8 Q4_0 block (also the first 144 bytes of Q5_0's) from its F16 d and 16 bytes
 * of nibbles. */
static void x32_put_row(uint8_t *out, int r, const st_fp16 *d, const uint8_t *qs) {
    memcpy(out + 2 * r, d, 2);
    uint32_t o[4];
    interleave_nibbles(qs, o);
    for (int t = 0; t < 4; t++) memcpy(out + 16 + 32 * t + 4 * r, &o[t], 4);
}

void st_cpu_repack8_q4_0(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK4_0; b++, out += X8_Q4_0_BLOCK)
        for (int r = 0; r < 8; r++) {
            const st_block_q4_0 *src = (const st_block_q4_0 *)((const char *)w + (size_t)r * ws) + b;
            x32_put_row(out, r, &src->d, src->qs);
        }
}

/* Exact integer dot of row r of an x8 Q4_0 (hb = 0: values - 8) or Q5_0 (values and fifth
 * bits - 16) block with a Q8_0 block. */
static int x8_isum_q4q5(const uint8_t *blk, int r, const st_block_q8_0 *x, int hb) {
    const int off = hb ? 16 : 8;
    int s = 0;
    for (int t = 0; t < 4; t++)
        for (int e = 0; e < 4; e++) {
            uint8_t v = blk[16 + 32 * t + 4 * r + e];
            int lo = v & 0xf, hi = v >> 4;
            if (hb) {
                lo |= hbit_of(blk + 144, r, 2 * t, e) << 4;
                hi |= hbit_of(blk + 144, r, 2 * t + 1, e) << 4;
            }
            s += (lo - off) * x->qs[8 * t + e] + (hi - off) * x->qs[8 * t + 4 + e];
        }
    return s;
}

static int q4_0x8_isum(const uint8_t *blk, int r, const st_block_q8_0 *x) { return x8_isum_q4q5(blk, r, x, 0); }
static int q5_0x8_isum(const uint8_t *blk, int r, const st_block_q8_0 *x) { return x8_isum_q4q5(blk, r, x, 1); }

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

/* Row r of an x8 Q4_K (qh NULL) or Q5_K super-block at out, from the row's F16 d and dmin
 * (4 bytes at dd), packed scales, nibbles and (Q5_K) fifth bits. */
static void kx8_put_row(uint8_t *out, int r, const uint8_t *dd, const uint8_t *scales, const uint8_t *qs,
                        const uint8_t *qh) {
    const size_t sub = qh ? 160 : 128; /* bytes of one sub-block's values (nibbles, high bits) */
    uint8_t sc[8], mn[8];
    st_cpu_k4_scales(scales, sc, mn);
    memcpy(out + X8K_D + 2 * r, dd, 2);
    memcpy(out + X8K_DMIN + 2 * r, dd + 2, 2);
    for (int j = 0; j < 8; j++) {
        out[X8K_SC + 16 * j + 2 * r] = sc[j];
        out[X8K_SC + 16 * j + 2 * r + 1] = sc[j];
        int16_t m = (int16_t)mn[j];
        memcpy(out + X8K_MN + 32 * (j / 2) + 4 * r + 2 * (j % 2), &m, 2);
        uint32_t o[4];
        interleave_sub(qs + 32 * (j / 2), j % 2, o);
        uint8_t *q = out + X8K_QS + sub * j;
        for (int t = 0; t < 4; t++) memcpy(q + 32 * t + 4 * r, &o[t], 4);
        if (qh) interleave_hbits(qh, j, q + 128 + 4 * r);
    }
}

void st_cpu_repack8_q4_k(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK_K; b++, out += ST_CPU_X8_Q4_K_BLOCK)
        for (int r = 0; r < 8; r++) {
            const st_block_q4_K *src = (const st_block_q4_K *)((const char *)w + (size_t)r * ws) + b;
            kx8_put_row(out, r, (const uint8_t *)&src->d, src->scales, src->qs, NULL);
        }
}

void st_cpu_repack8_q5_k(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK_K; b++, out += ST_CPU_X8_Q5_K_BLOCK)
        for (int r = 0; r < 8; r++) {
            const st_block_q5_K *src = (const st_block_q5_K *)((const char *)w + (size_t)r * ws) + b;
            kx8_put_row(out, r, (const uint8_t *)&src->d, src->scales, src->qs, src->qh);
        }
}

/* The K-quant group dot: acc = fmaf(isum, d * d_x, acc) (and the min term when the type has
 * one) per super-block, for every row of every group. */
typedef void (*k_sums_fn)(const uint8_t *blk, int r, const st_block_q8_K *x, int *isum, int *msum);

/* ------------------------------------------------------------------ Q5_0 x8 */

void st_cpu_repack8_q5_0(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK5_0; b++, out += ST_CPU_X8_Q5_0_BLOCK) {
        for (int r = 0; r < 8; r++) {
            const st_block_q5_0 *src = (const st_block_q5_0 *)((const char *)w + (size_t)r * ws) + b;
            x32_put_row(out, r, &src->d, src->qs);
            uint32_t qh;
            memcpy(&qh, src->qh, 4);
            uint8_t hv[32];
            for (int i = 0; i < 32; i++) hv[i] = (uint8_t)((qh >> i) & 1);
            interleave_hbits(hv, 0, out + 144 + 4 * r);
        }
    }
}

/* ------------------------------------------------------------------ Q5_K x8 */

/* isum and msum (cpu_kernels.h) of row r of an x8 Q4_K (hb = 0) or Q5_K super-block with a
 * Q8_K block. */
static void kx8_sums(const uint8_t *blk, int r, const st_block_q8_K *x, int *isum, int *msum, int hb) {
    const size_t sub = hb ? 160 : 128;
    int is = 0, ms = 0;
    for (int j = 0; j < 8; j++) {
        const uint8_t *q = blk + X8K_QS + sub * j;
        int s = 0;
        for (int t = 0; t < 4; t++)
            for (int e = 0; e < 4; e++) {
                uint8_t v = q[32 * t + 4 * r + e];
                int lo = v & 0xf, hi = v >> 4;
                if (hb) {
                    lo |= hbit_of(q + 128, r, 2 * t, e) << 4;
                    hi |= hbit_of(q + 128, r, 2 * t + 1, e) << 4;
                }
                s += lo * x->qs[32 * j + 8 * t + e] + hi * x->qs[32 * j + 8 * t + 4 + e];
            }
        int16_t m;
        memcpy(&m, blk + X8K_MN + 32 * (j / 2) + 4 * r + 2 * (j % 2), 2);
        is += blk[X8K_SC + 16 * j + 2 * r] * s;
        ms += m * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
    }
    *isum = is;
    *msum = ms;
}

static void q4_kx8_sums(const uint8_t *blk, int r, const st_block_q8_K *x, int *isum, int *msum) {
    kx8_sums(blk, r, x, isum, msum, 0);
}

static void q5_kx8_sums(const uint8_t *blk, int r, const st_block_q8_K *x, int *isum, int *msum) {
    kx8_sums(blk, r, x, isum, msum, 1);
}

/* ------------------------------------------------------------------ Q6_K x8 */

/* Offsets inside one Q6_K x8 super-block (ST_CPU_X8_Q6_K_BLOCK bytes). */
#define X6K_SC 16  /* int8 sc[16 groups][8 rows] */
#define X6K_Q 144  /* 16 groups of 16 values x 96 bytes: 64 of low nibbles, 32 of high bit pairs */
#define X6K_GROUP 96

/* The 256 six-bit values (0..63, stored +32) of a Q6_K super-block, in value order. */
static void q6_k_values(const st_block_q6_K *b, uint8_t v[ST_QK_K]) {
    for (int n = 0; n < 2; n++)
        for (int part = 0; part < 4; part++)
            for (int l = 0; l < 32; l++) {
                int lo = (b->ql[64 * n + 32 * (part & 1) + l] >> (4 * (part >> 1))) & 0xf;
                int hi = (b->qh[32 * n + l] >> (2 * part)) & 3;
                v[128 * n + 32 * part + l] = (uint8_t)(lo | hi << 4);
            }
}

void st_cpu_repack8_q6_k(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK_K; b++, out += ST_CPU_X8_Q6_K_BLOCK) {
        for (int r = 0; r < 8; r++) {
            const st_block_q6_K *src = (const st_block_q6_K *)((const char *)w + (size_t)r * ws) + b;
            uint8_t v[ST_QK_K];
            q6_k_values(src, v);
            memcpy(out + 2 * r, &src->d, 2);
            for (int g = 0; g < 16; g++) {
                const uint8_t *vg = v + 16 * g;
                uint8_t *q = out + X6K_Q + X6K_GROUP * g;
                out[X6K_SC + 8 * g + r] = (uint8_t)src->scales[g];
                for (int e = 0; e < 4; e++) {
                    for (int t = 0; t < 2; t++)
                        q[32 * t + 4 * r + e] = (uint8_t)((vg[8 * t + e] & 0xf) | (vg[8 * t + 4 + e] & 0xf) << 4);
                    unsigned h = 0;
                    for (int c = 0; c < 4; c++) h |= (unsigned)(vg[4 * c + e] >> 4) << (2 * c);
                    q[64 + 4 * r + e] = (uint8_t)h;
                }
            }
        }
    }
}

/* Exact integer dot of row r of an x8 Q6_K super-block with a Q8_K block:
 * sum over groups g of sc[g] * sum_i (v_i - 32) * x_i. */
static int q6_kx8_isum(const uint8_t *blk, int r, const st_block_q8_K *x) {
    int is = 0;
    for (int g = 0; g < 16; g++) {
        const uint8_t *q = blk + X6K_Q + X6K_GROUP * g;
        int s = 0;
        for (int c = 0; c < 4; c++)
            for (int e = 0; e < 4; e++) {
                int lo = (q[32 * (c / 2) + 4 * r + e] >> (4 * (c % 2))) & 0xf;
                int hi = (q[64 + 4 * r + e] >> (2 * c)) & 3;
                s += ((lo | hi << 4) - 32) * x->qs[16 * g + 4 * c + e];
            }
        is += (int8_t)blk[X6K_SC + 8 * g + r] * s;
    }
    return is;
}


static void q6_kx8_sums(const uint8_t *blk, int r, const st_block_q8_K *x, int *isum, int *msum) {
    *isum = q6_kx8_isum(blk, r, x);
    *msum = 0;
}


/* ------------------------------------------------------------------ IQ4_XS x8 */

/* Offsets inside one IQ4_XS x8 super-block (ST_CPU_X8_IQ4_XS_BLOCK bytes). */
#define XI4_SC 16 /* int8 scales - 32 as sc[8 sub-blocks][8 rows] */
#define XI4_QS 80 /* 8 sub-blocks x 128 bytes of nibbles (level indices) */

void st_cpu_repack8_iq4_xs(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK_K; b++, out += ST_CPU_X8_IQ4_XS_BLOCK)
        for (int r = 0; r < 8; r++) {
            const st_block_iq4_xs *src = (const st_block_iq4_xs *)((const char *)w + (size_t)r * ws) + b;
            memcpy(out + 2 * r, &src->d, 2);
            for (int ib = 0; ib < 8; ib++) {
                out[XI4_SC + 8 * ib + r] = (uint8_t)(int8_t)(st_cpu_iq4xs_scale(src, ib) - 32);
                uint32_t o[4];
                interleave_nibbles(src->qs + 16 * ib, o); /* the nibble order of Q4_0's block */
                for (int t = 0; t < 4; t++) memcpy(out + XI4_QS + 128 * ib + 32 * t + 4 * r, &o[t], 4);
            }
        }
}

/* isum of row r of an x8 IQ4_XS super-block with a Q8_K block: sum over sub-blocks of scale
 * times the dot of the levels with the activations. */
static void iq4_xsx8_sums(const uint8_t *blk, int r, const st_block_q8_K *x, int *isum, int *msum) {
    int is = 0;
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *q = blk + XI4_QS + 128 * ib;
        int s = 0;
        for (int t = 0; t < 4; t++)
            for (int e = 0; e < 4; e++) {
                uint8_t v = q[32 * t + 4 * r + e];
                s += st_iq4nl_values[v & 0xf] * x->qs[32 * ib + 8 * t + e] +
                     st_iq4nl_values[v >> 4] * x->qs[32 * ib + 8 * t + 4 + e];
            }
        is += (int8_t)blk[XI4_SC + 8 * ib + r] * s;
    }
    *isum = is;
    *msum = 0;
}

static void kx8_dot(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss,
                    size_t block_bytes, k_sums_fn sums, int has_min) {
    const int64_t nb = k / ST_QK_K;
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * (size_t)nb * block_bytes;
        for (int r = 0; r < 8; r++)
            for (int j = 0; j < nr; j++) {
                const st_block_q8_K *xb = (const st_block_q8_K *)((const char *)x + (size_t)j * xs);
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = grp + (size_t)b * block_bytes;
                    uint16_t dh, mh;
                    memcpy(&dh, blk + X8K_D + 2 * r, 2);
                    int isum, msum;
                    sums(blk, r, &xb[b], &isum, &msum);
                    acc = fmaf((float)isum, st_cpu_h2f(dh) * xb[b].d, acc);
                    if (has_min) {
                        memcpy(&mh, blk + X8K_DMIN + 2 * r, 2);
                        acc = fmaf(-(float)msum, st_cpu_h2f(mh) * xb[b].d, acc);
                    }
                }
                s[(size_t)(8 * g + r) * ss + (size_t)j] = acc;
            }
    }
}

void st_cpu_dot8_q4_k(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    kx8_dot(k, wp, ng, x, xs, nr, s, ss, ST_CPU_X8_Q4_K_BLOCK, q4_kx8_sums, 1);
}

void st_cpu_dot8_q5_k(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    kx8_dot(k, wp, ng, x, xs, nr, s, ss, ST_CPU_X8_Q5_K_BLOCK, q5_kx8_sums, 1);
}

void st_cpu_dot8_q6_k(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    kx8_dot(k, wp, ng, x, xs, nr, s, ss, ST_CPU_X8_Q6_K_BLOCK, q6_kx8_sums, 0);
}

void st_cpu_dot8_iq4_xs(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    kx8_dot(k, wp, ng, x, xs, nr, s, ss, ST_CPU_X8_IQ4_XS_BLOCK, iq4_xsx8_sums, 0);
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

/* Exact integer dot of row r of an x8 Q8_0 block with a Q8_0 block. */
static int q8_0x8_isum(const uint8_t *blk, int r, const st_block_q8_0 *x) {
    int s = 0;
    for (int st = 0; st < 8; st++)
        for (int e = 0; e < 4; e++) s += (int8_t)blk[16 + 32 * st + 4 * r + e] * x->qs[4 * st + e];
    return s;
}

/* ------------------------------------------------------------------ 32-value group dot */

/* The group dot of the 32-value formats (Q4_0, Q5_0, Q8_0 against Q8_0): per block,
 * acc = fmaf(isum, d_w * d_x, acc), for every row of every group. */
static void x8_dot32(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss,
                     size_t block_bytes, int (*isum)(const uint8_t *blk, int r, const st_block_q8_0 *x)) {
    const int64_t nb = k / ST_QK8_0;
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * (size_t)nb * block_bytes;
        for (int r = 0; r < 8; r++)
            for (int j = 0; j < nr; j++) {
                const st_block_q8_0 *xb = (const st_block_q8_0 *)((const char *)x + (size_t)j * xs);
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = grp + (size_t)b * block_bytes;
                    uint16_t dh;
                    memcpy(&dh, blk + 2 * r, 2);
                    float d = st_cpu_h2f(dh) * st_cpu_h2f(xb[b].d);
                    acc = fmaf((float)isum(blk, r, &xb[b]), d, acc);
                }
                s[(size_t)(8 * g + r) * ss + (size_t)j] = acc;
            }
    }
}

void st_cpu_dot8_q4_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    x8_dot32(k, wp, ng, x, xs, nr, s, ss, ST_CPU_X8_Q4_0_BLOCK, q4_0x8_isum);
}

void st_cpu_dot8_q5_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    x8_dot32(k, wp, ng, x, xs, nr, s, ss, ST_CPU_X8_Q5_0_BLOCK, q5_0x8_isum);
}

void st_cpu_dot8_q8_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    x8_dot32(k, wp, ng, x, xs, nr, s, ss, ST_CPU_X8_Q8_0_BLOCK, q8_0x8_isum);
}
