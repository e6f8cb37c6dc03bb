/* SPDX-License-Identifier: Apache-2.0 */
/* Row-level entry points: dispatch of st_dequantize_row / st_quantize_row by type, plain
 * (non-block) conversions, and the oracle's dot product st_dot_row_ref. */
#include "quant/quant_internal.h"

#include <math.h>
#include <string.h>

typedef void (*dequant_fn)(const void *src, float *dst, int64_t n);
typedef void (*quant_fn)(const float *src, void *dst, int64_t n);

static dequant_fn dequant_for(uint32_t type) {
    switch (type) {
    case ST_TYPE_Q4_0: return st_dequant_q4_0;
    case ST_TYPE_Q4_1: return st_dequant_q4_1;
    case ST_TYPE_Q5_0: return st_dequant_q5_0;
    case ST_TYPE_Q5_1: return st_dequant_q5_1;
    case ST_TYPE_Q8_0: return st_dequant_q8_0;
    case ST_TYPE_Q8_1: return st_dequant_q8_1;
    case ST_TYPE_Q2_K: return st_dequant_q2_K;
    case ST_TYPE_Q3_K: return st_dequant_q3_K;
    case ST_TYPE_Q4_K: return st_dequant_q4_K;
    case ST_TYPE_Q5_K: return st_dequant_q5_K;
    case ST_TYPE_Q6_K: return st_dequant_q6_K;
    case ST_TYPE_Q8_K: return st_dequant_q8_K;
    case ST_TYPE_IQ4_NL: return st_dequant_iq4_nl;
    case ST_TYPE_MXFP4: return st_dequant_mxfp4;
    case ST_TYPE_IQ4_XS: return st_dequant_iq4_xs;
    default: return NULL;
    }
}

static quant_fn quant_for(uint32_t type) {
    switch (type) {
    case ST_TYPE_Q4_0: return st_quant_q4_0;
    case ST_TYPE_Q4_1: return st_quant_q4_1;
    case ST_TYPE_Q5_0: return st_quant_q5_0;
    case ST_TYPE_Q5_1: return st_quant_q5_1;
    case ST_TYPE_Q8_0: return st_quant_q8_0;
    case ST_TYPE_Q8_1: return st_quant_q8_1;
    case ST_TYPE_Q2_K: return st_quant_q2_K;
    case ST_TYPE_Q3_K: return st_quant_q3_K;
    case ST_TYPE_Q4_K: return st_quant_q4_K;
    case ST_TYPE_Q5_K: return st_quant_q5_K;
    case ST_TYPE_Q6_K: return st_quant_q6_K;
    case ST_TYPE_Q8_K: return st_quant_q8_K;
    case ST_TYPE_IQ4_NL: return st_quant_iq4_nl;
    case ST_TYPE_MXFP4: return st_quant_mxfp4;
    case ST_TYPE_IQ4_XS: return st_quant_iq4_xs;
    default: return NULL;
    }
}

/* Saturating round of a float to an integer range; NaN becomes 0. */
static int64_t sat_round(float v, int64_t lo, int64_t hi) {
    if (v != v) return 0;
    double r = nearbyint((double)v);
    if (r < (double)lo) return lo;
    if (r > (double)hi) return hi;
    return (int64_t)r;
}

static int dequant_plain(uint32_t type, const void *src, float *dst, int64_t n) {
    const uint8_t *s = src;
    switch (type) {
    case ST_TYPE_F32: memmove(dst, src, (size_t)n * sizeof(float)); return 0;
    case ST_TYPE_F16:
        for (int64_t i = 0; i < n; i++) {
            st_fp16 h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = st_fp16_to_f32(h);
        }
        return 0;
    case ST_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            st_bf16 h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = st_bf16_to_f32(h);
        }
        return 0;
    case ST_TYPE_I8:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)(int8_t)s[i];
        return 0;
    case ST_TYPE_I16:
        for (int64_t i = 0; i < n; i++) {
            int16_t v;
            memcpy(&v, s + 2 * i, 2);
            dst[i] = (float)v;
        }
        return 0;
    case ST_TYPE_I32:
        for (int64_t i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, s + 4 * i, 4);
            dst[i] = (float)v;
        }
        return 0;
    default: return -1;
    }
}

static int quant_plain(uint32_t type, const float *src, void *dst, int64_t n) {
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) {
        switch (type) {
        case ST_TYPE_F32: memcpy(d + 4 * i, &src[i], 4); break;
        case ST_TYPE_F16: {
            st_fp16 h = st_f32_to_fp16(src[i]);
            memcpy(d + 2 * i, &h, 2);
            break;
        }
        case ST_TYPE_BF16: {
            st_bf16 h = st_f32_to_bf16(src[i]);
            memcpy(d + 2 * i, &h, 2);
            break;
        }
        case ST_TYPE_I8: d[i] = (uint8_t)(int8_t)sat_round(src[i], INT8_MIN, INT8_MAX); break;
        case ST_TYPE_I16: {
            int16_t v = (int16_t)sat_round(src[i], INT16_MIN, INT16_MAX);
            memcpy(d + 2 * i, &v, 2);
            break;
        }
        case ST_TYPE_I32: {
            int32_t v = (int32_t)sat_round(src[i], INT32_MIN, INT32_MAX);
            memcpy(d + 4 * i, &v, 4);
            break;
        }
        default: return -1;
        }
    }
    return 0;
}

int st_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n) {
    const st_type_info *t = st_type_get(type);
    if (t == NULL || n < 0 || n % t->block_size != 0 || (n > 0 && (src == NULL || dst == NULL))) return -1;
    if (!t->is_quantized) return dequant_plain(type, src, dst, n);
    dequant_fn f = dequant_for(type);
    if (f == NULL) return -1;
    f(src, dst, n);
    return 0;
}

int st_quantize_row(uint32_t type, const float *src, void *dst, int64_t n) {
    const st_type_info *t = st_type_get(type);
    if (t == NULL || n < 0 || n % t->block_size != 0 || (n > 0 && (src == NULL || dst == NULL))) return -1;
    if (!t->is_quantized) return quant_plain(type, src, dst, n);
    quant_fn f = quant_for(type);
    if (f == NULL) return -1;
    f(src, dst, n);
    return 0;
}

double st_dot_row_ref(uint32_t type, const void *wrow, const float *x, int64_t n) {
    const st_type_info *t = st_type_get(type);
    if (t == NULL || n < 0 || n % t->block_size != 0 || (n > 0 && (wrow == NULL || x == NULL))) return NAN;
    /* chunk: one super-block for block formats, 256 elements for plain types */
    int64_t chunk = t->is_quantized ? t->block_size : 256;
    size_t chunk_bytes = (size_t)(chunk / t->block_size) * (size_t)t->type_size;
    float buf[256];
    double acc = 0.0;
    const uint8_t *w = wrow;
    for (int64_t i = 0; i < n; i += chunk) {
        int64_t m = n - i < chunk ? n - i : chunk;
        if (st_dequantize_row(type, w, buf, m) != 0) return NAN;
        for (int64_t j = 0; j < m; j++) acc += (double)buf[j] * (double)x[i + j];
        w += chunk_bytes;
    }
    return acc;
}
