/* SPDX-License-Identifier: Apache-2.0 */
/* Reference router, moe_matmul, moe_combine, argmax and topk against hand-computed cases. */
#include <string.h>

#include "quant/quant.h"
#include "ref/ref.h"
#include "st_check.h"

static void test_router(void) {
    /* softmax, ties: experts 1 and 2 share the top logit; the lower index comes first */
    float logits[2][4] = {{1, 3, 3, 2}, {0, 0, 0, 0}};
    int32_t ids[2][2];
    float w[2][2];
    st_router_args a = {.size = sizeof a, .gating = ST_ROUTER_SOFTMAX, .k = 2, .normalize = 1, .weight_scale = 1.0f};
    a.logits = st_ref_tensor_2d(logits, ST_TYPE_F32, 4, 2);
    a.ids = &ids[0][0];
    a.weights = &w[0][0];
    ST_CHECK(st_ref_router(&a) == ST_OK);
    ST_CHECK(ids[0][0] == 1 && ids[0][1] == 2);
    ST_CHECK_NEAR(w[0][0], 0.5, 1e-7);
    ST_CHECK_NEAR(w[0][1], 0.5, 1e-7);
    ST_CHECK(ids[1][0] == 0 && ids[1][1] == 1); /* all equal: lowest indices */
    /* without renormalization: the softmax probabilities */
    a.normalize = 0;
    ST_CHECK(st_ref_router(&a) == ST_OK);
    double z = exp(1.0) + 2 * exp(3.0) + exp(2.0);
    ST_CHECK_NEAR(w[0][0], exp(3.0) / z, 1e-7);
    ST_CHECK_NEAR(w[1][1], 0.25, 1e-7);
    /* k = 3 picks expert 3 (logit 2) third */
    int32_t ids3[2][3];
    float w3[2][3];
    a.k = 3;
    a.ids = &ids3[0][0];
    a.weights = &w3[0][0];
    ST_CHECK(st_ref_router(&a) == ST_OK);
    ST_CHECK(ids3[0][2] == 3);
    ST_CHECK_NEAR(w3[0][2], exp(2.0) / z, 1e-7);
    /* sigmoid with a selection bias: bias changes who is picked, not the weights */
    float lg[1][4] = {{0, 0, 1, 0}};
    float bias[4] = {0, 0.3f, 0, 0.8f};
    a.logits = st_ref_tensor_2d(lg, ST_TYPE_F32, 4, 1);
    a.gating = ST_ROUTER_SIGMOID;
    a.bias = bias;
    a.k = 2;
    a.ids = &ids[0][0];
    a.weights = &w[0][0];
    a.normalize = 0;
    a.weight_scale = 2.5f;
    ST_CHECK(st_ref_router(&a) == ST_OK);
    /* selection scores: 0.5, 0.8, 0.731, 1.3 -> experts 3, 1 */
    ST_CHECK(ids[0][0] == 3 && ids[0][1] == 1);
    ST_CHECK_NEAR(w[0][0], 2.5 * 0.5, 1e-7);
    ST_CHECK_NEAR(w[0][1], 2.5 * 0.5, 1e-7);
    a.normalize = 1;
    a.weight_scale = 1.0f;
    ST_CHECK(st_ref_router(&a) == ST_OK);
    ST_CHECK_NEAR(w[0][0] + w[0][1], 1.0, 1e-7);
    /* invalid k */
    a.k = 5;
    ST_CHECK(st_ref_router(&a) == ST_INVALID);
    a.k = 0;
    ST_CHECK(st_ref_router(&a) == ST_INVALID);
}

static void test_moe_matmul(void) {
    enum { K = 32, M = 2, SLOTS = 2 };
    /* slot s, row m: all elements = (s + 1) * (m + 1) / 32 */
    static float wf[SLOTS][M][K];
    for (int s = 0; s < SLOTS; s++)
        for (int m = 0; m < M; m++)
            for (int k = 0; k < K; k++) wf[s][m][k] = (float)((s + 1) * (m + 1)) / 32.0f;
    float x[2][K];
    for (int k = 0; k < K; k++) {
        x[0][k] = 1.0f;
        x[1][k] = 2.0f;
    }
    int32_t slot_table[3] = {1, -1, 0}; /* expert 0 -> slot 1, expert 1 not resident, expert 2 -> slot 0 */
    int32_t expert[3] = {0, 1, 2}, x_row[3] = {1, 0, 0};
    float scale[3] = {0.5f, 1.0f, 3.0f};
    float out[3][M];
    for (int i = 0; i < 3; i++) out[i][0] = out[i][1] = -999.0f;
    st_moe_matmul_args a = {.size = sizeof a, .n_assign = 3};
    a.w = st_ref_tensor_3d(wf, ST_TYPE_F32, K, M, SLOTS);
    a.x = st_ref_tensor_2d(x, ST_TYPE_F32, K, 2);
    a.out = st_ref_tensor_2d(out, ST_TYPE_F32, M, 3);
    a.slot_table = slot_table;
    a.expert = expert;
    a.x_row = x_row;
    a.scale = scale;
    ST_CHECK(st_ref_moe_matmul(&a) == ST_OK);
    /* assignment 0: slot 1 (factor 2*(m+1)/32 summed over 32 twos = 4*(m+1)), times 0.5 */
    ST_CHECK_NEAR(out[0][0], 2.0, 1e-6);
    ST_CHECK_NEAR(out[0][1], 4.0, 1e-6);
    /* assignment 1: slot -1, untouched */
    ST_CHECK(out[1][0] == -999.0f && out[1][1] == -999.0f);
    /* assignment 2: slot 0, x row 0: (m+1), times 3 */
    ST_CHECK_NEAR(out[2][0], 3.0, 1e-6);
    ST_CHECK_NEAR(out[2][1], 6.0, 1e-6);
    /* no scale: 1 */
    a.scale = NULL;
    ST_CHECK(st_ref_moe_matmul(&a) == ST_OK);
    ST_CHECK_NEAR(out[0][1], 8.0, 1e-6);
    /* slot out of range: refused before writing */
    slot_table[2] = 2;
    out[0][0] = 123.0f;
    ST_CHECK(st_ref_moe_matmul(&a) == ST_INVALID);
    ST_CHECK(out[0][0] == 123.0f);
    slot_table[2] = 0;
    /* Q4_K expert slots agree with the oracle dot product (slot stride = nb[2]) */
    enum { KQ = 256 };
    static float wq_f[SLOTS][M][KQ], xq[KQ];
    static st_block_q4_K wq[SLOTS][M];
    for (int s = 0; s < SLOTS; s++)
        for (int m = 0; m < M; m++) {
            for (int k = 0; k < KQ; k++) wq_f[s][m][k] = (float)sin(0.07 * k * (s + 1) + m);
            ST_CHECK(st_quantize_row(ST_TYPE_Q4_K, wq_f[s][m], &wq[s][m], KQ) == 0);
        }
    for (int k = 0; k < KQ; k++) xq[k] = (float)cos(0.03 * k);
    int32_t e1[1] = {0}, xr1[1] = {0};
    float o1[1][M];
    st_moe_matmul_args q = {.size = sizeof q, .n_assign = 1};
    q.w = st_ref_tensor_3d(wq, ST_TYPE_Q4_K, KQ, M, SLOTS);
    q.x = st_ref_tensor_2d(xq, ST_TYPE_F32, KQ, 1);
    q.out = st_ref_tensor_2d(o1, ST_TYPE_F32, M, 1);
    q.slot_table = slot_table;
    q.expert = e1;
    q.x_row = xr1;
    ST_CHECK(st_ref_moe_matmul(&q) == ST_OK);
    for (int m = 0; m < M; m++) ST_CHECK_NEAR(o1[0][m], st_dot_row_ref(ST_TYPE_Q4_K, &wq[1][m], xq, KQ), 1e-4);
}

static void test_moe_combine(void) {
    float rows[3][2] = {{1, 2}, {3, 4}, {5, 6}};
    int32_t row_of[2][2] = {{0, 2}, {1, -1}};
    float w[2][2] = {{0.5f, 2.0f}, {3.0f, 100.0f}};
    float out[2][2] = {{7, 7}, {7, 7}};
    st_moe_combine_args a = {.size = sizeof a, .k = 2};
    a.rows = st_ref_tensor_2d(rows, ST_TYPE_F32, 2, 3);
    a.out = st_ref_tensor_2d(out, ST_TYPE_F32, 2, 2);
    a.row_of = &row_of[0][0];
    a.weights = &w[0][0];
    ST_CHECK(st_ref_moe_combine(&a) == ST_OK);
    ST_CHECK(out[0][0] == 10.5f && out[0][1] == 13.0f && out[1][0] == 9.0f && out[1][1] == 12.0f);
    a.accumulate = 1;
    ST_CHECK(st_ref_moe_combine(&a) == ST_OK);
    ST_CHECK(out[0][0] == 21.0f && out[1][1] == 24.0f);
    row_of[1][1] = 3;
    ST_CHECK(st_ref_moe_combine(&a) == ST_INVALID);
    ST_CHECK(out[0][0] == 21.0f);
}

static void test_select(void) {
    float x[2][6] = {{1, 5, 5, 2, NAN, 5}, {NAN, NAN, -1, -3, NAN, -1}};
    int32_t ids[2][5];
    float vals[2][5];
    st_topk_args a = {.size = sizeof a, .k = 1};
    a.x = st_ref_tensor_2d(x, ST_TYPE_F32, 6, 2);
    a.ids = &ids[0][0];
    a.values = &vals[0][0];
    ST_CHECK(st_ref_argmax(&a) == ST_OK);
    ST_CHECK(ids[0][0] == 1 && vals[0][0] == 5.0f); /* ids/values are [n] for argmax */
    ST_CHECK(ids[0][1] == 2 && vals[0][1] == -1.0f);
    a.values = NULL;
    ST_CHECK(st_ref_argmax(&a) == ST_OK);
    a.values = &vals[0][0];
    a.k = 5;
    ST_CHECK(st_ref_topk(&a) == ST_OK);
    const int32_t e0[5] = {1, 2, 5, 3, 0}, e1[5] = {2, 5, 3, 0, 1};
    for (int j = 0; j < 5; j++) {
        ST_CHECK(ids[0][j] == e0[j]);
        ST_CHECK(ids[1][j] == e1[j]);
    }
    ST_CHECK(vals[0][2] == 5.0f && vals[0][4] == 1.0f && vals[1][2] == -3.0f && isnan(vals[1][3]));
    a.k = 7;
    ST_CHECK(st_ref_topk(&a) == ST_INVALID);
    /* all-NaN row: argmax 0 */
    float nn[1][3] = {{NAN, NAN, NAN}};
    int32_t id1;
    st_topk_args b = {.size = sizeof b};
    b.x = st_ref_tensor_2d(nn, ST_TYPE_F32, 3, 1);
    b.ids = &id1;
    ST_CHECK(st_ref_argmax(&b) == ST_OK && id1 == 0);
}

int main(void) {
    test_router();
    test_moe_matmul();
    test_moe_combine();
    test_select();
    return st_check_result("test_ref_moe");
}
