/* SPDX-License-Identifier: Apache-2.0 */
/* Reference of gpt-oss's clamped SwiGLU (ABI 1.2). ATTENTION_EX lives with ATTENTION in
 * ref_attention.c. */
#include <math.h>
#include <stdlib.h>

#include "ref/ref_internal.h"

#define CHECK(expr)                      \
    do {                                 \
        st_status st_s_ = (expr);        \
        if (st_s_ != ST_OK) return st_s_; \
    } while (0)

st_status st_ref_swiglu_oai(const st_swiglu_oai_args *a) {
    const char *op = "swiglu_oai";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "gate", &a->gate, 1));
    CHECK(st_ref_check(op, "up", &a->up, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    CHECK(st_ref_check_same(op, "gate", &a->gate, "up", &a->up));
    CHECK(st_ref_check_same(op, "gate", &a->gate, "out", &a->out));
    if (!(a->limit > 0.0f)) return st_ref_fail(ST_INVALID, "swiglu_oai: limit %g must be positive", (double)a->limit);
    const int64_t F = a->gate.ne[0], n = st_ref_rows(&a->gate);
    double *g = st_ref_alloc(op, (size_t)F * 2, sizeof(double));
    if (g == NULL) return ST_OOM;
    double *u = g + F;
    const double lim = a->limit, alpha = a->alpha;
    for (int64_t i = 0; i < n; i++) {
        st_ref_load_row_d(&a->gate, st_ref_row_ptr(&a->gate, i), g, F);
        st_ref_load_row_d(&a->up, st_ref_row_ptr(&a->up, i), u, F);
        for (int64_t k = 0; k < F; k++) {
            const double x = g[k] < lim ? g[k] : lim;                         /* min(gate, limit) */
            const double y = u[k] < -lim ? -lim : u[k] > lim ? lim : u[k];   /* clamp(up) */
            g[k] = x / (1.0 + exp(-alpha * x)) * (y + 1.0);
        }
        st_ref_store_row(&a->out, st_ref_row_ptr(&a->out, i), g, F);
    }
    free(g);
    return ST_OK;
}
