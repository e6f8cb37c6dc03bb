/* SPDX-License-Identifier: Apache-2.0 */
/* Belady's optimum, policy replay and profile ranking over routing traces. */
#include "experts/expert_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_trace(const st_expert_trace *t, char *err, size_t errlen) {
    if (!t || t->n_layer <= 0 || t->n_expert <= 0 || t->n < 0 || (t->n > 0 && (!t->layer || !t->expert))) {
        snprintf(err, errlen, "expert trace: invalid header");
        return -1;
    }
    for (int64_t i = 0; i < t->n; i++) {
        if (t->layer[i] < 0 || t->layer[i] >= t->n_layer || t->expert[i] < 0 || t->expert[i] >= t->n_expert) {
            snprintf(err, errlen, "expert trace: access %lld (layer %d, expert %d) out of range", (long long)i,
                     t->layer[i], t->expert[i]);
            return -1;
        }
        if (t->step && i > 0 && t->step[i] < t->step[i - 1]) {
            snprintf(err, errlen, "expert trace: steps go backwards at access %lld", (long long)i);
            return -1;
        }
    }
    return 0;
}

typedef struct heap_ent {
    int64_t next, key;
} heap_ent;

static void heap_push(heap_ent *h, int64_t *n, heap_ent e) {
    int64_t i = (*n)++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (h[p].next >= e.next) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static void heap_pop(heap_ent *h, int64_t *n) {
    heap_ent last = h[--(*n)];
    int64_t i = 0;
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        heap_ent best = last;
        if (l < *n && h[l].next > best.next) { m = l; best = h[l]; }
        if (r < *n && h[r].next > best.next) { m = r; }
        if (m == i) break;
        h[i] = h[m];
        i = m;
    }
    if (*n > 0) h[i] = last;
}

int st_expert_belady(const st_expert_trace *t, int64_t n_slots, st_expert_stats *out, char *err, size_t errlen) {
    return st_expert_belady_from(t, n_slots, NULL, out, err, errlen);
}

int st_expert_belady_from(const st_expert_trace *t, int64_t n_slots, const int32_t *resident, st_expert_stats *out,
                          char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (check_trace(t, err, errlen)) return -1;
    const int64_t K = (int64_t)t->n_layer * t->n_expert, n = t->n;
    int64_t *next = malloc((size_t)(n ? n : 1) * sizeof *next);
    int64_t *last = malloc((size_t)K * sizeof *last);
    int64_t *cur = malloc((size_t)K * sizeof *cur); /* next use of a resident key, -1 = absent */
    heap_ent *h = malloc((size_t)(n + (resident ? K : 0) + 1) * sizeof *h); /* a push per access and resident */
    if (!next || !last || !cur || !h) {
        free(next), free(last), free(cur), free(h);
        snprintf(err, errlen, "expert trace: out of host memory");
        return -1;
    }
    for (int64_t k = 0; k < K; k++) last[k] = n, cur[k] = -1;
    for (int64_t i = n - 1; i >= 0; i--) {
        int64_t k = (int64_t)t->layer[i] * t->n_expert + t->expert[i];
        next[i] = last[k];
        last[k] = i;
    }
    int64_t hn = 0, count = 0;
    /* the residents at the start hold their slots until their first use in the trace (or
     * forever: n); they are the first to go when never used */
    for (int64_t k = 0; resident && k < K; k++) {
        if (resident[k] < 0) continue;
        if (count >= n_slots) {
            free(next), free(last), free(cur), free(h);
            snprintf(err, errlen, "expert trace: more residents at the start than %lld slots", (long long)n_slots);
            return -1;
        }
        cur[k] = last[k];
        heap_push(h, &hn, (heap_ent){last[k], k});
        count++;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (int64_t)t->layer[i] * t->n_expert + t->expert[i];
        if (cur[k] >= 0) {
            out->hits++;
            cur[k] = next[i];
            heap_push(h, &hn, (heap_ent){next[i], k});
            continue;
        }
        out->misses++;
        if (n_slots <= 0) continue;
        if (count < n_slots) {
            cur[k] = next[i];
            heap_push(h, &hn, (heap_ent){next[i], k});
            count++;
            out->inserts++;
            continue;
        }
        while (hn > 0 && cur[h[0].key] != h[0].next) heap_pop(h, &hn); /* stale entries */
        if (hn == 0 || h[0].next <= next[i]) continue;                  /* not worth a slot */
        cur[h[0].key] = -1;
        heap_pop(h, &hn);
        out->evictions++;
        cur[k] = next[i];
        heap_push(h, &hn, (heap_ent){next[i], k});
        out->inserts++;
    }
    free(next), free(last), free(cur), free(h);
    return 0;
}

/* Called after each (step, layer) group was routed: ids[0..n) and slot_of (-1 = miss, slot as it
 * was before this group's admissions), n_loads admissions. */
typedef int (*group_fn)(void *ctx, int32_t layer, const int32_t *ids, const int32_t *slot_of, int64_t n,
                        int64_t n_loads);

/* A cache of parameters pin for the trace's sizes, seeded (and its counters cleared), with the
 * loads buffer; NULL with err. */
static st_expert_cache *replay_cache(const st_expert_trace *t, const st_expert_cache_params *pin,
                                     const int32_t *seed_layer, const int32_t *seed_expert, int64_t n_seed,
                                     st_expert_load **loads, int64_t *cap, char *err, size_t errlen) {
    if (check_trace(t, err, errlen)) return NULL;
    st_expert_cache_params p = *pin;
    p.n_layer = t->n_layer;
    p.n_expert = t->n_expert;
    st_expert_cache *c = st_expert_cache_create(&p, err, errlen);
    if (!c) return NULL;
    *cap = n_seed > t->n ? n_seed : t->n;
    *loads = malloc((size_t)(*cap ? *cap : 1) * sizeof **loads);
    if (!*loads) {
        st_expert_cache_free(c);
        snprintf(err, errlen, "expert trace: out of host memory");
        return NULL;
    }
    if (n_seed > 0 && seed_layer && seed_expert) {
        st_expert_cache_seed(c, seed_layer, seed_expert, n_seed, *loads, *cap);
        st_expert_cache_stats_reset(c);
    }
    return c;
}

/* Routes the trace through c, one call per (step, layer) group, calling fn (may be NULL) after
 * each with slot_of (scratch [t->n]). 0, or -1 with err. */
static int replay(const st_expert_trace *t, st_expert_cache *c, st_expert_load *loads, int64_t cap, int32_t *slot_of,
                  group_fn fn, void *ctx, char *err, size_t errlen) {
    int64_t i = 0;
    while (i < t->n) {
        const int64_t step = t->step ? t->step[i] : i;
        st_expert_cache_step(c);
        while (i < t->n && (t->step ? t->step[i] : i) == step) {
            int64_t j = i;
            while (j < t->n && (t->step ? t->step[j] : j) == step && t->layer[j] == t->layer[i]) j++;
            int64_t nl = st_expert_cache_route(c, t->layer[i], t->expert + i, j - i, slot_of ? slot_of + i : NULL,
                                               loads, cap);
            if (nl < 0 || (fn && fn(ctx, t->layer[i], t->expert + i, slot_of + i, j - i, nl))) {
                snprintf(err, errlen, "expert trace: routing access %lld failed", (long long)i);
                return -1;
            }
            i = j;
        }
    }
    return 0;
}

int st_expert_simulate(const st_expert_trace *t, const st_expert_cache_params *pin, const int32_t *seed_layer,
                       const int32_t *seed_expert, int64_t n_seed, st_expert_stats *out, st_expert_stats *per_layer,
                       char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    st_expert_load *loads = NULL;
    int64_t cap = 0;
    st_expert_cache *c = replay_cache(t, pin, seed_layer, seed_expert, n_seed, &loads, &cap, err, errlen);
    if (!c) return -1;
    int rc = replay(t, c, loads, cap, NULL, NULL, NULL, err, errlen);
    st_expert_cache_stats(c, -1, out);
    for (int32_t l = 0; per_layer && l < t->n_layer; l++) st_expert_cache_stats(c, l, &per_layer[l]);
    free(loads);
    st_expert_cache_free(c);
    return rc;
}

/* State of st_expert_model_time's replay. */
typedef struct time_ctx {
    const st_expert_cost *cost;
    uint64_t bytes;
    int both_pipes;
    int32_t n_expert;
    int32_t *rows;      /* [n_expert] rows per expert of the group */
    int8_t *hit;        /* [n_expert] */
    int32_t *miss_rows; /* [n_expert] rows of the group's missed experts */
    uint8_t *upload;    /* [n_expert] */
    st_expert_time *out;
} time_ctx;

/* One layer of one step: the device computes its hit experts and copies the admissions; the
 * misses go to the CPU, or are split between the pipes (both_pipes). The layer ends when both
 * pipes are done. */
static int time_group(void *vctx, int32_t layer, const int32_t *ids, const int32_t *slot_of, int64_t n,
                      int64_t n_loads) {
    time_ctx *x = vctx;
    const st_expert_cost *c = x->cost;
    (void)layer;
    memset(x->rows, 0, (size_t)x->n_expert * sizeof *x->rows);
    for (int64_t i = 0; i < n; i++) {
        x->rows[ids[i]]++;
        x->hit[ids[i]] = slot_of[i] >= 0;
    }
    double dev = (double)n_loads * st_expert_cost_upload_s(c, x->bytes);
    int64_t nm = 0;
    for (int32_t e = 0; e < x->n_expert; e++) {
        if (!x->rows[e]) continue;
        if (x->hit[e]) dev += c->device_s_per_expert;
        else x->miss_rows[nm++] = x->rows[e];
    }
    double t = 0;
    int64_t up = st_expert_cost_split(c, x->bytes, dev, x->miss_rows, nm, x->both_pipes ? nm : 0, x->upload, &t);
    x->out->seconds += t;
    x->out->streamed += (uint64_t)up;
    x->out->cpu_experts += (uint64_t)(nm - up);
    x->out->admissions += (uint64_t)n_loads;
    return 0;
}

int st_expert_model_time(const st_expert_trace *t, const st_expert_cache_params *p, const int32_t *seed_layer,
                         const int32_t *seed_expert, int64_t n_seed, const st_expert_cost *cost, uint64_t expert_bytes,
                         int both_pipes, st_expert_time *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    st_expert_load *loads = NULL;
    int64_t cap = 0;
    st_expert_cache *c = replay_cache(t, p, seed_layer, seed_expert, n_seed, &loads, &cap, err, errlen);
    if (!c) return -1;
    time_ctx x = {cost, expert_bytes, both_pipes, t->n_expert, NULL, NULL, NULL, NULL, out};
    x.rows = malloc((size_t)t->n_expert * sizeof *x.rows);
    x.hit = malloc((size_t)t->n_expert);
    x.miss_rows = malloc((size_t)t->n_expert * sizeof *x.miss_rows);
    x.upload = malloc((size_t)t->n_expert);
    int32_t *slot_of = malloc((size_t)(t->n ? t->n : 1) * sizeof *slot_of);
    int rc = -1;
    if (!x.rows || !x.hit || !x.miss_rows || !x.upload || !slot_of) {
        snprintf(err, errlen, "expert trace: out of host memory");
        goto done;
    }
    rc = replay(t, c, loads, cap, slot_of, time_group, &x, err, errlen);
    st_expert_cache_stats(c, -1, &out->stats);
    const int64_t steps = t->n ? (t->step ? t->step[t->n - 1] - t->step[0] + 1 : t->n) : 0;
    out->steps = steps;
    out->s_per_step = steps ? out->seconds / (double)steps : 0;
done:
    free(x.rows);
    free(x.hit);
    free(x.miss_rows);
    free(x.upload);
    free(slot_of);
    free(loads);
    st_expert_cache_free(c);
    return rc;
}

typedef struct rank_ent {
    uint64_t count;
    int64_t key;
} rank_ent;

static int by_count(const void *a, const void *b) {
    const rank_ent *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return (x->key > y->key) - (x->key < y->key);
}

int64_t st_expert_profile_rank(const st_expert_trace *t, int32_t *layer, int32_t *expert, int64_t cap) {
    char err[128];
    if (check_trace(t, err, sizeof err)) return 0;
    const int64_t K = (int64_t)t->n_layer * t->n_expert;
    rank_ent *r = calloc((size_t)K, sizeof *r);
    if (!r) return 0;
    for (int64_t k = 0; k < K; k++) r[k].key = k;
    for (int64_t i = 0; i < t->n; i++) r[(int64_t)t->layer[i] * t->n_expert + t->expert[i]].count++;
    qsort(r, (size_t)K, sizeof *r, by_count);
    int64_t n = 0;
    while (n < K && r[n].count > 0) n++;
    for (int64_t i = 0; i < n && i < cap; i++) {
        layer[i] = (int32_t)(r[i].key / t->n_expert);
        expert[i] = (int32_t)(r[i].key % t->n_expert);
    }
    free(r);
    return n;
}
