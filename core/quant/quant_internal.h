/* SPDX-License-Identifier: Apache-2.0 */
/* Internal entry points of st_quant: one (de)quantizer per block format, and the scale fits
 * the K-quant and IQ4 quantizers share. Not part of the public API. */
#ifndef STRATA_QUANT_INTERNAL_H
#define STRATA_QUANT_INTERNAL_H

#include "quant/quant.h"

/* Dequantize / quantize n elements (a multiple of the block size); no argument checks. */
void st_dequant_q4_0(const void *src, float *dst, int64_t n);
void st_dequant_q4_1(const void *src, float *dst, int64_t n);
void st_dequant_q5_0(const void *src, float *dst, int64_t n);
void st_dequant_q5_1(const void *src, float *dst, int64_t n);
void st_dequant_q8_0(const void *src, float *dst, int64_t n);
void st_dequant_q8_1(const void *src, float *dst, int64_t n);
void st_dequant_q2_K(const void *src, float *dst, int64_t n);
void st_dequant_q3_K(const void *src, float *dst, int64_t n);
void st_dequant_q4_K(const void *src, float *dst, int64_t n);
void st_dequant_q5_K(const void *src, float *dst, int64_t n);
void st_dequant_q6_K(const void *src, float *dst, int64_t n);
void st_dequant_q8_K(const void *src, float *dst, int64_t n);
void st_dequant_iq4_nl(const void *src, float *dst, int64_t n);
void st_dequant_mxfp4(const void *src, float *dst, int64_t n);
void st_dequant_iq4_xs(const void *src, float *dst, int64_t n);

void st_quant_q4_0(const float *src, void *dst, int64_t n);
void st_quant_q4_1(const float *src, void *dst, int64_t n);
void st_quant_q5_0(const float *src, void *dst, int64_t n);
void st_quant_q5_1(const float *src, void *dst, int64_t n);
void st_quant_q8_0(const float *src, void *dst, int64_t n);
void st_quant_q8_1(const float *src, void *dst, int64_t n);
void st_quant_q2_K(const float *src, void *dst, int64_t n);
void st_quant_q3_K(const float *src, void *dst, int64_t n);
void st_quant_q4_K(const float *src, void *dst, int64_t n);
void st_quant_q5_K(const float *src, void *dst, int64_t n);
void st_quant_q6_K(const float *src, void *dst, int64_t n);
void st_quant_q8_K(const float *src, void *dst, int64_t n);
void st_quant_iq4_nl(const float *src, void *dst, int64_t n);
void st_quant_mxfp4(const float *src, void *dst, int64_t n);
void st_quant_iq4_xs(const float *src, void *dst, int64_t n);

/* Round to nearest, halves away from zero, as an int (callers clamp). */
int st_quant_round(float v);

/* Affine fit x ~= scale*L - min with L in [0, nmax], scale >= 0, min >= 0 (the offset is
 * never positive, so it can be stored as an unsigned "min"). Writes L[n]; returns scale and
 * *min_out. A few candidate ranges, each refined by least squares; the lowest error wins. */
float st_quant_fit_affine(int n, const float *x, int nmax, uint8_t *L, float *min_out);

/* Symmetric fit x ~= scale*L with L in [lo, hi] (lo < 0 < hi). The element of largest
 * magnitude is mapped towards `lo` (the wider side); a grid of candidates refined by least
 * squares picks the lowest error. Writes L[n] (signed levels); returns scale (may be < 0). */
float st_quant_fit_symmetric(int n, const float *x, int lo, int hi, int8_t *L);

/* Index of the IQ4 level nearest to v (levels in st_iq4nl_values). */
int st_quant_iq4_nearest(float v);

/* Best scale for a block of n values on the IQ4 levels; writes level indices idx[n]. */
float st_quant_fit_iq4(int n, const float *x, uint8_t *idx);

#endif
