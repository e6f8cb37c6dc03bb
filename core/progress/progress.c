/* SPDX-License-Identifier: Apache-2.0 */
/* The load progress line: see progress.h. */
#include "progress/progress.h"

#include <string.h>

#include "platform/platform.h"

#define SHOW_AFTER_NS 500000000ull  /* a terminal shows a load that lasts longer than this */
#define TTY_EVERY_NS 100000000ull   /* redraw period on a terminal */
#define LINE_EVERY_NS 1000000000ull /* one line per period off a terminal (when asked) */

/* "850 MiB" / "2.88 GiB" */
static void size_text(char *buf, size_t len, uint64_t bytes) {
    if (bytes >= (1ull << 30)) snprintf(buf, len, "%.2f GiB", (double)bytes / (double)(1ull << 30));
    else snprintf(buf, len, "%.1f MiB", (double)bytes / (double)(1ull << 20));
}

/* "2s", "1m05s", "2h03m" */
static void eta_text(char *buf, size_t len, double s) {
    unsigned long t = (unsigned long)(s + 0.5);
    if (t < 60) snprintf(buf, len, "%lus", t);
    else if (t < 3600) snprintf(buf, len, "%lum%02lus", t / 60, t % 60);
    else snprintf(buf, len, "%luh%02lum", t / 3600, t / 60 % 60);
}

size_t st_progress_format(char *buf, size_t len, const char *what, uint64_t done, uint64_t total, double elapsed_s) {
    char d[32], t[32], rate[32] = "-- MB/s", eta[32] = "--";
    size_text(d, sizeof d, done);
    size_text(t, sizeof t, total);
    if (elapsed_s > 0 && done > 0) {
        double bps = (double)done / elapsed_s;
        snprintf(rate, sizeof rate, "%.0f MB/s", bps / 1e6);
        if (total >= done) eta_text(eta, sizeof eta, (double)(total - done) / bps);
    }
    int n;
    if (total) {
        unsigned pct = (unsigned)((double)done * 100.0 / (double)total);
        n = snprintf(buf, len, "loading %s: %u%% (%s of %s), %s, ETA %s", what, pct > 100 ? 100 : pct, d, t, rate, eta);
    } else {
        n = snprintf(buf, len, "loading %s: %s, %s", what, d, rate);
    }
    return n < 0 ? 0 : (size_t)n >= len ? len ? len - 1 : 0 : (size_t)n;
}

size_t st_progress_format_done(char *buf, size_t len, const char *what, uint64_t done, double elapsed_s) {
    char d[32];
    size_text(d, sizeof d, done);
    int n = elapsed_s > 0 ? snprintf(buf, len, "loaded %s: %s in %.1f s (%.0f MB/s)", what, d, elapsed_s,
                                     (double)done / elapsed_s / 1e6)
                          : snprintf(buf, len, "loaded %s: %s", what, d);
    return n < 0 ? 0 : (size_t)n >= len ? len ? len - 1 : 0 : (size_t)n;
}

void st_progress_begin(st_progress *p, FILE *out, int mode, const char *path, uint64_t total, uint64_t now_ns) {
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->out = mode == ST_PROGRESS_NEVER ? NULL : out;
    p->tty = out && st_is_terminal(out);
    if (p->out && mode == ST_PROGRESS_AUTO && !p->tty) p->out = NULL; /* auto: terminals only */
    const char *base = path ? strrchr(path, '/') : NULL;
    snprintf(p->what, sizeof p->what, "%s", base ? base + 1 : path ? path : "model");
    p->total = total;
    p->t0_ns = now_ns;
}

/* Writes the line: in place on a terminal (blanking the rest of a longer previous one). */
static void draw(st_progress *p, const char *line, size_t n, int final) {
    if (p->tty) {
        size_t pad = p->last_len > n ? p->last_len - n : 0;
        fprintf(p->out, "\r%s%*s%s", line, (int)pad, "", final ? "\n" : "");
        if (pad && !final) fprintf(p->out, "\r%s", line);
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
    p->last_len = n;
    p->drawn++;
}

void st_progress_update(st_progress *p, uint64_t done, uint64_t now_ns) {
    if (!p->out) return;
    p->done = done;
    if (done > p->total) p->total = done;
    uint64_t since = now_ns - p->t0_ns;
    if (p->mode == ST_PROGRESS_AUTO && since < SHOW_AFTER_NS) return;
    uint64_t every = p->tty ? TTY_EVERY_NS : LINE_EVERY_NS;
    if (p->drawn && now_ns - p->last_draw_ns < every) return;
    char line[256];
    size_t n = st_progress_format(line, sizeof line, p->what, done, p->total, (double)since / 1e9);
    draw(p, line, n, 0);
    p->last_draw_ns = now_ns;
}

void st_progress_end(st_progress *p, uint64_t now_ns) {
    if (!p->out || !(p->drawn || (p->mode == ST_PROGRESS_ALWAYS && p->done))) return;
    char line[256];
    size_t n = st_progress_format_done(line, sizeof line, p->what, p->done, (double)(now_ns - p->t0_ns) / 1e9);
    draw(p, line, n, 1);
    p->out = NULL;
}

static void on_upload(void *user, uint64_t bytes) { st_progress_update(user, bytes, st_now_ns()); }

void st_progress_load_begin(st_progress *p, FILE *out, int mode, const char *path, const st_model_desc *d,
                            st_model_params *mp) {
    st_progress_begin(p, out, mode, path, mp->expert_slots >= 0 ? d->bytes_nonexpert : d->bytes_total, st_now_ns());
    mp->progress = on_upload;
    mp->progress_user = p;
}

void st_progress_load_end(st_progress *p, st_model_params *mp) {
    st_progress_end(p, st_now_ns());
    mp->progress = NULL;
    mp->progress_user = NULL;
}
