/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA vs core/ref at the batched decode sizes: every token count from 1 to 64 per step,
 * through MATMUL (column groups of the 8-bit GEMV up to its limit, tensor-core tiles past it)
 * and the expert ops MOE_GATE_UP, MOE_DOWN and MOE_MATMUL with 8 choices per token (a block
 * row per assignment up to 8 tokens, assignments grouped by expert from 9 tokens on), for the
 * formats of the decode GEMV. Experts are partly resident, in reverse slot order, so a wrong
 * slot, column or output row shows. One line per (op, format) with the worst token count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_harness.h"
#include "quant/quant.h"
#include "ref/ref.h"

#define BT_MAX_TOKENS 64
#define BT_K_CHOICES 8
#define BT_EXPERTS 32
#define BT_SLOTS 24

static const uint32_t k_types[] = {ST_TYPE_Q4_0, ST_TYPE_Q5_0, ST_TYPE_Q8_0, ST_TYPE_Q4_K,
                                   ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_MXFP4, ST_TYPE_F16};

/* Normalized RMS bound: 8-bit activations for the block formats, F16 tiles past the GEMV. */
static double bt_tol(uint32_t wt) { return wt == ST_TYPE_F16 ? 5e-3 : 1e-2; }

/* The worst error over the token counts of one (op, format), reported once; a call that
 * failed (error -1) is kept with its reason. */
typedef struct {
    double worst;
    int worst_n, bad_n, nan_bad, ran;
    char why[160];
} bt_worst;

static void bt_note(bt_worst *w, double e, int nan_bad, int n, double tol) {
    w->ran++;
    if (e < 0 || nan_bad || e > tol || e != e) {
        if (!w->bad_n) w->bad_n = n;
        w->nan_bad += nan_bad;
    }
    if (w->worst_n == 0 || e > w->worst || e != e) {
        w->worst = e;
        w->worst_n = n;
    }
}

/* Records why a call of token count n failed (the first one). */
static void bt_failed(bt_worst *w, int n, const char *who, const char *text) {
    if (!w->why[0]) snprintf(w->why, sizeof w->why, "n=%d %s: %s", n, who, text);
}

static void bt_report(tc_ctx *c, const bt_worst *w, const char *op, uint32_t wt, double tol) {
    if (w->ran == BT_MAX_TOKENS && !w->bad_n)
        tc_pass(c, "batched %s %s, 1..%d tokens (worst err %.2e at n=%d)", op, st_type_name(wt), BT_MAX_TOKENS,
                w->worst, w->worst_n);
    else
        tc_fail(c, "batched %s %s: %d of %d token counts ran; first bad n=%d, worst err %.3e at n=%d (bound %.0e), "
                "%d NaN/Inf mismatches%s%s", op, st_type_name(wt), w->ran, BT_MAX_TOKENS, w->bad_n, w->worst,
                w->worst_n, tol, w->nan_bad, w->why[0] ? "; " : "", w->why);
}

/* The error of the device output against the reference's after both calls (the device one
 * only made when the reference's succeeded), or -1 with the reason noted when one failed. */
static double bt_judge(tc_ctx *c, bt_worst *w, int n, st_status rs, st_status ds, const st_tensor *ref,
                       const st_tensor *dv, int *nan_bad) {
    double mx;
    *nan_bad = 0;
    if (rs != ST_OK) bt_failed(w, n, "ref", st_ref_last_error());
    else if (ds != ST_OK) bt_failed(w, n, "device", c->api->last_error());
    else return tc_error(c, ref, dv, nan_bad, &mx);
    return -1;
}

/* Host bytes into an existing device buffer (synchronous); 0 on failure (reported). */
static int bt_put(tc_ctx *c, void *dev, const void *host, size_t bytes) {
    if (c->api->copy_h2d(c->s, dev, host, bytes) != ST_OK || c->api->stream_sync(c->s) != ST_OK) {
        tc_fail(c, "batched: upload: %s", c->api->last_error());
        return 0;
    }
    return 1;
}

/* A device tensor of the largest size of host tensor h, reused for every token count. */
static st_tensor bt_dev(tc_ctx *c, const st_tensor *h) {
    st_tensor d = *h;
    d.data = tc_up(c, NULL, tc_bytes(h));
    return d;
}

/* h's contents (its current row count) into d, with d's row count set to match. */
static int bt_load(tc_ctx *c, st_tensor *d, const st_tensor *h) {
    d->ne[1] = h->ne[1];
    return d->data && bt_put(c, d->data, h->data, tc_bytes(h));
}

/* MATMUL of [n][K] rows for n = 1..64 against the reference. */
static void bt_dense(tc_ctx *c, uint32_t wt) {
    const int64_t K = st_type_get(wt)->block_size > 32 ? 512 : 256, M = 72;
    st_tensor w = tc_host_rand(wt, K, M, 1, -1, 1);
    st_tensor x = tc_host_rand(ST_TYPE_F32, K, BT_MAX_TOKENS, 1, -1, 1);
    st_tensor dw = tc_dev_tensor(c, &w), dx = tc_dev_tensor(c, &x);
    st_tensor big = tc_host_fill(ST_TYPE_F32, M, BT_MAX_TOKENS, 1, 7.0f), dout = bt_dev(c, &big);
    bt_worst bw = {0};
    for (int n = 1; n <= BT_MAX_TOKENS; n++) {
        st_tensor hx = x, ddx = dx;
        hx.ne[1] = ddx.ne[1] = n;
        st_tensor out = tc_host_fill(ST_TYPE_F32, M, n, 1, 7.0f);
        st_matmul_args ha = {.size = sizeof ha, .w = w, .x = hx, .out = out}, da = {.size = sizeof da, .w = dw, .x = ddx, .out = dout};
        int nan_bad = 0;
        double e = -1;
        if (bt_load(c, &da.out, &out)) {
            const st_status rs = st_ref_matmul(&ha), ds = rs == ST_OK ? c->api->ops->matmul(c->s, &da) : ST_OK;
            e = bt_judge(c, &bw, n, rs, ds, &out, &da.out, &nan_bad);
        }
        bt_note(&bw, e, nan_bad, n, bt_tol(wt));
        free(out.data);
    }
    bt_report(c, &bw, "matmul", wt, bt_tol(wt));
    free(big.data);
    free(w.data);
    free(x.data);
}

/* Routing of n tokens: k distinct experts each (some not resident), weights in (0, 1]. */
static void bt_route(int n, int32_t *ids, int32_t *x_row, float *wts) {
    for (int t = 0; t < n; t++)
        for (int j = 0; j < BT_K_CHOICES; j++) {
            int e, dup;
            do {
                e = (int)tc_rand(0, (float)BT_EXPERTS - 0.01f);
                dup = 0;
                for (int i = 0; i < j; i++) dup |= ids[t * BT_K_CHOICES + i] == e;
            } while (dup);
            ids[t * BT_K_CHOICES + j] = e;
            x_row[t * BT_K_CHOICES + j] = t;
            wts[t * BT_K_CHOICES + j] = tc_rand(0.05f, 1.0f);
        }
}

typedef struct {
    int32_t table[BT_EXPERTS], ids[BT_MAX_TOKENS * BT_K_CHOICES], x_row[BT_MAX_TOKENS * BT_K_CHOICES];
    float wts[BT_MAX_TOKENS * BT_K_CHOICES];
    int32_t *d_table, *d_ids, *d_x_row;
    float *d_wts;
} bt_routing;

static void bt_route_alloc(tc_ctx *c, bt_routing *r) {
    for (int e = 0; e < BT_EXPERTS; e++) r->table[e] = e < BT_SLOTS ? BT_SLOTS - 1 - e : -1;
    r->d_table = tc_up(c, r->table, sizeof r->table);
    r->d_ids = tc_up(c, NULL, sizeof r->ids);
    r->d_x_row = tc_up(c, NULL, sizeof r->x_row);
    r->d_wts = tc_up(c, NULL, sizeof r->wts);
}

/* A new routing of n tokens on both sides; 0 when the upload failed. */
static int bt_route_up(tc_ctx *c, bt_routing *r, int n) {
    bt_route(n, r->ids, r->x_row, r->wts);
    const size_t A = (size_t)n * BT_K_CHOICES;
    return r->d_ids && r->d_x_row && r->d_wts && bt_put(c, r->d_ids, r->ids, A * sizeof(int32_t)) &&
           bt_put(c, r->d_x_row, r->x_row, A * sizeof(int32_t)) && bt_put(c, r->d_wts, r->wts, A * sizeof(float));
}

/* MOE_GATE_UP, MOE_MATMUL (scaled) and MOE_DOWN (accumulating) of n = 1..64 tokens. */
static void bt_experts(tc_ctx *c, uint32_t wt) {
    /* both K (gate, up) and F (down) are rows of the format's blocks */
    const int64_t K = st_type_get(wt)->block_size > 32 ? 256 : 128, F = st_type_get(wt)->block_size > 32 ? 256 : 64;
    st_tensor wg = tc_host_rand(wt, K, F, BT_SLOTS, -1, 1), wu = tc_host_rand(wt, K, F, BT_SLOTS, -1, 1);
    st_tensor wd = tc_host_rand(wt, F, K, BT_SLOTS, -1, 1);
    st_tensor x = tc_host_rand(ST_TYPE_F32, K, BT_MAX_TOKENS, 1, -1, 1);
    st_tensor xd = tc_host_rand(ST_TYPE_F32, F, BT_MAX_TOKENS * BT_K_CHOICES, 1, -1, 1);
    st_tensor dwg = tc_dev_tensor(c, &wg), dwu = tc_dev_tensor(c, &wu), dwd = tc_dev_tensor(c, &wd);
    st_tensor dx = tc_dev_tensor(c, &x), dxd = tc_dev_tensor(c, &xd);
    const int Amax = BT_MAX_TOKENS * BT_K_CHOICES;
    st_tensor bf = tc_host_fill(ST_TYPE_F32, F, Amax, 1, 0.0f), bk = tc_host_fill(ST_TYPE_F32, K, Amax, 1, 0.0f);
    st_tensor dog = bt_dev(c, &bf), dsg = bt_dev(c, &bf), dod = bt_dev(c, &bk), dsd = bt_dev(c, &bk);
    bt_routing r;
    bt_route_alloc(c, &r);
    bt_worst bg = {0}, bm = {0}, bd = {0};
    for (int n = 1; n <= BT_MAX_TOKENS; n++) {
        const int A = n * BT_K_CHOICES;
        if (!bt_route_up(c, &r, n)) break;
        int nan_bad = 0;
        double e = -1;
        st_status rs, ds;
        /* gate and up: out [A][F], rows of non-resident experts keep their poison */
        st_tensor hx = x, ddx = dx;
        hx.ne[1] = ddx.ne[1] = n;
        st_tensor og = tc_host_fill(ST_TYPE_F32, F, A, 1, 42.0f), sg = tc_host_fill(ST_TYPE_F32, F, A, 1, 0.0f);
        bt_load(c, &dog, &og);
        bt_load(c, &dsg, &sg);
        st_moe_gate_up_args hg = {.size = sizeof hg, .n_assign = A, .w_gate = wg, .w_up = wu, .x = hx, .out = og,
                                  .scratch = sg, .slot_table = r.table, .expert = r.ids, .x_row = r.x_row};
        st_moe_gate_up_args dg = {.size = sizeof dg, .n_assign = A, .w_gate = dwg, .w_up = dwu, .x = ddx, .out = dog,
                                  .scratch = dsg, .slot_table = r.d_table, .expert = r.d_ids, .x_row = r.d_x_row};
        rs = st_ref_moe_gate_up(&hg);
        ds = rs == ST_OK ? c->api->ops->moe_gate_up(c->s, &dg) : ST_OK;
        e = bt_judge(c, &bg, n, rs, ds, &og, &dog, &nan_bad);
        bt_note(&bg, e, nan_bad, n, bt_tol(wt));
        /* the gate projection alone, scaled per assignment (MOE_MATMUL); skipped rows stay 0 */
        memset(sg.data, 0, tc_bytes(&sg));
        bt_load(c, &dsg, &sg);
        st_moe_matmul_args hm = {.size = sizeof hm, .n_assign = A, .w = wg, .x = hx, .out = sg, .slot_table = r.table,
                                 .expert = r.ids, .x_row = r.x_row, .scale = r.wts};
        st_moe_matmul_args dm = {.size = sizeof dm, .n_assign = A, .w = dwg, .x = ddx, .out = dsg,
                                 .slot_table = r.d_table, .expert = r.d_ids, .x_row = r.d_x_row, .scale = r.d_wts};
        rs = st_ref_moe_matmul(&hm);
        ds = rs == ST_OK ? c->api->ops->moe_matmul(c->s, &dm) : ST_OK;
        e = bt_judge(c, &bm, n, rs, ds, &sg, &dsg, &nan_bad);
        bt_note(&bm, e, nan_bad, n, bt_tol(wt));
        /* down: out [n][K] += sum_j w_j Wd . xd[t k + j] */
        st_tensor hxd = xd, dxdn = dxd;
        hxd.ne[1] = dxdn.ne[1] = A;
        st_tensor od = tc_host_rand(ST_TYPE_F32, K, n, 1, -1, 1), sd = tc_host_fill(ST_TYPE_F32, K, A, 1, 0.0f);
        bt_load(c, &dod, &od);
        bt_load(c, &dsd, &sd);
        st_moe_down_args hd = {.size = sizeof hd, .k = BT_K_CHOICES, .w = wd, .x = hxd, .out = od, .scratch = sd,
                               .slot_table = r.table, .ids = r.ids, .weights = r.wts, .accumulate = 1};
        st_moe_down_args dd = {.size = sizeof dd, .k = BT_K_CHOICES, .w = dwd, .x = dxdn, .out = dod, .scratch = dsd,
                               .slot_table = r.d_table, .ids = r.d_ids, .weights = r.d_wts, .accumulate = 1};
        rs = st_ref_moe_down(&hd);
        ds = rs == ST_OK ? c->api->ops->moe_down(c->s, &dd) : ST_OK;
        e = bt_judge(c, &bd, n, rs, ds, &od, &dod, &nan_bad);
        bt_note(&bd, e, nan_bad, n, bt_tol(wt));
        free(og.data);
        free(sg.data);
        free(od.data);
        free(sd.data);
    }
    bt_report(c, &bg, "moe_gate_up", wt, bt_tol(wt));
    bt_report(c, &bm, "moe_matmul", wt, bt_tol(wt));
    bt_report(c, &bd, "moe_down", wt, bt_tol(wt));
    free(bf.data);
    free(bk.data);
    free(wg.data);
    free(wu.data);
    free(wd.data);
    free(x.data);
    free(xd.data);
}

void tc_test_batched(tc_ctx *c) {
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
        bt_dense(c, k_types[i]);
        bt_experts(c, k_types[i]);
    }
}
