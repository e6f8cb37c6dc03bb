/* SPDX-License-Identifier: Apache-2.0 */
/* POWER9 VSX kernel table of strata-cpu-vsx: float helpers, F16/BF16 conversions and the dot
 * kernels of the float weight formats (F32, F16, BF16); the quantized formats live in
 * kernels_vsx_legacy.c and kernels_vsx_kquant.c. Compiled with -mcpu=power9 -mvsx. */
#include "vsx/kernels_vsx.h"

#include <math.h>

/* ---- float helpers --------------------------------------------------------------------- */

static float vsx_dot_f32(const float *a, const float *b, int64_t n) {
    st_v4f s0 = vec_splats(0.0f), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vec_madd(vec_xl(0, a + i), vec_xl(0, b + i), s0);
        s1 = vec_madd(vec_xl(0, a + i + 4), vec_xl(0, b + i + 4), s1);
        s2 = vec_madd(vec_xl(0, a + i + 8), vec_xl(0, b + i + 8), s2);
        s3 = vec_madd(vec_xl(0, a + i + 12), vec_xl(0, b + i + 12), s3);
    }
    for (; i + 4 <= n; i += 4) s0 = vec_madd(vec_xl(0, a + i), vec_xl(0, b + i), s0);
    float s = st_vsx_hsum(vec_add(vec_add(s0, s1), vec_add(s2, s3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static float vsx_sumsq_f32(const float *x, int64_t n) { return vsx_dot_f32(x, x, n); }

static void vsx_axpy_f32(float *y, float a, const float *x, int64_t n) {
    st_v4f va = vec_splats(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vec_xst(vec_madd(va, vec_xl(0, x + i), vec_xl(0, y + i)), 0, y + i);
        vec_xst(vec_madd(va, vec_xl(0, x + i + 4), vec_xl(0, y + i + 4)), 0, y + i + 4);
    }
    for (; i + 4 <= n; i += 4) vec_xst(vec_madd(va, vec_xl(0, x + i), vec_xl(0, y + i)), 0, y + i);
    for (; i < n; i++) y[i] += a * x[i];
}

static void vsx_scale_f32(float *y, float a, int64_t n) {
    st_v4f va = vec_splats(a);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vec_xst(vec_mul(vec_xl(0, y + i), va), 0, y + i);
    for (; i < n; i++) y[i] *= a;
}

static float vsx_max_f32(const float *x, int64_t n) {
    float m = x[0];
    int64_t i = 0;
    if (n >= 4) {
        st_v4f vm = vec_xl(0, x);
        for (i = 4; i + 4 <= n; i += 4) vm = vec_max(vm, vec_xl(0, x + i));
        m = vm[0];
        for (int j = 1; j < 4; j++) m = vm[j] > m ? vm[j] : m;
    }
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* e^t for t <= 0 (lanes above 0 work too, up to 88): t = n ln2 + r, |r| <= ln2/2, e^r by its
 * Taylor series to r^7 (truncation < 1e-8 relative), 2^n applied in two halves so results in
 * the subnormal range stay right. Lanes below -104 (and -inf) give exactly 0; NaN stays NaN. */
static st_v4f vsx_exp_neg(st_v4f t) {
    const st_v4f log2e = vec_splats(1.44269504088896341f);
    const st_v4f ln2_hi = vec_splats(0.693145751953125f); /* few mantissa bits: n*ln2_hi is exact */
    const st_v4f ln2_lo = vec_splats(1.428606765330187e-06f);
    __vector __bool int tiny = vec_cmplt(t, vec_splats(-104.0f));
    st_v4f tc = vec_max(t, vec_splats(-104.0f));
    st_v4f fn = vec_round(vec_mul(tc, log2e));
    st_v4f r = vec_nmsub(fn, ln2_hi, tc); /* tc - fn*ln2_hi */
    r = vec_nmsub(fn, ln2_lo, r);
    st_v4f p = vec_splats(1.0f / 5040.0f);
    p = vec_madd(p, r, vec_splats(1.0f / 720.0f));
    p = vec_madd(p, r, vec_splats(1.0f / 120.0f));
    p = vec_madd(p, r, vec_splats(1.0f / 24.0f));
    p = vec_madd(p, r, vec_splats(1.0f / 6.0f));
    p = vec_madd(p, r, vec_splats(0.5f));
    p = vec_madd(p, r, vec_splats(1.0f));
    p = vec_madd(p, r, vec_splats(1.0f));
    st_v4i n = vec_cts(fn, 0);
    st_v4i n1 = vec_sra(n, vec_splats(1u)); /* floor(n/2) */
    st_v4i n2 = vec_sub(n, n1);
    st_v4i bias = vec_splats(127);
    st_v4f p1 = (st_v4f)vec_sl(vec_add(n1, bias), vec_splats(23u));
    st_v4f p2 = (st_v4f)vec_sl(vec_add(n2, bias), vec_splats(23u));
    st_v4f e = vec_sel(vec_mul(vec_mul(p, p1), p2), vec_splats(0.0f), tiny);
    return vec_sel(t, e, vec_cmpeq(t, t)); /* NaN lanes stay NaN */
}

static float vsx_exp_sum_f32(float *x, float m, int64_t n) {
    st_v4f vm = vec_splats(m), acc = vec_splats(0.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        st_v4f e = vsx_exp_neg(vec_sub(vec_xl(0, x + i), vm));
        vec_xst(e, 0, x + i);
        acc = vec_add(acc, e);
    }
    float s = st_vsx_hsum(acc);
    if (i < n) { /* tail through the same vector code, so every element gets identical math */
        float t[4] = {m, m, m, m};
        for (int64_t j = i; j < n; j++) t[j - i] = x[j];
        st_v4f e = vsx_exp_neg(vec_sub(vec_xl(0, t), vm));
        for (int64_t j = i; j < n; j++) {
            x[j] = e[j - i];
            s += x[j];
        }
    }
    return s;
}

/* ---- conversions --------------------------------------------------------------------- */

static void vsx_f16_to_f32(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        st_v8u h = vec_xl(0, x + i);
        vec_xst(vec_extract_fp32_from_shorth(h), 0, y + i);
        vec_xst(vec_extract_fp32_from_shortl(h), 0, y + i + 4);
    }
    for (; i < n; i++) y[i] = st_cpu_h2f(x[i]);
}

static void vsx_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
    /* xvcvsphp rounds to nearest even like st_cpu_f2h; NaN encodings may differ, so groups
     * holding one are converted by the scalar routine. */
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        st_v4f a = vec_xl(0, x + i), b = vec_xl(0, x + i + 4);
        if (!vec_all_eq(a, a) || !vec_all_eq(b, b)) {
            for (int j = 0; j < 8; j++) y[i + j] = st_cpu_f2h(x[i + j]);
            continue;
        }
        vec_xst(vec_pack_to_short_fp32(a, b), 0, y + i);
    }
    for (; i < n; i++) y[i] = st_cpu_f2h(x[i]);
}

/* bf16 bits in the high half of each 32-bit lane = the float. */
static inline void vsx_bf16_widen(st_v8u h, st_v4f *lo, st_v4f *hi) {
    st_v8u z = vec_splats((unsigned short)0);
    *lo = (st_v4f)vec_mergeh(z, h);
    *hi = (st_v4f)vec_mergel(z, h);
}

static void vsx_bf16_to_f32(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        st_v4f a, b;
        vsx_bf16_widen(vec_xl(0, x + i), &a, &b);
        vec_xst(a, 0, y + i);
        vec_xst(b, 0, y + i + 4);
    }
    for (; i < n; i++) y[i] = st_cpu_bf2f(x[i]);
}

static void vsx_f32_to_bf16(const float *x, uint16_t *y, int64_t n) {
    const st_v4u one = vec_splats(1u), bias = vec_splats(0x7fffu), sixteen = vec_splats(16u);
    const st_v4u absmask = vec_splats(0x7fffffffu), inf = vec_splats(0x7f800000u), quiet = vec_splats(0x40u);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        st_v4u r[2];
        for (int h = 0; h < 2; h++) {
            st_v4u u = (st_v4u)vec_xl(0, x + i + 4 * h);
            st_v4u rounded = vec_sr(vec_add(u, vec_add(bias, vec_and(vec_sr(u, sixteen), one))), sixteen);
            st_v4u nan = vec_or(vec_sr(u, sixteen), quiet);
            r[h] = vec_sel(rounded, nan, vec_cmpgt(vec_and(u, absmask), inf));
        }
        /* keep the low 16 bits of each lane, lanes in order */
        vec_xst(vec_pack(r[0], r[1]), 0, y + i);
    }
    for (; i < n; i++) y[i] = st_cpu_f2bf(x[i]);
}

/* ---- dot kernels of float weight formats (activations F32) ---------------------------- */

static void vsx_vec_dot_f32(int64_t k, const void *w, const void *x, size_t x_stride, int nr, float *s) {
    for (int j = 0; j < nr; j++) s[j] = vsx_dot_f32(w, (const float *)((const char *)x + j * x_stride), k);
}

/* Weights widened 8 at a time into (lo, hi); each row keeps 2 accumulators summed in a fixed
 * order, so a row's result does not depend on nr. */
#define ST_VSX_DOT_WIDE(name, WIDEN, scalar_cvt)                                                     \
    static void name(int64_t k, const void *w, const void *x, size_t x_stride, int nr, float *s) {  \
        const uint16_t *wh = w;                                                                      \
        st_v4f acc0[ST_CPU_MAX_NR], acc1[ST_CPU_MAX_NR];                                             \
        for (int j = 0; j < nr; j++) acc0[j] = acc1[j] = vec_splats(0.0f);                           \
        int64_t i = 0;                                                                               \
        for (; i + 8 <= k; i += 8) {                                                                 \
            st_v4f lo, hi;                                                                           \
            WIDEN(vec_xl(0, wh + i), &lo, &hi);                                                      \
            for (int j = 0; j < nr; j++) {                                                           \
                const float *xj = (const float *)((const char *)x + j * x_stride) + i;               \
                acc0[j] = vec_madd(lo, vec_xl(0, xj), acc0[j]);                                      \
                acc1[j] = vec_madd(hi, vec_xl(0, xj + 4), acc1[j]);                                  \
            }                                                                                        \
        }                                                                                            \
        for (int j = 0; j < nr; j++) {                                                               \
            const float *xj = (const float *)((const char *)x + j * x_stride);                       \
            float r = st_vsx_hsum(vec_add(acc0[j], acc1[j]));                                        \
            for (int64_t t = i; t < k; t++) r += scalar_cvt(wh[t]) * xj[t];                          \
            s[j] = r;                                                                                \
        }                                                                                            \
    }

static inline void vsx_f16_widen(st_v8u h, st_v4f *lo, st_v4f *hi) {
    *lo = vec_extract_fp32_from_shorth(h);
    *hi = vec_extract_fp32_from_shortl(h);
}

ST_VSX_DOT_WIDE(vsx_vec_dot_f16, vsx_f16_widen, st_cpu_h2f)
ST_VSX_DOT_WIDE(vsx_vec_dot_bf16, vsx_bf16_widen, st_cpu_bf2f)

static void vsx_to_float_f16(const void *w, float *y, int64_t k) { vsx_f16_to_f32(w, y, k); }
static void vsx_to_float_bf16(const void *w, float *y, int64_t k) { vsx_bf16_to_f32(w, y, k); }

void st_vsx_kernels_init(st_cpu_kernels *k) {
    st_cpu_kernels_scalar(k);
    k->isa = "vsx";
    k->dot_f32 = vsx_dot_f32;
    k->sumsq_f32 = vsx_sumsq_f32;
    k->axpy_f32 = vsx_axpy_f32;
    k->scale_f32 = vsx_scale_f32;
    k->max_f32 = vsx_max_f32;
    k->exp_sum_f32 = vsx_exp_sum_f32;
    k->f16_to_f32 = vsx_f16_to_f32;
    k->f32_to_f16 = vsx_f32_to_f16;
    k->bf16_to_f32 = vsx_bf16_to_f32;
    k->f32_to_bf16 = vsx_f32_to_bf16;

    k->wt[ST_TYPE_F32].vec_type = ST_TYPE_F32;
    k->wt[ST_TYPE_F32].vec_dot = vsx_vec_dot_f32;
    k->wt[ST_TYPE_F16].vec_type = ST_TYPE_F32;
    k->wt[ST_TYPE_F16].from_float = NULL;
    k->wt[ST_TYPE_F16].vec_dot = vsx_vec_dot_f16;
    k->wt[ST_TYPE_F16].to_float = vsx_to_float_f16;
    k->wt[ST_TYPE_BF16].vec_type = ST_TYPE_F32;
    k->wt[ST_TYPE_BF16].from_float = NULL;
    k->wt[ST_TYPE_BF16].vec_dot = vsx_vec_dot_bf16;
    k->wt[ST_TYPE_BF16].to_float = vsx_to_float_bf16;

    st_vsx_fill_legacy(k);
    st_vsx_fill_kquant(k);
}
