/* SPDX-License-Identifier: Apache-2.0 */
/* Per-request expert statistics: windows over the cache's counters and the routing trace. */
#include "engine/engine_experts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/textbuf.h"

int st_expert_window_init(st_expert_window *w, const st_model *m) {
    memset(w, 0, sizeof *w);
    if (!st_model_expert_cache(m)) return 0;
    const st_hparams *hp = &st_model_desc_of(m)->hp;
    w->n_keys = (int64_t)hp->n_layer * hp->n_expert;
    w->resident = malloc((size_t)w->n_keys * sizeof *w->resident);
    return w->resident ? 0 : -1;
}

void st_expert_window_free(st_expert_window *w) {
    free(w->resident);
    memset(w, 0, sizeof *w);
}

void st_expert_window_open(st_expert_window *w, const st_model *m) {
    const st_expert_cache *c = st_model_expert_cache(m);
    w->open = 0;
    if (!c || !w->resident) return;
    st_model_expert_info in;
    st_model_expert_info_get(m, &in);
    w->stats = in.stats;
    w->cpu_s = in.cpu_s;
    w->route_s = in.route_s;
    w->stage_experts = in.stage_experts;
    w->forwards = in.forwards;
    w->pos = st_model_expert_trace_pos(m);
    memcpy(w->resident, st_expert_cache_table(c), (size_t)w->n_keys * sizeof *w->resident);
    w->max_slots = 0;
    w->open = 1;
}

void st_expert_window_step(st_expert_window *w, int32_t n_slots) {
    if (w->open && n_slots > w->max_slots) w->max_slots = n_slots;
}

/* b - a, 0 when the counter went backwards (a reset of the statistics inside the window) */
static uint64_t diff(uint64_t b, uint64_t a) { return b >= a ? b - a : 0; }

void st_expert_window_close(st_expert_window *w, const st_model *m, st_engine_experts *out) {
    memset(out, 0, sizeof *out);
    if (!w->open) return;
    w->open = 0;
    st_model_expert_info in;
    if (st_model_expert_info_get(m, &in)) return;
    out->valid = 1;
    out->max_slots = w->max_slots;
    out->steps = diff(in.forwards, w->forwards);
    out->hits = diff(in.stats.hits, w->stats.hits);
    out->misses = diff(in.stats.misses, w->stats.misses);
    out->bytes_device = diff(in.stats.bytes_device, w->stats.bytes_device);
    out->bytes_host = diff(in.stats.bytes_host, w->stats.bytes_host);
    out->bytes_upload = diff(in.stats.bytes_upload, w->stats.bytes_upload);
    out->cpu_ms = in.cpu_s > w->cpu_s ? (in.cpu_s - w->cpu_s) * 1e3 : 0;
    out->streamed = diff(in.stage_experts, w->stage_experts);
    out->route_ms = in.route_s > w->route_s ? (in.route_s - w->route_s) * 1e3 : 0;
    const uint64_t to = st_model_expert_trace_pos(m);
    st_expert_stats bel;
    char err[256];
    /* the window's lookups are exactly the counted ones, or the statistics were reset inside it */
    if (to - w->pos == out->hits + out->misses &&
        st_model_expert_belady_window(m, w->pos, to, w->resident, &bel, err, sizeof err) == 0) {
        out->belady_valid = 1;
        out->belady_hits = bel.hits;
    }
}

static void put_bytes(st_textbuf *o, uint64_t b) {
    if (b < 1024) st_textbuf_put(o, "%llu B", (unsigned long long)b);
    else if (b < (1ull << 20)) st_textbuf_put(o, "%.1f KiB", (double)b / 1024.0);
    else if (b < (1ull << 30)) st_textbuf_put(o, "%.1f MiB", (double)b / 1048576.0);
    else st_textbuf_put(o, "%.2f GiB", (double)b / 1073741824.0);
}

size_t st_engine_experts_format(const st_engine_experts *x, char *buf, size_t len) {
    st_textbuf o = {buf, len, 0};
    if (len) buf[0] = 0;
    if (!x->valid) return 0;
    const uint64_t n = x->hits + x->misses;
    const double hr = n ? 100.0 * (double)x->hits / (double)n : 0.0;
    st_textbuf_put(&o, "experts: hit %.1f%%", hr);
    if (x->belady_valid) st_textbuf_put(&o, " (belady %.1f%%)", n ? 100.0 * (double)x->belady_hits / (double)n : 0.0);
    else st_textbuf_put(&o, " (belady n/a)");
    st_textbuf_put(&o, " of %llu lookups in %llu steps, ", (unsigned long long)n, (unsigned long long)x->steps);
    put_bytes(&o, x->bytes_device);
    st_textbuf_put(&o, " dev / ");
    put_bytes(&o, x->bytes_host);
    st_textbuf_put(&o, " host / ");
    put_bytes(&o, x->bytes_upload);
    st_textbuf_put(&o, " upload, cpu %.0f ms, %llu streamed, router sync %.0f ms", x->cpu_ms,
                   (unsigned long long)x->streamed, x->route_ms);
    if (x->max_slots > 1)
        st_textbuf_put(&o, ", steps shared with up to %d other request%s", x->max_slots - 1, x->max_slots > 2 ? "s" : "");
    return st_textbuf_done(&o);
}
