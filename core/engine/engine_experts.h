/* SPDX-License-Identifier: Apache-2.0 */
/* The window of one request over a hybrid model's expert statistics: the cache's counters, the
 * CPU time and the routing trace's position taken at admission, with a copy of the cache's slot
 * table (the residents then), and their differences at the end, with Belady's optimum on the
 * lookups in between starting from those residents. Used by the engine's slots; a window over a
 * model without an expert cache stays empty. */
#ifndef STRATA_ENGINE_EXPERTS_H
#define STRATA_ENGINE_EXPERTS_H

#include <stdint.h>

#include "engine/engine.h"
#include "experts/expert_cache.h"
#include "model/model.h"

typedef struct st_expert_window {
    int open;                /* a request's window is running */
    int32_t max_slots;       /* most requests in one step since it opened */
    st_expert_stats stats;   /* the cache's counters at the opening */
    double cpu_s, route_s;
    uint64_t stage_experts;
    uint64_t forwards, pos;  /* forwards and trace position at the opening */
    int32_t *resident;       /* [n_layer * n_expert] the cache's slot table then; owned; NULL = no cache */
    int64_t n_keys;
} st_expert_window;

/* Prepares *w for model m (allocates the table copy when m has an expert cache). 0, or -1 when
 * out of host memory. Free with st_expert_window_free. */
int st_expert_window_init(st_expert_window *w, const st_model *m);
void st_expert_window_free(st_expert_window *w);
/* Opens the window now (a request is admitted); nothing without a cache. */
void st_expert_window_open(st_expert_window *w, const st_model *m);
/* Notes that a step ran while n_slots requests were running (the window's max_slots). */
void st_expert_window_step(st_expert_window *w, int32_t n_slots);
/* Closes the window and writes the request's statistics into *out (valid = 0 when it was not
 * open). Belady is computed on the lookups since the opening (O(n log n) in their number);
 * belady_valid = 0 when the trace lacks some of them. */
void st_expert_window_close(st_expert_window *w, const st_model *m, st_engine_experts *out);

#endif
