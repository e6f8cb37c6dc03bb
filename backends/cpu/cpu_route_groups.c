/* CPU kernel of ROUTER_GROUPS (ABI 1.2): the router restricted to the best expert groups
 * (DeepSeek-V3's group-limited routing). One token per task; plain loops (the router is a
 * small share of a step). */
#include <math.h>
#include <stdlib.h>

#include "cpu/cpu_internal.h"

typedef struct {
    const st_router_groups_args *g;
    int64_t E;
    float *scratch; /* per thread: p[E] sel[E] score[n_group] + flags */
} route_job;

/* a before b: larger value, NaN last, lower index on ties (the router's order). */
static int before(float va, int64_t ia, float vb, int64_t ib) {
    const int na = va != va, nb = vb != vb;
    if (na != nb) return nb;
    if (!na && va != vb) return va > vb;
    return ia < ib;
}

/* sel of the experts outside the n_group_used best groups (top-2 sums) -> -inf. */
static void mask_groups(const st_router_groups_args *g, float *sel, int64_t E, float *score, unsigned char *kept) {
    const int64_t per = E / g->n_group;
    for (int32_t q = 0; q < g->n_group; q++) {
        float m1 = -INFINITY, m2 = -INFINITY;
        for (int64_t e = q * per; e < (q + 1) * per; e++) {
            if (sel[e] > m1) {
                m2 = m1;
                m1 = sel[e];
            } else if (sel[e] > m2) {
                m2 = sel[e];
            }
        }
        score[q] = per > 1 ? m1 + m2 : m1;
        kept[q] = 0;
    }
    for (int32_t j = 0; j < g->n_group_used; j++) {
        int32_t best = -1;
        for (int32_t q = 0; q < g->n_group; q++)
            if (!kept[q] && (best < 0 || before(score[q], q, score[best], best))) best = q;
        kept[best] = 1;
    }
    for (int64_t e = 0; e < E; e++)
        if (!kept[e / per]) sel[e] = -INFINITY;
}

static void route_one(const route_job *j, int64_t t, float *p) {
    const st_router_args *a = &j->g->base;
    const int64_t E = j->E;
    float *sel = p + E, *score = sel + E;
    unsigned char *flags = (unsigned char *)(score + j->g->n_group); /* taken[E] kept[n_group] */
    st_cpu_load_to(a->logits.type, st_cpu_row(&a->logits, t), p, E);
    if (a->gating == ST_ROUTER_SOFTMAX) {
        float mx = -INFINITY, sum = 0;
        for (int64_t e = 0; e < E; e++) mx = p[e] > mx ? p[e] : mx;
        for (int64_t e = 0; e < E; e++) sum += (p[e] = expf(p[e] - mx));
        for (int64_t e = 0; e < E; e++) p[e] /= sum;
    } else {
        for (int64_t e = 0; e < E; e++) p[e] = 1.0f / (1.0f + expf(-p[e]));
    }
    for (int64_t e = 0; e < E; e++) {
        sel[e] = p[e] + (a->bias ? a->bias[e] : 0.0f);
        flags[e] = 0;
    }
    mask_groups(j->g, sel, E, score, flags + E);
    int32_t *ids = a->ids + t * a->k;
    float *w = a->weights + t * a->k, wsum = 0;
    for (int32_t q = 0; q < a->k; q++) {
        int64_t best = -1;
        for (int64_t e = 0; e < E; e++)
            if (!flags[e] && (best < 0 || before(sel[e], e, sel[best], best))) best = e;
        flags[best] = 1;
        ids[q] = (int32_t)best;
        w[q] = p[best];
        wsum += p[best];
    }
    for (int32_t q = 0; q < a->k; q++) w[q] = (a->normalize && wsum > 0 ? w[q] / wsum : w[q]) * a->weight_scale;
}

static void route_task(void *ctx, int ith, int nth) {
    const route_job *j = ctx;
    const int64_t n = st_cpu_nrows(&j->g->base.logits);
    int64_t t0, t1;
    st_cpu_split(n, ith, nth, &t0, &t1);
    float *p = j->scratch + (size_t)ith * (size_t)(3 * j->E + j->g->n_group + 16);
    for (int64_t t = t0; t < t1; t++) route_one(j, t, p);
}

st_status st_cpu_router_groups(st_stream *st, const st_router_groups_args *g) {
    if (!st || !g) return st_mod_fail(ST_INVALID, "cpu router_groups: NULL stream or args");
    const st_router_args *a = &g->base;
    st_status s = st_cpu_check_act("router_groups", "logits", &a->logits);
    if (s != ST_OK) return s;
    const int64_t E = a->logits.ne[0], n = st_cpu_nrows(&a->logits);
    if (a->gating != ST_ROUTER_SOFTMAX && a->gating != ST_ROUTER_SIGMOID)
        return st_mod_fail(ST_INVALID, "cpu router_groups: gating %u", a->gating);
    if (g->n_group < 1 || E % g->n_group || g->n_group_used < 1 || g->n_group_used > g->n_group || a->k < 1 ||
        (int64_t)g->n_group_used * (E / g->n_group) < a->k)
        return st_mod_fail(ST_INVALID, "cpu router_groups: %d groups (%d used) of %lld experts for k = %d", g->n_group,
                           g->n_group_used, (long long)E, a->k);
    if (n > 0 && (!a->ids || !a->weights)) return st_mod_fail(ST_INVALID, "cpu router_groups: ids, weights required");
    if (n == 0) return ST_OK;
    route_job j = {g, E, NULL};
    int nth = st_cpu_nth(st->dev, n * E, 4096);
    j.scratch = malloc((size_t)nth * (size_t)(3 * E + g->n_group + 16) * sizeof(float));
    if (!j.scratch) return st_mod_fail(ST_OOM, "cpu router_groups: scratch");
    st_cpu_pool_run(st->dev->pool, route_task, &j, nth);
    free(j.scratch);
    return ST_OK;
}
