/* SPDX-License-Identifier: Apache-2.0 */
/* The load progress line: while a model's weights are uploaded to a device, one line on
 * stderr, redrawn in place on a terminal:
 *   loading model.gguf: 42% (1.21 of 2.88 GiB), 850 MB/s, ETA 2s
 * and at the end
 *   loaded model.gguf: 2.88 GiB in 3.4 s (850 MB/s)
 * Shown on a terminal when the load lasts (from 0.5 s on), or always when asked (then, off a
 * terminal, one line per second instead of redrawing). Weights read in place from the mapped
 * file are not uploaded: there is nothing to show then. */
#ifndef STRATA_PROGRESS_H
#define STRATA_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arch/arch.h"
#include "model/model.h"

enum { ST_PROGRESS_AUTO = 0, ST_PROGRESS_ALWAYS = 1, ST_PROGRESS_NEVER = -1 };

typedef struct st_progress {
    FILE *out;            /* NULL: off */
    int mode;             /* ST_PROGRESS_* */
    int tty;              /* out is a terminal: redraw in place */
    char what[96];        /* "model.gguf" */
    uint64_t total;       /* expected bytes (grows when exceeded) */
    uint64_t done;
    uint64_t t0_ns, last_draw_ns;
    int drawn;            /* lines drawn so far */
    size_t last_len;      /* length of the line on screen (to blank a shorter one) */
} st_progress;

/* "loading WHAT: 42% (1.21 of 2.88 GiB), 850 MB/s, ETA 2s" for `done` of `total` bytes after
 * `elapsed_s`; the rate and ETA read "--" before there is one (elapsed or done 0), and the
 * percent is left out when total is 0. MB = 10^6 bytes, sizes in MiB below 1 GiB. Returns the
 * length written (truncated at len, always terminated). Pure. */
size_t st_progress_format(char *buf, size_t len, const char *what, uint64_t done, uint64_t total, double elapsed_s);
/* "loaded WHAT: 2.88 GiB in 3.4 s (850 MB/s)". Pure. */
size_t st_progress_format_done(char *buf, size_t len, const char *what, uint64_t done, double elapsed_s);

/* Starts a progress line on `out` (NULL or mode NEVER: nothing is ever printed) for the load of
 * `path` (its base name is shown) of about `total` bytes, at time now_ns. */
void st_progress_begin(st_progress *p, FILE *out, int mode, const char *path, uint64_t total, uint64_t now_ns);
/* `done` bytes so far at now_ns: redraws when due (a terminal: every 0.1 s once 0.5 s passed or
 * when asked; otherwise when asked, once a second). */
void st_progress_update(st_progress *p, uint64_t done, uint64_t now_ns);
/* Ends it: the final line when a line was drawn or when asked and bytes were uploaded. */
void st_progress_end(st_progress *p, uint64_t now_ns);

/* The progress line of a model load: st_progress_begin for the load of `d` from `path` with
 * *mp, whose total is the bytes the load will upload (every tensor, or all but the routed
 * experts when they stay in the file), and mp's hook reporting to p. */
void st_progress_load_begin(st_progress *p, FILE *out, int mode, const char *path, const st_model_desc *d,
                            st_model_params *mp);
/* After the load: st_progress_end, and mp's hook removed. */
void st_progress_load_end(st_progress *p, st_model_params *mp);

#endif
