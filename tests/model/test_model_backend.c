/* SPDX-License-Identifier: Apache-2.0 */
/* The same tiny models of every family through the scalar reference and through a backend
 * module (argv[1]: "cpu", "sim", ...): logits must agree, for F32 and quantized weights, in
 * batched prefill and in token-by-token decode. Exit 77 (skip) when the module has no usable
 * device here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_pick.h"
#include "model/ref_device.h"
#include "model_util.h"

static const char *k_archs[] = {"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "olmoe"};
enum { NT = 12 };

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Compares one model file on ref vs the module; tol is relative to the largest |logit|. */
static void compare(const char *arch, const char *what, const char *path, mt_backend *be, double tol) {
    st_model_params p;
    st_model_params_default(&p);
    p.kv_type = ST_TYPE_F32;
    p.n_ctx = 64;
    p.n_batch = 8; /* NT = 12 crosses a batch boundary */
    p.n_out_max = 8;
    mt_model r, m;
    if (mt_load(&r, path, st_ref_device_api(1), &p)) {
        CHECK(0, "%s %s: reference load", arch, what);
        return;
    }
    if (mt_load_dev(&m, path, be->api, be->index, be->dev, &p)) {
        CHECK(0, "%s %s: module load", arch, what);
        mt_unload(&r);
        return;
    }
    const int V = r.d->hp.n_vocab;
    int32_t tok[NT];
    for (int i = 0; i < NT; i++) tok[i] = (i * 37 + 11) % V;
    float *a = malloc(sizeof(float) * NT * (size_t)V), *b = malloc(sizeof(float) * NT * (size_t)V);
    float *c = malloc(sizeof(float) * NT * (size_t)V);
    int ok = mt_prefill_all(&r, tok, NT, a) == 0 && mt_prefill_all(&m, tok, NT, b) == 0 &&
             mt_stepwise_all(&m, tok, NT, c) == 0;
    CHECK(ok, "%s %s: evaluation failed", arch, what);
    if (ok) {
        double dp = mt_rel_diff(b, a, (size_t)NT * V), ds = mt_rel_diff(c, a, (size_t)NT * V);
        /* argmax: identical, or a near-tie (the module's pick is within tol of the best on the
         * reference's own scale) */
        int top_same = 0, top_close = 0;
        for (int i = 0; i < NT; i++) {
            const float *ra = a + (size_t)i * V;
            int ia = argmax(ra, V), ib = argmax(b + (size_t)i * V, V);
            double scale = 0;
            for (int j = 0; j < V; j++) scale = fabs(ra[j]) > scale ? fabs(ra[j]) : scale;
            top_same += ia == ib;
            top_close += ia == ib || ra[ib] >= ra[ia] - tol * scale;
        }
        CHECK(dp < tol, "%s %s: prefill logits differ from the reference by %.3g (tolerance %.3g)", arch, what, dp, tol);
        CHECK(ds < tol, "%s %s: decode logits differ from the reference by %.3g (tolerance %.3g)", arch, what, ds, tol);
        CHECK(top_close == NT, "%s %s: the module's argmax is not a near-tie of the reference's on %d of %d rows",
              arch, what, NT - top_close, NT);
        CHECK(tol > 1e-3 || top_same == NT, "%s %s: float weights must give the same argmax (%d/%d)", arch, what,
              top_same, NT);
        printf("%-9s %-5s prefill %.2e  decode %.2e  argmax %d/%d\n", arch, what, dp, ds, top_same, NT);
    }
    free(a);
    free(b);
    free(c);
    mt_unload(&m);
    mt_unload(&r);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "cpu";
    mt_backend be;
    if (mt_backend_pick(&be, name)) {
        printf("SKIP: backend '%s' has no usable device here\n", name);
        return 77;
    }
    char path[512];
    mt_tmp_path(path, sizeof path, "cmp.gguf");
    for (size_t i = 0; i < sizeof k_archs / sizeof k_archs[0]; i++) {
        const char *arch = k_archs[i];
        if (mt_gen_tiny(arch, ST_TYPE_F32, 0, 0, path) == 0) compare(arch, "F32", path, &be, 1e-3);
        if (mt_gen_tiny(arch, ST_TYPE_F16, 0, 0, path) == 0) compare(arch, "F16", path, &be, 1e-2);
        /* Quantized weights: modules may quantize activations for the dot products (1-3e-2 of
         * the logit scale on dense models); on MoE models a router near-tie can then pick
         * another expert for a token, which moves its logits further. */
        double moe = st_arch_from_name(arch) >= ST_ARCH_QWEN2MOE ? 3.0 : 1.0;
        if (mt_gen_tiny(arch, ST_TYPE_Q8_0, 0, 0, path) == 0) compare(arch, "Q8_0", path, &be, 5e-2 * moe);
        if (mt_gen_tiny(arch, ST_TYPE_Q4_K, 256, 256, path) == 0) compare(arch, "Q4_K", path, &be, 5e-2 * moe);
    }
    unlink(path);
    mt_backend_release(&be);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    return 0;
}
