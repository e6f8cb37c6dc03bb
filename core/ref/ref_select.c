/* SPDX-License-Identifier: Apache-2.0 */
/* Reference selection ops: per-row ARGMAX and TOPK (descending, lower index first on ties,
 * NaN after every number). */
#include <stdlib.h>

#include "ref/ref_internal.h"

#define CHECK(expr)                      \
    do {                                 \
        st_status st_s_ = (expr);        \
        if (st_s_ != ST_OK) return st_s_; \
    } while (0)

typedef struct {
    double v;
    int64_t i;
} ranked;

static int ranked_cmp(const void *pa, const void *pb) {
    const ranked *a = pa, *b = pb;
    int na = a->v != a->v, nb = b->v != b->v;
    if (na != nb) return na ? 1 : -1;
    if (!na && a->v != b->v) return a->v > b->v ? -1 : 1;
    return a->i < b->i ? -1 : (a->i > b->i ? 1 : 0);
}

static st_status select_rows(const st_topk_args *a, int is_argmax) {
    const char *op = is_argmax ? "argmax" : "topk";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "x", &a->x, 1));
    int64_t V = a->x.ne[0], n = st_ref_rows(&a->x);
    int32_t k = is_argmax ? 1 : a->k;
    if (k < 1 || k > V) return st_ref_fail(ST_INVALID, "topk: k = %d outside [1, %lld]", k, (long long)V);
    if (n > 0 && a->ids == NULL) return st_ref_fail(ST_INVALID, "%s: ids is NULL", op);
    double *row = st_ref_alloc(op, (size_t)V, sizeof(double));
    ranked *rk = is_argmax ? NULL : st_ref_alloc(op, (size_t)V, sizeof(ranked));
    if (row == NULL || (!is_argmax && rk == NULL)) {
        free(row);
        free(rk);
        return ST_OOM;
    }
    for (int64_t i = 0; i < n; i++) {
        st_ref_load_row_d(&a->x, st_ref_row_ptr(&a->x, i), row, V);
        if (is_argmax) {
            int64_t best = 0;
            for (int64_t j = 1; j < V; j++) {
                int bn = row[best] != row[best];
                if (row[j] == row[j] && (bn || row[j] > row[best])) best = j;
            }
            a->ids[i] = (int32_t)best;
            if (a->values) a->values[i] = (float)row[best];
        } else {
            for (int64_t j = 0; j < V; j++) {
                rk[j].v = row[j];
                rk[j].i = j;
            }
            qsort(rk, (size_t)V, sizeof *rk, ranked_cmp);
            for (int32_t j = 0; j < k; j++) {
                a->ids[i * k + j] = (int32_t)rk[j].i;
                if (a->values) a->values[i * k + j] = (float)rk[j].v;
            }
        }
    }
    free(row);
    free(rk);
    return ST_OK;
}

st_status st_ref_argmax(const st_topk_args *a) { return select_rows(a, 1); }
st_status st_ref_topk(const st_topk_args *a) { return select_rows(a, 0); }
