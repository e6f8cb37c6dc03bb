/* Opening a model through the memory plan (core/engine/engine_offload.h) for the commands
 * that take the expert-cache options (run, bench). */
#ifndef STRATA_CLI_PLANNED_H
#define STRATA_CLI_PLANNED_H

#include "cli/cli_common.h"
#include "engine/engine_offload.h"

/* Opens the model like st_cli_open, but through the memory plan unless the device is the
 * scalar reference (then plain st_cli_open); *os then owns the handles *s borrows. `cmd`
 * prefixes messages. 0, or -1 after printing why. */
int st_cli_open_planned(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, const st_offload_opts *oo,
                        st_model_params *mp, int want_tok, st_offload_session *os);
/* Closes what st_cli_open_planned opened (through *os when it owns the handles). */
void st_cli_close_planned(st_cli_session *s, st_offload_session *os);

#endif
