/* SPDX-License-Identifier: Apache-2.0 */
/* Sampler unit tests: PRNG reproducibility, greedy ties, top-k/top-p/min-p cuts, penalties,
 * seeded reproducibility and the candidate-subset path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sample.h"

static int g_fail = 0;
#include "../common/check.h"

static st_sampler_params plain(float temp) {
    st_sampler_params p;
    st_sampler_params_default(&p);
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    return p;
}

static void test_rng(void) {
    st_rng a, b, c;
    st_rng_seed(&a, 42);
    st_rng_seed(&b, 42);
    st_rng_seed(&c, 43);
    int same_c = 0;
    double sum = 0;
    for (int i = 0; i < 10000; i++) {
        uint64_t x = st_rng_next(&a), y = st_rng_next(&b), z = st_rng_next(&c);
        CHECK(x == y, "same seed diverged at %d", i);
        same_c += x == z;
    }
    CHECK(same_c == 0, "different seeds gave %d equal outputs", same_c);
    for (int i = 0; i < 100000; i++) {
        double u = st_rng_uniform(&a);
        CHECK(u >= 0.0 && u < 1.0, "uniform out of range: %f", u);
        sum += u;
    }
    CHECK(fabs(sum / 100000 - 0.5) < 0.01, "uniform mean %f", sum / 100000);
    double m = 0, v = 0;
    for (int i = 0; i < 100000; i++) {
        double x = st_rng_normal(&a);
        m += x;
        v += x * x;
    }
    m /= 100000;
    v = v / 100000 - m * m;
    CHECK(fabs(m) < 0.02 && fabs(v - 1.0) < 0.03, "normal mean %f var %f", m, v);
}

static void test_greedy(void) {
    st_sampler_params p = plain(0.0f);
    st_sampler *s = st_sampler_new(&p, 5);
    float l[5] = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f};
    CHECK(st_sampler_is_greedy(s), "temp 0 without penalties must be greedy");
    CHECK(st_sampler_sample(s, l) == 1, "greedy tie must pick the lower id");
    l[3] = 3.5f;
    CHECK(st_sampler_sample(s, l) == 3, "greedy must pick the max");
    st_sampler_free(s);
}

/* Draws n samples, returns counts per id. */
static void draw(st_sampler *s, const float *l, int V, int n, int *counts) {
    memset(counts, 0, sizeof(int) * (size_t)V);
    for (int i = 0; i < n; i++) {
        int32_t t = st_sampler_sample(s, l);
        CHECK(t >= 0 && t < V, "sample out of range: %d", t);
        if (t >= 0 && t < V) counts[t]++;
    }
}

static void test_top_k(void) {
    st_sampler_params p = plain(1.0f);
    p.top_k = 3;
    st_sampler *s = st_sampler_new(&p, 8);
    float l[8] = {0.1f, 2.0f, 0.0f, 1.0f, -3.0f, 1.5f, 0.2f, 0.3f};
    int c[8];
    const int N = 30000;
    draw(s, l, 8, N, c);
    CHECK(c[0] + c[2] + c[4] + c[6] + c[7] == 0, "top-k 3 let a token outside the top 3 through");
    double z = exp(2.0) + exp(1.5) + exp(1.0);
    CHECK(fabs(c[1] / (double)N - exp(2.0) / z) < 0.015, "top-k: p(1) %f vs %f", c[1] / (double)N, exp(2.0) / z);
    CHECK(fabs(c[5] / (double)N - exp(1.5) / z) < 0.015, "top-k: p(5) %f", c[5] / (double)N);
    CHECK(fabs(c[3] / (double)N - exp(1.0) / z) < 0.015, "top-k: p(3) %f", c[3] / (double)N);
    st_sampler_free(s);
}

static void test_top_p(void) {
    st_sampler_params p = plain(1.0f);
    p.top_p = 0.75f;
    st_sampler *s = st_sampler_new(&p, 4);
    float l[4] = {logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f)};
    int c[4];
    const int N = 20000;
    draw(s, l, 4, N, c);
    CHECK(c[0] == 0 && c[2] == 0, "top-p 0.75 must keep only {0.5, 0.3}: got %d %d", c[0], c[2]);
    CHECK(fabs(c[1] / (double)N - 0.5 / 0.8) < 0.015, "top-p renormalized p %f", c[1] / (double)N);
    st_sampler_free(s);
    /* a cut exactly after the first token */
    p.top_p = 0.4f;
    s = st_sampler_new(&p, 4);
    draw(s, l, 4, 1000, c);
    CHECK(c[1] == 1000, "top-p 0.4 must keep only the best token (%d)", c[1]);
    st_sampler_free(s);
}

static void test_min_p(void) {
    st_sampler_params p = plain(1.0f);
    p.min_p = 0.2f; /* keeps p >= 0.1 */
    st_sampler *s = st_sampler_new(&p, 4);
    float l[4] = {logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f)};
    int c[4];
    const int N = 20000;
    draw(s, l, 4, N, c);
    CHECK(c[2] == 0, "min-p 0.2 must drop the 0.05 token (%d)", c[2]);
    CHECK(c[0] > 0 && c[1] > 0 && c[3] > 0, "min-p must keep the other three");
    CHECK(fabs(c[0] / (double)N - 0.15 / 0.95) < 0.015, "min-p renormalized p %f", c[0] / (double)N);
    st_sampler_free(s);
}

static void test_penalties(void) {
    st_sampler_params p = plain(0.0f);
    p.repeat_penalty = 2.0f;
    st_sampler *s = st_sampler_new(&p, 3);
    float l[3] = {2.0f, 1.5f, -1.0f};
    CHECK(st_sampler_sample(s, l) == 0, "no history: argmax");
    st_sampler_accept(s, 0); /* 2.0 -> 1.0 */
    CHECK(!st_sampler_is_greedy(s), "active penalties are not plain greedy");
    CHECK(st_sampler_sample(s, l) == 1, "repeat penalty must demote token 0");
    st_sampler_free(s);

    /* negative logits are multiplied */
    float l2[3] = {-1.0f, -1.5f, -3.0f};
    s = st_sampler_new(&p, 3);
    st_sampler_accept(s, 0); /* -1 -> -2 */
    CHECK(st_sampler_sample(s, l2) == 1, "repeat penalty on a negative logit must multiply");
    st_sampler_free(s);

    /* frequency and presence */
    p = plain(0.0f);
    p.frequency_penalty = 0.3f;
    p.presence_penalty = 0.05f;
    s = st_sampler_new(&p, 3);
    float l3[3] = {1.0f, 1.6f, 0.0f};
    st_sampler_accept(s, 1);
    CHECK(st_sampler_sample(s, l3) == 1, "1.6 - 0.35 = 1.25 still wins");
    st_sampler_accept(s, 1); /* 1.6 - 0.6 - 0.05 = 0.95 */
    CHECK(st_sampler_sample(s, l3) == 0, "two occurrences must demote token 1");
    st_sampler_free(s);

    /* the window forgets */
    p = plain(0.0f);
    p.repeat_penalty = 4.0f;
    p.penalty_last_n = 2;
    s = st_sampler_new(&p, 3);
    float l4[3] = {2.0f, 1.0f, 1.9f};
    st_sampler_accept(s, 0);
    CHECK(st_sampler_sample(s, l4) == 2, "token 0 in the window is penalized");
    st_sampler_accept(s, 1);
    st_sampler_accept(s, 1);
    CHECK(st_sampler_sample(s, l4) == 0, "token 0 left the window of 2");
    st_sampler_reset(s);
    CHECK(st_sampler_is_greedy(s), "reset clears the history");
    st_sampler_free(s);
}

static void fill_random(st_rng *r, float *l, int V) {
    for (int i = 0; i < V; i++) l[i] = 3.0f * st_rng_normal(r);
}

static void test_seeded(void) {
    enum { V = 1000, STEPS = 300 };
    static float l[V];
    st_sampler_params p;
    st_sampler_params_default(&p);
    p.seed = 77;
    p.top_k = 0; /* full vocabulary path */
    p.repeat_penalty = 1.1f;
    st_sampler *a = st_sampler_new(&p, V), *b = st_sampler_new(&p, V);
    p.seed = 78;
    st_sampler *c = st_sampler_new(&p, V);
    st_rng r;
    st_rng_seed(&r, 5);
    int diff_c = 0;
    for (int i = 0; i < STEPS; i++) {
        fill_random(&r, l, V);
        int32_t x = st_sampler_sample(a, l), y = st_sampler_sample(b, l), z = st_sampler_sample(c, l);
        CHECK(x == y, "same seed, same input, different token at step %d", i);
        diff_c += x != z;
        st_sampler_accept(a, x);
        st_sampler_accept(b, y);
        st_sampler_accept(c, z);
    }
    CHECK(diff_c > 10, "another seed should change some draws (%d differ)", diff_c);
    st_sampler_free(a);
    st_sampler_free(b);
    st_sampler_free(c);
}

typedef struct { int32_t id; float v; } pair;
static int cmp_pair(const void *pa, const void *pb) {
    const pair *a = pa, *b = pb;
    if (a->v != b->v) return a->v > b->v ? -1 : 1;
    return a->id - b->id;
}

static void test_candidates(void) {
    enum { V = 2000, STEPS = 300 };
    static float l[V];
    static pair pr[V];
    int32_t ids[V];
    float vals[V];
    st_sampler_params p;
    st_sampler_params_default(&p);
    p.seed = 9;
    p.top_k = 20;
    p.repeat_penalty = 1.3f;
    p.frequency_penalty = 0.2f;
    p.penalty_last_n = 32;
    st_sampler *full = st_sampler_new(&p, V), *sub = st_sampler_new(&p, V);
    st_rng r;
    st_rng_seed(&r, 11);
    for (int i = 0; i < STEPS; i++) {
        fill_random(&r, l, V);
        /* make recent tokens attractive so penalties matter */
        for (int j = 0; j < 5; j++) l[(i * 7 + j) % 40] += 8.0f;
        int32_t n = st_sampler_candidates_needed(sub);
        CHECK(n > 0 && n <= 20 + 32, "candidates needed %d", n);
        for (int j = 0; j < V; j++) pr[j] = (pair){j, l[j]};
        qsort(pr, V, sizeof *pr, cmp_pair);
        for (int j = 0; j < n; j++) {
            ids[j] = pr[j].id;
            vals[j] = pr[j].v;
        }
        int32_t x = st_sampler_sample(full, l), y = st_sampler_sample_cand(sub, ids, vals, n);
        CHECK(x == y, "candidate subset of %d disagrees with the full vocabulary at step %d (%d vs %d)",
              n, i, x, y);
        st_sampler_accept(full, x);
        st_sampler_accept(sub, y);
    }
    st_sampler_free(full);
    st_sampler_free(sub);
    /* greedy needs exactly one candidate without history */
    st_sampler_params g = plain(0.0f);
    st_sampler *s = st_sampler_new(&g, V);
    CHECK(st_sampler_candidates_needed(s) == 1, "greedy needs 1 candidate");
    st_sampler_free(s);
    /* boosting penalties need the full vocabulary */
    g.repeat_penalty = 0.5f;
    s = st_sampler_new(&g, V);
    st_sampler_accept(s, 3);
    CHECK(st_sampler_candidates_needed(s) == 0, "a boosting penalty needs the full vocabulary");
    st_sampler_free(s);
}

static void test_low_temperature(void) {
    st_sampler_params p = plain(0.01f);
    st_sampler *s = st_sampler_new(&p, 4);
    float l[4] = {1.0f, 1.2f, 0.9f, 1.1f};
    int c[4];
    draw(s, l, 4, 2000, c);
    CHECK(c[1] >= 1990, "temperature 0.01 must be nearly greedy (%d)", c[1]);
    st_sampler_free(s);
}

int main(void) {
    test_rng();
    test_greedy();
    test_top_k();
    test_top_p();
    test_min_p();
    test_penalties();
    test_seeded();
    test_candidates();
    test_low_temperature();
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("sampler: all checks passed\n");
    return 0;
}
