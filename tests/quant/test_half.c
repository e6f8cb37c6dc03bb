/* SPDX-License-Identifier: Apache-2.0 */
/* fp16 / bf16 conversion edge cases: exact values, rounding ties, overflow, subnormals,
 * signed zero, inf and nan; plus an exhaustive fp16 -> f32 -> fp16 round trip. */
#include <stdint.h>
#include <string.h>

#include "quant/quant.h"
#include "st_check.h"

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_fp16(void) {
    /* exact values */
    ST_CHECK(st_f32_to_fp16(1.0f) == 0x3c00);
    ST_CHECK(st_f32_to_fp16(-2.0f) == 0xc000);
    ST_CHECK(st_f32_to_fp16(0.5f) == 0x3800);
    ST_CHECK(st_f32_to_fp16(65504.0f) == 0x7bff);
    ST_CHECK(st_fp16_to_f32(0x7bff) == 65504.0f);
    ST_CHECK(st_fp16_to_f32(0x3555) == 0.333251953125f);
    /* signed zero */
    ST_CHECK(st_f32_to_fp16(0.0f) == 0x0000);
    ST_CHECK(st_f32_to_fp16(-0.0f) == 0x8000);
    ST_CHECK(bits(st_fp16_to_f32(0x8000)) == 0x80000000u);
    /* overflow: 65519 rounds down to max, 65520 (tie, max is odd) rounds to inf */
    ST_CHECK(st_f32_to_fp16(65519.0f) == 0x7bff);
    ST_CHECK(st_f32_to_fp16(65520.0f) == 0x7c00);
    ST_CHECK(st_f32_to_fp16(-1e10f) == 0xfc00);
    ST_CHECK(st_f32_to_fp16(from_bits(0x7f800000u)) == 0x7c00);
    ST_CHECK(st_f32_to_fp16(from_bits(0xff800000u)) == 0xfc00);
    ST_CHECK(isinf(st_fp16_to_f32(0x7c00)) && st_fp16_to_f32(0x7c00) > 0);
    /* nan stays nan (quiet), keeps its sign */
    st_fp16 hn = st_f32_to_fp16(from_bits(0x7fc00000u));
    ST_CHECK((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0 && (hn & 0x200));
    ST_CHECK(st_f32_to_fp16(from_bits(0xffc00001u)) & 0x8000);
    /* signalling nan with payload only in low bits must not become inf */
    st_fp16 hs = st_f32_to_fp16(from_bits(0x7f800001u));
    ST_CHECK((hs & 0x3ff) != 0);
    ST_CHECK(isnan(st_fp16_to_f32(0x7e00)));
    ST_CHECK(isnan(st_fp16_to_f32(0xfd01)));
    /* ties to even in the normal range: 1 + 2^-11 is halfway between 1 and 1+2^-10 */
    ST_CHECK(st_f32_to_fp16(1.0f + 0x1p-11f) == 0x3c00);
    ST_CHECK(st_f32_to_fp16(1.0f + 3 * 0x1p-11f) == 0x3c02); /* odd neighbour: up */
    ST_CHECK(st_f32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
    /* carry of the mantissa into the exponent: just below 2 rounds to 2 */
    ST_CHECK(st_f32_to_fp16(2.0f - 0x1p-12f) == 0x4000);
    /* subnormals: smallest 2^-24, largest 0x3ff * 2^-24 */
    ST_CHECK(st_f32_to_fp16(0x1p-24f) == 0x0001);
    ST_CHECK(st_fp16_to_f32(0x0001) == 0x1p-24f);
    ST_CHECK(st_fp16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    ST_CHECK(st_fp16_to_f32(0x8001) == -0x1p-24f);
    ST_CHECK(st_f32_to_fp16(0x1p-25f) == 0x0000);                 /* tie to even: 0 */
    ST_CHECK(st_f32_to_fp16(0x1p-25f + 0x1p-40f) == 0x0001);      /* above the tie */
    ST_CHECK(st_f32_to_fp16(3 * 0x1p-25f) == 0x0002);             /* tie 1.5 ulp -> 2 */
    ST_CHECK(st_f32_to_fp16(5 * 0x1p-25f) == 0x0002);             /* tie 2.5 ulp -> 2 */
    ST_CHECK(st_f32_to_fp16(0x1p-14f - 0x1p-26f) == 0x0400);      /* rounds up to min normal */
    ST_CHECK(st_f32_to_fp16(1e-30f) == 0x0000);
    ST_CHECK(st_f32_to_fp16(-1e-30f) == 0x8000);
    /* exhaustive: every non-nan half survives the round trip bit-exactly */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = st_fp16_to_f32((st_fp16)h);
        if (isnan(f)) {
            if (!isnan(st_fp16_to_f32(st_f32_to_fp16(f)))) bad++;
            continue;
        }
        if (st_f32_to_fp16(f) != h) bad++;
    }
    ST_CHECK_MSG(bad == 0, "%d halves failed the round trip", bad);
    /* monotonic rounding: each float between two adjacent halves goes to the nearer one */
    int wrong = 0;
    for (uint32_t h = 0; h < 0x7bff; h += 7) {
        float lo = st_fp16_to_f32((st_fp16)h), hi = st_fp16_to_f32((st_fp16)(h + 1));
        float q1 = lo + (hi - lo) * 0.25f, q3 = lo + (hi - lo) * 0.75f;
        if (st_f32_to_fp16(q1) != h || st_f32_to_fp16(q3) != h + 1) wrong++;
    }
    ST_CHECK_MSG(wrong == 0, "%d intervals rounded to the wrong neighbour", wrong);
}

static void test_bf16(void) {
    ST_CHECK(st_f32_to_bf16(1.0f) == 0x3f80);
    ST_CHECK(st_bf16_to_f32(0x3f80) == 1.0f);
    ST_CHECK(st_f32_to_bf16(-0.0f) == 0x8000);
    ST_CHECK(st_f32_to_bf16(3.140625f) == 0x4049);
    /* ties to even: 1 + 2^-8 is halfway between 1 and 1+2^-7 */
    ST_CHECK(st_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
    ST_CHECK(st_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
    ST_CHECK(st_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
    /* overflow of the largest float rounds to inf */
    ST_CHECK(st_f32_to_bf16(from_bits(0x7f7fffffu)) == 0x7f80);
    ST_CHECK(st_f32_to_bf16(from_bits(0x7f800000u)) == 0x7f80);
    ST_CHECK(st_f32_to_bf16(from_bits(0xff800000u)) == 0xff80);
    /* nan stays nan even when its payload lies only in the dropped bits */
    st_bf16 n = st_f32_to_bf16(from_bits(0x7f800001u));
    ST_CHECK((n & 0x7f80) == 0x7f80 && (n & 0x7f) != 0);
    ST_CHECK(isnan(st_bf16_to_f32(n)));
    /* subnormal floats keep their top bits */
    ST_CHECK(st_f32_to_bf16(from_bits(0x00010000u)) == 0x0001);
    ST_CHECK(st_bf16_to_f32(0x0001) == from_bits(0x00010000u));
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = st_bf16_to_f32((st_bf16)h);
        if (isnan(f)) continue;
        if (st_f32_to_bf16(f) != h) bad++;
    }
    ST_CHECK_MSG(bad == 0, "%d bf16 values failed the round trip", bad);
}

int main(void) {
    test_fp16();
    test_bf16();
    return st_check_result("test_half");
}
