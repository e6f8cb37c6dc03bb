/* SPDX-License-Identifier: Apache-2.0 */
/* CPU kernels of the ABI 1.2 ops gpt-oss needs: ATTENTION_EX (attention with per-head sinks and
 * a sliding window) and SWIGLU_OAI (clamped SwiGLU). Plain threaded loops over (token, head)
 * and rows: correct first; the fast attention path of cpu_attn.c covers the common case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

/* ---------------------------------------------------------------- ATTENTION_EX */

typedef struct {
    const st_attention_ex_args *x;
    int64_t n_head, group, dk, dv, n_cells;
    float *scratch; /* per thread: q[dk] k[dk] v[dv] acc[dv] score[max_pos] */
    size_t per;
} attn_ex_job;

/* A cache row (F32/F16/BF16/Q8_0) as floats. */
static void cache_row(const st_tensor *c, int32_t cell, int64_t kvh, float *dst, int64_t d) {
    const void *p = (const char *)c->data + cell * c->nb[2] + kvh * c->nb[1];
    if (c->type == ST_TYPE_Q8_0) st_cpu_k.wt[ST_TYPE_Q8_0].to_float(p, dst, d);
    else st_cpu_load_to(c->type, p, dst, d);
}

/* out[i][h] = softmax over (window positions, sink) of scale q.k, times v. */
static void attn_ex_one(const attn_ex_job *j, int64_t i, int64_t h, float *buf) {
    const st_attention_args *a = &j->x->base;
    const int64_t dk = j->dk, dv = j->dv, kvh = h / j->group;
    float *q = buf, *k = q + dk, *v = k + dk, *acc = v + dv, *score = acc + dv;
    const int32_t *cells = a->cell_table + (int64_t)a->seq[i] * a->max_pos;
    const int32_t L = a->kv_len[i], lo = j->x->window > 0 && L > j->x->window ? L - j->x->window : 0;
    const float *mask = a->mask ? a->mask + i * (int64_t)a->max_pos : NULL;
    st_cpu_load_to(a->q.type, (const char *)a->q.data + h * a->q.nb[1] + i * a->q.nb[2], q, dk);
    float mx = j->x->sinks ? j->x->sinks[h] : -INFINITY;
    for (int32_t p = lo; p < L; p++) {
        cache_row(&a->k_cache, cells[p], kvh, k, dk);
        float s = 0;
        for (int64_t d = 0; d < dk; d++) s += q[d] * k[d];
        s = s * a->scale + (mask ? mask[p] : 0.0f);
        score[p] = s;
        if (s > mx) mx = s;
    }
    for (int64_t d = 0; d < dv; d++) acc[d] = 0;
    if (mx > -INFINITY) {
        float sum = j->x->sinks ? expf(j->x->sinks[h] - mx) : 0.0f; /* the sink: weight, no value */
        for (int32_t p = lo; p < L; p++) {
            const float w = score[p] == -INFINITY ? 0.0f : expf(score[p] - mx);
            sum += w;
            if (w == 0.0f) continue;
            cache_row(&a->v_cache, cells[p], kvh, v, dv);
            for (int64_t d = 0; d < dv; d++) acc[d] += w * v[d];
        }
        for (int64_t d = 0; d < dv; d++) acc[d] /= sum;
    }
    st_cpu_store(a->out.type, acc, (char *)a->out.data + h * a->out.nb[1] + i * a->out.nb[2], dv);
}

static void attn_ex_task(void *ctx, int ith, int nth) {
    const attn_ex_job *j = ctx;
    const int64_t n = j->x->base.q.ne[2], rows = n * j->n_head;
    int64_t r0, r1;
    st_cpu_split(rows, ith, nth, &r0, &r1);
    float *buf = j->scratch + (size_t)ith * j->per;
    for (int64_t r = r0; r < r1; r++) attn_ex_one(j, r / j->n_head, r % j->n_head, buf);
}

static st_status attn_ex_check(const st_attention_ex_args *x) {
    const st_attention_args *a = &x->base;
    st_status s;
    if ((s = st_cpu_check_act("attention_ex", "q", &a->q)) != ST_OK) return s;
    if ((s = st_cpu_check_act("attention_ex", "out", &a->out)) != ST_OK) return s;
    const int64_t dk = a->q.ne[0], n_head = a->q.ne[1], n = a->q.ne[2], n_kv = a->k_cache.ne[1];
    const uint32_t kt = a->k_cache.type, vt = a->v_cache.type;
    if (x->window < 0) return st_mod_fail(ST_INVALID, "cpu attention_ex: window %d", x->window);
    if (kt != vt || (kt != ST_TYPE_F32 && kt != ST_TYPE_F16 && kt != ST_TYPE_BF16 && kt != ST_TYPE_Q8_0))
        return st_mod_fail(ST_INVALID, "cpu attention_ex: cache types %s/%s", st_type_name(kt), st_type_name(vt));
    if (a->k_cache.ne[0] != dk || a->v_cache.ne[1] != n_kv || a->v_cache.ne[2] != a->k_cache.ne[2] ||
        a->out.ne[0] != a->v_cache.ne[0] || a->out.ne[1] != n_head || a->out.ne[2] != n || n_kv <= 0 || n_head % n_kv)
        return st_mod_fail(ST_INVALID, "cpu attention_ex: q [%lld][%lld][%lld], caches and out disagree", (long long)n,
                           (long long)n_head, (long long)dk);
    if (n > 0 && (!a->seq || !a->kv_len || !a->cell_table || a->max_pos < 0))
        return st_mod_fail(ST_INVALID, "cpu attention_ex: seq, kv_len and cell_table are required");
    for (int64_t t = 0; t < n; t++) {
        const int32_t len = a->kv_len[t];
        if (len < 0 || len > a->max_pos || a->seq[t] < 0)
            return st_mod_fail(ST_INVALID, "cpu attention_ex: token %lld kv_len %d", (long long)t, len);
        const int32_t *cells = a->cell_table + (int64_t)a->seq[t] * a->max_pos;
        for (int32_t p = 0; p < len; p++)
            if (cells[p] < 0 || cells[p] >= a->k_cache.ne[2])
                return st_mod_fail(ST_INVALID, "cpu attention_ex: position %d maps to cell %d", p, cells[p]);
    }
    return ST_OK;
}

st_status st_cpu_attention_ex(st_stream *st, const st_attention_ex_args *x) {
    if (!st || !x) return st_mod_fail(ST_INVALID, "cpu attention_ex: NULL stream or args");
    st_status s = attn_ex_check(x);
    if (s != ST_OK) return s;
    const st_attention_args *a = &x->base;
    attn_ex_job j = {x, a->q.ne[1], a->q.ne[1] / a->k_cache.ne[1], a->q.ne[0], a->v_cache.ne[0], a->k_cache.ne[2],
                     NULL, 0};
    const int64_t rows = a->q.ne[2] * j.n_head;
    if (rows == 0) return ST_OK;
    j.per = (size_t)(2 * j.dk + 2 * j.dv + a->max_pos + 16);
    int nth = st_cpu_nth(st->dev, rows, 1);
    j.scratch = malloc((size_t)nth * j.per * sizeof(float));
    if (!j.scratch) return st_mod_fail(ST_OOM, "cpu attention_ex: scratch");
    st_cpu_pool_run(st->dev->pool, attn_ex_task, &j, nth);
    free(j.scratch);
    return ST_OK;
}

/* ---------------------------------------------------------------- SWIGLU_OAI */

typedef struct {
    const st_swiglu_oai_args *a;
    int64_t F, n;
    float *scratch;
} oai_job;

static void oai_task(void *ctx, int ith, int nth) {
    const oai_job *j = ctx;
    const st_swiglu_oai_args *a = j->a;
    const float lim = a->limit, alpha = a->alpha;
    float *g = j->scratch + (size_t)ith * 2 * (size_t)(j->F + 16), *u = g + j->F + 16;
    int64_t r0, r1;
    st_cpu_split(j->n, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        st_cpu_load_to(a->gate.type, st_cpu_row(&a->gate, r), g, j->F);
        st_cpu_load_to(a->up.type, st_cpu_row(&a->up, r), u, j->F);
        for (int64_t k = 0; k < j->F; k++) {
            const float x = g[k] < lim ? g[k] : lim;                       /* min(gate, limit) */
            const float y = u[k] < -lim ? -lim : u[k] > lim ? lim : u[k]; /* clamp(up) */
            g[k] = x / (1.0f + expf(-alpha * x)) * (y + 1.0f);
        }
        st_cpu_store(a->out.type, g, st_cpu_row(&a->out, r), j->F);
    }
}

st_status st_cpu_swiglu_oai(st_stream *st, const st_swiglu_oai_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu swiglu_oai: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_act("swiglu_oai", "gate", &a->gate)) != ST_OK) return s;
    if ((s = st_cpu_check_act("swiglu_oai", "up", &a->up)) != ST_OK) return s;
    if ((s = st_cpu_check_act("swiglu_oai", "out", &a->out)) != ST_OK) return s;
    const int64_t F = a->gate.ne[0], n = st_cpu_nrows(&a->gate);
    if ((s = st_cpu_check_shape("swiglu_oai", "up", &a->up, n, F)) != ST_OK) return s;
    if ((s = st_cpu_check_shape("swiglu_oai", "out", &a->out, n, F)) != ST_OK) return s;
    if (!(a->limit > 0.0f)) return st_mod_fail(ST_INVALID, "cpu swiglu_oai: limit %g", (double)a->limit);
    if (n == 0 || F == 0) return ST_OK;
    oai_job j = {a, F, n, NULL};
    int nth = st_cpu_nth(st->dev, n * F, 4096);
    j.scratch = malloc((size_t)nth * 2 * (size_t)(F + 16) * sizeof(float));
    if (!j.scratch) return st_mod_fail(ST_OOM, "cpu swiglu_oai: scratch");
    st_cpu_pool_run(st->dev->pool, oai_task, &j, nth);
    free(j.scratch);
    return ST_OK;
}

/* ---------------------------------------------------------------- ROUTER_GROUPS */

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
