/* SPDX-License-Identifier: Apache-2.0 */
/* Shared code of the planner tests. */
#include "plan_testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_registry.h"

int g_fail = 0;

void pt_tmp_path(char *buf, size_t len, const char *name) {
    const char *d = getenv("TMPDIR");
    snprintf(buf, len, "%s/strata-plan-%d-%s", d && *d ? d : "/tmp", (int)getpid(), name);
}

int pt_write_model(const pt_shape *s, const char *path) {
    st_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.arch = (st_arch_id)s->arch;
    hp.n_layer = s->n_layer;
    hp.n_embd = s->n_embd;
    hp.n_head = s->n_head;
    hp.n_head_kv = s->n_head_kv;
    hp.head_dim = s->head_dim;
    hp.head_dim_v = s->head_dim;
    hp.n_rot = s->head_dim;
    hp.n_ff = s->n_ff;
    hp.n_vocab = s->n_vocab;
    hp.n_expert = s->n_expert;
    hp.n_expert_used = s->n_expert_used;
    hp.n_ff_exp = s->n_ff_exp;
    hp.n_ctx_train = s->n_ctx_train;
    st_arch_apply_family_rules(&hp);
    int64_t n = st_arch_tensor_specs(&hp, NULL, 0);
    st_tensor_spec *sp = calloc((size_t)n, sizeof *sp);
    st_gguf_writer *w = st_gguf_writer_new();
    int rc = -1;
    if (!sp || !w) goto out;
    st_arch_tensor_specs(&hp, sp, n);
    const char *a = st_arch_name(hp.arch);
    char k[128];
    int bad = 0;
#define U32(suffix, v) (snprintf(k, sizeof k, "%s." suffix, a), bad |= st_gguf_writer_set_u32(w, k, (uint32_t)(v)))
#define F32(suffix, v) (snprintf(k, sizeof k, "%s." suffix, a), bad |= st_gguf_writer_set_f32(w, k, (v)))
    bad |= st_gguf_writer_set_str(w, "general.architecture", a);
    U32("block_count", hp.n_layer);
    U32("context_length", hp.n_ctx_train);
    U32("embedding_length", hp.n_embd);
    if (hp.n_ff > 0) U32("feed_forward_length", hp.n_ff);
    U32("attention.head_count", hp.n_head);
    U32("attention.head_count_kv", hp.n_head_kv);
    U32("attention.key_length", hp.head_dim);
    U32("attention.value_length", hp.head_dim);
    F32("attention.layer_norm_rms_epsilon", 1e-6f);
    F32("rope.freq_base", 1000000.0f);
    if (hp.n_expert > 0) {
        U32("expert_count", hp.n_expert);
        U32("expert_used_count", hp.n_expert_used);
        U32("expert_feed_forward_length", hp.n_ff_exp);
    }
    if (s->yarn_factor > 0) {
        snprintf(k, sizeof k, "%s.rope.scaling.type", a);
        bad |= st_gguf_writer_set_str(w, k, "yarn");
        F32("rope.scaling.factor", s->yarn_factor);
        U32("rope.scaling.original_context_length", s->yarn_orig_ctx);
    }
#undef U32
#undef F32
    uint64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!sp[i].required && sp[i].role != ST_T_OUTPUT) continue;
        uint32_t type = sp[i].n_dims == 1 ? ST_TYPE_F32 : s->wtype;
        bad |= st_gguf_writer_add_tensor(w, sp[i].name, type, (uint32_t)sp[i].n_dims, sp[i].ne);
    }
    if (bad) goto out;
    for (int64_t i = 0; st_gguf_writer_tensor_nbytes(w, i) > 0; i++) total += st_gguf_writer_tensor_nbytes(w, i);
    if (st_gguf_writer_begin(w, path)) goto out;
    {
        static char zero[1 << 16];
        while (total > 0) {
            size_t c = total < sizeof zero ? (size_t)total : sizeof zero;
            if (st_gguf_writer_write(w, zero, c)) goto out;
            total -= c;
        }
    }
    if (st_gguf_writer_finish(w)) goto out;
    rc = 0;
out:
    if (rc) fprintf(stderr, "writing %s: %s\n", path, w ? st_gguf_writer_error(w) : "out of memory");
    st_gguf_writer_free(w);
    free(sp);
    return rc;
}

int pt_open_model(pt_model *m, const char *path) {
    char err[512];
    memset(m, 0, sizeof *m);
    m->g = st_gguf_open(path, err, sizeof err);
    if (m->g) m->d = st_arch_describe(m->g, err, sizeof err);
    if (!m->d) {
        fprintf(stderr, "opening %s: %s\n", path, err);
        pt_close_model(m);
        return -1;
    }
    return 0;
}

void pt_close_model(pt_model *m) {
    st_model_desc_free(m->d);
    if (m->g) st_gguf_close(m->g);
    memset(m, 0, sizeof *m);
}

int pt_sim_open(pt_sim *s, const char *module_path, const char *config) {
    memset(s, 0, sizeof *s);
    setenv("STRATA_SIM", config, 1);
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    opt.search_path = module_path;
    opt.ignore_env_path = 1;
    opt.skip_exe_dir = 1;
    st_backend_registry *reg = st_backend_registry_open(&opt);
    if (!reg) return -1;
    s->reg = reg;
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg) && s->n < PT_MAX_DEV; i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (strcmp(d->module->api->name, "sim")) continue;
        s->api = d->module->api;
        int k = s->n;
        s->index[k] = d->index;
        if (s->api->device_open(d->index, &s->dev[k]) != ST_OK) {
            fprintf(stderr, "opening sim device %u: %s\n", d->index, s->api->last_error());
            pt_sim_close(s);
            return -1;
        }
        s->n++;
        st_plan_device_in *in = &s->in[k];
        memset(in, 0, sizeof *in);
        snprintf(in->name, sizeof in->name, "%s", d->props->name);
        uint64_t fr = 0, tot = 0;
        s->api->mem_info(s->dev[k], &fr, &tot);
        in->mem_free = fr;
        in->mem_total = tot;
        in->runtime_overhead = 0; /* the sim's runtime takes no device memory */
    }
    if (s->n == 0) {
        fprintf(stderr, "no sim device with STRATA_SIM='%s'\n", config);
        pt_sim_close(s);
        return -1;
    }
    return 0;
}

uint64_t pt_sim_used(const pt_sim *s, int i) {
    uint64_t fr = 0, tot = 0;
    if (s->api->mem_info(s->dev[i], &fr, &tot) != ST_OK) return UINT64_MAX;
    return tot - fr;
}

void pt_sim_close(pt_sim *s) {
    for (int i = 0; i < s->n; i++) {
        if (!s->dev[i]) continue;
        st_status st = s->api->device_close(s->dev[i]);
        CHECK(st == ST_OK, "closing sim device %d: %s", i, s->api->last_error());
    }
    if (s->reg) st_backend_registry_close((st_backend_registry *)s->reg);
    memset(s, 0, sizeof *s);
}
