/* SPDX-License-Identifier: Apache-2.0 */
/* Reference rope, kv_write and attention against hand-computed cases. */
#include <string.h>

#include "quant/quant.h"
#include "ref/ref.h"
#include "st_check.h"

static st_rope_args rope_args(void *x, void *out, const int32_t *pos, int hd, int n_head, int n, int n_rot,
                              uint32_t mode) {
    st_rope_args a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.mode = mode;
    a.x = st_ref_tensor_3d(x, ST_TYPE_F32, hd, n_head, n);
    a.out = st_ref_tensor_3d(out, ST_TYPE_F32, hd, n_head, n);
    a.pos = pos;
    a.n_rot = n_rot;
    a.n_ctx_orig = 4096;
    a.freq_base = 10000.0f;
    a.freq_scale = 1.0f;
    a.ext_factor = 0.0f;
    a.attn_factor = 1.0f;
    a.beta_fast = 32.0f;
    a.beta_slow = 1.0f;
    return a;
}

static void test_rope(void) {
    /* position 0 is the identity, in both modes */
    float x[2][8], o[2][8];
    for (int h = 0; h < 2; h++)
        for (int d = 0; d < 8; d++) x[h][d] = (float)(h * 8 + d) - 7.5f;
    int32_t pos0 = 0;
    for (int mode = 0; mode <= 2; mode += 2) {
        st_rope_args a = rope_args(x, o, &pos0, 8, 2, 1, 8, (uint32_t)mode);
        ST_CHECK(st_ref_rope(&a) == ST_OK);
        ST_CHECK(memcmp(x, o, sizeof x) == 0);
    }
    /* known angles: head_dim 4, n_rot 4, base 10000: pair 0 turns by pos, pair 1 by pos/100 */
    int32_t pos1 = 1;
    float xn[4] = {1, 0, 1, 0}, on[4];
    st_rope_args a = rope_args(xn, on, &pos1, 4, 1, 1, 4, ST_ROPE_NORMAL);
    ST_CHECK(st_ref_rope(&a) == ST_OK);
    ST_CHECK_NEAR(on[0], cos(1.0), 1e-7);
    ST_CHECK_NEAR(on[1], sin(1.0), 1e-7);
    ST_CHECK_NEAR(on[2], cos(0.01), 1e-7);
    ST_CHECK_NEAR(on[3], sin(0.01), 1e-7);
    /* NeoX pairs (0,2) and (1,3) */
    float xx[4] = {1, 1, 0, 0}, ox[4];
    a = rope_args(xx, ox, &pos1, 4, 1, 1, 4, ST_ROPE_NEOX);
    ST_CHECK(st_ref_rope(&a) == ST_OK);
    ST_CHECK_NEAR(ox[0], cos(1.0), 1e-7);
    ST_CHECK_NEAR(ox[1], cos(0.01), 1e-7);
    ST_CHECK_NEAR(ox[2], sin(1.0), 1e-7);
    ST_CHECK_NEAR(ox[3], sin(0.01), 1e-7);
    /* rotation of (0,1) by 3 at pos 3: (-sin 3, cos 3); n_rot 2 < head_dim leaves the rest */
    int32_t pos3 = 3;
    float xr[4] = {0, 1, 5, 6}, orr[4];
    a = rope_args(xr, orr, &pos3, 4, 1, 1, 2, ST_ROPE_NORMAL);
    ST_CHECK(st_ref_rope(&a) == ST_OK);
    ST_CHECK_NEAR(orr[0], -sin(3.0), 1e-7);
    ST_CHECK_NEAR(orr[1], cos(3.0), 1e-7);
    ST_CHECK(orr[2] == 5.0f && orr[3] == 6.0f);
    /* linear scaling without YaRN: freq_scale 0.25 quarters the angle */
    int32_t pos4 = 4;
    a = rope_args(xn, on, &pos4, 4, 1, 1, 4, ST_ROPE_NORMAL);
    a.freq_scale = 0.25f;
    ST_CHECK(st_ref_rope(&a) == ST_OK);
    ST_CHECK_NEAR(on[0], cos(1.0), 1e-7);
    ST_CHECK_NEAR(on[3], sin(0.01), 1e-7);
    /* YaRN, n_ctx_orig 4096, beta 32/1, n_rot 4: correction dims floor(0.6545) = 0 and
     * ceil(1.4071) = 2. Pair 0: ramp 1 -> pure extrapolation (angle 1); pair 1: ramp 0.5 ->
     * 0.5*0.25 + 0.5*1 = 0.625 of the angle 0.01. mscale = 1 + 0.1 ln 4. */
    a = rope_args(xn, on, &pos1, 4, 1, 1, 4, ST_ROPE_NORMAL);
    a.freq_scale = 0.25f;
    a.ext_factor = 1.0f;
    ST_CHECK(st_ref_rope(&a) == ST_OK);
    double ms = 1.0 + 0.1 * log(4.0);
    ST_CHECK_NEAR(on[0], ms * cos(1.0), 1e-6);
    ST_CHECK_NEAR(on[1], ms * sin(1.0), 1e-6);
    ST_CHECK_NEAR(on[2], ms * cos(0.00625), 1e-6);
    ST_CHECK_NEAR(on[3], ms * sin(0.00625), 1e-6);
    /* attn_factor scales the magnitude */
    a.attn_factor = 2.0f;
    ST_CHECK(st_ref_rope(&a) == ST_OK);
    ST_CHECK_NEAR(on[0], 2.0 * ms * cos(1.0), 1e-6);
    /* in place, several tokens and heads, F16 */
    st_fp16 h[2][2][4];
    int32_t pos[2] = {0, 1};
    for (int t = 0; t < 2; t++)
        for (int hh = 0; hh < 2; hh++) {
            h[t][hh][0] = st_f32_to_fp16(1.0f);
            h[t][hh][1] = 0;
            h[t][hh][2] = st_f32_to_fp16(1.0f);
            h[t][hh][3] = 0;
        }
    a = rope_args(h, h, pos, 4, 2, 2, 4, ST_ROPE_NORMAL);
    a.x = st_ref_tensor_3d(h, ST_TYPE_F16, 4, 2, 2);
    a.out = a.x;
    ST_CHECK(st_ref_rope(&a) == ST_OK);
    ST_CHECK(st_fp16_to_f32(h[0][1][0]) == 1.0f);
    ST_CHECK_NEAR(st_fp16_to_f32(h[1][1][1]), sin(1.0), 1e-3);
    /* invalid */
    a = rope_args(xn, on, &pos1, 4, 1, 1, 3, ST_ROPE_NORMAL);
    ST_CHECK(st_ref_rope(&a) == ST_INVALID);
    a = rope_args(xn, on, &pos1, 4, 1, 1, 4, 1);
    ST_CHECK(st_ref_rope(&a) == ST_INVALID);
}

/* Cache of 4 cells x n_kv heads x hd, filled through kv_write. */
static void test_kv_attention(void) {
    enum { HD = 32, NKV = 2, NH = 4, CELLS = 4 };
    static float kc[CELLS][NKV][HD], vc[CELLS][NKV][HD];
    static float k[2][NKV][HD], v[2][NKV][HD];
    memset(kc, 0, sizeof kc);
    memset(vc, 0, sizeof vc);
    /* token 0 -> cell 3, token 1 -> cell 1 */
    for (int t = 0; t < 2; t++)
        for (int h = 0; h < NKV; h++)
            for (int d = 0; d < HD; d++) {
                k[t][h][d] = 0.0f;
                v[t][h][d] = (float)(100 * t + 10 * h + d);
            }
    k[1][0][0] = (float)log(3.0); /* with q = e0 and scale 1: scores 0 and ln 3 */
    k[1][1][0] = (float)log(3.0);
    int32_t cells[2] = {3, 1};
    st_kv_write_args w = {.size = sizeof w};
    w.k = st_ref_tensor_3d(k, ST_TYPE_F32, HD, NKV, 2);
    w.v = st_ref_tensor_3d(v, ST_TYPE_F32, HD, NKV, 2);
    w.k_cache = st_ref_tensor_3d(kc, ST_TYPE_F32, HD, NKV, CELLS);
    w.v_cache = st_ref_tensor_3d(vc, ST_TYPE_F32, HD, NKV, CELLS);
    w.cells = cells;
    ST_CHECK(st_ref_kv_write(&w) == ST_OK);
    ST_CHECK(vc[3][1][5] == 15.0f && vc[1][0][0] == 100.0f && vc[0][0][0] == 0.0f && vc[2][1][31] == 0.0f);
    /* bad cell: refused, nothing written */
    int32_t bad[2] = {0, 4};
    w.cells = bad;
    ST_CHECK(st_ref_kv_write(&w) == ST_INVALID);
    ST_CHECK(vc[0][0][1] == 0.0f);
    w.cells = cells;

    /* 2 query tokens of one sequence; positions 0 -> cell 3, 1 -> cell 1 */
    static float q[2][NH][HD], out[2][NH][HD];
    memset(q, 0, sizeof q);
    for (int t = 0; t < 2; t++)
        for (int h = 0; h < NH; h++) q[t][h][0] = 1.0f;
    int32_t table[1][4] = {{3, 1, -1, -1}};
    int32_t seq[2] = {0, 0}, kv_len[2] = {1, 2};
    st_attention_args a = {.size = sizeof a, .scale = 1.0f};
    a.q = st_ref_tensor_3d(q, ST_TYPE_F32, HD, NH, 2);
    a.k_cache = w.k_cache;
    a.v_cache = w.v_cache;
    a.out = st_ref_tensor_3d(out, ST_TYPE_F32, HD, NH, 2);
    a.seq = seq;
    a.kv_len = kv_len;
    a.cell_table = &table[0][0];
    a.max_pos = 4;
    ST_CHECK(st_ref_attention(&a) == ST_OK);
    /* token 0 sees one key: returns its value; GQA: heads 0,1 -> kv 0; heads 2,3 -> kv 1 */
    ST_CHECK_NEAR(out[0][0][7], 7.0, 1e-6);
    ST_CHECK_NEAR(out[0][1][7], 7.0, 1e-6);
    ST_CHECK_NEAR(out[0][2][7], 17.0, 1e-6);
    ST_CHECK_NEAR(out[0][3][0], 10.0, 1e-6);
    /* token 1: weights 1/4 (cell 3) and 3/4 (cell 1) */
    ST_CHECK_NEAR(out[1][0][2], 0.25 * 2 + 0.75 * 102, 1e-5);
    ST_CHECK_NEAR(out[1][3][9], 0.25 * 19 + 0.75 * 119, 1e-5);
    /* additive mask hides position 1 of token 1 */
    float mask[2][4] = {{0, 0, 0, 0}, {0, -INFINITY, 0, 0}};
    a.mask = &mask[0][0];
    ST_CHECK(st_ref_attention(&a) == ST_OK);
    ST_CHECK_NEAR(out[1][0][2], 2.0, 1e-6);
    /* a finite mask shifts the scores: + ln 3 on position 0 makes the weights equal */
    mask[1][1] = 0.0f;
    mask[1][0] = (float)log(3.0);
    ST_CHECK(st_ref_attention(&a) == ST_OK);
    ST_CHECK_NEAR(out[1][0][2], 0.5 * 2 + 0.5 * 102, 1e-4);
    a.mask = NULL;
    /* scale: 0 makes the weights uniform */
    a.scale = 0.0f;
    ST_CHECK(st_ref_attention(&a) == ST_OK);
    ST_CHECK_NEAR(out[1][0][2], 52.0, 1e-5);
    a.scale = 1.0f;
    /* kv_len 0: zero output */
    kv_len[0] = 0;
    out[0][0][0] = 5.0f;
    ST_CHECK(st_ref_attention(&a) == ST_OK);
    ST_CHECK(out[0][0][0] == 0.0f);
    kv_len[0] = 1;
    /* invalid: kv_len past max_pos, unmapped cell, heads not a multiple */
    kv_len[1] = 3;
    ST_CHECK(st_ref_attention(&a) == ST_INVALID); /* position 2 maps to -1 */
    kv_len[1] = 5;
    ST_CHECK(st_ref_attention(&a) == ST_INVALID);
    kv_len[1] = 2;
    st_attention_args b = a;
    b.q = st_ref_tensor_3d(q, ST_TYPE_F32, HD, 3, 2);
    b.out = st_ref_tensor_3d(out, ST_TYPE_F32, HD, 3, 2);
    ST_CHECK(st_ref_attention(&b) == ST_INVALID);

    /* Q8_0 and F16 caches: values -127..127 integers are exact in Q8_0 with amax 127 */
    static st_block_q8_0 kq[CELLS][NKV], vq[CELLS][NKV];
    static st_fp16 k16[CELLS][NKV][HD], v16[CELLS][NKV][HD];
    for (int t = 0; t < 2; t++)
        for (int h = 0; h < NKV; h++) {
            for (int d = 0; d < HD; d++) v[t][h][d] = (float)((d * 8 + t * 3 + h) % 255 - 127);
            v[t][h][0] = 127.0f;
        }
    st_kv_write_args wq = w;
    wq.k_cache = st_ref_tensor_3d(kq, ST_TYPE_Q8_0, HD, NKV, CELLS);
    wq.v_cache = st_ref_tensor_3d(vq, ST_TYPE_Q8_0, HD, NKV, CELLS);
    ST_CHECK(st_ref_kv_write(&wq) == ST_OK);
    ST_CHECK(st_fp16_to_f32(vq[1][1].d) == 1.0f && vq[1][1].qs[3] == v[1][1][3]);
    st_kv_write_args w16 = w;
    w16.k_cache = st_ref_tensor_3d(k16, ST_TYPE_F16, HD, NKV, CELLS);
    w16.v_cache = st_ref_tensor_3d(v16, ST_TYPE_F16, HD, NKV, CELLS);
    ST_CHECK(st_ref_kv_write(&w16) == ST_OK);
    kv_len[1] = 1; /* both tokens see only position 0 (cell 3 = token 0) */
    for (int c = 0; c < 2; c++) {
        a.k_cache = c == 0 ? wq.k_cache : w16.k_cache;
        a.v_cache = c == 0 ? wq.v_cache : w16.v_cache;
        ST_CHECK(st_ref_attention(&a) == ST_OK);
        int bad_elems = 0;
        for (int t = 0; t < 2; t++)
            for (int h = 0; h < NH; h++)
                for (int d = 0; d < HD; d++) bad_elems += out[t][h][d] != v[0][h / 2][d];
        ST_CHECK_MSG(bad_elems == 0, "cache %d: %d elements differ from the single key's value", c, bad_elems);
    }
    /* K only (v and v_cache absent) */
    st_kv_write_args ko = w;
    memset(&ko.v, 0, sizeof ko.v);
    memset(&ko.v_cache, 0, sizeof ko.v_cache);
    ST_CHECK(st_ref_kv_write(&ko) == ST_OK);
    /* Q8_0 needs whole blocks per head row */
    st_kv_write_args wbad = w;
    wbad.k = st_ref_tensor_3d(k, ST_TYPE_F32, 16, NKV, 2);
    wbad.k_cache = st_ref_tensor_3d(kq, ST_TYPE_Q8_0, 16, NKV, CELLS);
    ST_CHECK(st_ref_kv_write(&wbad) == ST_INVALID);
}

int main(void) {
    test_rope();
    test_kv_attention();
    return st_check_result("test_ref_rope_attn");
}
