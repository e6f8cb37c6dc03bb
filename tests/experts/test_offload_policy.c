/* SPDX-License-Identifier: Apache-2.0 */
/* The offload policy against the static split, by the cost model (st_expert_model_time) on
 * synthetic decode traces with the H200 box's rates (upload 55 GB/s, a 2.65 MiB expert computed
 * by 16 cores in 85 us): on balanced routing (every expert used, the top half at most 70% of the
 * uses, adjacent tokens sharing few experts; the statistics are checked here) the default policy
 * must not be slower than the static split of whole layers, and admitting every miss (lru) must
 * be (so the check can fail); on skewed routing the cache must beat the static split. Also the
 * split of misses between the pipes and the whole-layer profile. Steps of 1 and of 4 tokens (four
 * sequences decoded together). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experts/expert_cache.h"
#include "experts/expert_cost.h"
#include "experts/expert_profile.h"
#include "experts/expert_sim.h"
#include "experts/expert_stats.h"

static int g_fail = 0;
#include "../common/check.h"

enum { L = 48, X = 128, K = 8, STEPS = 400 };

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static double rndf(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

typedef struct trace_buf {
    int32_t layer[STEPS * L * K], expert[STEPS * L * K];
    int64_t step[STEPS * L * K];
    int64_t n;
} trace_buf;

/* k distinct experts drawn by weight w[X] (without replacement) into out. */
static void draw(const double *w, int32_t *out) {
    double tot = 0;
    int8_t taken[X] = {0};
    for (int e = 0; e < X; e++) tot += w[e];
    for (int j = 0; j < K; j++) {
        double r = rndf() * tot, acc = 0;
        int pick = -1;
        for (int e = 0; e < X && pick < 0; e++) {
            if (taken[e]) continue;
            acc += w[e];
            if (acc >= r) pick = e;
        }
        if (pick < 0)
            for (int e = X - 1; e >= 0 && pick < 0; e--)
                if (!taken[e]) pick = e;
        taken[pick] = 1;
        tot -= w[pick];
        out[j] = pick;
    }
}

/* Balanced: per layer, log-normal popularity (sigma) and independent tokens. Skewed: a hot set of
 * 12 experts per layer takes 90% of the weight, and a token repeats its predecessor's routing
 * half of the time (greedy decoding of a random model). Steps of T tokens (T sequences decoded
 * together): a step's accesses are grouped by layer, as the model routes them. */
static void make_trace(trace_buf *t, int skewed, int T) {
    static double w[L][X];
    static int32_t prev[L][K];
    for (int l = 0; l < L; l++)
        for (int e = 0; e < X; e++) {
            double g = sqrt(-2.0 * log(rndf() + 1e-12)) * cos(6.283185307 * rndf());
            w[l][e] = skewed ? (e < 12 ? 75.0 : 1.0) : exp(0.45 * g);
        }
    t->n = 0;
    for (int s = 0; s < STEPS / T; s++)
        for (int l = 0; l < L; l++)
            for (int q = 0; q < T; q++) {
                int32_t ids[K];
                if (skewed && s > 0 && rndf() < 0.5) memcpy(ids, prev[l], sizeof ids);
                else draw(w[l], ids);
                memcpy(prev[l], ids, sizeof ids);
                for (int j = 0; j < K; j++) {
                    t->layer[t->n] = l;
                    t->expert[t->n] = ids[j];
                    t->step[t->n] = s;
                    t->n++;
                }
            }
}

static void check_stats(const trace_buf *t, int skewed) {
    char err[256];
    st_route_stats *rs = st_route_stats_create(L, X, K, err, sizeof err);
    for (int64_t i = 0; rs && i < t->n; i += K) st_route_stats_add(rs, t->layer[i], t->expert + i, 1);
    st_route_summary r;
    st_route_stats_summary(rs, &r);
    printf("%s trace: %lld of %lld pairs, top half %.3f, adjacent overlap %.3f\n", skewed ? "skewed" : "balanced",
           (long long)r.pairs_used, (long long)r.pairs_total, r.top_half_share, r.adjacent_overlap);
    if (!skewed)
        CHECK(r.pairs_used == r.pairs_total && r.top_half_share <= 0.70 && r.adjacent_overlap <= 0.30,
              "the balanced trace is not balanced");
    else
        CHECK(r.top_half_share > 0.70 && r.adjacent_overlap > 0.30, "the skewed trace is not skewed");
    st_route_stats_free(rs);
}

static const uint64_t k_bytes = 2779136; /* 2.65 MiB: one Q4_0 expert of qwen3-30b-a3b */

static st_expert_cost h200_cost(void) {
    st_expert_cost c = {55e9, 0, 4e-6, 85e-6, 5e-6};
    return c;
}

/* Modelled seconds per step of policy `pol` (seeded with the last layers that fit). */
static double model(const trace_buf *t, int64_t slots, int pol, int both, st_expert_time *out) {
    char err[256];
    const st_expert_trace tr = {L, X, t->n, t->layer, t->expert, t->step};
    const int32_t full = (int32_t)(slots / X);
    st_expert_profile *p = full > 0 ? st_expert_profile_layers(L, X, L - full, L - 1, err, sizeof err) : NULL;
    st_expert_cache_params cp;
    memset(&cp, 0, sizeof cp);
    cp.n_slots = slots;
    cp.policy = pol;
    cp.slot_bytes = k_bytes;
    st_expert_cost c = h200_cost();
    int rc = st_expert_model_time(&tr, &cp, p ? p->layer : NULL, p ? p->expert : NULL, p ? p->n : 0, &c, k_bytes, both,
                                  out, err, sizeof err);
    CHECK(rc == 0, "model time: %s", err);
    st_expert_profile_free(p);
    return out->s_per_step;
}

static void case_policies(int skewed, int64_t slots, int T) {
    static trace_buf t;
    make_trace(&t, skewed, T);
    check_stats(&t, skewed);
    st_expert_time ts, tsb, td, tl;
    const double stat = model(&t, slots, ST_EXPERT_PROFILE, 0, &ts);
    const double stat2 = model(&t, slots, ST_EXPERT_PROFILE, 1, &tsb);
    const double def = model(&t, slots, ST_EXPERT_LFRU, 1, &td);
    const double lru = model(&t, slots, ST_EXPERT_LRU, 1, &tl);
    printf("  %lld slots, %d token(s) per step: static split %.2f ms/step (hit %.3f); static + both pipes %.2f (%.1f streamed/token); "
           "default lfru %.2f (hit %.3f, %.2f admissions/token); lru %.2f (hit %.3f, %.1f admissions/token)\n",
           (long long)slots, T, stat * 1e3, st_expert_stats_hit_rate(&ts.stats), stat2 * 1e3,
           (double)tsb.streamed / STEPS, def * 1e3, st_expert_stats_hit_rate(&td.stats),
           (double)td.admissions / STEPS, lru * 1e3, st_expert_stats_hit_rate(&tl.stats),
           (double)tl.admissions / STEPS);
    CHECK(stat2 <= stat, "both pipes slower than the CPU alone (%.3f > %.3f ms)", stat2 * 1e3, stat * 1e3);
    CHECK(def <= stat2 * 1.001, "%s routing, %lld slots: the default policy is modelled slower than the static split "
          "(%.3f > %.3f ms per token)", skewed ? "skewed" : "balanced", (long long)slots, def * 1e3, stat2 * 1e3);
    if (!skewed)
        CHECK((double)td.admissions / STEPS < 2.0, "balanced routing: the default admitted %.2f experts per token "
              "(trading equals; each a copy and a search the cost model does not charge)", (double)td.admissions / STEPS);
    if (!skewed)
        CHECK(lru > stat2, "balanced routing: admitting every miss should lose to the static split (%.3f <= %.3f)",
              lru * 1e3, stat2 * 1e3);
    else
        CHECK(def < 0.9 * stat2, "skewed routing: the cache should beat the static split by 10%% (%.3f vs %.3f)",
              def * 1e3, stat2 * 1e3);
}

/* The pipes' split: on the H200 rates a decode miss goes to the upload first, and both pipes end
 * near each other; with no staging slots everything stays on the CPU. */
static void case_split(void) {
    st_expert_cost c = h200_cost();
    int32_t rows[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    uint8_t up[8];
    double t = 0;
    int64_t n = st_expert_cost_split(&c, k_bytes, 0, rows, 8, 8, up, &t);
    const double u = st_expert_cost_upload_s(&c, k_bytes);
    CHECK(n == 5, "8 misses: %lld uploaded (want 5: 5 x %.0f us vs 3 x 85 us)", (long long)n, u * 1e6);
    CHECK(fabs(t - fmax(5 * u, 3 * 85e-6)) < 1e-9, "finish %.1f us", t * 1e6);
    CHECK(st_expert_cost_split(&c, k_bytes, 0, rows, 8, 0, up, &t) == 0 && fabs(t - 8 * 85e-6) < 1e-9,
          "no staging slots: every miss on the CPU");
    /* a busy device pipe keeps the misses on the CPU */
    CHECK(st_expert_cost_split(&c, k_bytes, 1e-3, rows, 8, 8, up, &t) == 0, "a device busy for 1 ms still got uploads");
    /* many rows: the expert with the most rows moves first */
    int32_t r2[3] = {1, 64, 2};
    n = st_expert_cost_split(&c, k_bytes, 0, r2, 3, 1, up, &t);
    CHECK(n == 1 && up[1] == 1, "the 64-row expert should be uploaded");
}

static void case_layers_profile(void) {
    char err[256];
    st_expert_profile *p = st_expert_profile_layers(4, 8, 2, 3, err, sizeof err);
    CHECK(p && p->n == 16 && p->layer[0] == 2 && p->expert[0] == 0 && p->layer[15] == 3 && p->expert[15] == 7,
          "whole-layer profile");
    st_expert_profile_free(p);
    CHECK(st_expert_profile_layers(4, 8, 3, 4, err, sizeof err) == NULL, "layer 4 of 4 accepted");
}

int main(void) {
    case_split();
    case_layers_profile();
    case_policies(0, 2458, 1); /* 40% of the experts: the 8 GiB case */
    case_policies(0, 800, 1);  /* 13%: the 4 GiB case */
    case_policies(1, 800, 1);
    case_policies(0, 2458, 4); /* four sequences decoded together */
    case_policies(0, 800, 4);
    case_policies(1, 800, 4);
    if (g_fail) fprintf(stderr, "offload_policy: %d failure(s)\n", g_fail);
    else printf("offload_policy: ok\n");
    return g_fail ? 1 : 0;
}
