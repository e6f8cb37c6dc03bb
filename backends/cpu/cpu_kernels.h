/* SPDX-License-Identifier: Apache-2.0 */
/* The contract between the shared CPU framework (backends/cpu: thread pool, ops, argument
 * checks, work partitioning; ISA-independent C) and one instruction set's kernels
 * (backends/cpu_avx2, backends/vsx, ...). Not part of the module ABI.
 *
 * An ISA module fills an st_cpu_kernels table: it starts from st_cpu_kernels_scalar() (every
 * slot valid, portable C) and overrides the slots it has SIMD versions of. The framework only
 * ever calls through the table, never an ISA symbol.
 *
 * Weight formats. For each weight type W the table names the activation format ("dot
 * partner", wt[W].vec_type) that W's dot kernel consumes:
 *     F32, F16, BF16                -> F32  (activations stay float)
 *     Q4_0, Q5_0, Q8_0, IQ4_NL      -> Q8_0
 *     Q4_1, Q5_1                    -> Q8_1 (carries d*sum(qs) for the min term)
 *     Q2_K..Q6_K, IQ4_XS            -> Q8_K
 * An ISA may pick a different partner for a weight type as long as from_float and vec_dot of
 * that slot agree; the framework sizes activation rows with st_row_size(vec_type, K).
 *
 * Numerics rules every kernel must keep:
 *  - Batch invariance: vec_dot's result for activation row j depends only on (w, row j, k):
 *    computing it with nr = 1 or inside a group of nr > 1 rows gives the same bits. So the
 *    summation order of one row may not depend on nr.
 *  - Determinism: same inputs, same bits, whatever thread runs the kernel.
 *  - from_float of one row depends only on that row.
 *  - Kernels never fail and never allocate; the framework checks shapes before calling.
 *  - Pointers to quantized blocks may be unaligned (blocks are 18, 34, 210 ... bytes); float
 *    pointers are at least 4-byte aligned.
 */
#ifndef STRATA_CPU_KERNELS_H
#define STRATA_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most activation rows one vec_dot call may take (decode/verify: 1..8 rows per weight read). */
#define ST_CPU_MAX_NR 8

/* Quantize k floats (k a multiple of the partner's block size) into one row of the partner
 * format at y. */
typedef void (*st_cpu_from_float_fn)(const float *x, void *y, int64_t k);

/* s[j] = sum_i w[i] * x_j[i] for j < nr, where x_j = (const char *)x + j * x_stride is a row
 * of k elements in the slot's vec_type and w is one weight row of k elements.
 * 1 <= nr <= ST_CPU_MAX_NR. Batch-invariant (see above). */
typedef void (*st_cpu_vec_dot_fn)(int64_t k, const void *w, const void *x, size_t x_stride, int nr,
                                  float *s);

/* s[m * ss + j] for m < mr, j < nr: vec_dot of weight row m (at (const char *)w + m * wstride)
 * with the nr activation rows, with exactly the bits vec_dot gives (the same kernel body, looped
 * over weight rows without a call per row). May prefetch ahead of the rows it reads. */
typedef void (*st_cpu_vec_dot_rows_fn)(int64_t k, const void *w, size_t wstride, int64_t mr, const void *x,
                                       size_t x_stride, int nr, float *s, size_t ss);

/* Dequantize k elements of a weight row into floats. */
typedef void (*st_cpu_to_float_fn)(const void *w, float *y, int64_t k);

/* Interleaved layout of 8 weight rows ("x8 groups", optional per weight type). The framework
 * may repack a whole weight matrix whose row count is a multiple of 8, once, into groups of 8
 * rows: x8_block_bytes per weight block (of the type's block size) of the 8 rows, so a group of
 * rows of k elements takes (k / block size) * x8_block_bytes bytes; groups follow each other,
 * matrices (experts) follow each other.
 *
 * Q4_0 x8 (the layout this header fixes, so the scalar oracle and every ISA share it): per
 * 32-value block b, 144 bytes at b * 144 of the group: the 8 rows' F16 scales d[r] (16 bytes),
 * then 4 chunks of 32 bytes; byte 4 * r + e of chunk t holds row r's value 8t + e (unsigned,
 * 0..15) in its low nibble and value 8t + 4 + e in its high nibble.
 *
 * Q8_0 x8: per 32-value block, 272 bytes: d[8] (F16), then 8 chunks of 32 bytes; byte 4r + e of
 * chunk s is row r's value 4s + e (int8).
 *
 * Q4_K x8: per 256-value super-block, 1312 bytes: d[8] and dmin[8] (F16, 32 bytes); the 6-bit
 * scales as sc[j][r][2] (u8, each twice: 128 bytes) and the mins as mn[j][r] (int16) stored in
 * pairs of sub-blocks, [j / 2][r][j % 2] (128 bytes); then for each 32-value sub-block j the 4
 * chunks of 32 bytes of the Q4_0 x8 layout (values 32j + 8t + e and 32j + 8t + 4 + e).
 *
 * High-bit chunks (Q5_0, Q5_K): 32 bytes for 32 values of each of the 8 rows; byte 4r + e, bit
 * s holds the high bit of row r's value 4s + e, so value chunk s (values 4s + e) finds it at bit
 * s of the byte that holds its low bits' position e.
 *
 * Q5_0 x8: per 32-value block, 176 bytes: the 144 bytes of the Q4_0 x8 layout (the low 4 bits)
 * and one high-bit chunk. Values are 0..31, meaning value - 16.
 *
 * Q5_K x8: the Q4_K x8 layout (1568 bytes per super-block) with each sub-block's 128 nibble
 * bytes followed by its high-bit chunk (160 bytes per sub-block, from byte 288).
 *
 * Q6_K x8: per super-block, 1680 bytes (8 x 210, no growth): d[8] (F16, 16 bytes); the int8
 * scales of the 16-value groups as sc[g][r] (128 bytes); then for each group g of 16 values,
 * 96 bytes: two chunks of 32 bytes whose byte 4r + e holds the low 4 bits of row r's values
 * 16g + 8t + e (low nibble) and 16g + 8t + 4 + e (high nibble) for chunk t, then 32 bytes whose
 * byte 4r + e holds in bits 2c, 2c + 1 the top 2 bits of value 16g + 4c + e (c < 4). Values are
 * 0..63, meaning value - 32.
 *
 * IQ4_XS x8: per super-block, 1104 bytes (8 x 136 + 16): d[8] (F16, 16 bytes); the 6-bit
 * scales minus 32 as int8 sc[j][r] (64 bytes); then for each 32-value sub-block j the 4 chunks of
 * 32 bytes of the Q4_0 x8 layout, holding level indices (st_iq4nl_values).
 *
 * Numerics of a group dot (the same for every ISA, so the oracle is exact): for row r and
 * activation row j, acc = 0 and for each block b in order
 *     Q4_0, Q5_0, Q8_0, Q6_K, IQ4_XS: acc = fmaf((float)isum, d_w[r] * d_x[b], acc)
 *     Q4_K, Q5_K: acc = fmaf((float)isum, d[r] * d_x[b], acc); acc = fmaf(-(float)msum, dmin[r] * d_x[b], acc)
 * with isum the exact integer dot of the block (values - 8 for Q4_0, - 16 for Q5_0; sum over
 * sub-blocks of scale times the sub-block's dot for Q4_K/Q5_K, over 16-value groups of scale
 * times the group's dot of values - 32 for Q6_K, of scale times the dot of the levels for
 * IQ4_XS) and msum = sum over sub-blocks of min times
 * the activation's sub-block sum. The row's result does not depend on nr or on which group call
 * computed it (batch invariance). */
/* Repack 8 rows of k elements (row r at (const char *)w + r * ws) into one x8 group at dst. */
typedef void (*st_cpu_repack8_fn)(int64_t k, const void *w, size_t ws, void *dst);
/* s[(8 * g + r) * ss + j] for g < ng, r < 8, j < nr: the dot of row r of x8 group g (group g at
 * (const char *)wp + g * (k / block size) * x8_block_bytes) with activation row j (as vec_dot's
 * x, xs, nr). */
typedef void (*st_cpu_dot8_fn)(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s,
                               size_t ss);

typedef struct st_cpu_weight_kernels {
    uint32_t vec_type;               /* st_type of the dot partner (activation row format) */
    st_cpu_from_float_fn from_float; /* floats -> vec_type row; NULL when vec_type is F32 */
    st_cpu_vec_dot_fn vec_dot;       /* weight row . activation rows; NULL = type unsupported */
    st_cpu_to_float_fn to_float;     /* weight row -> floats (GET_ROWS); NULL = unsupported */
    /* vec_dot over a range of weight rows, bit-identical to vec_dot; NULL = the framework calls
     * vec_dot per row. An ISA that overrides vec_dot must set this with it or leave it NULL. */
    st_cpu_vec_dot_rows_fn vec_dot_rows;
    /* x8 groups (see above); NULL = the type is never repacked. */
    st_cpu_repack8_fn repack8;
    st_cpu_dot8_fn dot8;
    uint32_t x8_block_bytes; /* bytes of one weight block of 8 rows in the x8 layout */
} st_cpu_weight_kernels;

typedef struct st_cpu_kernels {
    const char *isa; /* "scalar", "avx2", "avx512", "vsx": for messages and the probe report */

    /* Indexed by st_type (weight formats). */
    st_cpu_weight_kernels wt[ST_TYPE_COUNT];

    /* ---- float vector helpers (attention, norms, element-wise ops) ---- */
    /* sum_i a[i] * b[i] */
    float (*dot_f32)(const float *a, const float *b, int64_t n);
    /* sum_i x[i]^2 */
    float (*sumsq_f32)(const float *x, int64_t n);
    /* y[i] += a * x[i] */
    void (*axpy_f32)(float *y, float a, const float *x, int64_t n);
    /* y[i] *= a */
    void (*scale_f32)(float *y, float a, int64_t n);
    /* max_i x[i]; n >= 1 */
    float (*max_f32)(const float *x, int64_t n);
    /* x[i] = expf(x[i] - m) (accurate to a few ulp), returns sum_i of the new x[i] */
    float (*exp_sum_f32)(float *x, float m, int64_t n);

    /* ---- conversions of contiguous rows (n elements) ---- */
    void (*f16_to_f32)(const uint16_t *x, float *y, int64_t n);
    void (*f32_to_f16)(const float *x, uint16_t *y, int64_t n); /* round to nearest even */
    void (*bf16_to_f32)(const uint16_t *x, float *y, int64_t n);
    void (*f32_to_bf16)(const float *x, uint16_t *y, int64_t n); /* round to nearest even */

    /* ---- appended slots (st_cpu_kernels_scalar fills them, so older ISA tables keep working) ---- */
    /* g[i] = silu(g[i]) * u[i] = g[i] / (1 + exp(-g[i])) * u[i] (SWIGLU) */
    void (*silu_mul_f32)(float *g, const float *u, int64_t n);

    /* ---- attention over a block of cached rows (appended; scalar versions always present) ----
     * Row i of the block is at (const char *)base + cells[i] * stride (cells NULL: i * stride),
     * d elements of rtype, which is ST_TYPE_F16 or ST_TYPE_F32 (the framework converts other
     * cache types to F32 first). n >= 0; the g query heads share the rows (GQA). */
    /* s[h * lds + i] = sum_e q[h * ldq + e] * row_i[e]   for h < g, i < n */
    void (*attn_scores)(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int n, int64_t d,
                        const float *q, int64_t ldq, int g, float *s, int64_t lds);
    /* o[h * ldo + e] += sum_i p[h * ldp + i] * row_i[e]   for h < g, e < d (i ascending) */
    void (*attn_accum)(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int n, int64_t d,
                       const float *p, int64_t ldp, int g, float *o, int64_t ldo);

    /* Index of the largest x[i] that is not NaN, the lowest such index on ties; -1 when n < 1
     * or every x[i] is NaN. (appended) */
    int64_t (*argmax_f32)(const float *x, int64_t n);
} st_cpu_kernels;

/* Fill every slot of *k with the portable scalar kernels (k->isa = "scalar"). An ISA calls
 * this first and then overrides slots. Never fails. */
void st_cpu_kernels_scalar(st_cpu_kernels *k);
/* The MXFP4 weight slot (kernels_fp4.c); st_cpu_kernels_scalar calls it after the Q8_0 slot. */
void st_cpu_kernels_fp4(st_cpu_kernels *k);

/* Portable versions of the x8 group slots (not in the scalar table: scalar code gains nothing
 * from repacking). The oracle of the ISA versions, and a building block for ISAs. */
void st_cpu_repack8_q4_0(int64_t k, const void *w, size_t ws, void *dst);
void st_cpu_dot8_q4_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss);
void st_cpu_repack8_q4_k(int64_t k, const void *w, size_t ws, void *dst);
void st_cpu_dot8_q4_k(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss);
void st_cpu_repack8_q8_0(int64_t k, const void *w, size_t ws, void *dst);
void st_cpu_dot8_q8_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss);
void st_cpu_repack8_q5_0(int64_t k, const void *w, size_t ws, void *dst);
void st_cpu_dot8_q5_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss);
void st_cpu_repack8_q5_k(int64_t k, const void *w, size_t ws, void *dst);
void st_cpu_dot8_q5_k(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss);
void st_cpu_repack8_q6_k(int64_t k, const void *w, size_t ws, void *dst);
void st_cpu_dot8_q6_k(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss);
void st_cpu_repack8_iq4_xs(int64_t k, const void *w, size_t ws, void *dst);
void st_cpu_dot8_iq4_xs(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss);
#define ST_CPU_X8_Q4_0_BLOCK 144
#define ST_CPU_X8_Q5_0_BLOCK 176
#define ST_CPU_X8_Q5_K_BLOCK 1568
#define ST_CPU_X8_Q6_K_BLOCK 1680
#define ST_CPU_X8_IQ4_XS_BLOCK 1104
#define ST_CPU_X8_Q8_0_BLOCK 272
#define ST_CPU_X8_Q4_K_BLOCK 1312

#ifdef __cplusplus
}
#endif
#endif
