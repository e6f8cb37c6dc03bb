/* SPDX-License-Identifier: Apache-2.0 */
/* Cross-check against llama.cpp's ggml (the field's reference for GGUF), linked only in
 * this test: for every format, ggml's dequantizer and ours must agree bit for bit on random
 * block bytes (so every bit of every layout is read the same way), ggml must decode our
 * quantized blocks exactly as we do, and our quantizer's error must be comparable to ggml's
 * reference quantizer. Also fp16/bf16 conversions against ggml's. */
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "quant/quant.h"
#include "st_check.h"

#define N 8192

/* Exported by libggml-base but declared only in its internal headers (Q8_K is an activation
 * format there, so its type traits carry no converters). */
void dequantize_row_q8_K(const void *x, float *y, int64_t k);
void quantize_row_q8_K_ref(const float *x, void *y, int64_t k);

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd32(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

static float gauss(void) {
    double u = (rnd32() + 0.5) / 4294967296.0, v = (rnd32() + 0.5) / 4294967296.0;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* Equal as floats, or both NaN. */
static int same(float a, float b) { return a == b || (a != a && b != b); }

static double rmse(const float *a, const float *b, int n) {
    double e = 0;
    for (int i = 0; i < n; i++) e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return sqrt(e / n);
}

static const uint32_t g_types[] = {ST_TYPE_Q4_0, ST_TYPE_Q4_1, ST_TYPE_Q5_0, ST_TYPE_Q5_1, ST_TYPE_Q8_0,
                                   ST_TYPE_Q8_1, ST_TYPE_Q2_K, ST_TYPE_Q3_K, ST_TYPE_Q4_K, ST_TYPE_Q5_K,
                                   ST_TYPE_Q6_K, ST_TYPE_Q8_K, ST_TYPE_IQ4_NL, ST_TYPE_IQ4_XS, ST_TYPE_F16,
                                   ST_TYPE_BF16};

static void test_formats(void) {
    static unsigned char blk[N * 4], gq[N * 4];
    static float ours[N], theirs[N], x[N];
    for (int i = 0; i < N; i++) x[i] = gauss() * 0.02f;
    for (size_t t = 0; t < sizeof g_types / sizeof g_types[0]; t++) {
        uint32_t type = g_types[t];
        const char *name = st_type_name(type);
        const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)type);
        const st_type_info *ti = st_type_get(type);
        ST_CHECK_MSG(tr != NULL, "%s: ggml does not know the type", name);
        if (tr == NULL) continue;
        struct ggml_type_traits tq = *tr;
        if (type == ST_TYPE_Q8_K) {
            tq.to_float = (ggml_to_float_t)dequantize_row_q8_K;
            tq.from_float_ref = (ggml_from_float_t)quantize_row_q8_K_ref;
        }
        tr = &tq;
        if (tr->to_float == NULL) {
            /* activation-only formats (Q8_1, Q8_K) have just a quantizer in ggml-base: decode
             * its blocks with ours and compare the error with our own round trip */
            ST_CHECK_MSG(tr->from_float_ref != NULL, "%s: ggml has neither direction", name);
            if (tr->from_float_ref == NULL) continue;
            tr->from_float_ref(x, gq, N);
            ST_CHECK(st_dequantize_row(type, gq, theirs, N) == 0);
            ST_CHECK(st_quantize_row(type, x, blk, N) == 0);
            ST_CHECK(st_dequantize_row(type, blk, ours, N) == 0);
            double eo = rmse(x, ours, N), eg = rmse(x, theirs, N);
            printf("%-7s rmse ours %.3e  ggml blocks decoded here %.3e (ggml has no dequantizer)\n", name, eo, eg);
            ST_CHECK_MSG(eg <= 1.25 * eo && eo <= 1.25 * eg, "%s: %.3e vs %.3e", name, eo, eg);
            continue;
        }
        ST_CHECK_MSG(tr->blck_size == ti->block_size && tr->type_size == (size_t)ti->type_size,
                     "%s: ggml %lld/%zu, ours %d/%d", name, (long long)tr->blck_size, tr->type_size,
                     ti->block_size, ti->type_size);
        ST_CHECK(strcmp(tr->type_name, "") != 0);
        size_t rs = st_row_size(type, N);

        /* random bytes: every bit pattern of every field, scales included */
        int bad = 0;
        for (int rep = 0; rep < 4; rep++) {
            for (size_t i = 0; i < rs; i++) blk[i] = (unsigned char)rnd32();
            ST_CHECK(st_dequantize_row(type, blk, ours, N) == 0);
            tr->to_float(blk, theirs, N);
            for (int i = 0; i < N; i++)
                if (!same(ours[i], theirs[i])) {
                    if (bad < 3) fprintf(stderr, "  %s random element %d: ours %.9g ggml %.9g\n", name, i, ours[i], theirs[i]);
                    bad++;
                }
        }
        ST_CHECK_MSG(bad == 0, "%s: %d elements of random blocks decode differently", name, bad);

        /* our quantizer's blocks decode identically in ggml, with comparable error */
        ST_CHECK(st_quantize_row(type, x, blk, N) == 0);
        ST_CHECK(st_dequantize_row(type, blk, ours, N) == 0);
        tr->to_float(blk, theirs, N);
        bad = 0;
        for (int i = 0; i < N; i++) bad += !same(ours[i], theirs[i]);
        ST_CHECK_MSG(bad == 0, "%s: %d elements of our blocks decode differently in ggml", name, bad);
        double e_ours = rmse(x, ours, N);
        if (tr->from_float_ref != NULL) {
            tr->from_float_ref(x, gq, N);
            tr->to_float(gq, theirs, N);
            double e_ggml = rmse(x, theirs, N);
            printf("%-7s rmse ours %.3e  ggml reference %.3e  ratio %.3f\n", name, e_ours, e_ggml,
                   e_ggml > 0 ? e_ours / e_ggml : 0.0);
            /* a simple search is enough, but it must not be far off the reference */
            ST_CHECK_MSG(e_ours <= 1.25 * e_ggml + 1e-12, "%s: rmse %.3e vs ggml %.3e", name, e_ours, e_ggml);
            /* and ggml's blocks decode the same through our dequantizer */
            ST_CHECK(st_dequantize_row(type, gq, ours, N) == 0);
            bad = 0;
            for (int i = 0; i < N; i++) bad += !same(ours[i], theirs[i]);
            ST_CHECK_MSG(bad == 0, "%s: %d elements of ggml's blocks decode differently here", name, bad);
        }
    }
}

static void test_half(void) {
    int bad16 = 0, badbf = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if (!same(st_fp16_to_f32((st_fp16)h), ggml_fp16_to_fp32((ggml_fp16_t)h))) bad16++;
    }
    ST_CHECK_MSG(bad16 == 0, "%d halves widen differently", bad16);
    enum { M = 1 << 16 };
    static float f[M];
    static ggml_fp16_t g16[M];
    static ggml_bf16_t gbf[M];
    for (int i = 0; i < M; i++) {
        uint32_t u = rnd32();
        if (i % 4 == 0) u = (u & 0x8fffffffu) | 0x30000000u; /* bias towards the fp16 range */
        memcpy(&f[i], &u, 4);
    }
    ggml_fp32_to_fp16_row(f, g16, M);
    ggml_fp32_to_bf16_row_ref(f, gbf, M);
    bad16 = 0;
    for (int i = 0; i < M; i++) {
        st_fp16 o = st_f32_to_fp16(f[i]);
        int nan_both = (o & 0x7c00) == 0x7c00 && (o & 0x3ff) && (g16[i] & 0x7c00) == 0x7c00 && (g16[i] & 0x3ff);
        if (o != g16[i] && !nan_both) {
            if (bad16 < 3) fprintf(stderr, "  fp16 of %a: ours %04x ggml %04x\n", f[i], o, g16[i]);
            bad16++;
        }
        st_bf16 b = st_f32_to_bf16(f[i]);
        uint16_t gb;
        memcpy(&gb, &gbf[i], 2);
        int bnan = (b & 0x7f80) == 0x7f80 && (b & 0x7f) && (gb & 0x7f80) == 0x7f80 && (gb & 0x7f);
        if (b != gb && !bnan) badbf++;
    }
    ST_CHECK_MSG(bad16 == 0, "%d floats narrow to fp16 differently", bad16);
    ST_CHECK_MSG(badbf == 0, "%d floats narrow to bf16 differently", badbf);
}

int main(void) {
    test_half();
    test_formats();
    return st_check_result("test_quant_vs_ggml");
}
