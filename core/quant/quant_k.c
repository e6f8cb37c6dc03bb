/* SPDX-License-Identifier: Apache-2.0 */
/* K-quant super-block formats (256 elements): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
 * Bit packing follows the GGUF file format exactly:
 *  - Q2_K/Q3_K: element 128*h + 32*g + l (h < 2, g < 4, l < 32) keeps its 2 low bits in
 *    qs[32*h + l] at bit 2*g; its sub-block (of 16) is 8*h + 2*g + l/16. Q3_K's third bit is
 *    hmask[l] bit 4*h + g (set = no -4 offset); its 16 6-bit scales are split into low
 *    nibbles (scales[0..7], low then high nibble) and 2-bit high parts in scales[8..11].
 *  - Q4_K/Q5_K: 8 sub-blocks of 32, 6-bit scale and min packed in 12 bytes; element
 *    64*p + l sits in the low nibble of qs[32*p + l], element 64*p + 32 + l in the high one;
 *    Q5_K's fifth bit is qh[l] bit 2*p (resp. 2*p + 1).
 *  - Q6_K: per 128 elements, 64 bytes of low nibbles and 32 bytes of 2-bit high parts. */
#include "quant/quant_internal.h"

#include <math.h>
#include <string.h>

static int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

static float maxf_arr(const float *v, int n) {
    float m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

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

/* ---- Q2_K ------------------------------------------------------------------------- */

void st_dequant_q2_K(const void *src, float *dst, int64_t n) {
    const st_block_q2_K *b = src;
    for (int64_t i = 0; i < n / ST_QK_K; i++, dst += ST_QK_K) {
        float d = st_fp16_to_f32(b[i].d), dmin = st_fp16_to_f32(b[i].dmin);
        for (int h = 0; h < 2; h++)
            for (int g = 0; g < 4; g++)
                for (int l = 0; l < 32; l++) {
                    int s = 8 * h + 2 * g + l / 16;
                    int q = (b[i].qs[32 * h + l] >> (2 * g)) & 3;
                    float dl = d * (float)(b[i].scales[s] & 0xf);
                    float ml = dmin * (float)(b[i].scales[s] >> 4);
                    dst[128 * h + 32 * g + l] = dl * (float)q - ml;
                }
    }
}

void st_quant_q2_K(const float *src, void *dst, int64_t n) {
    st_block_q2_K *b = dst;
    for (int64_t i = 0; i < n / ST_QK_K; i++, src += ST_QK_K) {
        uint8_t L[ST_QK_K];
        float scales[16], mins[16];
        for (int s = 0; s < 16; s++) scales[s] = st_quant_fit_affine(16, src + 16 * s, 3, L + 16 * s, &mins[s]);
        float d = maxf_arr(scales, 16) / 15.0f, dmin = maxf_arr(mins, 16) / 15.0f;
        b[i].d = st_f32_to_fp16(d);
        b[i].dmin = st_f32_to_fp16(dmin);
        float dq = st_fp16_to_f32(b[i].d), dmq = st_fp16_to_f32(b[i].dmin);
        for (int s = 0; s < 16; s++) {
            int sc = dq > 0 ? clampi(st_quant_round(scales[s] / dq), 0, 15) : 0;
            int m = dmq > 0 ? clampi(st_quant_round(mins[s] / dmq), 0, 15) : 0;
            b[i].scales[s] = (uint8_t)(sc | (m << 4));
            float dl = dq * (float)sc, ml = dmq * (float)m;
            for (int l = 0; l < 16; l++) {
                float x = src[16 * s + l];
                L[16 * s + l] = (uint8_t)(dl > 0 ? clampi(st_quant_round((x + ml) / dl), 0, 3) : 0);
            }
        }
        memset(b[i].qs, 0, sizeof b[i].qs);
        for (int h = 0; h < 2; h++)
            for (int g = 0; g < 4; g++)
                for (int l = 0; l < 32; l++)
                    b[i].qs[32 * h + l] |= (uint8_t)(L[128 * h + 32 * g + l] << (2 * g));
    }
}

/* ---- Q3_K ------------------------------------------------------------------------- */

/* 6-bit scale s (0..15) of a Q3_K block, still offset by 32. */
static int q3k_scale(const uint8_t sc[12], int s) {
    int low = s < 8 ? (sc[s] & 0xf) : (sc[s - 8] >> 4);
    int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    return low | (high << 4);
}

void st_dequant_q3_K(const void *src, float *dst, int64_t n) {
    const st_block_q3_K *b = src;
    for (int64_t i = 0; i < n / ST_QK_K; i++, dst += ST_QK_K) {
        float d = st_fp16_to_f32(b[i].d);
        for (int h = 0; h < 2; h++)
            for (int g = 0; g < 4; g++)
                for (int l = 0; l < 32; l++) {
                    int s = 8 * h + 2 * g + l / 16;
                    int q = (b[i].qs[32 * h + l] >> (2 * g)) & 3;
                    if (!(b[i].hmask[l] & (1u << (4 * h + g)))) q -= 4;
                    dst[128 * h + 32 * g + l] = d * (float)(q3k_scale(b[i].scales, s) - 32) * (float)q;
                }
    }
}

void st_quant_q3_K(const float *src, void *dst, int64_t n) {
    st_block_q3_K *b = dst;
    for (int64_t i = 0; i < n / ST_QK_K; i++, src += ST_QK_K) {
        int8_t Ls[ST_QK_K];
        uint8_t L[ST_QK_K];
        float scales[16];
        for (int s = 0; s < 16; s++) scales[s] = st_quant_fit_symmetric(16, src + 16 * s, -4, 3, Ls + 16 * s);
        float mx = signed_absmax(scales, 16);
        float iscale = mx != 0.0f ? -32.0f / mx : 0.0f;
        b[i].d = st_f32_to_fp16(iscale != 0.0f ? 1.0f / iscale : 0.0f);
        float dq = st_fp16_to_f32(b[i].d);
        memset(b[i].scales, 0, sizeof b[i].scales);
        for (int s = 0; s < 16; s++) {
            int sc = clampi(st_quant_round(iscale * scales[s]), -32, 31);
            int u = sc + 32;
            if (s < 8)
                b[i].scales[s] |= (uint8_t)(u & 0xf);
            else
                b[i].scales[s - 8] |= (uint8_t)((u & 0xf) << 4);
            b[i].scales[8 + s % 4] |= (uint8_t)((u >> 4) << (2 * (s / 4)));
            float dl = dq * (float)sc;
            for (int l = 0; l < 16; l++) {
                int q = dl != 0.0f ? clampi(st_quant_round(src[16 * s + l] / dl), -4, 3) : 0;
                L[16 * s + l] = (uint8_t)(q + 4);
            }
        }
        memset(b[i].qs, 0, sizeof b[i].qs);
        memset(b[i].hmask, 0, sizeof b[i].hmask);
        for (int h = 0; h < 2; h++)
            for (int g = 0; g < 4; g++)
                for (int l = 0; l < 32; l++) {
                    int q = L[128 * h + 32 * g + l];
                    b[i].qs[32 * h + l] |= (uint8_t)((q & 3) << (2 * g));
                    if (q >> 2) b[i].hmask[l] |= (uint8_t)(1u << (4 * h + g));
                }
    }
}

/* ---- Q4_K / Q5_K shared 6-bit scale packing ---------------------------------------- */

static void k4_get_scale_min(const uint8_t q[12], int j, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static void k4_set_scale_min(uint8_t q[12], int j, int sc, int m) {
    if (j < 4) {
        q[j] = (uint8_t)((q[j] & 0xc0) | sc);
        q[j + 4] = (uint8_t)((q[j + 4] & 0xc0) | m);
    } else {
        q[j + 4] = (uint8_t)((sc & 0xf) | ((m & 0xf) << 4));
        q[j - 4] = (uint8_t)((q[j - 4] & 63) | ((sc >> 4) << 6));
        q[j] = (uint8_t)((q[j] & 63) | ((m >> 4) << 6));
    }
}

/* Quantize 8 sub-blocks of 32 onto levels 0..nmax with 6-bit scales/mins; L[256] out. */
static void k4_quant_scales(const float *x, int nmax, st_fp16 *d_out, st_fp16 *dmin_out, uint8_t sc_out[12],
                            uint8_t L[ST_QK_K]) {
    float scales[8], mins[8];
    for (int s = 0; s < 8; s++) scales[s] = st_quant_fit_affine(32, x + 32 * s, nmax, L + 32 * s, &mins[s]);
    *d_out = st_f32_to_fp16(maxf_arr(scales, 8) / 63.0f);
    *dmin_out = st_f32_to_fp16(maxf_arr(mins, 8) / 63.0f);
    float dq = st_fp16_to_f32(*d_out), dmq = st_fp16_to_f32(*dmin_out);
    memset(sc_out, 0, 12);
    for (int s = 0; s < 8; s++) {
        int sc = dq > 0 ? clampi(st_quant_round(scales[s] / dq), 0, 63) : 0;
        int m = dmq > 0 ? clampi(st_quant_round(mins[s] / dmq), 0, 63) : 0;
        k4_set_scale_min(sc_out, s, sc, m);
        float dl = dq * (float)sc, ml = dmq * (float)m;
        for (int l = 0; l < 32; l++) {
            float v = x[32 * s + l];
            L[32 * s + l] = (uint8_t)(dl > 0 ? clampi(st_quant_round((v + ml) / dl), 0, nmax) : 0);
        }
    }
}

void st_dequant_q4_K(const void *src, float *dst, int64_t n) {
    const st_block_q4_K *b = src;
    for (int64_t i = 0; i < n / ST_QK_K; i++, dst += ST_QK_K) {
        float d = st_fp16_to_f32(b[i].d), dmin = st_fp16_to_f32(b[i].dmin);
        for (int p = 0; p < 4; p++) {
            int sc0, m0, sc1, m1;
            k4_get_scale_min(b[i].scales, 2 * p, &sc0, &m0);
            k4_get_scale_min(b[i].scales, 2 * p + 1, &sc1, &m1);
            float d0 = d * (float)sc0, mm0 = dmin * (float)m0;
            float d1 = d * (float)sc1, mm1 = dmin * (float)m1;
            for (int l = 0; l < 32; l++) {
                uint8_t q = b[i].qs[32 * p + l];
                dst[64 * p + l] = d0 * (float)(q & 0xf) - mm0;
                dst[64 * p + 32 + l] = d1 * (float)(q >> 4) - mm1;
            }
        }
    }
}

void st_quant_q4_K(const float *src, void *dst, int64_t n) {
    st_block_q4_K *b = dst;
    for (int64_t i = 0; i < n / ST_QK_K; i++, src += ST_QK_K) {
        uint8_t L[ST_QK_K];
        k4_quant_scales(src, 15, &b[i].d, &b[i].dmin, b[i].scales, L);
        for (int p = 0; p < 4; p++)
            for (int l = 0; l < 32; l++)
                b[i].qs[32 * p + l] = (uint8_t)(L[64 * p + l] | (L[64 * p + 32 + l] << 4));
    }
}

void st_dequant_q5_K(const void *src, float *dst, int64_t n) {
    const st_block_q5_K *b = src;
    for (int64_t i = 0; i < n / ST_QK_K; i++, dst += ST_QK_K) {
        float d = st_fp16_to_f32(b[i].d), dmin = st_fp16_to_f32(b[i].dmin);
        for (int p = 0; p < 4; p++) {
            int sc0, m0, sc1, m1;
            k4_get_scale_min(b[i].scales, 2 * p, &sc0, &m0);
            k4_get_scale_min(b[i].scales, 2 * p + 1, &sc1, &m1);
            float d0 = d * (float)sc0, mm0 = dmin * (float)m0;
            float d1 = d * (float)sc1, mm1 = dmin * (float)m1;
            for (int l = 0; l < 32; l++) {
                uint8_t q = b[i].qs[32 * p + l], h = b[i].qh[l];
                int q0 = (q & 0xf) | (((h >> (2 * p)) & 1) << 4);
                int q1 = (q >> 4) | (((h >> (2 * p + 1)) & 1) << 4);
                dst[64 * p + l] = d0 * (float)q0 - mm0;
                dst[64 * p + 32 + l] = d1 * (float)q1 - mm1;
            }
        }
    }
}

void st_quant_q5_K(const float *src, void *dst, int64_t n) {
    st_block_q5_K *b = dst;
    for (int64_t i = 0; i < n / ST_QK_K; i++, src += ST_QK_K) {
        uint8_t L[ST_QK_K];
        k4_quant_scales(src, 31, &b[i].d, &b[i].dmin, b[i].scales, L);
        memset(b[i].qh, 0, sizeof b[i].qh);
        for (int p = 0; p < 4; p++)
            for (int l = 0; l < 32; l++) {
                int q0 = L[64 * p + l], q1 = L[64 * p + 32 + l];
                b[i].qs[32 * p + l] = (uint8_t)((q0 & 0xf) | ((q1 & 0xf) << 4));
                b[i].qh[l] |= (uint8_t)(((q0 >> 4) << (2 * p)) | ((q1 >> 4) << (2 * p + 1)));
            }
    }
}

/* ---- Q6_K ------------------------------------------------------------------------- */

void st_dequant_q6_K(const void *src, float *dst, int64_t n) {
    const st_block_q6_K *b = src;
    for (int64_t i = 0; i < n / ST_QK_K; i++, dst += ST_QK_K) {
        float d = st_fp16_to_f32(b[i].d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
            const int8_t *sc = b[i].scales + 8 * h;
            for (int l = 0; l < 32; l++) {
                int s = l / 16;
                int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                float *y = dst + 128 * h;
                y[l] = d * (float)sc[s] * (float)q1;
                y[l + 32] = d * (float)sc[s + 2] * (float)q2;
                y[l + 64] = d * (float)sc[s + 4] * (float)q3;
                y[l + 96] = d * (float)sc[s + 6] * (float)q4;
            }
        }
    }
}

void st_quant_q6_K(const float *src, void *dst, int64_t n) {
    st_block_q6_K *b = dst;
    for (int64_t i = 0; i < n / ST_QK_K; i++, src += ST_QK_K) {
        int8_t Ls[ST_QK_K];
        uint8_t L[ST_QK_K];
        float scales[16];
        for (int s = 0; s < 16; s++) scales[s] = st_quant_fit_symmetric(16, src + 16 * s, -32, 31, Ls + 16 * s);
        float mx = signed_absmax(scales, 16);
        float iscale = mx != 0.0f ? -128.0f / mx : 0.0f;
        b[i].d = st_f32_to_fp16(iscale != 0.0f ? 1.0f / iscale : 0.0f);
        float dq = st_fp16_to_f32(b[i].d);
        for (int s = 0; s < 16; s++) {
            int sc = clampi(st_quant_round(iscale * scales[s]), -128, 127);
            b[i].scales[s] = (int8_t)sc;
            float dl = dq * (float)sc;
            for (int l = 0; l < 16; l++) {
                int q = dl != 0.0f ? clampi(st_quant_round(src[16 * s + l] / dl), -32, 31) : 0;
                L[16 * s + l] = (uint8_t)(q + 32);
            }
        }
        for (int h = 0; h < 2; h++) {
            uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
            const uint8_t *Lh = L + 128 * h;
            for (int l = 0; l < 32; l++) {
                int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
                ql[l] = (uint8_t)((q1 & 0xf) | ((q3 & 0xf) << 4));
                ql[l + 32] = (uint8_t)((q2 & 0xf) | ((q4 & 0xf) << 4));
                qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        }
    }
}

/* ---- Q8_K ------------------------------------------------------------------------- */

void st_dequant_q8_K(const void *src, float *dst, int64_t n) {
    const st_block_q8_K *b = src;
    for (int64_t i = 0; i < n / ST_QK_K; i++, dst += ST_QK_K)
        for (int j = 0; j < ST_QK_K; j++) dst[j] = b[i].d * (float)b[i].qs[j];
}

void st_quant_q8_K(const float *src, void *dst, int64_t n) {
    st_block_q8_K *b = dst;
    for (int64_t i = 0; i < n / ST_QK_K; i++, src += ST_QK_K) {
        float mx = signed_absmax(src, ST_QK_K);
        memset(&b[i], 0, sizeof b[i]);
        if (mx == 0.0f) continue;
        float iscale = -127.0f / mx;
        b[i].d = 1.0f / iscale;
        for (int j = 0; j < ST_QK_K; j++) {
            int q = clampi(st_quant_round(iscale * src[j]), -128, 127);
            b[i].qs[j] = (int8_t)q;
            b[i].bsums[j / 16] = (int16_t)(b[i].bsums[j / 16] + q);
        }
    }
}
