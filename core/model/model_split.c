/* SPDX-License-Identifier: Apache-2.0 */
/* A model split by layers over devices: a chain of stages (see st_model_load_split). Each stage
 * is an st_model over its own layer range on its own device; this file links them, moves the
 * hidden state across each boundary and answers for the chain. docs/layer-split.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

st_model *st_model_tail(st_model *m) {
    while (m->next) m = m->next;
    return m;
}

/* The host staging of stage s (receiving from the previous one): pinned when s's module has
 * pinned host memory, unless the two devices share a domain (peer copies need none). */
static int split_link(st_model *prev, st_model *s, char *err, size_t errlen) {
    s->xfer_peer = st_dev_can_peer(&s->dev, &prev->dev);
    if (s->xfer_peer) return 0;
    const uint64_t bytes = 2u * (uint64_t)s->p.n_batch * (uint64_t)s->hp.n_embd * sizeof(float); /* [2][n][E] */
    void *h = NULL;
    if (st_dev_has_host_alloc(&s->dev) && st_dev_host_alloc(&s->dev, bytes, &h) == ST_OK && h) {
        s->xfer_pinned = 1;
    } else if (!(h = malloc((size_t)bytes))) {
        snprintf(err, errlen, "out of host memory for the hidden state between %s and %s", prev->dev.name, s->dev.name);
        return -1;
    }
    s->xfer = h;
    return 0;
}

void st_model_split_free(st_model *m) {
    if (!m->xfer) return;
    if (m->xfer_pinned) st_dev_host_free(&m->dev, m->xfer);
    else free(m->xfer);
    m->xfer = NULL;
}

/* The stages that hold layers, in order (a stage with none holds nothing and is left out). */
static int32_t used_stages(const st_model_stage *st, int32_t n, int32_t *idx) {
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (st[i].n_layers > 0) idx[k++] = i;
    return k;
}

st_model *st_model_load_split(const st_model_desc *desc, const st_model_stage *stages, int32_t n_stages,
                              const st_model_params *p, char *err, size_t errlen) {
    int32_t idx[64], total = 0;
    if (n_stages < 1 || n_stages > 64) {
        snprintf(err, errlen, "a layer split over %d devices (1..64)", n_stages);
        return NULL;
    }
    for (int32_t i = 0; i < n_stages; i++) total += stages[i].n_layers > 0 ? stages[i].n_layers : 0;
    const int32_t k = used_stages(stages, n_stages, idx);
    if (total != desc->hp.n_layer || k == 0) {
        snprintf(err, errlen, "the layer split places %d layers, the model has %d", total, desc->hp.n_layer);
        return NULL;
    }
    st_model *head = NULL, *prev = NULL;
    int32_t l0 = 0, j = 0;
    for (j = 0; j < k; j++) {
        const st_model_stage *st = &stages[idx[j]];
        st_model_params ps;
        st_model_params_default(&ps);
        if (p) ps = *p;
        if (k > 1) ps.expert_slots = st->offload ? st->expert_slots : -1; /* each device its own cache */
        st_model *s = st_model_load_stage(desc, st, l0, j == 0, j == k - 1, &ps, err, errlen);
        if (!s) goto fail;
        if (!head) head = s;
        else {
            prev->next = s;
            if (s->expert_counts) { /* one count table for the whole model: the head's */
                free(s->expert_counts);
                s->expert_counts = head->expert_counts;
                s->counts_shared = 1;
            }
            if (split_link(prev, s, err, errlen)) goto fail;
        }
        prev = s;
        l0 += st->n_layers;
    }
    return head;
fail:
    if (k > 1) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s", err);
        const st_model_stage *st = &stages[idx[j]];
        snprintf(err, errlen, "stage %d of %d (%s%u, layers %d-%d): %s", j + 1, k, st->api->name, st->index, l0,
                 l0 + st->n_layers - 1, tmp);
    }
    st_model_free(head);
    return NULL;
}

int st_model_pass_hidden(st_model *from, int64_t n, char *err, size_t errlen) {
    st_model *to = from->next;
    const uint64_t b = (uint64_t)n * (uint64_t)from->hp.n_embd * sizeof(float); /* [n][E] */
    st_status s;
    if (to->xfer_peer) {
        /* the receiving stream may not run ahead of the producer's ops */
        s = st_dev_sync(&from->dev, from->stream);
        if (s == ST_OK) s = st_dev_peer(&to->dev, to->stream, to->w.x, &from->dev, from->w.x, b);
        if (s == ST_OK) s = st_dev_peer(&to->dev, to->stream, to->w.tmp, &from->dev, from->w.tmp, b);
    } else {
        float *hx = to->xfer, *ht = to->xfer + (size_t)to->p.n_batch * (size_t)to->hp.n_embd;
        s = st_dev_d2h(&from->dev, from->stream, hx, from->w.x, b);
        if (s == ST_OK) s = st_dev_d2h(&from->dev, from->stream, ht, from->w.tmp, b);
        if (s == ST_OK) s = st_dev_sync(&from->dev, from->stream);
        /* the host rows stay borrowed until `to` syncs: at the latest, its next prepare() */
        if (s == ST_OK) s = st_dev_h2d(&to->dev, to->stream, to->w.x, hx, b);
        if (s == ST_OK) s = st_dev_h2d(&to->dev, to->stream, to->w.tmp, ht, b);
    }
    if (s != ST_OK) {
        snprintf(err, errlen, "moving the hidden state from %s (layers %d-%d) to %s: %s", from->dev.name, from->l0,
                 from->l1 - 1, to->dev.name, st_dev_error());
        return -1;
    }
    to->xfer_bytes += 2 * b;
    return 0;
}

int32_t st_model_n_stages(const st_model *m) {
    int32_t n = 0;
    for (; m; m = m->next) n++;
    return n;
}

int st_model_stage_get(const st_model *m, int32_t i, st_model_stage_info *out) {
    for (int32_t j = 0; m && j < i; j++) m = m->next;
    if (!m || i < 0) return -1;
    memset(out, 0, sizeof *out);
    snprintf(out->device, sizeof out->device, "%s", m->dev.name);
    snprintf(out->name, sizeof out->name, "%s", m->dev.props.name);
    out->layer_first = m->l0;
    out->n_layers = m->l1 - m->l0;
    out->bytes = m->bytes_alloc + (m->kv ? st_kv_bytes(m->kv) : 0);
    out->busy_s = m->busy_s;
    out->xfer_bytes = m->xfer_bytes;
    out->peer = m->xfer_peer;
    out->lost = m->dev.lost;
    return 0;
}

void st_model_seq_truncate(st_model *m, int32_t seq, int32_t n_pos) {
    for (; m; m = m->next) st_kv_seq_truncate(m->kv, seq, n_pos);
}

uint64_t st_model_kv_bytes_per_pos(const st_model *m) {
    uint64_t b = 0;
    for (; m; m = m->next) b += st_kv_bytes_per_pos(m->kv);
    return b;
}

void st_model_kv_clear(st_model *m) {
    for (; m; m = m->next) st_kv_clear(m->kv);
}
