/* SPDX-License-Identifier: Apache-2.0 */
/* File tier slices, the RAM tier's slot arena, and the CPU FFN of a missed expert. */
#include "experts/expert_tiers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dev.h"
#include "experts/expert_cache.h"
#include "platform/mapfile.h"
#include "quant/quant.h"

#define MIB(b) ((double)(b) / 1048576.0)

static int part_of(const st_gguf_tensor *t, int32_t expert, st_expert_part *p) {
    if (!t || expert < 0 || expert >= t->ne[2]) return -1;
    const uint64_t rb = st_row_size(t->type, t->ne[0]);
    if (rb == 0) return -1;
    p->type = t->type;
    p->cols = t->ne[0];
    p->rows = t->ne[1];
    p->row_bytes = rb;
    p->bytes = rb * (uint64_t)t->ne[1];
    p->data = (const char *)t->data + p->bytes * (uint64_t)expert;
    return 0;
}

int st_expert_slice_of(const st_model_desc *d, int32_t layer, int32_t expert, st_expert_slice *out, char *err,
                       size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!d || layer < 0 || layer >= d->hp.n_layer || !d->layers[layer].is_moe) {
        snprintf(err, errlen, "expert slice: layer %d has no routed experts", layer);
        return -1;
    }
    const st_layer_desc *L = &d->layers[layer];
    if (part_of(L->t[ST_T_FFN_GATE_EXPS], expert, &out->gate) || part_of(L->t[ST_T_FFN_UP_EXPS], expert, &out->up) ||
        part_of(L->t[ST_T_FFN_DOWN_EXPS], expert, &out->down)) {
        snprintf(err, errlen, "expert slice: expert %d of layer %d out of range (%d experts)", expert, layer,
                 d->hp.n_expert);
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->bytes = out->gate.bytes + out->up.bytes + out->down.bytes;
    return 0;
}

int st_expert_prefetch(const st_model_desc *d, int32_t layer, int32_t expert) {
    if (!d || layer < 0 || layer >= d->hp.n_layer || !d->layers[layer].is_moe) return -1;
    const st_tensor_role roles[3] = {ST_T_FFN_GATE_EXPS, ST_T_FFN_UP_EXPS, ST_T_FFN_DOWN_EXPS};
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        const st_gguf_tensor *t = d->layers[layer].t[roles[i]];
        st_expert_part p;
        if (part_of(t, expert, &p)) return -1;
        rc |= st_gguf_advise(d->gguf, t, p.bytes * (uint64_t)expert, p.bytes, ST_MAP_WILLNEED);
    }
    return rc ? -1 : 0;
}

int st_expert_cpu_ffn(const st_expert_slice *s, const float *x, int64_t n, float *out, float *scratch) {
    const st_expert_part *g = &s->gate, *u = &s->up, *dn = &s->down;
    if (g->rows != u->rows || g->cols != u->cols || dn->cols != g->rows || !g->data || !u->data || !dn->data)
        return -1;
    const int64_t F = g->rows, K = g->cols, M = dn->rows;
    float *h = scratch, *up = scratch + F;
    for (int64_t i = 0; i < n; i++) {
        const float *xi = x + i * K;
        for (int64_t f = 0; f < F; f++) {
            double a = st_dot_row_ref(g->type, (const char *)g->data + (uint64_t)f * g->row_bytes, xi, K);
            double b = st_dot_row_ref(u->type, (const char *)u->data + (uint64_t)f * u->row_bytes, xi, K);
            if (isnan(a) || isnan(b)) return -1;
            h[f] = (float)(a / (1.0 + exp(-a)));
            up[f] = (float)b;
        }
        for (int64_t f = 0; f < F; f++) h[f] *= up[f];
        for (int64_t m = 0; m < M; m++) {
            double v = st_dot_row_ref(dn->type, (const char *)dn->data + (uint64_t)m * dn->row_bytes, h, F);
            if (isnan(v)) return -1;
            out[i * M + m] = (float)v;
        }
    }
    return 0;
}

struct st_expert_ram {
    const st_model_desc *d;
    st_dev dev;             /* the door to the device pinning the arena (api NULL: none) */
    int pinned;
    int64_t n_slots;
    uint64_t slot_bytes;
    char *arena;
    st_expert_cache *table; /* lru over the RAM slots */
    st_expert_ram_stats st;
};

st_expert_ram *st_expert_ram_create(const st_model_desc *d, int64_t n_slots, const st_backend_api *api,
                                    st_device *dev, char *report, size_t report_len, char *err, size_t errlen) {
    if (!d || d->hp.n_expert <= 0 || n_slots < 0) {
        snprintf(err, errlen, "expert RAM tier: the model has no routed experts");
        return NULL;
    }
    st_expert_ram *r = calloc(1, sizeof *r);
    if (!r) goto oom;
    r->d = d;
    r->slot_bytes = (d->bytes_expert_slice + 255) / 256 * 256;
    const int64_t all = (int64_t)d->hp.n_layer * d->hp.n_expert;
    r->n_slots = n_slots > all ? all : n_slots;
    st_expert_cache_params p;
    memset(&p, 0, sizeof p);
    p.n_layer = d->hp.n_layer;
    p.n_expert = d->hp.n_expert;
    p.n_slots = r->n_slots;
    p.policy = ST_EXPERT_LRU;
    p.slot_bytes = d->bytes_expert_slice;
    r->table = st_expert_cache_create(&p, err, errlen);
    if (!r->table) {
        free(r);
        return NULL;
    }
    const uint64_t bytes = r->slot_bytes * (uint64_t)r->n_slots;
    char why[256] = "";
    if (api && dev) st_dev_wrap(&r->dev, api, dev, 0, 0);
    if (bytes > 0 && api && dev && st_dev_has_host_alloc(&r->dev)) {
        void *ptr = NULL;
        if (st_dev_host_alloc(&r->dev, bytes, &ptr) == ST_OK && ptr) {
            r->arena = ptr;
            r->pinned = 1;
        } else {
            snprintf(why, sizeof why, "pinned host memory refused (%s); ", st_dev_error());
        }
    } else if (bytes > 0) {
        snprintf(why, sizeof why, "no pinned host memory from this backend; ");
    }
    if (bytes > 0 && !r->arena) {
        r->arena = malloc((size_t)bytes);
        if (!r->arena) {
            st_expert_cache_free(r->table);
            free(r);
            goto oom;
        }
    }
    if (report && report_len)
        snprintf(report, report_len, "expert RAM tier: %s%lld slots (%.1f %s) %s", why, (long long)r->n_slots,
                 bytes >= (64u << 20) ? MIB(bytes) : (double)bytes / 1024.0, bytes >= (64u << 20) ? "MiB" : "KiB",
                 r->pinned ? "pinned" : "pageable");
    return r;
oom:
    snprintf(err, errlen, "expert RAM tier: out of host memory for %lld slots", (long long)n_slots);
    return NULL;
}

void st_expert_ram_free(st_expert_ram *r) {
    if (!r) return;
    if (r->pinned) st_dev_host_free(&r->dev, r->arena);
    else free(r->arena);
    st_expert_cache_free(r->table);
    free(r);
}

int st_expert_ram_pinned(const st_expert_ram *r) { return r->pinned; }

static void place_part(st_expert_part *p, char **dst) {
    memcpy(*dst, p->data, (size_t)p->bytes);
    p->data = *dst;
    *dst += p->bytes;
}

int st_expert_ram_get(st_expert_ram *r, int32_t layer, int32_t expert, st_expert_slice *out, char *err,
                      size_t errlen) {
    if (st_expert_slice_of(r->d, layer, expert, out, err, errlen)) return -1;
    if (r->n_slots == 0) return 0;
    int64_t slot = st_expert_cache_slot(r->table, layer, expert);
    int32_t id = expert, so = -1;
    st_expert_load ld;
    st_expert_cache_step(r->table);
    int64_t nl = st_expert_cache_route(r->table, layer, &id, 1, &so, &ld, 1);
    if (slot >= 0) {
        r->st.hits++;
    } else {
        if (nl != 1) {
            snprintf(err, errlen, "expert RAM tier: no slot for expert %d of layer %d", expert, layer);
            return -1;
        }
        slot = ld.slot;
        if (ld.evicted_layer >= 0) r->st.evictions++;
        r->st.file_reads++;
        r->st.bytes_file += out->bytes;
    }
    char *base = r->arena + r->slot_bytes * (uint64_t)slot;
    if (slot != so) { /* just admitted: copy from the file */
        char *dst = base;
        place_part(&out->gate, &dst);
        place_part(&out->up, &dst);
        place_part(&out->down, &dst);
    } else {
        out->gate.data = base;
        out->up.data = base + out->gate.bytes;
        out->down.data = base + out->gate.bytes + out->up.bytes;
    }
    return 0;
}

void st_expert_ram_stats_get(const st_expert_ram *r, st_expert_ram_stats *out) { *out = r->st; }
