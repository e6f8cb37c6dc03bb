/* SPDX-License-Identifier: Apache-2.0 */
/* Micro-benchmark of the CPU module's decode ops other than dense GEMV (not a test): attention
 * over an F16 paged cache at several context lengths, MoE GEMV of one token (8 of 64 experts
 * of the bench-moe-1.5g shapes), argmax over a 151936-entry vocabulary. Prints wall and CPU
 * time per call (on a shared machine the CPU time per call is the steadier number).
 * With BENCH_GGUF=<model.gguf> (a qwen3moe with those shapes) the MoE weights are the model's
 * own expert tensors, read from its file mapping layer after layer, as in decode.
 * Usage: bench_ops <module.so> [threads] [iters] [what: all|attn|moe|argmax] */
#include <time.h>

#include "cpu_test_util.h"
#include "gguf/gguf.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

typedef struct timing {
    double t0, c0;
} timing;
static timing tick(void) { return (timing){now_s(), cpu_s()}; }
static void tock(const timing *t, int iters, const char *what, double bytes) {
    double dt = (now_s() - t->t0) / iters, ct = (cpu_s() - t->c0) / iters;
    printf("%-44s %9.1f us wall %9.1f us cpu", what, dt * 1e6, ct * 1e6);
    if (bytes > 0) printf("  %6.2f GB/s", bytes / dt / 1e9);
    printf("\n");
}

static int bench_attn(const st_backend_api *api, st_stream *s, int iters) {
    const int64_t nh = 16, nkv = 4, hd = 64, n_cells = 4096;
    uint16_t *kc = malloc(2 * (size_t)(n_cells * nkv * hd)), *vc = malloc(2 * (size_t)(n_cells * nkv * hd));
    float *tmp = malloc(sizeof(float) * (size_t)(n_cells * nkv * hd));
    float *q = malloc(sizeof(float) * (size_t)(512 * nh * hd)), *out = malloc(sizeof(float) * (size_t)(512 * nh * hd));
    int32_t *table = malloc(sizeof(int32_t) * (size_t)n_cells), *kv_len = malloc(sizeof(int32_t) * 512);
    int32_t *seq = calloc(512, sizeof(int32_t));
    ct_fill(tmp, n_cells * nkv * hd, 1.0f);
    for (int64_t i = 0; i < n_cells * nkv * hd; i++) kc[i] = st_f32_to_fp16(tmp[i]);
    ct_fill(tmp, n_cells * nkv * hd, 1.0f);
    for (int64_t i = 0; i < n_cells * nkv * hd; i++) vc[i] = st_f32_to_fp16(tmp[i]);
    ct_fill(q, 512 * nh * hd, 1.0f);
    for (int i = 0; i < n_cells; i++) table[i] = i;
    static const int lens[] = {64, 576, 2048, 4096};
    for (int li = 0; li < 4; li++) {
        st_attention_args a = {.size = sizeof a, .scale = 0.125f, .max_pos = (int32_t)n_cells};
        a.q = ct_tensor(q, ST_TYPE_F32, hd, nh, 1);
        a.k_cache = ct_tensor(kc, ST_TYPE_F16, hd, nkv, n_cells);
        a.v_cache = ct_tensor(vc, ST_TYPE_F16, hd, nkv, n_cells);
        a.out = ct_tensor(out, ST_TYPE_F32, hd, nh, 1);
        kv_len[0] = lens[li];
        a.seq = seq;
        a.kv_len = kv_len;
        a.cell_table = table;
        if (api->ops->attention(s, &a) != ST_OK) {
            fprintf(stderr, "attention: %s\n", api->last_error());
            return 1;
        }
        timing t = tick();
        for (int it = 0; it < iters; it++) api->ops->attention(s, &a);
        char what[96];
        snprintf(what, sizeof what, "attention decode 16/4x64 F16 len %d", lens[li]);
        tock(&t, iters, what, (double)lens[li] * nkv * hd * 2 * 2);
    }
    /* prefill of 512 tokens after 256 cached ones */
    {
        const int n = 512;
        st_attention_args a = {.size = sizeof a, .scale = 0.125f, .max_pos = (int32_t)n_cells};
        a.q = ct_tensor(q, ST_TYPE_F32, hd, nh, n);
        a.k_cache = ct_tensor(kc, ST_TYPE_F16, hd, nkv, n_cells);
        a.v_cache = ct_tensor(vc, ST_TYPE_F16, hd, nkv, n_cells);
        a.out = ct_tensor(out, ST_TYPE_F32, hd, nh, n);
        for (int i = 0; i < n; i++) kv_len[i] = 256 + i + 1;
        a.seq = seq;
        a.kv_len = kv_len;
        a.cell_table = table;
        api->ops->attention(s, &a);
        int it2 = iters / 20 > 0 ? iters / 20 : 1;
        timing t = tick();
        for (int it = 0; it < it2; it++) api->ops->attention(s, &a);
        tock(&t, it2, "attention prefill 512 tokens after 256", 0);
    }
    free(kc);
    free(vc);
    free(tmp);
    free(q);
    free(out);
    free(table);
    free(kv_len);
    free(seq);
    return 0;
}

/* The three expert GEMVs of one layer for one token: gate/up [64][512][1024] and down
 * [64][1024][512] Q4_K, 8 experts; weights span several layers' worth so they come from memory. */
static int bench_moe(const st_backend_api *api, st_stream *s, int iters) {
    const int64_t E = 64, ff = 512, embd = 1024, layers = 8;
    size_t rs_up = st_row_size(ST_TYPE_Q4_K, embd), rs_dn = st_row_size(ST_TYPE_Q4_K, ff);
    size_t up_bytes = rs_up * (size_t)(E * ff), dn_bytes = rs_dn * (size_t)(E * embd);
    uint8_t *w = malloc((up_bytes * 2 + dn_bytes) * (size_t)layers);
    float *row = malloc(sizeof(float) * (size_t)embd);
    /* 61 quantized rows repeated (quantizing hundreds of MB would take minutes) */
    uint8_t *seed = malloc(rs_up * 61);
    for (int r = 0; r < 61; r++) {
        ct_fill(row, embd, 1.0f);
        st_quantize_row(ST_TYPE_Q4_K, row, seed + rs_up * (size_t)r, embd);
    }
    for (size_t off = 0, r = 0; off < (up_bytes * 2 + dn_bytes) * (size_t)layers; off += rs_up, r = (r + 1) % 61)
        memcpy(w + off, seed + rs_up * r, rs_up);
    free(seed);
    float *x = malloc(sizeof(float) * (size_t)embd), *g = malloc(sizeof(float) * (size_t)(8 * ff));
    float *u = malloc(sizeof(float) * (size_t)(8 * ff)), *o = malloc(sizeof(float) * (size_t)(8 * embd));
    ct_fill(x, embd, 1.0f);
    ct_fill(g, 8 * ff, 1.0f);
    int32_t table[64], expert[8], xrow[8], drow[8];
    for (int i = 0; i < 64; i++) table[i] = i;
    for (int i = 0; i < 8; i++) {
        xrow[i] = 0;
        drow[i] = i;
    }
    /* the model's own experts when asked for */
    const char *path = getenv("BENCH_GGUF");
    st_gguf *gf = NULL;
    const void *gw[64][3];
    int g_layers = 0;
    if (path && *path) {
        char err[256];
        gf = st_gguf_open(path, err, sizeof err);
        if (!gf) {
            fprintf(stderr, "%s: %s\n", path, err);
            return 1;
        }
        static const char *names[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
        for (; g_layers < 64; g_layers++) {
            int ok = 1;
            for (int t = 0; t < 3; t++) {
                char nm[64];
                snprintf(nm, sizeof nm, "blk.%d.%s.weight", g_layers, names[t]);
                const st_gguf_tensor *gt = st_gguf_tensor_find(gf, nm);
                if (!gt || gt->type != ST_TYPE_Q4_K || gt->ne[2] != E || gt->ne[0] != (t < 2 ? embd : ff)) ok = 0;
                else gw[g_layers][t] = gt->data;
            }
            if (!ok) break;
        }
        if (g_layers == 0) {
            fprintf(stderr, "%s: no Q4_K expert tensors of [64][512][1024]\n", path);
            return 1;
        }
        /* map every page first (decode after a prompt finds them mapped) */
        size_t pages = 0;
        volatile uint8_t sink = 0;
        for (int l = 0; l < g_layers; l++)
            for (int t = 0; t < 3; t++)
                for (size_t o = 0; o < up_bytes; o += 4096, pages++) sink ^= ((const volatile uint8_t *)gw[l][t])[o];
        printf("moe weights: %d layers of %s (%zu pages touched)\n", g_layers, path, pages);
    }
    double tg = 0, tu = 0, td = 0, cg = 0;
    for (int it = 0; it < iters; it++) {
        uint8_t *lw = w + (up_bytes * 2 + dn_bytes) * (size_t)(it % layers);
        const void *wg = lw, *wu = lw + up_bytes, *wd = lw + 2 * up_bytes;
        if (g_layers) {
            wg = gw[it % g_layers][0];
            wu = gw[it % g_layers][1];
            wd = gw[it % g_layers][2];
        }
        for (int i = 0; i < 8; i++) expert[i] = (int32_t)((ct_rand_u32() % 8) * 8 + i); /* 8 distinct */
        st_moe_matmul_args a = {.size = sizeof a, .n_assign = 8};
        a.slot_table = table;
        a.expert = expert;
        a.x_row = xrow;
        a.w = ct_tensor((void *)wg, ST_TYPE_Q4_K, embd, ff, E);
        a.x = ct_tensor(x, ST_TYPE_F32, embd, 1, 1);
        a.out = ct_tensor(g, ST_TYPE_F32, ff, 8, 1);
        double t0 = now_s(), c0 = cpu_s();
        if (api->ops->moe_matmul(s, &a) != ST_OK) {
            fprintf(stderr, "moe_matmul: %s\n", api->last_error());
            return 1;
        }
        double t1 = now_s();
        a.w.data = (void *)wu;
        a.out = ct_tensor(u, ST_TYPE_F32, ff, 8, 1);
        api->ops->moe_matmul(s, &a);
        double t2 = now_s();
        a.w = ct_tensor((void *)wd, ST_TYPE_Q4_K, ff, embd, E);
        a.x = ct_tensor(g, ST_TYPE_F32, ff, 8, 1);
        a.x_row = drow;
        a.out = ct_tensor(o, ST_TYPE_F32, embd, 8, 1);
        api->ops->moe_matmul(s, &a);
        double t3 = now_s();
        tg += t1 - t0;
        tu += t2 - t1;
        td += t3 - t2;
        cg += cpu_s() - c0;
    }
    double b = (double)rs_up * (double)(8 * ff);
    printf("moe gate 1 tok x 8 experts [512][1024] Q4_K    %9.1f us wall  %6.2f GB/s\n", tg / iters * 1e6, b / (tg / iters) / 1e9);
    printf("moe up                                       %9.1f us wall  %6.2f GB/s\n", tu / iters * 1e6, b / (tu / iters) / 1e9);
    printf("moe down 8 x [1024][512] Q4_K                %9.1f us wall  %6.2f GB/s\n", td / iters * 1e6, b / (td / iters) / 1e9);
    printf("moe all three: %.1f us wall, %.1f us cpu per layer\n", (tg + tu + td) / iters * 1e6, cg / iters * 1e6);
    if (gf) st_gguf_close(gf);
    free(w);
    free(row);
    free(x);
    free(g);
    free(u);
    free(o);
    return 0;
}

static int bench_argmax(const st_backend_api *api, st_stream *s, int iters) {
    const int64_t V = 151936;
    float *x = malloc(sizeof(float) * (size_t)V);
    ct_fill(x, V, 10.0f);
    int32_t id = -1;
    st_topk_args a = {.size = sizeof a, .k = 1};
    a.x = ct_tensor(x, ST_TYPE_F32, V, 1, 1);
    a.ids = &id;
    if (api->ops->argmax(s, &a) != ST_OK) {
        fprintf(stderr, "argmax: %s\n", api->last_error());
        return 1;
    }
    timing t = tick();
    for (int it = 0; it < iters; it++) api->ops->argmax(s, &a);
    tock(&t, iters, "argmax over 151936", (double)V * 4);
    free(x);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <module.so> [threads] [iters=200] [all|attn|moe|argmax]\n", argv[0]);
        return 2;
    }
    unsigned threads = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
    int iters = argc > 3 ? atoi(argv[3]) : 200;
    const char *what = argc > 4 ? argv[4] : "all";
    ct_module m = {0};
    if (!ct_load(&m, argv[1], threads)) return 1;
    const st_backend_api *api = m.api;
    st_device *dev;
    st_stream *s;
    if (api->device_open(0, &dev) != ST_OK || api->stream_create(dev, &s) != ST_OK) {
        fprintf(stderr, "open: %s\n", api->last_error());
        return 1;
    }
    int all = !strcmp(what, "all"), rc = 0;
    if (!rc && (all || !strcmp(what, "attn"))) rc = bench_attn(api, s, iters);
    if (!rc && (all || !strcmp(what, "moe"))) rc = bench_moe(api, s, iters);
    if (!rc && (all || !strcmp(what, "argmax"))) rc = bench_argmax(api, s, iters);
    api->stream_destroy(s);
    api->device_close(dev);
    api->shutdown();
    return rc;
}
