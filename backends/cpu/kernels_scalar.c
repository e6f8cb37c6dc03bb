/* SPDX-License-Identifier: Apache-2.0 */
/* Portable scalar implementation of every slot of the CPU kernel table (cpu_kernels.h).
 * The reference any ISA falls back to per slot, and the oracle the module tests compare the
 * SIMD kernels against. Block layouts come from core/quant/quant.h. */
#include <math.h>
#include <string.h>

#include "cpu/cpu_half.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_quant_util.h"
#include "quant/quant.h"

/* ------------------------------------------------------------------ activation quantizers */

static void q8_0_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_0 *y = vy;
    for (int64_t b = 0; b < k / ST_QK8_0; b++, x += ST_QK8_0) {
        float amax = 0.0f;
        for (int i = 0; i < ST_QK8_0; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f, id = d != 0.0f ? 127.0f / amax : 0.0f;
        y[b].d = st_cpu_f2h(d);
        for (int i = 0; i < ST_QK8_0; i++) y[b].qs[i] = (int8_t)lrintf(x[i] * id);
    }
}

static void q8_1_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_1 *y = vy;
    for (int64_t b = 0; b < k / ST_QK8_1; b++, x += ST_QK8_1) {
        float amax = 0.0f;
        for (int i = 0; i < ST_QK8_1; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f, id = d != 0.0f ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int i = 0; i < ST_QK8_1; i++) {
            y[b].qs[i] = (int8_t)lrintf(x[i] * id);
            sum += y[b].qs[i];
        }
        y[b].d = st_cpu_f2h(d);
        y[b].s = st_cpu_f2h(d * (float)sum);
    }
}

static void q8_k_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_K *y = vy;
    for (int64_t b = 0; b < k / ST_QK_K; b++, x += ST_QK_K) {
        float amax = 0.0f;
        for (int i = 0; i < ST_QK_K; i++) amax = fmaxf(amax, fabsf(x[i]));
        float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        y[b].d = amax != 0.0f ? amax / 127.0f : 0.0f;
        for (int g = 0; g < ST_QK_K / 16; g++) {
            int s = 0;
            for (int i = 0; i < 16; i++) {
                int q = (int)lrintf(x[16 * g + i] * id);
                y[b].qs[16 * g + i] = (int8_t)q;
                s += q;
            }
            y[b].bsums[g] = (int16_t)s;
        }
    }
}

/* ------------------------------------------------------------------ legacy quants . Q8_0/Q8_1 */

static float dot_q4_0(int64_t k, const void *vw, const void *vx) {
    const st_block_q4_0 *w = vw;
    const st_block_q8_0 *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK4_0; b++) {
        int s = 0;
        for (int j = 0; j < 16; j++) {
            s += ((w[b].qs[j] & 0xf) - 8) * x[b].qs[j];
            s += ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + 16];
        }
        sum += (float)s * (st_cpu_h2f(w[b].d) * st_cpu_h2f(x[b].d));
    }
    return sum;
}

static float dot_q4_1(int64_t k, const void *vw, const void *vx) {
    const st_block_q4_1 *w = vw;
    const st_block_q8_1 *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK4_1; b++) {
        int s = 0;
        for (int j = 0; j < 16; j++) {
            s += (w[b].qs[j] & 0xf) * x[b].qs[j];
            s += (w[b].qs[j] >> 4) * x[b].qs[j + 16];
        }
        sum += (float)s * (st_cpu_h2f(w[b].d) * st_cpu_h2f(x[b].d)) + st_cpu_h2f(w[b].m) * st_cpu_h2f(x[b].s);
    }
    return sum;
}

static float dot_q5_0(int64_t k, const void *vw, const void *vx) {
    const st_block_q5_0 *w = vw;
    const st_block_q8_0 *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK5_0; b++) {
        uint32_t qh;
        memcpy(&qh, w[b].qh, 4);
        int s = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (w[b].qs[j] & 0xf) | (int)(((qh >> j) & 1u) << 4);
            int q1 = (w[b].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
            s += (q0 - 16) * x[b].qs[j] + (q1 - 16) * x[b].qs[j + 16];
        }
        sum += (float)s * (st_cpu_h2f(w[b].d) * st_cpu_h2f(x[b].d));
    }
    return sum;
}

static float dot_q5_1(int64_t k, const void *vw, const void *vx) {
    const st_block_q5_1 *w = vw;
    const st_block_q8_1 *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK5_1; b++) {
        uint32_t qh;
        memcpy(&qh, w[b].qh, 4);
        int s = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (w[b].qs[j] & 0xf) | (int)(((qh >> j) & 1u) << 4);
            int q1 = (w[b].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
            s += q0 * x[b].qs[j] + q1 * x[b].qs[j + 16];
        }
        sum += (float)s * (st_cpu_h2f(w[b].d) * st_cpu_h2f(x[b].d)) + st_cpu_h2f(w[b].m) * st_cpu_h2f(x[b].s);
    }
    return sum;
}

static float dot_q8_0(int64_t k, const void *vw, const void *vx) {
    const st_block_q8_0 *w = vw;
    const st_block_q8_0 *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK8_0; b++) {
        int s = 0;
        for (int j = 0; j < ST_QK8_0; j++) s += w[b].qs[j] * x[b].qs[j];
        sum += (float)s * (st_cpu_h2f(w[b].d) * st_cpu_h2f(x[b].d));
    }
    return sum;
}

static float dot_iq4_nl(int64_t k, const void *vw, const void *vx) {
    const st_block_iq4_nl *w = vw;
    const st_block_q8_0 *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK4_NL; b++) {
        int s = 0;
        for (int j = 0; j < 16; j++) {
            s += st_iq4nl_values[w[b].qs[j] & 0xf] * x[b].qs[j];
            s += st_iq4nl_values[w[b].qs[j] >> 4] * x[b].qs[j + 16];
        }
        sum += (float)s * (st_cpu_h2f(w[b].d) * st_cpu_h2f(x[b].d));
    }
    return sum;
}

/* ------------------------------------------------------------------ K-quants . Q8_K */

static float dot_q2_k(int64_t k, const void *vw, const void *vx) {
    const st_block_q2_K *w = vw;
    const st_block_q8_K *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        int isum = 0, msum = 0;
        for (int g = 0; g < 16; g++) msum += (w[b].scales[g] >> 4) * x[b].bsums[g];
        const int8_t *q8 = x[b].qs;
        int is = 0;
        for (int n = 0; n < 2; n++) {
            const uint8_t *q = w[b].qs + 32 * n;
            for (int j = 0; j < 4; j++) {
                for (int h = 0; h < 2; h++, is++) {
                    int s = 0;
                    for (int l = 0; l < 16; l++) s += ((q[16 * h + l] >> (2 * j)) & 3) * q8[l];
                    isum += (w[b].scales[is] & 0xf) * s;
                    q8 += 16;
                }
            }
        }
        float dx = x[b].d;
        sum += dx * st_cpu_h2f(w[b].d) * (float)isum - dx * st_cpu_h2f(w[b].dmin) * (float)msum;
    }
    return sum;
}

static float dot_q3_k(int64_t k, const void *vw, const void *vx) {
    const st_block_q3_K *w = vw;
    const st_block_q8_K *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        int8_t sc[16];
        st_cpu_q3k_scales(w[b].scales, sc);
        const int8_t *q8 = x[b].qs;
        int isum = 0, is = 0;
        for (int n = 0; n < 2; n++) {
            const uint8_t *q = w[b].qs + 32 * n;
            for (int j = 0; j < 4; j++) {
                int bit = 4 * n + j;
                for (int h = 0; h < 2; h++, is++) {
                    int s = 0;
                    for (int l = 0; l < 16; l++) {
                        int lo = (q[16 * h + l] >> (2 * j)) & 3;
                        int hi = (w[b].hmask[16 * h + l] >> bit) & 1;
                        s += (lo - (hi ? 0 : 4)) * q8[l];
                    }
                    isum += sc[is] * s;
                    q8 += 16;
                }
            }
        }
        sum += x[b].d * st_cpu_h2f(w[b].d) * (float)isum;
    }
    return sum;
}

static float dot_q4_k(int64_t k, const void *vw, const void *vx) {
    const st_block_q4_K *w = vw;
    const st_block_q8_K *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        uint8_t sc[8], mn[8];
        st_cpu_k4_scales(w[b].scales, sc, mn);
        int isum = 0, msum = 0;
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = w[b].qs + 32 * c;
            const int8_t *q8 = x[b].qs + 64 * c;
            int s0 = 0, s1 = 0;
            for (int l = 0; l < 32; l++) {
                s0 += (q[l] & 0xf) * q8[l];
                s1 += (q[l] >> 4) * q8[l + 32];
            }
            isum += sc[2 * c] * s0 + sc[2 * c + 1] * s1;
            msum += mn[2 * c] * (x[b].bsums[4 * c] + x[b].bsums[4 * c + 1]);
            msum += mn[2 * c + 1] * (x[b].bsums[4 * c + 2] + x[b].bsums[4 * c + 3]);
        }
        float dx = x[b].d;
        sum += dx * st_cpu_h2f(w[b].d) * (float)isum - dx * st_cpu_h2f(w[b].dmin) * (float)msum;
    }
    return sum;
}

static float dot_q5_k(int64_t k, const void *vw, const void *vx) {
    const st_block_q5_K *w = vw;
    const st_block_q8_K *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        uint8_t sc[8], mn[8];
        st_cpu_k4_scales(w[b].scales, sc, mn);
        int isum = 0, msum = 0;
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = w[b].qs + 32 * c;
            const int8_t *q8 = x[b].qs + 64 * c;
            int s0 = 0, s1 = 0;
            for (int l = 0; l < 32; l++) {
                int v0 = (q[l] & 0xf) | (((w[b].qh[l] >> (2 * c)) & 1) << 4);
                int v1 = (q[l] >> 4) | (((w[b].qh[l] >> (2 * c + 1)) & 1) << 4);
                s0 += v0 * q8[l];
                s1 += v1 * q8[l + 32];
            }
            isum += sc[2 * c] * s0 + sc[2 * c + 1] * s1;
            msum += mn[2 * c] * (x[b].bsums[4 * c] + x[b].bsums[4 * c + 1]);
            msum += mn[2 * c + 1] * (x[b].bsums[4 * c + 2] + x[b].bsums[4 * c + 3]);
        }
        float dx = x[b].d;
        sum += dx * st_cpu_h2f(w[b].d) * (float)isum - dx * st_cpu_h2f(w[b].dmin) * (float)msum;
    }
    return sum;
}

static float dot_q6_k(int64_t k, const void *vw, const void *vx) {
    const st_block_q6_K *w = vw;
    const st_block_q8_K *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        int isum = 0;
        for (int n = 0; n < 2; n++) {
            const uint8_t *ql = w[b].ql + 64 * n, *qh = w[b].qh + 32 * n;
            const int8_t *sc = w[b].scales + 8 * n, *q8 = x[b].qs + 128 * n;
            for (int part = 0; part < 4; part++) {
                /* part 0: ql[l] low, qh bits 0-1; 1: ql[l+32] low, bits 2-3;
                 * 2: ql[l] high, bits 4-5; 3: ql[l+32] high, bits 6-7 */
                const uint8_t *qlp = ql + (part & 1) * 32;
                int shift = (part >> 1) * 4;
                for (int h = 0; h < 2; h++) {
                    int s = 0;
                    for (int l = 16 * h; l < 16 * h + 16; l++) {
                        int v = ((qlp[l] >> shift) & 0xf) | (((qh[l] >> (2 * part)) & 3) << 4);
                        s += (v - 32) * q8[32 * part + l];
                    }
                    isum += sc[2 * part + h] * s;
                }
            }
        }
        sum += x[b].d * st_cpu_h2f(w[b].d) * (float)isum;
    }
    return sum;
}

static float dot_iq4_xs(int64_t k, const void *vw, const void *vx) {
    const st_block_iq4_xs *w = vw;
    const st_block_q8_K *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        int isum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = w[b].qs + 16 * ib;
            const int8_t *q8 = x[b].qs + 32 * ib;
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += st_iq4nl_values[q[j] & 0xf] * q8[j] + st_iq4nl_values[q[j] >> 4] * q8[j + 16];
            isum += (st_cpu_iq4xs_scale(&w[b], ib) - 32) * s;
        }
        sum += x[b].d * st_cpu_h2f(w[b].d) * (float)isum;
    }
    return sum;
}

/* ------------------------------------------------------------------ float weights . F32 */

static float dot_f32w(int64_t k, const void *vw, const void *vx) {
    const float *w = vw, *x = vx;
    float sum = 0.0f;
    for (int64_t i = 0; i < k; i++) sum += w[i] * x[i];
    return sum;
}

static float dot_f16w(int64_t k, const void *vw, const void *vx) {
    const uint16_t *w = vw;
    const float *x = vx;
    float sum = 0.0f;
    for (int64_t i = 0; i < k; i++) sum += st_cpu_h2f(w[i]) * x[i];
    return sum;
}

static float dot_bf16w(int64_t k, const void *vw, const void *vx) {
    const uint16_t *w = vw;
    const float *x = vx;
    float sum = 0.0f;
    for (int64_t i = 0; i < k; i++) sum += st_cpu_bf2f(w[i]) * x[i];
    return sum;
}

/* nr-row wrappers: each row is an independent single-row call (batch-invariant). */
#define ST_SCALAR_VEC_DOT(name, one)                                                                  \
    static void name(int64_t k, const void *w, const void *x, size_t xs, int nr, float *s) {          \
        for (int j = 0; j < nr; j++) s[j] = one(k, w, (const char *)x + (size_t)j * xs);              \
    }
ST_SCALAR_VEC_DOT(vd_q4_0, dot_q4_0)
ST_SCALAR_VEC_DOT(vd_q4_1, dot_q4_1)
ST_SCALAR_VEC_DOT(vd_q5_0, dot_q5_0)
ST_SCALAR_VEC_DOT(vd_q5_1, dot_q5_1)
ST_SCALAR_VEC_DOT(vd_q8_0, dot_q8_0)
ST_SCALAR_VEC_DOT(vd_iq4_nl, dot_iq4_nl)
ST_SCALAR_VEC_DOT(vd_q2_k, dot_q2_k)
ST_SCALAR_VEC_DOT(vd_q3_k, dot_q3_k)
ST_SCALAR_VEC_DOT(vd_q4_k, dot_q4_k)
ST_SCALAR_VEC_DOT(vd_q5_k, dot_q5_k)
ST_SCALAR_VEC_DOT(vd_q6_k, dot_q6_k)
ST_SCALAR_VEC_DOT(vd_iq4_xs, dot_iq4_xs)
ST_SCALAR_VEC_DOT(vd_f32, dot_f32w)
ST_SCALAR_VEC_DOT(vd_f16, dot_f16w)
ST_SCALAR_VEC_DOT(vd_bf16, dot_bf16w)

/* ------------------------------------------------------------------ float helpers */

static float sc_dot_f32(const float *a, const float *b, int64_t n) { return dot_f32w(n, a, b); }

static float sc_sumsq_f32(const float *x, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

static void sc_axpy_f32(float *y, float a, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void sc_scale_f32(float *y, float a, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] *= a;
}

static float sc_max_f32(const float *x, int64_t n) {
    float m = x[0];
    for (int64_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

static float sc_exp_sum_f32(float *x, float m, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        s += x[i];
    }
    return s;
}

static void sc_silu_mul_f32(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* Element e of row i of an attention block (F16 or F32 rows). */
static inline float attn_elem(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int i,
                              int64_t e) {
    const char *r = (const char *)base + (cells ? (int64_t)cells[i] : (int64_t)i) * stride;
    return rtype == ST_TYPE_F16 ? st_cpu_h2f(((const uint16_t *)r)[e]) : ((const float *)r)[e];
}

static void sc_attn_scores(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int n, int64_t d,
                           const float *q, int64_t ldq, int g, float *s, int64_t lds) {
    for (int h = 0; h < g; h++)
        for (int i = 0; i < n; i++) {
            float t = 0.0f;
            for (int64_t e = 0; e < d; e++) t += q[h * ldq + e] * attn_elem(rtype, base, stride, cells, i, e);
            s[h * lds + i] = t;
        }
}

static void sc_attn_accum(uint32_t rtype, const void *base, int64_t stride, const int32_t *cells, int n, int64_t d,
                          const float *p, int64_t ldp, int g, float *o, int64_t ldo) {
    for (int i = 0; i < n; i++)
        for (int h = 0; h < g; h++) {
            float w = p[h * ldp + i];
            for (int64_t e = 0; e < d; e++) o[h * ldo + e] += w * attn_elem(rtype, base, stride, cells, i, e);
        }
}

static int64_t sc_argmax_f32(const float *x, int64_t n) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; i++)
        if (x[i] == x[i] && (best < 0 || x[i] > x[best])) best = i;
    return best;
}

static void sc_f16_to_f32(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = st_cpu_h2f(x[i]);
}
static void sc_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = st_cpu_f2h(x[i]);
}
static void sc_bf16_to_f32(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = st_cpu_bf2f(x[i]);
}
static void sc_f32_to_bf16(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = st_cpu_f2bf(x[i]);
}

/* ------------------------------------------------------------------ the table */

static void set_wt(st_cpu_kernels *k, uint32_t type, uint32_t vec_type, st_cpu_from_float_fn ff,
                   st_cpu_vec_dot_fn vd) {
    k->wt[type].vec_type = vec_type;
    k->wt[type].from_float = ff;
    k->wt[type].vec_dot = vd;
    k->wt[type].to_float = st_cpu_dequant_fn(type);
}

void st_cpu_kernels_scalar(st_cpu_kernels *k) {
    memset(k, 0, sizeof *k);
    k->isa = "scalar";
    set_wt(k, ST_TYPE_F32, ST_TYPE_F32, NULL, vd_f32);
    set_wt(k, ST_TYPE_F16, ST_TYPE_F32, NULL, vd_f16);
    set_wt(k, ST_TYPE_BF16, ST_TYPE_F32, NULL, vd_bf16);
    set_wt(k, ST_TYPE_Q4_0, ST_TYPE_Q8_0, q8_0_from_float, vd_q4_0);
    set_wt(k, ST_TYPE_Q4_1, ST_TYPE_Q8_1, q8_1_from_float, vd_q4_1);
    set_wt(k, ST_TYPE_Q5_0, ST_TYPE_Q8_0, q8_0_from_float, vd_q5_0);
    set_wt(k, ST_TYPE_Q5_1, ST_TYPE_Q8_1, q8_1_from_float, vd_q5_1);
    set_wt(k, ST_TYPE_Q8_0, ST_TYPE_Q8_0, q8_0_from_float, vd_q8_0);
    set_wt(k, ST_TYPE_IQ4_NL, ST_TYPE_Q8_0, q8_0_from_float, vd_iq4_nl);
    set_wt(k, ST_TYPE_Q2_K, ST_TYPE_Q8_K, q8_k_from_float, vd_q2_k);
    set_wt(k, ST_TYPE_Q3_K, ST_TYPE_Q8_K, q8_k_from_float, vd_q3_k);
    set_wt(k, ST_TYPE_Q4_K, ST_TYPE_Q8_K, q8_k_from_float, vd_q4_k);
    set_wt(k, ST_TYPE_Q5_K, ST_TYPE_Q8_K, q8_k_from_float, vd_q5_k);
    set_wt(k, ST_TYPE_Q6_K, ST_TYPE_Q8_K, q8_k_from_float, vd_q6_k);
    set_wt(k, ST_TYPE_IQ4_XS, ST_TYPE_Q8_K, q8_k_from_float, vd_iq4_xs);
    st_cpu_kernels_fp4(k);
    k->dot_f32 = sc_dot_f32;
    k->sumsq_f32 = sc_sumsq_f32;
    k->axpy_f32 = sc_axpy_f32;
    k->scale_f32 = sc_scale_f32;
    k->max_f32 = sc_max_f32;
    k->exp_sum_f32 = sc_exp_sum_f32;
    k->f16_to_f32 = sc_f16_to_f32;
    k->f32_to_f16 = sc_f32_to_f16;
    k->bf16_to_f32 = sc_bf16_to_f32;
    k->f32_to_bf16 = sc_f32_to_bf16;
    k->silu_mul_f32 = sc_silu_mul_f32;
    k->attn_scores = sc_attn_scores;
    k->attn_accum = sc_attn_accum;
    k->argmax_f32 = sc_argmax_f32;
}
