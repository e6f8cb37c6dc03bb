/* SPDX-License-Identifier: Apache-2.0 */
/* Shared parts of the model commands (run, logits, bench, tokenize): option matching, the
 * common model/device options, and opening a model on the chosen device.
 *
 * Device choice: --backend NAME picks a module ("cpu", "cuda", "sim", ...; "ref" = the scalar
 * reference linked in); --device N is that module's device index, or without --backend an
 * index into the list `strata backends` prints, or NAME:N. Default: the usable device with
 * the most memory that is not the CPU or a simulated one, else the CPU. */
#ifndef STRATA_CLI_COMMON_H
#define STRATA_CLI_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "arch/arch.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "strata/backend.h"
#include "tokenizer/tokenizer.h"

/* Matches argv[*i] against "--name VALUE" / "--name=VALUE" (and `alias`, may be NULL).
 * Returns 1 and sets *val (advancing *i past a separate value), 0 when it is another
 * option, -1 (message printed) when the value is missing. */
int st_cli_opt(int argc, char **argv, int *i, const char *name, const char *alias, const char **val);
/* Parsers with range checks; print "strata <cmd>: bad value for NAME" and return -1. */
int st_cli_int(const char *cmd, const char *name, const char *val, long lo, long hi, long *out);
int st_cli_float(const char *cmd, const char *name, const char *val, double *out);

/* Options every model command shares. */
typedef struct st_cli_model_opts {
    const char *model;      /* -m / --model */
    const char *backend;    /* --backend */
    const char *device;     /* --device */
    long threads;           /* --threads (0 = module default) */
    long ctx;               /* --ctx (0 = model default) */
    long batch;             /* --batch */
    const char *kv_type;    /* --kv-type f16|f32|q8_0 */
    int no_in_place;        /* --no-mmap: copy weights even to a unified device */
    /* the layer split (docs/layer-split.md) */
    int split_none;         /* --split-mode none: one device (else layer: every device of the kind) */
    const char *tensor_split; /* --tensor-split a,b,...: layer ratios over the devices */
    long main_device;       /* --main-device N (when main_device_given) */
    int main_device_given;
    long n_gpu_layers;      /* -ngl N: layers on the devices, the rest on the CPU (when ngl_given) */
    int ngl_given;
    int progress;           /* --progress / --no-progress: the load progress line (ST_PROGRESS_*;
                               0 = on a terminal, for loads that last) */
} st_cli_model_opts;

/* Tries to consume one shared option at argv[*i]: 1 consumed, 0 not one, -1 error. */
int st_cli_model_opt(const char *cmd, int argc, char **argv, int *i, st_cli_model_opts *o);
/* Help text of the shared options. */
void st_cli_model_opts_help(FILE *f);

/* Everything a command holds while a model is open. */
typedef struct st_cli_session {
    st_gguf *g;
    st_model_desc *d;
    void *reg;                  /* st_backend_registry (NULL for --backend ref) */
    const st_backend_api *api;
    uint32_t index;
    st_device *dev;
    st_model *m;
    st_tokenizer *tok;          /* when asked for */
    const void *pick;           /* the st_backend_device chosen (NULL for --backend ref) */
    char device_text[160];      /* "cpu device 0: Host CPU (AVX2)" */
    double mem_bw_gbs;          /* the device's nominal bandwidth, 0 if unknown */
    void *split;                /* st_split when the model is split over devices (cli_planned.c), else NULL */
} st_cli_session;

/* Opens the model file, describes it, chooses and opens the device, loads the model with
 * `mp` (kv type, ctx, batch from `o` override it), and the tokenizer when want_tok.
 * Prints the reason to stderr as "strata <cmd>: ..." and returns -1 on failure (the
 * session is then closed). */
int st_cli_open(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, st_model_params *mp,
                int want_tok);
/* st_cli_open without the model load: the file, description, tokenizer, options applied to
 * `mp`, and the opened device (s->m stays NULL). Same errors. */
int st_cli_open_device(const char *cmd, st_cli_session *s, const st_cli_model_opts *o, st_model_params *mp,
                       int want_tok);
void st_cli_close(st_cli_session *s);

#endif
