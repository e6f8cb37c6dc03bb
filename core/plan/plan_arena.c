/* SPDX-License-Identifier: Apache-2.0 */
/* Per-device arenas: one block per planned consumer, carved in ST_PLAN_ALIGN steps. */
#include "plan/plan_arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB(b) ((double)(b) / 1048576.0)

typedef struct arena_block {
    char name[ST_PLAN_NAME_MAX];
    uint64_t budget, used;
    void *base;
} arena_block;

struct st_plan_arena {
    st_dev dev;                 /* the door to the device the blocks live on */
    char dev_name[64];
    int32_t n;
    arena_block b[ST_PLAN_MAX_CONSUMERS];
};

/* "12.0 MiB", or "768 B" below 1 MiB (small buffers stay readable in a refusal). */
static const char *size_text(char *buf, size_t len, uint64_t b) {
    if (b >= 1048576u) snprintf(buf, len, "%.1f MiB", MIB(b));
    else snprintf(buf, len, "%llu B", (unsigned long long)b);
    return buf;
}

static arena_block *find(const st_plan_arena *a, const char *name) {
    if (!a || !name) return NULL;
    for (int32_t i = 0; i < a->n; i++)
        if (!strcmp(a->b[i].name, name)) return (arena_block *)&a->b[i];
    return NULL;
}

st_plan_arena *st_plan_arena_create(const st_plan *plan, int32_t d, const st_backend_api *api, st_device *dev,
                                    st_status *status, char *err, size_t errlen) {
    st_status dummy;
    if (!status) status = &dummy;
    *status = ST_INVALID;
    if (!plan || !api || !dev || d < 0 || d >= plan->n_devices) {
        snprintf(err, errlen, "plan: arena for device %d: invalid arguments", d);
        return NULL;
    }
    if (!plan->ok) {
        snprintf(err, errlen, "plan: arena for %s: the plan was refused", plan->dev[d].in.name);
        return NULL;
    }
    st_plan_arena *a = calloc(1, sizeof *a);
    if (!a) {
        *status = ST_OOM;
        snprintf(err, errlen, "plan: out of host memory");
        return NULL;
    }
    st_dev_wrap(&a->dev, api, dev, 0, 0);
    snprintf(a->dev_name, sizeof a->dev_name, "%s", plan->dev[d].in.name);
    const st_plan_device *pd = &plan->dev[d];
    for (int32_t i = 0; i < pd->n_consumers; i++) {
        const st_plan_consumer *c = &pd->c[i];
        if (!st_plan_kind_allocated(c->kind) || c->bytes == 0) continue;
        arena_block *b = &a->b[a->n];
        snprintf(b->name, sizeof b->name, "%s", c->name);
        b->budget = c->bytes;
        st_status s = st_dev_alloc(&a->dev, c->bytes, &b->base);
        if (s != ST_OK || !b->base) {
            snprintf(err, errlen,
                     "plan: allocating consumer '%s' (%.1f MiB) on %s failed although the plan budgeted it "
                     "(%.1f MiB planned of %.1f MiB usable): %s",
                     c->name, MIB(c->bytes), a->dev_name, MIB(pd->planned), MIB(pd->capacity), st_dev_error());
            b->base = NULL;
            st_plan_arena_free(a);
            *status = s != ST_OK ? s : ST_INTERNAL;
            return NULL;
        }
        a->n++;
    }
    *status = ST_OK;
    return a;
}

st_status st_plan_arena_alloc(st_plan_arena *a, const char *consumer, uint64_t bytes, void **out, char *err,
                              size_t errlen) {
    if (out) *out = NULL;
    if (!a || !consumer || !out) {
        snprintf(err, errlen, "plan: arena allocation: invalid arguments");
        return ST_INVALID;
    }
    arena_block *b = find(a, consumer);
    if (!b) {
        snprintf(err, errlen, "plan: %.1f MiB asked for consumer '%s' on %s, which the plan does not have "
                 "(a bug: every device allocation must be planned)", MIB(bytes), consumer, a->dev_name);
        return ST_INTERNAL;
    }
    uint64_t r = (bytes ? bytes : 1);
    r = (r + ST_PLAN_ALIGN - 1) / ST_PLAN_ALIGN * ST_PLAN_ALIGN;
    if (r > b->budget - b->used) {
        char t[4][32];
        snprintf(err, errlen, "plan: consumer '%s' on %s asked %s beyond its %s (%s used, %s asked; a bug: the plan "
                 "sized it too small)", consumer, a->dev_name, size_text(t[0], 32, r - (b->budget - b->used)),
                 size_text(t[1], 32, b->budget), size_text(t[2], 32, b->used), size_text(t[3], 32, r));
        return ST_INTERNAL;
    }
    *out = (char *)b->base + b->used;
    b->used += r;
    return ST_OK;
}

st_status st_plan_arena_reset(st_plan_arena *a, const char *consumer) {
    arena_block *b = find(a, consumer);
    if (!b) return ST_INVALID;
    b->used = 0;
    return ST_OK;
}

uint64_t st_plan_arena_used(const st_plan_arena *a, const char *consumer) {
    const arena_block *b = find(a, consumer);
    return b ? b->used : 0;
}

uint64_t st_plan_arena_budget(const st_plan_arena *a, const char *consumer) {
    const arena_block *b = find(a, consumer);
    return b ? b->budget : 0;
}

void *st_plan_arena_base(const st_plan_arena *a, const char *consumer) {
    const arena_block *b = find(a, consumer);
    return b ? b->base : NULL;
}

uint64_t st_plan_arena_bytes(const st_plan_arena *a) {
    uint64_t t = 0;
    for (int32_t i = 0; a && i < a->n; i++) t += a->b[i].budget;
    return t;
}

int st_plan_arena_owns(const st_plan_arena *a, const void *ptr) {
    for (int32_t i = 0; a && i < a->n; i++) {
        const char *b = a->b[i].base;
        if ((const char *)ptr >= b && (const char *)ptr < b + a->b[i].budget) return 1;
    }
    return 0;
}

st_status st_plan_arena_free(st_plan_arena *a) {
    if (!a) return ST_OK;
    st_status first = ST_OK;
    for (int32_t i = 0; i < ST_PLAN_MAX_CONSUMERS; i++) {
        if (!a->b[i].base) continue;
        st_status s = st_dev_free(&a->dev, a->b[i].base);
        if (s != ST_OK && first == ST_OK) first = s;
    }
    free(a);
    return first;
}

struct st_plan_arenas {
    int32_t n;
    st_plan_arena *a[ST_PLAN_MAX_DEVICES];
};

st_plan_arenas *st_plan_arenas_create(const st_plan *plan, const st_backend_api *const *apis,
                                      st_device *const *devs, st_status *status, char *err, size_t errlen) {
    st_status dummy;
    if (!status) status = &dummy;
    if (!plan || !apis || !devs) {
        *status = ST_INVALID;
        snprintf(err, errlen, "plan: arenas: invalid arguments");
        return NULL;
    }
    st_plan_arenas *as = calloc(1, sizeof *as);
    if (!as) {
        *status = ST_OOM;
        snprintf(err, errlen, "plan: out of host memory");
        return NULL;
    }
    for (int32_t d = 0; d < plan->n_devices; d++) {
        as->a[d] = st_plan_arena_create(plan, d, apis[d], devs[d], status, err, errlen);
        if (!as->a[d]) {
            st_plan_arenas_free(as);
            return NULL;
        }
        as->n = d + 1;
    }
    return as;
}

st_status st_plan_arena_alloc_on(st_plan_arenas *as, int32_t d, const char *consumer, uint64_t bytes, void **out,
                                 char *err, size_t errlen) {
    if (!as || d < 0 || d >= as->n) {
        if (out) *out = NULL;
        snprintf(err, errlen, "plan: allocation for '%s' on device %d, which the plan does not have",
                 consumer ? consumer : "?", d);
        return ST_INVALID;
    }
    return st_plan_arena_alloc(as->a[d], consumer, bytes, out, err, errlen);
}

st_plan_arena *st_plan_arenas_get(st_plan_arenas *as, int32_t d) {
    return as && d >= 0 && d < as->n ? as->a[d] : NULL;
}

st_status st_plan_arenas_free(st_plan_arenas *as) {
    if (!as) return ST_OK;
    st_status first = ST_OK;
    for (int32_t d = ST_PLAN_MAX_DEVICES - 1; d >= 0; d--) {
        st_status s = st_plan_arena_free(as->a[d]);
        if (s != ST_OK && first == ST_OK) first = s;
    }
    free(as);
    return first;
}
