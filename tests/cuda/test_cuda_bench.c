/* SPDX-License-Identifier: Apache-2.0 */
/* Rough timings on device 0 (wall clock around repeated launches and a stream sync): GEMV
 * bandwidth for decode, GEMM throughput for prefill, MoE decode, split attention. Numbers are
 * printed, not asserted; each case still checks its op returned ST_OK. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cuda_harness.h"
#include "quant/quant.h"
#include "ref/ref.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Device tensor of `type` with uninitialised contents (timing only). */
static st_tensor dev_blank(tc_ctx *c, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2) {
    st_tensor t = st_ref_tensor_3d(NULL, type, ne0, ne1, ne2);
    t.data = tc_up(c, NULL, tc_bytes(&t));
    if (t.data) c->api->memset_d(c->s, t.data, 0, tc_bytes(&t));
    return t;
}

static void bench_matmul(tc_ctx *c, uint32_t wt, int64_t M, int64_t K, int64_t n, int iters) {
    st_matmul_args a = {.size = sizeof a, .w = dev_blank(c, wt, K, M, 1), .x = dev_blank(c, ST_TYPE_F32, K, n, 1),
                        .out = dev_blank(c, ST_TYPE_F32, M, n, 1)};
    if (!a.w.data || !a.x.data || !a.out.data) return;
    st_status st = c->api->ops->matmul(c->s, &a);
    c->api->stream_sync(c->s);
    double t0 = now_s();
    for (int i = 0; i < iters && st == ST_OK; i++) st = c->api->ops->matmul(c->s, &a);
    if (st == ST_OK) st = c->api->stream_sync(c->s);
    double dt = (now_s() - t0) / iters;
    if (!tc_status(c, "bench matmul", st)) return;
    double bytes = (double)tc_bytes(&a.w);
    printf("BENCH matmul %s M=%lld K=%lld n=%lld: %.1f us, weights %.1f GB/s, %.2f TFLOP/s\n", st_type_name(wt),
           (long long)M, (long long)K, (long long)n, dt * 1e6, bytes / dt / 1e9, 2.0 * M * K * n / dt / 1e12);
}

static void bench_moe(tc_ctx *c, uint32_t wt, int n_assign, int n_slots, int64_t M, int64_t K, int iters) {
    int32_t *table = malloc(sizeof(int32_t) * n_slots), *ex = malloc(sizeof(int32_t) * n_assign),
            *xr = malloc(sizeof(int32_t) * n_assign);
    for (int i = 0; i < n_slots; i++) table[i] = i;
    for (int a = 0; a < n_assign; a++) {
        ex[a] = (a * 37) % n_slots;
        xr[a] = a / 8;
    }
    st_moe_matmul_args a = {.size = sizeof a, .n_assign = n_assign, .w = dev_blank(c, wt, K, M, n_slots),
                            .x = dev_blank(c, ST_TYPE_F32, K, (n_assign + 7) / 8, 1),
                            .out = dev_blank(c, ST_TYPE_F32, M, n_assign, 1)};
    a.slot_table = tc_up(c, table, sizeof(int32_t) * n_slots);
    a.expert = tc_up(c, ex, sizeof(int32_t) * n_assign);
    a.x_row = tc_up(c, xr, sizeof(int32_t) * n_assign);
    free(table);
    free(ex);
    free(xr);
    if (!a.w.data) return;
    st_status st = c->api->ops->moe_matmul(c->s, &a);
    c->api->stream_sync(c->s);
    double t0 = now_s();
    for (int i = 0; i < iters && st == ST_OK; i++) st = c->api->ops->moe_matmul(c->s, &a);
    if (st == ST_OK) st = c->api->stream_sync(c->s);
    double dt = (now_s() - t0) / iters;
    if (!tc_status(c, "bench moe_matmul", st)) return;
    int used = n_assign < n_slots ? n_assign : n_slots;
    double bytes = (double)st_row_size(wt, K) * M * used;
    printf("BENCH moe_matmul %s %d assignments over %d slots M=%lld K=%lld: %.1f us, touched experts %.1f GB/s, "
           "%.2f TFLOP/s\n", st_type_name(wt), n_assign, n_slots, (long long)M, (long long)K, dt * 1e6,
           bytes / dt / 1e9, 2.0 * M * K * n_assign / dt / 1e12);
}

static void bench_attention(tc_ctx *c, int n, int len, int nh, int nkv, int hd, int iters) {
    int max_pos = len;
    st_attention_args a = {.size = sizeof a, .scale = 0.088f, .q = dev_blank(c, ST_TYPE_F32, hd, nh, n),
                           .k_cache = dev_blank(c, ST_TYPE_F16, hd, nkv, len),
                           .v_cache = dev_blank(c, ST_TYPE_F16, hd, nkv, len),
                           .out = dev_blank(c, ST_TYPE_F32, hd, nh, n), .max_pos = max_pos};
    int32_t *table = malloc(sizeof(int32_t) * max_pos), *seq = calloc(n, sizeof(int32_t)), *kvl = malloc(sizeof(int32_t) * n);
    for (int i = 0; i < max_pos; i++) table[i] = i;
    for (int i = 0; i < n; i++) kvl[i] = len - n + 1 + i;
    a.cell_table = tc_up(c, table, sizeof(int32_t) * max_pos);
    a.seq = tc_up(c, seq, sizeof(int32_t) * n);
    a.kv_len = tc_up(c, kvl, sizeof(int32_t) * n);
    free(table);
    free(seq);
    free(kvl);
    st_status st = c->api->ops->attention(c->s, &a);
    c->api->stream_sync(c->s);
    double t0 = now_s();
    for (int i = 0; i < iters && st == ST_OK; i++) st = c->api->ops->attention(c->s, &a);
    if (st == ST_OK) st = c->api->stream_sync(c->s);
    double dt = (now_s() - t0) / iters;
    if (!tc_status(c, "bench attention", st)) return;
    double bytes = 2.0 * len * nkv * hd * 2;
    printf("BENCH attention n=%d len=%d heads %d/%d hd=%d F16 cache: %.1f us, KV %.1f GB/s\n", n, len, nh, nkv, hd,
           dt * 1e6, bytes / dt / 1e9);
}

void tc_bench(tc_ctx *c) {
    bench_matmul(c, ST_TYPE_Q4_K, 32768, 8192, 1, 20);
    bench_matmul(c, ST_TYPE_Q4_K, 32768, 8192, 2, 20);
    bench_matmul(c, ST_TYPE_Q4_K, 32768, 8192, 8, 20);
    bench_matmul(c, ST_TYPE_Q8_0, 32768, 8192, 1, 20);
    bench_matmul(c, ST_TYPE_Q6_K, 32768, 8192, 1, 20);
    bench_matmul(c, ST_TYPE_Q5_K, 32768, 8192, 1, 20);
    bench_matmul(c, ST_TYPE_Q4_0, 32768, 8192, 1, 20);
    bench_matmul(c, ST_TYPE_F16, 16384, 8192, 1, 20);
    bench_matmul(c, ST_TYPE_BF16, 16384, 8192, 1, 20);
    /* qwen3-30b-a3b decode shapes: q, k/v, o projections */
    bench_matmul(c, ST_TYPE_Q4_K, 4096, 2048, 1, 200);
    bench_matmul(c, ST_TYPE_Q4_K, 512, 2048, 1, 200);
    bench_matmul(c, ST_TYPE_Q4_K, 2048, 4096, 1, 200);
    bench_moe(c, ST_TYPE_Q4_K, 8, 128, 768, 2048, 200);
    bench_moe(c, ST_TYPE_Q4_K, 8, 128, 2048, 768, 200);
    bench_matmul(c, ST_TYPE_Q4_K, 4096, 4096, 512, 5);
    bench_matmul(c, ST_TYPE_F16, 4096, 4096, 512, 5);
    bench_moe(c, ST_TYPE_Q4_K, 8, 64, 2048, 7168, 20);
    bench_moe(c, ST_TYPE_Q4_K, 64, 64, 2048, 7168, 20);
    bench_moe(c, ST_TYPE_Q4_K, 4096, 64, 2048, 7168, 3);
    bench_attention(c, 1, 8192, 32, 8, 128, 20);
    bench_attention(c, 1, 32768, 64, 8, 128, 20);
    bench_attention(c, 16, 4096, 32, 8, 128, 10);
}
