/* SPDX-License-Identifier: Apache-2.0 */
/* The two rules of core/arch: every tensor of a file is used as the reference uses it for the
 * family, or the file is refused naming it; every metadata key whose value changes the math is
 * honoured or refused. Files with what llama.cpp's model saver writes (biases, weight scales,
 * input scales, hparam keys at ignored or neutral values) load; an unknown tensor or a key at a
 * value Strata does not implement is refused by name; the audit lists the rest. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/ref_device.h"
#include "model_util.h"

typedef enum { EXTRA_NONE, EXTRA_U32, EXTRA_BOOL } extra_kind;

/* A tiny family model (zeros) with its required tensors, plus an optional extra tensor of
 * [n_embd] and an optional extra key "<arch>.<key>" (u32 or bool). */
static int write_model(const char *path, const st_hparams *hp, const char *extra_tensor, const char *key,
                       extra_kind kind, uint32_t value) {
    st_gguf_writer *w = st_gguf_writer_new();
    char k[128];
    const char *a = st_arch_name(hp->arch);
    st_gguf_writer_set_str(w, "general.architecture", a);
#define U32(s, v) (snprintf(k, sizeof k, "%s." s, a), st_gguf_writer_set_u32(w, k, (uint32_t)(v)))
    U32("block_count", hp->n_layer);
    U32("embedding_length", hp->n_embd);
    U32("attention.head_count", hp->n_head);
    U32("attention.head_count_kv", hp->n_head_kv);
    U32("expert_count", hp->n_expert);
    U32("expert_used_count", hp->n_expert_used);
    U32("expert_feed_forward_length", hp->n_ff_exp);
#undef U32
    snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", a);
    st_gguf_writer_set_f32(w, k, 1e-5f);
    snprintf(k, sizeof k, "%s.%s", a, key ? key : "");
    if (kind == EXTRA_U32) st_gguf_writer_set_u32(w, k, value);
    if (kind == EXTRA_BOOL) st_gguf_writer_set_bool(w, k, value != 0);
    int64_t n = st_arch_tensor_specs(hp, NULL, 0);
    st_tensor_spec *s = calloc((size_t)n, sizeof *s);
    st_arch_tensor_specs(hp, s, n);
    for (int64_t i = 0; i < n; i++)
        if (s[i].required) st_gguf_writer_add_tensor(w, s[i].name, ST_TYPE_F32, (uint32_t)s[i].n_dims, s[i].ne);
    int64_t ne[4] = {hp->n_embd, 1, 1, 1};
    if (extra_tensor) st_gguf_writer_add_tensor(w, extra_tensor, ST_TYPE_F32, 1, ne);
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

/* describe(path): refused with a message naming `want`, or accepted when want is NULL. */
static void expect(const char *path, const char *want) {
    char err[1024] = "";
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    CHECK(g != NULL, "open: %s", err);
    if (!g) return;
    st_model_desc *d = st_arch_describe(g, err, sizeof err);
    if (want) {
        CHECK(d == NULL, "accepted a file that holds '%s'", want);
        CHECK(strstr(err, want) != NULL, "message '%s' does not name '%s'", err, want);
        printf("refused: %s\n", err);
    } else {
        CHECK(d != NULL, "refused a file it should load: %s", err);
    }
    st_model_desc_free(d);
    st_gguf_close(g);
}

/* The kind of the audit item named `name`, or -1 when the audit does not list it. */
static int audit_kind(const st_audit *a, const char *name) {
    for (int32_t i = 0; i < a->n; i++)
        if (!strcmp(a->items[i].name, name)) return (int)a->items[i].kind;
    return -1;
}

static st_hparams tiny_qwen3moe(void) {
    st_gen_params p;
    st_gen_preset("tiny", "qwen3moe", &p);
    st_hparams hp = p.hp;
    hp.n_vocab = 300;
    hp.head_dim_v = hp.head_dim;
    st_arch_apply_family_rules(&hp);
    return hp;
}

/* Rule 1: a tensor no spec of the family names is refused by name. */
static void test_unknown_tensor(void) {
    char path[512];
    mt_tmp_path(path, sizeof path, "audit.gguf");
    st_hparams hp = tiny_qwen3moe();
    CHECK(write_model(path, &hp, NULL, NULL, EXTRA_NONE, 0) == 0, "write");
    expect(path, NULL);
    CHECK(write_model(path, &hp, "blk.0.attn_output.bias", NULL, EXTRA_NONE, 0) == 0, "write");
    expect(path, "'blk.0.attn_output.bias' not part of the qwen3moe layout");
    CHECK(write_model(path, &hp, "rope_freqs.weight", NULL, EXTRA_NONE, 0) == 0, "write");
    expect(path, "'rope_freqs.weight'");
    unlink(path);
}

/* Rule 2: a key the reference reads and Strata does not implement is accepted at its neutral
 * value and refused by name at any other. */
static void test_keys(void) {
    char path[512];
    mt_tmp_path(path, sizeof path, "audit.gguf");
    st_hparams hp = tiny_qwen3moe();
    static const struct {
        const char *key;
        extra_kind kind;
        uint32_t neutral, other;
    } k[] = {
        {"nextn_predict_layers", EXTRA_U32, 0, 1},
        {"expert_group_count", EXTRA_U32, 1, 4},
        {"attention.causal", EXTRA_BOOL, 1, 0},
        {"embedding_length_out", EXTRA_U32, 0, 7},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        CHECK(write_model(path, &hp, NULL, k[i].key, k[i].kind, k[i].neutral) == 0, "write");
        expect(path, NULL);
        CHECK(write_model(path, &hp, NULL, k[i].key, k[i].kind, k[i].other) == 0, "write");
        char want[128];
        snprintf(want, sizeof want, "'qwen3moe.%s'", k[i].key);
        expect(path, want);
    }
    /* a key the family does not read (as in the reference) is listed, never refused */
    CHECK(write_model(path, &hp, NULL, "attention.clamp_kqv", EXTRA_U32, 9) == 0, "write");
    expect(path, NULL);
    unlink(path);
}

/* What llama.cpp's saver writes loads; the audit lists the unused tensors and unread keys, and
 * the description keeps exactly the tensors the family's forward uses. */
static void test_saver_extras(const char *arch, int biases_used) {
    char path[512], err[512];
    mt_tmp_path(path, sizeof path, "extras.gguf");
    st_gen_params p;
    st_gen_preset("tiny", arch, &p);
    p.saver_extras = 1;
    CHECK(st_gen_model(&p, path, err, sizeof err) == 0, "gen %s: %s", arch, err);
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    CHECK(g != NULL, "open: %s", err);
    if (!g) return;
    st_audit a;
    CHECK(st_arch_audit(g, &a, err, sizeof err) == 0, "audit: %s", err);
    CHECK(a.n_refused == 0, "%s: %d refusals in a file the reference loads", arch, a.n_refused);
    CHECK(audit_kind(&a, "blk.0.attn_q.input_scale") == ST_AUDIT_UNUSED, "%s: input_scale not listed unused", arch);
    char key[96];
    snprintf(key, sizeof key, "%s.attn_logit_softcapping", arch);
    CHECK(audit_kind(&a, key) == ST_AUDIT_NOT_READ, "%s: %s not listed as not read", arch, key);
    snprintf(key, sizeof key, "%s.expert_group_count", arch);
    CHECK(audit_kind(&a, key) == ST_AUDIT_NOT_READ, "%s: %s (0) not listed as neutral", arch, key);
    CHECK((audit_kind(&a, "blk.0.attn_q.bias") == ST_AUDIT_UNUSED) == !biases_used, "%s: bias audit", arch);
    st_audit_free(&a);
    st_model_desc *d = st_arch_describe(g, err, sizeof err);
    CHECK(d != NULL, "describe %s: %s", arch, err);
    if (d) {
        CHECK((d->layers[0].t[ST_T_ATTN_Q_BIAS] != NULL) == biases_used, "%s: bias kept %d", arch, biases_used);
        CHECK((d->layers[0].t[ST_T_ATTN_OUT_SCALE] != NULL), "%s: attn_output.scale not kept", arch);
    }
    st_model_desc_free(d);
    st_gguf_close(g);
    unlink(path);
}

/* Expert offload does not apply per-expert scales: the load says so instead of computing
 * without them. */
static void test_hybrid_refuses_expert_scales(void) {
    char path[512], err[512];
    mt_tmp_path(path, sizeof path, "extras.gguf");
    st_gen_params p;
    st_gen_preset("tiny", "qwen3moe", &p);
    p.saver_extras = 1;
    CHECK(st_gen_model(&p, path, err, sizeof err) == 0, "gen: %s", err);
    st_model_params mp;
    st_model_params_default(&mp);
    mp.n_ctx = 64;
    mp.expert_slots = 2;
    mt_model t;
    CHECK(mt_load(&t, path, st_ref_device_api(1), &mp) != 0, "expert offload loaded a model with expert scales");
    mp.expert_slots = -1;
    CHECK(mt_load(&t, path, st_ref_device_api(1), &mp) == 0, "resident load failed");
    mt_unload(&t);
    unlink(path);
}

int main(void) {
    test_unknown_tensor();
    test_keys();
    test_saver_extras("qwen3moe", 1);
    test_saver_extras("olmoe", 0);
    test_saver_extras("qwen2moe", 1);
    test_hybrid_refuses_expert_scales();
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("arch audit: all checks passed\n");
    return 0;
}
