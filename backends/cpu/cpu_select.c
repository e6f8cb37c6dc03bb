/* SPDX-License-Identifier: Apache-2.0 */
/* Selection ops on the CPU: ROUTER (softmax/sigmoid gating, optional selection bias, top-k,
 * renormalize, scale), ARGMAX and TOPK. Ties always go to the lower index. */
#include <math.h>
#include <stdlib.h>

#include "cpu/cpu_internal.h"

/* Keep the k best (value, index) pairs in vals/ids sorted descending; *have counts them. */
/* (a, ia) ranks before (b, ib): larger first, NaN after every number, lower index on ties. */
static inline int ranks_before(float a, int32_t ia, float b, int32_t ib) {
    int na = a != a, nb = b != b;
    if (na != nb) return nb;
    if (!na && a != b) return a > b;
    return ia < ib;
}

static void topk_push(float *vals, int32_t *ids, int32_t k, int32_t *have, float v, int32_t i) {
    int32_t n = *have;
    if (n == k) {
        if (!ranks_before(v, i, vals[k - 1], ids[k - 1])) return;
        n = k - 1;
    }
    int32_t p = n;
    while (p > 0 && ranks_before(v, i, vals[p - 1], ids[p - 1])) {
        vals[p] = vals[p - 1];
        ids[p] = ids[p - 1];
        p--;
    }
    vals[p] = v;
    ids[p] = i;
    *have = n + 1;
}

static st_status check_logits(const char *op, const st_tensor *x) {
    if (x->type != ST_TYPE_F32)
        return st_mod_fail(ST_INVALID, "cpu %s: input has type %s; expected F32", op, st_type_name(x->type));
    return st_cpu_check_act(op, "x", x);
}

/* ---------------------------------------------------------------- ROUTER */

/* (a, ia) ranks before (b, ib): larger first, NaN after every number, lower index on ties. */
static int ranks_before_d(double a, int64_t ia, double b, int64_t ib) {
    int na = a != a, nb = b != b;
    if (na != nb) return nb;
    if (!na && a != b) return a > b;
    return ia < ib;
}

/* Gating in double (E is small), so selections on near-ties match a double-precision oracle. */
st_status st_cpu_router(st_stream *st, const st_router_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu router: NULL stream or args");
    st_status s;
    if ((s = check_logits("router", &a->logits)) != ST_OK) return s;
    int64_t n = st_cpu_nrows(&a->logits), E = a->logits.ne[0];
    if (a->gating != ST_ROUTER_SOFTMAX && a->gating != ST_ROUTER_SIGMOID)
        return st_mod_fail(ST_INVALID, "cpu router: gating %u", a->gating);
    if (a->k < 1 || a->k > E)
        return st_mod_fail(ST_INVALID, "cpu router: k = %d with %lld experts", a->k, (long long)E);
    if (n > 0 && (!a->ids || !a->weights)) return st_mod_fail(ST_INVALID, "cpu router: ids and weights are required");
    int32_t k = a->k;
    double *p = malloc((size_t)(E + k) * sizeof(double) + (size_t)k * sizeof(int64_t));
    if (!p) return st_mod_fail(ST_OOM, "cpu router: scratch");
    double *sv = p + E;
    int64_t *si = (int64_t *)(sv + k);
    for (int64_t t = 0; t < n; t++) {
        const float *l = (const float *)st_cpu_row(&a->logits, t);
        if (a->gating == ST_ROUTER_SOFTMAX) {
            double mx = -INFINITY, sum = 0.0;
            for (int64_t e = 0; e < E; e++) mx = (double)l[e] > mx ? (double)l[e] : mx;
            for (int64_t e = 0; e < E; e++) sum += (p[e] = exp((double)l[e] - mx));
            for (int64_t e = 0; e < E; e++) p[e] /= sum;
        } else {
            for (int64_t e = 0; e < E; e++) p[e] = 1.0 / (1.0 + exp(-(double)l[e]));
        }
        /* top-k by selection score, kept sorted: insertion into the k best */
        int32_t have = 0;
        for (int64_t e = 0; e < E; e++) {
            double v = p[e] + (a->bias ? (double)a->bias[e] : 0.0);
            if (have == k && !ranks_before_d(v, e, sv[k - 1], si[k - 1])) continue;
            int32_t q = have < k ? have++ : k - 1;
            while (q > 0 && ranks_before_d(v, e, sv[q - 1], si[q - 1])) {
                sv[q] = sv[q - 1];
                si[q] = si[q - 1];
                q--;
            }
            sv[q] = v;
            si[q] = e;
        }
        double wsum = 0.0;
        for (int32_t j = 0; j < k; j++) wsum += p[si[j]];
        for (int32_t j = 0; j < k; j++) {
            double v = p[si[j]];
            if (a->normalize && wsum > 0.0) v /= wsum;
            a->ids[t * k + j] = (int32_t)si[j];
            a->weights[t * k + j] = (float)(v * (double)a->weight_scale);
        }
    }
    free(p);
    return ST_OK;
}

/* ---------------------------------------------------------------- ARGMAX / TOPK */

/* ARGMAX: rows are split into parts of at least ST_ARGMAX_PART values over the threads; each
 * part's (index, value) is found by the kernel and the parts are merged in order, so the lower
 * index wins ties whatever the split. */
#define ST_ARGMAX_PART 16384

typedef struct argmax_job {
    const st_topk_args *a;
    int64_t n, V, parts; /* rows, row length, parts per row */
    int64_t *best;       /* [n][parts] index within the row, or -1 */
} argmax_job;

static void argmax_task(void *vctx, int ith, int nth) {
    argmax_job *j = vctx;
    int64_t w0, w1;
    st_cpu_split(j->n * j->parts, ith, nth, &w0, &w1);
    for (int64_t w = w0; w < w1; w++) {
        int64_t t = w / j->parts, p = w % j->parts, i0, i1;
        st_cpu_split(j->V, (int)p, (int)j->parts, &i0, &i1);
        const float *x = (const float *)st_cpu_row(&j->a->x, t);
        int64_t b = st_cpu_k.argmax_f32(x + i0, i1 - i0);
        j->best[w] = b < 0 ? -1 : i0 + b;
    }
}

st_status st_cpu_argmax(st_stream *st, const st_topk_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu argmax: NULL stream or args");
    st_status s;
    if ((s = check_logits("argmax", &a->x)) != ST_OK) return s;
    int64_t n = st_cpu_nrows(&a->x), V = a->x.ne[0];
    if (V < 1) return st_mod_fail(ST_INVALID, "cpu argmax: empty rows");
    if (n > 0 && !a->ids) return st_mod_fail(ST_INVALID, "cpu argmax: ids is NULL");
    if (n == 0) return ST_OK;
    st_device *d = st->dev;
    int64_t parts = V / ST_ARGMAX_PART;
    if (parts > d->n_threads) parts = d->n_threads;
    if (parts < 1 || n >= d->n_threads) parts = 1;
    int64_t local[16];
    int64_t *best = n * parts <= 16 ? local : malloc((size_t)(n * parts) * sizeof *best);
    if (!best) return st_mod_fail(ST_OOM, "cpu argmax: %lld results", (long long)(n * parts));
    argmax_job j = {a, n, V, parts, best};
    int nth = st_cpu_nth(d, n * V, ST_ARGMAX_PART);
    if (nth > n * parts) nth = (int)(n * parts);
    st_cpu_pool_run(d->pool, argmax_task, &j, nth);
    for (int64_t t = 0; t < n; t++) {
        const float *x = (const float *)st_cpu_row(&a->x, t);
        int64_t b = -1;
        for (int64_t p = 0; p < parts; p++) {
            int64_t c = best[t * parts + p];
            if (c >= 0 && (b < 0 || x[c] > x[b])) b = c;
        }
        if (b < 0) b = 0; /* every value NaN */
        a->ids[t] = (int32_t)b;
        if (a->values) a->values[t] = x[b];
    }
    if (best != local) free(best);
    return ST_OK;
}

st_status st_cpu_topk(st_stream *st, const st_topk_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu topk: NULL stream or args");
    st_status s;
    if ((s = check_logits("topk", &a->x)) != ST_OK) return s;
    int64_t n = st_cpu_nrows(&a->x), V = a->x.ne[0];
    if (a->k < 1 || a->k > V) return st_mod_fail(ST_INVALID, "cpu topk: k = %d over %lld values", a->k, (long long)V);
    if (n > 0 && !a->ids) return st_mod_fail(ST_INVALID, "cpu topk: ids is NULL");
    int32_t k = a->k;
    float *vals = malloc((size_t)k * sizeof(float));
    if (!vals) return st_mod_fail(ST_OOM, "cpu topk: scratch");
    for (int64_t t = 0; t < n; t++) {
        const float *x = (const float *)st_cpu_row(&a->x, t);
        int32_t have = 0, *ids = a->ids + t * k;
        for (int64_t i = 0; i < V; i++) topk_push(vals, ids, k, &have, x[i], (int32_t)i);
        if (a->values) memcpy(a->values + t * k, vals, (size_t)k * sizeof(float));
    }
    free(vals);
    return ST_OK;
}
