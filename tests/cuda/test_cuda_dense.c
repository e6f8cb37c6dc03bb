/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA vs core/ref: GET_ROWS and MATMUL for every weight format (GEMV and GEMM paths, odd
 * shapes), RMS_NORM (fused residual, aliasing), ROPE (normal/NeoX, YaRN), SWIGLU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_harness.h"
#include "quant/quant.h"
#include "ref/ref.h"

static const uint32_t k_wtypes[] = {ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0,  ST_TYPE_Q4_1,
                                    ST_TYPE_Q5_0, ST_TYPE_Q5_1, ST_TYPE_Q8_0, ST_TYPE_Q2_K,  ST_TYPE_Q3_K,
                                    ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_NL, ST_TYPE_IQ4_XS,
                                    ST_TYPE_MXFP4};
#define N_WTYPES (int)(sizeof k_wtypes / sizeof k_wtypes[0])

static double out_tol(uint32_t t, double f32) {
    return t == ST_TYPE_F32 ? f32 : (t == ST_TYPE_F16 ? 2e-3 : 1e-2);
}

static void test_get_rows(tc_ctx *c, uint32_t wt, uint32_t ot) {
    const st_type_info *ti = st_type_get(wt);
    int64_t K = ti->block_size > 1 ? 2 * 256 : 37, R = 11, n = 6;
    st_tensor w = tc_host_rand(wt, K, R, 1, -2, 2);
    int32_t ids[6] = {3, 0, 10, 3, 7, 1};
    st_tensor ho = tc_host_fill(ot, K, n, 1, 5.0f);
    st_tensor dw = tc_dev_tensor(c, &w), dout = tc_dev_tensor(c, &ho);
    st_get_rows_args ha = {.size = sizeof ha, .w = w, .ids = ids, .out = ho};
    st_get_rows_args da = ha;
    da.w = dw;
    da.out = dout;
    da.ids = tc_up(c, ids, sizeof ids);
    char name[96];
    snprintf(name, sizeof name, "get_rows %s -> %s K=%lld", st_type_name(wt), st_type_name(ot), (long long)K);
    if (st_ref_get_rows(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, c->api->ops->get_rows(c->s, &da))) tc_compare(c, name, &ho, &dout, out_tol(ot, 1e-6));
    free(w.data);
    free(ho.data);
}

/* Error bound of the GEMV path (n <= 8) for a weight type: the module may quantize the
 * activations of block-quantized weights to 8 bits per block of 32 (about 0.4% RMS relative
 * error on random data; core/conformance allows 2.2%). */
static double gemv_tol(uint32_t wt, uint32_t ot) {
    const double t = out_tol(ot, 2e-5);
    if (st_type_get(wt)->block_size == 1) return t;
    return t > 1e-2 ? t : 1e-2;
}

static void test_matmul_k(tc_ctx *c, uint32_t wt, int64_t n, int64_t M, int64_t K, uint32_t xt, uint32_t ot) {
    st_tensor w = tc_host_rand(wt, K, M, 1, -1, 1);
    st_tensor x = tc_host_rand(xt, K, n, 1, -1, 1);
    st_tensor ho = tc_host_fill(ot, M, n, 1, -3.0f);
    st_tensor dw = tc_dev_tensor(c, &w), dx = tc_dev_tensor(c, &x), dout = tc_dev_tensor(c, &ho);
    st_matmul_args ha = {.size = sizeof ha, .w = w, .x = x, .out = ho};
    st_matmul_args da = {.size = sizeof da, .w = dw, .x = dx, .out = dout};
    char name[128];
    /* the 8-bit GEMV takes its formats up to 32 rows (F16/BF16 weights with F32 rows only) */
    const int gv = n <= 8 || (n <= 32 && tc_gv_format(wt) && (st_type_get(wt)->block_size > 1 || xt == ST_TYPE_F32));
    const int tc = !gv && wt != ST_TYPE_F32 && c->tc;
    snprintf(name, sizeof name, "matmul %s x %s -> %s M=%lld K=%lld n=%lld (%s)", st_type_name(wt), st_type_name(xt),
             st_type_name(ot), (long long)M, (long long)K, (long long)n, gv ? "gemv" : tc ? "gemm tf32" : "gemm");
    if (st_ref_matmul(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    /* TF32 rounds inputs to 11 significant bits: ~3e-4 relative RMS on random data */
    double tol = tc ? (ot == ST_TYPE_BF16 ? 1e-2 : 2e-3) : gv ? gemv_tol(wt, ot) : out_tol(ot, 2e-5);
    if (tc_status(c, name, c->api->ops->matmul(c->s, &da))) tc_compare(c, name, &ho, &dout, tol);
    free(w.data);
    free(x.data);
    free(ho.data);
}

static void test_matmul(tc_ctx *c, uint32_t wt, int64_t n, int64_t M, uint32_t xt, uint32_t ot) {
    test_matmul_k(c, wt, n, M, st_type_get(wt)->block_size > 1 ? 3 * 256 : 75, xt, ot);
}

static void test_rms_norm(tc_ctx *c, int64_t K, int64_t n, int fused, int alias, uint32_t at) {
    st_tensor x = tc_host_rand(at, K, n, 1, -3, 3);
    st_tensor res = tc_host_rand(at, K, n, 1, -3, 3);
    st_tensor wt = tc_host_rand(ST_TYPE_F32, K, 1, 1, 0.5f, 1.5f);
    st_tensor sum = tc_host_fill(at, K, n, 1, 9.0f);
    st_tensor out = tc_host_fill(at, K, n, 1, 9.0f);
    st_tensor dx = tc_dev_tensor(c, &x), dres = tc_dev_tensor(c, &res), dwt = tc_dev_tensor(c, &wt);
    st_tensor dsum = tc_dev_tensor(c, &sum), dout = tc_dev_tensor(c, &out);
    st_rms_norm_args ha = {.size = sizeof ha, .eps = 1e-5f, .x = x, .weight = wt, .out = alias ? x : out};
    st_rms_norm_args da = {.size = sizeof da, .eps = 1e-5f, .x = dx, .weight = dwt, .out = alias ? dx : dout};
    if (fused) {
        ha.residual = res;
        da.residual = dres;
        ha.sum_out = alias ? res : sum; /* sum into the residual stream in place */
        da.sum_out = alias ? dres : dsum;
    }
    char name[128];
    snprintf(name, sizeof name, "rms_norm %s K=%lld n=%lld%s%s", st_type_name(at), (long long)K, (long long)n,
             fused ? " +residual" : "", alias ? " in place" : "");
    if (st_ref_rms_norm(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, c->api->ops->rms_norm(c->s, &da))) {
        tc_compare(c, name, &ha.out, &da.out, out_tol(at, 1e-6));
        if (fused) {
            char n2[160];
            snprintf(n2, sizeof n2, "%s sum_out", name);
            tc_compare(c, n2, &ha.sum_out, &da.sum_out, out_tol(at, 2e-7));
        }
    }
    free(x.data);
    free(res.data);
    free(wt.data);
    free(sum.data);
    free(out.data);
}

static void test_rope(tc_ctx *c, int mode, int yarn, int64_t hd, int n_rot, uint32_t at) {
    int64_t nh = 5, n = 7;
    st_tensor x = tc_host_rand(at, hd, nh, n, -2, 2);
    st_tensor out = tc_host_fill(at, hd, nh, n, 0.0f);
    int32_t pos[7] = {0, 1, 2, 17, 500, 4095, 20000};
    st_tensor dx = tc_dev_tensor(c, &x), dout = tc_dev_tensor(c, &out);
    st_rope_args ha = {.size = sizeof ha, .mode = (uint32_t)mode, .x = x, .out = out, .pos = pos, .n_rot = n_rot,
                       .n_ctx_orig = 4096, .freq_base = 10000.0f, .freq_scale = yarn ? 0.25f : 1.0f,
                       .ext_factor = yarn ? 1.0f : 0.0f, .attn_factor = 1.0f, .beta_fast = 32.0f, .beta_slow = 1.0f};
    st_rope_args da = ha;
    da.x = dx;
    da.out = dout;
    da.pos = tc_up(c, pos, sizeof pos);
    char name[128];
    snprintf(name, sizeof name, "rope %s %s hd=%lld n_rot=%d%s", mode == ST_ROPE_NEOX ? "neox" : "normal",
             st_type_name(at), (long long)hd, n_rot, yarn ? " yarn" : "");
    if (st_ref_rope(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, c->api->ops->rope(c->s, &da))) tc_compare(c, name, &out, &dout, out_tol(at, 1e-6));
    /* in place */
    st_tensor dx2 = tc_dev_tensor(c, &x);
    da.x = dx2;
    da.out = dx2;
    snprintf(name + strlen(name), sizeof name - strlen(name), " in place");
    if (tc_status(c, name, c->api->ops->rope(c->s, &da))) tc_compare(c, name, &out, &dx2, out_tol(at, 1e-6));
    free(x.data);
    free(out.data);
}

static void test_swiglu(tc_ctx *c, uint32_t at, int alias) {
    int64_t F = 1000, n = 3;
    st_tensor g = tc_host_rand(at, F, n, 1, -6, 6), u = tc_host_rand(at, F, n, 1, -2, 2);
    st_tensor out = tc_host_fill(at, F, n, 1, 0.0f);
    st_tensor dg = tc_dev_tensor(c, &g), du = tc_dev_tensor(c, &u), dout = tc_dev_tensor(c, &out);
    st_swiglu_args ha = {.size = sizeof ha, .gate = g, .up = u, .out = out};
    st_swiglu_args da = {.size = sizeof da, .gate = dg, .up = du, .out = alias ? dg : dout};
    char name[64];
    snprintf(name, sizeof name, "swiglu %s%s", st_type_name(at), alias ? " (out aliases gate)" : "");
    if (st_ref_swiglu(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, c->api->ops->swiglu(c->s, &da))) tc_compare(c, name, &out, &da.out, out_tol(at, 1e-6));
    free(g.data);
    free(u.data);
    free(out.data);
}

void tc_test_dense(tc_ctx *c) {
    for (int i = 0; i < N_WTYPES; i++) test_get_rows(c, k_wtypes[i], ST_TYPE_F32);
    test_get_rows(c, ST_TYPE_Q4_K, ST_TYPE_F16);
    test_get_rows(c, ST_TYPE_Q8_0, ST_TYPE_BF16);
    static const int64_t ns[] = {1, 3, 8, 9, 24, 33, 70};
    for (int i = 0; i < N_WTYPES; i++)
        for (int j = 0; j < 7; j++) test_matmul(c, k_wtypes[i], ns[j], 67, ST_TYPE_F32, ST_TYPE_F32);
    test_matmul(c, ST_TYPE_Q4_K, 2, 129, ST_TYPE_F16, ST_TYPE_F16);
    test_matmul(c, ST_TYPE_Q6_K, 100, 129, ST_TYPE_BF16, ST_TYPE_F32);
    test_matmul(c, ST_TYPE_F16, 5, 4096, ST_TYPE_F32, ST_TYPE_BF16);
    test_matmul(c, ST_TYPE_Q8_0, 300, 260, ST_TYPE_F32, ST_TYPE_F32);
    /* decode GEMV: rows of 64 and 128 units per thread group, row counts off the block grid */
    static const uint32_t fast[] = {ST_TYPE_Q4_0, ST_TYPE_Q8_0, ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K,
                                    ST_TYPE_F16, ST_TYPE_BF16};
    for (int i = 0; i < 7; i++) {
        test_matmul_k(c, fast[i], 1, 133, 2048, ST_TYPE_F32, ST_TYPE_F32);
        test_matmul_k(c, fast[i], 5, 70, 4096, ST_TYPE_F32, ST_TYPE_F32);
        test_matmul_k(c, fast[i], 8, 9, 8192, ST_TYPE_F32, ST_TYPE_F32);
    }
    test_matmul_k(c, ST_TYPE_Q4_K, 1, 300, 2048, ST_TYPE_F16, ST_TYPE_F16);
    test_matmul_k(c, ST_TYPE_Q6_K, 2, 31, 1024, ST_TYPE_BF16, ST_TYPE_F32);
    test_rms_norm(c, 4096, 5, 1, 0, ST_TYPE_F32);
    test_rms_norm(c, 4096, 5, 1, 1, ST_TYPE_F32);
    test_rms_norm(c, 33, 3, 0, 0, ST_TYPE_F32);
    test_rms_norm(c, 7168, 2, 1, 1, ST_TYPE_F16);
    test_rms_norm(c, 60000, 2, 1, 1, ST_TYPE_F32); /* larger than shared memory: uncached path */
    test_rope(c, ST_ROPE_NORMAL, 0, 128, 128, ST_TYPE_F32);
    test_rope(c, ST_ROPE_NEOX, 0, 128, 64, ST_TYPE_F32);
    test_rope(c, ST_ROPE_NEOX, 1, 64, 64, ST_TYPE_F32);
    test_rope(c, ST_ROPE_NORMAL, 1, 80, 48, ST_TYPE_F16);
    test_swiglu(c, ST_TYPE_F32, 1);
    test_swiglu(c, ST_TYPE_BF16, 0);
}
