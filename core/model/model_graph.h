/* SPDX-License-Identifier: Apache-2.0 */
/* Graph capture and replay of the device part of a decode step (model_graph.c). The step's
 * inputs are uploaded before the replay; every op of the step reads them from device buffers
 * whose addresses never change, so one graph per (tokens, output rows) shape replays any step
 * of that shape. */
#ifndef STRATA_MODEL_GRAPH_H
#define STRATA_MODEL_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "model/model_internal.h"

/* The device ops of one forward step of n tokens and n_out logit rows; 0 or -1 with err set. */
typedef int (*st_model_step_fn)(st_model *m, int64_t n, int32_t n_out, char *err, size_t errlen);

/* Runs `step` through a graph captured for (n, n_out) when the backend can capture, the step is
 * a decode shape (n <= 8), expert counting is off and STRATA_GRAPHS is not "0". Returns 1 when it
 * ran the step (its result in *rc, err set on failure) and 0 when the caller must run `step`
 * itself (nothing was enqueued). A capture that fails turns graphs off for the model. */
int st_model_graph_run(st_model *m, int64_t n, int32_t n_out, st_model_step_fn step, int *rc, char *err,
                       size_t errlen);

/* Destroys the graphs captured for m; call before m's stream and buffers are released. */
void st_model_graph_release(st_model *m);

#endif
