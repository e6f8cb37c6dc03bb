/* SPDX-License-Identifier: Apache-2.0 */
/* st_plan_build: layer placement by capacity, every consumer sized, the degrade order of
 * DESIGN.md section 5, the expert cache from what is left, and the refusal's suggestions. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "quant/quant.h"

#define MIB(b) ((double)(b) / 1048576.0)

void st_plan_request_default(st_plan_request *r) {
    memset(r, 0, sizeof *r);
    r->n_slots = 1;
    r->kv_type = ST_TYPE_F16;
    r->n_batch = 512;
    r->topk_max = 256;
    r->expert_cache = -1;
}

void st_plan_free(st_plan *p) { free(p); }

int st_plan_kind_allocated(st_plan_kind k) { return k != ST_PLAN_RUNTIME && k != ST_PLAN_RESERVE; }

const char *st_plan_kind_name(st_plan_kind k) {
    static const char *const n[ST_PLAN_KIND_COUNT] = {"weights", "kv", "work", "logits", "verify",
                                                      "graphs", "draft", "extra", "expert_table",
                                                      "expert_cache", "runtime", "reserve"};
    return (unsigned)k < ST_PLAN_KIND_COUNT ? n[k] : "?";
}

const st_plan_consumer *st_plan_find(const st_plan *p, int32_t d, const char *name) {
    if (!p || d < 0 || d >= p->n_devices || !name) return NULL;
    for (int32_t i = 0; i < p->dev[d].n_consumers; i++)
        if (!strcmp(p->dev[d].c[i].name, name)) return &p->dev[d].c[i];
    return NULL;
}

void st_plan_note_add(st_plan *p, st_plan_level lv, const char *fmt, ...) {
    if (p->n_notes >= ST_PLAN_MAX_NOTES) return;
    st_plan_note *n = &p->notes[p->n_notes++];
    n->level = lv;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->text, sizeof n->text, fmt, ap);
    va_end(ap);
}

static void add(st_plan_device *d, const char *name, st_plan_kind kind, uint64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add(st_plan_device *d, const char *name, st_plan_kind kind, uint64_t bytes, const char *fmt, ...) {
    if (d->n_consumers >= ST_PLAN_MAX_CONSUMERS) return; /* sized so this cannot happen */
    st_plan_consumer *c = &d->c[d->n_consumers++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->kind = kind;
    c->bytes = bytes;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    d->planned += bytes;
    if (st_plan_kind_allocated(kind)) d->allocated += bytes;
}

/* The state the degrade steps change. */
typedef struct plan_state {
    int32_t slots, ctx, W;
    uint32_t kv_type;
    uint64_t reserve;
} plan_state;

/* The automatic split for state s: each device's room for layers after the consumers that do
 * not grow with layers, and the layers in proportion to that room, never more than fit (at the
 * costliest layer's size). Leaves the capacity split in place when the layers fit nowhere. */
static void fit_split(st_plan *p, const st_model_desc *desc, const st_plan_request *r, const plan_state *s) {
    const st_hparams *hp = &desc->hp;
    const int32_t L = hp->n_layer, D = p->n_devices;
    const int32_t n_out = s->slots * (1 + s->W);
    const int32_t n_tok = r->n_batch > n_out ? r->n_batch : n_out;
    const uint64_t table = st_plan_round((uint64_t)s->slots * (uint64_t)s->ctx * 4u);
    const uint64_t kv1 = st_plan_kv_bytes(hp, s->kv_type, 1, s->slots, s->ctx) - table;
    uint64_t layer_max[2] = {0, 0}; /* costliest layer: [0] copied weights, [1] unified device */
    for (int32_t l = 0; l < L; l++)
        for (int u = 0; u < 2; u++) {
            uint64_t c = st_plan_weight_bytes(desc, l, 1, 0, 0, u) + kv1 + (uint64_t)hp->n_expert * 4u +
                         (r->experts_resident && !u ? st_plan_expert_resident_bytes(desc, l, 1) : 0);
            if (c > layer_max[u]) layer_max[u] = c;
        }
    int64_t room[ST_PLAN_MAX_DEVICES], maxl[ST_PLAN_MAX_DEVICES];
    int64_t sum_max = 0;
    double sum_room = 0;
    for (int32_t i = 0; i < D; i++) {
        const st_plan_device *d = &p->dev[i];
        const int first = i == 0, last = i == D - 1;
        uint64_t f = st_plan_weight_bytes(desc, 0, 0, first, last, d->in.unified) + st_plan_work_bytes(hp, n_tok, n_out) +
                     table + d->in.runtime_overhead + s->reserve + st_plan_round(r->graph_bytes) + 4096u;
        if (last) f += st_plan_logits_bytes(hp, n_out, p->topk_max) + (r->draft_head_bytes ? st_plan_round(r->draft_head_bytes) : 0);
        if (s->W > 0) f += st_plan_round((uint64_t)n_out * (uint64_t)s->ctx * 4u);
        for (int32_t e = 0; e < r->n_extra; e++)
            if (r->extra[e].device == i) f += st_plan_round(r->extra[e].bytes);
        room[i] = d->capacity > f ? (int64_t)(d->capacity - f) : 0;
        maxl[i] = room[i] / (int64_t)(layer_max[d->in.unified ? 1 : 0] ? layer_max[d->in.unified ? 1 : 0] : 1);
        if (maxl[i] > L) maxl[i] = L;
        sum_max += maxl[i];
        sum_room += (double)room[i];
    }
    if (sum_max < L || sum_room <= 0) return;
    int32_t n[ST_PLAN_MAX_DEVICES], given = 0;
    int speed = 1;
    for (int32_t i = 0; i < D; i++) speed &= p->dev[i].in.bw_gbs > 0;
    p->split_speed = speed && st_plan_split_fastest(p, desc, maxl, room, n) == 0;
    if (p->split_speed) given = L;
    for (int32_t i = 0; i < D && !p->split_speed; i++) {
        n[i] = (int32_t)((double)L * (double)room[i] / sum_room);
        if (n[i] > maxl[i]) n[i] = (int32_t)maxl[i];
        given += n[i];
    }
    while (given < L) { /* the rest to the device with the most room left per layer */
        int32_t best = -1;
        double best_left = -1;
        for (int32_t i = 0; i < D; i++) {
            if (n[i] >= maxl[i]) continue;
            double left = (double)room[i] / (double)(n[i] + 1);
            if (left > best_left) best_left = left, best = i;
        }
        if (best < 0) return; /* cannot happen: sum_max >= L */
        n[best]++;
        given++;
    }
    int32_t l = 0;
    for (int32_t i = 0; i < D; i++) {
        p->dev[i].layer_first = l;
        p->dev[i].n_layers = n[i];
        l += n[i];
    }
}

/* Fills every consumer except the expert cache for state s. */
static void fixed_consumers(st_plan *p, const st_model_desc *desc, const st_plan_request *r,
                            const plan_state *s) {
    const st_hparams *hp = &desc->hp;
    if (p->split_auto && p->n_devices > 1) fit_split(p, desc, r, s);
    const int32_t n_out = s->slots * (1 + s->W);
    const int32_t n_tok = r->n_batch > n_out ? r->n_batch : n_out;
    p->n_slots = s->slots;
    p->n_ctx = s->ctx;
    p->verify_window = s->W;
    p->kv_type = s->kv_type;
    p->n_out = n_out;
    p->n_tok_step = n_tok;
    for (int32_t i = 0; i < p->n_devices; i++) {
        st_plan_device *d = &p->dev[i];
        const int first = i == 0, last = i == p->n_devices - 1;
        const int32_t l0 = d->layer_first, nl = d->n_layers, l1 = l0 + nl - 1;
        d->n_consumers = 0;
        d->planned = d->allocated = 0;
        d->expert_slots = 0;
        d->expert_slots_max = hp->n_expert > 0 ? (int64_t)nl * hp->n_expert : 0;
        uint64_t w = st_plan_weight_bytes(desc, l0, nl, first, last, d->in.unified);
        if (nl > 0)
            add(d, "weights", ST_PLAN_WEIGHTS, w, "non-expert weights of layers %d-%d%s%s%s", l0, l1,
                first ? ", token embedding" : "", last ? ", output" : "",
                d->in.unified ? " (matrices read in place)" : "");
        else if (w > 0)
            add(d, "weights", ST_PLAN_WEIGHTS, w, "%s%s", first ? "token embedding " : "", last ? "output" : "");
        if (nl > 0) {
            const int mla = hp->n_lora_kv > 0; /* one latent row per token, V part of it */
            const uint64_t per = (mla ? 1u : 2u) * (uint64_t)st_row_size(s->kv_type, hp->head_dim) *
                                 (uint64_t)hp->n_head_kv;
            add(d, "kv", ST_PLAN_KV, st_plan_kv_bytes(hp, s->kv_type, nl, s->slots, s->ctx),
                "%s %s for %d slots x %d positions x %d layers (%llu B/position/layer) + cell table",
                mla ? "latent (MLA)" : "K+V", st_type_name(s->kv_type), s->slots, s->ctx, nl, (unsigned long long)per);
        }
        if (nl > 0 || first || last)
            add(d, "work", ST_PLAN_WORK, st_plan_work_bytes(hp, n_tok, n_out),
                "activations and expert rows for the largest step: %d tokens", n_tok);
        if (last)
            add(d, "logits", ST_PLAN_LOGITS, st_plan_logits_bytes(hp, n_out, p->topk_max),
                "%d rows x vocab %d + top-%d", n_out, hp->n_vocab, p->topk_max);
        if (s->W > 0 && nl > 0)
            add(d, "verify", ST_PLAN_VERIFY, st_plan_round((uint64_t)n_out * (uint64_t)s->ctx * 4u),
                "attention masks: %d slots x (1+%d) rows x %d positions", s->slots, s->W, s->ctx);
        if (r->graph_bytes > 0) add(d, "graphs", ST_PLAN_GRAPHS, st_plan_round(r->graph_bytes), "captured graphs");
        if (last && r->draft_head_bytes > 0)
            add(d, "draft", ST_PLAN_DRAFT, st_plan_round(r->draft_head_bytes), "draft / MTP head");
        for (int32_t e = 0; e < r->n_extra; e++)
            if (r->extra[e].device == i)
                add(d, r->extra[e].name, ST_PLAN_EXTRA, st_plan_round(r->extra[e].bytes), "%s",
                    r->extra[e].why[0] ? r->extra[e].why : "registered by name");
        /* the slot table and the index arrays of one step through the cache; both are device
           memory only with a cache, which is decided after the fit: reserved either way */
        if (hp->n_expert > 0 && nl > 0)
            add(d, "expert_table", ST_PLAN_EXPERT_TABLE,
                st_plan_round((uint64_t)hp->n_layer * (uint64_t)hp->n_expert * 4u) + st_plan_expert_index_bytes(hp, n_tok),
                "(layer, expert) -> slot, indexed by layer: %d layers x %d experts, indices of %d tokens x top-%d",
                hp->n_layer, hp->n_expert, n_tok, hp->n_expert_used);
        if (d->in.runtime_overhead > 0)
            add(d, "runtime", ST_PLAN_RUNTIME, d->in.runtime_overhead, "runtime overhead measured after context creation");
        if (s->reserve > 0)
            add(d, "reserve", ST_PLAN_RESERVE, s->reserve, "--vram-reserve-mib %llu",
                (unsigned long long)(s->reserve >> 20));
    }
}

/* Device that does not fit (most short first), or -1; *short_by gets its shortfall. */
static int32_t short_device(const st_plan *p, uint64_t *short_by) {
    int32_t worst = -1;
    uint64_t most = 0;
    for (int32_t i = 0; i < p->n_devices; i++) {
        const st_plan_device *d = &p->dev[i];
        if (d->planned > d->capacity && d->planned - d->capacity > most) {
            most = d->planned - d->capacity;
            worst = i;
        }
    }
    if (short_by) *short_by = most;
    return worst;
}

static int fits(st_plan *p, const st_model_desc *desc, const st_plan_request *r, const plan_state *s) {
    fixed_consumers(p, desc, r, s);
    return short_device(p, NULL) < 0;
}

/* Places contiguous layer ranges: as given, or proportional to capacity. */
static int split_layers(st_plan *p, int32_t n_layer, char *err, size_t errlen) {
    int64_t given = 0;
    for (int32_t i = 0; i < p->n_devices; i++) given += p->dev[i].in.n_layers;
    if (given > 0) {
        if (given != n_layer) {
            snprintf(err, errlen, "layer split places %lld layers, the model has %d", (long long)given, n_layer);
            return -1;
        }
        int32_t l = 0;
        for (int32_t i = 0; i < p->n_devices; i++) {
            if (p->dev[i].in.n_layers < 0) {
                snprintf(err, errlen, "layer split: negative count on device %d", i);
                return -1;
            }
            p->dev[i].layer_first = l;
            p->dev[i].n_layers = p->dev[i].in.n_layers;
            l += p->dev[i].n_layers;
        }
        return 0;
    }
    p->split_auto = 1; /* refined per state by fit_split */
    double total = 0;
    for (int32_t i = 0; i < p->n_devices; i++) total += (double)p->dev[i].capacity;
    int32_t l = 0;
    for (int32_t i = 0; i < p->n_devices; i++) {
        int32_t left = n_layer - l, devs_left = p->n_devices - i - 1;
        int32_t n = total > 0 ? (int32_t)((double)n_layer * (double)p->dev[i].capacity / total + 0.5)
                              : n_layer / p->n_devices;
        if (i == p->n_devices - 1) n = left;
        if (n > left - devs_left && left - devs_left >= 1) n = left - devs_left; /* one layer for each later device */
        if (n > left) n = left;
        if (n < 1 && left > devs_left) n = 1;
        p->dev[i].layer_first = l;
        p->dev[i].n_layers = n;
        l += n;
    }
    return 0;
}

/* Gives each device's leftover to its expert cache, in whole slots. */
static void expert_cache(st_plan *p, const st_model_desc *desc, const st_plan_request *r) {
    const uint64_t slot = desc->bytes_expert_slice;
    if (desc->hp.n_expert <= 0 || slot == 0) return;
    for (int32_t i = 0; i < p->n_devices; i++) {
        st_plan_device *d = &p->dev[i];
        if (d->expert_slots_max == 0) continue;
        if (d->in.unified && r->experts_resident) { /* read in place from the file: every one is there */
            d->expert_slots = d->expert_slots_max;
            continue;
        }
        uint64_t left = d->capacity > d->planned ? d->capacity - d->planned : 0;
        int64_t fit = (int64_t)(left / slot);
        int64_t want = r->expert_cache < 0 ? d->expert_slots_max : r->expert_cache;
        if (want > d->expert_slots_max) want = d->expert_slots_max;
        int64_t n = want < fit ? want : fit;
        /* every expert resident: the tensors are uploaded whole, each rounded on its own */
        const uint64_t all = st_plan_expert_resident_bytes(desc, d->layer_first, d->n_layers);
        if (n == d->expert_slots_max && all > left) n--;
        if (r->expert_cache > 0 && n < want)
            st_plan_note_add(p, ST_PLAN_WARNING,
                 "%s: expert cache shrunk from %lld to %lld slots (%.1f MiB left after the other consumers); "
                 "--expert-cache %lld, a shorter --ctx, fewer --parallel or a larger --vram-budget avoids this",
                 d->in.name, (long long)want, (long long)n, MIB(left), (long long)n);
        d->expert_slots = n;
        if (n == 0 && r->expert_cache != 0) {
            st_plan_note_add(p, ST_PLAN_WARNING,
                 "%s: no room for any expert slot (%.1f MiB left, one slot is %.2f MiB): every expert of layers "
                 "%d-%d runs on the CPU; a shorter --ctx, fewer --parallel or --vram-reserve-mib avoids this",
                 d->in.name, MIB(left), MIB(slot), d->layer_first, d->layer_first + d->n_layers - 1);
            continue;
        }
        if (n == 0) continue;
        if (n == d->expert_slots_max)
            add(d, "expert_cache", ST_PLAN_EXPERT_CACHE, all,
                "all %lld experts of layers %d-%d resident (%.2f MiB each)", (long long)n, d->layer_first,
                d->layer_first + d->n_layers - 1, MIB(slot));
        else
            add(d, "expert_cache", ST_PLAN_EXPERT_CACHE, (uint64_t)n * slot,
                "%lld of %lld experts (%.1f%%, %.2f MiB each); misses run on the CPU", (long long)n,
                (long long)d->expert_slots_max, 100.0 * (double)n / (double)d->expert_slots_max, MIB(slot));
    }
}

/* Appends the smallest changes that would make state s fit, tried one at a time. */
static void suggest(st_plan *p, const st_model_desc *desc, const st_plan_request *r, plan_state s) {
    char *o = p->refusal + strlen(p->refusal);
    size_t room = sizeof p->refusal - (size_t)(o - p->refusal);
    int n = 0;
#define SUGGEST(...)                                                                           \
    do {                                                                                       \
        int w_ = snprintf(o, room, "%s", n++ ? "; or " : " Would fit with: ");                 \
        if (w_ > 0 && (size_t)w_ < room) { o += w_; room -= (size_t)w_; }                      \
        w_ = snprintf(o, room, __VA_ARGS__);                                                   \
        if (w_ > 0 && (size_t)w_ < room) { o += w_; room -= (size_t)w_; }                      \
    } while (0)
    /* the longest context that fits at these slots */
    plan_state t = s;
    int32_t lo = 0, hi = s.ctx - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        t.ctx = mid;
        if (fits(p, desc, r, &t)) lo = mid;
        else hi = mid - 1;
    }
    if (lo >= 16) SUGGEST("--ctx %d (at --parallel %d)", lo, s.slots);
    if (s.kv_type != ST_TYPE_Q8_0 && desc->hp.head_dim % 32 == 0) {
        t = s;
        t.kv_type = ST_TYPE_Q8_0;
        if (fits(p, desc, r, &t)) SUGGEST("--kv-type q8_0");
    }
    if (s.reserve > 0) {
        t = s;
        t.reserve = 0;
        if (fits(p, desc, r, &t)) SUGGEST("a smaller --vram-reserve-mib");
    }
    fixed_consumers(p, desc, r, &s);
    for (int32_t i = 0; i < p->n_devices; i++) {
        const st_plan_device *d = &p->dev[i];
        if (d->planned <= d->capacity) continue;
        uint64_t need = d->planned - d->capacity;
        if (d->in.vram_budget > 0 && d->in.vram_budget < d->in.mem_free)
            SUGGEST("--vram-budget of %s raised by %.0f MiB", d->in.name, MIB(need) + 1);
        else
            SUGGEST("%.0f MiB more free memory on %s", MIB(need) + 1, d->in.name);
    }
#undef SUGGEST
}

st_plan *st_plan_build(const st_model_desc *desc, const st_plan_device_in *devs, int32_t n_devs,
                       const st_plan_request *rin, char *err, size_t errlen) {
    if (!desc || !devs || n_devs <= 0 || n_devs > ST_PLAN_MAX_DEVICES) {
        snprintf(err, errlen, "plan: %d devices (1..%d)", n_devs, ST_PLAN_MAX_DEVICES);
        return NULL;
    }
    st_plan_request r;
    if (rin) r = *rin;
    else st_plan_request_default(&r);
    const st_hparams *hp = &desc->hp;
    if (r.kv_type == 0) r.kv_type = ST_TYPE_F16;
    if (r.kv_type != ST_TYPE_F16 && r.kv_type != ST_TYPE_F32 && r.kv_type != ST_TYPE_Q8_0) {
        snprintf(err, errlen, "plan: KV type %s is not one of f16, f32, q8_0", st_type_name(r.kv_type));
        return NULL;
    }
    if (r.kv_type == ST_TYPE_Q8_0 && hp->head_dim % 32) {
        snprintf(err, errlen, "plan: KV type q8_0 needs a head dimension multiple of 32 (model has %d)", hp->head_dim);
        return NULL;
    }
    if (r.n_slots <= 0) r.n_slots = 1;
    if (r.n_batch <= 0) r.n_batch = 512;
    if (r.verify_window < 0) r.verify_window = 0;
    if (r.topk_max <= 0) r.topk_max = 256;
    if (r.topk_max > hp->n_vocab) r.topk_max = hp->n_vocab;
    if (r.n_ctx <= 0) r.n_ctx = hp->n_ctx_train > 0 && hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (r.n_extra < 0 || r.n_extra > ST_PLAN_MAX_EXTRA) {
        snprintf(err, errlen, "plan: %d extra consumers (at most %d)", r.n_extra, ST_PLAN_MAX_EXTRA);
        return NULL;
    }
    for (int32_t e = 0; e < r.n_extra; e++) {
        for (int k = 0; k < ST_PLAN_KIND_COUNT; k++)
            if (!strcmp(r.extra[e].name, st_plan_kind_name((st_plan_kind)k)) || !strcmp(r.extra[e].name, "(unused)")) {
                snprintf(err, errlen, "plan: extra consumer name '%s' is taken by the planner's own consumer",
                         r.extra[e].name);
                return NULL;
            }
        for (int k = 0; k < e; k++)
            if (r.extra[k].device == r.extra[e].device && !strcmp(r.extra[k].name, r.extra[e].name)) {
                snprintf(err, errlen, "plan: extra consumer '%s' registered twice on device %d", r.extra[e].name,
                         r.extra[e].device);
                return NULL;
            }
        if (r.extra[e].device < 0 || r.extra[e].device >= n_devs || !r.extra[e].name[0]) {
            snprintf(err, errlen, "plan: extra consumer '%s' names device %d of %d", r.extra[e].name,
                     r.extra[e].device, n_devs);
            return NULL;
        }
    }
    st_plan *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "plan: out of host memory");
        return NULL;
    }
    p->n_devices = n_devs;
    p->n_batch = r.n_batch;
    p->topk_max = r.topk_max;
    p->requested_slots = r.n_slots;
    p->requested_verify_window = r.verify_window;
    p->bytes_expert_slot = desc->bytes_expert_slice;
    for (int32_t i = 0; i < n_devs; i++) {
        st_plan_device *d = &p->dev[i];
        d->in = devs[i];
        if (!d->in.name[0]) snprintf(d->in.name, sizeof d->in.name, "device %d", i);
        d->capacity = d->in.mem_free;
        if (d->in.vram_budget > 0 && d->in.vram_budget < d->capacity) d->capacity = d->in.vram_budget;
    }
    if (split_layers(p, hp->n_layer, err, errlen)) {
        free(p);
        return NULL;
    }
    if (r.n_ctx > hp->n_ctx_train && hp->rope_scaling == ST_ROPE_SCALING_NONE)
        st_plan_note_add(p, ST_PLAN_WARNING, "--ctx %d is beyond the model's training context %d (no rope scaling in the file)",
             r.n_ctx, hp->n_ctx_train);

    plan_state s = {r.n_slots, r.n_ctx, r.verify_window, r.kv_type, r.reserve};
    int noted_cache = 0, noted_stream = 0;
    while (!fits(p, desc, &r, &s)) {
        uint64_t by = 0;
        int32_t bad = short_device(p, &by);
        /* 1: the expert cache is already zero here: only the fixed consumers are counted */
        if (!noted_cache && hp->n_expert > 0 && r.expert_cache != 0) {
            st_plan_note_add(p, ST_PLAN_WARNING, "%s: no room for an expert cache (the other consumers are %.1f MiB over); "
                 "experts run on the CPU; --expert-cache 0 states this, a shorter --ctx avoids it",
                 p->dev[bad].in.name, MIB(by));
            noted_cache = 1;
        }
        /* 2: a resident KV window with the rest streamed is not built */
        if (!noted_stream) {
            st_plan_note_add(p, ST_PLAN_WARNING, "%s: KV streaming beyond a resident window is not built yet; the whole KV "
                 "of every slot must be resident", p->dev[bad].in.name);
            noted_stream = 1;
        }
        /* 3: fewer slots */
        if (s.slots > 1) {
            s.slots--;
            continue;
        }
        /* 4: shorter verify windows */
        if (s.W > 0) {
            s.W /= 2;
            continue;
        }
        /* 5: refuse */
        p->ok = 0;
        snprintf(p->refusal, sizeof p->refusal,
                 "the plan does not fit: %s needs %.1f MiB more even with 1 slot of %d positions, no verify "
                 "window and no expert cache.", p->dev[bad].in.name, MIB(by), s.ctx);
        suggest(p, desc, &r, s);
        fixed_consumers(p, desc, &r, &s);
        return p;
    }
    if (s.slots < r.n_slots)
        st_plan_note_add(p, ST_PLAN_WARNING,
             "--parallel %d does not fit: planned %d slots of %d positions; --parallel %d, a shorter --ctx, "
             "--kv-type q8_0 or a larger --vram-budget avoids this", r.n_slots, s.slots, s.ctx, s.slots);
    if (s.W < r.verify_window)
        st_plan_note_add(p, ST_PLAN_WARNING, "--verify-window %d does not fit: planned %d; --verify-window %d avoids this",
             r.verify_window, s.W, s.W);
    expert_cache(p, desc, &r);
    p->ok = 1;
    st_plan_split_times(p, desc);
    return p;
}
