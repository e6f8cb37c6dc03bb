/* SPDX-License-Identifier: Apache-2.0 */
/* mla-expand: rewrites a deepseek2 GGUF of the latent-attention layout (attn_k_b, attn_v_b,
 * key_length_mla) as the same model in the expanded layout (one attn_kv_b per layer,
 * key_length = nope + rope, head_count_kv = n_head), which llama.cpp runs as plain multi-head
 * attention over full K/V rows. Comparing Strata on the latent file with llama.cpp on the
 * expanded one checks the latent cache against an expanded K/V computation.
 *   mla-expand IN.gguf OUT.gguf
 * Per head h, attn_kv_b's rows are W_k[h] (nope rows) then W_v[h] (v rows), each of kv_lora
 * values: W_k[h][i][j] = attn_k_b[h][j][i], W_v[h][r][j] = attn_v_b[h][r][j]. F32 out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "model/gen.h"
#include "quant/quant.h"

static float *to_f32(const st_gguf_tensor *t) {
    const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    float *f = malloc((size_t)n * sizeof *f);
    if (f && st_dequantize_row(t->type, t->data, f, n)) {
        free(f);
        return NULL;
    }
    return f;
}

/* attn_kv_b of one layer from its attn_k_b [H][Lkv][nope] and attn_v_b [H][v][Lkv]. */
static float *kv_b(const st_gguf_tensor *kb, const st_gguf_tensor *vb, int64_t *rows, int64_t *lkv) {
    const int64_t nope = kb->ne[0], L = kb->ne[1], H = kb->ne[2], V = vb->ne[1];
    float *k = to_f32(kb), *v = to_f32(vb), *o = malloc((size_t)(H * (nope + V) * L) * sizeof *o);
    if (!k || !v || !o) {
        free(k), free(v), free(o);
        return NULL;
    }
    for (int64_t h = 0; h < H; h++) {
        float *oh = o + h * (nope + V) * L; /* [nope + V][L] */
        for (int64_t i = 0; i < nope; i++)
            for (int64_t j = 0; j < L; j++) oh[i * L + j] = k[(h * L + j) * nope + i];
        memcpy(oh + nope * L, v + h * V * L, (size_t)(V * L) * sizeof *o);
    }
    free(k), free(v);
    *rows = H * (nope + V);
    *lkv = L;
    return o;
}

static int copy_keys(st_gguf_writer *w, const st_gguf *g) {
    int32_t mk = 0, mv = 0, H = 0;
    if (st_gguf_get_i32(g, "deepseek2.attention.key_length_mla", &mk) || st_gguf_get_i32(g, "deepseek2.attention.value_length_mla", &mv) ||
        st_gguf_get_i32(g, "deepseek2.attention.head_count", &H))
        return -1;
    for (int64_t i = 0; i < st_gguf_kv_count(g); i++) {
        const char *key = st_gguf_kv_key(g, i);
        if (strstr(key, "_mla") || !strcmp(key, "general.alignment")) continue;
        if (st_gen_copy_key(w, g, i, key)) return -1;
    }
    return st_gguf_writer_set_u32(w, "deepseek2.attention.key_length", (uint32_t)mk) ||
           st_gguf_writer_set_u32(w, "deepseek2.attention.value_length", (uint32_t)mv) ||
           st_gguf_writer_set_u32(w, "deepseek2.attention.head_count_kv", (uint32_t)H);
}

/* Declares every tensor (attn_kv_b in place of attn_k_b, attn_v_b dropped); *kvb[l] holds the
 * data of layer l's attn_kv_b. */
static int declare(st_gguf_writer *w, const st_gguf *g, float **kvb, int n_layer) {
    for (int64_t i = 0; i < st_gguf_tensor_count(g); i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        int l = -1;
        char name[96];
        if (strstr(t->name, ".attn_v_b.")) continue;
        if (strstr(t->name, ".attn_k_b.") && sscanf(t->name, "blk.%d.", &l) == 1 && l < n_layer) {
            char vname[96];
            snprintf(vname, sizeof vname, "blk.%d.attn_v_b.weight", l);
            int64_t rows = 0, lkv = 0;
            kvb[l] = kv_b(t, st_gguf_tensor_find(g, vname), &rows, &lkv);
            snprintf(name, sizeof name, "blk.%d.attn_kv_b.weight", l);
            const int64_t ne[4] = {lkv, rows, 1, 1};
            if (!kvb[l] || st_gguf_writer_add_tensor(w, name, ST_TYPE_F32, 2, ne)) return -1;
            continue;
        }
        if (st_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne)) return -1;
    }
    return 0;
}

static int write_data(st_gguf_writer *w, const st_gguf *g, float **kvb, int n_layer) {
    for (int64_t i = 0; i < st_gguf_tensor_count(g); i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        int l = -1;
        if (strstr(t->name, ".attn_v_b.")) continue;
        if (strstr(t->name, ".attn_k_b.") && sscanf(t->name, "blk.%d.", &l) == 1 && l < n_layer) {
            char vname[96];
            snprintf(vname, sizeof vname, "blk.%d.attn_v_b.weight", l);
            const int64_t V = st_gguf_tensor_find(g, vname)->ne[1]; /* [H][nope + V][Lkv] */
            const int64_t n = t->ne[2] * (t->ne[0] + V) * t->ne[1];
            if (st_gguf_writer_write(w, kvb[l], (uint64_t)n * sizeof(float))) return -1;
            continue;
        }
        if (st_gguf_writer_write(w, t->data, t->nbytes)) return -1;
    }
    return st_gguf_writer_finish(w);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: mla-expand IN.gguf OUT.gguf\n");
        return 2;
    }
    char err[512];
    st_gguf *g = st_gguf_open(argv[1], err, sizeof err);
    int32_t n_layer = 0;
    if (!g || st_gguf_get_i32(g, "deepseek2.block_count", &n_layer) || n_layer <= 0 || n_layer > 4096) {
        fprintf(stderr, "mla-expand: %s: not a deepseek2 file (%s)\n", argv[1], g ? "no block_count" : err);
        st_gguf_close(g);
        return 1;
    }
    st_gguf_writer *w = st_gguf_writer_new();
    float **kvb = calloc((size_t)n_layer, sizeof *kvb);
    int rc = !w || !kvb || copy_keys(w, g) || declare(w, g, kvb, n_layer) || st_gguf_writer_begin(w, argv[2]) ||
             write_data(w, g, kvb, n_layer);
    if (rc) fprintf(stderr, "mla-expand: %s\n", w ? st_gguf_writer_error(w) : "out of memory");
    for (int l = 0; kvb && l < n_layer; l++) free(kvb[l]);
    free(kvb);
    st_gguf_writer_free(w);
    st_gguf_close(g);
    return rc ? 1 : 0;
}
