/* SPDX-License-Identifier: Apache-2.0 */
/* IEEE binary16 and bfloat16 conversions, bit-exact, round to nearest even. */
#include "quant/quant.h"

#include <string.h>

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float st_fp16_to_f32(st_fp16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13)); /* inf, nan */
    if (exp == 0) {
        if (man == 0) return f32_from_bits(sign); /* signed zero */
        /* subnormal: man * 2^-24, exact in float */
        float v = (float)man * 0x1p-24f;
        return f32_from_bits(sign | f32_bits(v));
    }
    return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

st_fp16 st_f32_to_fp16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) { /* nan: keep the top payload bits, force quiet */
        return (st_fp16)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    if (ax >= 0x477ff000u) return (st_fp16)(sign | 0x7c00u); /* >= 65520 (or inf): inf */
    if (ax >= 0x38800000u) {                                  /* normal half */
        uint32_t e = (ax >> 23) - 112u;
        uint32_t m = ax & 0x7fffffu;
        uint32_t h = (e << 10) | (m >> 13);
        uint32_t rem = m & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* carry may reach the exponent */
        return (st_fp16)(sign | h);
    }
    if (ax <= 0x33000000u) return (st_fp16)sign; /* <= 2^-25: rounds to zero (tie to even) */
    /* subnormal half: value = m * 2^(e-150), unit 2^-24 */
    uint32_t e = ax >> 23;
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t s = 126u - e; /* 14..24 */
    uint32_t h = m >> s;
    uint32_t rem = m & ((1u << s) - 1u);
    uint32_t halfway = 1u << (s - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) h++;
    return (st_fp16)(sign | h);
}

float st_bf16_to_f32(st_bf16 h) { return f32_from_bits((uint32_t)h << 16); }

st_bf16 st_f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (st_bf16)((x >> 16) | 0x40u); /* quiet nan */
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even; overflow reaches inf */
    return (st_bf16)(x >> 16);
}
