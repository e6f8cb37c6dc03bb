/* SPDX-License-Identifier: Apache-2.0 */
/* Micro-benchmark of the CPU module's GEMV (not a test): loads a module file, times MATMUL of
 * a random weight matrix of each common type (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, Q5_0, IQ4_XS,
 * F16) by 1..8 activation rows and prints the
 * weight bytes streamed per second. Usage: bench_matmul <module.so> [threads] [M] [K] [iters] [copies of W, 0 = exceed the caches] */
#include <time.h>

#include "cpu_test_util.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of the whole process: on a shared machine wall time overstates the cost. */
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <module.so> [threads] [M=4096] [K=2048] [iters=200] [copies]\n", argv[0]);
        return 2;
    }
    unsigned threads = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
    int64_t M = argc > 3 ? atoll(argv[3]) : 4096, K = argc > 4 ? atoll(argv[4]) : 2048;
    int iters = argc > 5 ? atoi(argv[5]) : 200;
    int want_copies = argc > 6 ? atoi(argv[6]) : 0; /* 0: enough copies to exceed the caches */
    ct_module m = {0};
    if (!ct_load(&m, argv[1], threads)) return 1;
    const st_backend_api *api = m.api;
    st_device *dev;
    st_stream *s;
    if (api->device_open(0, &dev) != ST_OK || api->stream_create(dev, &s) != ST_OK) {
        fprintf(stderr, "open: %s\n", api->last_error());
        return 1;
    }
    static const uint32_t types[] = {ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_Q8_0, ST_TYPE_Q4_0, ST_TYPE_Q5_0, ST_TYPE_IQ4_XS, ST_TYPE_F16};
    static const int64_t ns[] = {1, 2, 4, 8};
    float *row = malloc(sizeof(float) * (size_t)K);
    float *x = malloc(sizeof(float) * (size_t)(K * 8)), *out = malloc(sizeof(float) * (size_t)(M * 8));
    ct_fill(x, K * 8, 1.0f);
    printf("M=%lld K=%lld threads=%u\n", (long long)M, (long long)K, threads);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        size_t rs = st_row_size(types[t], K);
        /* several copies so the working set exceeds the last-level cache */
        int copies = (int)(512.0 * 1048576 / (double)(rs * (size_t)M)) + 1;
        if (copies > 16) copies = 16;
        if (want_copies > 0) copies = want_copies;
        uint8_t *w = malloc(rs * (size_t)M * (size_t)copies);
        for (int64_t r = 0; r < M * copies; r++) {
            ct_fill(row, K, 1.0f);
            st_quantize_row(types[t], row, w + rs * (size_t)r, K);
        }
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            st_matmul_args a = {.size = sizeof a};
            a.w = ct_tensor(w, types[t], K, M, 1);
            a.x = ct_tensor(x, ST_TYPE_F32, K, ns[ni], 1);
            a.out = ct_tensor(out, ST_TYPE_F32, M, ns[ni], 1);
            for (int c = 0; c < copies; c++) { /* warm-up (and a module's first-use repack) */
                a.w.data = w + rs * (size_t)M * (size_t)c;
                api->ops->matmul(s, &a);
            }
            double t0 = now_s(), c0 = cpu_s();
            for (int it = 0; it < iters; it++) {
                a.w.data = w + rs * (size_t)M * (size_t)(it % copies);
                if (api->ops->matmul(s, &a) != ST_OK) {
                    fprintf(stderr, "matmul: %s\n", api->last_error());
                    return 1;
                }
            }
            double dt = (now_s() - t0) / iters, ct = (cpu_s() - c0) / iters;
            double gb = (double)rs * (double)M / dt / 1e9;
            /* per-core rate from CPU time: what one core sustains when it is not preempted */
            double gb_core = (double)rs * (double)M / ct / 1e9;
            printf("%-5s n=%lld  %8.1f us  %6.2f GB/s wall  %6.2f GB/s per core-second  (%.2f GFLOP/s)\n",
                   st_type_name(types[t]), (long long)ns[ni], dt * 1e6, gb, gb_core,
                   2.0 * (double)M * (double)K * (double)ns[ni] / dt / 1e9);
        }
        free(w);
    }
    /* MoE decode: 64 expert slots of [512][1024] Q4_K (the bench-moe-1.5g FFN), 8 experts per
     * token; bytes = the distinct experts touched. Also the per-call cost of a tiny matmul. */
    {
        const int64_t E = 64, EM = 512, EK = 1024;
        size_t rs = st_row_size(ST_TYPE_Q4_K, EK);
        uint8_t *w = malloc(rs * (size_t)(E * EM));
        for (int64_t r = 0; r < E * EM; r++) {
            ct_fill(row, EK, 1.0f);
            st_quantize_row(ST_TYPE_Q4_K, row, w + rs * (size_t)r, EK);
        }
        int32_t table[64], expert[64], xrow[64];
        for (int i = 0; i < 64; i++) table[i] = i;
        float *mo = malloc(sizeof(float) * (size_t)(64 * EM));
        for (int tok = 1; tok <= 4; tok *= 2) {
            int na = 8 * tok;
            for (int i = 0; i < na; i++) {
                expert[i] = (int32_t)(ct_rand_u32() % E);
                xrow[i] = i / 8;
            }
            int touched = 0;
            for (int e = 0; e < E; e++)
                for (int i = 0; i < na; i++)
                    if (expert[i] == e) {
                        touched++;
                        break;
                    }
            st_moe_matmul_args a = {.size = sizeof a, .n_assign = na};
            a.w = ct_tensor(w, ST_TYPE_Q4_K, EK, EM, E);
            a.x = ct_tensor(x, ST_TYPE_F32, EK, tok, 1);
            a.out = ct_tensor(mo, ST_TYPE_F32, EM, na, 1);
            a.slot_table = table;
            a.expert = expert;
            a.x_row = xrow;
            api->ops->moe_matmul(s, &a);
            double t0 = now_s();
            for (int it = 0; it < iters; it++) api->ops->moe_matmul(s, &a);
            double dt = (now_s() - t0) / iters;
            printf("MoE Q4_K %d tok x 8 experts (%d distinct)  %8.1f us  %6.2f GB/s\n", tok, touched, dt * 1e6,
                   (double)rs * (double)EM * touched / dt / 1e9);
        }
        st_matmul_args a = {.size = sizeof a};
        a.w = ct_tensor(w, ST_TYPE_Q4_K, EK, 16, 1);
        a.x = ct_tensor(x, ST_TYPE_F32, EK, 1, 1);
        a.out = ct_tensor(mo, ST_TYPE_F32, 16, 1, 1);
        double t0 = now_s();
        for (int it = 0; it < iters * 10; it++) api->ops->matmul(s, &a);
        printf("tiny matmul [16][1024] Q4_K: %.2f us per call\n", (now_s() - t0) / (iters * 10) * 1e6);
        free(mo);
        free(w);
    }
    api->stream_destroy(s);
    api->device_close(dev);
    api->shutdown();
    return 0;
}
