/* SPDX-License-Identifier: Apache-2.0 */
/* Legacy 32-element block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
 * Element j of a block (j < 16) lives in the low nibble of qs[j], element j+16 in the high
 * nibble; Q5 formats keep the fifth bit of element j in bit j of the 32-bit little-endian qh. */
#include "quant/quant_internal.h"

#include <math.h>

static uint32_t qh_load(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | ((uint32_t)qh[1] << 8) | ((uint32_t)qh[2] << 16) | ((uint32_t)qh[3] << 24);
}

static void qh_store(uint8_t qh[4], uint32_t v) {
    for (int i = 0; i < 4; i++) qh[i] = (uint8_t)(v >> (8 * i));
}

int st_quant_round(float v) {
    if (!(v == v)) return 0; /* NaN */
    if (v > 1e9f) return 1000000000;
    if (v < -1e9f) return -1000000000;
    return (int)lroundf(v);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* floor(v) clamped to [lo, hi] without an out-of-range float-to-int conversion; NaN -> lo. */
static int floor_clamp(float v, int lo, int hi) {
    if (!(v >= (float)lo)) return lo;
    if (v >= (float)hi) return hi;
    return (int)floorf(v);
}

/* Signed value of largest magnitude (first one on ties). */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, mx = 0.0f;
    for (int j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            mx = x[j];
        }
    }
    return mx;
}

static void min_max(const float *x, int n, float *mn, float *mx) {
    float a = x[0], b = x[0];
    for (int j = 1; j < n; j++) {
        if (x[j] < a) a = x[j];
        if (x[j] > b) b = x[j];
    }
    *mn = a;
    *mx = b;
}

void st_dequant_q4_0(const void *src, float *dst, int64_t n) {
    const st_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / ST_QK4_0; i++, dst += ST_QK4_0) {
        float d = st_fp16_to_f32(b[i].d);
        for (int j = 0; j < ST_QK4_0 / 2; j++) {
            dst[j] = d * (float)((b[i].qs[j] & 0xf) - 8);
            dst[j + 16] = d * (float)((b[i].qs[j] >> 4) - 8);
        }
    }
}

void st_quant_q4_0(const float *src, void *dst, int64_t n) {
    st_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / ST_QK4_0; i++, src += ST_QK4_0) {
        float d = signed_absmax(src, ST_QK4_0) / -8.0f; /* extreme maps to level -8 */
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = st_f32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            int q0 = floor_clamp(src[j] * id + 8.5f, 0, 15);
            int q1 = floor_clamp(src[j + 16] * id + 8.5f, 0, 15);
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void st_dequant_q4_1(const void *src, float *dst, int64_t n) {
    const st_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / ST_QK4_1; i++, dst += ST_QK4_1) {
        float d = st_fp16_to_f32(b[i].d), m = st_fp16_to_f32(b[i].m);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)(b[i].qs[j] & 0xf) + m;
            dst[j + 16] = d * (float)(b[i].qs[j] >> 4) + m;
        }
    }
}

void st_quant_q4_1(const float *src, void *dst, int64_t n) {
    st_block_q4_1 *b = dst;
    for (int64_t i = 0; i < n / ST_QK4_1; i++, src += ST_QK4_1) {
        float mn, mx;
        min_max(src, ST_QK4_1, &mn, &mx);
        float d = (mx - mn) / 15.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = st_f32_to_fp16(d);
        b[i].m = st_f32_to_fp16(mn);
        for (int j = 0; j < 16; j++) {
            int q0 = floor_clamp((src[j] - mn) * id + 0.5f, 0, 15);
            int q1 = floor_clamp((src[j + 16] - mn) * id + 0.5f, 0, 15);
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void st_dequant_q5_0(const void *src, float *dst, int64_t n) {
    const st_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / ST_QK5_0; i++, dst += ST_QK5_0) {
        float d = st_fp16_to_f32(b[i].d);
        uint32_t qh = qh_load(b[i].qh);
        for (int j = 0; j < 16; j++) {
            int q0 = (b[i].qs[j] & 0xf) | (int)(((qh >> j) & 1u) << 4);
            int q1 = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
            dst[j] = d * (float)(q0 - 16);
            dst[j + 16] = d * (float)(q1 - 16);
        }
    }
}

void st_quant_q5_0(const float *src, void *dst, int64_t n) {
    st_block_q5_0 *b = dst;
    for (int64_t i = 0; i < n / ST_QK5_0; i++, src += ST_QK5_0) {
        float d = signed_absmax(src, ST_QK5_0) / -16.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = st_f32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = floor_clamp(src[j] * id + 16.5f, 0, 31);
            int q1 = floor_clamp(src[j + 16] * id + 16.5f, 0, 31);
            b[i].qs[j] = (uint8_t)((q0 & 0xf) | ((q1 & 0xf) << 4));
            qh |= (uint32_t)(q0 >> 4) << j;
            qh |= (uint32_t)(q1 >> 4) << (j + 16);
        }
        qh_store(b[i].qh, qh);
    }
}

void st_dequant_q5_1(const void *src, float *dst, int64_t n) {
    const st_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / ST_QK5_1; i++, dst += ST_QK5_1) {
        float d = st_fp16_to_f32(b[i].d), m = st_fp16_to_f32(b[i].m);
        uint32_t qh = qh_load(b[i].qh);
        for (int j = 0; j < 16; j++) {
            int q0 = (b[i].qs[j] & 0xf) | (int)(((qh >> j) & 1u) << 4);
            int q1 = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
            dst[j] = d * (float)q0 + m;
            dst[j + 16] = d * (float)q1 + m;
        }
    }
}

void st_quant_q5_1(const float *src, void *dst, int64_t n) {
    st_block_q5_1 *b = dst;
    for (int64_t i = 0; i < n / ST_QK5_1; i++, src += ST_QK5_1) {
        float mn, mx;
        min_max(src, ST_QK5_1, &mn, &mx);
        float d = (mx - mn) / 31.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = st_f32_to_fp16(d);
        b[i].m = st_f32_to_fp16(mn);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = floor_clamp((src[j] - mn) * id + 0.5f, 0, 31);
            int q1 = floor_clamp((src[j + 16] - mn) * id + 0.5f, 0, 31);
            b[i].qs[j] = (uint8_t)((q0 & 0xf) | ((q1 & 0xf) << 4));
            qh |= (uint32_t)(q0 >> 4) << j;
            qh |= (uint32_t)(q1 >> 4) << (j + 16);
        }
        qh_store(b[i].qh, qh);
    }
}

void st_dequant_q8_0(const void *src, float *dst, int64_t n) {
    const st_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / ST_QK8_0; i++, dst += ST_QK8_0) {
        float d = st_fp16_to_f32(b[i].d);
        for (int j = 0; j < ST_QK8_0; j++) dst[j] = d * (float)b[i].qs[j];
    }
}

/* Shared by Q8_0 and Q8_1: d = amax/127, nearest level. Returns d; sum of levels in *sum. */
static float quant_q8_block(const float *x, int8_t *qs, int *sum) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    int s = 0;
    for (int j = 0; j < 32; j++) {
        int q = clampi(st_quant_round(x[j] * id), -127, 127);
        qs[j] = (int8_t)q;
        s += q;
    }
    *sum = s;
    return d;
}

void st_quant_q8_0(const float *src, void *dst, int64_t n) {
    st_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / ST_QK8_0; i++, src += ST_QK8_0) {
        int sum;
        b[i].d = st_f32_to_fp16(quant_q8_block(src, b[i].qs, &sum));
    }
}

void st_dequant_q8_1(const void *src, float *dst, int64_t n) {
    const st_block_q8_1 *b = src;
    for (int64_t i = 0; i < n / ST_QK8_1; i++, dst += ST_QK8_1) {
        float d = st_fp16_to_f32(b[i].d);
        for (int j = 0; j < ST_QK8_1; j++) dst[j] = d * (float)b[i].qs[j];
    }
}

void st_quant_q8_1(const float *src, void *dst, int64_t n) {
    st_block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / ST_QK8_1; i++, src += ST_QK8_1) {
        int sum;
        float d = quant_q8_block(src, b[i].qs, &sum);
        b[i].d = st_f32_to_fp16(d);
        b[i].s = st_f32_to_fp16(d * (float)sum);
    }
}
