/* SPDX-License-Identifier: Apache-2.0 */
/* Cross-check of the reference RoPE (normal/NeoX, linear scaling, YaRN), RMS norm and paged
 * GQA attention against llama.cpp's ggml CPU implementation, linked only in this test. ggml
 * accumulates angles in float, so the RoPE tolerance grows with the position. */
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"
#include "quant/quant.h"
#include "ref/ref.h"
#include "st_check.h"

enum { HD = 64, NH = 3, NT = 5 };

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static float frand(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

struct rope_case {
    int mode, n_rot, n_ctx_orig;
    float base, scale, ext, attn, beta_fast, beta_slow;
};

static void check_rope(const struct rope_case *c) {
    static float x[NT][NH][HD], ours[NT][NH][HD];
    int32_t pos[NT] = {0, 1, 17, 300, 2047};
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < NH; h++)
            for (int d = 0; d < HD; d++) x[t][h][d] = frand();

    st_rope_args a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.mode = (uint32_t)c->mode;
    a.x = st_ref_tensor_3d(x, ST_TYPE_F32, HD, NH, NT);
    a.out = st_ref_tensor_3d(ours, ST_TYPE_F32, HD, NH, NT);
    a.pos = pos;
    a.n_rot = c->n_rot;
    a.n_ctx_orig = c->n_ctx_orig;
    a.freq_base = c->base;
    a.freq_scale = c->scale;
    a.ext_factor = c->ext;
    a.attn_factor = c->attn;
    a.beta_fast = c->beta_fast;
    a.beta_slow = c->beta_slow;
    ST_CHECK(st_ref_rope(&a) == ST_OK);

    struct ggml_init_params ip = {16 << 20, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *gx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, HD, NH, NT);
    struct ggml_tensor *gp = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, NT);
    memcpy(gx->data, x, sizeof x);
    memcpy(gp->data, pos, sizeof pos);
    struct ggml_tensor *r = ggml_rope_ext(ctx, gx, gp, NULL, c->n_rot, c->mode, c->n_ctx_orig, c->base, c->scale,
                                          c->ext, c->attn, c->beta_fast, c->beta_slow);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, r);
    ST_CHECK(ggml_graph_compute_with_ctx(ctx, gf, 1) == GGML_STATUS_SUCCESS);
    const float *g = r->data;
    int bad = 0;
    double worst = 0;
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < NH; h++)
            for (int d = 0; d < HD; d++) {
                double o = ours[t][h][d], e = g[(t * NH + h) * HD + d];
                double tol = 2e-5 + 1e-7 * pos[t];
                double diff = fabs(o - e);
                if (diff > worst) worst = diff;
                if (!(diff <= tol)) {
                    if (bad < 3)
                        fprintf(stderr, "  rope mode %d n_rot %d scale %g ext %g: t %d h %d d %d ours %.7f ggml %.7f\n",
                                c->mode, c->n_rot, (double)c->scale, (double)c->ext, t, h, d, o, e);
                    bad++;
                }
            }
    ST_CHECK_MSG(bad == 0, "%d rope elements differ from ggml", bad);
    printf("rope mode %d n_rot %2d base %-8g scale %-5g ext %-4g attn %-4g: max |diff| %.2e\n", c->mode, c->n_rot,
           (double)c->base, (double)c->scale, (double)c->ext, (double)c->attn, worst);
    ggml_free(ctx);
}

static void check_rms_norm(void) {
    enum { K = 96, R = 4 };
    static float x[R][K], ours[R][K];
    for (int i = 0; i < R; i++)
        for (int k = 0; k < K; k++) x[i][k] = frand() * (float)(i + 1);
    st_rms_norm_args a = {.size = sizeof a, .eps = 1e-5f};
    a.x = st_ref_tensor_2d(x, ST_TYPE_F32, K, R);
    a.out = st_ref_tensor_2d(ours, ST_TYPE_F32, K, R);
    ST_CHECK(st_ref_rms_norm(&a) == ST_OK);
    struct ggml_init_params ip = {4 << 20, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *gx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, R);
    memcpy(gx->data, x, sizeof x);
    struct ggml_tensor *r = ggml_rms_norm(ctx, gx, 1e-5f);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, r);
    ST_CHECK(ggml_graph_compute_with_ctx(ctx, gf, 1) == GGML_STATUS_SUCCESS);
    const float *g = r->data;
    for (int i = 0; i < R * K; i++) ST_CHECK_NEAR(ours[i / K][i % K], g[i], 2e-6);
    ggml_free(ctx);
}

/* Paged GQA attention with a causal window, an additive mask and an F16 cache, against ggml's
 * mul_mat + soft_max_ext + mul_mat over the same keys gathered in position order. */
static void check_attention(void) {
    enum { D = 32, QH = 8, KVH = 2, NQ = 4, L0 = 9, CELLS = 24 };
    enum { L = L0 + NQ }; /* positions visible to the last token */
    static st_fp16 kc[CELLS][KVH][D], vc[CELLS][KVH][D];
    static float q[NQ][QH][D], ours[NQ][QH][D], mask[NQ][L];
    int32_t table[L], seq[NQ], kv_len[NQ];
    for (int c = 0; c < CELLS; c++)
        for (int h = 0; h < KVH; h++)
            for (int d = 0; d < D; d++) {
                kc[c][h][d] = st_f32_to_fp16(frand());
                vc[c][h][d] = st_f32_to_fp16(frand());
            }
    for (int p = 0; p < L; p++) table[p] = (p * 7 + 5) % CELLS; /* scattered cells */
    for (int i = 0; i < NQ; i++) {
        seq[i] = 0;
        kv_len[i] = L0 + i + 1;
        for (int h = 0; h < QH; h++)
            for (int d = 0; d < D; d++) q[i][h][d] = frand() * 2.0f;
        for (int p = 0; p < L; p++) mask[i][p] = p < kv_len[i] ? ((p % 3) == 0 ? frand() : 0.0f) : -INFINITY;
    }
    mask[1][4] = -INFINITY; /* one hidden position inside the window */
    float scale = 1.0f / sqrtf((float)D);
    st_attention_args a = {.size = sizeof a, .scale = scale};
    a.q = st_ref_tensor_3d(q, ST_TYPE_F32, D, QH, NQ);
    a.k_cache = st_ref_tensor_3d(kc, ST_TYPE_F16, D, KVH, CELLS);
    a.v_cache = st_ref_tensor_3d(vc, ST_TYPE_F16, D, KVH, CELLS);
    a.out = st_ref_tensor_3d(ours, ST_TYPE_F32, D, QH, NQ);
    a.seq = seq;
    a.kv_len = kv_len;
    a.cell_table = table;
    a.max_pos = L;
    a.mask = &mask[0][0];
    ST_CHECK(st_ref_attention(&a) == ST_OK);

    struct ggml_init_params ip = {16 << 20, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *gk = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, L, KVH);  /* [kvh][pos][d] */
    struct ggml_tensor *gvt = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, L, D, KVH); /* [kvh][d][pos] */
    struct ggml_tensor *gq = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, NQ, QH);  /* [h][token][d] */
    struct ggml_tensor *gm = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, L, NQ);
    float *k = gk->data, *vt = gvt->data, *qq = gq->data;
    for (int h = 0; h < KVH; h++)
        for (int p = 0; p < L; p++)
            for (int d = 0; d < D; d++) {
                k[(h * L + p) * D + d] = st_fp16_to_f32(kc[table[p]][h][d]);
                vt[(h * D + d) * L + p] = st_fp16_to_f32(vc[table[p]][h][d]);
            }
    for (int h = 0; h < QH; h++)
        for (int i = 0; i < NQ; i++)
            for (int d = 0; d < D; d++) qq[(h * NQ + i) * D + d] = q[i][h][d];
    memcpy(gm->data, mask, sizeof mask);
    struct ggml_tensor *kq = ggml_mul_mat(ctx, gk, gq);               /* [h][token][pos] */
    kq = ggml_soft_max_ext(ctx, kq, gm, scale, 0.0f);
    struct ggml_tensor *o = ggml_mul_mat(ctx, gvt, kq);               /* [h][token][d] */
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, o);
    ST_CHECK(ggml_graph_compute_with_ctx(ctx, gf, 1) == GGML_STATUS_SUCCESS);
    const float *g = o->data;
    double worst = 0;
    for (int h = 0; h < QH; h++)
        for (int i = 0; i < NQ; i++)
            for (int d = 0; d < D; d++) {
                double diff = fabs((double)ours[i][h][d] - g[(h * NQ + i) * D + d]);
                if (diff > worst) worst = diff;
            }
    printf("attention (GQA %d/%d, paged, masked, F16 cache): max |diff| %.2e\n", QH, KVH, worst);
    ST_CHECK_MSG(worst <= 1e-6, "attention differs from ggml by %.3e", worst);
    ggml_free(ctx);
}

int main(void) {
    const struct rope_case cases[] = {
        {0, 64, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f},
        {2, 64, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f},
        {0, 32, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f},
        {2, 32, 4096, 1000000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f},
        {0, 64, 4096, 10000.0f, 0.5f, 0.0f, 1.0f, 32.0f, 1.0f},
        {0, 64, 4096, 10000.0f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f},
        {2, 64, 4096, 10000.0f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f},
        {2, 48, 8192, 500000.0f, 0.125f, 0.5f, 0.8f, 32.0f, 1.0f},
        {0, 64, 2048, 10000.0f, 0.25f, 1.0f, 1.0f, 16.0f, 2.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_rope(&cases[i]);
    check_rms_norm();
    check_attention();
    return st_check_result("test_ref_vs_ggml");
}
