/* SPDX-License-Identifier: Apache-2.0 */
/* core/experts/expert_stats: exact statistics of hand-made routing streams (pairs used, the top
 * half's share, adjacent overlap with and without a sequence break, reuse-distance buckets). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "experts/expert_stats.h"

static int g_fail = 0;
#include "../common/check.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

/* Two layers, four experts, k = 2. Layer 0 repeats {0,1}; layer 1 alternates {0,1}, {2,3}. */
static void case_exact(void) {
    char err[256];
    st_route_stats *s = st_route_stats_create(2, 4, 2, err, sizeof err);
    CHECK(s != NULL, "create: %s", err);
    if (!s) return;
    const int32_t l0[8] = {0, 1, 1, 0, 0, 1, 0, 1};  /* 4 tokens */
    const int32_t l1[8] = {0, 1, 2, 3, 0, 1, 2, 3};
    st_route_stats_add(s, 0, l0, 4);
    st_route_stats_add(s, 1, l1, 4);
    st_route_summary r;
    st_route_stats_summary(s, &r);
    CHECK(r.tokens == 4, "tokens %llu", (unsigned long long)r.tokens);
    CHECK(r.uses == 16, "uses %llu", (unsigned long long)r.uses);
    CHECK(r.pairs_used == 6 && r.pairs_total == 8, "pairs %lld of %lld", (long long)r.pairs_used, (long long)r.pairs_total);
    /* counts: layer 0 {4,4,0,0}, layer 1 {2,2,2,2}: top 4 of 8 = 4+4+2+2 = 12 of 16 */
    CHECK(NEAR(r.top_half_share, 0.75), "top half %f", r.top_half_share);
    /* layer 0: 3 successors share 2 of 2; layer 1: share 0 -> 6 / 12 */
    CHECK(NEAR(r.adjacent_overlap, 0.5), "overlap %f", r.adjacent_overlap);
    CHECK(NEAR(r.uniform_overlap, 0.5), "uniform %f", r.uniform_overlap);
    /* layer 0: 2 first uses, 6 at distance 1; layer 1: 4 first uses, 4 at distance 2 */
    CHECK(r.reuse[ST_REUSE_BUCKETS - 1] == 6, "first uses %llu", (unsigned long long)r.reuse[ST_REUSE_BUCKETS - 1]);
    CHECK(r.reuse[0] == 6 && r.reuse[1] == 4, "reuse 1:%llu 2:%llu", (unsigned long long)r.reuse[0],
          (unsigned long long)r.reuse[1]);
    /* a break: the next token has no predecessor, reuse keeps counting (distance 1 again) */
    st_route_stats_break(s);
    st_route_stats_add(s, 0, l0, 1);
    st_route_stats_summary(s, &r);
    CHECK(NEAR(r.adjacent_overlap, 0.5), "overlap after a break %f", r.adjacent_overlap);
    CHECK(r.reuse[0] == 8, "reuse across a break %llu", (unsigned long long)r.reuse[0]);
    CHECK(r.tokens == 5, "tokens after a break %llu", (unsigned long long)r.tokens);
    /* long distances land in the last bucket; out-of-range ids are skipped */
    st_route_stats_reset(s);
    const int32_t far[2] = {2, 3}, filler[2] = {0, 1}, bad[2] = {-1, 7};
    st_route_stats_add(s, 0, far, 1);
    for (int i = 0; i < 600; i++) st_route_stats_add(s, 0, filler, 1);
    st_route_stats_add(s, 0, far, 1);
    st_route_stats_add(s, 0, bad, 1);
    st_route_stats_summary(s, &r);
    CHECK(r.reuse[ST_REUSE_BUCKETS - 2] == 2, ">512 bucket %llu", (unsigned long long)r.reuse[ST_REUSE_BUCKETS - 2]);
    CHECK(r.uses == 1204, "uses with bad ids %llu", (unsigned long long)r.uses);
    char text[1024];
    size_t n = st_route_summary_format(&r, text, sizeof text);
    CHECK(n > 0 && strstr(text, "pairs used") && strstr(text, ">512:"), "format: %s", text);
    n = st_route_summary_json(&r, text, sizeof text);
    CHECK(n > 0 && strstr(text, "\"top_half_share\":") && strstr(text, "\"first\":"), "json: %s", text);
    st_route_stats_free(s);
    CHECK(st_route_stats_create(1, 4, 5, err, sizeof err) == NULL, "k > n_expert accepted");
}

int main(void) {
    case_exact();
    if (g_fail) fprintf(stderr, "route_stats: %d failure(s)\n", g_fail);
    else printf("route_stats: ok\n");
    return g_fail ? 1 : 0;
}
