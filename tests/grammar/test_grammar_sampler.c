/* SPDX-License-Identifier: Apache-2.0 */
/* grammar.sampler: the sampler under a grammar (core/sample + core/grammar): every sampled
 * sequence follows the grammar, whatever the logits; the restricted distribution is p
 * renormalized over the allowed tokens; logit_bias bans and forces tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "grammar/grammar.h"
#include "sample/sample.h"

static int g_fail;

static const char *k_texts[] = {"a", "b", "c", "ab", "(", ")", "", "!"};
enum { V = 8, EOS = 6 };

static st_sampler *mk(float temp, int32_t top_k, uint64_t seed, st_gvocab *v, const char *gbnf) {
    st_sampler_params p;
    st_sampler_params_default(&p);
    p.temp = temp;
    p.top_k = top_k;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    st_sampler *s = st_sampler_new(&p, V);
    char err[200];
    st_grammar *g = gbnf ? st_grammar_parse(gbnf, err, sizeof err) : NULL;
    CHECK(!gbnf || g, "grammar.sampler: %s", err);
    if (g) st_grammar_constrain(s, g, v);
    return s;
}

int main(void) {
    uint8_t eog[V] = {0};
    eog[EOS] = 1;
    st_gvocab *v = st_gvocab_new(k_texts, NULL, eog, V);
    const char *gbnf = "root ::= \"(\" [ab]+ \")\" \"!\"?\n";
    st_rng rng;
    st_rng_seed(&rng, 7);
    /* random logits: every sequence follows the grammar and ends at EOS */
    for (int run = 0; run < 200; run++) {
        st_sampler *s = mk(1.0f, run % 3 == 0 ? 0 : run % 3 == 1 ? 3 : 1, (uint64_t)run, v, gbnf);
        char text[256] = "";
        int ended = 0;
        for (int step = 0; step < 40 && !ended; step++) {
            float lg[V];
            for (int i = 0; i < V; i++) lg[i] = st_rng_normal(&rng) * 3.0f;
            lg[EOS] -= 4.0f; /* let sequences grow a little */
            int32_t t = st_sampler_sample(s, lg);
            CHECK(t >= 0, "grammar.sampler: no token at step %d", step);
            if (t < 0) break;
            if (t == EOS) ended = 1;
            else strcat(text, k_texts[t]);
        }
        size_t n = strlen(text);
        int ok = n >= 3 && text[0] == '(' && strspn(text + 1, "ab") == n - 2 - (text[n - 1] == '!') &&
                 text[n - 1 - (text[n - 1] == '!')] == ')';
        CHECK(!ended || ok, "grammar.sampler run %d: '%s' does not follow the grammar", run, text);
        st_sampler_free(s);
    }
    /* the scan path (top-k 1: the best allowed token among the 4 best) was taken at least once */
    {
        st_sampler *s1 = mk(1.0f, 1, 5, v, gbnf);
        float lg[V] = {9, 8, 0, 0, 1, 0, 0, 0}; /* a, b refused first; "(" is 3rd best */
        int32_t t = st_sampler_sample(s1, lg);
        CHECK(t == 4 && st_sampler_scanned_steps(s1) == 1, "grammar.sampler: scan path gave %d (scanned %llu)", t,
              (unsigned long long)st_sampler_scanned_steps(s1));
        st_sampler_free(s1);
    }
    /* restricted distribution: after "(", allowed are a, b, ab with logits 0, 1, 2 -> p ~ e^0:e^1:e^2 */
    int counts[V] = {0};
    const int N = 20000;
    for (int i = 0; i < N; i++) {
        st_sampler *s = mk(1.0f, 0, (uint64_t)i + 1000, v, gbnf);
        float first[V] = {-9, -9, -9, -9, 9, -9, -9, -9};
        st_sampler_sample(s, first); /* "(" */
        float lg[V] = {0.0f, 1.0f, 5.0f, 2.0f, 6.0f, 4.0f, -1.0f, 3.0f};
        counts[st_sampler_sample(s, lg)]++;
        st_sampler_free(s);
    }
    double z = exp(0.0) + exp(1.0) + exp(2.0);
    CHECK(counts[2] == 0 && counts[4] == 0 && counts[5] == 0 && counts[6] == 0 && counts[7] == 0,
          "grammar.sampler: refused tokens were drawn (%d %d %d %d %d)", counts[2], counts[4], counts[5], counts[6], counts[7]);
    CHECK(fabs(counts[0] / (double)N - exp(0.0) / z) < 0.02 && fabs(counts[3] / (double)N - exp(2.0) / z) < 0.02,
          "grammar.sampler: frequencies a %.3f ab %.3f, want %.3f %.3f", counts[0] / (double)N, counts[3] / (double)N,
          exp(0.0) / z, exp(2.0) / z);
    /* logit bias: -inf bans the best token, +100 forces another */
    st_sampler *s = mk(0.0f, 0, 1, v, NULL);
    float lg[V] = {5, 1, 0, 0, 0, 0, 0, 0};
    int32_t ban[1] = {0};
    float neg[1] = {-INFINITY};
    st_sampler_set_bias(s, ban, neg, 1);
    CHECK(st_sampler_sample(s, lg) == 1, "grammar.sampler: a banned token was chosen");
    int32_t force[1] = {7};
    float pos[1] = {100.0f};
    st_sampler_set_bias(s, force, pos, 1);
    CHECK(st_sampler_sample(s, lg) == 7, "grammar.sampler: +100 did not force the token");
    st_sampler_free(s);
    st_gvocab_free(v);
    printf("grammar.sampler: %d failures\n", g_fail);
    return g_fail ? 1 : 0;
}
