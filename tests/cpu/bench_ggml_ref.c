/* SPDX-License-Identifier: Apache-2.0 */
/* The same GEMV timings as bench_matmul, run by llama.cpp's CPU backend (ggml, loaded from the
 * reference cache) so both are measured on the same machine at the same time. Not a test; a
 * speed rival only (no llama.cpp code is part of Strata).
 * Usage: bench_ggml_ref <ggml lib dir> [threads] [M] [K] [iters] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "quant/quant.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float randf(void) { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }

/* Time out = W x for one weight type; `buft` NULL = the backend's default buffer. */
static void run(ggml_backend_t be, ggml_backend_buffer_type_t buft, const char *label, enum ggml_type gt,
                uint32_t st, int64_t M, int64_t K, int64_t n, int iters) {
    struct ggml_init_params ip = {ggml_tensor_overhead() * 8 + ggml_graph_overhead() + 4096, NULL, true};
    struct ggml_context *wctx = ggml_init(ip), *ctx = ggml_init(ip);
    struct ggml_tensor *w = ggml_new_tensor_2d(wctx, gt, K, M);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, n);
    struct ggml_tensor *y = ggml_mul_mat(ctx, w, x);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    ggml_backend_buffer_t wbuf = buft ? ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft)
                                      : ggml_backend_alloc_ctx_tensors(wctx, be);
    ggml_backend_buffer_t abuf = ggml_backend_alloc_ctx_tensors(ctx, be);
    if (!wbuf || !abuf) {
        printf("%s: allocation failed\n", label);
        return;
    }
    if (buft) ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    size_t rs = st_row_size(st, K);
    uint8_t *wd = malloc(rs * (size_t)M);
    float *row = malloc(sizeof(float) * (size_t)K);
    for (int64_t r = 0; r < M; r++) {
        for (int64_t i = 0; i < K; i++) row[i] = randf();
        st_quantize_row(st, row, wd + rs * (size_t)r, K);
    }
    ggml_backend_tensor_set(w, wd, 0, rs * (size_t)M);
    float *xd = malloc(sizeof(float) * (size_t)(K * n));
    for (int64_t i = 0; i < K * n; i++) xd[i] = randf();
    ggml_backend_tensor_set(x, xd, 0, sizeof(float) * (size_t)(K * n));
    ggml_backend_graph_compute(be, gf);
    double t0 = now_s(), c0 = cpu_s();
    for (int it = 0; it < iters; it++) ggml_backend_graph_compute(be, gf);
    double dt = (now_s() - t0) / iters, ct = (cpu_s() - c0) / iters;
    printf("ggml %-6s %-5s n=%lld  %8.1f us  %6.2f GB/s wall  %6.2f GB/s per core-second\n", label, ggml_type_name(gt),
           (long long)n, dt * 1e6, (double)rs * (double)M / dt / 1e9, (double)rs * (double)M / ct / 1e9);
    free(wd);
    free(row);
    free(xd);
    ggml_backend_buffer_free(wbuf);
    ggml_backend_buffer_free(abuf);
    ggml_free(wctx);
    ggml_free(ctx);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <ggml lib dir> [threads] [M] [K] [iters]\n", argv[0]);
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    int64_t M = argc > 3 ? atoll(argv[3]) : 4096, K = argc > 4 ? atoll(argv[4]) : 2048;
    int iters = argc > 5 ? atoi(argv[5]) : 100;
    setvbuf(stdout, NULL, _IOLBF, 0);
    ggml_backend_load_all_from_path(argv[1]);
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!dev) {
        fprintf(stderr, "no ggml CPU device\n");
        return 1;
    }
    ggml_backend_t be = ggml_backend_dev_init(dev, NULL);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    ggml_backend_set_n_threads_t set_threads =
        (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (set_threads) set_threads(be, threads);
    /* a persistent thread pool, as llama.cpp's tools attach one */
    typedef struct ggml_threadpool *(*tp_new_fn)(struct ggml_threadpool_params *);
    typedef void (*tp_set_fn)(ggml_backend_t, struct ggml_threadpool *);
    tp_new_fn tp_new = (tp_new_fn)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
    tp_set_fn tp_set = (tp_set_fn)ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool");
    if (tp_new && tp_set) {
        struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
        struct ggml_threadpool *tp = tp_new(&tpp);
        if (tp) tp_set(be, tp);
        printf("ggml thread pool: %s\n", tp ? "attached" : "failed");
    }
    ggml_backend_dev_get_extra_bufts_t get_extra =
        (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    ggml_backend_buffer_type_t repack = NULL;
    if (get_extra) {
        ggml_backend_buffer_type_t *b = get_extra(dev);
        for (; b && *b; b++)
            if (strstr(ggml_backend_buft_name(*b), "REPACK")) repack = *b;
    }
    printf("ggml CPU: %s, threads=%d, M=%lld K=%lld, repack buffer: %s\n", ggml_backend_dev_description(dev), threads,
           (long long)M, (long long)K, repack ? ggml_backend_buft_name(repack) : "none");
    static const int64_t ns[] = {1, 8};
    for (size_t i = 0; i < 2; i++) {
        run(be, NULL, "plain", GGML_TYPE_Q4_K, ST_TYPE_Q4_K, M, K, ns[i], iters);
        if (repack) run(be, repack, "repack", GGML_TYPE_Q4_K, ST_TYPE_Q4_K, M, K, ns[i], iters);
        run(be, NULL, "plain", GGML_TYPE_Q8_0, ST_TYPE_Q8_0, M, K, ns[i], iters);
    }
    ggml_backend_free(be);
    return 0;
}
