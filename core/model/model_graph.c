/* SPDX-License-Identifier: Apache-2.0 */
/* Decode-step graphs: the first step of a shape is captured (graph_begin .. graph_end) instead
 * of run, then launched; later steps of that shape only launch it. Graphs live in a small
 * process-wide table keyed by model, guarded by a spin lock (steps of one model come from one
 * thread; the lock only keeps models on different threads apart). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_graph.h"

#define ST_GRAPH_SLOTS 64
#define ST_GRAPH_MAX_TOKENS 8

typedef struct st_graph_slot {
    const st_model *m;
    int64_t n;
    int32_t n_out;
    int off;        /* capture failed for this model: run steps directly */
    st_graph *g;
} st_graph_slot;

static st_graph_slot g_slots[ST_GRAPH_SLOTS];
static atomic_flag g_lock = ATOMIC_FLAG_INIT;

static void lock(void) {
    while (atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire)) {
    }
}
static void unlock(void) { atomic_flag_clear_explicit(&g_lock, memory_order_release); }

static int env_off(void) {
    const char *e = getenv("STRATA_GRAPHS");
    /* the op profile synchronizes inside the step, which a capture cannot hold */
    return (e && !strcmp(e, "0")) || st_dev_profile_on();
}

/* The slot of (m, n, n_out), or of m's "off" mark, or a free one (m == NULL); -1 when full. */
static int find(const st_model *m, int64_t n, int32_t n_out, int *off) {
    int free_i = -1;
    *off = 0;
    for (int i = 0; i < ST_GRAPH_SLOTS; i++) {
        if (g_slots[i].m == m && g_slots[i].off) *off = 1;
        if (g_slots[i].m == m && !g_slots[i].off && g_slots[i].n == n && g_slots[i].n_out == n_out) return i;
        if (!g_slots[i].m && free_i < 0) free_i = i;
    }
    return free_i;
}

int st_model_graph_run(st_model *m, int64_t n, int32_t n_out, st_model_step_fn step, int *rc, char *err,
                       size_t errlen) {
    st_dev *d = &m->dev;
    if (!st_dev_has_graphs(d)) return 0;
    if (n < 1 || n > ST_GRAPH_MAX_TOKENS || m->count_experts || m->hx || env_off()) return 0;
    int off = 0;
    lock();
    int i = find(m, n, n_out, &off);
    st_graph *g = i >= 0 && g_slots[i].m == m ? g_slots[i].g : NULL;
    unlock();
    if (off || i < 0) return 0;
    if (!g) {
        st_status s = st_dev_graph_begin(d, m->stream);
        if (s != ST_OK) return 0; /* nothing enqueued: run directly */
        int r = step(m, n, n_out, err, errlen);
        st_status e = st_dev_graph_end(d, m->stream, &g);
        if (r != 0 || e != ST_OK || !g) {
            if (g) st_dev_graph_destroy(d, g);
            lock();
            int j = find(m, n, n_out, &off);
            if (j >= 0 && !g_slots[j].m) {
                g_slots[j].m = m;
                g_slots[j].off = 1;
            }
            unlock();
            /* the capture enqueued no work: the caller runs the step and reports its errors */
            return 0;
        }
        lock();
        int j = find(m, n, n_out, &off);
        if (j >= 0 && !g_slots[j].m) {
            g_slots[j].m = m;
            g_slots[j].n = n;
            g_slots[j].n_out = n_out;
            g_slots[j].g = g;
        } else {
            j = -1;
        }
        unlock();
        if (j < 0) { /* table filled meanwhile: launch once, then drop it */
            st_status s2 = st_dev_graph_launch(d, g, m->stream);
            if (s2 == ST_OK) s2 = st_dev_sync(d, m->stream);
            st_dev_graph_destroy(d, g);
            *rc = s2 == ST_OK ? 0 : -1;
            if (*rc) snprintf(err, errlen, "graph launch: %s", st_dev_error());
            return 1;
        }
    }
    st_status s = st_dev_graph_launch(d, g, m->stream);
    *rc = s == ST_OK ? 0 : -1;
    if (*rc) snprintf(err, errlen, "graph launch: %s", st_dev_error());
    return 1;
}

void st_model_graph_release(st_model *m) {
    lock();
    for (int i = 0; i < ST_GRAPH_SLOTS; i++) {
        if (g_slots[i].m != m) continue;
        if (g_slots[i].g) st_dev_graph_destroy(&m->dev, g_slots[i].g);
        memset(&g_slots[i], 0, sizeof g_slots[i]);
    }
    unlock();
}
