/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the model tests. */
#include "model_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int g_fail = 0;

void mt_tmp_path(char *buf, size_t len, const char *name) {
    const char *d = getenv("TMPDIR");
    snprintf(buf, len, "%s/strata-test-%d-%s", d && *d ? d : "/tmp", (int)getpid(), name);
}

int mt_gen_tiny(const char *arch, uint32_t wtype, int embd, int ff, const char *path) {
    st_gen_params p;
    if (st_gen_preset("tiny", arch, &p)) {
        fprintf(stderr, "no tiny preset for %s\n", arch);
        return -1;
    }
    p.wtype = wtype;
    if (embd > 0) {
        p.hp.n_embd = embd;
        p.hp.head_dim = embd / p.hp.n_head;
        p.hp.n_rot = p.hp.head_dim;
    }
    if (ff > 0) {
        if (p.hp.n_ff > 0) p.hp.n_ff = ff;
        if (p.hp.n_ff_exp > 0) p.hp.n_ff_exp = ff;
        if (p.hp.n_ff_shexp > 0) p.hp.n_ff_shexp = ff;
    }
    p.seed = 7;
    p.router_skew = 0.5f;
    char err[512];
    if (st_gen_model(&p, path, err, sizeof err)) {
        fprintf(stderr, "gen %s: %s\n", arch, err);
        return -1;
    }
    return 0;
}

int mt_load_on(mt_model *t, const char *path, const st_backend_api *api, uint32_t index,
               const st_model_params *p) {
    return mt_load_dev(t, path, api, index, NULL, p);
}

int mt_load_dev(mt_model *t, const char *path, const st_backend_api *api, uint32_t index, st_device *dev,
                const st_model_params *p) {
    char err[512];
    memset(t, 0, sizeof *t);
    t->g = st_gguf_open(path, err, sizeof err);
    if (!t->g) goto fail;
    t->d = st_arch_describe(t->g, err, sizeof err);
    if (!t->d) goto fail;
    t->api = api;
    if (dev) {
        t->dev = dev;
    } else if (api->device_open(index, &t->dev) != ST_OK) {
        t->dev = NULL;
        snprintf(err, sizeof err, "device_open: %s", api->last_error());
        goto fail;
    } else {
        t->own_dev = 1;
    }
    t->m = st_model_load(t->d, api, t->dev, index, p, err, sizeof err);
    if (!t->m) goto fail;
    return 0;
fail:
    fprintf(stderr, "loading %s: %s\n", path, err);
    mt_unload(t);
    return -1;
}

void mt_unload(mt_model *t) {
    st_model_free(t->m);
    if (t->dev && t->own_dev) t->api->device_close(t->dev);
    st_model_desc_free(t->d);
    st_gguf_close(t->g);
    memset(t, 0, sizeof *t);
}

int mt_prefill_all(mt_model *t, const int32_t *tok, int n, float *out) {
    char err[512];
    st_kv_clear(st_model_kv(t->m));
    if (st_model_eval(t->m, 0, tok, n, 0, 1, out, err, sizeof err)) {
        fprintf(stderr, "eval: %s\n", err);
        return -1;
    }
    return 0;
}

int mt_stepwise_all(mt_model *t, const int32_t *tok, int n, float *out) {
    char err[512];
    const int V = st_model_desc_of(t->m)->hp.n_vocab;
    st_kv_clear(st_model_kv(t->m));
    for (int i = 0; i < n; i++) {
        if (st_model_eval(t->m, 0, tok + i, 1, i, 0, NULL, err, sizeof err) ||
            st_model_logits(t->m, out + (size_t)i * (size_t)V, err, sizeof err)) {
            fprintf(stderr, "step %d: %s\n", i, err);
            return -1;
        }
    }
    return 0;
}

double mt_rel_diff(const float *a, const float *b, size_t n) {
    double md = 0, mb = 1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= md)) md = d; /* NaN propagates */
        if (fabs(b[i]) > mb) mb = fabs(b[i]);
    }
    return md / mb;
}
