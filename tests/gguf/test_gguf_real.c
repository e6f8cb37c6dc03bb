/* SPDX-License-Identifier: Apache-2.0 */
/* The real model ../shared/models/stories260K.gguf (path from the build: STRATA_TEST_MODEL)
 * opens, validates, and reads as the model its README describes: a llama with 5 layers,
 * dim 64, FFN 172, 8 heads (4 KV), a 512-token SPM vocabulary, all tensors F32.
 * Exits 77 (skipped) with a message when the file is absent. */
#include <unistd.h>

#include "gguf_test.h"
#include "strata/backend.h"

#ifndef STRATA_TEST_MODEL
#define STRATA_TEST_MODEL "../shared/models/stories260K.gguf"
#endif

int main(void)
{
    const char *path = STRATA_TEST_MODEL;
    if (access(path, R_OK) != 0) {
        printf("SKIPPED: %s is absent; this test needs the real model there\n", path);
        return 77;
    }
    char err[1024];
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    if (!g)
        return test_result("gguf.real");
    const char *arch = NULL, *tok = NULL;
    CHECK(st_gguf_get_str(g, "general.architecture", &arch, NULL) == 0 && arch &&
          strcmp(arch, "llama") == 0);
    CHECK(st_gguf_get_str(g, "tokenizer.ggml.model", &tok, NULL) == 0 && tok &&
          strcmp(tok, "llama") == 0);
    printf("general.architecture = %s\n", arch ? arch : "(none)");
    uint32_t layers = 0, embd = 0, ff = 0, heads = 0, heads_kv = 0, ctx = 0;
    CHECK(st_gguf_get_u32(g, "llama.block_count", &layers) == 0 && layers == 5);
    CHECK(st_gguf_get_u32(g, "llama.embedding_length", &embd) == 0 && embd == 64);
    CHECK(st_gguf_get_u32(g, "llama.feed_forward_length", &ff) == 0 && ff == 172);
    CHECK(st_gguf_get_u32(g, "llama.attention.head_count", &heads) == 0 && heads == 8);
    CHECK(st_gguf_get_u32(g, "llama.attention.head_count_kv", &heads_kv) == 0 && heads_kv == 4);
    CHECK(st_gguf_get_u32(g, "llama.context_length", &ctx) == 0 && ctx == 2048);
    float eps = 0;
    CHECK(st_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps) == 0 && eps > 0 &&
          eps < 1e-3f);
    st_gguf_type et;
    uint64_t n_vocab = 0, n_scores = 0;
    CHECK(st_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n_vocab) == 0 &&
          et == ST_GGUF_TYPE_STRING && n_vocab == 512);
    CHECK(st_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n_scores) == 0 && n_scores == n_vocab);
    const char *t1 = st_gguf_arr_str(g, "tokenizer.ggml.tokens", 1, NULL);
    CHECK(t1 && strcmp(t1, "<s>") == 0);
    float *scores = malloc(n_vocab * sizeof *scores);
    int32_t *types = malloc(n_vocab * sizeof *types);
    CHECK(st_gguf_arr_copy_f32(g, "tokenizer.ggml.scores", scores, n_vocab) == 0);
    CHECK(st_gguf_arr_copy_i32(g, "tokenizer.ggml.token_type", types, n_vocab) == 0);
    free(scores);
    free(types);

    /* tensors: 2 + 9 per layer + output_norm, all F32, shapes from the hyperparameters */
    CHECK(st_gguf_tensor_count(g) == 3 + 9 * (int64_t)layers);
    const st_gguf_tensor *emb = st_gguf_tensor_find(g, "token_embd.weight");
    CHECK(emb && emb->type == ST_TYPE_F32 && emb->n_dims == 2 && emb->ne[0] == embd &&
          emb->ne[1] == (int64_t)n_vocab && emb->nbytes == 4ull * embd * n_vocab);
    char name[64];
    for (uint32_t l = 0; l < layers; l++) {
        snprintf(name, sizeof name, "blk.%u.ffn_up.weight", l);
        const st_gguf_tensor *t = st_gguf_tensor_find(g, name);
        CHECK_MSG(t && t->ne[0] == embd && t->ne[1] == ff, "%s", name);
        snprintf(name, sizeof name, "blk.%u.attn_k.weight", l);
        t = st_gguf_tensor_find(g, name);
        CHECK_MSG(t && t->ne[0] == embd && t->ne[1] == embd / heads * heads_kv, "%s", name);
    }
    const st_gguf_shard *sh = st_gguf_shard_at(g, 0);
    uint64_t total = 0;
    for (int64_t i = 0; i < st_gguf_tensor_count(g); i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        CHECK(t->type == ST_TYPE_F32);
        CHECK(t->offset + t->nbytes <= sh->size);
        total += t->nbytes;
    }
    CHECK(total <= sh->size - sh->data_offset);
    /* the norm weights are trained values: finite and not all equal */
    const st_gguf_tensor *norm = st_gguf_tensor_find(g, "output_norm.weight");
    CHECK(norm && norm->ne[0] == embd);
    if (norm) {
        float v0, v;
        memcpy(&v0, norm->data, 4);
        int differ = 0;
        for (int64_t k = 1; k < norm->ne[0]; k++) {
            memcpy(&v, (const float *)norm->data + k, 4);
            differ |= v != v0;
            CHECK(v == v && v < 1e6f && v > -1e6f);
        }
        CHECK(differ);
    }
    test_touch_all(g);
    st_gguf_close(g);
    return test_result("gguf.real");
}
