/* SPDX-License-Identifier: Apache-2.0 */
/* Expert slot table, lru / lfru / profile policies, statistics. */
#include "platform/textbuf.h"
#include "experts/expert_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct st_expert_cache {
    st_expert_cache_params p;
    int64_t n_keys;          /* n_layer * n_expert */
    int32_t *table;          /* [n_keys] slot or -1 */
    int64_t *slot_key;       /* [n_slots] key or -1 */
    uint64_t *slot_used;     /* [n_slots] tick of the last use (recency) */
    uint64_t *slot_call;     /* [n_slots] route call that last used it (protected within it) */
    float *score;            /* [n_keys] lfru score as of step score_step[key] */
    uint32_t *score_step;    /* [n_keys] */
    uint64_t *key_call;      /* [n_keys] route call that last saw the key */
    int64_t *free_slots;     /* stack */
    int64_t n_free;
    struct cand { float score; int64_t key; } *cand; /* [cand_cap] scratch: missed keys of one call */
    int64_t cand_cap;
    uint64_t tick, call;
    uint32_t step;
    int32_t inserts_this_step;
    float admit_above;       /* lfru: a newcomer's score must exceed this (the residents' mean
                                plus admit_z of its Poisson spread), set once per step */
    int dirty;
    st_expert_stats *stats;  /* [n_layer] */
};

int st_expert_policy_from_name(const char *name) {
    if (!name) return -1;
    if (!strcmp(name, "lru")) return ST_EXPERT_LRU;
    if (!strcmp(name, "lfru")) return ST_EXPERT_LFRU;
    if (!strcmp(name, "profile")) return ST_EXPERT_PROFILE;
    return -1;
}

const char *st_expert_policy_name(int policy) {
    switch (policy) {
    case ST_EXPERT_LRU: return "lru";
    case ST_EXPERT_LFRU: return "lfru";
    case ST_EXPERT_PROFILE: return "profile";
    default: return "?";
    }
}

void st_expert_cache_free(st_expert_cache *c) {
    if (!c) return;
    free(c->table);
    free(c->slot_key);
    free(c->slot_used);
    free(c->slot_call);
    free(c->score);
    free(c->score_step);
    free(c->key_call);
    free(c->free_slots);
    free(c->cand);
    free(c->stats);
    free(c);
}

st_expert_cache *st_expert_cache_create(const st_expert_cache_params *p, char *err, size_t errlen) {
    if (!p || p->n_layer <= 0 || p->n_expert <= 0 || p->n_slots < 0 || p->max_inserts_per_step < 0 ||
        (unsigned)p->policy > ST_EXPERT_PROFILE || p->decay < 0 || p->decay > 1) {
        snprintf(err, errlen, "expert cache: invalid parameters (layers %d, experts %d, slots %lld, policy %d)",
                 p ? p->n_layer : 0, p ? p->n_expert : 0, p ? (long long)p->n_slots : 0ll, p ? (int)p->policy : -1);
        return NULL;
    }
    st_expert_cache *c = calloc(1, sizeof *c);
    if (!c) goto oom;
    c->p = *p;
    if (c->p.decay == 0) c->p.decay = ST_EXPERT_LFRU_DECAY;
    if (c->p.admit_margin == 0) c->p.admit_margin = ST_EXPERT_LFRU_MARGIN;
    if (c->p.admit_margin < 0) c->p.admit_margin = 0;
    if (c->p.admit_z == 0) c->p.admit_z = ST_EXPERT_LFRU_Z;
    if (c->p.admit_z < 0) c->p.admit_z = 0;
    c->n_keys = (int64_t)p->n_layer * p->n_expert;
    if (c->p.n_slots > c->n_keys) c->p.n_slots = c->n_keys; /* more slots than experts: never used */
    const size_t S = (size_t)(c->p.n_slots ? c->p.n_slots : 1), K = (size_t)c->n_keys;
    c->table = malloc(K * sizeof *c->table);
    c->slot_key = malloc(S * sizeof *c->slot_key);
    c->slot_used = calloc(S, sizeof *c->slot_used);
    c->slot_call = calloc(S, sizeof *c->slot_call);
    c->score = calloc(K, sizeof *c->score);
    c->score_step = calloc(K, sizeof *c->score_step);
    c->key_call = calloc(K, sizeof *c->key_call);
    c->free_slots = malloc(S * sizeof *c->free_slots);
    c->stats = calloc((size_t)p->n_layer, sizeof *c->stats);
    if (!c->table || !c->slot_key || !c->slot_used || !c->slot_call || !c->score || !c->score_step ||
        !c->key_call || !c->free_slots || !c->stats)
        goto oom;
    for (size_t k = 0; k < K; k++) c->table[k] = -1;
    for (int64_t s = 0; s < c->p.n_slots; s++) {
        c->slot_key[s] = -1;
        c->free_slots[c->n_free++] = c->p.n_slots - 1 - s; /* slot 0 is taken first */
    }
    c->dirty = 1;
    return c;
oom:
    snprintf(err, errlen, "expert cache: out of host memory");
    st_expert_cache_free(c);
    return NULL;
}

static float score_now(const st_expert_cache *c, int64_t key) {
    uint32_t dt = c->step - c->score_step[key];
    float s = c->score[key];
    return dt ? s * powf(c->p.decay, (float)dt) : s;
}

static void score_bump(st_expert_cache *c, int64_t key, float by) {
    c->score[key] = score_now(c, key) + by;
    c->score_step[key] = c->step;
}

/* lfru's bar for a newcomer: the mean score of the residents plus admit_z standard deviations
 * of a use count of that mean (Poisson: sqrt(mean)). When every expert is used at the same rate
 * (balanced routing), a newcomer's score is noise around the residents' mean and rarely clears
 * it, so the cache stops trading one expert for an equal one (each trade a copy that never pays
 * back); a hot expert's score sits far above it. Also a cheap first test: a newcomer below it
 * is refused without looking for the weakest resident. */
static void set_admit_bar(st_expert_cache *c) {
    c->admit_above = 0;
    const int64_t used = c->p.n_slots - c->n_free;
    if (c->p.policy != ST_EXPERT_LFRU || c->p.admit_z <= 0 || c->n_free > 0 || used <= 0) return;
    double sum = 0;
    for (int64_t s = 0; s < c->p.n_slots; s++)
        if (c->slot_key[s] >= 0) sum += score_now(c, c->slot_key[s]);
    const double mean = sum / (double)used;
    c->admit_above = (float)(mean + c->p.admit_z * sqrt(mean > 1.0 ? mean : 1.0));
}

void st_expert_cache_step(st_expert_cache *c) {
    c->step++;
    c->inserts_this_step = 0;
    set_admit_bar(c);
}

/* Chooses a slot for a newcomer of score `cand_score`: a free one, else the weakest resident
 * not used in this call; -1 when the policy says no. */
static int64_t pick_slot(st_expert_cache *c, float cand_score) {
    if (c->n_free > 0) return c->free_slots[--c->n_free];
    int64_t best = -1;
    float best_score = 0;
    for (int64_t s = 0; s < c->p.n_slots; s++) {
        if (c->slot_call[s] == c->call) continue;
        if (c->p.policy == ST_EXPERT_LRU) {
            if (best < 0 || c->slot_used[s] < c->slot_used[best]) best = s;
        } else {
            float sc = score_now(c, c->slot_key[s]);
            if (best < 0 || sc < best_score || (sc == best_score && c->slot_used[s] < c->slot_used[best])) {
                best = s;
                best_score = sc;
            }
        }
    }
    if (best >= 0 && c->p.policy == ST_EXPERT_LFRU && !(cand_score > best_score + c->p.admit_margin)) return -1;
    return best;
}

/* Puts key into slot s (evicting its holder), records the load. */
static void place(st_expert_cache *c, int64_t key, int64_t s, st_expert_load *ld) {
    const int32_t E = c->p.n_expert;
    ld->layer = (int32_t)(key / E);
    ld->expert = (int32_t)(key % E);
    ld->slot = s;
    ld->evicted_layer = ld->evicted_expert = -1;
    int64_t old = c->slot_key[s];
    if (old >= 0) {
        c->table[old] = -1;
        ld->evicted_layer = (int32_t)(old / E);
        ld->evicted_expert = (int32_t)(old % E);
        c->stats[old / E].evictions++;
    }
    c->slot_key[s] = key;
    c->table[key] = (int32_t)s;
    c->slot_used[s] = ++c->tick;
    c->slot_call[s] = c->call;
    c->dirty = 1;
}

int64_t st_expert_cache_seed(st_expert_cache *c, const int32_t *layer, const int32_t *expert, int64_t n,
                             st_expert_load *loads, int64_t loads_cap) {
    int64_t placed = 0;
    c->call++;
    for (int64_t i = 0; i < n && c->n_free > 0 && placed < loads_cap; i++) {
        if (layer[i] < 0 || layer[i] >= c->p.n_layer || expert[i] < 0 || expert[i] >= c->p.n_expert) continue;
        int64_t key = (int64_t)layer[i] * c->p.n_expert + expert[i];
        if (c->table[key] >= 0) continue;
        score_bump(c, key, 1.0f + (float)(n - i) / (float)n); /* a prior by rank */
        place(c, key, c->free_slots[--c->n_free], &loads[placed++]);
    }
    return placed;
}

static int by_score_desc(const void *a, const void *b) {
    const struct cand *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return (x->key > y->key) - (x->key < y->key);
}

int64_t st_expert_cache_route(st_expert_cache *c, int32_t layer, const int32_t *ids, int64_t n, int32_t *slot_of,
                              st_expert_load *loads, int64_t loads_cap) {
    if (layer < 0 || layer >= c->p.n_layer) return -1;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->p.n_expert) return -1;
    if (n > c->cand_cap) {
        struct cand *nc = realloc(c->cand, (size_t)n * sizeof *nc);
        if (!nc) return -1;
        c->cand = nc;
        c->cand_cap = n;
    }
    st_expert_stats *st = &c->stats[layer];
    const uint64_t call = ++c->call;
    int64_t n_cand = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t key = (int64_t)layer * c->p.n_expert + ids[i];
        const int first = c->key_call[key] != call;
        c->key_call[key] = call;
        score_bump(c, key, 1.0f);
        const int32_t s = c->table[key];
        if (slot_of) slot_of[i] = s;
        if (s >= 0) {
            st->hits++;
            c->slot_used[s] = ++c->tick;
            c->slot_call[s] = call;
            if (first) st->bytes_device += c->p.slot_bytes;
        } else {
            st->misses++;
            if (first) {
                st->bytes_host += c->p.slot_bytes;
                c->cand[n_cand++].key = key;
            }
        }
    }
    if (c->p.policy == ST_EXPERT_PROFILE || c->p.n_slots == 0) return 0;
    if (c->p.policy == ST_EXPERT_LFRU && n_cand > 1) {
        for (int64_t j = 0; j < n_cand; j++) c->cand[j].score = score_now(c, c->cand[j].key);
        qsort(c->cand, (size_t)n_cand, sizeof *c->cand, by_score_desc);
    }
    int64_t n_loads = 0;
    for (int64_t j = 0; j < n_cand && n_loads < loads_cap; j++) {
        if (c->p.max_inserts_per_step > 0 && c->inserts_this_step >= c->p.max_inserts_per_step) break;
        const int64_t key = c->cand[j].key;
        const float sc = score_now(c, key);
        if (c->p.policy == ST_EXPERT_LFRU && c->n_free == 0 && !(sc > c->admit_above)) break; /* sorted */
        int64_t s = pick_slot(c, sc);
        if (s < 0) break; /* every slot is in use by this call, or (lfru, sorted) the rest are weaker */
        place(c, key, s, &loads[n_loads++]);
        c->inserts_this_step++;
        st->inserts++;
        st->bytes_upload += c->p.slot_bytes;
    }
    return n_loads;
}

const int32_t *st_expert_cache_table(const st_expert_cache *c) { return c->table; }

int64_t st_expert_cache_slot(const st_expert_cache *c, int32_t layer, int32_t expert) {
    if (layer < 0 || layer >= c->p.n_layer || expert < 0 || expert >= c->p.n_expert) return -1;
    return c->table[(int64_t)layer * c->p.n_expert + expert];
}

int64_t st_expert_cache_resident(const st_expert_cache *c) { return c->p.n_slots - c->n_free; }

int st_expert_cache_table_dirty(const st_expert_cache *c) { return c->dirty; }
void st_expert_cache_table_clean(st_expert_cache *c) { c->dirty = 0; }

void st_expert_cache_stats(const st_expert_cache *c, int32_t layer, st_expert_stats *out) {
    memset(out, 0, sizeof *out);
    for (int32_t l = 0; l < c->p.n_layer; l++) {
        if (layer >= 0 && l != layer) continue;
        const st_expert_stats *s = &c->stats[l];
        out->hits += s->hits;
        out->misses += s->misses;
        out->inserts += s->inserts;
        out->evictions += s->evictions;
        out->bytes_device += s->bytes_device;
        out->bytes_host += s->bytes_host;
        out->bytes_upload += s->bytes_upload;
    }
}

double st_expert_stats_hit_rate(const st_expert_stats *s) {
    uint64_t t = s->hits + s->misses;
    return t ? (double)s->hits / (double)t : 0.0;
}

void st_expert_cache_count_resident(st_expert_cache *c, int32_t layer, uint64_t n, uint64_t distinct) {
    if (layer < 0 || layer >= c->p.n_layer) return;
    c->stats[layer].hits += n;
    c->stats[layer].bytes_device += distinct * c->p.slot_bytes;
}

void st_expert_cache_stats_reset(st_expert_cache *c) {
    memset(c->stats, 0, (size_t)c->p.n_layer * sizeof *c->stats);
}

size_t st_expert_cache_format_metrics(const st_expert_cache *c, const char *device, double belady_hit_rate, char *buf,
                                      size_t len) {
    st_textbuf o = {buf, len, 0};
    if (len) buf[0] = 0;
    const char *dv = device ? device : "0";
    static const char *const names[3] = {"hits", "misses", "inserts"};
    for (int k = 0; k < 3; k++) {
        st_textbuf_put(&o, "# TYPE strata_expert_%s_total counter\n", names[k]);
        for (int32_t l = -1; l < c->p.n_layer; l++) {
            st_expert_stats s;
            st_expert_cache_stats(c, l, &s);
            uint64_t v = k == 0 ? s.hits : k == 1 ? s.misses : s.inserts;
            if (l < 0) st_textbuf_put(&o, "strata_expert_%s_total{device=\"%s\"} %llu\n", names[k], dv, (unsigned long long)v);
            else st_textbuf_put(&o, "strata_expert_%s_total{device=\"%s\",layer=\"%d\"} %llu\n", names[k], dv, l, (unsigned long long)v);
        }
    }
    st_expert_stats t;
    st_expert_cache_stats(c, -1, &t);
    st_textbuf_put(&o, "# TYPE strata_expert_bytes_total counter\n");
    st_textbuf_put(&o, "strata_expert_bytes_total{device=\"%s\",tier=\"device\"} %llu\n", dv, (unsigned long long)t.bytes_device);
    st_textbuf_put(&o, "strata_expert_bytes_total{device=\"%s\",tier=\"host\"} %llu\n", dv, (unsigned long long)t.bytes_host);
    st_textbuf_put(&o, "strata_expert_bytes_total{device=\"%s\",tier=\"upload\"} %llu\n", dv, (unsigned long long)t.bytes_upload);
    st_textbuf_put(&o, "# TYPE strata_expert_resident gauge\nstrata_expert_resident{device=\"%s\"} %lld\n", dv,
        (long long)st_expert_cache_resident(c));
    st_textbuf_put(&o, "# TYPE strata_expert_slots gauge\nstrata_expert_slots{device=\"%s\"} %lld\n", dv, (long long)c->p.n_slots);
    st_textbuf_put(&o, "# TYPE strata_expert_hit_rate gauge\nstrata_expert_hit_rate{device=\"%s\"} %.6f\n", dv,
        st_expert_stats_hit_rate(&t));
    for (int32_t l = 0; l < c->p.n_layer; l++) { /* layers that routed anything */
        st_expert_stats s;
        st_expert_cache_stats(c, l, &s);
        if (s.hits + s.misses == 0) continue;
        st_textbuf_put(&o, "strata_expert_hit_rate{device=\"%s\",layer=\"%d\"} %.6f\n", dv, l,
                       st_expert_stats_hit_rate(&s));
    }
    if (belady_hit_rate >= 0)
        st_textbuf_put(&o, "# TYPE strata_expert_hit_rate_belady gauge\nstrata_expert_hit_rate_belady{device=\"%s\"} %.6f\n", dv,
            belady_hit_rate);
    return st_textbuf_done(&o);
}
