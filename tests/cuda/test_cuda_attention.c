/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA vs core/ref: KV_WRITE into F32/F16/Q8_0 caches (a cell named twice: the later token
 * wins) and ATTENTION over the paged cell table (decode with split sequence, several tokens
 * with a mask, GQA, kv_len 0, dk != dv). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_harness.h"
#include "quant/quant.h"
#include "ref/ref.h"

static void test_kv_write(tc_ctx *c, uint32_t ct, uint32_t at) {
    int64_t hd = 64, nkv = 3, n = 6, n_cells = 40;
    st_tensor k = tc_host_rand(at, hd, nkv, n, -2, 2), v = tc_host_rand(at, hd, nkv, n, -2, 2);
    st_tensor kc = tc_host_rand(ct, hd, nkv, n_cells, -1, 1), vc = tc_host_rand(ct, hd, nkv, n_cells, -1, 1);
    int32_t cells[6] = {5, 39, 0, 5, 17, 18};
    st_tensor dk = tc_dev_tensor(c, &k), dv = tc_dev_tensor(c, &v), dkc = tc_dev_tensor(c, &kc),
              dvc = tc_dev_tensor(c, &vc);
    st_kv_write_args ha = {.size = sizeof ha, .k = k, .v = v, .k_cache = kc, .v_cache = vc, .cells = cells};
    st_kv_write_args da = {.size = sizeof da, .k = dk, .v = dv, .k_cache = dkc, .v_cache = dvc};
    da.cells = tc_up(c, cells, sizeof cells);
    char name[96];
    snprintf(name, sizeof name, "kv_write %s -> %s cache", st_type_name(at), st_type_name(ct));
    if (st_ref_kv_write(&ha) != ST_OK) tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    if (tc_status(c, name, c->api->ops->kv_write(c->s, &da))) {
        char n2[128];
        snprintf(n2, sizeof n2, "%s (k cache)", name);
        tc_compare(c, n2, &kc, &dkc, 1e-6);
        snprintf(n2, sizeof n2, "%s (v cache)", name);
        tc_compare(c, n2, &vc, &dvc, 1e-6);
        if (ct == ST_TYPE_Q8_0) { /* byte-level report of the first differing blocks */
            size_t bytes = tc_bytes(&kc);
            uint8_t *got = malloc(bytes);
            if (got && tc_down(c, got, dkc.data, bytes)) {
                int shown = 0;
                for (size_t off = 0; off + 34 <= bytes && shown < 4; off += 34) {
                    const uint8_t *r = (const uint8_t *)kc.data + off, *g = got + off;
                    if (memcmp(r, g, 34) == 0) continue;
                    size_t cell = off / (size_t)kc.nb[2], head = (off % (size_t)kc.nb[2]) / (size_t)kc.nb[1];
                    printf("  diff cell %zu head %zu blk %zu: ref d %g q %d %d %d %d | dev d %g q %d %d %d %d\n", cell,
                           head, (off % (size_t)kc.nb[1]) / 34, st_fp16_to_f32((uint16_t)(r[0] | r[1] << 8)),
                           (int8_t)r[2], (int8_t)r[3], (int8_t)r[4], (int8_t)r[5],
                           st_fp16_to_f32((uint16_t)(g[0] | g[1] << 8)), (int8_t)g[2], (int8_t)g[3], (int8_t)g[4],
                           (int8_t)g[5]);
                    shown++;
                }
            }
            free(got);
        }
    }
    free(k.data);
    free(v.data);
    free(kc.data);
    free(vc.data);
}

/* ATTENTION, or ATTENTION_EX when a window or sinks are given (sink logits in [-2, 6)). */
static void test_attention_ex(tc_ctx *c, const char *what, uint32_t ct, int64_t n, int max_pos, int with_mask,
                              int64_t dk, int64_t dvd, int64_t nh, int64_t nkv, int window, int sinks) {
    int64_t n_cells = 2 * max_pos + 16, n_seq = 2;
    st_tensor q = tc_host_rand(ST_TYPE_F32, dk, nh, n, -1, 1);
    st_tensor kc = tc_host_rand(ct, dk, nkv, n_cells, -1, 1), vc = tc_host_rand(ct, dvd, nkv, n_cells, -1, 1);
    st_tensor out = tc_host_fill(ST_TYPE_F32, dvd, nh, n, 3.0f);
    int32_t *table = malloc(sizeof(int32_t) * (size_t)(n_seq * max_pos));
    for (int64_t i = 0; i < n_seq * max_pos; i++) table[i] = (int32_t)((i * 7919) % n_cells);
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)n), *kvl = malloc(sizeof(int32_t) * (size_t)n);
    float *mask = malloc(sizeof(float) * (size_t)(n * max_pos));
    for (int64_t i = 0; i < n; i++) {
        seq[i] = (int32_t)(i % n_seq);
        kvl[i] = n == 1 ? max_pos - 37 : (int32_t)((i * max_pos) / n + (i == 2 ? 0 : 1));
        if (i == 1 && n > 2) kvl[i] = 0; /* nothing visible: zero row */
        for (int p = 0; p < max_pos; p++) mask[i * max_pos + p] = (p % 5 == 3) ? -INFINITY : tc_rand(-0.5f, 0.0f);
    }
    st_tensor dq = tc_dev_tensor(c, &q), dkc = tc_dev_tensor(c, &kc), dvc = tc_dev_tensor(c, &vc),
              dout = tc_dev_tensor(c, &out);
    float scale = 1.0f / sqrtf((float)dk);
    st_attention_args ha = {.size = sizeof ha, .scale = scale, .q = q, .k_cache = kc, .v_cache = vc, .out = out,
                            .seq = seq, .kv_len = kvl, .cell_table = table, .max_pos = max_pos,
                            .mask = with_mask ? mask : NULL};
    st_attention_args da = ha;
    da.q = dq;
    da.k_cache = dkc;
    da.v_cache = dvc;
    da.out = dout;
    da.seq = tc_up(c, seq, sizeof(int32_t) * (size_t)n);
    da.kv_len = tc_up(c, kvl, sizeof(int32_t) * (size_t)n);
    da.cell_table = tc_up(c, table, sizeof(int32_t) * (size_t)(n_seq * max_pos));
    da.mask = with_mask ? tc_up(c, mask, sizeof(float) * (size_t)(n * max_pos)) : NULL;
    char name[160];
    snprintf(name, sizeof name, "attention %s %s cache n=%lld max_pos=%d heads %lld/%lld dk=%lld dv=%lld%s", what,
             st_type_name(ct), (long long)n, max_pos, (long long)nh, (long long)nkv, (long long)dk, (long long)dvd,
             with_mask ? " mask" : "");
    const int ex = window > 0 || sinks;
    float *sk = malloc(sizeof(float) * (size_t)nh);
    for (int64_t h = 0; h < nh; h++) sk[h] = tc_rand(-2.0f, 6.0f);
    st_attention_ex_args hx = {.size = sizeof hx, .window = window, .base = ha, .sinks = sinks ? sk : NULL};
    st_attention_ex_args dx = {.size = sizeof dx, .window = window, .base = da,
                               .sinks = sinks ? tc_up(c, sk, sizeof(float) * (size_t)nh) : NULL};
    if (ex) {
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, " window=%d%s", window, sinks ? " sinks" : "");
    }
    if ((ex ? st_ref_attention_ex(&hx) : st_ref_attention(&ha)) != ST_OK)
        tc_fail(c, "%s: ref: %s", name, st_ref_last_error());
    /* prefill batches with F16 caches and head dim 64/128 run the tensor-core flash attention
     * on sm_80+ (docs/cuda.md): Q and the softmax weights enter the MMAs as F16 (2^-11 relative
     * per operand), so the bound there is that of the other F16 tensor-core checks */
    const int fa = c->tc && ct == ST_TYPE_F16 && dk == dvd && (dk == 64 || dk == 128) && n >= 16;
    const st_status ds = ex ? c->api->ops->attention_ex(c->s, &dx) : c->api->ops->attention(c->s, &da);
    if (tc_status(c, name, ds)) tc_compare(c, name, &out, &dout, fa && !ex ? 2e-3 : 2e-5);
    free(sk);
    free(q.data);
    free(kc.data);
    free(vc.data);
    free(out.data);
    free(table);
    free(seq);
    free(kvl);
    free(mask);
}

static void test_attention(tc_ctx *c, const char *what, uint32_t ct, int64_t n, int max_pos, int with_mask,
                           int64_t dk, int64_t dvd, int64_t nh, int64_t nkv) {
    test_attention_ex(c, what, ct, n, max_pos, with_mask, dk, dvd, nh, nkv, 0, 0);
}

void tc_test_attention(tc_ctx *c) {
    test_kv_write(c, ST_TYPE_F32, ST_TYPE_F32);
    test_kv_write(c, ST_TYPE_F16, ST_TYPE_F32);
    test_kv_write(c, ST_TYPE_Q8_0, ST_TYPE_F32);
    test_kv_write(c, ST_TYPE_Q8_0, ST_TYPE_BF16);
    test_attention(c, "decode(split)", ST_TYPE_F32, 1, 2048, 0, 128, 128, 8, 2);
    test_attention(c, "decode(split)", ST_TYPE_F16, 1, 4096, 1, 64, 64, 4, 4);
    test_attention(c, "decode(split)", ST_TYPE_Q8_0, 1, 1024, 0, 128, 128, 16, 4);
    test_attention(c, "batch", ST_TYPE_F32, 6, 300, 1, 64, 64, 8, 2);
    test_attention(c, "batch", ST_TYPE_F16, 5, 200, 0, 96, 96, 6, 3);
    test_attention(c, "batch", ST_TYPE_Q8_0, 4, 256, 1, 64, 64, 4, 1);
    test_attention(c, "batch dk!=dv", ST_TYPE_F32, 3, 100, 0, 192, 128, 4, 2);
    test_attention(c, "many tokens", ST_TYPE_F16, 200, 600, 1, 64, 64, 4, 2);
    /* a batched decode: 40 tokens of alternating sequences, 32 heads over 4 (the decode kernel
     * takes up to 64 tokens) */
    test_attention(c, "batched decode", ST_TYPE_F16, 40, 300, 0, 128, 128, 32, 4);
    test_attention(c, "batched decode", ST_TYPE_F16, 64, 200, 1, 64, 64, 16, 2);
    /* ATTENTION_EX (gpt-oss): sliding window and sinks on the split decode (partials merged
     * with the sink), on batches, and DeepSeek MLA's 576/512 head dims */
    test_attention_ex(c, "decode(split)", ST_TYPE_F16, 1, 2048, 0, 64, 64, 8, 2, 128, 1);
    test_attention_ex(c, "decode(split)", ST_TYPE_Q8_0, 1, 1024, 0, 64, 64, 8, 1, 0, 1);
    test_attention_ex(c, "decode(split)", ST_TYPE_F32, 1, 1024, 1, 64, 64, 4, 4, 100, 0);
    test_attention_ex(c, "batch", ST_TYPE_F16, 24, 300, 1, 64, 64, 8, 2, 40, 1);
    test_attention(c, "MLA", ST_TYPE_F16, 3, 200, 0, 576, 512, 4, 1);
}
