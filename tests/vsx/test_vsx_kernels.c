/* SPDX-License-Identifier: Apache-2.0 */
/* The VSX kernel table of strata-cpu-vsx against the portable scalar table and a double-precision
 * reference, slot by slot: activation quantizers (bit-exact), vec_dot of every weight format
 * (normalized error, batch invariance), to_float, float helpers and F16/BF16 conversions.
 * Runs on ppc64le (under qemu in cross builds). Exit status 0 only when every check passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_kernels.h"
#include "quant/quant.h"
#include "vsx/kernels_vsx.h"

static int g_fail, g_checks;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        g_checks++;                                        \
        if (!(cond)) {                                     \
            g_fail++;                                      \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);    \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
        }                                                  \
    } while (0)

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd_u32(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static float rnd_unit(void) { return (float)(rnd_u32() & 0xffffff) / 16777216.0f; }
/* roughly normal, with an occasional outlier so block scales vary */
static float rnd_val(void) {
    float v = (rnd_unit() + rnd_unit() + rnd_unit() - 1.5f) * 2.0f;
    return (rnd_u32() % 61 == 0) ? v * 8.0f : v;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        printf("out of memory\n");
        exit(2);
    }
    return p;
}

/* Affine weights (Q4_1, Q5_1: value = d*q + m, m after d at the block's start) against Q8_1: the
 * format defines the min term through the row's stored s = d*sum(q) (an fp16), not through the
 * dequantized activations, so the reference does the same: sum (w - m)*x + m*s per block. */
static double ref_affine_q8_1(uint32_t wtype, const void *wq, const float *wd, const void *xq, const float *xd,
                              int64_t k) {
    const st_block_q8_1 *y = xq;
    size_t wbs = (size_t)st_type_get(wtype)->type_size;
    double ref = 0.0;
    for (int64_t b = 0; b < k / 32; b++) {
        st_fp16 mh;
        memcpy(&mh, (const char *)wq + (size_t)b * wbs + sizeof(st_fp16), sizeof mh);
        double m = st_fp16_to_f32(mh);
        for (int i = 0; i < 32; i++) ref += ((double)wd[32 * b + i] - m) * xd[32 * b + i];
        ref += m * st_fp16_to_f32(y[b].s);
    }
    return ref;
}

/* ---- weight formats ----------------------------------------------------------------------- */

static void test_weight_type(const st_cpu_kernels *sv, const st_cpu_kernels *vv, uint32_t type, int64_t k) {
    const char *tn = st_type_name(type);
    const st_cpu_weight_kernels *S = &sv->wt[type], *V = &vv->wt[type];
    CHECK(V->vec_dot && V->to_float, "%s: VSX table lacks vec_dot/to_float", tn);
    if (!V->vec_dot || !V->to_float) return;
    enum { NR = ST_CPU_MAX_NR, M = 3 };
    size_t wrow = st_row_size(type, k), xrow = st_row_size(V->vec_type, k);
    CHECK(wrow > 0 && xrow > 0, "%s: row sizes for k=%lld", tn, (long long)k);
    if (!wrow || !xrow) return;
    float *wf = xmalloc(sizeof(float) * (size_t)k * M), *wd = xmalloc(sizeof(float) * (size_t)k * M);
    float *xf = xmalloc(sizeof(float) * (size_t)k * NR), *xd = xmalloc(sizeof(float) * (size_t)k * NR);
    float *tmp = xmalloc(sizeof(float) * (size_t)k);
    /* odd offsets: kernels must accept unaligned block rows */
    char *wq = xmalloc(wrow * M + 3), *xq_v = xmalloc(xrow * NR + 5), *xq_s = xmalloc(xrow * NR + 5);
    char *wqa = wq + 1, *xv = xq_v + 1, *xs = xq_s + 1;
    for (int64_t i = 0; i < k * M; i++) wf[i] = rnd_val();
    for (int64_t i = 0; i < k * NR; i++) xf[i] = rnd_val() * (1.0f + (float)(i / k));
    for (int m = 0; m < M; m++) {
        CHECK(st_quantize_row(type, wf + m * k, wqa + m * wrow, k) == 0, "%s: quantize", tn);
        CHECK(st_dequantize_row(type, wqa + m * wrow, wd + m * k, k) == 0, "%s: dequantize", tn);
        V->to_float(wqa + m * wrow, tmp, k);
        CHECK(memcmp(tmp, wd + m * k, sizeof(float) * (size_t)k) == 0, "%s: to_float differs from st_dequantize_row", tn);
    }
    /* activation rows: VSX quantizer bit-exact with the scalar one when both use the same partner */
    for (int j = 0; j < NR; j++) {
        if (V->from_float) {
            V->from_float(xf + j * k, xv + j * xrow, k);
            if (S->vec_type == V->vec_type && S->from_float) {
                S->from_float(xf + j * k, xs + j * xrow, k);
                CHECK(memcmp(xv + j * xrow, xs + j * xrow, xrow) == 0, "%s: %s from_float differs from scalar (row %d)",
                      tn, st_type_name(V->vec_type), j);
            }
            CHECK(st_dequantize_row(V->vec_type, xv + j * xrow, xd + j * k, k) == 0, "%s: dequantize x", tn);
        } else {
            memcpy(xv + j * xrow, xf + j * k, sizeof(float) * (size_t)k);
            memcpy(xd + j * k, xf + j * k, sizeof(float) * (size_t)k);
        }
    }
    double worst = 0.0;
    for (int m = 0; m < M; m++) {
        float s_all[NR], s_one, s_sc[NR];
        V->vec_dot(k, wqa + m * wrow, xv, xrow, NR, s_all);
        if (S->vec_type == V->vec_type) S->vec_dot(k, wqa + m * wrow, xv, xrow, NR, s_sc);
        for (int nr = 2; nr < NR; nr += 3) { /* groups of 2 and 5 rows starting at row 1 */
            float s_part[NR];
            V->vec_dot(k, wqa + m * wrow, xv + xrow, xrow, nr, s_part);
            CHECK(memcmp(s_part, s_all + 1, sizeof(float) * (size_t)nr) == 0, "%s k=%lld: nr=%d differs from nr=%d", tn,
                  (long long)k, nr, NR);
        }
        for (int j = 0; j < NR; j++) {
            V->vec_dot(k, wqa + m * wrow, xv + j * xrow, xrow, 1, &s_one);
            CHECK(memcmp(&s_one, &s_all[j], sizeof s_one) == 0, "%s k=%lld: nr=%d row %d gives %.9g, nr=1 gives %.9g",
                  tn, (long long)k, NR, j, s_all[j], s_one);
            double ref = 0.0, mag = 0.0;
            for (int64_t i = 0; i < k; i++) {
                ref += (double)wd[m * k + i] * xd[j * k + i];
                mag += fabs((double)wd[m * k + i] * xd[j * k + i]);
            }
            if (V->vec_type == ST_TYPE_Q8_1) ref = ref_affine_q8_1(type, wqa + m * wrow, wd + m * k, xv + j * xrow, xd + j * k, k);
            double err = fabs(s_all[j] - ref) / (mag > 0 ? mag : 1.0);
            if (err > worst) worst = err;
            CHECK(err <= 2e-6, "%s k=%lld row %d/%d: vsx %.9g ref %.9g (normalized error %.3g)", tn, (long long)k, m,
                  j, s_all[j], ref, err);
            if (S->vec_type == V->vec_type) {
                double e2 = fabs((double)s_all[j] - s_sc[j]) / (mag > 0 ? mag : 1.0);
                CHECK(e2 <= 2e-6, "%s k=%lld: vsx %.9g scalar %.9g", tn, (long long)k, s_all[j], s_sc[j]);
            }
        }
    }
    printf("  %-7s k=%-5lld partner %-5s worst normalized error %.2e\n", tn, (long long)k, st_type_name(V->vec_type),
           worst);
    free(wf), free(wd), free(xf), free(xd), free(tmp), free(wq), free(xq_v), free(xq_s);
}

/* ---- float helpers --------------------------------------------------------------------------- */

static void test_float_helpers(const st_cpu_kernels *sv, const st_cpu_kernels *vv) {
    static const int64_t ns[] = {1, 3, 4, 7, 8, 15, 16, 17, 33, 100, 1023, 4096};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int64_t n = ns[t];
        float *a = xmalloc(sizeof(float) * (size_t)n), *b = xmalloc(sizeof(float) * (size_t)n);
        float *y1 = xmalloc(sizeof(float) * (size_t)n), *y2 = xmalloc(sizeof(float) * (size_t)n);
        double mag = 0, ref = 0, sq = 0;
        for (int64_t i = 0; i < n; i++) {
            a[i] = rnd_val();
            b[i] = rnd_val();
            ref += (double)a[i] * b[i];
            mag += fabs((double)a[i] * b[i]);
            sq += (double)a[i] * a[i];
        }
        CHECK(fabs(vv->dot_f32(a, b, n) - ref) <= 1e-6 * mag + 1e-30, "dot_f32 n=%lld", (long long)n);
        CHECK(fabs(vv->sumsq_f32(a, n) - sq) <= 1e-6 * sq + 1e-30, "sumsq_f32 n=%lld", (long long)n);
        /* axpy and scale: element-wise, one rounding each: bit-exact with scalar apart from FMA
         * contraction, so compare to 1 ulp */
        memcpy(y1, b, sizeof(float) * (size_t)n);
        memcpy(y2, b, sizeof(float) * (size_t)n);
        vv->axpy_f32(y1, 0.37f, a, n);
        sv->axpy_f32(y2, 0.37f, a, n);
        int bad = 0;
        for (int64_t i = 0; i < n; i++)
            if (fabsf(y1[i] - y2[i]) > 2.4e-7f * (fabsf(y2[i]) + fabsf(0.37f * a[i]))) bad++;
        CHECK(bad == 0, "axpy_f32 n=%lld: %d elements off", (long long)n, bad);
        memcpy(y1, a, sizeof(float) * (size_t)n);
        memcpy(y2, a, sizeof(float) * (size_t)n);
        vv->scale_f32(y1, -1.7f, n);
        sv->scale_f32(y2, -1.7f, n);
        CHECK(memcmp(y1, y2, sizeof(float) * (size_t)n) == 0, "scale_f32 n=%lld", (long long)n);
        a[(int64_t)(rnd_u32() % (uint32_t)n)] = 50.0f;
        CHECK(vv->max_f32(a, n) == sv->max_f32(a, n), "max_f32 n=%lld", (long long)n);
        /* exp_sum against double exp, a few ulp; include values far below the max */
        for (int64_t i = 0; i < n; i++) y1[i] = a[i] * 3.0f - (i % 5 == 0 ? 95.0f : 0.0f);
        if (n > 2) y1[1] = -INFINITY;
        float m = sv->max_f32(y1, n);
        memcpy(y2, y1, sizeof(float) * (size_t)n);
        float s = vv->exp_sum_f32(y1, m, n);
        double sref = 0;
        int ulp_bad = 0;
        for (int64_t i = 0; i < n; i++) {
            float d = y2[i] - m; /* the contract: expf(x - m) with x - m rounded to float */
            double e = exp((double)d);
            sref += e;
            if (fabs(y1[i] - e) > 4.0 * 1.2e-7 * e + 1e-44) {
                if (ulp_bad < 3) printf("  exp(%.9g) = %.9g, want %.9g\n", d, y1[i], e);
                ulp_bad++;
            }
        }
        CHECK(ulp_bad == 0, "exp_sum_f32 n=%lld: %d elements beyond 4 ulp", (long long)n, ulp_bad);
        CHECK(fabs(s - sref) <= 1e-6 * sref, "exp_sum_f32 n=%lld: sum %.9g vs %.9g", (long long)n, s, sref);
        if (n > 2) CHECK(y1[1] == 0.0f, "exp_sum_f32: exp(-inf) = %g, want 0", y1[1]);
        free(a), free(b), free(y1), free(y2);
    }
    float t[9] = {0.0f, -80.0f, -87.0f, -95.0f, -103.0f, -105.0f, -200.0f, 1.0f, NAN};
    float u[9];
    memcpy(u, t, sizeof t);
    vv->exp_sum_f32(u, 0.0f, 9);
    CHECK(isnan(u[8]), "exp(NaN) = %g, want NaN", u[8]);
    for (int i = 0; i < 8; i++) {
        double e = exp((double)t[i]);
        CHECK(fabs(u[i] - e) <= 4.0 * 1.2e-7 * e + 1.5e-45, "exp(%g) = %.9g, want %.9g", t[i], u[i], e);
    }
}

/* ---- conversions: bit-exact against the scalar routines on random bit patterns ---------------- */

static int same_or_both_nan(float a, float b) { return memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b)); }

static void test_conversions(const st_cpu_kernels *sv, const st_cpu_kernels *vv) {
    enum { N = 4099 };
    uint16_t *h = xmalloc(2 * N), *h1 = xmalloc(2 * N), *h2 = xmalloc(2 * N);
    float *f = xmalloc(4 * N), *f1 = xmalloc(4 * N), *f2 = xmalloc(4 * N);
    for (int round = 0; round < 16; round++) {
        for (int i = 0; i < N; i++) {
            h[i] = (uint16_t)rnd_u32();
            uint32_t u = rnd_u32() << 8 ^ rnd_u32();
            if (round % 2) u = (u & 0x807fffffu) | ((uint32_t)(100 + rnd_u32() % 50) << 23); /* half range */
            if (i % 97 == 0) u = 0x7fc00000u | (rnd_u32() & 0x3fffff);                       /* NaN */
            memcpy(&f[i], &u, 4);
        }
        vv->f16_to_f32(h, f1, N);
        sv->f16_to_f32(h, f2, N);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += !same_or_both_nan(f1[i], f2[i]);
        CHECK(bad == 0, "f16_to_f32: %d of %d differ", bad, N);
        vv->f32_to_f16(f, h1, N);
        sv->f32_to_f16(f, h2, N);
        CHECK(memcmp(h1, h2, 2 * N) == 0, "f32_to_f16 differs from scalar");
        vv->bf16_to_f32(h, f1, N);
        sv->bf16_to_f32(h, f2, N);
        CHECK(memcmp(f1, f2, 4 * N) == 0, "bf16_to_f32 differs from scalar");
        vv->f32_to_bf16(f, h1, N);
        sv->f32_to_bf16(f, h2, N);
        CHECK(memcmp(h1, h2, 2 * N) == 0, "f32_to_bf16 differs from scalar");
    }
    free(h), free(h1), free(h2), free(f), free(f1), free(f2);
}

int main(void) {
    st_cpu_kernels sv, vv;
    st_cpu_kernels_scalar(&sv);
    st_vsx_kernels_init(&vv);
    CHECK(strcmp(vv.isa, "vsx") == 0, "isa = %s", vv.isa);
    static const uint32_t types[] = {ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0, ST_TYPE_Q4_1,
                                     ST_TYPE_Q5_0, ST_TYPE_Q5_1, ST_TYPE_Q8_0, ST_TYPE_IQ4_NL, ST_TYPE_Q2_K,
                                     ST_TYPE_Q3_K, ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_XS};
    printf("vec_dot per weight format (VSX vs double reference):\n");
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const st_type_info *ti = st_type_get(types[t]);
        int64_t bs = ti->block_size;
        int64_t ks[3] = {bs == 1 ? 37 : bs, bs == 1 ? 1000 : bs * 3, 4096};
        for (int i = 0; i < 3; i++) test_weight_type(&sv, &vv, types[t], ks[i]);
    }
    test_float_helpers(&sv, &vv);
    test_conversions(&sv, &vv);
    printf("%s: %d checks, %d failed\n", g_fail ? "FAIL" : "PASS", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
