/* SPDX-License-Identifier: Apache-2.0 */
/* Model placement: op checks, weights on the device (or in place), ownership of buffers. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_graph.h"
#include "platform/mapfile.h"
#include "model/model_internal.h"
#include "quant/quant.h"

void st_model_params_default(st_model_params *p) {
    memset(p, 0, sizeof *p);
    p->kv_type = ST_TYPE_F16;
    p->n_ctx = 0;
    p->n_seq = 1;
    p->n_batch = 512;
    p->n_out_max = 0;
    p->topk_max = 256;
    p->expert_slots = -1;
    p->expert_policy = ST_EXPERT_LFRU;
}

static void set_strides(st_tensor *t) {
    const st_type_info *ti = st_type_get(t->type);
    t->nb[0] = ti ? ti->type_size : 0;
    t->nb[1] = (int64_t)st_row_size(t->type, t->ne[0]);
    t->nb[2] = t->nb[1] * t->ne[1];
    t->nb[3] = t->nb[2] * t->ne[2];
}

st_tensor st_model_view3(void *data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2) {
    st_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.type = type;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = ne2;
    t.ne[3] = 1;
    set_strides(&t);
    return t;
}

st_tensor st_model_view2(void *data, uint32_t type, int64_t ne0, int64_t ne1) {
    return st_model_view3(data, type, ne0, ne1, 1);
}

int st_model_alloc(st_model *m, uint64_t bytes, void **out, const char *what, char *err, size_t errlen) {
    *out = NULL;
    if (m->n_bufs == m->cap_bufs) {
        int32_t cap = m->cap_bufs ? m->cap_bufs * 2 : 64;
        void **nb = realloc(m->bufs, (size_t)cap * sizeof *nb);
        if (!nb) {
            snprintf(err, errlen, "out of host memory tracking device buffers");
            return -1;
        }
        m->bufs = nb;
        m->cap_bufs = cap;
    }
    if (bytes == 0) bytes = 64;
    st_status s = st_dev_alloc(&m->dev, bytes, out);
    if (s != ST_OK || !*out) {
        snprintf(err, errlen, "allocating %.2f MiB for %s on %s failed: %s", (double)bytes / 1048576.0,
                 what, m->dev.props.name, st_dev_error());
        *out = NULL;
        return -1;
    }
    m->bufs[m->n_bufs++] = *out;
    m->bytes_alloc += bytes;
    return 0;
}

void st_model_consumer(st_model *m, const char *consumer) {
    if (m->p.alloc_consumer) m->p.alloc_consumer(m->dev.handle, consumer);
}

static int need_op(st_model *m, uint32_t op, uint32_t type, const char *what, char *err, size_t errlen) {
    if (!st_dev_has_op(&m->dev, op)) {
        snprintf(err, errlen, "backend '%s' (%s, ABI %u.%u) has no %s op, needed for %s", m->dev.api->name,
                 m->dev.name, m->dev.api->abi_major, m->dev.api->abi_minor, st_op_name(op), what);
        return -1;
    }
    if (!st_dev_supports(&m->dev, op, type)) {
        snprintf(err, errlen, "backend '%s' (%s) cannot run %s with %s (needed for %s)", m->dev.api->name,
                 m->dev.name, st_op_name(op), st_type_name(type), what);
        return -1;
    }
    return 0;
}

static int check_ops(st_model *m, char *err, size_t errlen) {
    const st_model_desc *d = m->desc;
    const st_hparams *hp = &m->hp;
    if (m->first && need_op(m, ST_OP_GET_ROWS, d->token_embd->type, "token_embd", err, errlen)) return -1;
    if (m->last && need_op(m, ST_OP_GET_ROWS, ST_TYPE_F32, "output rows", err, errlen)) return -1;
    if (need_op(m, ST_OP_RMS_NORM, ST_TYPE_F32, "norms", err, errlen)) return -1;
    if (need_op(m, ST_OP_ROPE, ST_TYPE_F32, "rope", err, errlen)) return -1;
    if (need_op(m, ST_OP_KV_WRITE, m->p.kv_type, "the KV cache", err, errlen)) return -1;
    if (need_op(m, ST_OP_ATTENTION, m->p.kv_type, "attention", err, errlen)) return -1;
    if (need_op(m, ST_OP_SWIGLU, ST_TYPE_F32, "the FFN", err, errlen)) return -1;
    if (hp->arch == ST_ARCH_GPTOSS) { /* sinks and sliding windows; the clamped SwiGLU */
        if (need_op(m, ST_OP_ATTENTION_EX, m->p.kv_type, "gpt-oss attention (sinks, sliding window)", err, errlen))
            return -1;
        if (need_op(m, ST_OP_SWIGLU_OAI, ST_TYPE_F32, "gpt-oss experts (clamped SwiGLU)", err, errlen)) return -1;
    }
    if (m->last && need_op(m, ST_OP_MATMUL, d->output->type, "output", err, errlen)) return -1;
    for (int l = m->l0; l < m->l1; l++) {
        const st_layer_desc *L = &d->layers[l];
        for (int r = 0; r < ST_T_ROLE_COUNT; r++) {
            const st_gguf_tensor *t = L->t[r];
            if (!t) continue;
            switch (r) {
            case ST_T_ATTN_Q_A: case ST_T_ATTN_Q_B: case ST_T_ATTN_KV_A_MQA:
            case ST_T_ATTN_Q: case ST_T_ATTN_K: case ST_T_ATTN_V: case ST_T_ATTN_OUT:
            case ST_T_FFN_GATE: case ST_T_FFN_UP: case ST_T_FFN_DOWN: case ST_T_FFN_GATE_INP:
            case ST_T_FFN_GATE_INP_SHEXP: case ST_T_FFN_GATE_SHEXP: case ST_T_FFN_UP_SHEXP:
            case ST_T_FFN_DOWN_SHEXP:
                if (need_op(m, ST_OP_MATMUL, t->type, t->name, err, errlen)) return -1;
                break;
            case ST_T_FFN_GATE_EXPS: case ST_T_FFN_UP_EXPS: case ST_T_FFN_DOWN_EXPS: case ST_T_FFN_GATE_UP_EXPS:
            case ST_T_ATTN_K_B: case ST_T_ATTN_V_B: /* per-head matrices run as one grouped matmul */
                if (need_op(m, ST_OP_MOE_MATMUL, t->type, t->name, err, errlen)) return -1;
                break;
            case ST_T_ATTN_Q_BIAS: case ST_T_ATTN_K_BIAS: case ST_T_ATTN_V_BIAS:
                if (need_op(m, ST_OP_ADD, ST_TYPE_F32, t->name, err, errlen)) return -1;
                break;
            case ST_T_FFN_GATE_EXPS_SCALE: case ST_T_FFN_UP_EXPS_SCALE: case ST_T_FFN_DOWN_EXPS_SCALE:
                break; /* gathered by GET_ROWS (F32), applied by MOE_MATMUL */
            default:
                if (st_tensor_role_is_vector((st_tensor_role)r) && r >= ST_T_ATTN_Q_SCALE &&
                    need_op(m, ST_OP_SCALE, ST_TYPE_F32, t->name, err, errlen))
                    return -1;
                break;
            }
        }
        if (L->is_moe) {
            if (hp->n_expert_groups > 1 &&
                need_op(m, ST_OP_ROUTER_GROUPS, ST_TYPE_F32, "group-limited expert routing", err, errlen))
                return -1;
            if (need_op(m, ST_OP_ROUTER, ST_TYPE_F32, "the router", err, errlen)) return -1;
            if (need_op(m, ST_OP_MOE_COMBINE, ST_TYPE_F32, "experts", err, errlen)) return -1;
            if (L->t[ST_T_FFN_GATE_INP_SHEXP] &&
                need_op(m, ST_OP_MUL_ROWS, ST_TYPE_F32, "the shared expert", err, errlen))
                return -1;
        }
    }
    return 0;
}

int st_model_check_stage(const st_model_desc *desc, const st_model_stage *st, int32_t l0, int first, int last,
                         uint32_t kv_type, char *err, size_t errlen) {
    st_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->desc = desc;
    m->hp = desc->hp;
    m->p.kv_type = kv_type;
    m->l0 = l0;
    m->l1 = l0 + st->n_layers;
    m->first = first;
    m->last = last;
    int rc = st_dev_wrap(&m->dev, st->api, st->dev, st->index, 1) != ST_OK ? -1 : check_ops(m, err, errlen);
    if (rc && !err[0]) snprintf(err, errlen, "%s", st_dev_error());
    free(m);
    return rc;
}

/* Expert offload reads expert weights through the slot cache and the CPU module, which do not
 * apply per-expert weight scales: refuse that combination rather than compute without them. */
static int check_hybrid(const st_model *m, char *err, size_t errlen) {
    int merged = 0;
    for (int l = 0; l < m->hp.n_layer; l++) merged |= m->desc->layers[l].t[ST_T_FFN_GATE_UP_EXPS] != NULL;
    if (m->hybrid && (merged || m->hp.arch == ST_ARCH_GPTOSS)) {
        snprintf(err, errlen, "%s: expert offload does not handle %s yet; load with every expert resident",
                 m->hp.arch_name, merged ? "merged gate/up experts (ffn_gate_up_exps)" : "expert biases");
        return -1;
    }
    for (int l = 0; m->hybrid && l < m->hp.n_layer; l++) {
        if (!st_model_layer_has_expert_scales(m, l)) continue;
        snprintf(err, errlen, "layer %d: per-expert weight scales (ffn_*_exps.scale) are not supported with "
                 "expert offload; load with every expert resident", l);
        return -1;
    }
    return 0;
}

/* Which fused ops (ABI 1.1) the model can use on this device: each needs its slot and the
 * model's types; STRATA_NO_FUSED=1 turns them off (to compare with the unfused path). */
static void find_fused(st_model *m) {
    const char *e = getenv("STRATA_NO_FUSED");
    if (e && *e && strcmp(e, "0")) return;
    m->fused_attn = m->hp.arch != ST_ARCH_GPTOSS && st_dev_supports(&m->dev, ST_OP_ATTN_PREP, m->p.kv_type);
    int moe = m->hp.n_expert > 0 && m->hp.arch != ST_ARCH_GPTOSS && st_dev_has_op(&m->dev, ST_OP_MOE_GATE_UP) &&
              st_dev_has_op(&m->dev, ST_OP_MOE_DOWN);
    for (int l = m->l0; moe && l < m->l1; l++) {
        const st_layer_desc *L = &m->desc->layers[l];
        if (!L->is_moe) continue;
        const st_gguf_tensor *g = L->t[ST_T_FFN_GATE_EXPS], *u = L->t[ST_T_FFN_UP_EXPS], *dn = L->t[ST_T_FFN_DOWN_EXPS];
        moe = g && u && dn && g->type == u->type && !st_model_layer_has_expert_scales(m, l) &&
              st_dev_supports(&m->dev, ST_OP_MOE_GATE_UP, g->type) && st_dev_supports(&m->dev, ST_OP_MOE_DOWN, dn->type);
    }
    m->fused_moe = moe;
}

/* Tells the caller's progress hook how far the weights' upload is. */
static void uploaded(const st_model *m) {
    if (m->p.progress) m->p.progress(m->p.progress_user, m->bytes_uploaded);
}

static int is_vector_role(int r) { return st_tensor_role_is_vector((st_tensor_role)r); }

/* Places one tensor: in place, converted to F32 (vectors), or copied. */
static int place(st_model *m, const st_gguf_tensor *g, int role, st_tensor *out, char *err, size_t errlen) {
    st_model_consumer(m, st_tensor_role_is_expert((st_tensor_role)role) ? "expert_cache" : "weights");
    *out = st_model_view3(NULL, g->type, g->ne[0], g->ne[1], g->ne[2]);
    if (is_vector_role(role) && g->type != ST_TYPE_F32) {
        int64_t n = g->ne[0] * g->ne[1] * g->ne[2] * g->ne[3];
        float *buf = malloc((size_t)n * sizeof *buf);
        if (!buf) {
            snprintf(err, errlen, "out of host memory converting %s", g->name);
            return -1;
        }
        st_dequantize_row(g->type, g->data, buf, n);
        *out = st_model_view3(NULL, ST_TYPE_F32, g->ne[0], g->ne[1], g->ne[2]);
        st_status s = ST_OK;
        if (st_model_alloc(m, (uint64_t)n * 4, &out->data, g->name, err, errlen)) s = ST_OOM;
        else if ((s = st_dev_h2d(&m->dev, m->stream, out->data, buf, (uint64_t)n * 4)) == ST_OK)
            s = st_dev_sync(&m->dev, m->stream); /* buf is borrowed until the copy ends */
        free(buf);
        if (s != ST_OK) {
            if (s != ST_OOM)
                snprintf(err, errlen, "uploading %s: %s", g->name, st_dev_error());
            return -1;
        }
        m->bytes_uploaded += (uint64_t)n * 4;
        uploaded(m);
        return 0;
    }
    if (m->in_place) {
        out->data = (void *)(uintptr_t)g->data; /* read-only mapping: ops never write weights */
        return 0;
    }
    if (st_model_alloc(m, g->nbytes, &out->data, g->name, err, errlen)) return -1;
    st_status s = st_dev_h2d(&m->dev, m->stream, out->data, g->data, g->nbytes);
    if (s != ST_OK) {
        snprintf(err, errlen, "uploading %s (%.1f MiB): %s", g->name, (double)g->nbytes / 1048576.0,
                 st_dev_error());
        return -1;
    }
    m->bytes_uploaded += g->nbytes;
    uploaded(m);
    return 0;
}

/* Q, K and V of layer l in one allocation (see st_layer_w.qkv): 1 when placed so, 0 when they
 * cannot be (the caller places them one by one), -1 on error. The allocation is the sum of the
 * three rounded sizes, as the memory plan counts them. */
static int place_qkv(st_model *m, int l, char *err, size_t errlen) {
    const st_gguf_tensor *g[3] = {m->desc->layers[l].t[ST_T_ATTN_Q], m->desc->layers[l].t[ST_T_ATTN_K],
                                  m->desc->layers[l].t[ST_T_ATTN_V]};
    if (m->in_place || !g[0] || !g[1] || !g[2]) return 0;
    for (int i = 0; i < 3; i++)
        if (g[i]->type != g[0]->type || g[i]->ne[0] != g[0]->ne[0] || g[i]->ne[2] * g[i]->ne[3] != 1) return 0;
    st_model_consumer(m, "weights");
    uint64_t bytes = 0;
    for (int i = 0; i < 3; i++) bytes += st_model_round(g[i]->nbytes);
    void *base = NULL;
    if (st_model_alloc(m, bytes, &base, g[0]->name, err, errlen)) return -1;
    st_layer_w *L = &m->layers[l];
    static const int roles[3] = {ST_T_ATTN_Q, ST_T_ATTN_K, ST_T_ATTN_V};
    uint64_t off = 0;
    int64_t rows = 0;
    for (int i = 0; i < 3; i++) {
        L->t[roles[i]] = st_model_view3((char *)base + off, g[i]->type, g[i]->ne[0], g[i]->ne[1], 1);
        st_status s = st_dev_h2d(&m->dev, m->stream, (char *)base + off, g[i]->data, g[i]->nbytes);
        if (s != ST_OK) {
            snprintf(err, errlen, "uploading %s: %s", g[i]->name, st_dev_error());
            return -1;
        }
        m->bytes_uploaded += g[i]->nbytes;
        uploaded(m);
        off += g[i]->nbytes;
        rows += g[i]->ne[1];
    }
    L->qkv = st_model_view3(base, g[0]->type, g[0]->ne[0], rows, 1);
    return 1;
}

/* Weights read in place: start reading the file's pages ahead (asynchronous), or say that the
 * file is larger than the memory available, so its pages will be read from disk during steps.
 * (MADV_POPULATE_READ at load measured slower here, cold and warm: page faults of the first step
 * map large folios of the page cache cheaply; see backends/cpu/README.md.) */
static void prefault_in_place(const st_model *m) {
    const st_gguf *g = m->desc->gguf;
    uint64_t bytes = 0;
    for (int64_t i = 0; i < st_gguf_tensor_count(g); i++) bytes += st_gguf_tensor_at(g, i)->nbytes;
    if (m->dev.props.mem_free && bytes > m->dev.props.mem_free) {
        fprintf(stderr, "strata: note: the weights (%.1f GiB) exceed the host memory available (%.1f GiB); "
                "their pages will be read from disk during steps\n", (double)bytes / 1073741824.0,
                (double)m->dev.props.mem_free / 1073741824.0);
        return;
    }
    for (int64_t i = 0; i < st_gguf_tensor_count(g); i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        st_gguf_advise(g, t, 0, t->nbytes, ST_MAP_WILLNEED);
    }
}

/* The per-tensor ".scale" values of layer l, read on the host (1 where absent). */
static void read_scales(st_model *m, int l) {
    const st_layer_desc *D = &m->desc->layers[l];
    st_layer_w *L = &m->layers[l];
    for (int r = 0; r < ST_T_ROLE_COUNT; r++) {
        const int sr = st_tensor_role_scale_of((st_tensor_role)r);
        L->scale[r] = 1.0f;
        if (sr < 0 || !D->t[sr] || st_tensor_role_is_expert((st_tensor_role)r)) continue;
        st_dequantize_row(D->t[sr]->type, D->t[sr]->data, &L->scale[r], 1); /* [1] */
    }
}

/* Nonzero when layer l has per-expert weight scales (ffn_*_exps.scale). */
int st_model_layer_has_expert_scales(const st_model *m, int l) {
    const st_layer_desc *D = &m->desc->layers[l];
    return D->t[ST_T_FFN_GATE_EXPS_SCALE] || D->t[ST_T_FFN_UP_EXPS_SCALE] || D->t[ST_T_FFN_DOWN_EXPS_SCALE];
}

/* Merged experts [n_expert][2F][K]: gate and up become views of its two halves (each expert's
 * rows 0..F-1 and F..2F-1; nb[2] stays the expert stride). */
static void split_gate_up(st_layer_w *L) {
    const st_tensor *gu = &L->t[ST_T_FFN_GATE_UP_EXPS];
    if (!gu->data) return;
    st_tensor g = *gu;
    g.ne[1] = gu->ne[1] / 2;
    st_tensor u = g;
    u.data = (char *)gu->data + g.ne[1] * gu->nb[1];
    L->t[ST_T_FFN_GATE_EXPS] = g;
    L->t[ST_T_FFN_UP_EXPS] = u;
}

static int place_weights(st_model *m, char *err, size_t errlen) {
    const st_model_desc *d = m->desc;
    if (m->in_place && !m->hybrid) prefault_in_place(m);
    if (m->first && place(m, d->token_embd, ST_T_TOKEN_EMBD, &m->tok_embd, err, errlen)) return -1;
    if (m->last && place(m, d->output_norm, ST_T_OUTPUT_NORM, &m->output_norm, err, errlen)) return -1;
    if (m->last && d->output == d->token_embd && m->first) m->output = m->tok_embd;
    else if (m->last && place(m, d->output ? d->output : d->token_embd, ST_T_OUTPUT, &m->output, err, errlen))
        return -1; /* tied to an embedding that lives on the first stage's device: a copy here */
    for (int l = m->l0; l < m->l1; l++) {
        read_scales(m, l);
        const int merged = place_qkv(m, l, err, errlen);
        if (merged < 0) return -1;
        for (int r = 0; r < ST_T_ROLE_COUNT; r++) {
            const st_gguf_tensor *g = d->layers[l].t[r];
            if (!g) continue;
            if (merged && (r == ST_T_ATTN_Q || r == ST_T_ATTN_K || r == ST_T_ATTN_V)) continue;
            if (m->hybrid && st_tensor_role_is_expert((st_tensor_role)r)) {
                /* stays in the file: the slot cache and the CPU module read it there */
                m->layers[l].t[r] = st_model_view3(NULL, g->type, g->ne[0], g->ne[1], g->ne[2]);
                continue;
            }
            if (place(m, g, r, &m->layers[l].t[r], err, errlen)) return -1;
        }
        split_gate_up(&m->layers[l]);
    }
    st_status s = st_dev_sync(&m->dev, m->stream);
    if (s != ST_OK) {
        snprintf(err, errlen, "uploading weights: %s", st_dev_error());
        return -1;
    }
    return 0;
}

st_model *st_model_load(const st_model_desc *desc, const st_backend_api *api, st_device *dev,
                        uint32_t dev_index, const st_model_params *pin, char *err, size_t errlen) {
    st_model_stage one = {api, dev, dev_index, desc->hp.n_layer, 0, -1};
    return st_model_load_split(desc, &one, 1, pin, err, errlen);
}

st_model *st_model_load_stage(const st_model_desc *desc, const st_model_stage *st, int32_t l0, int first, int last,
                              const st_model_params *pin, char *err, size_t errlen) {
    st_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    const st_backend_api *api = st->api;
    st_device *dev = st->dev;
    const uint32_t dev_index = st->index;
    m->l0 = l0;
    m->l1 = l0 + st->n_layers;
    m->first = first;
    m->last = last;
    m->desc = desc;
    m->hp = desc->hp;
    st_model_params_default(&m->p);
    if (pin) m->p = *pin;
    if (m->p.n_seq <= 0) m->p.n_seq = 1;
    if (m->p.n_batch <= 0) m->p.n_batch = 512;
    if (m->p.n_ctx <= 0) m->p.n_ctx = m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    if (m->p.n_ctx <= 0) m->p.n_ctx = 4096;
    if (m->p.n_out_max <= 0) m->p.n_out_max = m->p.n_seq;
    if (m->p.n_out_max > m->p.n_batch) m->p.n_out_max = m->p.n_batch;
    if (m->p.topk_max <= 0) m->p.topk_max = 256;
    if (m->p.topk_max > m->hp.n_vocab) m->p.topk_max = m->hp.n_vocab;
    if (st_dev_wrap(&m->dev, api, dev, dev_index, 1) != ST_OK) {
        snprintf(err, errlen, "backend '%s': device %u properties: %s", api->name, dev_index, st_dev_error());
        free(m);
        return NULL;
    }
    m->in_place = (m->dev.props.caps & ST_CAP_UNIFIED) && !m->p.no_in_place;
    m->hybrid = m->p.expert_slots >= 0 && m->hp.n_expert > 0;
    if (!m->hybrid) m->p.expert_slots = -1;
    m->layers = calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    if (!m->layers) {
        snprintf(err, errlen, "out of host memory");
        free(m);
        return NULL;
    }
    if (check_ops(m, err, errlen) || check_hybrid(m, err, errlen)) {
        free(m->layers);
        free(m);
        return NULL;
    }
    find_fused(m);
    if (st_dev_stream_create(&m->dev, &m->stream) != ST_OK) {
        snprintf(err, errlen, "creating a stream on %s: %s", m->dev.props.name, st_dev_error());
        free(m->layers);
        free(m);
        return NULL;
    }
    if (place_weights(m, err, errlen) || st_model_buffers_create(m, err, errlen) ||
        (m->hybrid && st_model_experts_create(m, err, errlen))) {
        st_model_consumer(m, NULL);
        st_model_free(m);
        return NULL;
    }
    st_model_consumer(m, NULL);
    return m;
}

void st_model_free(st_model *m) {
    if (!m) return;
    st_model_free(m->next);
    st_model_split_free(m);
    if (m->stream) st_dev_sync(&m->dev, m->stream);
    st_model_graph_release(m);
    st_model_experts_free(m);
    st_kv_free(m->kv);
    for (int32_t i = m->n_bufs - 1; i >= 0; i--) st_dev_free(&m->dev, m->bufs[i]);
    if (m->stream) st_dev_stream_destroy(&m->dev, m->stream);
    free(m->bufs);
    free(m->layers);
    free(m->w.inp_host);
    if (!m->counts_shared) free(m->expert_counts);
    free(m->rids_host);
    free(m->seq_len0);
    free(m->seq_len_run);
    free(m);
}

const st_model_desc *st_model_desc_of(const st_model *m) { return m->desc; }
const st_model_params *st_model_params_of(const st_model *m) { return &m->p; }
st_kv *st_model_kv(st_model *m) { return m->kv; }
int st_model_weights_in_place(const st_model *m) { return m->in_place; }
uint64_t st_model_weight_bytes_uploaded(const st_model *m) {
    uint64_t b = 0;
    for (; m; m = m->next) b += m->bytes_uploaded;
    return b;
}
int32_t st_model_n_out(const st_model *m) { return m->n_out; }

void st_model_count_experts(st_model *m, int on) {
    for (; m; m = m->next) { /* every stage counts its layers into the head's table */
        m->counts_on = on && m->expert_counts != NULL;
        m->count_experts = m->counts_on || m->route_stats;
    }
}
void st_model_route_stats(st_model *m, struct st_route_stats *s) {
    for (; m; m = m->next) {
        m->route_stats = m->expert_counts ? s : NULL;
        m->count_experts = m->counts_on || m->route_stats;
    }
}
const uint64_t *st_model_expert_counts(const st_model *m) { return m->expert_counts; }
void st_model_expert_counts_reset(st_model *m) {
    if (m->expert_counts)
        memset(m->expert_counts, 0, (size_t)m->hp.n_layer * (size_t)m->hp.n_expert * sizeof *m->expert_counts);
}
