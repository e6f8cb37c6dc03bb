/* SPDX-License-Identifier: Apache-2.0 */
/* Reference ops on dense rows: embedding gather, RMS norm (fused residual), matmul, SwiGLU. */
#include <math.h>
#include <stdlib.h>

#include "quant/quant.h"
#include "ref/ref_internal.h"

#define CHECK(expr)                      \
    do {                                 \
        st_status st_s_ = (expr);        \
        if (st_s_ != ST_OK) return st_s_; \
    } while (0)

st_status st_ref_get_rows(const st_get_rows_args *a) {
    const char *op = "get_rows";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "w", &a->w, 0));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    int64_t K = a->w.ne[0], n_rows = st_ref_rows(&a->w), n = st_ref_rows(&a->out);
    if (a->out.ne[0] != K)
        return st_ref_fail(ST_INVALID, "get_rows: out has %lld columns, w has %lld", (long long)a->out.ne[0],
                           (long long)K);
    if (n > 0 && a->ids == NULL) return st_ref_fail(ST_INVALID, "get_rows: ids is NULL");
    for (int64_t i = 0; i < n; i++)
        if (a->ids[i] < 0 || a->ids[i] >= n_rows)
            return st_ref_fail(ST_INVALID, "get_rows: ids[%lld] = %d outside [0, %lld)", (long long)i, a->ids[i],
                               (long long)n_rows);
    double *buf = st_ref_alloc(op, (size_t)K, sizeof(double));
    if (buf == NULL) return ST_OOM;
    for (int64_t i = 0; i < n; i++) {
        st_ref_load_row_d(&a->w, st_ref_row_ptr(&a->w, a->ids[i]), buf, K);
        st_ref_store_row(&a->out, st_ref_row_ptr(&a->out, i), buf, K);
    }
    free(buf);
    return ST_OK;
}

st_status st_ref_rms_norm(const st_rms_norm_args *a) {
    const char *op = "rms_norm";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "x", &a->x, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    CHECK(st_ref_check_same(op, "x", &a->x, "out", &a->out));
    int has_res = a->residual.data != NULL, has_sum = a->sum_out.data != NULL, has_w = a->weight.data != NULL;
    if (has_res) {
        CHECK(st_ref_check(op, "residual", &a->residual, 1));
        CHECK(st_ref_check_same(op, "x", &a->x, "residual", &a->residual));
    }
    if (has_sum) {
        CHECK(st_ref_check(op, "sum_out", &a->sum_out, 1));
        CHECK(st_ref_check_same(op, "x", &a->x, "sum_out", &a->sum_out));
    }
    int64_t K = a->x.ne[0], n = st_ref_rows(&a->x);
    if (has_w) {
        CHECK(st_ref_check(op, "weight", &a->weight, 1));
        if (a->weight.ne[0] != K)
            return st_ref_fail(ST_INVALID, "rms_norm: weight has %lld elements, rows have %lld",
                               (long long)a->weight.ne[0], (long long)K);
    }
    if (!(a->eps >= 0.0f)) return st_ref_fail(ST_INVALID, "rms_norm: eps %g is negative or NaN", (double)a->eps);
    double *h = st_ref_alloc(op, (size_t)K * 3, sizeof(double));
    if (h == NULL) return ST_OOM;
    double *r = h + K, *w = h + 2 * K;
    if (has_w) st_ref_load_row_d(&a->weight, a->weight.data, w, K);
    for (int64_t i = 0; i < n; i++) {
        /* read everything of the row first: outputs may alias inputs */
        st_ref_load_row_d(&a->x, st_ref_row_ptr(&a->x, i), h, K);
        if (has_res) {
            st_ref_load_row_d(&a->residual, st_ref_row_ptr(&a->residual, i), r, K);
            for (int64_t k = 0; k < K; k++) h[k] += r[k];
        }
        double ss = 0;
        for (int64_t k = 0; k < K; k++) ss += h[k] * h[k];
        double inv = 1.0 / sqrt(ss / (double)K + (double)a->eps);
        if (has_sum) st_ref_store_row(&a->sum_out, st_ref_row_ptr(&a->sum_out, i), h, K);
        for (int64_t k = 0; k < K; k++) r[k] = h[k] * inv * (has_w ? w[k] : 1.0);
        st_ref_store_row(&a->out, st_ref_row_ptr(&a->out, i), r, K);
    }
    free(h);
    return ST_OK;
}

st_status st_ref_matmul(const st_matmul_args *a) {
    const char *op = "matmul";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "w", &a->w, 0));
    CHECK(st_ref_check(op, "x", &a->x, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    int64_t K = a->w.ne[0], M = st_ref_rows(&a->w), n = st_ref_rows(&a->x);
    if (a->x.ne[0] != K)
        return st_ref_fail(ST_INVALID, "matmul: x rows have %lld elements, w rows %lld", (long long)a->x.ne[0],
                           (long long)K);
    if (a->out.ne[0] != M || st_ref_rows(&a->out) != n)
        return st_ref_fail(ST_INVALID, "matmul: out is [%lld][%lld], expected [%lld][%lld]",
                           (long long)st_ref_rows(&a->out), (long long)a->out.ne[0], (long long)n, (long long)M);
    float *xs = st_ref_alloc(op, (size_t)(n * K + K), sizeof(float));
    if (xs == NULL) return ST_OOM;
    float *wrow = xs + n * K;
    for (int64_t i = 0; i < n; i++) st_ref_load_row(&a->x, st_ref_row_ptr(&a->x, i), xs + i * K, K);
    for (int64_t m = 0; m < M; m++) {
        st_ref_load_row(&a->w, st_ref_row_ptr(&a->w, m), wrow, K);
        for (int64_t i = 0; i < n; i++) {
            double acc = 0;
            const float *x = xs + i * K;
            for (int64_t k = 0; k < K; k++) acc += (double)wrow[k] * (double)x[k];
            st_ref_store(a->out.type, st_ref_row_ptr(&a->out, i) + m * a->out.nb[0], acc);
        }
    }
    free(xs);
    return ST_OK;
}

st_status st_ref_swiglu(const st_swiglu_args *a) {
    const char *op = "swiglu";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "gate", &a->gate, 1));
    CHECK(st_ref_check(op, "up", &a->up, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    CHECK(st_ref_check_same(op, "gate", &a->gate, "up", &a->up));
    CHECK(st_ref_check_same(op, "gate", &a->gate, "out", &a->out));
    int64_t F = a->gate.ne[0], n = st_ref_rows(&a->gate);
    double *g = st_ref_alloc(op, (size_t)F * 2, sizeof(double));
    if (g == NULL) return ST_OOM;
    double *u = g + F;
    for (int64_t i = 0; i < n; i++) {
        st_ref_load_row_d(&a->gate, st_ref_row_ptr(&a->gate, i), g, F);
        st_ref_load_row_d(&a->up, st_ref_row_ptr(&a->up, i), u, F);
        for (int64_t k = 0; k < F; k++) g[k] = g[k] / (1.0 + exp(-g[k])) * u[k];
        st_ref_store_row(&a->out, st_ref_row_ptr(&a->out, i), g, F);
    }
    free(g);
    return ST_OK;
}
