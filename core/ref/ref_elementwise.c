/* SPDX-License-Identifier: Apache-2.0 */
/* Reference element-wise ops: ADD (row broadcast), SCALE, CONVERT, MUL_ROWS. Each row is read
 * completely before it is written, so out may alias a. */
#include <math.h>
#include <stdlib.h>

#include "ref/ref_internal.h"

#define CHECK(expr)                      \
    do {                                 \
        st_status st_s_ = (expr);        \
        if (st_s_ != ST_OK) return st_s_; \
    } while (0)

enum { EW_ADD, EW_SCALE, EW_CONVERT, EW_MUL_ROWS };

static const char *ew_name(int kind) {
    switch (kind) {
    case EW_ADD: return "add";
    case EW_SCALE: return "scale";
    case EW_CONVERT: return "convert";
    default: return "mul_rows";
    }
}

/* Element i (flattened over all dims) of t. */
static double load_flat(const st_tensor *t, int64_t i) {
    int64_t i0 = i % t->ne[0];
    int64_t r = i / t->ne[0];
    int64_t i1 = r % t->ne[1], i2 = (r / t->ne[1]) % t->ne[2], i3 = r / (t->ne[1] * t->ne[2]);
    return st_ref_load(t->type, st_ref_elem_ptr(t, i0, i1, i2, i3));
}

static st_status elementwise(const st_binary_args *a, int kind) {
    const char *op = ew_name(kind);
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "a", &a->a, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    CHECK(st_ref_check_same(op, "a", &a->a, "out", &a->out));
    int64_t K = a->a.ne[0], n = st_ref_rows(&a->a);
    int b_bcast = 0;
    if (kind == EW_ADD) {
        CHECK(st_ref_check(op, "b", &a->b, 1));
        int64_t bn = st_ref_rows(&a->b);
        if (a->b.ne[0] != K || (bn != n && bn != 1))
            return st_ref_fail(ST_INVALID, "add: b is [%lld][%lld], a is [%lld][%lld]", (long long)bn,
                               (long long)a->b.ne[0], (long long)n, (long long)K);
        b_bcast = bn == 1 && n != 1;
    } else if (kind == EW_MUL_ROWS) {
        CHECK(st_ref_check(op, "b", &a->b, 1));
        int64_t bcount = a->b.ne[0] * st_ref_rows(&a->b);
        if (bcount != n)
            return st_ref_fail(ST_INVALID, "mul_rows: b has %lld elements for %lld rows", (long long)bcount,
                               (long long)n);
    }
    double *row = st_ref_alloc(op, (size_t)K * 2, sizeof(double));
    if (row == NULL) return ST_OOM;
    double *brow = row + K;
    for (int64_t i = 0; i < n; i++) {
        st_ref_load_row_d(&a->a, st_ref_row_ptr(&a->a, i), row, K);
        switch (kind) {
        case EW_ADD:
            st_ref_load_row_d(&a->b, st_ref_row_ptr(&a->b, b_bcast ? 0 : i), brow, K);
            for (int64_t k = 0; k < K; k++) row[k] += brow[k];
            break;
        case EW_SCALE:
            for (int64_t k = 0; k < K; k++) row[k] *= (double)a->s;
            break;
        case EW_MUL_ROWS: {
            double f = load_flat(&a->b, i);
            if (a->sigmoid) f = 1.0 / (1.0 + exp(-f));
            for (int64_t k = 0; k < K; k++) row[k] *= f;
            break;
        }
        default: break;
        }
        st_ref_store_row(&a->out, st_ref_row_ptr(&a->out, i), row, K);
    }
    free(row);
    return ST_OK;
}

st_status st_ref_add(const st_binary_args *a) { return elementwise(a, EW_ADD); }
st_status st_ref_scale(const st_binary_args *a) { return elementwise(a, EW_SCALE); }
st_status st_ref_convert(const st_binary_args *a) { return elementwise(a, EW_CONVERT); }
st_status st_ref_mul_rows(const st_binary_args *a) { return elementwise(a, EW_MUL_ROWS); }
