/* SPDX-License-Identifier: Apache-2.0 */
/* core/experts: slot-table invariants under every policy, the per-step admission cap, hit
 * semantics (admitted in a step = hit from the next), the fixed profile policy, statistics,
 * Belady's optimum (exact on known patterns, an upper bound of every policy on random
 * traces), and the field's result that LFRU with fewer slots beats LRU with more on skewed
 * routing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experts/expert_cache.h"
#include "experts/expert_profile.h"
#include "experts/expert_sim.h"

static int g_fail = 0;
#include "../common/check.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static double rndf(void) { return (double)(rnd() & 0xFFFFFF) / 16777216.0; }

/* A growing trace. */
typedef struct trace_buf {
    int32_t *layer, *expert;
    int64_t *step;
    int64_t n, cap;
} trace_buf;

static void tb_push(trace_buf *b, int32_t l, int32_t e, int64_t s) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->layer = realloc(b->layer, (size_t)b->cap * sizeof *b->layer);
        b->expert = realloc(b->expert, (size_t)b->cap * sizeof *b->expert);
        b->step = realloc(b->step, (size_t)b->cap * sizeof *b->step);
        if (!b->layer || !b->expert || !b->step) abort(); /* test harness only */
    }
    b->layer[b->n] = l;
    b->expert[b->n] = e;
    b->step[b->n] = s;
    b->n++;
}

static void tb_free(trace_buf *b) {
    free(b->layer);
    free(b->expert);
    free(b->step);
    memset(b, 0, sizeof *b);
}

static st_expert_trace tb_trace(const trace_buf *b, int32_t n_layer, int32_t n_expert) {
    st_expert_trace t = {n_layer, n_expert, b->n, b->layer, b->expert, b->step};
    return t;
}

/* Skewed routing: per step and layer, k distinct experts; each draw is from a hot set of `hot`
 * experts (a different set per layer) with probability p_hot, else uniform over all. */
static void gen_skewed(trace_buf *b, int32_t n_layer, int32_t n_expert, int32_t k, int64_t steps, int32_t hot,
                       double p_hot) {
    for (int64_t s = 0; s < steps; s++)
        for (int32_t l = 0; l < n_layer; l++) {
            int32_t chosen[64];
            int32_t nc = 0;
            while (nc < k) {
                int32_t e = rndf() < p_hot ? (int32_t)((rnd() % (uint32_t)hot + (uint32_t)l * 7u) % (uint32_t)n_expert)
                                           : (int32_t)(rnd() % (uint32_t)n_expert);
                int dup = 0;
                for (int32_t j = 0; j < nc; j++) dup |= chosen[j] == e;
                if (!dup) chosen[nc++] = e;
            }
            for (int32_t j = 0; j < nc; j++) tb_push(b, l, chosen[j], s);
        }
}

static st_expert_stats sim(const st_expert_trace *t, st_expert_policy pol, int64_t slots, int32_t cap) {
    st_expert_cache_params p;
    memset(&p, 0, sizeof p);
    p.n_slots = slots;
    p.policy = pol;
    p.max_inserts_per_step = cap;
    p.slot_bytes = 1000;
    st_expert_stats s;
    char err[256];
    if (st_expert_simulate(t, &p, NULL, NULL, 0, &s, NULL, err, sizeof err)) {
        CHECK(0, "simulate: %s", err);
        memset(&s, 0, sizeof s);
    }
    return s;
}

static st_expert_stats belady(const st_expert_trace *t, int64_t slots) {
    st_expert_stats s;
    char err[256];
    if (st_expert_belady(t, slots, &s, err, sizeof err)) {
        CHECK(0, "belady: %s", err);
        memset(&s, 0, sizeof s);
    }
    return s;
}

/* Table invariants after random routing, per policy. */
static void test_invariants(st_expert_policy pol) {
    const int32_t L = 3, E = 16, S = 10, CAP = 2;
    st_expert_cache_params p;
    memset(&p, 0, sizeof p);
    p.n_layer = L;
    p.n_expert = E;
    p.n_slots = S;
    p.policy = pol;
    p.max_inserts_per_step = pol == ST_EXPERT_PROFILE ? 0 : CAP;
    p.slot_bytes = 4096;
    char err[256];
    st_expert_cache *c = st_expert_cache_create(&p, err, sizeof err);
    CHECK(c != NULL, "create: %s", err);
    if (!c) return;
    st_expert_load loads[64];
    if (pol == ST_EXPERT_PROFILE) {
        int32_t sl[12], se[12];
        for (int i = 0; i < 12; i++) sl[i] = i % L, se[i] = (i * 5) % E;
        int64_t placed = st_expert_cache_seed(c, sl, se, 12, loads, 64);
        CHECK(placed == S, "seed placed %lld of %d slots", (long long)placed, S);
        for (int i = 0; i < S; i++) CHECK(st_expert_cache_slot(c, sl[i], se[i]) >= 0, "seed rank %d not resident", i);
        for (int i = S; i < 12; i++) CHECK(st_expert_cache_slot(c, sl[i], se[i]) < 0, "seed beyond the slots resident");
    }
    int32_t snapshot[3 * 16];
    memcpy(snapshot, st_expert_cache_table(c), sizeof snapshot);
    uint64_t hits = 0, misses = 0, loads_total = 0;
    for (int step = 0; step < 400; step++) {
        st_expert_cache_step(c);
        int64_t step_loads = 0;
        for (int32_t l = 0; l < L; l++) {
            int32_t ids[8], slot_of[8];
            int n = 1 + (int)(rnd() % 8);
            for (int i = 0; i < n; i++) ids[i] = (int32_t)(rnd() % 3 ? rnd() % 5 : rnd() % E); /* skewed, repeats */
            int32_t before[8];
            for (int i = 0; i < n; i++) before[i] = (int32_t)st_expert_cache_slot(c, l, ids[i]);
            int64_t nl = st_expert_cache_route(c, l, ids, n, slot_of, loads, 64);
            CHECK(nl >= 0, "route failed");
            for (int i = 0; i < n; i++) {
                CHECK(slot_of[i] == before[i], "slot_of reports the table before admissions");
                if (slot_of[i] >= 0) {
                    hits++;
                    CHECK(st_expert_cache_slot(c, l, ids[i]) == slot_of[i], "an expert used in this call was evicted by it");
                } else {
                    misses++;
                }
            }
            for (int64_t j = 0; j < nl; j++) {
                CHECK(loads[j].layer == l && st_expert_cache_slot(c, l, loads[j].expert) == loads[j].slot,
                      "load not in the table");
                if (loads[j].evicted_layer >= 0)
                    CHECK(st_expert_cache_slot(c, loads[j].evicted_layer, loads[j].evicted_expert) < 0 ||
                              st_expert_cache_slot(c, loads[j].evicted_layer, loads[j].evicted_expert) != loads[j].slot,
                          "evicted expert still maps to its old slot");
            }
            step_loads += nl;
            loads_total += (uint64_t)nl;
        }
        if (p.max_inserts_per_step > 0) CHECK(step_loads <= p.max_inserts_per_step, "cap exceeded: %lld", (long long)step_loads);
        /* every slot is held by at most one expert, and resident == entries in the table */
        const int32_t *tab = st_expert_cache_table(c);
        int used[16] = {0};
        int64_t entries = 0;
        for (int k = 0; k < L * E; k++)
            if (tab[k] >= 0) {
                CHECK(tab[k] < S, "slot %d out of range", tab[k]);
                if (tab[k] < S) used[tab[k]]++;
                entries++;
            }
        for (int s = 0; s < S; s++) CHECK(used[s] <= 1, "slot %d held twice", s);
        CHECK(entries == st_expert_cache_resident(c), "resident count %lld vs table %lld",
              (long long)st_expert_cache_resident(c), (long long)entries);
    }
    if (pol == ST_EXPERT_PROFILE) {
        CHECK(!memcmp(snapshot, st_expert_cache_table(c), sizeof snapshot), "profile policy changed the table");
        CHECK(loads_total == 0, "profile policy admitted experts");
    } else {
        CHECK(loads_total > 0, "%s never admitted anything", st_expert_policy_name(pol));
    }
    st_expert_stats t, per;
    st_expert_cache_stats(c, -1, &t);
    CHECK(t.hits == hits && t.misses == misses, "stats %llu/%llu vs counted %llu/%llu", (unsigned long long)t.hits,
          (unsigned long long)t.misses, (unsigned long long)hits, (unsigned long long)misses);
    CHECK(t.inserts == loads_total && t.bytes_upload == loads_total * 4096, "insert statistics");
    uint64_t sh = 0;
    for (int32_t l = 0; l < L; l++) {
        st_expert_cache_stats(c, l, &per);
        sh += per.hits;
    }
    CHECK(sh == t.hits, "per-layer hits do not sum to the total");
    {
        char m[8192], want[160];
        st_expert_cache_format_metrics(c, "1", 0.5, m, sizeof m);
        snprintf(want, sizeof want, "strata_expert_hits_total{device=\"1\"} %llu\n", (unsigned long long)t.hits);
        CHECK(strstr(m, want) != NULL, "metrics lack '%s'", want);
        snprintf(want, sizeof want, "strata_expert_bytes_total{device=\"1\",tier=\"upload\"} %llu\n",
                 (unsigned long long)t.bytes_upload);
        CHECK(strstr(m, want) != NULL && strstr(m, "layer=\"2\"") && strstr(m, "strata_expert_hit_rate_belady{device=\"1\"} 0.5"),
              "metrics:\n%s", m);
    }
    CHECK(t.bytes_device > 0 && t.bytes_device <= t.hits * 4096 && t.bytes_host <= t.misses * 4096,
          "tier bytes count each expert once per call");
    st_expert_cache_free(c);
}

static void test_hit_semantics(void) {
    st_expert_cache_params p;
    memset(&p, 0, sizeof p);
    p.n_layer = 1;
    p.n_expert = 8;
    p.n_slots = 2;
    p.policy = ST_EXPERT_LRU;
    char err[128];
    st_expert_cache *c = st_expert_cache_create(&p, err, sizeof err);
    if (!c) return;
    st_expert_load ld[4];
    int32_t ids[2] = {3, 3}, so[2];
    st_expert_cache_step(c);
    CHECK(st_expert_cache_route(c, 0, ids, 2, so, ld, 4) == 1 && so[0] == -1 && so[1] == -1, "first use: a miss, admitted once");
    CHECK(ld[0].expert == 3 && ld[0].evicted_layer == -1, "load record");
    CHECK(st_expert_cache_table_dirty(c), "table change not flagged");
    st_expert_cache_table_clean(c);
    st_expert_cache_step(c);
    CHECK(st_expert_cache_route(c, 0, ids, 1, so, ld, 4) == 0 && so[0] == ld[0].slot, "second step: a hit");
    CHECK(!st_expert_cache_table_dirty(c), "a hit must not dirty the table");
    int32_t a[1] = {5}, b[1] = {6};
    st_expert_cache_step(c);
    st_expert_cache_route(c, 0, a, 1, so, ld, 4);
    st_expert_cache_step(c);
    CHECK(st_expert_cache_route(c, 0, b, 1, so, ld, 4) == 1 && ld[0].evicted_expert == 3, "LRU evicts the least recent (3)");
    int32_t bad[1] = {8};
    CHECK(st_expert_cache_route(c, 0, bad, 1, so, ld, 4) == -1 && st_expert_cache_route(c, 1, a, 1, so, ld, 4) == -1,
          "out of range ids accepted");
    st_expert_cache_free(c);
    p.n_layer = 0;
    CHECK(st_expert_cache_create(&p, err, sizeof err) == NULL, "invalid parameters accepted");
    CHECK(st_expert_policy_from_name("lfru") == ST_EXPERT_LFRU && st_expert_policy_from_name("x") == -1, "names");
}

static void test_belady(void) {
    /* cyclic over C+1 experts: LRU never hits, the optimum misses about once per C accesses */
    const int C = 8, N = 9000;
    trace_buf b = {0};
    for (int i = 0; i < N; i++) tb_push(&b, 0, i % (C + 1), i);
    st_expert_trace t = tb_trace(&b, 1, 16);
    st_expert_stats lru = sim(&t, ST_EXPERT_LRU, C, 0), opt = belady(&t, C);
    CHECK(lru.hits == 0, "LRU on a cycle of C+1 should never hit (%llu hits)", (unsigned long long)lru.hits);
    double r = (double)opt.hits / N;
    CHECK(r > 1.0 - 1.5 / C && r < 1.0 - 0.5 / C, "Belady on the cycle: hit rate %.4f, expected about %.4f", r, 1.0 - 1.0 / C);
    /* enough slots: every access after the first of each expert hits */
    opt = belady(&t, C + 1);
    CHECK(opt.hits == (uint64_t)(N - (C + 1)), "Belady with room for all: %llu hits", (unsigned long long)opt.hits);
    tb_free(&b);
    /* random skewed traces: the optimum bounds every policy and grows with the slots */
    for (int trial = 0; trial < 4; trial++) {
        trace_buf r2 = {0};
        gen_skewed(&r2, 2, 32, 4, 2000, 5, 0.3 + 0.15 * trial);
        st_expert_trace t2 = tb_trace(&r2, 2, 32);
        uint64_t prev = 0;
        for (int64_t slots = 2; slots <= 40; slots += 6) {
            st_expert_stats o = belady(&t2, slots);
            st_expert_stats a = sim(&t2, ST_EXPERT_LRU, slots, 0);
            st_expert_stats f = sim(&t2, ST_EXPERT_LFRU, slots, 2);
            CHECK(o.hits >= a.hits && o.hits >= f.hits, "Belady %llu below a policy (lru %llu, lfru %llu) at %lld slots",
                  (unsigned long long)o.hits, (unsigned long long)a.hits, (unsigned long long)f.hits, (long long)slots);
            CHECK(o.hits >= prev, "Belady not monotone in slots");
            CHECK(o.hits + o.misses == (uint64_t)r2.n, "Belady counts");
            prev = o.hits;
        }
        tb_free(&r2);
    }
}

static void test_lfru_vs_lru(void) {
    /* skewed routing with a long cold tail (256 experts, 6 hot ones drawn 40% of the time):
     * LRU with 16 slots keeps evicting the hot experts for one-off cold ones; LFRU with 8 slots
     * and a cap of 1 insert per step keeps them. With a short tail (64 experts) LRU-16 wins by
     * caching a quarter of the tail: the result needs the long tail real MoE routing has. */
    trace_buf b = {0};
    gen_skewed(&b, 1, 256, 4, 20000, 6, 0.4);
    st_expert_trace t = tb_trace(&b, 1, 256);
    st_expert_stats lru16 = sim(&t, ST_EXPERT_LRU, 16, 0), lfru8 = sim(&t, ST_EXPERT_LFRU, 8, 1);
    st_expert_stats opt8 = belady(&t, 8), opt16 = belady(&t, 16);
    printf("skewed trace (%lld accesses): LRU-16 %.1f%% (Belady-16 %.1f%%), LFRU-8 %.1f%% (Belady-8 %.1f%%), "
           "uploads LRU-16 %llu, LFRU-8 %llu\n",
           (long long)b.n, 100 * st_expert_stats_hit_rate(&lru16), 100 * st_expert_stats_hit_rate(&opt16),
           100 * st_expert_stats_hit_rate(&lfru8), 100 * st_expert_stats_hit_rate(&opt8),
           (unsigned long long)lru16.inserts, (unsigned long long)lfru8.inserts);
    CHECK(lfru8.hits > lru16.hits, "LFRU-8 (%llu hits) should beat LRU-16 (%llu) on a skewed trace",
          (unsigned long long)lfru8.hits, (unsigned long long)lru16.hits);
    CHECK(lfru8.inserts < lru16.inserts, "LFRU should copy fewer experts than LRU");
    /* a profile seeded from the same trace and kept fixed is good on a stationary trace */
    int32_t sl[256], se[256];
    int64_t nr = st_expert_profile_rank(&t, sl, se, 256);
    CHECK(nr > 8 && nr <= 256, "profile rank count %lld", (long long)nr);
    CHECK(sl[0] == 0 && se[0] < 6, "the most used expert should be a hot one (got %d)", se[0]);
    st_expert_cache_params p;
    memset(&p, 0, sizeof p);
    p.n_slots = 8;
    p.policy = ST_EXPERT_PROFILE;
    st_expert_stats prof;
    char err[128];
    CHECK(st_expert_simulate(&t, &p, sl, se, nr, &prof, NULL, err, sizeof err) == 0, "%s", err);
    CHECK(prof.inserts == 0 && prof.hits > lru16.hits / 2, "profile policy: %llu hits, %llu inserts",
          (unsigned long long)prof.hits, (unsigned long long)prof.inserts);
    CHECK(opt8.hits >= prof.hits, "Belady bounds the profile policy too");
    tb_free(&b);
}

static void test_profile_file(void) {
    char path[256], err[256];
    snprintf(path, sizeof path, "/tmp/strata-profile-%d.txt", (int)getpid());
    uint64_t counts[2 * 4] = {5, 0, 9, 1, /* layer 1 */ 9, 3, 0, 7};
    st_expert_profile *p = st_expert_profile_from_counts(2, 4, counts, err, sizeof err);
    CHECK(p && p->n == 6, "profile of 6 used pairs: %lld", p ? (long long)p->n : -1ll);
    if (!p) return;
    /* 9 (0,2), 9 (1,0), 7 (1,3), 5 (0,0), 3 (1,1), 1 (0,3) */
    CHECK(p->layer[0] == 0 && p->expert[0] == 2 && p->layer[1] == 1 && p->expert[1] == 0 && p->count[2] == 7 &&
              p->layer[5] == 0 && p->expert[5] == 3,
          "ranking order");
    CHECK(st_expert_profile_write(p, path, err, sizeof err) == 0, "write: %s", err);
    st_expert_profile *q = st_expert_profile_read(path, err, sizeof err);
    CHECK(q && q->n == p->n && !memcmp(q->layer, p->layer, (size_t)p->n * 4) &&
              !memcmp(q->expert, p->expert, (size_t)p->n * 4) && !memcmp(q->count, p->count, (size_t)p->n * 8),
          "round trip: %s", q ? "differs" : err);
    CHECK(q && st_expert_profile_check(q, 2, 4, err, sizeof err) == 0 && st_expert_profile_check(q, 2, 8, err, sizeof err) == -1 &&
              strstr(err, "2 x 8"),
          "shape check");
    /* seeding a 3-slot cache from it places the top 3 */
    st_expert_cache_params cp;
    memset(&cp, 0, sizeof cp);
    cp.n_layer = 2;
    cp.n_expert = 4;
    cp.n_slots = 3;
    cp.policy = ST_EXPERT_PROFILE;
    st_expert_cache *c = st_expert_cache_create(&cp, err, sizeof err);
    st_expert_load ld[8];
    CHECK(c && q && st_expert_cache_seed(c, q->layer, q->expert, q->n, ld, 8) == 3 && st_expert_cache_slot(c, 0, 2) >= 0 &&
              st_expert_cache_slot(c, 1, 0) >= 0 && st_expert_cache_slot(c, 1, 3) >= 0 && st_expert_cache_slot(c, 0, 0) < 0,
          "seed from the profile");
    st_expert_cache_free(c);
    st_expert_profile_free(q);
    static const char *bad[] = {"strata-expert-profile 2 2 4\n", "strata-expert-profile 1 2 4\n0 4 1\n",
                                "strata-expert-profile 1 2 4\n0 1 3\n0 1 2\n", "strata-expert-profile 1 2 4\n0 1 3\n1 1 5\n",
                                "strata-expert-profile 1 2 4\n0 1 x\n"};
    static const char *why[] = {"line 1", "line 2", "line 3", "line 3", "line 2"};
    for (int i = 0; i < 5; i++) {
        FILE *f = fopen(path, "w");
        if (!f) break;
        fputs(bad[i], f);
        fclose(f);
        q = st_expert_profile_read(path, err, sizeof err);
        CHECK(!q && strstr(err, why[i]), "bad profile %d accepted or not named: %s", i, q ? "accepted" : err);
        st_expert_profile_free(q);
    }
    st_expert_profile_free(p);
    remove(path);
}

int main(void) {
    test_invariants(ST_EXPERT_LRU);
    test_invariants(ST_EXPERT_LFRU);
    test_invariants(ST_EXPERT_PROFILE);
    test_hit_semantics();
    test_belady();
    test_lfru_vs_lru();
    test_profile_file();
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("experts: all checks passed\n");
    return 0;
}
