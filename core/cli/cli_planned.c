/* SPDX-License-Identifier: Apache-2.0 */
/* Opening a model through the memory plan: see cli_planned.h. */
#include "cli/cli_planned.h"

#include <stdio.h>
#include <string.h>

#include "backend/backend_registry.h"
#include "progress/progress.h"

int st_cli_open_planned(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, const st_offload_opts *oo,
                        st_model_params *mp, int want_tok, st_offload *off) {
    memset(off, 0, sizeof *off);
    off->expert_slots = -1;
    if (o->backend && !strcmp(o->backend, "ref")) return st_cli_open(cmd, s, o, mp, want_tok);
    /* modules copy the thread count when the registry loads them */
    st_cli_model_opts ot = *o;
    if (oo->cpu_threads > 0) ot.threads = oo->cpu_threads;
    if (st_cli_open_device(cmd, s, &ot, mp, want_tok)) return -1;
    char err[2048];
    if (st_offload_prepare(oo, s->d, s->reg, s->pick, s->dev, mp, stderr, off, err, sizeof err)) {
        fprintf(stderr, "strata %s: %s\n", cmd, err);
        st_cli_close_planned(s, off);
        return -1;
    }
    st_progress pg;
    st_progress_load_begin(&pg, stderr, o->progress, o->model, s->d, mp);
    s->m = st_offload_load(off, s->d, s->api, s->dev, s->index, mp, stderr, err, sizeof err);
    st_progress_load_end(&pg, mp);
    if (!s->m) {
        fprintf(stderr, "strata %s: loading %s on %s: %s\n", cmd, o->model, s->device_text, err);
        st_cli_close_planned(s, off);
        return -1;
    }
    return 0;
}

void st_cli_close_planned(st_cli_session *s, st_offload *off) {
    st_model_free(s->m);
    s->m = NULL;
    st_offload_release(off);
    st_cli_close(s);
}
