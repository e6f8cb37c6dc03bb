/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance cases: one function per op, each running its shapes and formats. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance/conf_util.h"
#include "conformance/conf_ops.h"
#include "quant/quant.h"

static const uint32_t k_weight_types[] = {
    ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0, ST_TYPE_Q4_1, ST_TYPE_Q5_0,   ST_TYPE_Q5_1,  ST_TYPE_Q8_0,
    ST_TYPE_Q2_K, ST_TYPE_Q3_K, ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_NL, ST_TYPE_IQ4_XS, ST_TYPE_MXFP4,
};
#define N_WTYPES (sizeof k_weight_types / sizeof k_weight_types[0])
static const uint32_t k_act_types[] = {ST_TYPE_F32, ST_TYPE_F16, ST_TYPE_BF16};

/* Per-row normalized squared error a backend may have for a weight format: activations may be
 * quantized to 8 bits (or rounded to half precision) for the dot products. */
static double weight_limit(uint32_t w) {
    switch (w) {
    case ST_TYPE_F32: return 1e-8;
    case ST_TYPE_F16: return 1e-5;
    case ST_TYPE_BF16: return 1e-4;
    default: return 5e-4;
    }
}

/* Extra error from storing results in an activation type. */
static double act_limit(uint32_t a) {
    return a == ST_TYPE_F16 ? 1e-6 : a == ST_TYPE_BF16 ? 1e-4 : 0;
}

static int64_t k_for(uint32_t type, int which) {
    int bs = st_type_get(type)->block_size;
    if (bs == 1) {
        static const int64_t plain[] = {7, 33, 1000, 4099};
        return plain[which];
    }
    static const int mult[] = {1, 3, 8, 16};
    return (int64_t)bs * mult[which];
}

/* ---- MATMUL -------------------------------------------------------------------------- */
static void matmul_case(st_conf_ctx *c, uint32_t wt, uint32_t at, int64_t n, int64_t M, int64_t K) {
    char name[96];
    snprintf(name, sizeof name, "matmul %s x %s n=%lld M=%lld K=%lld", st_type_name(wt), st_type_name(at),
             (long long)n, (long long)M, (long long)K);
    if (!st_conf_claimed(c, (const void *)c->ops->matmul, ST_OP_MATMUL, wt, name)) return;
    st_matmul_args h = {.size = sizeof h}, d;
    h.w = st_conf_tensor(wt, K, M, 1);
    h.x = st_conf_tensor(at, K, n, 1);
    st_conf_random_tensor(c, &h.w, 1.0f);
    st_conf_random_tensor(c, &h.x, 1.0f);
    d = h;
    d.w = st_conf_to_device(c, &h.w);
    d.x = st_conf_to_device(c, &h.x);
    st_tensor o = st_conf_tensor(at, M, n, 1);
    st_conf_output_pair(c, &o, &h.out, &d.out);
    double err = INFINITY;
    if (!c->alloc_failed && st_conf_run_ok(c, "matmul", c->ops->matmul(c->stream, &d))) {
        c->ref->matmul(NULL, &h);
        err = st_conf_compare_den(c, &d.out, &h.out, st_conf_dot_scale(c, &h.w, &h.x));
    }
    st_conf_case_end(c, name, err, weight_limit(wt) + act_limit(at));
}

void st_conf_matmul(st_conf_ctx *c) {
    static const int64_t shapes[][3] = {/* n, M, which K */
                                        {1, 1, 0}, {1, 17, 1}, {2, 33, 2}, {5, 64, 1}, {8, 19, 3},
                                        {9, 65, 1}, {33, 70, 2}, {64, 128, 3},
                                        /* prefill-sized column counts (a GPU's many-column tiles,
                                           K split over blocks, a last chunk of 32) */
                                        {130, 136, 1}, {160, 130, 0}};
    int n_shapes = c->quick ? 4 : (int)(sizeof shapes / sizeof shapes[0]);
    for (size_t t = 0; t < N_WTYPES; t++)
        for (int s = 0; s < n_shapes; s++)
            matmul_case(c, k_weight_types[t], ST_TYPE_F32, shapes[s][0], shapes[s][1],
                        k_for(k_weight_types[t], (int)shapes[s][2]));
    /* half-precision activations on a few formats */
    static const uint32_t few[] = {ST_TYPE_F16, ST_TYPE_Q8_0, ST_TYPE_Q4_K};
    for (size_t t = 0; t < 3; t++)
        for (int a = 1; a < 3; a++) {
            matmul_case(c, few[t], k_act_types[a], 1, 17, k_for(few[t], 1));
            matmul_case(c, few[t], k_act_types[a], 9, 33, k_for(few[t], 2));
            matmul_case(c, few[t], k_act_types[a], 131, 72, few[t] == ST_TYPE_F16 ? 512 : k_for(few[t], 2));
        }
    /* plain weights with K a multiple of 64 (the shapes above give them odd K) */
    matmul_case(c, ST_TYPE_F16, ST_TYPE_F32, 129, 136, 576);
    matmul_case(c, ST_TYPE_BF16, ST_TYPE_F32, 140, 64, 192);
}

/* ---- GET_ROWS ------------------------------------------------------------------------ */
void st_conf_get_rows(st_conf_ctx *c) {
    for (size_t t = 0; t < N_WTYPES; t++)
        for (int a = 0; a < 3; a++) {
            uint32_t wt = k_weight_types[t], at = k_act_types[a];
            int64_t K = k_for(wt, 1), n_rows = 37, n = a == 0 ? 11 : 3;
            char name[96];
            snprintf(name, sizeof name, "get_rows %s -> %s n=%lld K=%lld", st_type_name(wt), st_type_name(at),
                     (long long)n, (long long)K);
            if (!st_conf_claimed(c, (const void *)c->ops->get_rows, ST_OP_GET_ROWS, wt, name)) continue;
            st_get_rows_args h = {.size = sizeof h}, d;
            h.w = st_conf_tensor(wt, K, n_rows, 1);
            st_conf_random_tensor(c, &h.w, 2.0f);
            int32_t *ids = st_conf_host(c, sizeof(int32_t) * (size_t)n);
            for (int64_t i = 0; i < n; i++) ids[i] = i == 0 ? (int32_t)n_rows - 1 : st_conf_randi(c, (int)n_rows);
            h.ids = ids;
            d = h;
            d.w = st_conf_to_device(c, &h.w);
            d.ids = st_conf_upload(c, ids, sizeof(int32_t) * (size_t)n);
            st_tensor o = st_conf_tensor(at, K, n, 1);
            st_conf_output_pair(c, &o, &h.out, &d.out);
            double err = INFINITY;
            if (!c->alloc_failed && st_conf_run_ok(c, "get_rows", c->ops->get_rows(c->stream, &d))) {
                c->ref->get_rows(NULL, &h);
                err = st_conf_compare(c, &d.out, &h.out);
            }
            st_conf_case_end(c, name, err, 1e-10 + act_limit(at));
        }
}

/* ---- RMS_NORM ------------------------------------------------------------------------ */
void st_conf_rms_norm(st_conf_ctx *c) {
    static const int64_t shapes[][2] = {{1, 7}, {3, 64}, {5, 1000}, {2, 4096}};
    for (int a = 0; a < 3; a++)
        for (int s = 0; s < 4; s++)
            for (int fused = 0; fused < 3; fused++) {
                uint32_t at = k_act_types[a];
                int64_t n = shapes[s][0], K = shapes[s][1];
                char name[96];
                snprintf(name, sizeof name, "rms_norm %s n=%lld K=%lld%s", st_type_name(at), (long long)n,
                         (long long)K, fused == 1 ? " +residual" : fused == 2 ? " +residual->sum" : "");
                if (!st_conf_claimed(c, (const void *)c->ops->rms_norm, ST_OP_RMS_NORM, at, name)) continue;
                st_rms_norm_args h = {.size = sizeof h, .eps = 1e-6f}, d;
                h.x = st_conf_tensor(at, K, n, 1);
                st_conf_random_tensor(c, &h.x, 3.0f);
                h.weight = st_conf_tensor(ST_TYPE_F32, K, 1, 1);
                st_conf_random_tensor(c, &h.weight, 2.0f);
                if (fused) {
                    h.residual = st_conf_tensor(at, K, n, 1);
                    st_conf_random_tensor(c, &h.residual, 3.0f);
                }
                d = h;
                d.x = st_conf_to_device(c, &h.x);
                d.weight = st_conf_to_device(c, &h.weight);
                if (fused) d.residual = st_conf_to_device(c, &h.residual);
                if (fused == 2) st_conf_output_pair(c, &h.x, &h.sum_out, &d.sum_out);
                st_conf_output_pair(c, &h.x, &h.out, &d.out);
                double err = INFINITY;
                if (!c->alloc_failed && st_conf_run_ok(c, "rms_norm", c->ops->rms_norm(c->stream, &d))) {
                    c->ref->rms_norm(NULL, &h);
                    err = st_conf_compare(c, &d.out, &h.out);
                    if (fused == 2) {
                        double e2 = st_conf_compare(c, &d.sum_out, &h.sum_out);
                        if (e2 > err) err = e2;
                    }
                }
                st_conf_case_end(c, name, err, 1e-9 + act_limit(at));
            }
}

/* ---- ROPE ---------------------------------------------------------------------------- */
void st_conf_rope(st_conf_ctx *c) {
    for (int a = 0; a < 3; a++)
        for (int mode = 0; mode < 2; mode++)
            for (int v = 0; v < 3; v++) {
                uint32_t at = k_act_types[a];
                int64_t n = v == 2 ? 1 : 6, heads = v == 1 ? 3 : 4, hd = v == 0 ? 64 : 128;
                int32_t n_rot = v == 1 ? 64 : (int32_t)hd;
                char name[96];
                snprintf(name, sizeof name, "rope %s %s hd=%lld n_rot=%d%s", st_type_name(at),
                         mode ? "neox" : "normal", (long long)hd, n_rot, v == 2 ? " yarn" : "");
                if (!st_conf_claimed(c, (const void *)c->ops->rope, ST_OP_ROPE, at, name)) continue;
                st_rope_args h = {.size = sizeof h}, d;
                h.mode = mode ? ST_ROPE_NEOX : ST_ROPE_NORMAL;
                h.n_rot = n_rot;
                h.freq_base = v == 0 ? 10000.0f : 1000000.0f;
                h.freq_scale = v == 2 ? 0.25f : 1.0f;
                h.ext_factor = v == 2 ? 1.0f : 0.0f;
                h.attn_factor = 1.0f;
                h.beta_fast = 32.0f;
                h.beta_slow = 1.0f;
                h.n_ctx_orig = 4096;
                h.x = st_conf_tensor(at, hd, heads, n);
                st_conf_random_tensor(c, &h.x, 1.0f);
                int32_t *pos = st_conf_host(c, sizeof(int32_t) * (size_t)n);
                for (int64_t i = 0; i < n; i++) pos[i] = i == 0 ? 0 : st_conf_randi(c, 20000);
                h.pos = pos;
                d = h;
                d.x = st_conf_to_device(c, &h.x);
                d.pos = st_conf_upload(c, pos, sizeof(int32_t) * (size_t)n);
                st_conf_output_pair(c, &h.x, &h.out, &d.out);
                double err = INFINITY;
                if (!c->alloc_failed && st_conf_run_ok(c, "rope", c->ops->rope(c->stream, &d))) {
                    c->ref->rope(NULL, &h);
                    err = st_conf_compare(c, &d.out, &h.out);
                }
                st_conf_case_end(c, name, err, 1e-6 + act_limit(at));
            }
}

/* ---- elementwise: SWIGLU, ADD, SCALE, CONVERT, MUL_ROWS ------------------------------ */
void st_conf_elementwise(st_conf_ctx *c) {
    static const int64_t shapes[][2] = {{1, 5}, {4, 768}, {3, 4099}};
    for (int a = 0; a < 3; a++)
        for (int s = 0; s < 3; s++) {
            uint32_t at = k_act_types[a];
            int64_t n = shapes[s][0], K = shapes[s][1];
            char name[96];
            /* swiglu */
            snprintf(name, sizeof name, "swiglu %s n=%lld F=%lld", st_type_name(at), (long long)n, (long long)K);
            if (st_conf_claimed(c, (const void *)c->ops->swiglu, ST_OP_SWIGLU, at, name)) {
                st_swiglu_args h = {.size = sizeof h}, d;
                h.gate = st_conf_tensor(at, K, n, 1);
                h.up = st_conf_tensor(at, K, n, 1);
                st_conf_random_tensor(c, &h.gate, 6.0f);
                st_conf_random_tensor(c, &h.up, 2.0f);
                d = h;
                d.gate = st_conf_to_device(c, &h.gate);
                d.up = st_conf_to_device(c, &h.up);
                st_conf_output_pair(c, &h.gate, &h.out, &d.out);
                double err = INFINITY;
                if (!c->alloc_failed && st_conf_run_ok(c, "swiglu", c->ops->swiglu(c->stream, &d))) {
                    c->ref->swiglu(NULL, &h);
                    err = st_conf_compare(c, &d.out, &h.out);
                }
                st_conf_case_end(c, name, err, 1e-8 + act_limit(at));
            }
            /* add (full and broadcast), scale, convert, mul_rows */
            for (int kind = 0; kind < 5; kind++) {
                static const char *names[] = {"add", "add(bcast)", "scale", "convert", "mul_rows(sigmoid)"};
                static const uint32_t ops[] = {ST_OP_ADD, ST_OP_ADD, ST_OP_SCALE, ST_OP_CONVERT, ST_OP_MUL_ROWS};
                st_status (*dev_fn)(st_stream *, const st_binary_args *) =
                    kind < 2 ? c->ops->add : kind == 2 ? c->ops->scale : kind == 3 ? c->ops->convert : c->ops->mul_rows;
                st_status (*ref_fn)(st_stream *, const st_binary_args *) =
                    kind < 2 ? c->ref->add : kind == 2 ? c->ref->scale : kind == 3 ? c->ref->convert : c->ref->mul_rows;
                uint32_t out_t = kind == 3 ? k_act_types[(a + 1) % 3] : at;
                snprintf(name, sizeof name, "%s %s->%s n=%lld K=%lld", names[kind], st_type_name(at),
                         st_type_name(out_t), (long long)n, (long long)K);
                if (!st_conf_claimed(c, (const void *)dev_fn, ops[kind], at, name)) continue;
                st_binary_args h = {.size = sizeof h, .s = -0.37f, .sigmoid = 1}, d;
                h.a = st_conf_tensor(at, K, n, 1);
                st_conf_random_tensor(c, &h.a, 4.0f);
                if (kind == 0) h.b = st_conf_tensor(at, K, n, 1);
                if (kind == 1) h.b = st_conf_tensor(at, K, 1, 1);
                if (kind == 4) h.b = st_conf_tensor(ST_TYPE_F32, n, 1, 1);
                if (kind < 2 || kind == 4) st_conf_random_tensor(c, &h.b, 4.0f);
                d = h;
                d.a = st_conf_to_device(c, &h.a);
                if (kind < 2 || kind == 4) d.b = st_conf_to_device(c, &h.b);
                st_tensor o = st_conf_tensor(out_t, K, n, 1);
                st_conf_output_pair(c, &o, &h.out, &d.out);
                double err = INFINITY;
                if (!c->alloc_failed && st_conf_run_ok(c, names[kind], dev_fn(c->stream, &d))) {
                    ref_fn(NULL, &h);
                    err = st_conf_compare(c, &d.out, &h.out);
                }
                st_conf_case_end(c, name, err, 1e-10 + act_limit(at) + act_limit(out_t));
            }
        }
}

/* ---- ARGMAX / TOPK ------------------------------------------------------------------- */
void st_conf_topk(st_conf_ctx *c) {
    static const int64_t shapes[][3] = {{1, 7, 1}, {3, 1000, 5}, {2, 151936, 40}, {5, 32000, 64}};
    for (int s = 0; s < 4; s++)
        for (int arg = 0; arg < 2; arg++) {
            int64_t n = shapes[s][0], V = shapes[s][1];
            int32_t k = arg ? 1 : (int32_t)shapes[s][2];
            char name[96];
            snprintf(name, sizeof name, "%s n=%lld V=%lld k=%d", arg ? "argmax" : "topk", (long long)n, (long long)V, k);
            st_status (*fn)(st_stream *, const st_topk_args *) = arg ? c->ops->argmax : c->ops->topk;
            if (!st_conf_claimed(c, (const void *)fn, arg ? ST_OP_ARGMAX : ST_OP_TOPK, ST_TYPE_F32, name)) continue;
            st_topk_args h = {.size = sizeof h, .k = k}, d;
            h.x = st_conf_tensor(ST_TYPE_F32, V, n, 1);
            float *x = st_conf_random_tensor(c, &h.x, 10.0f);
            if (x && V > 7) x[3] = x[5] = 50.0f; /* an exact tie: lower index first */
            h.ids = st_conf_host(c, sizeof(int32_t) * (size_t)(n * k));
            h.values = arg ? NULL : st_conf_host(c, sizeof(float) * (size_t)(n * k));
            d = h;
            d.x = st_conf_to_device(c, &h.x);
            d.ids = st_conf_poisoned(c, sizeof(int32_t) * (size_t)(n * k));
            d.values = arg ? NULL : st_conf_poisoned(c, sizeof(float) * (size_t)(n * k));
            double err = INFINITY;
            if (!c->alloc_failed && st_conf_run_ok(c, name, fn(c->stream, &d))) {
                fn == c->ops->argmax ? c->ref->argmax(NULL, &h) : c->ref->topk(NULL, &h);
                size_t first;
                err = st_conf_compare_i32(c, d.ids, h.ids, (size_t)(n * k), &first) ? INFINITY : 0;
                if (!arg && err == 0) {
                    st_tensor vt = st_conf_tensor(ST_TYPE_F32, k, n, 1), vd = vt;
                    vt.data = h.values;
                    vd.data = d.values;
                    err = st_conf_compare(c, &vd, &vt);
                }
            }
            st_conf_case_end(c, name, err, 1e-12);
        }
}

/* ---- ROUTER -------------------------------------------------------------------------- */
void st_conf_router(st_conf_ctx *c) {
    static const int32_t cfg[][4] = {/* n, experts, k, gating|bias<<1|norm<<2 */
                                     {1, 8, 2, 4},   {7, 64, 8, 4},  {5, 128, 8, 0},
                                     {3, 60, 4, 0},  {4, 256, 8, 7}, {2, 16, 1, 1}};
    for (int i = 0; i < 6; i++) {
        int32_t n = cfg[i][0], E = cfg[i][1], k = cfg[i][2], fl = cfg[i][3];
        char name[96];
        snprintf(name, sizeof name, "router %s n=%d E=%d k=%d%s%s", fl & 1 ? "sigmoid" : "softmax", n, E, k,
                 fl & 2 ? " bias" : "", fl & 4 ? " norm" : "");
        if (!st_conf_claimed(c, (const void *)c->ops->router, ST_OP_ROUTER, ST_TYPE_F32, name)) continue;
        st_router_args h = {.size = sizeof h, .gating = (fl & 1) ? ST_ROUTER_SIGMOID : ST_ROUTER_SOFTMAX,
                            .k = k, .normalize = (fl & 4) != 0, .weight_scale = (fl & 2) ? 2.5f : 1.0f},
                       d;
        h.logits = st_conf_tensor(ST_TYPE_F32, E, n, 1);
        st_conf_random_tensor(c, &h.logits, 4.0f);
        float *bias = NULL;
        if (fl & 2) {
            bias = st_conf_host(c, sizeof(float) * (size_t)E);
            for (int e = 0; e < E; e++) bias[e] = st_conf_randf(c, -0.5f, 0.5f);
        }
        h.bias = bias;
        h.ids = st_conf_host(c, sizeof(int32_t) * (size_t)(n * k));
        h.weights = st_conf_host(c, sizeof(float) * (size_t)(n * k));
        d = h;
        d.logits = st_conf_to_device(c, &h.logits);
        d.bias = bias ? st_conf_upload(c, bias, sizeof(float) * (size_t)E) : NULL;
        d.ids = st_conf_poisoned(c, sizeof(int32_t) * (size_t)(n * k));
        d.weights = st_conf_poisoned(c, sizeof(float) * (size_t)(n * k));
        double err = INFINITY;
        if (!c->alloc_failed && st_conf_run_ok(c, "router", c->ops->router(c->stream, &d))) {
            c->ref->router(NULL, &h);
            size_t first;
            if (!st_conf_compare_i32(c, d.ids, h.ids, (size_t)(n * k), &first)) {
                st_tensor vt = st_conf_tensor(ST_TYPE_F32, k, n, 1), vd = vt;
                vt.data = h.weights;
                vd.data = d.weights;
                err = st_conf_compare(c, &vd, &vt);
            }
        }
        st_conf_case_end(c, name, err, 1e-9);
    }
}
