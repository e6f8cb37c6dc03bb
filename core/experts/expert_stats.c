/* SPDX-License-Identifier: Apache-2.0 */
/* Routing statistics of a token stream (see expert_stats.h). */
#include "experts/expert_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct st_route_stats {
    int32_t n_layer, n_expert, k;
    int32_t first_layer;   /* the layer whose calls count tokens (the first one fed) */
    uint64_t tokens, uses;
    uint64_t *counts;      /* [n_layer][n_expert] */
    int64_t *last_use;     /* [n_layer][n_expert] token index of the last use in that layer, -1 */
    int64_t *layer_tok;    /* [n_layer] tokens seen by the layer */
    uint8_t *prev;         /* [n_layer][n_expert] chosen by the layer's previous token */
    uint8_t *have_prev;    /* [n_layer] */
    uint64_t overlap_num;  /* shared choices with the predecessor, summed */
    uint64_t overlap_den;  /* k per token that had a predecessor */
    uint64_t reuse[ST_REUSE_BUCKETS];
};

st_route_stats *st_route_stats_create(int32_t n_layer, int32_t n_expert, int32_t k, char *err, size_t errlen) {
    if (n_layer <= 0 || n_expert <= 0 || k <= 0 || k > n_expert) {
        snprintf(err, errlen, "routing statistics: bad sizes (%d layers, %d experts, %d used)", n_layer, n_expert, k);
        return NULL;
    }
    st_route_stats *s = calloc(1, sizeof *s);
    const size_t pairs = (size_t)n_layer * (size_t)n_expert;
    if (s) {
        s->counts = malloc(pairs * sizeof *s->counts);
        s->last_use = malloc(pairs * sizeof *s->last_use);
        s->layer_tok = malloc((size_t)n_layer * sizeof *s->layer_tok);
        s->prev = malloc(pairs);
        s->have_prev = malloc((size_t)n_layer);
    }
    if (!s || !s->counts || !s->last_use || !s->layer_tok || !s->prev || !s->have_prev) {
        st_route_stats_free(s);
        snprintf(err, errlen, "routing statistics: out of host memory");
        return NULL;
    }
    s->n_layer = n_layer;
    s->n_expert = n_expert;
    s->k = k;
    st_route_stats_reset(s);
    return s;
}

void st_route_stats_free(st_route_stats *s) {
    if (!s) return;
    free(s->counts);
    free(s->last_use);
    free(s->layer_tok);
    free(s->prev);
    free(s->have_prev);
    free(s);
}

void st_route_stats_reset(st_route_stats *s) {
    const size_t pairs = (size_t)s->n_layer * (size_t)s->n_expert;
    memset(s->counts, 0, pairs * sizeof *s->counts);
    for (size_t i = 0; i < pairs; i++) s->last_use[i] = -1;
    memset(s->layer_tok, 0, (size_t)s->n_layer * sizeof *s->layer_tok);
    memset(s->prev, 0, pairs);
    memset(s->have_prev, 0, (size_t)s->n_layer);
    memset(s->reuse, 0, sizeof s->reuse);
    s->first_layer = -1;
    s->tokens = s->uses = s->overlap_num = s->overlap_den = 0;
}

void st_route_stats_break(st_route_stats *s) { memset(s->have_prev, 0, (size_t)s->n_layer); }

static int reuse_bucket(int64_t d) {
    if (d <= 1) return 0;
    int b = 1;
    for (int64_t lim = 2; b < ST_REUSE_BUCKETS - 2 && d > lim; lim *= 2) b++;
    return b;
}

/* One token of one layer: ids[0..k). */
static void add_token(st_route_stats *s, int32_t layer, const int32_t *ids) {
    const size_t row = (size_t)layer * (size_t)s->n_expert;
    uint8_t *prev = s->prev + row;
    const int64_t t = s->layer_tok[layer];
    uint64_t shared = 0;
    for (int32_t j = 0; j < s->k; j++) {
        const int32_t e = ids[j];
        if (e < 0 || e >= s->n_expert) continue;
        shared += prev[e];
        s->counts[row + (size_t)e]++;
        s->uses++;
        const int64_t last = s->last_use[row + (size_t)e];
        s->reuse[last < 0 ? ST_REUSE_BUCKETS - 1 : reuse_bucket(t - last)]++;
        s->last_use[row + (size_t)e] = t;
    }
    if (s->have_prev[layer]) {
        s->overlap_num += shared;
        s->overlap_den += (uint64_t)s->k;
    }
    memset(prev, 0, (size_t)s->n_expert);
    for (int32_t j = 0; j < s->k; j++)
        if (ids[j] >= 0 && ids[j] < s->n_expert) prev[ids[j]] = 1;
    s->have_prev[layer] = 1;
    s->layer_tok[layer] = t + 1;
}

void st_route_stats_add(st_route_stats *s, int32_t layer, const int32_t *ids, int64_t n_tok) {
    if (!s || layer < 0 || layer >= s->n_layer) return;
    if (s->first_layer < 0) s->first_layer = layer;
    if (layer == s->first_layer) s->tokens += (uint64_t)n_tok;
    for (int64_t t = 0; t < n_tok; t++) add_token(s, layer, ids + t * s->k);
}

const uint64_t *st_route_stats_counts(const st_route_stats *s) { return s->counts; }

static int cmp_desc(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

void st_route_stats_summary(const st_route_stats *s, st_route_summary *out) {
    memset(out, 0, sizeof *out);
    out->n_layer = s->n_layer;
    out->n_expert = s->n_expert;
    out->k = s->k;
    out->tokens = s->tokens;
    out->uses = s->uses;
    out->pairs_total = (int64_t)s->n_layer * s->n_expert;
    out->uniform_overlap = (double)s->k / (double)s->n_expert;
    memcpy(out->reuse, s->reuse, sizeof out->reuse);
    for (int64_t i = 0; i < out->pairs_total; i++) out->pairs_used += s->counts[i] > 0;
    if (s->overlap_den) out->adjacent_overlap = (double)s->overlap_num / (double)s->overlap_den;
    uint64_t *sorted = malloc((size_t)out->pairs_total * sizeof *sorted);
    if (!sorted) return;
    memcpy(sorted, s->counts, (size_t)out->pairs_total * sizeof *sorted);
    out->top_half_share = st_expert_top_share(sorted, out->pairs_total, out->pairs_total / 2);
    free(sorted);
}

double st_expert_top_share(uint64_t *counts, int64_t n, int64_t top) {
    uint64_t all = 0, in_top = 0;
    if (n <= 0) return 0;
    qsort(counts, (size_t)n, sizeof *counts, cmp_desc);
    for (int64_t i = 0; i < n; i++) {
        all += counts[i];
        if (i < top) in_top += counts[i];
    }
    return all ? (double)in_top / (double)all : 0;
}

const char *st_route_reuse_label(int b) {
    static const char *const names[ST_REUSE_BUCKETS] = {"1",     "2",      "3-4",     "5-8",  "9-16", "17-32",
                                                        "33-64", "65-128", "129-256", "257-512", ">512", "first"};
    return b >= 0 && b < ST_REUSE_BUCKETS ? names[b] : "?";
}

static size_t clip(int w, size_t len) {
    if (w < 0) return 0;
    return (size_t)w < len ? (size_t)w : (len ? len - 1 : 0);
}

size_t st_route_summary_format(const st_route_summary *r, char *buf, size_t len) {
    size_t n = clip(snprintf(buf, len,
                             "routing: %llu tokens; %lld of %lld (layer, expert) pairs used; the top half of the pairs "
                             "took %.1f%% of the uses; adjacent tokens share %.1f%% of their experts (independent "
                             "uniform routing: %.1f%%)\nrouting: reuse distance in tokens (%% of uses):",
                             (unsigned long long)r->tokens, (long long)r->pairs_used, (long long)r->pairs_total,
                             100.0 * r->top_half_share, 100.0 * r->adjacent_overlap, 100.0 * r->uniform_overlap),
                    len);
    for (int b = 0; b < ST_REUSE_BUCKETS && n + 1 < len; b++)
        n += clip(snprintf(buf + n, len - n, " %s:%.1f", st_route_reuse_label(b),
                           r->uses ? 100.0 * (double)r->reuse[b] / (double)r->uses : 0.0),
                  len - n);
    if (n + 1 < len) n += clip(snprintf(buf + n, len - n, "\n"), len - n);
    return n;
}

size_t st_route_summary_json(const st_route_summary *r, char *buf, size_t len) {
    size_t n = clip(snprintf(buf, len,
                             "\"tokens\":%llu,\"pairs_used\":%lld,\"pairs_total\":%lld,\"top_half_share\":%.4f,"
                             "\"adjacent_overlap\":%.4f,\"uniform_overlap\":%.4f,\"reuse\":{",
                             (unsigned long long)r->tokens, (long long)r->pairs_used, (long long)r->pairs_total,
                             r->top_half_share, r->adjacent_overlap, r->uniform_overlap),
                    len);
    for (int b = 0; b < ST_REUSE_BUCKETS && n + 1 < len; b++)
        n += clip(snprintf(buf + n, len - n, "%s\"%s\":%llu", b ? "," : "", st_route_reuse_label(b),
                           (unsigned long long)r->reuse[b]),
                  len - n);
    if (n + 1 < len) n += clip(snprintf(buf + n, len - n, "}"), len - n);
    return n;
}
