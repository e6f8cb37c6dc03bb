/* SPDX-License-Identifier: Apache-2.0 */
/* Hybrid routed experts: a device cache of expert slots with the CPU computing the misses.
 *
 * When st_model_params.expert_slots >= 0 the ffn_{gate,up,down}_exps tensors are not uploaded.
 * The device holds three slot arenas (gate, up, down: [slots][rows][cols], the slot stride of
 * each the largest per-expert size of that matrix over layers, so one slot index serves every
 * layer) and a slot table [n_layer][n_expert] (-1 = not resident) that MOE_MATMUL reads. A step
 * of one MoE layer (A = n tokens x k assignments):
 *   1. the router runs on the device; its choices and the normed input `cur` come back to the
 *      host (the one sync of the layer);
 *   2. the choices go through st_expert_cache: hits have a slot, misses do not; an admission is
 *      a miss in this step and a hit from the next;
 *   3. the assignments are reordered hits first: one upload of the reordered expert ids, their
 *      token rows and the row map; the device computes the hits (MOE_MATMUL through its table as
 *      it stands, which already holds every hit) into rows 0..hits-1 of the expert rows, then
 *      the admitted experts are copied from the mapped file into their slots and the table is
 *      refreshed, all ordered on the device's stream after the hits that read it;
 *   4. meanwhile the CPU module computes the misses with its own MOE_MATMUL/SWIGLU on the file's
 *      tensors (read in place: the CPU device is unified);
 *   5. one upload puts the miss rows into rows hits..A-1 and MOE_COMBINE sums each token's k
 *      rows through the row map, in the router's order (j ascending), as without a cache.
 * Staging (expert_stage_slots > 0): in a step with many rows per missed expert (a prefill), the
 * experts whose rows would cost the CPU more than one copy costs are copied, in rounds, into
 * staging slots after the cache's slots and computed on the device like hits; their rows follow
 * the hits', the CPU's follow theirs.
 * The expert rows, activations and router buffers are the model's usual work buffers; besides
 * the slots and the table, the cache adds only 3 x A int32 of indices (and with staging an
 * [n_expert] staging table) on the device.
 * Host buffers given to asynchronous copies are rewritten only after the next layer's sync. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experts/expert_cache.h"
#include "experts/expert_cost.h"
#include "experts/expert_sim.h"
#include "experts/expert_stats.h"
#include "experts/expert_tiers.h"
#include "model/model_internal.h"
#include "platform/platform.h"
#include "quant/quant.h"

static const int k_roles[3] = {ST_T_FFN_GATE_EXPS, ST_T_FFN_UP_EXPS, ST_T_FFN_DOWN_EXPS};

struct st_model_hx {
    st_expert_cache *cache;
    int64_t n_slots;
    uint64_t stride[3];     /* slot stride of gate, up, down */
    void *arena[3];         /* device: [n_slots][rows][cols] each (NULL with 0 slots) */
    int32_t *table_dev;     /* device: [n_layer][n_expert] slot or -1 */
    int32_t *idx_dev;       /* device: [3][A] hits-first expert ids, their token rows, row map */
    /* host staging; pinned through the device's host_alloc when it has one */
    void *pinned;           /* the one pinned block, or NULL (malloc'd pieces then) */
    int32_t *ids;           /* [A] router choices of this layer */
    float *cur;             /* [n_batch][E] normed input of this layer */
    float *miss_out;        /* [A][E] CPU rows, uploaded behind the hit rows */
    int32_t *idx;           /* [3][A] mirror of idx_dev */
    int32_t *table;         /* [n_layer][n_expert] mirror uploaded when the cache changed */
    /* host only */
    int32_t *slot_of;       /* [A] */
    int32_t *miss_expert;   /* [A] expert of each missed assignment */
    int32_t *miss_xrow;     /* [A] its row of cur */
    int32_t *miss_ident;    /* [A] 0..n_miss-1 */
    int32_t *cpu_table;     /* [n_expert] identity: the CPU reads every expert from the file */
    float *miss_g, *miss_u; /* [A][n_ff_exp] */
    st_expert_load *loads;  /* [n_expert] */
    st_dev cpu;             /* the door to the module computing the misses */
    st_stream *cpu_stream;
    int64_t n_hit, n_miss;  /* of the layer in flight */
    int64_t n_loads;        /* admissions of the layer in flight, copied by st_model_experts_admit */
    /* staging: misses with many rows (a prefill) are uploaded to staging slots, after the
     * cache's slots in each arena, and computed on the device, in rounds of n_stage experts */
    int64_t n_stage;        /* staging slots (0: every miss runs on the CPU) */
    int32_t *stage_dev;     /* device: [n_expert] expert -> staging slot of the round, or -1 */
    int32_t *stage_host;    /* [rounds][n_expert] mirrors, one per round of a layer */
    int64_t max_rounds;
    int32_t *miss_cnt;      /* [n_expert] missed rows per expert of the layer */
    int32_t *stage_of;      /* [n_expert] place among the layer's staged experts, or -1 */
    int32_t *staged;        /* [n_expert] the staged experts in order */
    int32_t *miss_list;     /* [n_expert] the layer's missed experts */
    int32_t *miss_rows;     /* [n_expert] their rows */
    uint8_t *stage_pick;    /* [n_expert] staged or not, by miss_list's order */
    int64_t n_staged_assign;/* of the layer in flight: rows computed from staging slots */
    double upload_s;        /* measured: one expert's copy to the device */
    uint64_t stage_experts, stage_assign; /* statistics */
    uint64_t resident_calls;  /* layer calls that skipped the host (st_model_experts_resident_ffn) */
    /* admissions are copied on their own stream when the device has events: the compute stream
     * waits for them only before its next hits */
    st_stream *up_stream;   /* NULL: the compute stream copies them */
    st_event *up_event;     /* recorded after the last admission's copies */
    int up_pending;         /* up_event recorded and not yet waited on by the compute stream */
    /* the expert tensors registered with the device (pinned), for asynchronous copies */
    void **reg_ptr;         /* registered range starts (merged expert tensors) */
    int64_t n_reg;
    uint64_t pinned_bytes;
    char pin_note[320];
    /* statistics */
    uint64_t forwards, tokens, cpu_assign;
    double cpu_s, route_s;
    /* routing trace (for Belady): the accesses at absolute positions [tr_base, tr_base + tr_n)
     * of the `accesses` routed since load */
    int trace_on;
    int64_t tr_n, tr_cap;
    int32_t *tr_layer, *tr_expert;
    int64_t *tr_step;
    uint64_t accesses;      /* (token, expert) lookups routed since load; never reset */
    uint64_t tr_base;       /* absolute position of the first recorded access */
    int tr_full;            /* the cap was reached: recording stopped until a trim or reset */
    int tr_cut;             /* a sliding window (trimmed, or restarted after a gap): the record no
                               longer starts at the last reset; at the cap it starts again */
};

static uint64_t slice_bytes(const st_gguf_tensor *t) { return st_row_size(t->type, t->ne[0]) * (uint64_t)t->ne[1]; }

/* Copies expert (layer, expert)'s three slices from the file into `slot`, on stream `st`. */
static int upload_expert_on(st_model *m, st_stream *st, int32_t layer, int32_t expert, int64_t slot, char *err,
                            size_t errlen) {
    st_model_hx *h = m->hx;
    for (int i = 0; i < 3; i++) {
        const st_gguf_tensor *t = m->desc->layers[layer].t[k_roles[i]];
        const uint64_t b = slice_bytes(t);
        const char *src = (const char *)t->data + b * (uint64_t)expert;
        char *dst = (char *)h->arena[i] + h->stride[i] * (uint64_t)slot;
        st_status s = st_dev_h2d(&m->dev, st, dst, src, b);
        if (s != ST_OK) {
            snprintf(err, errlen, "layer %d: uploading expert %d into slot %lld: %s", layer, expert, (long long)slot,
                     st_dev_error());
            return -1;
        }
    }
    return 0;
}

/* The cache's admissions: on the upload stream when there is one. */
static int upload_expert(st_model *m, int32_t layer, int32_t expert, int64_t slot, char *err, size_t errlen) {
    return upload_expert_on(m, m->hx->up_stream ? m->hx->up_stream : m->stream, layer, expert, slot, err, errlen);
}

static int upload_table(st_model *m, char *err, size_t errlen) {
    st_model_hx *h = m->hx;
    if (!st_expert_cache_table_dirty(h->cache)) return 0;
    const size_t n = (size_t)m->hp.n_layer * (size_t)m->hp.n_expert;
    memcpy(h->table, st_expert_cache_table(h->cache), n * sizeof *h->table);
    st_status s = st_dev_h2d(&m->dev, h->up_stream ? h->up_stream : m->stream, h->table_dev, h->table,
                                   n * sizeof *h->table);
    if (s != ST_OK) {
        snprintf(err, errlen, "uploading the expert slot table: %s", st_dev_error());
        return -1;
    }
    st_expert_cache_table_clean(h->cache);
    return 0;
}

static int need_cpu_op(st_model *m, uint32_t op, uint32_t type, const char *what, char *err, size_t errlen) {
    if (!st_dev_supports(&m->hx->cpu, op, type)) {
        snprintf(err, errlen, "the CPU module '%s' cannot run %s with %s (needed for %s misses)", m->hx->cpu.api->name,
                 st_op_name(op), st_type_name(type), what);
        return -1;
    }
    return 0;
}

/* The table starts empty (every entry -1); a profile fills free slots in rank order, with the
 * experts of this stage's layers only (a split model's other stages cache their own). */
static int seed_from_profile(st_model *m, char *err, size_t errlen) {
    st_model_hx *h = m->hx;
    const st_expert_profile *pf = m->p.expert_profile;
    if (!pf || h->n_slots <= 0) return 0;
    if (st_expert_profile_check(pf, m->hp.n_layer, m->hp.n_expert, err, errlen)) return -1;
    int32_t *lay = malloc((size_t)(pf->n > 0 ? pf->n : 1) * sizeof *lay);
    int32_t *exp = malloc((size_t)(pf->n > 0 ? pf->n : 1) * sizeof *exp);
    int64_t n = 0;
    for (int64_t i = 0; lay && exp && i < pf->n; i++)
        if (pf->layer[i] >= m->l0 && pf->layer[i] < m->l1) lay[n] = pf->layer[i], exp[n++] = pf->expert[i];
    int rc = lay && exp ? 0 : -1;
    if (rc) snprintf(err, errlen, "out of host memory seeding the expert cache");
    const int64_t n_loads = rc ? 0 : st_expert_cache_seed(h->cache, lay, exp, n, h->loads, h->n_slots);
    for (int64_t i = 0; rc == 0 && i < n_loads; i++) {
        if (!m->desc->layers[h->loads[i].layer].is_moe) continue;
        rc = upload_expert(m, h->loads[i].layer, h->loads[i].expert, h->loads[i].slot, err, errlen);
    }
    free(lay);
    free(exp);
    return rc;
}

int st_model_experts_create(st_model *m, char *err, size_t errlen) {
    const st_hparams *hp = &m->hp;
    const int64_t L = hp->n_layer, X = hp->n_expert, k = hp->n_expert_used, N = m->p.n_batch;
    const int64_t A = N * k, E = hp->n_embd, Fe = hp->n_ff_exp;
    if (!m->p.cpu_api || !m->p.cpu_dev) {
        snprintf(err, errlen, "an expert cache of %lld slots needs a CPU module for the misses (cpu_api)",
                 (long long)m->p.expert_slots);
        return -1;
    }
    st_model_hx *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->hx = h;
    if (st_dev_wrap(&h->cpu, m->p.cpu_api, m->p.cpu_dev, m->p.cpu_index, 1) != ST_OK ||
        !(h->cpu.props.caps & ST_CAP_UNIFIED)) {
        snprintf(err, errlen, "the module computing expert misses ('%s') must read host memory (ST_CAP_UNIFIED)",
                 m->p.cpu_api->name);
        return -1;
    }
    for (int64_t l = 0; l < L; l++) {
        const st_layer_desc *Ld = &m->desc->layers[l];
        if (!Ld->is_moe) continue;
        for (int i = 0; i < 3; i++) {
            const st_gguf_tensor *t = Ld->t[k_roles[i]];
            if (need_cpu_op(m, ST_OP_MOE_MATMUL, t->type, t->name, err, errlen)) return -1;
            uint64_t b = (slice_bytes(t) + 255u) / 256u * 256u;
            if (b > h->stride[i]) h->stride[i] = b;
        }
    }
    if (need_cpu_op(m, ST_OP_SWIGLU, ST_TYPE_F32, "expert", err, errlen)) return -1;
    int64_t total = 0;
    for (int64_t l = 0; l < L; l++) total += m->desc->layers[l].is_moe ? X : 0;
    h->n_slots = m->p.expert_slots < total ? m->p.expert_slots : total;

    st_expert_cache_params cp2;
    memset(&cp2, 0, sizeof cp2);
    cp2.n_layer = (int32_t)L;
    cp2.n_expert = (int32_t)X;
    cp2.n_slots = h->n_slots;
    cp2.policy = (st_expert_policy)m->p.expert_policy;
    cp2.max_inserts_per_step = m->p.expert_max_inserts;
    cp2.slot_bytes = h->stride[0] + h->stride[1] + h->stride[2];
    h->cache = st_expert_cache_create(&cp2, err, errlen);
    if (!h->cache) return -1;

    /* device: arenas, table, row map */
    static const char *const what[3] = {"expert slots (gate)", "expert slots (up)", "expert slots (down)"};
    h->n_stage = m->p.expert_stage_slots > 0 ? m->p.expert_stage_slots : 0;
    if (h->n_stage > X) h->n_stage = X;
    const int64_t arena_slots = h->n_slots + h->n_stage;
    st_model_consumer(m, "expert_cache");
    for (int i = 0; i < 3 && arena_slots > 0; i++)
        if (st_model_alloc(m, h->stride[i] * (uint64_t)arena_slots, &h->arena[i], what[i], err, errlen)) return -1;
    if (h->n_stage > 0) {
        h->max_rounds = (X + h->n_stage - 1) / h->n_stage;
        st_model_consumer(m, "expert_table"); /* the plan counts it with the indices */
        if (st_model_alloc(m, (uint64_t)X * 4u, (void **)&h->stage_dev, "expert staging table", err, errlen))
            return -1;
        h->stage_host = malloc((size_t)(h->max_rounds * X) * sizeof(int32_t));
        h->miss_cnt = malloc((size_t)X * sizeof(int32_t));
        h->stage_of = malloc((size_t)X * sizeof(int32_t));
        h->staged = malloc((size_t)X * sizeof(int32_t));
        h->miss_list = malloc((size_t)X * sizeof(int32_t));
        h->miss_rows = malloc((size_t)X * sizeof(int32_t));
        h->stage_pick = malloc((size_t)X);
        if (!h->stage_host || !h->miss_cnt || !h->stage_of || !h->staged || !h->miss_list || !h->miss_rows ||
            !h->stage_pick) {
            snprintf(err, errlen, "out of host memory for expert staging");
            return -1;
        }
    }
    st_model_consumer(m, "expert_table");
    if (st_model_alloc(m, (uint64_t)(L * X) * 4u, (void **)&h->table_dev, "expert slot table", err, errlen) ||
        st_model_alloc(m, (uint64_t)A * 12u, (void **)&h->idx_dev, "expert indices", err, errlen))
        return -1;

    /* host staging for copies: one block, pinned when the device offers it */
    const uint64_t sz_ids = (uint64_t)A * 4u, sz_cur = (uint64_t)(N * E) * 4u, sz_out = (uint64_t)(A * E) * 4u;
    const uint64_t sz_row = (uint64_t)A * 12u, sz_tab = (uint64_t)(L * X) * 4u;
#define RND(x) (((x) + 255u) / 256u * 256u)
    const uint64_t total_b = RND(sz_ids) + RND(sz_cur) + RND(sz_out) + RND(sz_row) + RND(sz_tab);
    char *blk = NULL;
    if (st_dev_has_host_alloc(&m->dev) && st_dev_host_alloc(&m->dev, total_b, &h->pinned) == ST_OK && h->pinned) {
        blk = h->pinned;
    } else {
        h->pinned = NULL;
        blk = malloc(total_b);
        if (!blk) {
            snprintf(err, errlen, "out of host memory for expert staging (%.1f MiB)", (double)total_b / 1048576.0);
            return -1;
        }
    }
    h->ids = (int32_t *)blk;
    blk += RND(sz_ids);
    h->cur = (float *)blk;
    blk += RND(sz_cur);
    h->miss_out = (float *)blk;
    blk += RND(sz_out);
    h->idx = (int32_t *)blk;
    blk += RND(sz_row);
    h->table = (int32_t *)blk;
#undef RND
    h->slot_of = malloc((size_t)A * sizeof(int32_t));
    h->miss_expert = malloc((size_t)A * sizeof(int32_t));
    h->miss_xrow = malloc((size_t)A * sizeof(int32_t));
    h->miss_ident = malloc((size_t)A * sizeof(int32_t));
    h->cpu_table = malloc((size_t)X * sizeof(int32_t));
    h->miss_g = malloc((size_t)(A * Fe) * sizeof(float));
    h->miss_u = malloc((size_t)(A * Fe) * sizeof(float));
    h->loads = malloc((size_t)(X > h->n_slots ? X : (h->n_slots > 0 ? h->n_slots : 1)) * sizeof *h->loads);
    if (!h->slot_of || !h->miss_expert || !h->miss_xrow || !h->miss_ident || !h->cpu_table || !h->miss_g ||
        !h->miss_u || !h->loads) {
        snprintf(err, errlen, "out of host memory for expert staging");
        return -1;
    }
    for (int64_t a = 0; a < A; a++) h->miss_ident[a] = (int32_t)a;
    for (int64_t e = 0; e < X; e++) h->cpu_table[e] = (int32_t)e;
    if (st_dev_stream_create(&h->cpu, &h->cpu_stream) != ST_OK) {
        snprintf(err, errlen, "creating a stream on the CPU module '%s': %s", m->p.cpu_api->name, st_dev_error());
        h->cpu_stream = NULL;
        return -1;
    }

    /* a second stream for admissions, when the device has events */
    {
        if (st_dev_stream_create(&m->dev, &h->up_stream) != ST_OK) h->up_stream = NULL;
        else if (st_dev_event_create(&m->dev, &h->up_event) != ST_OK) {
            h->up_event = NULL;
            st_dev_stream_destroy(&m->dev, h->up_stream);
            h->up_stream = NULL;
        }
    }
    /* the expert tensors pinned in place, when asked and the device can: copies from them are
     * then asynchronous DMA instead of staged through the driver. Ranges are widened to 64 KiB
     * (every page size in use) within the file's mapping and merged, since a page may not be
     * registered twice. */
    if (m->p.expert_pin && st_dev_has_host_register(&m->dev) && !(m->dev.props.caps & ST_CAP_UNIFIED)) {
        const uintptr_t pg = 65536;
        int64_t nr = 0;
        uintptr_t(*rg)[2] = malloc((size_t)(3 * L) * sizeof *rg);
        h->reg_ptr = malloc((size_t)(3 * L) * sizeof *h->reg_ptr);
        for (int64_t l = m->l0; rg && h->reg_ptr && l < m->l1; l++) { /* this stage's layers */
            if (!m->desc->layers[l].is_moe) continue;
            for (int i = 0; i < 3; i++) {
                const st_gguf_tensor *t = m->desc->layers[l].t[k_roles[i]];
                const st_gguf_shard *sh = st_gguf_shard_at(m->desc->gguf, t->shard);
                const uintptr_t lo = (uintptr_t)sh->base, hi = lo + (sh->size + 4095u) / 4096u * 4096u;
                rg[nr][0] = (uintptr_t)t->data / pg * pg;
                rg[nr][1] = ((uintptr_t)t->data + t->nbytes + pg - 1) / pg * pg;
                if (rg[nr][0] < lo) rg[nr][0] = lo; /* the mapping itself is page-aligned */
                if (rg[nr][1] > hi) rg[nr][1] = hi;
                nr++;
            }
        }
        for (int64_t i = 1; i < nr; i++) /* insertion sort by start: a few hundred ranges */
            for (int64_t j = i; j > 0 && rg[j][0] < rg[j - 1][0]; j--) {
                uintptr_t a = rg[j][0], b = rg[j][1];
                rg[j][0] = rg[j - 1][0], rg[j][1] = rg[j - 1][1];
                rg[j - 1][0] = a, rg[j - 1][1] = b;
            }
        int64_t w = 0;
        for (int64_t i = 0; i < nr; i++) {
            if (w > 0 && rg[i][0] <= rg[w - 1][1]) {
                if (rg[i][1] > rg[w - 1][1]) rg[w - 1][1] = rg[i][1];
            } else {
                rg[w][0] = rg[i][0], rg[w][1] = rg[i][1];
                w++;
            }
        }
        for (int64_t i = 0; i < w; i++) {
            if (st_dev_host_register(&m->dev, (void *)rg[i][0], rg[i][1] - rg[i][0]) != ST_OK) {
                snprintf(h->pin_note, sizeof h->pin_note, "pinning the expert tensors stopped after %.1f MiB (%s); "
                         "the rest are copied from pageable memory", (double)h->pinned_bytes / 1048576.0,
                         st_dev_error());
                break;
            }
            h->reg_ptr[h->n_reg++] = (void *)rg[i][0];
            h->pinned_bytes += rg[i][1] - rg[i][0];
        }
        free(rg);
    }
    if (seed_from_profile(m, err, errlen)) return -1;
    memcpy(h->table, st_expert_cache_table(h->cache), (size_t)(L * X) * sizeof *h->table);
    st_status s = st_dev_h2d(&m->dev, m->stream, h->table_dev, h->table, (uint64_t)(L * X) * 4u);
    if (s == ST_OK && h->up_stream) s = st_dev_sync(&m->dev, h->up_stream);
    if (s == ST_OK) s = st_dev_sync(&m->dev, m->stream);
    if (s != ST_OK) {
        snprintf(err, errlen, "uploading the expert slot table: %s", st_dev_error());
        return -1;
    }
    st_expert_cache_table_clean(h->cache);
    if (h->n_stage > 0) {
        /* what one expert's copy takes (best of 3), for choosing between staging and the CPU */
        int64_t l0 = 0;
        while (l0 < L && !m->desc->layers[l0].is_moe) l0++;
        h->upload_s = 1e9;
        for (int r = 0; r < 3 && l0 < L; r++) {
            uint64_t t0 = st_now_ns();
            if (upload_expert(m, (int32_t)l0, 0, h->n_slots, err, errlen)) return -1;
            if (st_dev_sync(&m->dev, h->up_stream ? h->up_stream : m->stream) != ST_OK) {
                snprintf(err, errlen, "timing an expert upload: %s", st_dev_error());
                return -1;
            }
            double t = (double)(st_now_ns() - t0) / 1e9;
            if (t < h->upload_s) h->upload_s = t;
        }
    }
    return 0;
}

void st_model_experts_free(st_model *m) {
    st_model_hx *h = m->hx;
    if (!h) return;
    if (h->cpu_stream) {
        st_dev_sync(&h->cpu, h->cpu_stream);
        st_dev_stream_destroy(&h->cpu, h->cpu_stream);
    }
    if (h->up_stream) {
        st_dev_sync(&m->dev, h->up_stream);
        if (h->up_event) st_dev_event_destroy(&m->dev, h->up_event);
        st_dev_stream_destroy(&m->dev, h->up_stream);
    }
    for (int64_t i = 0; i < h->n_reg; i++) st_dev_host_unregister(&m->dev, h->reg_ptr[i]);
    free(h->reg_ptr);
    if (h->pinned) st_dev_host_free(&m->dev, h->pinned);
    else free(h->ids);
    free(h->slot_of);
    free(h->miss_expert);
    free(h->miss_xrow);
    free(h->miss_ident);
    free(h->cpu_table);
    free(h->miss_g);
    free(h->miss_u);
    free(h->loads);
    free(h->stage_host);
    free(h->miss_cnt);
    free(h->stage_of);
    free(h->staged);
    free(h->miss_list);
    free(h->miss_rows);
    free(h->stage_pick);
    free(h->tr_layer);
    free(h->tr_expert);
    free(h->tr_step);
    st_expert_cache_free(h->cache);
    free(h);
    m->hx = NULL;
}

void st_model_experts_step(st_model *m, int64_t n) {
    st_model_hx *h = m->hx;
    st_expert_cache_step(h->cache);
    h->forwards++;
    h->tokens += (uint64_t)n;
}

/* At most this many accesses are recorded (16 MiB of trace); later ones are not. */
#define ST_TRACE_MAX (1 << 20)

static int trace_add(st_model_hx *h, int32_t layer, const int32_t *ids, int64_t n) {
    if (h->tr_full) return 0;
    if (h->tr_base + (uint64_t)h->tr_n != h->accesses) { /* tracing was off meanwhile: start again here */
        h->tr_base = h->accesses;
        h->tr_n = 0;
        h->tr_cut = 1;
    }
    if (h->tr_n + n > ST_TRACE_MAX) {
        if (!h->tr_cut) { /* since a reset: the first accesses are kept, the rest not recorded */
            h->tr_full = 1;
            return 0;
        }
        /* a sliding window (trimmed): the windows still open lack their start either way, so
         * recording starts again here for the ones that open from now on */
        h->tr_base = h->accesses;
        h->tr_n = 0;
    }
    if (h->tr_n + n > h->tr_cap) {
        int64_t cap = h->tr_cap ? h->tr_cap : 4096;
        while (cap < h->tr_n + n) cap *= 2;
        int32_t *l = realloc(h->tr_layer, (size_t)cap * sizeof *l);
        if (l) h->tr_layer = l;
        int32_t *e = realloc(h->tr_expert, (size_t)cap * sizeof *e);
        if (e) h->tr_expert = e;
        int64_t *s = realloc(h->tr_step, (size_t)cap * sizeof *s);
        if (s) h->tr_step = s;
        if (!l || !e || !s) return -1;
        h->tr_cap = cap;
    }
    for (int64_t i = 0; i < n; i++) {
        h->tr_layer[h->tr_n] = layer;
        h->tr_expert[h->tr_n] = ids[i];
        h->tr_step[h->tr_n] = (int64_t)h->forwards;
        h->tr_n++;
    }
    return 0;
}

/* A layer's slot arena as a MOE_MATMUL weight: [n_slots][rows][cols] of the layer's type. */
static st_tensor slot_view(const st_model *m, int il, int i) {
    const st_gguf_tensor *t = m->desc->layers[il].t[k_roles[i]];
    const int64_t ns = m->hx->n_slots + m->hx->n_stage;
    st_tensor v = st_model_view3(m->hx->arena[i], t->type, t->ne[0], t->ne[1], ns);
    v.nb[2] = (int64_t)m->hx->stride[i];
    v.nb[3] = v.nb[2] * ns;
    return v;
}

/* The experts of the layer's misses to stage (h->staged[0..n), h->stage_of), from the cost
 * model: both pipes at once, the upload taking the experts with the most rows first while that
 * ends the layer sooner (st_expert_cost_split; the measured copy of one expert against the CPU's
 * measured time per row, equal until 64 rows were measured). expert_stage_rows > 0 stages every
 * expert of at least that many rows instead; < 0 never stages. Returns n. */
static int64_t choose_staged(st_model *m, int64_t A) {
    st_model_hx *h = m->hx;
    const int64_t X = m->hp.n_expert;
    if (h->n_stage <= 0 || m->p.expert_stage_rows < 0) return 0;
    memset(h->miss_cnt, 0, (size_t)X * sizeof *h->miss_cnt);
    for (int64_t a = 0; a < A; a++)
        if (h->slot_of[a] < 0) h->miss_cnt[h->ids[a]]++;
    int64_t nm = 0; /* the missed experts, their rows in miss_rows */
    for (int64_t e = 0; e < X; e++) {
        h->stage_of[e] = -1;
        if (h->miss_cnt[e] > 0) {
            h->miss_list[nm] = (int32_t)e;
            h->miss_rows[nm++] = h->miss_cnt[e];
        }
    }
    if (m->p.expert_stage_rows > 0) {
        for (int64_t i = 0; i < nm; i++) h->stage_pick[i] = h->miss_rows[i] >= m->p.expert_stage_rows;
    } else {
        const double per_row = h->cpu_assign >= 64 ? h->cpu_s / (double)h->cpu_assign : h->upload_s;
        st_expert_cost c = {0};
        c.upload_bytes_per_s = h->upload_s > 0 ? 1.0 / h->upload_s : 1e12; /* per "byte" = per expert */
        c.cpu_s_per_expert = per_row;
        c.cpu_s_per_row = per_row;
        st_expert_cost_split(&c, 1, 0, h->miss_rows, nm, h->n_stage * h->max_rounds, h->stage_pick, NULL);
    }
    int64_t n_st = 0;
    for (int64_t i = 0; i < nm; i++)
        if (h->stage_pick[i]) {
            h->stage_of[h->miss_list[i]] = (int32_t)n_st;
            h->staged[n_st++] = h->miss_list[i];
        }
    return n_st;
}

#define OPCHK(call, what)                                                                                  \
    do {                                                                                                   \
        st_status s_ = (call);                                                                             \
        if (s_ != ST_OK) {                                                                                 \
            snprintf(err, errlen, "%s%s: %s", layer_txt, what, st_dev_error());                            \
            return -1;                                                                                     \
        }                                                                                                  \
    } while (0)

/* Rows [pos, pos + cnt) of the layer's reordered assignments through `slot_table` on the device:
 * gate and up from `cur`, SwiGLU, down into the same rows of the expert rows. */
static int device_ffn(st_model *m, int il, int64_t n, int64_t pos, int64_t cnt, const int32_t *slot_table,
                      const int32_t *expert, const int32_t *x_row, const char *layer_txt, char *err, size_t errlen) {
    st_work *w = &m->w;
    st_dev *d = &m->dev;
    const int64_t E = m->hp.n_embd, Fe = m->hp.n_ff_exp;
    st_moe_matmul_args g;
    memset(&g, 0, sizeof g);
    g.size = sizeof g;
    g.n_assign = (int32_t)cnt;
    g.w = slot_view(m, il, 0);
    g.x = st_model_view2(w->cur, ST_TYPE_F32, E, n);
    g.out = st_model_view2(w->eg + (size_t)(pos * Fe), ST_TYPE_F32, Fe, cnt);
    g.slot_table = slot_table;
    g.expert = expert; /* [cnt] */
    g.x_row = x_row;   /* [cnt] */
    OPCHK(st_dev_moe_matmul(d, m->stream, &g, "ffn_gate_exps"), "experts (device)");
    g.w = slot_view(m, il, 1);
    g.out = st_model_view2(w->eu + (size_t)(pos * Fe), ST_TYPE_F32, Fe, cnt);
    OPCHK(st_dev_moe_matmul(d, m->stream, &g, "ffn_up_exps"), "experts (device)");
    st_swiglu_args s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.gate = st_model_view2(w->eg + (size_t)(pos * Fe), ST_TYPE_F32, Fe, cnt);
    s.up = st_model_view2(w->eu + (size_t)(pos * Fe), ST_TYPE_F32, Fe, cnt);
    s.out = s.gate;
    OPCHK(st_dev_swiglu(d, m->stream, &s, "experts"), "experts (device)");
    g.w = slot_view(m, il, 2);
    g.x = st_model_view2(w->eg + (size_t)(pos * Fe), ST_TYPE_F32, Fe, cnt);
    g.out = st_model_view2(w->ed + (size_t)(pos * E), ST_TYPE_F32, E, cnt);
    g.x_row = w->ident;
    OPCHK(st_dev_moe_matmul(d, m->stream, &g, "ffn_down_exps"), "experts (device)");
    return 0;
}

/* Layer il can skip the host: the placement is fixed (profile policy: the table never changes
 * after load), every expert of the layer is resident, the step has one token (its k experts are
 * k distinct lookups, counted without reading them back), no admission waits, and nothing
 * records the routing (expert counts, routing statistics, the Belady trace). */
int st_model_experts_resident(const st_model *m, int il, int64_t n) {
    const st_model_hx *h = m->hx;
    if (!h || n != 1 || m->p.expert_policy != ST_EXPERT_PROFILE || m->count_experts || h->trace_on || h->n_loads)
        return 0;
    const int32_t *row = st_expert_cache_table(h->cache) + (size_t)il * (size_t)m->hp.n_expert;
    for (int64_t e = 0; e < m->hp.n_expert; e++)
        if (row[e] < 0) return 0;
    return 1;
}

/* The routed experts of such a layer on the device, from the router's output as it lies there:
 * gate and up of cur through the layer's slot table, SwiGLU, down into rows [A][E] of w->ed in
 * the router's order (row a = assignment a). No sync, no copies. */
int st_model_experts_resident_ffn(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen) {
    st_model_hx *h = m->hx;
    const int64_t A = n * m->hp.n_expert_used;
    if (h->up_pending) {
        OPCHK(st_dev_event_wait(&m->dev, m->stream, h->up_event), "waiting for expert uploads");
        h->up_pending = 0;
    }
    /* expert = the router's ids [A], x_row = a / k [A], the layer's table row [n_expert] */
    if (device_ffn(m, il, n, 0, A, h->table_dev + (size_t)il * (size_t)m->hp.n_expert, m->w.rids, m->w.xrow,
                   layer_txt, err, errlen))
        return -1;
    st_expert_cache_count_resident(h->cache, il, (uint64_t)A, (uint64_t)A);
    h->accesses += (uint64_t)A;
    h->resident_calls++;
    return 0;
}

int st_model_experts_launch(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen) {
    st_model_hx *h = m->hx;
    st_work *w = &m->w;
    const int64_t k = m->hp.n_expert_used, A = n * k, E = m->hp.n_embd;
    /* admissions a failed step left behind: the cache counts them resident, so copy them now */
    if (h->n_loads && st_model_experts_admit(m, il, err, errlen)) return -1;
    uint64_t t0 = st_now_ns();
    OPCHK(st_dev_d2h(&m->dev, m->stream, h->ids, w->rids, (uint64_t)A * 4u), "reading router choices");
    OPCHK(st_dev_d2h(&m->dev, m->stream, h->cur, w->cur, (uint64_t)(n * E) * 4u), "reading expert input");
    OPCHK(st_dev_sync(&m->dev, m->stream), "reading router choices");
    h->route_s += (double)(st_now_ns() - t0) / 1e9;
    if (m->count_experts) st_model_note_routing(m, il, h->ids, n);
    if (h->trace_on && trace_add(h, il, h->ids, A)) {
        snprintf(err, errlen, "out of host memory recording the expert trace");
        return -1;
    }
    h->accesses += (uint64_t)A;
    int64_t cap = h->n_slots > 0 ? (m->hp.n_expert < h->n_slots ? m->hp.n_expert : h->n_slots) : 0;
    /* a prompt's step uses most experts once or more: evidence of this prompt, not of reuse from
     * token to token. It fills free slots but evicts nothing (its misses are staged anyway). */
    if (n > ST_EXPERT_ADMIT_MAX_TOKENS && st_expert_cache_resident(h->cache) >= h->n_slots) cap = 0;
    int64_t n_loads = st_expert_cache_route(h->cache, il, h->ids, A, h->slot_of, h->loads, cap);
    if (n_loads < 0) {
        snprintf(err, errlen, "%srouting experts: an expert id out of range", layer_txt);
        return -1;
    }
    /* the layer's misses by expert: some are staged (uploaded and computed on the device), the
     * rest run on the CPU, both at once */
    const int64_t n_st = choose_staged(m, A);
    /* the order: hits, staged misses (by round, then expert), CPU misses; row_of[a] = a's place */
    int32_t *p_expert = h->idx, *p_xrow = h->idx + A, *row_of = h->idx + 2 * A;
    int64_t at = 0;
    for (int64_t a = 0; a < A; a++)
        if (h->slot_of[a] >= 0) {
            p_expert[at] = h->ids[a];
            p_xrow[at] = (int32_t)(a / k);
            row_of[a] = (int32_t)at++;
        }
    const int64_t nh = at;
    for (int64_t i = 0; i < n_st; i++) /* staged experts are in round order already */
        for (int64_t a = 0; a < A; a++)
            if (h->slot_of[a] < 0 && h->ids[a] == h->staged[i]) {
                p_expert[at] = h->ids[a];
                p_xrow[at] = (int32_t)(a / k);
                row_of[a] = (int32_t)at++;
            }
    h->n_hit = nh;
    h->n_staged_assign = at - nh;
    h->n_miss = 0;
    for (int64_t a = 0; a < A; a++)
        if (h->slot_of[a] < 0 && !(n_st > 0 && h->stage_of[h->ids[a]] >= 0)) {
            h->miss_expert[h->n_miss] = h->ids[a];
            h->miss_xrow[h->n_miss] = (int32_t)(a / k);
            p_expert[at] = h->ids[a];
            p_xrow[at] = (int32_t)(a / k);
            row_of[a] = (int32_t)at++;
            h->n_miss++;
        }
    /* the three arrays in one copy (laid out A apart on both sides) */
    OPCHK(st_dev_h2d(&m->dev, m->stream, h->idx_dev, h->idx, (uint64_t)A * 12u), "uploading expert indices");
    if ((nh > 0 || n_st > 0) && h->up_pending) {
        /* the hits may read slots an earlier admission is still filling, and staging copies
         * must not overtake it either */
        OPCHK(st_dev_event_wait(&m->dev, m->stream, h->up_event), "waiting for expert uploads");
        h->up_pending = 0;
    }
    h->n_loads = n_loads;
    /* the hits, through the table as it stands (it holds every hit; admissions come after) */
    if (nh > 0 &&
        device_ffn(m, il, n, 0, nh, h->table_dev + (size_t)il * (size_t)m->hp.n_expert, h->idx_dev, h->idx_dev + A,
                   layer_txt, err, errlen))
        return -1;
    /* staged rounds: copy up to n_stage experts, point the staging table at them, compute their
     * rows; the next round's copies are ordered after this round's reads on the stream */
    int64_t pos = nh;
    for (int64_t r = 0; r * h->n_stage < n_st; r++) {
        const int64_t e0 = r * h->n_stage, e1 = e0 + h->n_stage < n_st ? e0 + h->n_stage : n_st;
        int32_t *tab = h->stage_host + (size_t)r * (size_t)m->hp.n_expert;
        for (int64_t e = 0; e < m->hp.n_expert; e++) tab[e] = -1;
        int64_t cnt = 0;
        for (int64_t i = e0; i < e1; i++) {
            const int64_t slot = h->n_slots + (i - e0);
            if (upload_expert_on(m, m->stream, il, h->staged[i], slot, err, errlen)) return -1;
            tab[h->staged[i]] = (int32_t)slot;
            cnt += h->miss_cnt[h->staged[i]];
        }
        OPCHK(st_dev_h2d(&m->dev, m->stream, h->stage_dev, tab, (uint64_t)m->hp.n_expert * 4u), "uploading the staging table");
        if (device_ffn(m, il, n, pos, cnt, h->stage_dev, h->idx_dev + pos, h->idx_dev + A + pos, layer_txt, err, errlen))
            return -1;
        pos += cnt;
        h->stage_experts += (uint64_t)(e1 - e0);
    }
    h->stage_assign += (uint64_t)(pos - nh);
    return 0;
}

int st_model_experts_admit(st_model *m, int il, char *err, size_t errlen) {
    st_model_hx *h = m->hx;
    (void)il;
    if (h->n_loads == 0 && !st_expert_cache_table_dirty(h->cache)) return 0;
    const char *layer_txt = "";
    /* the table's host mirror may still be read by the previous admission's copy */
    if (h->up_stream && h->up_pending) OPCHK(st_dev_event_sync(&m->dev, h->up_event), "waiting for expert uploads");
    /* an evicted slot's old holder is not used by this layer's hits (the cache never evicts an
     * expert of the call), and earlier layers' hits finished at this layer's sync: the copies
     * may start at once */
    for (int64_t i = 0; i < h->n_loads; i++)
        if (upload_expert(m, h->loads[i].layer, h->loads[i].expert, h->loads[i].slot, err, errlen)) return -1;
    h->n_loads = 0;
    if (upload_table(m, err, errlen)) return -1;
    if (h->up_stream) {
        OPCHK(st_dev_event_record(&m->dev, h->up_event, h->up_stream), "recording expert uploads");
        h->up_pending = 1;
    }
    return 0;
}

int st_model_experts_finish(st_model *m, int il, int64_t n, float **rows, int64_t *n_rows, int32_t **row_of,
                            const char *layer_txt, char *err, size_t errlen) {
    st_model_hx *h = m->hx;
    st_dev *cpu = &h->cpu;
    const int64_t k = m->hp.n_expert_used, A = n * k, E = m->hp.n_embd, Fe = m->hp.n_ff_exp;
    const int64_t nm = h->n_miss;
    if (nm > 0) {
        const st_layer_desc *Ld = &m->desc->layers[il];
        uint64_t t0 = st_now_ns();
        st_moe_matmul_args g;
        memset(&g, 0, sizeof g);
        g.size = sizeof g;
        g.n_assign = (int32_t)nm;
        const st_gguf_tensor *t = Ld->t[ST_T_FFN_GATE_EXPS];
        g.w = st_model_view3((void *)(uintptr_t)t->data, t->type, t->ne[0], t->ne[1], t->ne[2]);
        g.x = st_model_view2(h->cur, ST_TYPE_F32, E, n);
        g.out = st_model_view2(h->miss_g, ST_TYPE_F32, Fe, nm);
        g.slot_table = h->cpu_table;
        g.expert = h->miss_expert;
        g.x_row = h->miss_xrow;
        OPCHK(st_dev_moe_matmul(cpu, h->cpu_stream, &g, "ffn_gate_exps"), "CPU experts");
        t = Ld->t[ST_T_FFN_UP_EXPS];
        g.w = st_model_view3((void *)(uintptr_t)t->data, t->type, t->ne[0], t->ne[1], t->ne[2]);
        g.out = st_model_view2(h->miss_u, ST_TYPE_F32, Fe, nm);
        OPCHK(st_dev_moe_matmul(cpu, h->cpu_stream, &g, "ffn_up_exps"), "CPU experts");
        st_swiglu_args s;
        memset(&s, 0, sizeof s);
        s.size = sizeof s;
        s.gate = st_model_view2(h->miss_g, ST_TYPE_F32, Fe, nm);
        s.up = st_model_view2(h->miss_u, ST_TYPE_F32, Fe, nm);
        s.out = s.gate;
        OPCHK(st_dev_swiglu(cpu, h->cpu_stream, &s, "experts"), "CPU experts");
        t = Ld->t[ST_T_FFN_DOWN_EXPS];
        g.w = st_model_view3((void *)(uintptr_t)t->data, t->type, t->ne[0], t->ne[1], t->ne[2]);
        g.x = st_model_view2(h->miss_g, ST_TYPE_F32, Fe, nm);
        g.out = st_model_view2(h->miss_out, ST_TYPE_F32, E, nm);
        g.x_row = h->miss_ident;
        OPCHK(st_dev_moe_matmul(cpu, h->cpu_stream, &g, "ffn_down_exps"), "CPU experts");
        OPCHK(st_dev_sync(cpu, h->cpu_stream), "CPU experts");
        h->cpu_s += (double)(st_now_ns() - t0) / 1e9;
        h->cpu_assign += (uint64_t)nm;
        OPCHK(st_dev_h2d(&m->dev, m->stream, m->w.ed + (size_t)((h->n_hit + h->n_staged_assign) * E), h->miss_out,
                            (uint64_t)(nm * E) * 4u),
              "uploading CPU expert rows");
    }
    *rows = m->w.ed;
    *n_rows = A;
    *row_of = h->idx_dev + 2 * A;
    return 0;
}

void st_model_note_routing(st_model *m, int il, const int32_t *ids, int64_t n) {
    const int64_t A = n * m->hp.n_expert_used;
    if (m->counts_on) {
        uint64_t *c = m->expert_counts + (size_t)il * (size_t)m->hp.n_expert;
        for (int64_t a = 0; a < A; a++)
            if (ids[a] >= 0 && ids[a] < m->hp.n_expert) c[ids[a]]++;
    }
    if (m->route_stats) st_route_stats_add(m->route_stats, il, ids, n);
}

uint64_t st_model_expert_slot_bytes(const st_model_desc *d) {
    uint64_t st[3] = {0, 0, 0};
    for (int l = 0; l < d->hp.n_layer; l++) {
        if (!d->layers[l].is_moe) continue;
        for (int i = 0; i < 3; i++) {
            uint64_t b = (slice_bytes(d->layers[l].t[k_roles[i]]) + 255u) / 256u * 256u;
            if (b > st[i]) st[i] = b;
        }
    }
    return st[0] + st[1] + st[2];
}

uint64_t st_model_expert_io_bytes(const st_hparams *hp, int64_t n_batch) {
    const uint64_t A = (uint64_t)n_batch * (uint64_t)hp->n_expert_used;
    return (A * 12u + 255u) / 256u * 256u + ((uint64_t)hp->n_expert * 4u + 255u) / 256u * 256u;
}

/* The facts of one stage's cache, added to *out (a split model's stages each have their own). */
static void info_add(const st_model *m, st_model_expert_info *out) {
    const st_model_hx *h = m->hx;
    st_expert_stats st;
    out->slots = (out->slots < 0 ? 0 : out->slots) + h->n_slots;
    out->slot_bytes = h->stride[0] + h->stride[1] + h->stride[2];
    out->arena_bytes += out->slot_bytes * (uint64_t)h->n_slots;
    st_expert_cache_stats(h->cache, -1, &st);
    out->stats.hits += st.hits;
    out->stats.misses += st.misses;
    out->stats.inserts += st.inserts;
    out->stats.evictions += st.evictions;
    out->stats.bytes_device += st.bytes_device;
    out->stats.bytes_host += st.bytes_host;
    out->stats.bytes_upload += st.bytes_upload;
    if (h->forwards > out->forwards) out->forwards = h->forwards, out->tokens = h->tokens;
    out->cpu_assign += h->cpu_assign;
    out->cpu_s += h->cpu_s;
    out->route_s += h->route_s;
    out->pinned_bytes += h->pinned_bytes;
    out->stage_slots += h->n_stage;
    out->stage_experts += h->stage_experts;
    out->stage_assign += h->stage_assign;
    out->resident_calls += h->resident_calls;
    if (h->upload_s > out->upload_s) out->upload_s = h->upload_s;
    if (h->pin_note[0]) out->pin_note = h->pin_note;
}

int st_model_expert_info_get(const st_model *m, st_model_expert_info *out) {
    memset(out, 0, sizeof *out);
    out->slots = -1;
    out->pin_note = "";
    int any = 0;
    for (; m; m = m->next) {
        if (!m->hx) continue;
        if (!any)
            for (int l = 0; l < m->hp.n_layer; l++) out->experts_total += m->desc->layers[l].is_moe ? m->hp.n_expert : 0;
        info_add(m, out);
        any = 1;
    }
    return any ? 0 : -1;
}

const st_expert_cache *st_model_expert_cache(const st_model *m) { return m->hx ? m->hx->cache : NULL; }

void st_model_expert_stats_reset(st_model *m) {
    st_model_hx *h = m->hx;
    if (!h) return;
    st_expert_cache_stats_reset(h->cache);
    h->forwards = h->tokens = h->cpu_assign = h->stage_experts = h->stage_assign = h->resident_calls = 0;
    h->cpu_s = h->route_s = 0;
    h->tr_n = 0;
    h->tr_base = h->accesses;
    h->tr_full = h->tr_cut = 0;
}

void st_model_expert_trace(st_model *m, int on) {
    if (m->hx) m->hx->trace_on = on;
}

int st_model_expert_belady(const st_model *m, st_expert_stats *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const st_model_hx *h = m->hx;
    if (!h || h->tr_n == 0) {
        snprintf(err, errlen, "no expert routing trace recorded (hybrid models with tracing on only)");
        return -1;
    }
    if (h->tr_cut) {
        snprintf(err, errlen, "the expert trace holds only the accesses since %llu (trimmed), not since the reset",
                 (unsigned long long)h->tr_base);
        return -1;
    }
    st_expert_trace t = {m->hp.n_layer, m->hp.n_expert, h->tr_n, h->tr_layer, h->tr_expert, h->tr_step};
    return st_expert_belady(&t, h->n_slots, out, err, errlen);
}

uint64_t st_model_expert_trace_pos(const st_model *m) { return m->hx ? m->hx->accesses : 0; }

void st_model_expert_trace_trim(st_model *m, uint64_t pos) {
    st_model_hx *h = m->hx;
    if (!h) return;
    h->tr_cut = 1; /* a sliding window from now on */
    if (pos <= h->tr_base && !h->tr_full) return;
    if (h->tr_full || pos >= h->tr_base + (uint64_t)h->tr_n) {
        /* nothing recorded is needed any more (or the record stopped at the cap, so every window
         * still open has a gap): record again from here */
        h->tr_n = 0;
        h->tr_base = h->accesses;
        h->tr_full = 0;
    } else {
        const int64_t drop = (int64_t)(pos - h->tr_base), keep = h->tr_n - drop;
        memmove(h->tr_layer, h->tr_layer + drop, (size_t)keep * sizeof *h->tr_layer);
        memmove(h->tr_expert, h->tr_expert + drop, (size_t)keep * sizeof *h->tr_expert);
        memmove(h->tr_step, h->tr_step + drop, (size_t)keep * sizeof *h->tr_step);
        h->tr_n = keep;
        h->tr_base = pos;
    }
}

int st_model_expert_belady_window(const st_model *m, uint64_t from, uint64_t to, const int32_t *resident,
                                  st_expert_stats *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const st_model_hx *h = m->hx;
    if (!h || !h->trace_on) {
        snprintf(err, errlen, "no expert routing trace (hybrid models with tracing on only)");
        return -1;
    }
    if (from > to || from < h->tr_base || to > h->tr_base + (uint64_t)h->tr_n) {
        snprintf(err, errlen, "accesses %llu..%llu are not all in the trace (it holds %llu..%llu%s)",
                 (unsigned long long)from, (unsigned long long)to, (unsigned long long)h->tr_base,
                 (unsigned long long)(h->tr_base + (uint64_t)h->tr_n), h->tr_full ? ", full" : "");
        return -1;
    }
    const int64_t off = (int64_t)(from - h->tr_base);
    st_expert_trace t = {m->hp.n_layer, m->hp.n_expert, (int64_t)(to - from), h->tr_layer + off,
                         h->tr_expert + off, h->tr_step + off};
    return st_expert_belady_from(&t, h->n_slots, resident, out, err, errlen);
}
