/* SPDX-License-Identifier: Apache-2.0 */
/* Reference Mixture-of-Experts ops: router (softmax/sigmoid gating, biased top-k selection,
 * renormalization), grouped expert matmul through a slot table, and the weighted combine. */
#include <math.h>
#include <stdlib.h>

#include "ref/ref_internal.h"

#define CHECK(expr)                      \
    do {                                 \
        st_status st_s_ = (expr);        \
        if (st_s_ != ST_OK) return st_s_; \
    } while (0)

/* a ranks before b: larger value, NaN last, lower index on ties. */
static int ranks_before(double va, int64_t ia, double vb, int64_t ib) {
    int na = va != va, nb = vb != vb;
    if (na != nb) return nb;
    if (!na && va != vb) return va > vb;
    return ia < ib;
}

/* Selection values outside the g_used groups with the largest top-2 sums become -inf. */
static void keep_best_groups(double *sel, int64_t E, int32_t n_group, int32_t g_used, double *score,
                             unsigned char *kept) {
    const int64_t per = E / n_group;
    for (int32_t g = 0; g < n_group; g++) {
        double m1 = -INFINITY, m2 = -INFINITY;
        for (int64_t e = g * per; e < (g + 1) * per; e++) {
            if (sel[e] > m1) {
                m2 = m1;
                m1 = sel[e];
            } else if (sel[e] > m2) {
                m2 = sel[e];
            }
        }
        score[g] = per > 1 ? m1 + m2 : m1;
        kept[g] = 0;
    }
    for (int32_t j = 0; j < g_used; j++) {
        int32_t best = -1;
        for (int32_t g = 0; g < n_group; g++)
            if (!kept[g] && (best < 0 || ranks_before(score[g], g, score[best], best))) best = g;
        kept[best] = 1;
    }
    for (int64_t e = 0; e < E; e++)
        if (!kept[e / per]) sel[e] = -INFINITY;
}

static st_status router_common(const st_router_args *a, int32_t n_group, int32_t g_used);

st_status st_ref_router(const st_router_args *a) {
    CHECK(st_ref_check_args("router", a, a ? a->size : 0, sizeof *a));
    return router_common(a, 1, 1);
}

st_status st_ref_router_groups(const st_router_groups_args *a) {
    CHECK(st_ref_check_args("router_groups", a, a ? a->size : 0, sizeof *a));
    const int64_t E = a->base.logits.ne[0];
    if (a->n_group < 1 || E % a->n_group || a->n_group_used < 1 || a->n_group_used > a->n_group ||
        (int64_t)a->n_group_used * (E / a->n_group) < a->base.k)
        return st_ref_fail(ST_INVALID, "router_groups: %d groups (%d used) of %lld experts for k = %d", a->n_group,
                           a->n_group_used, (long long)E, a->base.k);
    return router_common(&a->base, a->n_group, a->n_group_used);
}

static st_status router_common(const st_router_args *a, int32_t n_group, int32_t g_used) {
    const char *op = "router";
    CHECK(st_ref_check(op, "logits", &a->logits, 1));
    int64_t E = a->logits.ne[0], n = st_ref_rows(&a->logits);
    if (a->gating != ST_ROUTER_SOFTMAX && a->gating != ST_ROUTER_SIGMOID)
        return st_ref_fail(ST_INVALID, "router: unknown gating %u", a->gating);
    if (a->k < 1 || a->k > E)
        return st_ref_fail(ST_INVALID, "router: k = %d outside [1, %lld]", a->k, (long long)E);
    if (n > 0 && (a->ids == NULL || a->weights == NULL))
        return st_ref_fail(ST_INVALID, "router: ids and weights are required");
    double *p = st_ref_alloc(op, (size_t)E * 3, sizeof(double));
    unsigned char *taken = st_ref_alloc(op, (size_t)E * 2, 1);
    if (p == NULL || taken == NULL) {
        free(p);
        free(taken);
        return ST_OOM;
    }
    double *sel = p + E;
    for (int64_t i = 0; i < n; i++) {
        st_ref_load_row_d(&a->logits, st_ref_row_ptr(&a->logits, i), p, E);
        if (a->gating == ST_ROUTER_SOFTMAX) {
            double mx = -INFINITY, sum = 0;
            for (int64_t e = 0; e < E; e++)
                if (p[e] > mx) mx = p[e];
            for (int64_t e = 0; e < E; e++) sum += (p[e] = exp(p[e] - mx));
            for (int64_t e = 0; e < E; e++) p[e] /= sum;
        } else {
            for (int64_t e = 0; e < E; e++) p[e] = 1.0 / (1.0 + exp(-p[e]));
        }
        for (int64_t e = 0; e < E; e++) {
            sel[e] = p[e] + (a->bias ? (double)a->bias[e] : 0.0);
            taken[e] = 0;
        }
        if (n_group > 1) keep_best_groups(sel, E, n_group, g_used, sel + E, taken + E);
        int32_t *ids = a->ids + i * a->k;
        float *w = a->weights + i * a->k;
        double wsum = 0, wk[64];
        double *wv = a->k <= 64 ? wk : NULL;
        if (wv == NULL) {
            wv = st_ref_alloc(op, (size_t)a->k, sizeof(double));
            if (wv == NULL) {
                free(p);
                free(taken);
                return ST_OOM;
            }
        }
        for (int32_t j = 0; j < a->k; j++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++)
                if (!taken[e] && (best < 0 || ranks_before(sel[e], e, sel[best], best))) best = e;
            taken[best] = 1;
            ids[j] = (int32_t)best;
            wv[j] = p[best];
            wsum += p[best];
        }
        for (int32_t j = 0; j < a->k; j++) {
            double v = wv[j];
            if (a->normalize && wsum > 0) v /= wsum;
            w[j] = (float)(v * (double)a->weight_scale);
        }
        if (wv != wk) free(wv);
    }
    free(p);
    free(taken);
    return ST_OK;
}

st_status st_ref_moe_matmul(const st_moe_matmul_args *a) {
    const char *op = "moe_matmul";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "w", &a->w, 0));
    CHECK(st_ref_check(op, "x", &a->x, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    int64_t K = a->w.ne[0], M = a->w.ne[1], n_slots = a->w.ne[2], n_x = st_ref_rows(&a->x);
    if (a->w.ne[3] != 1) return st_ref_fail(ST_INVALID, "moe_matmul: w must be [n_slots][M][K]");
    if (a->x.ne[0] != K)
        return st_ref_fail(ST_INVALID, "moe_matmul: x rows have %lld elements, expert rows %lld",
                           (long long)a->x.ne[0], (long long)K);
    if (a->n_assign < 0 || a->out.ne[0] != M || st_ref_rows(&a->out) != a->n_assign)
        return st_ref_fail(ST_INVALID, "moe_matmul: out is [%lld][%lld], expected [%d][%lld]",
                           (long long)st_ref_rows(&a->out), (long long)a->out.ne[0], a->n_assign, (long long)M);
    if (a->n_assign > 0 && (a->slot_table == NULL || a->expert == NULL || a->x_row == NULL))
        return st_ref_fail(ST_INVALID, "moe_matmul: slot_table, expert and x_row are required");
    for (int32_t j = 0; j < a->n_assign; j++) {
        if (a->expert[j] < 0) return st_ref_fail(ST_INVALID, "moe_matmul: expert[%d] = %d", j, a->expert[j]);
        int32_t slot = a->slot_table[a->expert[j]];
        if (slot < 0) continue;
        if (slot >= n_slots)
            return st_ref_fail(ST_INVALID, "moe_matmul: expert %d maps to slot %d outside [0, %lld)", a->expert[j],
                               slot, (long long)n_slots);
        if (a->x_row[j] < 0 || a->x_row[j] >= n_x)
            return st_ref_fail(ST_INVALID, "moe_matmul: x_row[%d] = %d outside [0, %lld)", j, a->x_row[j],
                               (long long)n_x);
    }
    float *x = st_ref_alloc(op, (size_t)K * 2, sizeof(float));
    if (x == NULL) return ST_OOM;
    float *wrow = x + K;
    for (int32_t j = 0; j < a->n_assign; j++) {
        int32_t slot = a->slot_table[a->expert[j]];
        if (slot < 0) continue; /* computed elsewhere: row left untouched */
        st_ref_load_row(&a->x, st_ref_row_ptr(&a->x, a->x_row[j]), x, K);
        double sc = a->scale ? (double)a->scale[j] : 1.0;
        uint8_t *orow = st_ref_row_ptr(&a->out, j);
        for (int64_t m = 0; m < M; m++) {
            st_ref_load_row(&a->w, (const uint8_t *)a->w.data + slot * a->w.nb[2] + m * a->w.nb[1], wrow, K);
            double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += (double)wrow[k] * (double)x[k];
            st_ref_store(a->out.type, orow + m * a->out.nb[0], sc * acc);
        }
    }
    free(x);
    return ST_OK;
}

st_status st_ref_moe_combine(const st_moe_combine_args *a) {
    const char *op = "moe_combine";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "rows", &a->rows, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    int64_t M = a->out.ne[0], n = st_ref_rows(&a->out), n_rows = st_ref_rows(&a->rows);
    if (a->rows.ne[0] != M)
        return st_ref_fail(ST_INVALID, "moe_combine: rows have %lld columns, out %lld", (long long)a->rows.ne[0],
                           (long long)M);
    if (a->k < 1) return st_ref_fail(ST_INVALID, "moe_combine: k = %d", a->k);
    if (n > 0 && (a->row_of == NULL || a->weights == NULL))
        return st_ref_fail(ST_INVALID, "moe_combine: row_of and weights are required");
    for (int64_t t = 0; t < n * a->k; t++)
        if (a->row_of[t] >= n_rows)
            return st_ref_fail(ST_INVALID, "moe_combine: row_of[%lld] = %d outside [0, %lld)", (long long)t,
                               a->row_of[t], (long long)n_rows);
    double *acc = st_ref_alloc(op, (size_t)M * 2, sizeof(double));
    if (acc == NULL) return ST_OOM;
    double *r = acc + M;
    for (int64_t t = 0; t < n; t++) {
        uint8_t *orow = st_ref_row_ptr(&a->out, t);
        if (a->accumulate)
            st_ref_load_row_d(&a->out, orow, acc, M);
        else
            for (int64_t m = 0; m < M; m++) acc[m] = 0;
        for (int32_t j = 0; j < a->k; j++) {
            int32_t ro = a->row_of[t * a->k + j];
            if (ro < 0) continue;
            double w = a->weights[t * a->k + j];
            st_ref_load_row_d(&a->rows, st_ref_row_ptr(&a->rows, ro), r, M);
            for (int64_t m = 0; m < M; m++) acc[m] += w * r[m];
        }
        st_ref_store_row(&a->out, orow, acc, M);
    }
    free(acc);
    return ST_OK;
}
