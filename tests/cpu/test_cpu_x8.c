/* SPDX-License-Identifier: Apache-2.0 */
/* cpu.x8_kernels.<isa>: the x8 group kernels (8 interleaved weight rows, cpu_kernels.h) of the
 * x86 table against the portable oracle (kernels_x8.c) and the scalar row kernels:
 *  - the ISA's repack gives the oracle's bytes;
 *  - the ISA's group dot gives the oracle's bits for every activation row count 1..8 (so a
 *    row's result does not depend on the batch) and for K long enough to be prepared in pieces;
 *  - both agree with the scalar vec_dot on the original rows within a float-rounding bound.
 * Built with the AVX2 and the AVX-512 kernels (ST_TEST_AVX512). */
#include "check.h"
#include "cpu/cpu_kernels.h"
#include "cpu_test_util.h"

int g_fail;

void st_x86_kernels_init(st_cpu_kernels *k);

static st_cpu_kernels ksc, kx;

enum { NG = 3, ROWS = 8 * NG, NR = ST_CPU_MAX_NR };

#ifdef ST_TEST_AVX512
/* This build's Q4_K activations store the sub-blocks 0 2 1 3 4 6 5 7 (the kernel test checks
 * it): the scalar kernels get the standard order. */
static void q4k_unpermute(uint8_t *q, int64_t nblocks) {
    static const int pos[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    for (int64_t b = 0; b < nblocks; b++) {
        st_block_q8_K *y = (st_block_q8_K *)(q + (size_t)b * sizeof(st_block_q8_K)), t = *y;
        for (int i = 0; i < 8; i++) {
            memcpy(y->qs + 32 * i, t.qs + 32 * pos[i], 32);
            y->bsums[2 * i] = t.bsums[2 * pos[i]];
            y->bsums[2 * i + 1] = t.bsums[2 * pos[i] + 1];
        }
    }
}
#endif

typedef struct x8_case {
    uint32_t wt;
    st_cpu_repack8_fn repack_ref;
    st_cpu_dot8_fn dot_ref;
} x8_case;

static void check_dots(const x8_case *c, int64_t K, const uint8_t *w, size_t wr, const uint8_t *wp,
                       const uint8_t *qx, const uint8_t *qs, size_t xr, const float *wf, const float *xf) {
    const st_cpu_weight_kernels *x = &kx.wt[c->wt];
    float *sx = malloc(sizeof(float) * ROWS * NR), *so = malloc(sizeof(float) * ROWS * NR);
    for (int nr = 1; nr <= NR; nr++) {
        x->dot8(K, wp, NG, qx, xr, nr, sx, NR);
        c->dot_ref(K, wp, NG, qs, xr, nr, so, NR);
        for (int r = 0; r < ROWS; r++)
            for (int j = 0; j < nr; j++)
                CHECK(!memcmp(&sx[r * NR + j], &so[r * NR + j], sizeof(float)),
                      "%s K=%lld nr=%d row %d act %d: isa %.9g oracle %.9g", st_type_name(c->wt), (long long)K, nr, r, j,
                      sx[r * NR + j], so[r * NR + j]);
    }
    /* against the row kernel on the original rows: the same value up to rounding */
    for (int r = 0; r < ROWS; r++) {
        float d[NR];
        ksc.wt[c->wt].vec_dot(K, w + (size_t)r * wr, qs, xr, NR, d);
        for (int j = 0; j < NR; j++) {
            double bound = 0;
            for (int64_t i = 0; i < K; i++) bound += fabs((double)wf[(size_t)r * K + i] * xf[(size_t)j * K + i]);
            CHECK(fabs((double)d[j] - sx[r * NR + j]) <= 2e-5 * bound + 1e-30, "%s K=%lld row %d act %d: vec_dot %.9g x8 %.9g",
                  st_type_name(c->wt), (long long)K, r, j, d[j], sx[r * NR + j]);
        }
    }
    free(sx);
    free(so);
}

/* Repack and dot the ROWS weight rows at w (row bytes wr) against the NR activation rows xf
 * (floats, quantized here by both tables), checking the layout and the dots. */
static void run_case(const x8_case *c, int64_t K, const uint8_t *w, const float *xf) {
    const st_cpu_weight_kernels *x = &kx.wt[c->wt];
    size_t wr = st_row_size(c->wt, K), xr = st_row_size(x->vec_type, K);
    size_t gb = (size_t)(K / st_type_get(c->wt)->block_size) * x->x8_block_bytes;
    float *wf = malloc(sizeof(float) * ROWS * (size_t)K);
    uint8_t *wp = malloc(gb * NG), *wp2 = malloc(gb * NG), *qx = malloc(xr * NR), *qs = malloc(xr * NR);
    for (int r = 0; r < ROWS; r++) ksc.wt[c->wt].to_float(w + (size_t)r * wr, wf + (size_t)r * K, K);
    for (int j = 0; j < NR; j++) {
        x->from_float(xf + (size_t)j * K, qx + (size_t)j * xr, K);
        ksc.wt[c->wt].from_float(xf + (size_t)j * K, qs + (size_t)j * xr, K);
    }
#ifdef ST_TEST_AVX512
    if (c->wt == ST_TYPE_Q4_K) { /* the oracle reads the standard order */
        memcpy(qs, qx, xr * NR);
        q4k_unpermute(qs, NR * K / 256);
    }
#endif
    for (int g = 0; g < NG; g++) {
        x->repack8(K, w + (size_t)g * 8 * wr, wr, wp + (size_t)g * gb);
        c->repack_ref(K, w + (size_t)g * 8 * wr, wr, wp2 + (size_t)g * gb);
    }
    CHECK(!memcmp(wp, wp2, gb * NG), "%s K=%lld: the ISA repack differs from the oracle", st_type_name(c->wt),
          (long long)K);
    check_dots(c, K, w, wr, wp, qx, qs, xr, wf, xf);
    free(wf);
    free(wp);
    free(wp2);
    free(qx);
    free(qs);
}

static int has_x8(const x8_case *c) {
    const st_cpu_weight_kernels *x = &kx.wt[c->wt];
    CHECK(x->repack8 && x->dot8 && x->x8_block_bytes, "%s has no x8 kernels", st_type_name(c->wt));
    return x->repack8 && x->dot8;
}

/* Random weights (quantized) and activations, one activation row all zero. */
static void test_case(const x8_case *c, int64_t K) {
    if (!has_x8(c)) return;
    size_t wr = st_row_size(c->wt, K);
    float *wf = malloc(sizeof(float) * ROWS * (size_t)K), *xf = malloc(sizeof(float) * NR * (size_t)K);
    uint8_t *w = malloc(wr * ROWS);
    ct_fill(wf, ROWS * K, 1.0f);
    for (int r = 0; r < ROWS; r++) CHECK(st_quantize_row(c->wt, wf + (size_t)r * K, w + (size_t)r * wr, K) == 0, "quantize");
    ct_fill(xf, NR * K, 3.0f);
    memset(xf + 2 * K, 0, sizeof(float) * (size_t)K); /* an all-zero activation row */
    run_case(c, K, w, xf);
    free(wf);
    free(xf);
    free(w);
}

/* The largest integer sums the kernels meet: every stored value at its maximum (all bits set;
 * Q8_0 at -128, IQ4_XS at level -127), scales at their extremes, activations all +1 or all -1
 * (quantized to +-127), so any 16-bit intermediate that could saturate does. */
static void extreme_case(const x8_case *c) {
    if (!has_x8(c)) return;
    const int64_t K = 512;
    size_t wr = st_row_size(c->wt, K), bs = (size_t)st_type_get(c->wt)->type_size;
    uint8_t *w = malloc(wr * ROWS);
    float *xf = malloc(sizeof(float) * NR * (size_t)K);
    /* Q8_0: -128; IQ4_XS: level index 0 (-127) and scale 0 - 32 */
    memset(w, c->wt == ST_TYPE_Q8_0 ? 0x80 : c->wt == ST_TYPE_IQ4_XS ? 0x00 : 0xff, wr * ROWS);
    const uint16_t one = 0x3c00; /* F16 1.0 */
    for (size_t b = 0; b < wr * ROWS / bs; b++) {
        uint8_t *blk = w + b * bs;
        if (c->wt == ST_TYPE_Q6_K) {
            memcpy(blk + 208, &one, 2);
            memset(blk + 192, b % 2 ? 0x80 : 0x7f, 16); /* int8 scales -128 or 127 */
        } else {
            memcpy(blk, &one, 2);
            if (c->wt == ST_TYPE_Q4_K || c->wt == ST_TYPE_Q5_K) memcpy(blk + 2, &one, 2); /* dmin */
        }
    }
    for (int j = 0; j < NR; j++)
        for (int64_t i = 0; i < K; i++) xf[(size_t)j * K + (size_t)i] = j % 2 ? -1.0f : 1.0f;
    run_case(c, K, w, xf);
    free(w);
    free(xf);
}

int main(void) {
    __builtin_cpu_init();
#ifdef ST_TEST_AVX512
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq")) {
        printf("skipped: this CPU lacks AVX-512\n");
        return 77;
    }
#endif
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) {
        printf("skipped: this CPU lacks AVX2/FMA/F16C\n");
        return 77;
    }
    st_cpu_kernels_scalar(&ksc);
    st_cpu_kernels_scalar(&kx);
    st_x86_kernels_init(&kx);
    CHECK(!ksc.wt[ST_TYPE_Q4_0].dot8, "the scalar table repacks nothing");
    const x8_case q40 = {ST_TYPE_Q4_0, st_cpu_repack8_q4_0, st_cpu_dot8_q4_0};
    const x8_case q4k = {ST_TYPE_Q4_K, st_cpu_repack8_q4_k, st_cpu_dot8_q4_k};
    const x8_case q80 = {ST_TYPE_Q8_0, st_cpu_repack8_q8_0, st_cpu_dot8_q8_0};
    test_case(&q80, 32);
    test_case(&q80, 2048);
    test_case(&q40, 32);
    test_case(&q40, 1024);
    test_case(&q40, 32 * 513); /* more blocks than one preparation pass */
    test_case(&q4k, 256);
    test_case(&q4k, 2048);
    test_case(&q4k, 256 * 65);
    const x8_case q50 = {ST_TYPE_Q5_0, st_cpu_repack8_q5_0, st_cpu_dot8_q5_0};
    const x8_case q5k = {ST_TYPE_Q5_K, st_cpu_repack8_q5_k, st_cpu_dot8_q5_k};
    const x8_case q6k = {ST_TYPE_Q6_K, st_cpu_repack8_q6_k, st_cpu_dot8_q6_k};
    test_case(&q50, 32);
    test_case(&q50, 1024);
    test_case(&q50, 32 * 513);
    test_case(&q5k, 256);
    test_case(&q5k, 2048);
    test_case(&q5k, 256 * 65);
    test_case(&q6k, 256);
    test_case(&q6k, 2048);
    test_case(&q6k, 256 * 65);
    const x8_case iq4 = {ST_TYPE_IQ4_XS, st_cpu_repack8_iq4_xs, st_cpu_dot8_iq4_xs};
    test_case(&iq4, 256);
    test_case(&iq4, 2048);
    const x8_case *all[] = {&q40, &q50, &q80, &q4k, &q5k, &q6k, &iq4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) extreme_case(all[i]);
    printf("cpu.x8_kernels (%s): %s\n", kx.isa, g_fail ? "FAIL" : "ok");
    return g_fail ? 1 : 0;
}
