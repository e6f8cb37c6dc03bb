/* SPDX-License-Identifier: Apache-2.0 */
/* Belady's optimum from a warm cache (st_expert_belady_from), as the per-request statistics of
 * the server use it: exact on a hand-made pattern, equal to the cold optimum without residents,
 * never below a real cache that continues from the same residents on random skewed traces (every
 * policy, several sizes, with and without an insert cap), and refusing more residents than
 * slots. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experts/expert_cache.h"
#include "experts/expert_sim.h"

static int g_fail = 0;
#include "../common/check.h"

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

/* 2 slots, residents {0, 1}, accesses 0 1 2 0 1: warm, the optimum keeps both (2 is not worth
 * a slot) and hits 4; cold it misses 0, 1 and 2 and hits 2. */
static void test_hand(void) {
    const int32_t layer[5] = {0, 0, 0, 0, 0}, expert[5] = {0, 1, 2, 0, 1};
    const int64_t step[5] = {0, 1, 2, 3, 4};
    st_expert_trace t = {1, 4, 5, layer, expert, step};
    int32_t res[4] = {0, 1, -1, -1};
    st_expert_stats w, c, c2;
    char err[256];
    CHECK(st_expert_belady_from(&t, 2, res, &w, err, sizeof err) == 0, "warm: %s", err);
    CHECK(w.hits == 4 && w.misses == 1 && w.inserts == 0 && w.evictions == 0,
          "warm: hits %llu misses %llu inserts %llu evictions %llu, want 4 1 0 0", (unsigned long long)w.hits,
          (unsigned long long)w.misses, (unsigned long long)w.inserts, (unsigned long long)w.evictions);
    CHECK(st_expert_belady_from(&t, 2, NULL, &c, err, sizeof err) == 0 && c.hits == 2 && c.misses == 3,
          "cold: hits %llu misses %llu, want 2 3", (unsigned long long)c.hits, (unsigned long long)c.misses);
    CHECK(st_expert_belady(&t, 2, &c2, err, sizeof err) == 0 && memcmp(&c, &c2, sizeof c) == 0,
          "st_expert_belady differs from st_expert_belady_from without residents");
    /* a resident never used is the first to go: residents {3, 0} with 2 slots, accesses 0 1 2 0 1
     * -> 0 hit, 1 replaces 3, 2 not admitted (used never again), 0 hit, 1 hit */
    int32_t res2[4] = {1, -1, -1, 0};
    CHECK(st_expert_belady_from(&t, 2, res2, &w, err, sizeof err) == 0 && w.hits == 3 && w.evictions == 1,
          "stale resident: hits %llu evictions %llu, want 3 1", (unsigned long long)w.hits,
          (unsigned long long)w.evictions);
    int32_t res3[4] = {0, 1, 2, -1};
    CHECK(st_expert_belady_from(&t, 2, res3, &w, err, sizeof err) == -1 && strstr(err, "residents"),
          "3 residents in 2 slots accepted (err '%s')", err);
}

/* Random skewed routing through a real cache: warm up on a prefix, copy its table, continue on
 * the suffix; the warm optimum on the suffix must not be below the cache's suffix hits. */
static void test_bound(void) {
    enum { L = 3, X = 24, K = 4, STEPS = 300, WARM = 120 };
    static const int64_t slot_counts[4] = {1, 6, 20, 60};
    char err[256];
    int checked = 0;
    for (int pol = 0; pol < 2; pol++)
        for (int si = 0; si < 4; si++)
            for (int cap = 0; cap < 2; cap++) {
                st_expert_cache_params p;
                memset(&p, 0, sizeof p);
                p.n_layer = L;
                p.n_expert = X;
                p.n_slots = slot_counts[si];
                p.policy = pol ? ST_EXPERT_LFRU : ST_EXPERT_LRU;
                p.max_inserts_per_step = cap ? 2 : 0;
                p.slot_bytes = 1;
                st_expert_cache *c = st_expert_cache_create(&p, err, sizeof err);
                CHECK(c != NULL, "cache: %s", err);
                if (!c) continue;
                int32_t *tl = malloc(sizeof(int32_t) * STEPS * L * K), *te = malloc(sizeof(int32_t) * STEPS * L * K);
                int64_t *ts = malloc(sizeof(int64_t) * STEPS * L * K);
                int32_t table[L * X];
                st_expert_load loads[L * X];
                if (!tl || !te || !ts) abort(); /* test harness only */
                int64_t n = 0, n0 = 0;
                for (int64_t s = 0; s < STEPS; s++) {
                    if (s == WARM) { /* the window opens: residents and counters now */
                        memcpy(table, st_expert_cache_table(c), sizeof table);
                        st_expert_cache_stats_reset(c);
                        n0 = n;
                    }
                    st_expert_cache_step(c);
                    for (int32_t l = 0; l < L; l++) {
                        int32_t ids[K];
                        for (int j = 0; j < K; j++) /* 3 of 4 draws from a hot set of 5 that moves */
                            ids[j] = (rnd() % 4) ? (int32_t)((s / 50 + rnd() % 5) % X) : (int32_t)(rnd() % X);
                        for (int j = 0; j < K; j++) {
                            tl[n] = l;
                            te[n] = ids[j];
                            ts[n] = s;
                            n++;
                        }
                        CHECK(st_expert_cache_route(c, l, ids, K, NULL, loads, L * X) >= 0, "route");
                    }
                }
                st_expert_stats real, opt;
                st_expert_cache_stats(c, -1, &real);
                st_expert_trace t = {L, X, n - n0, tl + n0, te + n0, ts + n0};
                CHECK(st_expert_belady_from(&t, p.n_slots, table, &opt, err, sizeof err) == 0, "belady: %s", err);
                CHECK(opt.hits + opt.misses == real.hits + real.misses, "lookups differ");
                CHECK(opt.hits >= real.hits, "%s, %lld slots, cap %d: warm optimum %llu below the cache's %llu",
                      st_expert_policy_name(p.policy), (long long)p.n_slots, p.max_inserts_per_step,
                      (unsigned long long)opt.hits, (unsigned long long)real.hits);
                checked++;
                free(tl);
                free(te);
                free(ts);
                st_expert_cache_free(c);
            }
    CHECK(checked == 16, "%d of 16 configurations checked", checked);
}

int main(void) {
    test_hand();
    test_bound();
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("belady from a warm cache: all checks passed\n");
    return 0;
}
