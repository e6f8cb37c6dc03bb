/* Opening a model through the memory plan for the commands that take the expert-cache
 * options (run, bench): see cli_planned.h. */
#include "cli/cli_planned.h"

#include <stdio.h>
#include <string.h>

#include "kv/kv.h"

int st_cli_open_planned(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, const st_offload_opts *oo,
                        st_model_params *mp, int want_tok, st_offload_session *os) {
    memset(os, 0, sizeof *os);
    if (o->backend && !strcmp(o->backend, "ref")) return st_cli_open(cmd, s, o, mp, want_tok);
    if (o->kv_type) mp->kv_type = (uint32_t)st_kv_type_from_name(o->kv_type);
    if (o->ctx > 0) mp->n_ctx = (int32_t)o->ctx;
    if (o->batch > 0) mp->n_batch = (int32_t)o->batch;
    if (o->no_in_place) mp->no_in_place = 1;
    if (st_offload_open(cmd, o->model, o->backend, o->device, o->threads, oo, mp, want_tok, os)) return -1;
    memset(s, 0, sizeof *s);
    s->g = os->g;
    s->d = os->d;
    s->reg = os->reg;
    s->api = os->api;
    s->index = os->index;
    s->dev = os->dev;
    s->m = os->m;
    s->tok = os->tok;
    snprintf(s->device_text, sizeof s->device_text, "%s", os->device_text);
    s->mem_bw_gbs = os->mem_bw_gbs;
    return 0;
}

void st_cli_close_planned(st_cli_session *s, st_offload_session *os) {
    if (os->g) {
        memset(s, 0, sizeof *s);
        st_offload_close(os);
    } else {
        st_cli_close(s);
    }
}
