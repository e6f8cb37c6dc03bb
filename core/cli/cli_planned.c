/* SPDX-License-Identifier: Apache-2.0 */
/* Opening a model through the memory plan: see cli_planned.h. */
#include "cli/cli_planned.h"

#include <stdio.h>
#include <string.h>

#include "backend/backend_registry.h"
#include "engine/engine_split.h"
#include <stdlib.h>

/* The options' view of the split. */
void st_cli_split_opts(const st_cli_model_opts *o, const st_offload_opts *oo, int32_t n_slots, st_split_opts *out) {
    memset(out, 0, sizeof *out);
    out->backend = o->backend;
    /* --device names one device: no split unless -ngl or --tensor-split asks for one */
    out->split_none = o->split_none || (o->device && !o->ngl_given && !o->tensor_split);
    out->tensor_split = o->tensor_split;
    out->main_device = o->main_device_given ? (int32_t)o->main_device : -1;
    out->n_gpu_layers = o->ngl_given ? (int32_t)o->n_gpu_layers : -1;
    out->vram_budget = oo ? oo->vram_budget : 0;
    out->reserve = oo ? oo->reserve : 0;
    out->n_slots = n_slots;
    out->expert_cache = oo ? oo->expert_cache : -1;
}

/* The model over several devices: the single device st_cli_open_device opened gives way to the
 * split's devices. 0, or -1 after printing why. */
static int open_split(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, const st_offload_opts *oo,
                      st_model_params *mp) {
    char err[2048];
    st_split_opts so;
    st_cli_split_opts(o, oo, mp->n_seq, &so);
    st_split *sp = calloc(1, sizeof *sp);
    if (!sp) {
        fprintf(stderr, "strata %s: out of memory\n", cmd);
        return -1;
    }
    if (st_split_prepare(sp, &so, s->reg, s->d, mp, stderr, err, sizeof err)) {
        fprintf(stderr, "strata %s: layer split: %s\n", cmd, err);
        free(sp);
        return -1;
    }
    s->split = sp;
    s->m = st_split_load(sp, s->d, mp, err, sizeof err);
    if (!s->m) {
        fprintf(stderr, "strata %s: loading %s split over %d devices: %s\n", cmd, o->model, sp->n, err);
        return -1;
    }
    size_t at = (size_t)snprintf(s->device_text, sizeof s->device_text, "layer split:");
    st_model_stage_info si;
    for (int32_t i = 0; st_model_stage_get(s->m, i, &si) == 0 && at < sizeof s->device_text; i++)
        at += (size_t)snprintf(s->device_text + at, sizeof s->device_text - at, "%s %s %d-%d", i ? "," : "", si.device,
                               si.layer_first, si.layer_first + si.n_layers - 1);
    s->mem_bw_gbs = 0;
    st_split_report(sp, s->m, stderr);
    return 0;
}
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
    st_split_opts so;
    st_cli_split_opts(o, oo, mp->n_seq, &so);
    if (st_split_wanted(&so, s->reg, s->d->hp.n_layer)) {
        if (oo->n_cpu_moe >= 0 || oo->profile || oo->expert_cache_bytes) {
            fprintf(stderr, "strata %s: --n-cpu-moe, --expert-profile and --expert-cache SIZE with a layer split are "
                    "not built yet (--expert-cache N: N slots per device is): use --split-mode none\n", cmd);
            st_cli_close_planned(s, off);
            return -1;
        }
        /* the device st_cli_open_device chose gives way to the split's */
        st_dev door;
        st_dev_wrap(&door, s->api, s->dev, s->index, 0);
        door.owned = 1;
        st_dev_close(&door);
        s->dev = NULL;
        if (open_split(cmd, s, o, oo, mp) == 0) return 0;
        st_cli_close_planned(s, off);
        return -1;
    }
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
    if (s->split && s->m) st_split_report(s->split, s->m, stderr);
    st_model_free(s->m);
    s->m = NULL;
    if (s->split) {
        st_split_release(s->split);
        free(s->split);
        s->split = NULL;
    }
    st_offload_release(off);
    st_cli_close(s);
}
