/* SPDX-License-Identifier: Apache-2.0 */
/* A backend table whose allocations come from a plan's arena: bindings keyed by device. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan_arena.h"

#define MIB(b) ((double)(b) / 1048576.0)
#define MAX_CHAIN ST_PLAN_MAX_CONSUMERS

typedef struct binding {
    st_device *dev;
    st_plan_arena *arena;
    const st_backend_api *real;
    int n;
    char chain[MAX_CHAIN][ST_PLAN_NAME_MAX];
    char current[ST_PLAN_NAME_MAX]; /* named by the caller (st_plan_api_consumer), or "" */
} binding;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static binding g_bind[ST_PLAN_MAX_DEVICES];
static _Thread_local char t_err[512];
static _Thread_local const st_backend_api *t_err_real; /* NULL: the text is ours */
static _Thread_local int t_err_ours;

static int find(st_device *dev) {
    for (int i = 0; i < ST_PLAN_MAX_DEVICES; i++)
        if (g_bind[i].dev == dev) return i;
    return -1;
}

static st_status fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static st_status fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_err, sizeof t_err, fmt, ap);
    va_end(ap);
    t_err_ours = 1;
    return ST_INTERNAL;
}

static st_status wrap_alloc(st_device *dev, uint64_t bytes, void **out) {
    pthread_mutex_lock(&g_mu);
    int k = find(dev);
    if (k < 0) {
        pthread_mutex_unlock(&g_mu);
        return fail("plan: allocation on a device with no plan binding");
    }
    binding *b = &g_bind[k];
    char scratch[512], list[MAX_CHAIN * (ST_PLAN_NAME_MAX + 2)] = "";
    if (b->current[0]) {
        /* the caller named the consumer: its block alone, a refusal names it */
        st_status s = st_plan_arena_alloc(b->arena, b->current, bytes, out, scratch, sizeof scratch);
        pthread_mutex_unlock(&g_mu);
        if (s == ST_OK) {
            t_err_ours = 0;
            return ST_OK;
        }
        return fail("%s", scratch);
    }
    for (int i = 0; i < b->n; i++) {
        if (st_plan_arena_alloc(b->arena, b->chain[i], bytes, out, scratch, sizeof scratch) == ST_OK) {
            pthread_mutex_unlock(&g_mu);
            t_err_ours = 0;
            return ST_OK;
        }
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, b->chain[i], sizeof list - strlen(list) - 1);
    }
    uint64_t left = 0;
    for (int i = 0; i < b->n; i++)
        left += st_plan_arena_budget(b->arena, b->chain[i]) - st_plan_arena_used(b->arena, b->chain[i]);
    pthread_mutex_unlock(&g_mu);
    return fail("plan: no room for %.2f MiB in consumers %s (%.2f MiB left in them; a bug: the plan sized them "
                "too small, or the caller asks for more than it planned)", MIB(bytes), list, MIB(left));
}

static st_status wrap_free(st_device *dev, void *ptr) {
    pthread_mutex_lock(&g_mu);
    int k = find(dev);
    const st_backend_api *real = k >= 0 ? g_bind[k].real : NULL;
    int owned = k >= 0 && st_plan_arena_owns(g_bind[k].arena, ptr);
    pthread_mutex_unlock(&g_mu);
    if (owned) return ST_OK; /* the arena owns its blocks */
    if (!real) return fail("plan: free on a device with no plan binding");
    t_err_ours = 0;
    t_err_real = real;
    return real->mem_free(dev, ptr);
}

static const char *wrap_last_error(void) {
    if (t_err_ours) return t_err;
    if (t_err_real) return t_err_real->last_error();
    pthread_mutex_lock(&g_mu);
    const st_backend_api *real = NULL;
    for (int i = 0; i < ST_PLAN_MAX_DEVICES && !real; i++) real = g_bind[i].real;
    pthread_mutex_unlock(&g_mu);
    return real ? real->last_error() : "";
}

int st_plan_api_bind(st_plan_arena *a, const st_backend_api *real, st_device *dev, const char *const *consumers,
                     int n_consumers, st_backend_api *out, char *err, size_t errlen) {
    if (!a || !real || !dev || !consumers || n_consumers <= 0 || n_consumers > MAX_CHAIN || !out) {
        snprintf(err, errlen, "plan: api binding: invalid arguments (1..%d consumers)", MAX_CHAIN);
        return -1;
    }
    pthread_mutex_lock(&g_mu);
    int k = find(dev);
    if (k < 0) k = find(NULL);
    if (k < 0) {
        pthread_mutex_unlock(&g_mu);
        snprintf(err, errlen, "plan: api binding: %d devices are bound already", ST_PLAN_MAX_DEVICES);
        return -1;
    }
    binding *b = &g_bind[k];
    memset(b, 0, sizeof *b);
    b->dev = dev;
    b->arena = a;
    b->real = real;
    for (int i = 0; i < n_consumers; i++) snprintf(b->chain[b->n++], ST_PLAN_NAME_MAX, "%s", consumers[i]);
    pthread_mutex_unlock(&g_mu);
    *out = *real;
    out->mem_alloc = wrap_alloc;
    out->mem_free = wrap_free;
    out->last_error = wrap_last_error;
    return 0;
}

void st_plan_api_consumer(st_device *dev, const char *consumer) {
    pthread_mutex_lock(&g_mu);
    int k = dev ? find(dev) : -1;
    if (k >= 0) snprintf(g_bind[k].current, sizeof g_bind[k].current, "%s", consumer ? consumer : "");
    pthread_mutex_unlock(&g_mu);
}

void st_plan_api_unbind(st_device *dev) {
    pthread_mutex_lock(&g_mu);
    int k = dev ? find(dev) : -1;
    if (k >= 0) memset(&g_bind[k], 0, sizeof g_bind[k]);
    pthread_mutex_unlock(&g_mu);
}
