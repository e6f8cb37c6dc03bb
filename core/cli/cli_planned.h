/* SPDX-License-Identifier: Apache-2.0 */
/* Opening a model through the memory plan (core/engine/engine_offload.h) for the commands
 * that take the expert-cache options (run, bench, profile-experts). */
#ifndef STRATA_CLI_PLANNED_H
#define STRATA_CLI_PLANNED_H

#include "cli/cli_common.h"
#include "engine/engine_offload.h"

/* With the layer split's options (or more than one device of the --backend kind) the model is
 * planned and loaded over every chosen device instead (engine_split.h; s->split holds them).
 * Opens the file and device like st_cli_open_device, plans the device's memory (the table on
 * stderr) and loads the model from the plan's blocks into s->m; with --backend ref it is
 * plain st_cli_open. *off (caller storage) holds the plan and must outlive the model.
 * --cpu-threads, when given, is the thread count of the modules (the CPU module computes the
 * misses). `cmd` prefixes messages. 0, or -1 after printing why (everything released). */
int st_cli_open_planned(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, const st_offload_opts *oo,
                        st_model_params *mp, int want_tok, st_offload *off);
/* The split options (core/engine/engine_split.h) of the shared model options. */
struct st_split_opts;
void st_cli_split_opts(const st_cli_model_opts *o, const st_offload_opts *oo, int32_t n_slots,
                       struct st_split_opts *out);
/* Releases what st_cli_open_planned opened: the model, the plan's blocks, then the session. */
void st_cli_close_planned(st_cli_session *s, st_offload *off);

#endif
