/* SPDX-License-Identifier: Apache-2.0 */
/* Routing statistics of a token stream: how a router spreads its choices, which decides
 * whether an expert cache can pay at all (docs/memory.md, "Routing statistics").
 *
 * Fed one layer's choices per call, token after token (ids [n_tok][k]), it keeps:
 *   counts       [n_layer][n_expert] uses of each (layer, expert) pair
 *   pairs used   pairs with at least one use
 *   top-half share   the uses taken by the most-used half of ALL pairs (unused ones count as
 *                    zero): 0.5 is perfectly even, 1.0 means half the experts are never used
 *   adjacent overlap the mean fraction of a token's k experts that the previous token of the
 *                    same layer also chose (independent uniform routing gives k / n_expert)
 *   reuse distance   per use, the tokens since the same (layer, expert) was last used, in
 *                    power-of-two buckets: 1, 2, 3-4, 5-8, ... , > 512, and "first use"
 * A trained router with a load-balancing loss uses every expert and shares few experts between
 * neighbouring tokens; a random-weight model usually does neither. Not thread-safe. */
#ifndef STRATA_EXPERT_STATS_H
#define STRATA_EXPERT_STATS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reuse-distance buckets: [0] distance 1, [b] distances (2^(b-1), 2^b], [ST_REUSE_BUCKETS - 2]
 * beyond 512, [ST_REUSE_BUCKETS - 1] first use (no earlier use in the stream). */
#define ST_REUSE_BUCKETS 12

typedef struct st_route_stats st_route_stats;

typedef struct st_route_summary {
    int32_t n_layer, n_expert, k;
    uint64_t tokens;              /* tokens seen (counted on layer 0's calls, or the first layer fed) */
    uint64_t uses;                /* (token, expert) choices over every layer */
    int64_t pairs_used, pairs_total;
    double top_half_share;        /* see above; 0 when nothing was seen */
    double adjacent_overlap;      /* see above; 0 when no token had a predecessor */
    double uniform_overlap;       /* k / n_expert: what independent uniform routing gives */
    uint64_t reuse[ST_REUSE_BUCKETS];
} st_route_summary;

/* An empty recorder for routing of n_layer x n_expert with k choices per token. NULL with err
 * when the sizes are not positive or host memory is out. Free with st_route_stats_free. */
st_route_stats *st_route_stats_create(int32_t n_layer, int32_t n_expert, int32_t k, char *err, size_t errlen);
void st_route_stats_free(st_route_stats *s);
/* Records n_tok tokens of layer `layer`: ids[t * k + j] (ids out of range are skipped). Tokens of
 * successive calls for the same layer follow each other. */
void st_route_stats_add(st_route_stats *s, int32_t layer, const int32_t *ids, int64_t n_tok);
/* Starts a new sequence: the next token has no predecessor (overlap) and reuse distances keep
 * counting across it (a cache does not forget at a prompt boundary). */
void st_route_stats_break(st_route_stats *s);
/* Clears everything. */
void st_route_stats_reset(st_route_stats *s);
/* Counts [n_layer][n_expert]. Borrowed. */
const uint64_t *st_route_stats_counts(const st_route_stats *s);
void st_route_stats_summary(const st_route_stats *s, st_route_summary *out);
/* The share of the uses in counts[0..n) that its `top` largest entries hold (0 when there are
 * none): the hit rate of the best fixed set of `top` experts chosen in hindsight. Sorts counts in
 * place, descending. */
double st_expert_top_share(uint64_t *counts, int64_t n, int64_t top);
/* Label of reuse bucket b ("1", "2", "3-4", ..., ">512", "first"). Static storage. */
const char *st_route_reuse_label(int b);
/* One line, e.g. "routing: 1024 tokens; 6144 of 6144 (layer, expert) pairs used; top half 61.2% of
 * uses; adjacent tokens share 6.4% of experts (uniform: 6.2%)" and a second line with the
 * reuse-distance histogram in percent. Returns the bytes written (truncated at len). */
size_t st_route_summary_format(const st_route_summary *r, char *buf, size_t len);
/* The same as JSON members (no braces): "tokens":..,"pairs_used":..,"pairs_total":..,
 * "top_half_share":..,"adjacent_overlap":..,"uniform_overlap":..,"reuse":{"1":..,...}. */
size_t st_route_summary_json(const st_route_summary *r, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
