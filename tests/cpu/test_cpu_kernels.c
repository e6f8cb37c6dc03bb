/* SPDX-License-Identifier: Apache-2.0 */
/* Every slot of the x86 kernel table against the portable scalar slot: activation quantizers
 * bit for bit, dot products within a float-rounding bound, multi-row dots equal to single-row
 * dots bit for bit (batch invariance), f32 helpers and F16/BF16 conversions.
 * Built twice: with the AVX2 kernels and with the AVX-512 ones (ST_TEST_AVX512). */
#include "cpu/cpu_kernels.h"
#include "cpu_test_util.h"
#include "st_check.h"

void st_x86_kernels_init(st_cpu_kernels *k);

static st_cpu_kernels ksc, kx;

static const uint32_t k_wtypes[] = {ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0,   ST_TYPE_Q4_1,
                                    ST_TYPE_Q5_0, ST_TYPE_Q5_1, ST_TYPE_Q8_0, ST_TYPE_Q2_K,   ST_TYPE_Q3_K,
                                    ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_NL, ST_TYPE_IQ4_XS};

static void test_weight_type(uint32_t wt, int64_t K) {
    const st_cpu_weight_kernels *s = &ksc.wt[wt], *x = &kx.wt[wt];
    ST_CHECK(s->vec_dot && x->vec_dot && s->to_float && x->to_float);
    ST_CHECK(s->vec_type == x->vec_type);
    size_t wr = st_row_size(wt, K), xr = st_row_size(s->vec_type, K);
    ST_CHECK(wr > 0 && xr > 0);
    enum { NR = ST_CPU_MAX_NR };
    float *wf = malloc(sizeof(float) * (size_t)K), *xf = malloc(sizeof(float) * (size_t)(K * NR));
    float *wd = malloc(sizeof(float) * (size_t)K);
    uint8_t *w = malloc(wr), *qs = malloc(xr * NR), *qx = malloc(xr * NR);
    for (int trial = 0; trial < 4; trial++) {
        ct_fill(wf, K, trial == 3 ? 1e-3f : 1.0f);
        ST_CHECK(st_quantize_row(wt, wf, w, K) == 0);
        ct_fill(xf, K * NR, trial == 2 ? 50.0f : 1.0f);
        if (trial == 1) memset(xf, 0, sizeof(float) * (size_t)K); /* an all-zero row */
        /* activation quantizer: identical bytes */
        for (int j = 0; j < NR; j++) {
            if (s->from_float) {
                s->from_float(xf + j * K, qs + xr * (size_t)j, K);
                x->from_float(xf + j * K, qx + xr * (size_t)j, K);
            } else {
                memcpy(qs + xr * (size_t)j, xf + j * K, xr);
                memcpy(qx + xr * (size_t)j, xf + j * K, xr);
            }
        }
#ifdef ST_TEST_AVX512
        if (wt == ST_TYPE_Q4_K) { /* this build's Q4_K partner stores sub-blocks 0 2 1 3 4 6 5 7 */
            static const int pos[8] = {0, 2, 1, 3, 4, 6, 5, 7};
            uint8_t *perm = malloc(xr * NR);
            memcpy(perm, qs, xr * NR);
            for (int64_t b = 0; b < (int64_t)NR * (K / 256); b++) {
                const st_block_q8_K *src = (const st_block_q8_K *)(qs + (size_t)b * sizeof(st_block_q8_K));
                st_block_q8_K *dst = (st_block_q8_K *)(perm + (size_t)b * sizeof(st_block_q8_K));
                for (int i = 0; i < 8; i++) {
                    memcpy(dst->qs + 32 * pos[i], src->qs + 32 * i, 32);
                    dst->bsums[2 * pos[i]] = src->bsums[2 * i];
                    dst->bsums[2 * pos[i] + 1] = src->bsums[2 * i + 1];
                }
            }
            ST_CHECK_MSG(memcmp(perm, qx, xr * NR) == 0, "Q4_K: from_float is not the permuted Q8_K");
            free(perm);
        } else
#endif
        ST_CHECK_MSG(memcmp(qs, qx, xr * NR) == 0, "%s: from_float differs from scalar", st_type_name(wt));
        /* dots: SIMD vs scalar within a rounding bound; multi-row == single-row bits */
        s->to_float(w, wd, K);
        float ds[NR], dx[NR], d1[NR];
        s->vec_dot(K, w, qs, xr, NR, ds);
        x->vec_dot(K, w, qx, xr, NR, dx);
        for (int j = 0; j < NR; j++) {
            double bound = 0;
            for (int64_t i = 0; i < K; i++) bound += fabs((double)wd[i] * xf[j * K + i]);
            ST_CHECK_MSG(fabs((double)ds[j] - dx[j]) <= 2e-5 * bound + 1e-30, "%s K=%lld row %d: scalar %.9g simd %.9g",
                         st_type_name(wt), (long long)K, j, ds[j], dx[j]);
            x->vec_dot(K, w, qx + xr * (size_t)j, xr, 1, &d1[j]);
            ST_CHECK_MSG(memcmp(&d1[j], &dx[j], sizeof(float)) == 0, "%s: row %d alone %.9g, in 8 rows %.9g",
                         st_type_name(wt), j, d1[j], dx[j]);
        }
        for (int nr = 2; nr < NR; nr++) {
            float dn[NR];
            x->vec_dot(K, w, qx, xr, nr, dn);
            ST_CHECK_MSG(memcmp(dn, dx, sizeof(float) * (size_t)nr) == 0, "%s: nr=%d differs", st_type_name(wt), nr);
        }
        /* the scalar kernel is itself batch-invariant */
        s->vec_dot(K, w, qs + xr * 3, xr, 1, &d1[0]);
        ST_CHECK(memcmp(&d1[0], &ds[3], sizeof(float)) == 0);
        /* to_float of the SIMD table agrees */
        float *wd2 = malloc(sizeof(float) * (size_t)K);
        x->to_float(w, wd2, K);
        ST_CHECK(memcmp(wd, wd2, sizeof(float) * (size_t)K) == 0);
        free(wd2);
    }
    /* vec_dot_rows (when the ISA has it): the same bits as vec_dot, row by row, for every nr */
    if (x->vec_dot_rows) {
        enum { MR = 5 };
        size_t wstride = wr + 16; /* rows need not be packed (a gap that keeps the blocks aligned) */
        uint8_t *wm = malloc(wstride * MR);
        for (int m = 0; m < MR; m++) {
            ct_fill(wf, K, 1.0f);
            ST_CHECK(st_quantize_row(wt, wf, wm + wstride * (size_t)m, K) == 0);
        }
        for (int nr = 1; nr <= NR; nr++) {
            float sr[MR * (NR + 1)], s1[NR];
            x->vec_dot_rows(K, wm, wstride, MR, qx, xr, nr, sr, (size_t)nr + 1);
            for (int m = 0; m < MR; m++) {
                x->vec_dot(K, wm + wstride * (size_t)m, qx, xr, nr, s1);
                ST_CHECK_MSG(memcmp(s1, sr + m * (nr + 1), sizeof(float) * (size_t)nr) == 0,
                             "%s K=%lld: vec_dot_rows differs from vec_dot (nr=%d, row %d)", st_type_name(wt),
                             (long long)K, nr, m);
            }
        }
        free(wm);
    }
    free(wf);
    free(xf);
    free(wd);
    free(w);
    free(qs);
    free(qx);
}

static void test_helpers(void) {
    for (int64_t n = 1; n < 200; n += 13) {
        float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
        float *c = malloc(sizeof(float) * (size_t)n), *d = malloc(sizeof(float) * (size_t)n);
        ct_fill(a, n, 3.0f);
        ct_fill(b, n, 3.0f);
        double ab = 0;
        for (int64_t i = 0; i < n; i++) ab += fabs((double)a[i] * b[i]);
        ST_CHECK(fabs(ksc.dot_f32(a, b, n) - kx.dot_f32(a, b, n)) <= 1e-5 * ab);
        ST_CHECK(fabs(ksc.sumsq_f32(a, n) - kx.sumsq_f32(a, n)) <= 1e-5 * ksc.sumsq_f32(a, n));
        ST_CHECK(ksc.max_f32(a, n) == kx.max_f32(a, n));
        memcpy(c, b, sizeof(float) * (size_t)n);
        memcpy(d, b, sizeof(float) * (size_t)n);
        ksc.axpy_f32(c, 0.3f, a, n);
        kx.axpy_f32(d, 0.3f, a, n);
        for (int64_t i = 0; i < n; i++) ST_CHECK(fabsf(c[i] - d[i]) <= 1e-6f * (fabsf(c[i]) + 1.0f));
        ksc.scale_f32(c, -1.5f, n);
        kx.scale_f32(d, -1.5f, n);
        for (int64_t i = 0; i < n; i++) ST_CHECK(fabsf(c[i] - d[i]) <= 1e-6f * (fabsf(c[i]) + 1.0f));
        memcpy(c, a, sizeof(float) * (size_t)n);
        memcpy(d, a, sizeof(float) * (size_t)n);
        float m = ksc.max_f32(a, n);
        if (n > 3) c[2] = d[2] = -INFINITY; /* a masked score */
        float s1 = ksc.exp_sum_f32(c, m, n), s2 = kx.exp_sum_f32(d, m, n);
        ST_CHECK(fabsf(s1 - s2) <= 1e-5f * s1);
        for (int64_t i = 0; i < n; i++) ST_CHECK_MSG(fabsf(c[i] - d[i]) <= 4e-7f * c[i], "exp %g vs %g", c[i], d[i]);
        if (n > 3) ST_CHECK(d[2] == 0.0f);
        /* silu(g) * u over a wide range (exp over- and underflow included) */
        for (int64_t i = 0; i < n; i++) c[i] = d[i] = a[i] * (i % 3 == 0 ? 40.0f : 1.0f);
        ksc.silu_mul_f32(c, b, n);
        kx.silu_mul_f32(d, b, n);
        for (int64_t i = 0; i < n; i++)
            ST_CHECK_MSG(fabsf(c[i] - d[i]) <= 1e-6f * (fabsf(c[i]) + 1e-30f), "silu %g vs %g", c[i], d[i]);
        /* conversions: bit-exact, including values that round, overflow and subnormals */
        uint16_t *h1 = malloc(2 * (size_t)n), *h2 = malloc(2 * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            int sel = (int)(ct_rand_u32() % 5);
            a[i] = sel == 0 ? a[i] * 1e5f : sel == 1 ? a[i] * 1e-6f : sel == 2 ? a[i] * 1e-30f : a[i];
        }
        ksc.f32_to_f16(a, h1, n);
        kx.f32_to_f16(a, h2, n);
        ST_CHECK(memcmp(h1, h2, 2 * (size_t)n) == 0);
        ksc.f16_to_f32(h1, c, n);
        kx.f16_to_f32(h1, d, n);
        ST_CHECK(memcmp(c, d, sizeof(float) * (size_t)n) == 0);
        ksc.f32_to_bf16(a, h1, n);
        kx.f32_to_bf16(a, h2, n);
        ST_CHECK(memcmp(h1, h2, 2 * (size_t)n) == 0);
        ksc.bf16_to_f32(h1, c, n);
        kx.bf16_to_f32(h1, d, n);
        ST_CHECK(memcmp(c, d, sizeof(float) * (size_t)n) == 0);
        /* and the scalar conversions agree with core/quant's */
        for (int64_t i = 0; i < n; i++) ST_CHECK(h1[i] == st_f32_to_bf16(a[i]));
        ksc.f32_to_f16(a, h1, n);
        for (int64_t i = 0; i < n; i++) ST_CHECK(h1[i] == st_f32_to_fp16(a[i]));
        free(h1);
        free(h2);
        free(a);
        free(b);
        free(c);
        free(d);
    }
}

/* attn_scores / attn_accum of the ISA against the scalar slots: head dims that are and are not
 * multiples of 8, 1..9 heads, blocks of 0..70 rows reached through a permuted cell table and
 * contiguously, F16 and F32 rows. */
static void test_attn(void) {
    static const int64_t dims[] = {64, 128, 96, 8, 40, 13, 600};
    static const int gs[] = {1, 2, 4, 5, 8, 9};
    static const int ns[] = {0, 1, 7, 8, 9, 64, 70};
    const int n_cells = 80;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        int64_t d = dims[di], ld = d + 3;
        float *rows = malloc(sizeof(float) * (size_t)(n_cells * d));
        uint16_t *rows16 = malloc(2 * (size_t)(n_cells * d));
        float *q = malloc(sizeof(float) * (size_t)(9 * ld)), *p = malloc(sizeof(float) * 9 * 72);
        float *s1 = malloc(sizeof(float) * 9 * 72), *s2 = malloc(sizeof(float) * 9 * 72);
        float *o1 = malloc(sizeof(float) * (size_t)(9 * ld)), *o2 = malloc(sizeof(float) * (size_t)(9 * ld));
        int32_t cells[80];
        ct_fill(rows, n_cells * d, 2.0f);
        ksc.f32_to_f16(rows, rows16, n_cells * d);
        ksc.f16_to_f32(rows16, rows, n_cells * d); /* the same values in both row types */
        ct_fill(q, 9 * ld, 1.0f);
        ct_fill(p, 9 * 72, 1.0f);
        for (int i = 0; i < n_cells; i++) cells[i] = (int32_t)((i * 37 + 11) % n_cells);
        for (int rt = 0; rt < 2; rt++)
            for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++)
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                    for (int perm = 0; perm < 2; perm++) {
                        int g = gs[gi], n = ns[ni];
                        uint32_t type = rt ? ST_TYPE_F16 : ST_TYPE_F32;
                        const void *base = rt ? (const void *)rows16 : (const void *)rows;
                        int64_t stride = d * (rt ? 2 : 4);
                        const int32_t *cl = perm ? cells : NULL;
                        for (int i = 0; i < 9 * 72; i++) s1[i] = s2[i] = -7.0f; /* untouched past n */
                        ksc.attn_scores(type, base, stride, cl, n, d, q, ld, g, s1, 72);
                        kx.attn_scores(type, base, stride, cl, n, d, q, ld, g, s2, 72);
                        for (int h = 0; h < g; h++)
                            for (int i = 0; i < 72; i++) {
                                float a = s1[h * 72 + i], b = s2[h * 72 + i];
                                ST_CHECK_MSG(fabsf(a - b) <= 2e-5f * (float)d, "attn_scores d=%lld g=%d n=%d: %g vs %g",
                                             (long long)d, g, n, a, b);
                            }
                        ct_fill(o1, 9 * ld, 1.0f);
                        memcpy(o2, o1, sizeof(float) * (size_t)(9 * ld));
                        ksc.attn_accum(type, base, stride, cl, n, d, p, 72, g, o1, ld);
                        kx.attn_accum(type, base, stride, cl, n, d, p, 72, g, o2, ld);
                        for (int64_t i = 0; i < g * ld; i++)
                            ST_CHECK_MSG(fabsf(o1[i] - o2[i]) <= 2e-5f * (float)(n + 1), "attn_accum d=%lld g=%d n=%d: %g vs %g",
                                         (long long)d, g, n, o1[i], o2[i]);
                    }
        free(rows);
        free(rows16);
        free(q);
        free(p);
        free(s1);
        free(s2);
        free(o1);
        free(o2);
    }
}

/* argmax_f32 against the scalar slot: NaNs, -inf, ties (the lower index wins), all-NaN rows. */
static void test_argmax(void) {
    float x[300];
    for (int n = 0; n <= 300; n += (n < 40 ? 1 : 37))
        for (int pat = 0; pat < 6; pat++) {
            for (int i = 0; i < n; i++) {
                float v = (float)(ct_rand_u32() % 7) - 3.0f; /* many ties */
                if (pat == 1 && i % 3 == 0) v = NAN;
                if (pat == 2) v = NAN;
                if (pat == 3) v = -INFINITY;
                if (pat == 4 && i % 2) v = NAN;
                if (pat == 4 && i % 2 == 0) v = -INFINITY;
                if (pat == 5) v = ct_randf();
                x[i] = v;
            }
            int64_t a = ksc.argmax_f32(x, n), b = kx.argmax_f32(x, n);
            ST_CHECK_MSG(a == b, "argmax n=%d pattern %d: scalar %lld simd %lld", n, pat, (long long)a, (long long)b);
            if (pat == 2 || n == 0) ST_CHECK(b == -1);
            if (pat == 3 && n > 0) ST_CHECK(b == 0);
            if (pat == 0 && n > 0) { /* the first of the largest */
                int64_t want = 0;
                for (int i = 1; i < n; i++)
                    if (x[i] > x[want]) want = i;
                ST_CHECK(b == want);
            }
        }
}

int main(void) {
    __builtin_cpu_init();
#ifdef ST_TEST_AVX512
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq")) {
        printf("skipped: this CPU lacks AVX-512\n");
        return 77;
    }
#endif
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) {
        printf("skipped: this CPU lacks AVX2/FMA/F16C\n");
        return 77;
    }
    st_cpu_kernels_scalar(&ksc);
    st_cpu_kernels_scalar(&kx);
    st_x86_kernels_init(&kx);
    printf("kernels: %s\n", kx.isa);
    for (size_t i = 0; i < sizeof k_wtypes / sizeof k_wtypes[0]; i++) {
        int bs = st_type_get(k_wtypes[i])->block_size;
        if (bs == 1) {
            for (int64_t K = 1; K < 80; K += 7) test_weight_type(k_wtypes[i], K);
            test_weight_type(k_wtypes[i], 2048);
        } else {
            test_weight_type(k_wtypes[i], bs);
            test_weight_type(k_wtypes[i], 8 * 256);
        }
    }
    test_helpers();
    test_attn();
    test_argmax();
    return st_check_result("test_cpu_kernels");
}
