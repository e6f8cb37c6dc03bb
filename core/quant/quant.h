/* SPDX-License-Identifier: Apache-2.0 */
/* Block formats of GGUF weight types and their scalar reference (dequantize, quantize).
 * Leaf library (st_quant): no dependencies beyond libc/libm; linked into the core and,
 * compiled position-independent, into backend modules. All functions are thread-safe. */
#ifndef STRATA_QUANT_H
#define STRATA_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ST_QK4_0 32
#define ST_QK4_1 32
#define ST_QK5_0 32
#define ST_QK5_1 32
#define ST_QK8_0 32
#define ST_QK8_1 32
#define ST_QK4_NL 32
#define ST_QK_MXFP4 32
#define ST_QK_K 256
#define ST_K_SCALE_SIZE 12

typedef uint16_t st_fp16; /* IEEE half, raw bits */
typedef uint16_t st_bf16; /* bfloat16, raw bits */

/* Block layouts: byte-exact with the GGUF file format. */
typedef struct { st_fp16 d; uint8_t qs[ST_QK4_0 / 2]; } st_block_q4_0;              /* 18 B */
typedef struct { st_fp16 d, m; uint8_t qs[ST_QK4_1 / 2]; } st_block_q4_1;           /* 20 B */
typedef struct { st_fp16 d; uint8_t qh[4]; uint8_t qs[ST_QK5_0 / 2]; } st_block_q5_0; /* 22 B */
typedef struct { st_fp16 d, m; uint8_t qh[4]; uint8_t qs[ST_QK5_1 / 2]; } st_block_q5_1; /* 24 B */
typedef struct { st_fp16 d; int8_t qs[ST_QK8_0]; } st_block_q8_0;                   /* 34 B */
typedef struct { st_fp16 d, s; int8_t qs[ST_QK8_1]; } st_block_q8_1;                /* 36 B: s = d*sum(qs) */
typedef struct { st_fp16 d; uint8_t qs[ST_QK4_NL / 2]; } st_block_iq4_nl;           /* 18 B */
/* MXFP4 (OCP microscaling FP4): value j = level(qs nibble) * 2^(e - 128), levels E2M1 doubled;
 * element j < 16 in the low nibble of qs[j], element j + 16 in its high nibble. */
typedef struct { uint8_t e; uint8_t qs[ST_QK_MXFP4 / 2]; } st_block_mxfp4;           /* 17 B */

typedef struct { /* 84 B: 2.625 bpw */
    uint8_t scales[ST_QK_K / 16]; /* 4-bit scale (low) and min (high) per 16 */
    uint8_t qs[ST_QK_K / 4];      /* 2-bit quants */
    st_fp16 d, dmin;
} st_block_q2_K;
typedef struct { /* 110 B: 3.4375 bpw */
    uint8_t hmask[ST_QK_K / 8]; /* high bit */
    uint8_t qs[ST_QK_K / 4];    /* low 2 bits */
    uint8_t scales[12];         /* 6-bit scales, packed */
    st_fp16 d;
} st_block_q3_K;
typedef struct { /* 144 B: 4.5 bpw */
    st_fp16 d, dmin;
    uint8_t scales[ST_K_SCALE_SIZE]; /* 8 x (6-bit scale, 6-bit min), packed */
    uint8_t qs[ST_QK_K / 2];
} st_block_q4_K;
typedef struct { /* 176 B: 5.5 bpw */
    st_fp16 d, dmin;
    uint8_t scales[ST_K_SCALE_SIZE];
    uint8_t qh[ST_QK_K / 8];
    uint8_t qs[ST_QK_K / 2];
} st_block_q5_K;
typedef struct { /* 210 B: 6.5625 bpw */
    uint8_t ql[ST_QK_K / 2];
    uint8_t qh[ST_QK_K / 4];
    int8_t scales[ST_QK_K / 16];
    st_fp16 d;
} st_block_q6_K;
typedef struct { /* 292 B: activation format of K-quant dot products */
    float d;
    int8_t qs[ST_QK_K];
    int16_t bsums[ST_QK_K / 16]; /* sum of each 16 quants */
} st_block_q8_K;
typedef struct { /* 136 B: 4.25 bpw */
    st_fp16 d;
    uint16_t scales_h;
    uint8_t scales_l[ST_QK_K / 64];
    uint8_t qs[ST_QK_K / 2];
} st_block_iq4_xs;

/* The 16 non-linear levels of IQ4_NL / IQ4_XS. */
extern const int8_t st_iq4nl_values[16];
/* The 16 MXFP4 levels: E2M1 values times 2 (the scale is halved to match). */
extern const int8_t st_mxfp4_values[16];
/* An E8M0 MXFP4 scale as the float that multiplies the doubled levels: 2^(e - 128). */
float st_e8m0_half_to_f32(uint8_t e);

typedef struct st_type_info {
    const char *name;     /* "Q4_K" */
    int32_t block_size;   /* elements per block (1 for plain types) */
    int32_t type_size;    /* bytes per block */
    int32_t is_quantized; /* block-quantized weight format */
} st_type_info;

/* Info for a type id; NULL for ids that are not a known type. */
const st_type_info *st_type_get(uint32_t type);
/* Name or "?" for unknown ids. Static storage. */
const char *st_type_name(uint32_t type);
/* Parse a name ("q4_k", "Q4_K", "f16"); returns -1 if unknown. */
int st_type_from_name(const char *name);
/* Bytes of a row of n elements; 0 when n is not a multiple of the block size or type unknown. */
size_t st_row_size(uint32_t type, int64_t n);

/* Exact widening of IEEE half / bfloat16 bits to float, and narrowing with round to nearest
 * even (overflow to inf, subnormals kept, NaN stays a quiet NaN). Pure functions. */
float st_fp16_to_f32(st_fp16 h);
st_fp16 st_f32_to_fp16(float f); /* round to nearest even */
float st_bf16_to_f32(st_bf16 h);
st_bf16 st_f32_to_bf16(float f); /* round to nearest even */

/* Dequantize n elements (multiple of block size) of `type` from src into dst.
 * Supports every type of st_type_get with F32/F16/BF16 included. Returns 0, -1 if unsupported. */
int st_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n);
/* Reference quantizer: n floats into `type` blocks (round-to-nearest, the simple search
 * the format's reference uses). Returns 0, -1 if unsupported. */
int st_quantize_row(uint32_t type, const float *src, void *dst, int64_t n);

/* Oracle dot product: dequantize n elements (multiple of the block size) of a `type` row
 * and accumulate w[k]*x[k] in double. Both pointers are borrowed. NaN when the type is
 * unknown or n is not a multiple of its block size. */
double st_dot_row_ref(uint32_t type, const void *wrow, const float *x, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
