/* SPDX-License-Identifier: Apache-2.0 */
/* MXFP4: blocks of 32 4-bit E2M1 values sharing one E8M0 (power of two) scale, 17 bytes.
 * The levels are stored doubled as small integers and the scale halved, so that a dot product
 * with 8-bit activations stays in integers until one multiply per block. */
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"

const int8_t st_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float st_e8m0_half_to_f32(uint8_t e) {
    /* 2^(e - 128): a normal float with exponent field e - 1, or a subnormal for e < 2 */
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

void st_dequant_mxfp4(const void *src, float *dst, int64_t n) {
    const st_block_mxfp4 *b = src;
    for (int64_t i = 0; i < n / ST_QK_MXFP4; i++, dst += ST_QK_MXFP4) {
        const float d = st_e8m0_half_to_f32(b[i].e);
        for (int j = 0; j < ST_QK_MXFP4 / 2; j++) {
            dst[j] = (float)st_mxfp4_values[b[i].qs[j] & 0xf] * d;
            dst[j + ST_QK_MXFP4 / 2] = (float)st_mxfp4_values[b[i].qs[j] >> 4] * d;
        }
    }
}

/* The level index nearest to x / d (the first of equals: +0 before -0). */
static uint8_t nearest(float x, float d) {
    int best = 0;
    float err = fabsf(x);
    for (int q = 1; q < 16; q++) {
        const float e = fabsf((float)st_mxfp4_values[q] * d - x);
        if (e < err) {
            err = e;
            best = q;
        }
    }
    return (uint8_t)best;
}

void st_quant_mxfp4(const float *src, void *dst, int64_t n) {
    st_block_mxfp4 *b = dst;
    for (int64_t i = 0; i < n / ST_QK_MXFP4; i++, src += ST_QK_MXFP4) {
        float amax = 0.0f;
        for (int j = 0; j < ST_QK_MXFP4; j++)
            if (fabsf(src[j]) > amax) amax = fabsf(src[j]);
        /* the largest level is 12 = 6 * 2: pick the scale that puts amax near 6 */
        const int e = amax > 0.0f ? (int)floorf(log2f(amax)) - 2 + 127 : 0;
        b[i].e = (uint8_t)(e < 0 ? 0 : e > 255 ? 255 : e);
        const float d = st_e8m0_half_to_f32(b[i].e);
        for (int j = 0; j < ST_QK_MXFP4 / 2; j++)
            b[i].qs[j] = (uint8_t)(nearest(src[j], d) | nearest(src[j + ST_QK_MXFP4 / 2], d) << 4);
    }
}
