/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA vs core/ref: MOE_MATMUL through the slot table (every weight format, GEMV and tile
 * paths, unmapped experts left untouched), MOE_COMBINE and ROUTER. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_harness.h"
#include "quant/quant.h"
#include "ref/ref.h"

static const uint32_t k_wtypes[] = {ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0,  ST_TYPE_Q4_1,
                                    ST_TYPE_Q5_0, ST_TYPE_Q5_1, ST_TYPE_Q8_0, ST_TYPE_Q2_K,  ST_TYPE_Q3_K,
                                    ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_NL, ST_TYPE_IQ4_XS,
                                    ST_TYPE_MXFP4};

static void test_moe_matmul_k(tc_ctx *c, uint32_t wt, int n_assign, int with_scale, int64_t K, int64_t M) {
    const st_type_info *ti = st_type_get(wt);
    int64_t n_slots = 3, n_x = 50;
    int32_t slot_table[6] = {2, -1, 0, 1, -1, 2}; /* experts 0 and 5 share slot 2 */
    st_tensor w = tc_host_rand(wt, K, M, n_slots, -1, 1);
    st_tensor x = tc_host_rand(ST_TYPE_F32, K, n_x, 1, -1, 1);
    st_tensor out = tc_host_fill(ST_TYPE_F32, M, n_assign, 1, 42.0f); /* poison: skipped rows stay */
    int32_t *expert = malloc(sizeof(int32_t) * (size_t)n_assign), *x_row = malloc(sizeof(int32_t) * (size_t)n_assign);
    float *scale = malloc(sizeof(float) * (size_t)n_assign);
    for (int a = 0; a < n_assign; a++) {
        expert[a] = (int32_t)(tc_rand(0, 6));
        if (expert[a] > 5) expert[a] = 5;
        x_row[a] = (int32_t)(tc_rand(0, (float)n_x));
        if (x_row[a] >= n_x) x_row[a] = (int32_t)n_x - 1;
        scale[a] = tc_rand(0.1f, 1.0f);
    }
    st_tensor dw = tc_dev_tensor(c, &w), dx = tc_dev_tensor(c, &x), dout = tc_dev_tensor(c, &out);
    st_moe_matmul_args ha = {.size = sizeof ha, .n_assign = n_assign, .w = w, .x = x, .out = out,
                             .slot_table = slot_table, .expert = expert, .x_row = x_row,
                             .scale = with_scale ? scale : NULL};
    st_moe_matmul_args da = ha;
    da.w = dw;
    da.x = dx;
    da.out = dout;
    da.slot_table = tc_up(c, slot_table, sizeof slot_table);
    da.expert = tc_up(c, expert, sizeof(int32_t) * (size_t)n_assign);
    da.x_row = tc_up(c, x_row, sizeof(int32_t) * (size_t)n_assign);
    da.scale = with_scale ? tc_up(c, scale, sizeof(float) * (size_t)n_assign) : NULL;
    char name[128];
    /* the module's rule (k_moe.cu): the 8-bit GEMV for its formats up to 512 assignments (a
     * block row each up to 64, grouped by slot above); else tiles from 2 assignments per slot
     * where the tensor-core tile runs (not F32 weights), from 32 per slot otherwise; GEMV passes
     * below that */
    const int tc_ok = wt != ST_TYPE_F32 && c->tc, gv = tc_gv_format(wt) && n_assign <= 512;
    const int tiles = !gv && n_assign >= (tc_ok ? 2 : 32) * n_slots, tc = tiles && tc_ok;
    snprintf(name, sizeof name, "moe_matmul %s n_assign=%d%s (%s)", st_type_name(wt), n_assign,
             with_scale ? " scaled" : "", tiles ? (tc ? "tiles tf32" : "tiles") : gv ? "8-bit gemv" : "gemv");
    if (st_ref_moe_matmul(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    /* the decode path may quantize activations of block-quantized weights to 8 bits (see the
     * GEMV bound in test_cuda_dense.c) */
    const double gv_tol = ti->block_size > 1 && (n_assign <= 64 || (tc_gv_format(wt) && n_assign <= 512)) ? 1e-2 : 2e-5;
    if (tc_status(c, name, c->api->ops->moe_matmul(c->s, &da))) tc_compare(c, name, &out, &dout, tc ? 2e-3 : gv_tol);
    free(w.data);
    free(x.data);
    free(out.data);
    free(expert);
    free(x_row);
    free(scale);
}

static void test_moe_combine(tc_ctx *c, int accumulate, uint32_t at) {
    int64_t M = 300, n = 5, n_rows = 9;
    int k = 3;
    st_tensor rows = tc_host_rand(at, M, n_rows, 1, -1, 1);
    st_tensor out = tc_host_rand(at, M, n, 1, -1, 1);
    int32_t row_of[15];
    float wts[15];
    for (int i = 0; i < 15; i++) {
        row_of[i] = i % 4 == 3 ? -1 : (int32_t)(tc_rand(0, (float)n_rows - 0.01f));
        wts[i] = tc_rand(0, 1);
    }
    st_tensor drows = tc_dev_tensor(c, &rows), dout = tc_dev_tensor(c, &out);
    st_moe_combine_args ha = {.size = sizeof ha, .k = k, .rows = rows, .out = out, .row_of = row_of, .weights = wts,
                              .accumulate = accumulate};
    st_moe_combine_args da = ha;
    da.rows = drows;
    da.out = dout;
    da.row_of = tc_up(c, row_of, sizeof row_of);
    da.weights = tc_up(c, wts, sizeof wts);
    char name[96];
    snprintf(name, sizeof name, "moe_combine %s%s", st_type_name(at), accumulate ? " accumulate" : "");
    if (st_ref_moe_combine(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, c->api->ops->moe_combine(c->s, &da)))
        tc_compare(c, name, &out, &dout, at == ST_TYPE_F32 ? 1e-6 : 1e-2);
    free(rows.data);
    free(out.data);
}

static void test_router(tc_ctx *c, int gating, int E, int k, int bias, int normalize, float wscale, int n) {
    st_tensor lg = tc_host_rand(ST_TYPE_F32, E, n, 1, -4, 4);
    float *b = malloc(sizeof(float) * (size_t)E);
    tc_fill(b, (size_t)E, -0.3f, 0.3f);
    int32_t *ids = calloc((size_t)(n * k), sizeof(int32_t));
    float *w = calloc((size_t)(n * k), sizeof(float));
    st_tensor dlg = tc_dev_tensor(c, &lg);
    st_router_args ha = {.size = sizeof ha, .gating = (uint32_t)gating, .logits = lg, .bias = bias ? b : NULL, .k = k,
                         .normalize = normalize, .weight_scale = wscale, .ids = ids, .weights = w};
    st_router_args da = ha;
    da.logits = dlg;
    da.bias = bias ? tc_up(c, b, sizeof(float) * (size_t)E) : NULL;
    da.ids = tc_up(c, NULL, sizeof(int32_t) * (size_t)(n * k));
    da.weights = tc_up(c, NULL, sizeof(float) * (size_t)(n * k));
    char name[128];
    snprintf(name, sizeof name, "router %s E=%d k=%d%s%s scale=%g n=%d", gating ? "sigmoid" : "softmax", E, k,
             bias ? " bias" : "", normalize ? " norm" : "", (double)wscale, n);
    if (st_ref_router(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, c->api->ops->router(c->s, &da))) {
        char n2[160];
        snprintf(n2, sizeof n2, "%s ids", name);
        tc_compare_i32(c, n2, ids, da.ids, (size_t)(n * k));
        snprintf(n2, sizeof n2, "%s weights", name);
        tc_compare_f32(c, n2, w, da.weights, (size_t)(n * k), 1e-5);
    }
    free(lg.data);
    free(b);
    free(ids);
    free(w);
}

/* The shared conformance's MoE decode case (several tokens, experts shared, part of them not
 * resident, slots in reverse order) judged by its per-row bound: squared error over the sum of
 * squared products, at most 5e-4. On failure the worst row's assignment is printed. */
/* Host tensor [ne2][ne1][ne0] of `type` whose rows have random amplitudes in [0.25, 1] (as the
 * conformance data): a wrong per-row or per-block scale then shows. */
static st_tensor rand_rows(uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2) {
    st_tensor t = tc_host_rand(type, ne0, ne1, ne2, -1, 1);
    float *row = malloc(sizeof(float) * (size_t)ne0);
    for (int64_t r = 0; r < ne1 * ne2; r++) {
        const float ra = tc_rand(0.25f, 1.0f);
        tc_fill(row, (size_t)ne0, -ra, ra);
        st_quantize_row(type, row, (uint8_t *)t.data + r * t.nb[1], ne0);
    }
    free(row);
    return t;
}

static void test_moe_rows(tc_ctx *c, uint32_t wt, int n_x, int n_assign, int E, int slots, int64_t M, int64_t K,
                          int scaled, int reverse) {
    st_tensor w = rand_rows(wt, K, M, slots);
    st_tensor x = rand_rows(ST_TYPE_F32, K, n_x, 1);
    st_tensor out = tc_host_fill(ST_TYPE_F32, M, n_assign, 1, 42.0f);
    int32_t *table = malloc(sizeof(int32_t) * (size_t)E), *expert = malloc(sizeof(int32_t) * (size_t)n_assign);
    int32_t *x_row = malloc(sizeof(int32_t) * (size_t)n_assign);
    float *scale = malloc(sizeof(float) * (size_t)n_assign), *got = malloc(sizeof(float) * (size_t)(M * n_assign));
    float *wf = malloc(sizeof(float) * (size_t)K);
    double *w2 = malloc(sizeof(double) * (size_t)K * (size_t)slots);
    for (int e = 0; e < E; e++) table[e] = e < slots ? (reverse ? slots - 1 - e : e) : -1;
    for (int a = 0; a < n_assign; a++) {
        expert[a] = (int32_t)tc_rand(0, (float)E - 0.01f);
        x_row[a] = (int32_t)tc_rand(0, (float)n_x - 0.01f);
        scale[a] = tc_rand(0.0f, 1.0f);
    }
    for (int sl = 0; sl < slots; sl++) /* column sums of w^2 per slot */
        for (int64_t k = 0; k < K; k++) w2[(size_t)sl * (size_t)K + (size_t)k] = 0;
    for (int sl = 0; sl < slots; sl++)
        for (int64_t m = 0; m < M; m++) {
            st_dequantize_row(wt, (const char *)w.data + sl * w.nb[2] + m * w.nb[1], wf, K);
            for (int64_t k = 0; k < K; k++) w2[(size_t)sl * (size_t)K + (size_t)k] += (double)wf[k] * wf[k];
        }
    st_moe_matmul_args ha = {.size = sizeof ha, .n_assign = n_assign, .w = w, .x = x, .out = out,
                             .slot_table = table, .expert = expert, .x_row = x_row, .scale = scaled ? scale : NULL};
    st_moe_matmul_args da = ha;
    da.w = tc_dev_tensor(c, &w);
    da.x = tc_dev_tensor(c, &x);
    da.out = tc_dev_tensor(c, &out);
    da.slot_table = tc_up(c, table, sizeof(int32_t) * (size_t)E);
    da.expert = tc_up(c, expert, sizeof(int32_t) * (size_t)n_assign);
    da.x_row = tc_up(c, x_row, sizeof(int32_t) * (size_t)n_assign);
    da.scale = scaled ? tc_up(c, scale, sizeof(float) * (size_t)n_assign) : NULL;
    char name[160];
    snprintf(name, sizeof name, "moe_matmul %s rows x=%d assign=%d E=%d slots=%d M=%lld K=%lld%s%s",
             st_type_name(wt), n_x, n_assign, E, slots, (long long)M, (long long)K, scaled ? " scaled" : "",
             reverse ? " reversed" : "");
    if (st_ref_moe_matmul(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, c->api->ops->moe_matmul(c->s, &da)) &&
        tc_down(c, got, da.out.data, sizeof(float) * (size_t)(M * n_assign))) {
        double worst = 0;
        int wa = -1;
        for (int a = 0; a < n_assign; a++) {
            const int sl = table[expert[a]];
            if (sl < 0) continue;
            const float *xr = (const float *)x.data + (size_t)x_row[a] * (size_t)K;
            double den = 0, num = 0;
            for (int64_t k = 0; k < K; k++) den += w2[(size_t)sl * (size_t)K + (size_t)k] * xr[k] * xr[k];
            if (scaled) den *= (double)scale[a] * scale[a];
            for (int64_t m = 0; m < M; m++) {
                const double d = (double)got[a * M + m] - ((const float *)out.data)[a * M + m];
                num += d * d;
            }
            const double e = den > 1e-30 ? num / den : num;
            if (e > worst || e != e) {
                worst = e;
                wa = a;
            }
        }
        if (worst <= 5e-4) {
            tc_pass(c, "%s (worst row %.2e)", name, worst);
        } else {
            const int a = wa;
            int64_t bm = 0;
            double bd = -1;
            int nbad = 0;
            for (int64_t m = 0; m < M; m++) {
                const double d = fabs((double)got[a * M + m] - ((const float *)out.data)[a * M + m]);
                if (d > bd) {
                    bd = d;
                    bm = m;
                }
                if (d > 1e-2 * fabs(((const float *)out.data)[a * M + m]) + 1e-3) nbad++;
            }
            tc_fail(c, "%s: row %d (expert %d slot %d x_row %d scale %.3f) error %.3e; %d of %lld outputs off, worst "
                    "m=%lld got %.5f ref %.5f", name, a, expert[a], table[expert[a]], x_row[a], (double)scale[a],
                    worst, nbad, (long long)M, (long long)bm, (double)got[a * M + bm],
                    (double)((const float *)out.data)[a * M + bm]);
        }
    }
    free(w.data);
    free(x.data);
    free(out.data);
    free(table);
    free(expert);
    free(x_row);
    free(scale);
    free(got);
    free(wf);
    free(w2);
}

static void test_moe_matmul(tc_ctx *c, uint32_t wt, int n_assign, int with_scale) {
    test_moe_matmul_k(c, wt, n_assign, with_scale, st_type_get(wt)->block_size > 1 ? 256 : 40, 37);
}

void tc_test_moe(tc_ctx *c) {
    for (size_t i = 0; i < sizeof k_wtypes / sizeof k_wtypes[0]; i++) {
        test_moe_matmul(c, k_wtypes[i], 5, 1);
        test_moe_matmul(c, k_wtypes[i], 200, 1);
    }
    test_moe_matmul(c, ST_TYPE_Q4_K, 1, 0);
    test_moe_matmul(c, ST_TYPE_Q8_0, 700, 0);
    /* decode shapes: 8 and 64 assignments, rows of 2048 and 768 */
    static const uint32_t fast[] = {ST_TYPE_Q4_0, ST_TYPE_Q5_0, ST_TYPE_Q8_0, ST_TYPE_Q4_K, ST_TYPE_Q5_K,
                                    ST_TYPE_Q6_K, ST_TYPE_MXFP4, ST_TYPE_F16, ST_TYPE_BF16};
    for (int i = 0; i < 9; i++) {
        test_moe_matmul_k(c, fast[i], 8, 1, 2048, 100);
        test_moe_matmul_k(c, fast[i], 64, 0, 768, 45);
        const int64_t K2 = st_type_get(fast[i])->block_size * 8;
        test_moe_rows(c, fast[i], 6, 48, 32, 20, 33, K2, 1, 1);
        test_moe_rows(c, fast[i], 6, 48, 32, 20, 33, K2, 0, 1);
        test_moe_rows(c, fast[i], 1, 8, 16, 12, 24, K2, 1, 1);
        test_moe_rows(c, fast[i], 6, 48, 20, 20, 33, K2, 1, 0);
        test_moe_rows(c, fast[i], 24, 192, 32, 20, 33, K2, 1, 1); /* grouped by slot */
    }
    test_moe_combine(c, 0, ST_TYPE_F32);
    test_moe_combine(c, 1, ST_TYPE_F32);
    test_moe_combine(c, 1, ST_TYPE_F16);
    test_router(c, ST_ROUTER_SOFTMAX, 64, 8, 0, 1, 1.0f, 9);
    test_router(c, ST_ROUTER_SOFTMAX, 60, 4, 0, 0, 1.0f, 3);
    test_router(c, ST_ROUTER_SIGMOID, 256, 8, 1, 1, 2.5f, 17);
    test_router(c, ST_ROUTER_SIGMOID, 128, 6, 1, 0, 1.0f, 2);
}
