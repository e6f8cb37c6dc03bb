/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA vs core/ref: ADD (broadcast, in place), SCALE, CONVERT, MUL_ROWS, ARGMAX, TOPK (ties and
 * NaN); module services: graph capture/replay, OOM text, invalid arguments refused, pinned and
 * registered host memory, memset, events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_harness.h"
#include "quant/quant.h"
#include "ref/ref.h"

typedef st_status (*bin_fn)(st_stream *, const st_binary_args *);
typedef st_status (*ref_bin_fn)(const st_binary_args *);

static void test_binary(tc_ctx *c, const char *what, bin_fn f, ref_bin_fn rf, uint32_t at, uint32_t ot, int64_t bn,
                        int in_place) {
    int64_t K = 333, n = 7;
    st_tensor a = tc_host_rand(at, K, n, 1, -3, 3);
    st_tensor b = strcmp(what, "mul_rows") == 0 ? tc_host_rand(ST_TYPE_F32, n, 1, 1, -3, 3)
                                                : tc_host_rand(at, K, bn, 1, -3, 3);
    st_tensor out = tc_host_fill(ot, K, n, 1, 1.0f);
    st_tensor da_ = tc_dev_tensor(c, &a), db = tc_dev_tensor(c, &b), dout = tc_dev_tensor(c, &out);
    st_binary_args ha = {.size = sizeof ha, .s = 0.37f, .a = a, .b = b, .out = out, .sigmoid = 1};
    st_binary_args dargs = ha;
    dargs.a = da_;
    dargs.b = db;
    dargs.out = in_place ? da_ : dout;
    char name[128];
    snprintf(name, sizeof name, "%s %s -> %s%s%s", what, st_type_name(at), st_type_name(ot),
             bn == 1 ? " broadcast" : "", in_place ? " in place" : "");
    if (rf(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, f(c->s, &dargs)))
        tc_compare(c, name, &out, &dargs.out, ot == ST_TYPE_F32 ? 1e-6 : (ot == ST_TYPE_F16 ? 1e-3 : 8e-3));
    free(a.data);
    free(b.data);
    free(out.data);
}

static void test_select(tc_ctx *c, int argmax, int64_t V, int k, int64_t n, int nans) {
    st_tensor x = st_ref_tensor_2d(NULL, ST_TYPE_F32, V, n);
    float *xv = malloc(sizeof(float) * (size_t)(V * n));
    for (int64_t i = 0; i < V * n; i++) xv[i] = floorf(tc_rand(0, 50)); /* many ties */
    if (nans)
        for (int64_t r = 0; r < n; r++) {
            xv[r * V + 3] = NAN;
            xv[r * V + V - 1] = -INFINITY;
        }
    if (nans && n > 1)
        for (int64_t i = 0; i < V; i++) xv[V + i] = NAN; /* an all-NaN row */
    x.data = xv;
    int kk = argmax ? 1 : k;
    int32_t *ids = calloc((size_t)(n * kk), sizeof(int32_t));
    float *vals = calloc((size_t)(n * kk), sizeof(float));
    st_tensor dx = tc_dev_tensor(c, &x);
    st_topk_args ha = {.size = sizeof ha, .k = k, .x = x, .ids = ids, .values = vals};
    st_topk_args da = {.size = sizeof da, .k = k, .x = dx};
    da.ids = tc_up(c, NULL, sizeof(int32_t) * (size_t)(n * kk));
    da.values = tc_up(c, NULL, sizeof(float) * (size_t)(n * kk));
    char name[96];
    snprintf(name, sizeof name, "%s V=%lld k=%d n=%lld%s", argmax ? "argmax" : "topk", (long long)V, kk, (long long)n,
             nans ? " with NaN/-inf" : "");
    st_status rs = argmax ? st_ref_argmax(&ha) : st_ref_topk(&ha);
    if (rs != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    st_status ds = argmax ? c->api->ops->argmax(c->s, &da) : c->api->ops->topk(c->s, &da);
    if (tc_status(c, name, ds)) {
        char n2[128];
        snprintf(n2, sizeof n2, "%s ids", name);
        tc_compare_i32(c, n2, ids, da.ids, (size_t)(n * kk));
        snprintf(n2, sizeof n2, "%s values", name);
        tc_compare_f32(c, n2, vals, da.values, (size_t)(n * kk), 0);
    }
    free(xv);
    free(ids);
    free(vals);
}

/* Capture matmul + add into a graph, replay after changing the input; compare with ref. */
static void test_graph(tc_ctx *c) {
    const st_backend_api *api = c->api;
    if (!api->graph_begin) {
        tc_fail(c, "graph: slots are NULL");
        return;
    }
    int64_t K = 256, M = 64, n = 2;
    st_tensor w = tc_host_rand(ST_TYPE_Q4_K, K, M, 1, -1, 1), x = tc_host_rand(ST_TYPE_F32, K, n, 1, -1, 1);
    st_tensor bias = tc_host_rand(ST_TYPE_F32, M, 1, 1, -1, 1), out = tc_host_fill(ST_TYPE_F32, M, n, 1, 0);
    st_tensor dw = tc_dev_tensor(c, &w), dx = tc_dev_tensor(c, &x), db = tc_dev_tensor(c, &bias),
              dout = tc_dev_tensor(c, &out);
    st_matmul_args dm = {.size = sizeof dm, .w = dw, .x = dx, .out = dout};
    st_binary_args dadd = {.size = sizeof dadd, .a = dout, .b = db, .out = dout};
    st_graph *g = NULL;
    int ok = tc_status(c, "graph_begin", api->graph_begin(c->s));
    if (ok) {
        api->ops->matmul(c->s, &dm);
        api->ops->add(c->s, &dadd);
        ok = tc_status(c, "graph_end", api->graph_end(c->s, &g));
    }
    for (int rep = 0; ok && rep < 2; rep++) {
        tc_fill(x.data, (size_t)(K * n), -1, 1);
        api->copy_h2d(c->s, dx.data, x.data, tc_bytes(&x));
        if (!tc_status(c, "graph_launch", api->graph_launch(g, c->s))) break;
        st_matmul_args hm = {.size = sizeof hm, .w = w, .x = x, .out = out};
        st_binary_args hadd = {.size = sizeof hadd, .a = out, .b = bias, .out = out};
        st_ref_matmul(&hm);
        st_ref_add(&hadd);
        char name[64];
        snprintf(name, sizeof name, "graph replay %d (matmul + add)", rep);
        /* Q4_K at n = 1 takes the decode GEMV, whose activations are quantized to 8 bits */
        tc_compare(c, name, &out, &dout, 1e-2);
    }
    if (g) tc_status(c, "graph_destroy", api->graph_destroy(g));
    free(w.data);
    free(x.data);
    free(bias.data);
    free(out.data);
}

static void test_services(tc_ctx *c) {
    const st_backend_api *api = c->api;
    void *p = NULL;
    st_status st = api->mem_alloc(c->dev, 1ull << 50, &p);
    const char *e = api->last_error();
    if (st == ST_OOM && strstr(e, "out of memory") && strstr(e, "CUDA0") && strstr(e, "free"))
        tc_pass(c, "mem_alloc 1 PiB -> ST_OOM \"%s\"", e);
    else
        tc_fail(c, "mem_alloc 1 PiB: status %d, text \"%s\"", (int)st, e);
    st_matmul_args bad = {.size = sizeof bad};
    st = api->ops->matmul(c->s, &bad);
    if (st == ST_INVALID || st == ST_UNSUPPORTED) tc_pass(c, "matmul with empty args refused: \"%s\"", api->last_error());
    else tc_fail(c, "matmul with empty args: status %d", (int)st);
    if (api->stream_sync(c->s) == ST_OK) tc_pass(c, "stream still usable after refused op");
    else tc_fail(c, "stream_sync after refused op: %s", api->last_error());
    /* pinned host memory, registration, memset, events */
    void *h = NULL;
    if (tc_status(c, "host_alloc", api->host_alloc(c->dev, 1 << 20, &h))) {
        uint8_t *d = tc_up(c, NULL, 1 << 20);
        api->memset_d(c->s, d, 0xAB, 1 << 20);
        st_event *ev = NULL;
        api->event_create(c->dev, &ev);
        api->event_record(ev, c->s);
        api->copy_d2h(c->s, h, d, 1 << 20);
        int ok = tc_status(c, "event_sync", api->event_sync(ev)) && tc_status(c, "stream_sync", api->stream_sync(c->s));
        size_t badb = 0;
        for (size_t i = 0; i < (1u << 20); i++) badb += ((uint8_t *)h)[i] != 0xAB;
        if (ok && !badb) tc_pass(c, "memset + d2h into pinned memory");
        else tc_fail(c, "memset + d2h: %zu wrong bytes", badb);
        api->event_destroy(ev);
        tc_status(c, "host_free", api->host_free(c->dev, h));
    }
    size_t rb = 4u << 20;
    void *reg = aligned_alloc(4096, rb);
    memset(reg, 1, rb);
    st = api->host_register(c->dev, reg, rb);
    if (st == ST_OK) {
        tc_pass(c, "host_register 4 MiB");
        tc_status(c, "host_unregister", api->host_unregister(c->dev, reg));
    } else {
        tc_fail(c, "host_register 4 MiB: %s", api->last_error());
    }
    free(reg);
    uint64_t fr = 0, tot = 0;
    if (tc_status(c, "mem_info", api->mem_info(c->dev, &fr, &tot)) && tot > 0 && fr <= tot)
        tc_pass(c, "mem_info free %.1f of %.1f GiB", fr / 1073741824.0, tot / 1073741824.0);
}

void tc_test_misc_ops(tc_ctx *c) {
    const st_backend_ops *o = c->api->ops;
    test_binary(c, "add", o->add, st_ref_add, ST_TYPE_F32, ST_TYPE_F32, 7, 0);
    test_binary(c, "add", o->add, st_ref_add, ST_TYPE_F32, ST_TYPE_F32, 1, 1);
    test_binary(c, "add", o->add, st_ref_add, ST_TYPE_F16, ST_TYPE_F16, 1, 0);
    test_binary(c, "scale", o->scale, st_ref_scale, ST_TYPE_F32, ST_TYPE_F32, 1, 1);
    test_binary(c, "scale", o->scale, st_ref_scale, ST_TYPE_BF16, ST_TYPE_F32, 1, 0);
    test_binary(c, "convert", o->convert, st_ref_convert, ST_TYPE_F32, ST_TYPE_F16, 1, 0);
    test_binary(c, "convert", o->convert, st_ref_convert, ST_TYPE_F32, ST_TYPE_BF16, 1, 0);
    test_binary(c, "convert", o->convert, st_ref_convert, ST_TYPE_BF16, ST_TYPE_F32, 1, 0);
    test_binary(c, "mul_rows", o->mul_rows, st_ref_mul_rows, ST_TYPE_F32, ST_TYPE_F32, 1, 1);
    test_binary(c, "mul_rows", o->mul_rows, st_ref_mul_rows, ST_TYPE_F16, ST_TYPE_F32, 1, 0);
    test_select(c, 1, 1000, 1, 4, 0);
    test_select(c, 1, 152064, 1, 3, 1);
    test_select(c, 0, 50000, 40, 3, 0);
    /* vocabulary rows: the two-pass top-k (slices, then their candidates), ties and NaN rows */
    test_select(c, 0, 151936, 40, 12, 1);
    test_select(c, 0, 152064, 256, 2, 1);
    test_select(c, 0, 20000, 2, 5, 0);
    test_select(c, 0, 100, 100, 2, 1);
}

void tc_test_misc(tc_ctx *c) {
    tc_test_misc_ops(c);
    test_graph(c);
    test_services(c);
}

/* An op that faults on the device (weights at a bogus address): the launch is accepted, the
 * failure surfaces at stream_sync as ST_DEVICE_LOST naming the op and the device, and nothing
 * ends the process. Leaves the context unusable: run it last, alone. */
void tc_test_fault(tc_ctx *c) {
    st_tensor x = tc_host_rand(ST_TYPE_F32, 256, 1, 1, -1, 1), out = tc_host_fill(ST_TYPE_F32, 4096, 1, 1, 0);
    st_tensor dx = tc_dev_tensor(c, &x), dout = tc_dev_tensor(c, &out);
    st_tensor w = st_ref_tensor_2d((void *)(uintptr_t)0x10, ST_TYPE_Q4_K, 256, 4096);
    st_matmul_args a = {.size = sizeof a, .w = w, .x = dx, .out = dout};
    st_status st = c->api->ops->matmul(c->s, &a);
    st_status ss = c->api->stream_sync(c->s);
    const char *e = c->api->last_error();
    printf("launch status %d, stream_sync status %d: %s\n", (int)st, (int)ss, e);
    if (ss != ST_OK && strstr(e, "matmul") && strstr(e, "CUDA0"))
        tc_pass(c, "device fault reported at stream_sync with op and device named");
    else
        tc_fail(c, "device fault: sync status %d, text \"%s\"", (int)ss, e);
    free(x.data);
    free(out.data);
}
