/* SPDX-License-Identifier: Apache-2.0 */
/* Portable IEEE half / bfloat16 <-> float conversions for the CPU framework and the scalar
 * kernels (bit manipulation only; round to nearest even). Header-only, no state. */
#ifndef STRATA_CPU_HALF_H
#define STRATA_CPU_HALF_H

#include <stdint.h>
#include <string.h>

static inline float st_cpu_u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t st_cpu_f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* IEEE binary16 bits -> float (exact). */
static inline float st_cpu_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return st_cpu_u2f(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return st_cpu_u2f(sign | ((exp + 112u) << 23) | (man << 13));
}

/* float -> IEEE binary16 bits, round to nearest even, overflow to inf, NaN kept NaN. */
static inline uint16_t st_cpu_f2h(float f) {
    uint32_t u = st_cpu_f2u(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {
        /* result is subnormal or zero: value / 2^-24 rounded to nearest even */
        if (a < 0x33000000u) return (uint16_t)sign; /* < 2^-25: rounds to zero */
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* value = m * 2^(e-150); want m * 2^(e-150+24) */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u); /* round mantissa to 10 bits, ties to even */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

static inline float st_cpu_bf2f(uint16_t h) { return st_cpu_u2f((uint32_t)h << 16); }

static inline uint16_t st_cpu_f2bf(float f) {
    uint32_t u = st_cpu_f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#endif
