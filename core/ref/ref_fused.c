/* SPDX-License-Identifier: Apache-2.0 */
/* Reference fused ops (ABI 1.1): ATTN_PREP, MOE_GATE_UP and MOE_DOWN, each written as the
 * composition of the reference's own unfused ops, so a fused kernel is checked against exactly
 * the semantics the unfused path has (F32 intermediates, as the unfused ops store them). */
#include <stdlib.h>
#include <string.h>

#include "ref/ref_internal.h"

#define CHECK(expr)                      \
    do {                                 \
        st_status st_s_ = (expr);        \
        if (st_s_ != ST_OK) return st_s_; \
    } while (0)

/* dst (contiguous F32 [n][h][d]) = src (any activation view of that shape). */
static st_status copy_f32(const st_tensor *src, float *dst, st_tensor *view) {
    *view = st_ref_tensor_3d(dst, ST_TYPE_F32, src->ne[0], src->ne[1], src->ne[2] * src->ne[3]);
    st_binary_args c;
    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    c.a = *src;
    c.out = *view;
    return st_ref_convert(&c);
}

/* rows of x (each ne[0] long) = norm(rows) * w. */
static st_status norm_rows(st_tensor *x, const st_tensor *w, float eps) {
    st_rms_norm_args r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.eps = eps;
    r.x = st_ref_tensor_2d(x->data, ST_TYPE_F32, x->ne[0], st_ref_rows(x));
    r.weight = *w;
    r.out = r.x;
    return st_ref_rms_norm(&r);
}

st_status st_ref_attn_prep(const st_attn_prep_args *a) {
    const char *op = "attn_prep";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "q", &a->q, 1));
    CHECK(st_ref_check(op, "k", &a->k, 1));
    CHECK(st_ref_check(op, "v", &a->v, 1));
    CHECK(st_ref_check(op, "q_out", &a->q_out, 1));
    const int64_t D = a->q.ne[0], H = a->q.ne[1], n = a->q.ne[2] * a->q.ne[3], Hk = a->k.ne[1];
    if (a->k.ne[0] != D || a->k.ne[2] * a->k.ne[3] != n || a->v.ne[1] != Hk || a->v.ne[2] * a->v.ne[3] != n)
        return st_ref_fail(ST_INVALID, "attn_prep: q [%lld][%lld][%lld], k [%lld][%lld][%lld] and v [%lld][%lld] "
                           "do not match", (long long)n, (long long)H, (long long)D, (long long)(a->k.ne[2] * a->k.ne[3]),
                           (long long)Hk, (long long)a->k.ne[0], (long long)a->v.ne[1], (long long)a->v.ne[0]);
    if (a->q_out.ne[0] != D || a->q_out.ne[1] != H || a->q_out.ne[2] * a->q_out.ne[3] != n)
        return st_ref_fail(ST_INVALID, "attn_prep: q_out must have q's shape");
    const st_tensor *nw[2] = {&a->q_norm, &a->k_norm};
    for (int i = 0; i < 2; i++)
        if (nw[i]->data && (nw[i]->type != ST_TYPE_F32 || nw[i]->ne[0] != D))
            return st_ref_fail(ST_INVALID, "attn_prep: %s norm weight must be F32 [%lld]", i ? "k" : "q", (long long)D);
    float *tq = st_ref_alloc(op, (size_t)(n * H * D + n * Hk * D) + 1, sizeof(float));
    if (!tq) return ST_OOM;
    float *tk = tq + n * H * D;
    st_tensor vq, vk;
    st_status s = copy_f32(&a->q, tq, &vq);
    if (s == ST_OK) s = copy_f32(&a->k, tk, &vk);
    if (s == ST_OK && a->q_norm.data) s = norm_rows(&vq, &a->q_norm, a->eps);
    if (s == ST_OK && a->k_norm.data) s = norm_rows(&vk, &a->k_norm, a->eps);
    st_rope_args r = a->rope;
    r.size = sizeof r;
    if (s == ST_OK) { /* K first: nothing is written when the rotation or the write is refused */
        r.x = vk;
        r.out = vk;
        s = st_ref_rope(&r);
    }
    if (s == ST_OK) { /* rotate Q into the scratch too, so q_out is written only at the end */
        r.x = vq;
        r.out = vq;
        s = st_ref_rope(&r);
    }
    if (s == ST_OK) {
        st_kv_write_args w;
        memset(&w, 0, sizeof w);
        w.size = sizeof w;
        w.k = vk;
        w.v = a->v;
        w.k_cache = a->k_cache;
        w.v_cache = a->v_cache;
        w.cells = a->cells;
        s = st_ref_kv_write(&w);
    }
    if (s == ST_OK) {
        st_binary_args c;
        memset(&c, 0, sizeof c);
        c.size = sizeof c;
        c.a = vq;
        c.out = a->q_out;
        s = st_ref_convert(&c);
    }
    free(tq);
    return s;
}

/* F32 [rows][cols] scratch view over a new buffer (caller frees t->data). */
static st_status scratch(const char *op, int64_t cols, int64_t rows, st_tensor *t) {
    void *p = st_ref_alloc(op, (size_t)(cols * rows) + 1, sizeof(float));
    if (!p) return ST_OOM;
    *t = st_ref_tensor_2d(p, ST_TYPE_F32, cols, rows);
    return ST_OK;
}

st_status st_ref_moe_gate_up(const st_moe_gate_up_args *a) {
    const char *op = "moe_gate_up";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "w_gate", &a->w_gate, 0));
    CHECK(st_ref_check(op, "w_up", &a->w_up, 0));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    if (a->w_up.type != a->w_gate.type || memcmp(a->w_up.ne, a->w_gate.ne, sizeof a->w_up.ne))
        return st_ref_fail(ST_INVALID, "moe_gate_up: w_gate and w_up differ in type or shape");
    const int64_t F = a->w_gate.ne[1], A = a->n_assign;
    st_tensor g, u;
    memset(&u, 0, sizeof u);
    CHECK(scratch(op, F, A, &g));
    st_status s = scratch(op, F, A, &u);
    st_moe_matmul_args m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    m.n_assign = a->n_assign;
    m.x = a->x;
    m.slot_table = a->slot_table;
    m.expert = a->expert;
    m.x_row = a->x_row;
    if (s == ST_OK) {
        m.w = a->w_gate;
        m.out = g;
        s = st_ref_moe_matmul(&m);
    }
    if (s == ST_OK) {
        m.w = a->w_up;
        m.out = u;
        s = st_ref_moe_matmul(&m);
    }
    if (s == ST_OK && (a->out.ne[0] != F || st_ref_rows(&a->out) != A))
        s = st_ref_fail(ST_INVALID, "moe_gate_up: out is [%lld][%lld], expected [%lld][%lld]",
                        (long long)st_ref_rows(&a->out), (long long)a->out.ne[0], (long long)A, (long long)F);
    if (s == ST_OK) {
        st_swiglu_args w;
        memset(&w, 0, sizeof w);
        w.size = sizeof w;
        w.gate = g;
        w.up = u;
        w.out = g;
        s = st_ref_swiglu(&w);
    }
    for (int64_t i = 0; s == ST_OK && i < A; i++) { /* rows of resident experts only */
        if (a->slot_table[a->expert[i]] < 0) continue;
        st_binary_args c;
        memset(&c, 0, sizeof c);
        c.size = sizeof c;
        c.a = st_ref_tensor_2d(st_ref_row_ptr(&g, i), ST_TYPE_F32, F, 1);
        c.out = a->out;
        c.out.data = st_ref_row_ptr(&a->out, i);
        c.out.ne[1] = 1;
        c.out.ne[2] = c.out.ne[3] = 1;
        s = st_ref_convert(&c);
    }
    free(g.data);
    free(u.data);
    return s;
}

st_status st_ref_moe_down(const st_moe_down_args *a) {
    const char *op = "moe_down";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "w", &a->w, 0));
    CHECK(st_ref_check(op, "x", &a->x, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    if (a->k < 1) return st_ref_fail(ST_INVALID, "moe_down: k = %d", a->k);
    const int64_t M = a->w.ne[1], n = st_ref_rows(&a->out), A = n * a->k;
    if (a->out.ne[0] != M) return st_ref_fail(ST_INVALID, "moe_down: out rows have %lld columns, expert rows give %lld",
                                              (long long)a->out.ne[0], (long long)M);
    if (st_ref_rows(&a->x) != A)
        return st_ref_fail(ST_INVALID, "moe_down: x has %lld rows for %lld tokens x %d choices",
                           (long long)st_ref_rows(&a->x), (long long)n, a->k);
    if (A > 0 && (!a->slot_table || !a->ids || !a->weights))
        return st_ref_fail(ST_INVALID, "moe_down: slot_table, ids and weights are required");
    st_tensor rows;
    CHECK(scratch(op, M, A, &rows)); /* zeros: skipped choices add nothing */
    int32_t *ident = st_ref_alloc(op, (size_t)A + 1, sizeof(int32_t));
    st_status s = ident ? ST_OK : ST_OOM;
    for (int64_t i = 0; ident && i < A; i++) ident[i] = (int32_t)i;
    if (s == ST_OK) {
        st_moe_matmul_args m;
        memset(&m, 0, sizeof m);
        m.size = sizeof m;
        m.n_assign = (int32_t)A;
        m.w = a->w;
        m.x = a->x;
        m.out = rows;
        m.slot_table = a->slot_table;
        m.expert = a->ids;
        m.x_row = ident;
        s = st_ref_moe_matmul(&m);
    }
    if (s == ST_OK) {
        st_moe_combine_args c;
        memset(&c, 0, sizeof c);
        c.size = sizeof c;
        c.k = a->k;
        c.rows = rows;
        c.out = a->out;
        c.row_of = ident;
        c.weights = a->weights;
        c.accumulate = a->accumulate;
        s = st_ref_moe_combine(&c);
    }
    free(ident);
    free(rows.data);
    return s;
}
