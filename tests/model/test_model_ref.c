/* SPDX-License-Identifier: Apache-2.0 */
/* The forward recipe of every family on the scalar reference: batched prefill equals
 * token-by-token decode, copied weights equal in-place weights, two sequences in one batch
 * equal separate runs, F16 KV stays close to F32 KV, greedy decoding is deterministic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/ref_device.h"
#include "model_util.h"

static const char *k_archs[] = {"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "olmoe"};
enum { NT = 9 };
static const int32_t k_tok[NT] = {256 + 43, 72, 101, 108, 108, 111, 32, 119, 256 + 5};

static void params(st_model_params *p, uint32_t kv) {
    st_model_params_default(p);
    p->kv_type = kv;
    p->n_ctx = 64;
    p->n_batch = 16;
    p->n_out_max = 16;
    p->n_seq = 2;
}

static void greedy(mt_model *t, int n, int32_t *out) {
    char err[512];
    int32_t tok = k_tok[0];
    st_kv_clear(st_model_kv(t->m));
    for (int i = 0; i < n; i++) {
        if (st_model_eval(t->m, 0, &tok, 1, i, 0, NULL, err, sizeof err) ||
            st_model_argmax(t->m, &tok, err, sizeof err)) {
            CHECK(0, "greedy step %d: %s", i, err);
            return;
        }
        out[i] = tok;
    }
}

static void test_arch(const char *arch) {
    char path[512];
    mt_tmp_path(path, sizeof path, "tiny.gguf");
    if (mt_gen_tiny(arch, ST_TYPE_F32, 0, 0, path)) {
        CHECK(0, "%s: generation failed", arch);
        return;
    }
    st_model_params p;
    params(&p, ST_TYPE_F32);
    mt_model a, b;
    if (mt_load(&a, path, st_ref_device_api(1), &p)) {
        CHECK(0, "%s: load failed", arch);
        unlink(path);
        return;
    }
    const int V = a.d->hp.n_vocab;
    CHECK(st_model_weights_in_place(a.m), "%s: a unified device should use weights in place", arch);
    float *batched = malloc(sizeof(float) * NT * (size_t)V), *step = malloc(sizeof(float) * NT * (size_t)V);
    float *copied = malloc(sizeof(float) * NT * (size_t)V);
    CHECK(mt_prefill_all(&a, k_tok, NT, batched) == 0, "%s: prefill", arch);
    CHECK(mt_stepwise_all(&a, k_tok, NT, step) == 0, "%s: stepwise", arch);
    double d = mt_rel_diff(step, batched, (size_t)NT * V);
    CHECK(d < 1e-5, "%s: token-by-token logits differ from the batch by %g", arch, d);
    /* logits must depend on the input and be finite with a sane spread */
    double m0 = 0, s0 = 0;
    for (int i = 0; i < V; i++) {
        CHECK(isfinite(batched[i]), "%s: non-finite logit", arch);
        m0 += batched[i];
        s0 += (double)batched[i] * batched[i];
    }
    m0 /= V;
    double sd = sqrt(s0 / V - m0 * m0);
    CHECK(sd > 0.1 && sd < 100, "%s: logit spread %g is not sane", arch, sd);
    CHECK(mt_rel_diff(batched, batched + V, (size_t)V) > 1e-3, "%s: logits do not depend on the input", arch);

    /* two sequences interleaved in one batch equal the separate runs */
    {
        char err[512];
        st_kv_clear(st_model_kv(a.m));
        int32_t tok[2 * NT], pos[2 * NT], seq[2 * NT];
        int8_t want[2 * NT];
        for (int i = 0; i < NT; i++) {
            tok[2 * i] = k_tok[i];
            tok[2 * i + 1] = k_tok[NT - 1 - i];
            pos[2 * i] = pos[2 * i + 1] = i;
            seq[2 * i] = 0;
            seq[2 * i + 1] = 1;
            want[2 * i] = want[2 * i + 1] = 1;
        }
        float *both = malloc(sizeof(float) * 2 * NT * (size_t)V);
        int ok = 1;
        for (int c = 0; c < 2 && ok; c++) { /* two batches of 9 rows to cross a batch boundary */
            st_batch bt = {NT, tok + c * NT, pos + c * NT, seq + c * NT, want + c * NT};
            ok = st_model_forward(a.m, &bt, err, sizeof err) == 0 &&
                 st_model_logits(a.m, both + (size_t)c * NT * V, err, sizeof err) == 0;
        }
        CHECK(ok, "%s: two-sequence batch: %s", arch, err);
        int32_t rev[NT];
        for (int i = 0; i < NT; i++) rev[i] = k_tok[NT - 1 - i];
        float *r = malloc(sizeof(float) * NT * (size_t)V);
        mt_prefill_all(&a, rev, NT, r);
        double d0 = 0, d1 = 0;
        for (int i = 0; i < NT; i++) {
            double x = mt_rel_diff(both + (size_t)(2 * i) * V, batched + (size_t)i * V, (size_t)V);
            double y = mt_rel_diff(both + (size_t)(2 * i + 1) * V, r + (size_t)i * V, (size_t)V);
            if (x > d0) d0 = x;
            if (y > d1) d1 = y;
        }
        CHECK(d0 < 1e-5 && d1 < 1e-5, "%s: interleaved sequences differ (%g, %g)", arch, d0, d1);
        free(both);
        free(r);
    }
    /* a refused batch leaves the cache as it was */
    {
        char err[512];
        st_kv_clear(st_model_kv(a.m));
        int32_t tk[3] = {k_tok[0], k_tok[1], a.d->hp.n_vocab}, ps[3] = {0, 1, 2};
        st_batch bad = {3, tk, ps, NULL, NULL};
        CHECK(st_model_forward(a.m, &bad, err, sizeof err) != 0 && strstr(err, "outside the vocabulary"),
              "%s: an out-of-range token must be refused (%s)", arch, err);
        CHECK(st_kv_seq_len(st_model_kv(a.m), 0) == 0, "%s: a refused batch changed the cache", arch);
        int32_t gap_pos[2] = {0, 2};
        st_batch gap = {2, tk, gap_pos, NULL, NULL};
        CHECK(st_model_forward(a.m, &gap, err, sizeof err) != 0 && strstr(err, "gap"), "%s: a gap must be refused",
              arch);
        CHECK(st_kv_seq_len(st_model_kv(a.m), 0) == 0, "%s: a refused gap changed the cache", arch);
    }
    int32_t g1[12], g2[12];
    greedy(&a, 12, g1);
    greedy(&a, 12, g2);
    CHECK(!memcmp(g1, g2, sizeof g1), "%s: greedy decoding is not deterministic", arch);
    mt_unload(&a);

    /* copied weights (non-unified device) give identical logits */
    p.no_in_place = 0;
    if (mt_load(&b, path, st_ref_device_api(0), &p) == 0) {
        CHECK(!st_model_weights_in_place(b.m), "%s: non-unified device must copy", arch);
        CHECK(st_model_weight_bytes_uploaded(b.m) > 0, "%s: nothing uploaded", arch);
        mt_prefill_all(&b, k_tok, NT, copied);
        CHECK(mt_rel_diff(copied, batched, (size_t)NT * V) == 0.0, "%s: copied weights change the logits", arch);
        mt_unload(&b);
    } else {
        CHECK(0, "%s: load on a non-unified device failed", arch);
    }
    /* F16 KV stays close */
    params(&p, ST_TYPE_F16);
    if (mt_load(&b, path, st_ref_device_api(1), &p) == 0) {
        mt_prefill_all(&b, k_tok, NT, copied);
        double e = mt_rel_diff(copied, batched, (size_t)NT * V);
        CHECK(e < 2e-2 && e > 0, "%s: F16 KV differs from F32 KV by %g", arch, e);
        mt_unload(&b);
    }
    printf("%-9s prefill == stepwise (%.1e), sequences, in-place == copied, greedy deterministic\n", arch, d);
    free(batched);
    free(step);
    free(copied);
    unlink(path);
}

/* Expert counting sums to tokens x k per layer, and a router skew concentrates the routing. */
static double top_share(float skew, int check_sums) {
    char path[512], err[512];
    mt_tmp_path(path, sizeof path, "skew.gguf");
    st_gen_params g;
    st_gen_preset("tiny", "qwen3moe", &g);
    g.hp.n_expert = 16;
    g.hp.n_expert_used = 2;
    g.router_skew = skew;
    g.seed = 5;
    if (st_gen_model(&g, path, err, sizeof err)) {
        CHECK(0, "gen: %s", err);
        return 0;
    }
    st_model_params p;
    params(&p, ST_TYPE_F32);
    p.n_ctx = 256;
    p.n_batch = 64;
    mt_model t;
    double share = 0;
    if (mt_load(&t, path, st_ref_device_api(1), &p) == 0) {
        enum { N = 128 };
        int32_t tok[N];
        for (int i = 0; i < N; i++) tok[i] = (i * 7919 + 13) % t.d->hp.n_vocab;
        st_model_count_experts(t.m, 1);
        CHECK(st_model_eval(t.m, 0, tok, N, 0, 0, NULL, err, sizeof err) == 0, "eval: %s", err);
        const uint64_t *c = st_model_expert_counts(t.m);
        for (int l = 0; l < t.d->hp.n_layer && c; l++) {
            uint64_t sum = 0, mx = 0;
            for (int e = 0; e < 16; e++) {
                sum += c[l * 16 + e];
                if (c[l * 16 + e] > mx) mx = c[l * 16 + e];
            }
            if (check_sums) CHECK(sum == (uint64_t)N * 2, "layer %d: %llu expert assignments, expected %d", l,
                                  (unsigned long long)sum, N * 2);
            share += (double)mx / (double)(sum ? sum : 1) / t.d->hp.n_layer;
        }
        mt_unload(&t);
    }
    unlink(path);
    return share;
}

int main(void) {
    double flat = top_share(0.0f, 1), skewed = top_share(4.0f, 1);
    CHECK(skewed > flat * 1.5 && skewed > 0.2, "router skew 4 should concentrate routing (top expert share %.2f vs "
          "%.2f without skew)", skewed, flat);
    printf("top expert share: %.2f without skew, %.2f with skew 4\n", flat, skewed);
    for (size_t i = 0; i < sizeof k_archs / sizeof k_archs[0]; i++) test_arch(k_archs[i]);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    return 0;
}
