/* SPDX-License-Identifier: Apache-2.0 */
/* strata_model: the file, its description and tokenizer, the device, the memory plan, the
 * weights and the engine every context of the model shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "backend/device_pick.h"
#include "kv/kv.h"
#include "model/ref_device.h"
#include "platform/dl.h"
#include "progress/progress.h"

#define V1_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

STRATA_API void strata_model_options_init(strata_model_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->device = -1;
    o->expert_cache = -1;
    o->n_cpu_moe = -1;
}

/* The caller's options over the defaults, whatever header version it was built with. */
static strata_status read_options(const strata_model_options *in, strata_model_options *o) {
    strata_model_options_init(o);
    if (!in) return STRATA_OK;
    if (st_api_size_bad(in->size, V1_END(strata_model_options, verbose)))
        return st_api_fail(STRATA_ERR_INVALID, "strata_model_options.size is %u: call strata_model_options_init",
                           in->size);
    memcpy(o, in, in->size < sizeof *o ? in->size : sizeof *o);
    o->size = sizeof *o;
    if (o->n_parallel < 0 || o->n_parallel > 256 || o->n_ctx < 0 || o->n_batch < 0 || o->threads < 0)
        return st_api_fail(STRATA_ERR_INVALID, "options: n_parallel (0..256), n_ctx, n_batch and threads must not be negative");
    if (o->kv_type && st_kv_type_from_name(o->kv_type) < 0)
        return st_api_fail(STRATA_ERR_INVALID, "options: kv_type must be f16, f32 or q8_0 (got '%s')", o->kv_type);
    return STRATA_OK;
}

/* Where modules are looked for: the option, else $STRATA_BACKEND_PATH, else beside this
 * library (<libdir>/strata/backends) and the install prefix; the executable-relative directory
 * is searched after these in every case. */
static const char *module_path(const strata_model_options *o, char *buf, size_t len) {
    if (o->backend_path) return o->backend_path;
    if (getenv("STRATA_BACKEND_PATH")) return NULL;
    char dir[2048];
    if (st_code_dir((const void *)&strata_model_open, dir, sizeof dir) == 0)
        snprintf(buf, len, "%s/strata/backends:%s", dir, STRATA_INSTALL_MODULE_PATH);
    else
        snprintf(buf, len, "%s", STRATA_INSTALL_MODULE_PATH);
    return buf;
}

static strata_status open_file(strata_model *m, const char *path) {
    char err[1024];
    if (!(m->g = st_gguf_open(path, err, sizeof err))) return st_api_fail(STRATA_ERR_IO, "%s", err);
    if (!(m->d = st_arch_describe(m->g, err, sizeof err))) return st_api_fail(STRATA_ERR_FORMAT, "%s: %s", path, err);
    if (!(m->tok = st_tokenizer_from_gguf(m->g, err, sizeof err)))
        return st_api_fail(STRATA_ERR_FORMAT, "tokenizer of %s: %s", path, err);
    return STRATA_OK;
}

/* Chooses and opens the device: the scalar reference for backend "ref", else a module's. */
static strata_status open_device(strata_model *m, const strata_model_options *o) {
    if (o->backend && !strcmp(o->backend, "ref")) {
        m->api = st_ref_device_api(1);
        snprintf(m->device_text, sizeof m->device_text, "ref device 0: scalar reference (host)");
    } else {
        char path[4096], err[512];
        if (o->threads > 0) st_backend_set_threads((unsigned)o->threads);
        st_backend_options bo;
        memset(&bo, 0, sizeof bo);
        bo.search_path = module_path(o, path, sizeof path);
        if (!(m->reg = st_backend_registry_open(&bo))) return st_api_fail(STRATA_ERR_NO_MEMORY, "out of memory");
        m->pick = st_backend_pick(m->reg, o->backend, o->device, err, sizeof err);
        if (!m->pick) return st_api_fail(STRATA_ERR_NO_DEVICE, "%s", err);
        m->api = m->pick->module->api;
        m->index = m->pick->index;
        snprintf(m->device_text, sizeof m->device_text, "%s device %u: %s", m->pick->module->backend, m->index,
                 m->pick->props->name);
    }
    if (m->api->device_open(m->index, &m->dev) != ST_OK) {
        m->dev = NULL;
        return st_api_fail(STRATA_ERR_NO_DEVICE, "opening %s: %s", m->device_text, m->api->last_error());
    }
    return STRATA_OK;
}

static void plan_options(const strata_model_options *o, st_offload_opts *oo) {
    st_offload_opts_init(oo);
    oo->vram_budget = o->vram_budget;
    oo->reserve = o->vram_reserve;
    oo->expert_cache = o->expert_cache;
    oo->n_cpu_moe = o->n_cpu_moe;
    oo->profile = o->expert_profile;
    oo->given = o->vram_budget || o->vram_reserve || o->expert_cache >= 0 || o->n_cpu_moe >= 0 || o->expert_profile;
}

/* Plans the device's memory (with a registry) and loads the weights into the plan. */
static strata_status load_weights(strata_model *m, const strata_model_options *o, const char *path) {
    char err[2048];
    st_model_params mp;
    st_model_params_default(&mp);
    if (o->kv_type) mp.kv_type = (uint32_t)st_kv_type_from_name(o->kv_type);
    if (o->n_ctx) mp.n_ctx = o->n_ctx;
    if (o->n_batch) mp.n_batch = o->n_batch;
    if (o->no_mmap) mp.no_in_place = 1;
    mp.n_seq = m->n_parallel;
    mp.n_out_max = m->n_parallel;
    FILE *log = o->verbose ? stderr : NULL;
    const int mode = o->progress > 0 ? ST_PROGRESS_ALWAYS : o->progress < 0 ? ST_PROGRESS_AUTO : ST_PROGRESS_NEVER;
    st_progress pg;
    if (!m->reg) {
        st_progress_load_begin(&pg, stderr, mode, path, m->d, &mp);
        m->m = st_model_load(m->d, m->api, m->dev, m->index, &mp, err, sizeof err);
    } else {
        st_offload_opts oo;
        plan_options(o, &oo);
        if (st_offload_prepare(&oo, m->d, m->reg, m->pick, m->dev, &mp, log, &m->off, err, sizeof err))
            return st_api_fail(STRATA_ERR_NO_MEMORY, "memory plan of %s on %s: %s", path, m->device_text, err);
        st_progress_load_begin(&pg, stderr, mode, path, m->d, &mp);
        m->m = st_offload_load(&m->off, m->d, m->api, m->dev, m->index, &mp, log, err, sizeof err);
    }
    st_progress_load_end(&pg, &mp);
    if (!m->m)
        return st_api_fail(strstr(err, "memory") ? STRATA_ERR_NO_MEMORY : STRATA_ERR_DEVICE, "loading %s on %s: %s",
                           path, m->device_text, err);
    return STRATA_OK;
}

static strata_status start_engine(strata_model *m) {
    char err[512];
    int32_t eog[16], n_eog = 0;
    for (int32_t t = 0; t < (int32_t)st_tokenizer_vocab_size(m->tok) && n_eog < 16; t++)
        if (st_tokenizer_is_eog(m->tok, t)) eog[n_eog++] = t;
    st_engine_config ec = {.n_slots = m->n_parallel, .queue_max = 1024, .where = m->device_text};
    if (!(m->e = st_engine_new(m->m, &ec, eog, n_eog, err, sizeof err)))
        return st_api_fail(STRATA_ERR_INVALID, "engine: %s", err);
    if (!(m->chat = st_api_chat_new(m->g, m->tok))) return st_api_fail(STRATA_ERR_NO_MEMORY, "out of memory");
    return STRATA_OK;
}

STRATA_API strata_status strata_model_open(const char *path, const strata_model_options *options, strata_model **out) {
    strata_model_options o;
    strata_status s;
    if (!out) return st_api_fail(STRATA_ERR_INVALID, "strata_model_open: out is NULL");
    *out = NULL;
    if (!path) return st_api_fail(STRATA_ERR_INVALID, "strata_model_open: no path");
    if ((s = read_options(options, &o))) return s;
    strata_model *m = calloc(1, sizeof *m);
    if (!m) return st_api_fail(STRATA_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&m->mu, NULL);
    m->n_parallel = o.n_parallel > 0 ? o.n_parallel : 1;
    if ((s = open_file(m, path)) || (s = open_device(m, &o)) || (s = load_weights(m, &o, path)) || (s = start_engine(m)))
        goto fail;
    st_api_ok();
    *out = m;
    return STRATA_OK;
fail:
    strata_model_free(m);
    return s;
}

STRATA_API void strata_model_free(strata_model *m) {
    if (!m) return;
    st_api_chat_free(m->chat);
    st_engine_free(m->e);
    st_model_free(m->m);
    if (m->reg) st_offload_release(&m->off);
    if (m->dev) m->api->device_close(m->dev);
    st_backend_registry_close(m->reg);
    st_tokenizer_free(m->tok);
    st_model_desc_free(m->d);
    st_gguf_close(m->g);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

STRATA_API strata_status strata_model_get_info(const strata_model *m, strata_model_info *out) {
    if (!m || !out) return st_api_fail(STRATA_ERR_INVALID, "strata_model_get_info: NULL argument");
    if (st_api_size_bad(out->size, V1_END(strata_model_info, has_chat_template)))
        return st_api_fail(STRATA_ERR_INVALID, "strata_model_info.size is %u: set it to sizeof(strata_model_info)",
                           out->size);
    strata_model_info i;
    memset(&i, 0, sizeof i);
    const st_hparams *hp = &m->d->hp;
    i.n_vocab = hp->n_vocab;
    i.n_ctx = st_model_params_of(m->m)->n_ctx;
    i.n_ctx_train = hp->n_ctx_train;
    i.n_parallel = m->n_parallel;
    i.n_layer = hp->n_layer;
    i.n_embd = hp->n_embd;
    i.n_expert = hp->n_expert;
    i.n_expert_used = hp->n_expert_used;
    i.token_bos = st_tokenizer_bos(m->tok);
    i.token_eos = st_tokenizer_eos(m->tok);
    snprintf(i.arch, sizeof i.arch, "%s", hp->arch_name);
    snprintf(i.device, sizeof i.device, "%s", m->device_text);
    st_model_desc_summary(m->d, i.description, sizeof i.description);
    i.has_chat_template = st_api_chat_has_template(m->chat);
    uint32_t size = out->size < sizeof i ? out->size : (uint32_t)sizeof i;
    memcpy(out, &i, size);
    out->size = size;
    st_api_ok();
    return STRATA_OK;
}
