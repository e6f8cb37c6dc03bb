/* SPDX-License-Identifier: Apache-2.0 */
/* core/arch: hyperparameters and family rules of generated models, and the refusals with
 * messages naming the problem (unsupported architecture, missing tensor, misshaped tensor,
 * missing key, unsupported rope scaling). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_util.h"
#include "quant/quant.h"

/* Writes a model from hp's tensor table, dropping the tensor named `drop` and giving the one
 * named `bad` a wrong row length; `arch_name` overrides general.architecture. */
static int write_custom(const char *path, const st_hparams *hp, const char *arch_name, const char *drop,
                        const char *bad, const char *rope_type) {
    st_gguf_writer *w = st_gguf_writer_new();
    char k[128];
    const char *a = st_arch_name(hp->arch);
    st_gguf_writer_set_str(w, "general.architecture", arch_name ? arch_name : a);
#define U32(s, v) (snprintf(k, sizeof k, "%s." s, a), st_gguf_writer_set_u32(w, k, (uint32_t)(v)))
    U32("block_count", hp->n_layer);
    U32("embedding_length", hp->n_embd);
    if (hp->n_ff) U32("feed_forward_length", hp->n_ff);
    U32("attention.head_count", hp->n_head);
    U32("attention.head_count_kv", hp->n_head_kv);
    if (hp->n_expert) {
        U32("expert_count", hp->n_expert);
        U32("expert_used_count", hp->n_expert_used);
        U32("expert_feed_forward_length", hp->n_ff_exp);
    }
#undef U32
    snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", a);
    st_gguf_writer_set_f32(w, k, 1e-5f);
    if (rope_type) {
        snprintf(k, sizeof k, "%s.rope.scaling.type", a);
        st_gguf_writer_set_str(w, k, rope_type);
    }
    int64_t n = st_arch_tensor_specs(hp, NULL, 0);
    st_tensor_spec *s = calloc((size_t)n, sizeof *s);
    st_arch_tensor_specs(hp, s, n);
    for (int64_t i = 0; i < n; i++) {
        if (!s[i].required) continue;
        if (drop && !strcmp(s[i].name, drop)) continue;
        int64_t ne[4];
        memcpy(ne, s[i].ne, sizeof ne);
        if (bad && !strcmp(s[i].name, bad)) ne[0] += 2;
        st_gguf_writer_add_tensor(w, s[i].name, ST_TYPE_F32, (uint32_t)s[i].n_dims, ne);
    }
    int rc = st_gguf_writer_begin(w, path);
    static char zeros[1 << 16];
    for (int64_t i = 0; rc == 0; i++) {
        uint64_t b = st_gguf_writer_tensor_nbytes(w, i);
        if (b == 0) break;
        while (b > 0 && rc == 0) {
            size_t c = b > sizeof zeros ? sizeof zeros : (size_t)b;
            rc = st_gguf_writer_write(w, zeros, c);
            b -= c;
        }
    }
    if (rc == 0) rc = st_gguf_writer_finish(w);
    if (rc) fprintf(stderr, "writer: %s\n", st_gguf_writer_error(w));
    st_gguf_writer_free(w);
    free(s);
    return rc;
}

/* Describes `path` and expects a refusal whose message contains every `want` string. */
static void expect_refusal(const char *path, const char *want1, const char *want2) {
    char err[512] = "";
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    CHECK(g != NULL, "open: %s", err);
    if (!g) return;
    st_model_desc *d = st_arch_describe(g, err, sizeof err);
    CHECK(d == NULL, "a broken model was accepted (expected '%s')", want1);
    CHECK(strstr(err, want1) != NULL, "message '%s' does not name '%s'", err, want1);
    if (want2) CHECK(strstr(err, want2) != NULL, "message '%s' does not name '%s'", err, want2);
    printf("refused: %s\n", err);
    st_model_desc_free(d);
    st_gguf_close(g);
}

static void test_refusals(void) {
    char path[512];
    mt_tmp_path(path, sizeof path, "bad.gguf");
    st_gen_params p;
    st_gen_preset("tiny", "qwen3moe", &p);
    st_hparams hp = p.hp;
    hp.n_vocab = 300;
    hp.head_dim_v = hp.head_dim;
    st_arch_apply_family_rules(&hp);

    CHECK(write_custom(path, &hp, "mamba", NULL, NULL, NULL) == 0, "write");
    expect_refusal(path, "unsupported architecture 'mamba'", "qwen3moe");
    CHECK(write_custom(path, &hp, NULL, "blk.1.ffn_down_exps.weight", NULL, NULL) == 0, "write");
    expect_refusal(path, "missing tensor 'blk.1.ffn_down_exps.weight'", NULL);
    CHECK(write_custom(path, &hp, NULL, "blk.0.attn_k_norm.weight", NULL, NULL) == 0, "write");
    expect_refusal(path, "missing tensor 'blk.0.attn_k_norm.weight'", NULL);
    CHECK(write_custom(path, &hp, NULL, NULL, "blk.1.attn_q.weight", NULL) == 0, "write");
    expect_refusal(path, "tensor 'blk.1.attn_q.weight' has shape [66, 64]", "expected [64, 64]");
    CHECK(write_custom(path, &hp, NULL, NULL, NULL, "longrope") == 0, "write");
    expect_refusal(path, "rope scaling type 'longrope'", NULL);
    hp.n_expert_used = 0; /* a MoE family without experts used */
    CHECK(write_custom(path, &hp, NULL, NULL, NULL, NULL) == 0, "write");
    expect_refusal(path, "expert_used_count", NULL);
    unlink(path);
}

static void test_families(void) {
    static const struct {
        const char *arch;
        int rope, qk, bias, moe, norm_w, shexp;
    } f[] = {
        {"llama", ST_ROPE_NORMAL, ST_QK_NORM_NONE, 0, 0, 1, 0},
        {"qwen2", ST_ROPE_NEOX, ST_QK_NORM_NONE, 1, 0, 0, 0},
        {"qwen3", ST_ROPE_NEOX, ST_QK_NORM_HEAD, 0, 0, 0, 0},
        {"qwen2moe", ST_ROPE_NEOX, ST_QK_NORM_NONE, 1, 1, 0, 1},
        {"qwen3moe", ST_ROPE_NEOX, ST_QK_NORM_HEAD, 0, 1, 1, 0},
        {"olmoe", ST_ROPE_NEOX, ST_QK_NORM_FULL, 0, 1, 0, 0},
    };
    char path[512];
    mt_tmp_path(path, sizeof path, "fam.gguf");
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (mt_gen_tiny(f[i].arch, ST_TYPE_Q8_0, 0, 0, path)) {
            CHECK(0, "%s: generate", f[i].arch);
            continue;
        }
        char err[512];
        st_gguf *g = st_gguf_open(path, err, sizeof err);
        st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
        CHECK(d != NULL, "%s: %s", f[i].arch, err);
        if (d) {
            const st_hparams *h = &d->hp;
            CHECK(!strcmp(h->arch_name, f[i].arch), "%s: arch name %s", f[i].arch, h->arch_name);
            CHECK(h->rope_mode == f[i].rope, "%s: rope mode %d", f[i].arch, h->rope_mode);
            CHECK((int)h->qk_norm == f[i].qk, "%s: qk norm %d", f[i].arch, h->qk_norm);
            CHECK(h->has_qkv_bias == f[i].bias, "%s: qkv bias %d", f[i].arch, h->has_qkv_bias);
            CHECK((h->n_expert > 0) == f[i].moe, "%s: experts %d", f[i].arch, h->n_expert);
            if (f[i].moe) {
                CHECK(h->expert_weights_norm == f[i].norm_w, "%s: weights norm %d", f[i].arch, h->expert_weights_norm);
                CHECK((h->n_ff_shexp > 0) == f[i].shexp, "%s: shared expert ff %d", f[i].arch, h->n_ff_shexp);
                CHECK(d->bytes_experts > 0 && d->bytes_expert_slice * (uint64_t)h->n_expert * h->n_layer == d->bytes_experts,
                      "%s: expert byte counts", f[i].arch);
                CHECK(d->layers[1].t[ST_T_FFN_GATE_EXPS] && d->layers[1].t[ST_T_FFN_GATE_EXPS]->ne[2] == h->n_expert,
                      "%s: expert tensor", f[i].arch);
            }
            CHECK(h->n_layer == 2 && h->n_embd == 64 && h->n_vocab > 256, "%s: sizes", f[i].arch);
            CHECK(d->output != d->token_embd && !h->tied_output, "%s: generated models have an output matrix", f[i].arch);
            CHECK(d->bytes_total == d->bytes_nonexpert + d->bytes_experts, "%s: byte totals", f[i].arch);
        }
        st_model_desc_free(d);
        st_gguf_close(g);
    }
    unlink(path);
}

static void test_stories_desc(const char *path) {
    if (access(path, R_OK)) {
        printf("SKIP part: %s not found\n", path);
        return;
    }
    char err[512];
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    CHECK(d != NULL, "stories260K: %s", err);
    if (d) {
        const st_hparams *h = &d->hp;
        CHECK(h->n_layer == 5 && h->n_embd == 64 && h->n_head == 8 && h->n_head_kv == 4 && h->n_ff == 172 &&
                  h->n_vocab == 512 && h->head_dim == 8 && h->rope_mode == ST_ROPE_NORMAL,
              "stories260K hparams: %d layers embd %d heads %d/%d ff %d vocab %d", h->n_layer, h->n_embd, h->n_head,
              h->n_head_kv, h->n_ff, h->n_vocab);
    }
    st_model_desc_free(d);
    st_gguf_close(g);
}

int main(int argc, char **argv) {
    test_refusals();
    test_families();
    if (argc > 1) test_stories_desc(argv[1]);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("arch: all checks passed\n");
    return 0;
}
