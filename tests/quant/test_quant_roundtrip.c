/* SPDX-License-Identifier: Apache-2.0 */
/* Quantize -> dequantize round trips for every format: relative RMS error within a bound
 * set by the format's bit width, exact zeros for zero input, and the dot product matches
 * dequantize-then-accumulate. */
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "st_check.h"

#define N 4096

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static double urand(void) { /* uniform (0,1) */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(g_rng >> 11) + 0.5) / 9007199254740992.0;
}

static float gauss(void) {
    double u = urand(), v = urand();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

struct bound {
    uint32_t type;
    double max_rel_rms; /* relative RMS error bound on Gaussian data */
};

/* Bounds follow the bits per weight: about step/sqrt(12) of a block's range, with margin. */
static const struct bound g_bounds[] = {
    {ST_TYPE_F32, 0.0},      {ST_TYPE_F16, 5e-4},     {ST_TYPE_BF16, 4e-3},   {ST_TYPE_Q8_0, 0.008},
    {ST_TYPE_Q8_1, 0.008},   {ST_TYPE_Q8_K, 0.008},   {ST_TYPE_Q6_K, 0.03},   {ST_TYPE_Q5_0, 0.06},
    {ST_TYPE_Q5_1, 0.06},    {ST_TYPE_Q5_K, 0.05},    {ST_TYPE_Q4_0, 0.12},   {ST_TYPE_Q4_1, 0.11},
    {ST_TYPE_Q4_K, 0.10},    {ST_TYPE_IQ4_NL, 0.11},  {ST_TYPE_IQ4_XS, 0.11}, {ST_TYPE_Q3_K, 0.22},
    {ST_TYPE_Q2_K, 0.40},    {ST_TYPE_MXFP4, 0.16},
};

static double rel_rms(const float *a, const float *b, int n) {
    double e = 0, s = 0;
    for (int i = 0; i < n; i++) {
        e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        s += (double)a[i] * a[i];
    }
    return s > 0 ? sqrt(e / s) : sqrt(e);
}

int main(void) {
    static float x[N], y[N], xs[N], w[N];
    static unsigned char q[N * 4];
    for (int i = 0; i < N; i++) {
        x[i] = gauss() * 0.05f; /* weights-like scale */
        xs[i] = gauss();
    }
    /* a skewed (all-positive) and an outlier-heavy variant */
    static float pos[N], outl[N];
    for (int i = 0; i < N; i++) {
        pos[i] = fabsf(x[i]) + 0.01f;
        outl[i] = x[i] * ((i % 97) == 0 ? 20.0f : 1.0f);
    }
    for (size_t t = 0; t < sizeof g_bounds / sizeof g_bounds[0]; t++) {
        uint32_t type = g_bounds[t].type;
        const char *name = st_type_name(type);
        size_t rs = st_row_size(type, N);
        ST_CHECK(rs > 0 && rs <= sizeof q);
        memset(q, 0xA5, sizeof q);
        ST_CHECK(st_quantize_row(type, x, q, N) == 0);
        for (int i = 0; i < N; i++) y[i] = NAN;
        ST_CHECK(st_dequantize_row(type, q, y, N) == 0);
        double r = rel_rms(x, y, N);
        int finite = 1;
        for (int i = 0; i < N; i++) finite &= isfinite(y[i]) != 0;
        ST_CHECK_MSG(finite, "%s: non-finite output", name);
        ST_CHECK_MSG(r <= g_bounds[t].max_rel_rms, "%s: rel rms %.5f > %.5f", name, r, g_bounds[t].max_rel_rms);
        printf("%-7s gaussian rel rms %.5f (bound %.3f)", name, r, g_bounds[t].max_rel_rms);

        /* positive-only data (exercises the min of affine formats and sign handling) */
        ST_CHECK(st_quantize_row(type, pos, q, N) == 0);
        ST_CHECK(st_dequantize_row(type, q, y, N) == 0);
        double rp = rel_rms(pos, y, N);
        ST_CHECK_MSG(rp <= g_bounds[t].max_rel_rms * 1.5, "%s: positive rel rms %.5f", name, rp);
        printf("  positive %.5f", rp);

        /* outliers: looser, more so when one scale covers 256 elements */
        ST_CHECK(st_quantize_row(type, outl, q, N) == 0);
        ST_CHECK(st_dequantize_row(type, q, y, N) == 0);
        double ro = rel_rms(outl, y, N);
        double olim = g_bounds[t].max_rel_rms * (st_type_get(type)->block_size >= 256 ? 4.0 : 2.0);
        ST_CHECK_MSG(ro <= olim, "%s: outlier rel rms %.5f > %.5f", name, ro, olim);
        printf("  outliers %.5f\n", ro);

        /* zeros stay exactly zero */
        memset(w, 0, sizeof w);
        ST_CHECK(st_quantize_row(type, w, q, N) == 0);
        ST_CHECK(st_dequantize_row(type, q, y, N) == 0);
        int nz = 0;
        for (int i = 0; i < N; i++) nz += y[i] != 0.0f;
        ST_CHECK_MSG(nz == 0, "%s: %d nonzero outputs for zero input", name, nz);

        /* dot product = dequantize then accumulate in double */
        ST_CHECK(st_quantize_row(type, x, q, N) == 0);
        ST_CHECK(st_dequantize_row(type, q, y, N) == 0);
        double ref = 0;
        for (int i = 0; i < N; i++) ref += (double)y[i] * xs[i];
        double dot = st_dot_row_ref(type, q, xs, N);
        ST_CHECK_MSG(fabs(dot - ref) <= 1e-9 * (1 + fabs(ref)), "%s: dot %.12g vs %.12g", name, dot, ref);
        /* a partial row (one block) works too */
        int bs = st_type_get(type)->block_size;
        double ref1 = 0;
        for (int i = 0; i < bs; i++) ref1 += (double)y[i] * xs[i];
        ST_CHECK_NEAR(st_dot_row_ref(type, q, xs, bs), ref1, 1e-9 * (1 + fabs(ref1)));
    }
    /* non-finite input: the damage stays inside its own block (others round-trip as usual) */
    for (size_t t = 0; t < sizeof g_bounds / sizeof g_bounds[0]; t++) {
        uint32_t type = g_bounds[t].type;
        int bs = st_type_get(type)->block_size;
        if (bs == 1) continue;
        memcpy(w, x, sizeof w);
        w[3] = INFINITY;
        w[bs + 5] = NAN;
        w[2 * bs + 1] = -INFINITY;
        ST_CHECK(st_quantize_row(type, w, q, N) == 0);
        ST_CHECK(st_dequantize_row(type, q, y, N) == 0);
        double r = rel_rms(x + 3 * bs, y + 3 * bs, N - 3 * bs);
        ST_CHECK_MSG(r <= g_bounds[t].max_rel_rms, "%s: blocks after non-finite ones: rel rms %.5f", st_type_name(type), r);
    }

    /* plain integer types: saturating round */
    float iv[4] = {1.4f, -2.6f, 300.0f, -1e10f};
    int8_t i8[4];
    ST_CHECK(st_quantize_row(ST_TYPE_I8, iv, i8, 4) == 0);
    ST_CHECK(i8[0] == 1 && i8[1] == -3 && i8[2] == 127 && i8[3] == -128);
    int32_t i32[4];
    ST_CHECK(st_quantize_row(ST_TYPE_I32, iv, i32, 4) == 0);
    ST_CHECK(i32[2] == 300 && i32[3] == INT32_MIN);
    float back[4];
    ST_CHECK(st_dequantize_row(ST_TYPE_I32, i32, back, 4) == 0);
    ST_CHECK(back[0] == 1.0f && back[2] == 300.0f);
    /* Q8_1 keeps s = d * sum(qs); Q8_K keeps bsums = per-16 sums */
    st_block_q8_1 b1;
    ST_CHECK(st_quantize_row(ST_TYPE_Q8_1, xs, &b1, 32) == 0);
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += b1.qs[j];
    ST_CHECK_NEAR(st_fp16_to_f32(b1.s), st_fp16_to_f32(b1.d) * sum, fabs(st_fp16_to_f32(b1.d) * sum) * 2e-3 + 1e-6);
    st_block_q8_K bk;
    ST_CHECK(st_quantize_row(ST_TYPE_Q8_K, xs, &bk, 256) == 0);
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int j = 0; j < 16; j++) s += bk.qs[16 * g + j];
        ST_CHECK(bk.bsums[g] == s);
    }
    return st_check_result("test_quant_roundtrip");
}
