/* SPDX-License-Identifier: Apache-2.0 */
/* Shared parts of the model commands: options, device choice, opening a model. */
#include "cli/cli_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_registry.h"
#include "backend/dev.h"
#include "backend/device_pick.h"
#include "cli/cli_alias.h"
#include "kv/kv.h"
#include "model/ref_device.h"
#include "progress/progress.h"

int st_cli_opt(int argc, char **argv, int *i, const char *name, const char *alias, const char **val) {
    const char *a = argv[*i];
    const char *names[2] = {name, alias};
    for (int k = 0; k < 2; k++) {
        const char *n = names[k];
        if (!n) continue;
        size_t ln = strlen(n);
        if (strncmp(a, n, ln)) continue;
        if (a[ln] == '=') {
            *val = a + ln + 1;
            return 1;
        }
        if (a[ln] != 0) continue;
        if (*i + 1 >= argc) {
            fprintf(stderr, "strata: option %s needs a value\n", a);
            return -1;
        }
        *val = argv[++*i];
        return 1;
    }
    return 0;
}

int st_cli_int(const char *cmd, const char *name, const char *val, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < lo || v > hi) {
        fprintf(stderr, "strata %s: bad value '%s' for %s (integer %ld..%ld)\n", cmd, val, name, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int st_cli_float(const char *cmd, const char *name, const char *val, double *out) {
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (errno || end == val || *end) {
        fprintf(stderr, "strata %s: bad value '%s' for %s (a number)\n", cmd, val, name);
        return -1;
    }
    *out = v;
    return 0;
}

/* The layer split's options by canonical name: 1 consumed, -1 bad value, 0 not one of them. */
static int split_opt(const char *cmd, const char *canon, const char *v, st_cli_model_opts *o) {
    if (!strcmp(canon, "split-mode")) {
        if (strcmp(v, "layer") && strcmp(v, "none")) {
            fprintf(stderr, "strata %s: --split-mode must be layer or none (got '%s'; row is not built)\n", cmd, v);
            return -1;
        }
        o->split_none = !strcmp(v, "none");
        return 1;
    }
    if (!strcmp(canon, "tensor-split")) return (o->tensor_split = v, 1);
    if (!strcmp(canon, "main-device"))
        return st_cli_int(cmd, "--main-device", v, 0, 255, &o->main_device) ? -1 : (o->main_device_given = 1);
    if (!strcmp(canon, "n-gpu-layers"))
        return st_cli_int(cmd, "--n-gpu-layers", v, 0, 1 << 20, &o->n_gpu_layers) ? -1 : (o->ngl_given = 1);
    return 0;
}

/* llama.cpp spellings (cli/cli_alias.c) for the model commands: -ctk/-ctv, --ctx-size (one
 * sequence here, so the whole pool is its context), and the accepted-and-ignored ones. 1 when
 * argv[*i] was one, 0 when not, -1 for a bad or missing value. */
static int alias_model_opt(const char *cmd, int argc, char **argv, int *i, st_cli_model_opts *o) {
    const st_cli_alias *al = st_cli_alias_find(argv[*i]);
    static const char *const taken[] = {"kv-type", "ctx-total", "threads", "split-mode", "tensor-split", "main-device",
                                        "n-gpu-layers", NULL};
    int k = 0;
    while (al && al->canon && taken[k] && strcmp(al->canon, taken[k])) k++;
    if (!al || (al->canon && !taken[k])) return 0; /* not one, or one this command does not take (-np, ...) */
    if (al->note) fprintf(stderr, "strata %s: note: %s\n", cmd, al->note);
    const char *v = al->flag_value;
    if (al->flag == 2 && *i + 1 < argc &&
        (!strcmp(argv[*i + 1], "on") || !strcmp(argv[*i + 1], "off") || !strcmp(argv[*i + 1], "auto")))
        ++*i;
    if (!al->flag) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "strata %s: option %s needs a value\n", cmd, argv[*i]);
            return -1;
        }
        v = argv[++*i];
    }
    if (!al->canon) return 1;
    int r = split_opt(cmd, al->canon, v, o);
    if (r) return r;
    if (!strcmp(al->canon, "threads")) return st_cli_int(cmd, "--threads", v, 0, 4096, &o->threads) ? -1 : 1;
    if (!strcmp(al->canon, "ctx-total")) return st_cli_int(cmd, "--ctx-size", v, 0, 1 << 24, &o->ctx) ? -1 : 1;
    if (st_kv_type_from_name(v) < 0) {
        fprintf(stderr, "strata %s: %s must be f16, f32 or q8_0 (got '%s')\n", cmd, argv[*i - 1], v);
        return -1;
    }
    o->kv_type = v;
    return 1;
}

int st_cli_model_opt(const char *cmd, int argc, char **argv, int *i, st_cli_model_opts *o) {
    const char *v;
    int r;
    if (!strcmp(argv[*i], "--no-mmap")) { /* ours, before the server's llama.cpp spelling that ignores it */
        o->no_in_place = 1;
        return 1;
    }
    if ((r = alias_model_opt(cmd, argc, argv, i, o))) return r;
    if ((r = st_cli_opt(argc, argv, i, "--model", "-m", &v))) return r < 0 ? -1 : (o->model = v, 1);
    if ((r = st_cli_opt(argc, argv, i, "--backend", NULL, &v))) return r < 0 ? -1 : (o->backend = v, 1);
    if ((r = st_cli_opt(argc, argv, i, "--device", NULL, &v))) return r < 0 ? -1 : (o->device = v, 1);
    if ((r = st_cli_opt(argc, argv, i, "--kv-type", NULL, &v))) {
        if (r < 0) return -1;
        if (st_kv_type_from_name(v) < 0) {
            fprintf(stderr, "strata %s: --kv-type must be f16, f32 or q8_0 (got '%s')\n", cmd, v);
            return -1;
        }
        o->kv_type = v;
        return 1;
    }
    if ((r = st_cli_opt(argc, argv, i, "--threads", "-t", &v)))
        return r < 0 || st_cli_int(cmd, "--threads", v, 0, 4096, &o->threads) ? -1 : 1;
    if ((r = st_cli_opt(argc, argv, i, "--ctx", "-c", &v)))
        return r < 0 || st_cli_int(cmd, "--ctx", v, 0, 1 << 24, &o->ctx) ? -1 : 1;
    if ((r = st_cli_opt(argc, argv, i, "--batch", "-b", &v)))
        return r < 0 || st_cli_int(cmd, "--batch", v, 1, 1 << 16, &o->batch) ? -1 : 1;
    if (!strcmp(argv[*i], "--progress") || !strcmp(argv[*i], "--no-progress")) {
        o->progress = argv[*i][2] == 'p' ? ST_PROGRESS_ALWAYS : ST_PROGRESS_NEVER;
        return 1;
    }
    static const char *const split_names[] = {"split-mode", "tensor-split", "main-device", "n-gpu-layers"};
    for (int k = 0; k < 4; k++) {
        char name[32];
        snprintf(name, sizeof name, "--%s", split_names[k]);
        if ((r = st_cli_opt(argc, argv, i, name, NULL, &v))) return r < 0 ? -1 : split_opt(cmd, split_names[k], v, o);
    }
    return 0;
}

void st_cli_model_opts_help(FILE *f) {
    fprintf(f,
            "  -m, --model F.gguf     the model\n"
            "  --backend NAME         module to run on (cpu, cuda, sim, ...; ref = scalar reference)\n"
            "  --device N|NAME:N      device index (of --backend, else of `strata backends`' list)\n"
            "  -t, --threads N        CPU worker threads (default: the module's choice)\n"
            "  -c, --ctx N            context positions (default: min(training context, 4096))\n"
            "  -b, --batch N          tokens per forward (default 512)\n"
            "  --kv-type T            KV cache type: f16 (default), f32, q8_0\n"
            "  --no-mmap              copy weights to the device even when it can read the file\n"
            "  --split-mode M         layer (default: the model's layers over every device of the --backend\n"
            "                         kind, by the planner's time model) or none (--main-device alone)\n"
            "  --tensor-split a,b,..  layer ratios over those devices (-ts)\n"
            "  --main-device N        none: the device used; layer: the one holding the output (-mg)\n"
            "  -ngl, --n-gpu-layers N N layers on the devices, the others (the first) on the CPU module\n"
            "  --progress             the weights' upload progress line on stderr (default: on a terminal,\n"
            "                         for loads that last); --no-progress: never\n");
}

/* Chooses (api, index) per the options; fills s->reg/api/index/device_text. */
static int choose(const char *cmd, st_cli_session *s, const st_cli_model_opts *o) {
    if (o->backend && !strcmp(o->backend, "ref")) {
        s->api = st_ref_device_api(1);
        s->index = 0;
        snprintf(s->device_text, sizeof s->device_text, "ref device 0: scalar reference (host)");
        return 0;
    }
    if (o->threads > 0) st_backend_set_threads((unsigned)o->threads);
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    st_backend_registry *reg = st_backend_registry_open(&opt);
    if (!reg) {
        fprintf(stderr, "strata %s: out of memory opening the backend registry\n", cmd);
        return -1;
    }
    s->reg = reg;
    const char *want_backend = o->backend;
    long want_index = -1;
    char name_buf[64];
    if (o->device) {
        const char *colon = strchr(o->device, ':');
        if (colon) {
            size_t l = (size_t)(colon - o->device) < sizeof name_buf - 1 ? (size_t)(colon - o->device) : sizeof name_buf - 1;
            memcpy(name_buf, o->device, l);
            name_buf[l] = 0;
            want_backend = name_buf;
            if (st_cli_int(cmd, "--device", colon + 1, 0, 1 << 20, &want_index)) return -1;
        } else if (st_cli_int(cmd, "--device", o->device, 0, 1 << 20, &want_index)) {
            return -1;
        }
    }
    char err[256];
    const st_backend_device *pick = st_backend_pick(reg, want_backend, want_index, err, sizeof err);
    if (!pick) {
        fprintf(stderr, "strata %s: %s\n", cmd, err);
        return -1;
    }
    s->pick = pick;
    s->api = pick->module->api;
    s->index = pick->index;
    s->mem_bw_gbs = pick->props->mem_bw_gbs;
    snprintf(s->device_text, sizeof s->device_text, "%s device %u: %s", pick->module->backend, pick->index,
             pick->props->name);
    return 0;
}

int st_cli_open_device(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, st_model_params *mp,
                       int want_tok) {
    char err[1024];
    memset(s, 0, sizeof *s);
    if (!o->model) {
        fprintf(stderr, "strata %s: no model given (-m F.gguf)\n", cmd);
        return -1;
    }
    s->g = st_gguf_open(o->model, err, sizeof err);
    if (!s->g) {
        fprintf(stderr, "strata %s: %s\n", cmd, err);
        return -1;
    }
    if (want_tok) {
        s->tok = st_tokenizer_from_gguf(s->g, err, sizeof err);
        if (!s->tok) {
            fprintf(stderr, "strata %s: tokenizer of %s: %s\n", cmd, o->model, err);
            goto fail;
        }
    }
    if (!mp) return 0; /* tokenizer only */
    s->d = st_arch_describe(s->g, err, sizeof err);
    if (!s->d) {
        fprintf(stderr, "strata %s: %s: %s\n", cmd, o->model, err);
        goto fail;
    }
    if (o->kv_type) mp->kv_type = (uint32_t)st_kv_type_from_name(o->kv_type);
    if (o->ctx > 0) mp->n_ctx = (int32_t)o->ctx;
    if (o->batch > 0) mp->n_batch = (int32_t)o->batch;
    if (o->no_in_place) mp->no_in_place = 1;
    if (choose(cmd, s, o)) goto fail;
    st_dev door;
    if (st_dev_open(&door, s->api, s->index) != ST_OK) {
        fprintf(stderr, "strata %s: opening %s: %s\n", cmd, s->device_text, st_dev_error());
        goto fail;
    }
    s->dev = door.handle;
    return 0;
fail:
    st_cli_close(s);
    return -1;
}

int st_cli_open(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, st_model_params *mp,
                int want_tok) {
    if (st_cli_open_device(cmd, s, o, mp, want_tok)) return -1;
    if (!mp) return 0; /* tokenizer only */
    char err[1024];
    st_progress pg;
    st_progress_load_begin(&pg, stderr, o->progress, o->model, s->d, mp);
    s->m = st_model_load(s->d, s->api, s->dev, s->index, mp, err, sizeof err);
    st_progress_load_end(&pg, mp);
    if (!s->m) {
        fprintf(stderr, "strata %s: loading %s on %s: %s\n", cmd, o->model, s->device_text, err);
        st_cli_close(s);
        return -1;
    }
    return 0;
}

void st_cli_close(st_cli_session *s) {
    st_model_free(s->m);
    if (s->dev) { /* opened through the door by st_cli_open_device */
        st_dev door;
        st_dev_wrap(&door, s->api, s->dev, s->index, 0);
        door.owned = 1;
        st_dev_close(&door);
    }
    st_dev_profile_report(stderr);
    if (s->reg) st_backend_registry_close(s->reg);
    st_tokenizer_free(s->tok);
    st_model_desc_free(s->d);
    st_gguf_close(s->g);
    memset(s, 0, sizeof *s);
}
