/* SPDX-License-Identifier: Apache-2.0 */
/* Non-linear 4-bit formats IQ4_NL (blocks of 32, one fp16 scale) and IQ4_XS (super-blocks
 * of 256: fp16 scale and eight 6-bit sub-block scales, low nibbles in scales_l, high 2 bits
 * in scales_h). Within 32 elements, element j < 16 is the low nibble of qs[j] and element
 * j + 16 the high nibble; a nibble indexes st_iq4nl_values. */
#include "quant/quant_internal.h"

#include <math.h>
#include <string.h>

static int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

static void iq4_unpack32(const uint8_t qs[16], float d, float *dst) {
    for (int j = 0; j < 16; j++) {
        dst[j] = d * (float)st_iq4nl_values[qs[j] & 0xf];
        dst[j + 16] = d * (float)st_iq4nl_values[qs[j] >> 4];
    }
}

static void iq4_pack32(const uint8_t idx[32], uint8_t qs[16]) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(idx[j] | (idx[j + 16] << 4));
}

void st_dequant_iq4_nl(const void *src, float *dst, int64_t n) {
    const st_block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / ST_QK4_NL; i++, dst += ST_QK4_NL) iq4_unpack32(b[i].qs, st_fp16_to_f32(b[i].d), dst);
}

void st_quant_iq4_nl(const float *src, void *dst, int64_t n) {
    st_block_iq4_nl *b = dst;
    for (int64_t i = 0; i < n / ST_QK4_NL; i++, src += ST_QK4_NL) {
        uint8_t idx[ST_QK4_NL];
        float d = st_quant_fit_iq4(ST_QK4_NL, src, idx);
        b[i].d = st_f32_to_fp16(d);
        float dq = st_fp16_to_f32(b[i].d);
        if (dq != 0.0f) /* reassign levels against the stored (rounded) scale */
            for (int j = 0; j < ST_QK4_NL; j++) idx[j] = (uint8_t)st_quant_iq4_nearest(src[j] / dq);
        iq4_pack32(idx, b[i].qs);
    }
}

void st_dequant_iq4_xs(const void *src, float *dst, int64_t n) {
    const st_block_iq4_xs *b = src;
    for (int64_t i = 0; i < n / ST_QK_K; i++, dst += ST_QK_K) {
        float d = st_fp16_to_f32(b[i].d);
        for (int s = 0; s < 8; s++) {
            int ls = ((b[i].scales_l[s / 2] >> (4 * (s % 2))) & 0xf) | (((b[i].scales_h >> (2 * s)) & 3) << 4);
            iq4_unpack32(b[i].qs + 16 * s, d * (float)(ls - 32), dst + 32 * s);
        }
    }
}

void st_quant_iq4_xs(const float *src, void *dst, int64_t n) {
    st_block_iq4_xs *b = dst;
    for (int64_t i = 0; i < n / ST_QK_K; i++, src += ST_QK_K) {
        uint8_t idx[ST_QK_K];
        float scales[8], amax = 0.0f, mx = 0.0f;
        for (int s = 0; s < 8; s++) {
            scales[s] = st_quant_fit_iq4(32, src + 32 * s, idx + 32 * s);
            if (fabsf(scales[s]) > amax) {
                amax = fabsf(scales[s]);
                mx = scales[s];
            }
        }
        float d = mx / -32.0f; /* the largest sub-block scale maps to level -32 */
        b[i].d = st_f32_to_fp16(d);
        float dq = st_fp16_to_f32(b[i].d);
        b[i].scales_h = 0;
        memset(b[i].scales_l, 0, sizeof b[i].scales_l);
        for (int s = 0; s < 8; s++) {
            int ls = dq != 0.0f ? clampi(st_quant_round(scales[s] / dq), -32, 31) + 32 : 32;
            b[i].scales_l[s / 2] |= (uint8_t)((ls & 0xf) << (4 * (s % 2)));
            b[i].scales_h = (uint16_t)(b[i].scales_h | ((ls >> 4) << (2 * s)));
            float dl = dq * (float)(ls - 32);
            if (dl != 0.0f)
                for (int j = 0; j < 32; j++) idx[32 * s + j] = (uint8_t)st_quant_iq4_nearest(src[32 * s + j] / dl);
            iq4_pack32(idx + 32 * s, b[i].qs + 16 * s);
        }
    }
}
