/* SPDX-License-Identifier: Apache-2.0 */
/* Reference dense ops against hand-computed cases: get_rows, rms_norm (fused residual,
 * aliasing), matmul (F32, strided, quantized), swiglu, add/scale/convert/mul_rows, the ops
 * table and argument validation. */
#include <string.h>

#include "quant/quant.h"
#include "ref/ref.h"
#include "st_check.h"

static void test_get_rows(void) {
    /* 3 rows of 32 in Q8_0 with d = 1: row r element j = r*10 + j - 16 (exact) */
    st_block_q8_0 w[3];
    for (int r = 0; r < 3; r++) {
        w[r].d = 0x3c00;
        for (int j = 0; j < 32; j++) w[r].qs[j] = (int8_t)(r * 10 + j - 16);
    }
    int32_t ids[2] = {2, 0};
    float out[2][32];
    st_get_rows_args a = {.size = sizeof a};
    a.w = st_ref_tensor_2d(w, ST_TYPE_Q8_0, 32, 3);
    a.ids = ids;
    a.out = st_ref_tensor_2d(out, ST_TYPE_F32, 32, 2);
    ST_CHECK(st_ref_get_rows(&a) == ST_OK);
    ST_CHECK(out[0][0] == 4.0f && out[0][31] == 35.0f && out[1][0] == -16.0f && out[1][5] == -11.0f);
    /* F16 output */
    st_fp16 o16[2][32];
    a.out = st_ref_tensor_2d(o16, ST_TYPE_F16, 32, 2);
    ST_CHECK(st_ref_get_rows(&a) == ST_OK);
    ST_CHECK(st_fp16_to_f32(o16[0][1]) == 5.0f);
    /* out of range id: refused, nothing written, error text set */
    ids[1] = 3;
    out[1][0] = 777.0f;
    a.out = st_ref_tensor_2d(out, ST_TYPE_F32, 32, 2);
    ST_CHECK(st_ref_get_rows(&a) == ST_INVALID);
    ST_CHECK(out[1][0] == 777.0f);
    ST_CHECK(strstr(st_ref_last_error(), "ids[1]") != NULL);
}

static void test_rms_norm(void) {
    float x[2][2] = {{3, 4}, {0, 0}};
    float out[2][2];
    float w[2] = {2.0f, 0.5f};
    st_rms_norm_args a = {.size = sizeof a, .eps = 0.0f};
    a.x = st_ref_tensor_2d(x, ST_TYPE_F32, 2, 2);
    a.out = st_ref_tensor_2d(out, ST_TYPE_F32, 2, 2);
    x[1][0] = 1.0f;
    x[1][1] = 1.0f;
    ST_CHECK(st_ref_rms_norm(&a) == ST_OK);
    /* rms([3,4]) = sqrt(12.5) */
    ST_CHECK_NEAR(out[0][0], 3.0 / sqrt(12.5), 1e-7);
    ST_CHECK_NEAR(out[0][1], 4.0 / sqrt(12.5), 1e-7);
    ST_CHECK_NEAR(out[1][0], 1.0, 1e-7);
    a.weight = st_ref_tensor_2d(w, ST_TYPE_F32, 2, 1);
    a.eps = 1.0f; /* rms([3,4]) = sqrt(12.5 + 1) */
    ST_CHECK(st_ref_rms_norm(&a) == ST_OK);
    ST_CHECK_NEAR(out[0][0], 2.0 * 3.0 / sqrt(13.5), 1e-6);
    ST_CHECK_NEAR(out[0][1], 0.5 * 4.0 / sqrt(13.5), 1e-6);
    /* fused residual, with sum_out aliasing residual and out aliasing x */
    float r[2][2] = {{1, -1}, {2, 2}};
    a.eps = 0.0f;
    a.residual = st_ref_tensor_2d(r, ST_TYPE_F32, 2, 2);
    a.sum_out = a.residual;
    a.out = a.x;
    ST_CHECK(st_ref_rms_norm(&a) == ST_OK);
    ST_CHECK(r[0][0] == 4.0f && r[0][1] == 3.0f && r[1][0] == 3.0f && r[1][1] == 3.0f);
    ST_CHECK_NEAR(x[0][0], 2.0 * 4.0 / sqrt(12.5), 1e-6);
    ST_CHECK_NEAR(x[0][1], 0.5 * 3.0 / sqrt(12.5), 1e-6);
    ST_CHECK_NEAR(x[1][0], 2.0, 1e-6);
    ST_CHECK_NEAR(x[1][1], 0.5, 1e-6);
    /* BF16 input/output */
    st_bf16 xb[2] = {st_f32_to_bf16(3.0f), st_f32_to_bf16(4.0f)}, ob[2];
    st_rms_norm_args b = {.size = sizeof b};
    b.x = st_ref_tensor_2d(xb, ST_TYPE_BF16, 2, 1);
    b.out = st_ref_tensor_2d(ob, ST_TYPE_BF16, 2, 1);
    ST_CHECK(st_ref_rms_norm(&b) == ST_OK);
    ST_CHECK_NEAR(st_bf16_to_f32(ob[1]), 4.0 / sqrt(12.5), 8e-3);
    /* mismatched weight */
    b.weight = st_ref_tensor_2d(w, ST_TYPE_F32, 3, 1);
    ST_CHECK(st_ref_rms_norm(&b) == ST_INVALID);
}

static void test_matmul(void) {
    float w[2][3] = {{1, 2, 3}, {4, 5, 6}};
    float x[2][3] = {{1, 0, -1}, {2, 2, 2}};
    float out[2][2];
    st_matmul_args a = {.size = sizeof a};
    a.w = st_ref_tensor_2d(w, ST_TYPE_F32, 3, 2);
    a.x = st_ref_tensor_2d(x, ST_TYPE_F32, 3, 2);
    a.out = st_ref_tensor_2d(out, ST_TYPE_F32, 2, 2);
    ST_CHECK(st_ref_matmul(&a) == ST_OK);
    ST_CHECK(out[0][0] == -2.0f && out[0][1] == -2.0f && out[1][0] == 12.0f && out[1][1] == 30.0f);
    /* strided x: rows 0 and 2 of a 3-row buffer, columns every other element */
    float xs[3][6] = {{1, 9, 0, 9, -1, 9}, {0}, {2, 9, 2, 9, 2, 9}};
    a.x = st_ref_tensor_2d(xs, ST_TYPE_F32, 3, 2);
    a.x.nb[0] = 2 * sizeof(float);
    a.x.nb[1] = 2 * 6 * sizeof(float);
    memset(out, 0, sizeof out);
    ST_CHECK(st_ref_matmul(&a) == ST_OK);
    ST_CHECK(out[0][0] == -2.0f && out[1][1] == 30.0f);
    /* transposed output view: out[i][m] lands at ot[m][i] */
    float ot[2][2];
    a.x = st_ref_tensor_2d(x, ST_TYPE_F32, 3, 2);
    a.out = st_ref_tensor_2d(ot, ST_TYPE_F32, 2, 2);
    a.out.nb[0] = 2 * sizeof(float);
    a.out.nb[1] = sizeof(float);
    ST_CHECK(st_ref_matmul(&a) == ST_OK);
    ST_CHECK(ot[0][0] == -2.0f && ot[1][0] == -2.0f && ot[0][1] == 12.0f && ot[1][1] == 30.0f);
    a.out = st_ref_tensor_2d(out, ST_TYPE_F32, 2, 2);
    /* quantized weights agree with dequantize + double dot */
    enum { K = 256, M = 3 };
    static float wf[M][K], xf[2][K];
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) wf[m][k] = (float)sin(0.1 * k + m);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < K; k++) xf[i][k] = (float)cos(0.05 * k * (i + 1));
    const uint32_t types[] = {ST_TYPE_Q4_0, ST_TYPE_Q4_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_XS, ST_TYPE_F16, ST_TYPE_BF16};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        static unsigned char wq[M][K * 4];
        size_t rs = st_row_size(types[t], K);
        for (int m = 0; m < M; m++) ST_CHECK(st_quantize_row(types[t], wf[m], wq[0] + m * rs, K) == 0);
        float o[2][M];
        st_matmul_args q = {.size = sizeof q};
        q.w = st_ref_tensor_2d(wq, types[t], K, M);
        q.x = st_ref_tensor_2d(xf, ST_TYPE_F32, K, 2);
        q.out = st_ref_tensor_2d(o, ST_TYPE_F32, M, 2);
        ST_CHECK(st_ref_matmul(&q) == ST_OK);
        for (int i = 0; i < 2; i++)
            for (int m = 0; m < M; m++) {
                double ref = st_dot_row_ref(types[t], wq[0] + m * rs, xf[i], K);
                ST_CHECK_NEAR(o[i][m], ref, 1e-5 * (1 + fabs(ref)));
                /* and the quantization itself is close to the float product */
                double exact = 0;
                for (int k = 0; k < K; k++) exact += (double)wf[m][k] * xf[i][k];
                ST_CHECK_NEAR(o[i][m], exact, 0.1 * sqrt((double)K));
            }
    }
    /* shape errors */
    a.x = st_ref_tensor_2d(x, ST_TYPE_F32, 2, 2);
    ST_CHECK(st_ref_matmul(&a) == ST_INVALID);
    a.x = st_ref_tensor_2d(x, ST_TYPE_Q8_0, 32, 2);
    ST_CHECK(st_ref_matmul(&a) == ST_UNSUPPORTED);
    /* Q4_0 weight row of 33 elements is not whole blocks */
    a.w = st_ref_tensor_2d(w, ST_TYPE_Q4_0, 33, 1);
    ST_CHECK(st_ref_matmul(&a) != ST_OK);
}

static void test_swiglu(void) {
    float g[4] = {0.0f, 1.0f, -1.0f, 30.0f}, u[4] = {5.0f, 2.0f, 2.0f, 3.0f}, o[4];
    st_swiglu_args a = {.size = sizeof a};
    a.gate = st_ref_tensor_2d(g, ST_TYPE_F32, 4, 1);
    a.up = st_ref_tensor_2d(u, ST_TYPE_F32, 4, 1);
    a.out = st_ref_tensor_2d(o, ST_TYPE_F32, 4, 1);
    ST_CHECK(st_ref_swiglu(&a) == ST_OK);
    ST_CHECK(o[0] == 0.0f);
    ST_CHECK_NEAR(o[1], 2.0 / (1.0 + exp(-1.0)), 1e-6);
    ST_CHECK_NEAR(o[2], -2.0 / (1.0 + exp(1.0)), 1e-6);
    ST_CHECK_NEAR(o[3], 90.0, 1e-4);
    /* out aliasing gate */
    a.out = a.gate;
    ST_CHECK(st_ref_swiglu(&a) == ST_OK);
    ST_CHECK_NEAR(g[1], 2.0 / (1.0 + exp(-1.0)), 1e-6);
}

static void test_elementwise(void) {
    float a2[2][3] = {{1, 2, 3}, {4, 5, 6}}, b1[3] = {10, 20, 30}, o[2][3];
    st_binary_args a = {.size = sizeof a};
    a.a = st_ref_tensor_2d(a2, ST_TYPE_F32, 3, 2);
    a.b = st_ref_tensor_2d(b1, ST_TYPE_F32, 3, 1);
    a.out = st_ref_tensor_2d(o, ST_TYPE_F32, 3, 2);
    ST_CHECK(st_ref_add(&a) == ST_OK);
    ST_CHECK(o[0][0] == 11.0f && o[1][2] == 36.0f);
    a.b = a.a; /* same-shape b */
    ST_CHECK(st_ref_add(&a) == ST_OK);
    ST_CHECK(o[1][1] == 10.0f);
    a.b = st_ref_tensor_2d(b1, ST_TYPE_F32, 2, 1);
    ST_CHECK(st_ref_add(&a) == ST_INVALID);
    a.s = -0.5f;
    ST_CHECK(st_ref_scale(&a) == ST_OK);
    ST_CHECK(o[0][1] == -1.0f && o[1][2] == -3.0f);
    /* convert F32 -> F16 -> BF16 -> F32 */
    float src[3] = {1.0f + 0x1p-11f, 65520.0f, -0.1f};
    st_fp16 h[3];
    st_bf16 bf[3];
    float back[3];
    st_binary_args c = {.size = sizeof c};
    c.a = st_ref_tensor_2d(src, ST_TYPE_F32, 3, 1);
    c.out = st_ref_tensor_2d(h, ST_TYPE_F16, 3, 1);
    ST_CHECK(st_ref_convert(&c) == ST_OK);
    ST_CHECK(h[0] == 0x3c00 && h[1] == 0x7c00 && h[2] == st_f32_to_fp16(-0.1f));
    c.a = c.out;
    c.out = st_ref_tensor_2d(bf, ST_TYPE_BF16, 3, 1);
    ST_CHECK(st_ref_convert(&c) == ST_OK);
    ST_CHECK(bf[0] == 0x3f80 && bf[1] == 0x7f80);
    c.a = c.out;
    c.out = st_ref_tensor_2d(back, ST_TYPE_F32, 3, 1);
    ST_CHECK(st_ref_convert(&c) == ST_OK);
    ST_CHECK(back[0] == 1.0f && isinf(back[1]));
    /* mul_rows, identity and sigmoid, in place */
    float m[2][2] = {{1, 2}, {3, 4}}, s[2] = {2.0f, 0.0f};
    st_binary_args r = {.size = sizeof r};
    r.a = st_ref_tensor_2d(m, ST_TYPE_F32, 2, 2);
    r.b = st_ref_tensor_2d(s, ST_TYPE_F32, 2, 1);
    r.out = r.a;
    ST_CHECK(st_ref_mul_rows(&r) == ST_OK);
    ST_CHECK(m[0][0] == 2.0f && m[0][1] == 4.0f && m[1][0] == 0.0f);
    r.sigmoid = 1;
    m[1][0] = 3.0f;
    m[1][1] = 4.0f;
    ST_CHECK(st_ref_mul_rows(&r) == ST_OK);
    ST_CHECK_NEAR(m[0][0], 2.0 / (1.0 + exp(-2.0)), 1e-6);
    ST_CHECK_NEAR(m[1][1], 2.0, 1e-6); /* sigmoid(0) = 0.5 */
    r.b = st_ref_tensor_2d(s, ST_TYPE_F32, 1, 1);
    ST_CHECK(st_ref_mul_rows(&r) == ST_INVALID);
}

static void test_table(void) {
    const st_backend_ops *ops = st_ref_ops_table();
    ST_CHECK(ops != NULL && ops->size == sizeof(st_backend_ops));
    ST_CHECK(ops->get_rows && ops->rms_norm && ops->matmul && ops->rope && ops->kv_write && ops->attention &&
             ops->swiglu && ops->router && ops->moe_matmul && ops->moe_combine && ops->add && ops->scale &&
             ops->convert && ops->mul_rows && ops->argmax && ops->topk);
    float v[3] = {1, 2, 3}, o[3];
    st_binary_args a = {.size = sizeof a, .s = 2.0f};
    a.a = st_ref_tensor_2d(v, ST_TYPE_F32, 3, 1);
    a.out = st_ref_tensor_2d(o, ST_TYPE_F32, 3, 1);
    ST_CHECK(ops->scale(NULL, &a) == ST_OK && o[2] == 6.0f);
    ST_CHECK(ops->scale(NULL, NULL) == ST_INVALID);
    a.size = 8;
    ST_CHECK(ops->scale(NULL, &a) == ST_INVALID);
    ST_CHECK(strlen(st_ref_last_error()) > 0);
    ST_CHECK(st_ref_op_supported(ST_OP_MATMUL, ST_TYPE_Q4_K));
    ST_CHECK(st_ref_op_supported(ST_OP_MATMUL, ST_TYPE_IQ4_XS));
    ST_CHECK(!st_ref_op_supported(ST_OP_MATMUL, 5));
    ST_CHECK(st_ref_op_supported(ST_OP_KV_WRITE, ST_TYPE_Q8_0));
    ST_CHECK(!st_ref_op_supported(ST_OP_KV_WRITE, ST_TYPE_Q4_0));
    ST_CHECK(st_ref_op_supported(ST_OP_ADD, ST_TYPE_BF16));
    ST_CHECK(!st_ref_op_supported(ST_OP_ADD, ST_TYPE_Q8_0));
    ST_CHECK(!st_ref_op_supported(ST_OP_COUNT, ST_TYPE_F32));
    /* tensor views */
    st_tensor t = st_ref_tensor_3d(NULL, ST_TYPE_Q4_K, 512, 3, 2);
    ST_CHECK(t.nb[1] == 288 && t.nb[2] == 864 && t.nb[3] == 1728 && t.ne[2] == 2 && t.ne[3] == 1);
    t = st_ref_tensor_2d(NULL, ST_TYPE_Q4_K, 100, 1);
    ST_CHECK(t.nb[1] == 0);
}

int main(void) {
    test_get_rows();
    test_rms_norm();
    test_matmul();
    test_swiglu();
    test_elementwise();
    test_table();
    return st_check_result("test_ref_dense");
}
