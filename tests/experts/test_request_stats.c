/* SPDX-License-Identifier: Apache-2.0 */
/* Per-request expert statistics below the server: the engine over a generated MoE model with an
 * expert cache on a simulated device (misses on the CPU module).
 *  - a request alone: its DONE event's lookups are exactly (prompt + generated - 1) tokens x MoE
 *    layers x experts per token, equal to what the cache counted meanwhile, with Belady between
 *    the hits and the lookups and max_slots 1;
 *  - two requests admitted together: both valid, max_slots 2, Belady >= hits, and the longer
 *    one's lookups are every lookup of their steps;
 *  - the model's trace windows: positions count every lookup, a trimmed window is refused, the
 *    whole-trace Belady refuses after a trim, and past the trace's cap (about a million lookups)
 *    recording starts again so that windows opened afterwards are whole while one spanning the
 *    restart is refused;
 *  - no statistics on a model without a cache.
 * usage: test_request_stats SIM_MODULE.so CPU_MODULE.so */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_registry.h"
#include "engine/engine.h"
#include "experts/expert_cache.h"
#include "gguf/gguf.h"
#include "model/gen.h"
#include "model/model.h"

static int g_fail = 0;
#include "../common/check.h"

typedef struct dev {
    const st_backend_api *api;
    uint32_t index;
    st_device *dev;
} dev;

static int open_dev(st_backend_registry *reg, const char *name, dev *d) {
    memset(d, 0, sizeof *d);
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *bd = st_backend_registry_device(reg, i);
        if (strcmp(bd->module->api->name, name) && strcmp(bd->module->backend, name)) continue;
        d->api = bd->module->api;
        d->index = bd->index;
        return d->api->device_open(d->index, &d->dev) == ST_OK ? 0 : -1;
    }
    return -1;
}

#define MAX_EV 8
typedef struct done_log {
    st_engine_event ev[MAX_EV];
    int n;
} done_log;

static void on_event(void *user, const st_engine_event *ev) {
    done_log *l = user;
    if (ev->kind == ST_EV_DONE && l->n < MAX_EV) l->ev[l->n++] = *ev;
}

static int drain(st_engine *e, done_log *l) {
    char err[512];
    for (int i = 0; i < 10000 && st_engine_busy(e); i++)
        if (st_engine_step(e, on_event, l, err, sizeof err)) {
            CHECK(0, "engine step: %s", err);
            return -1;
        }
    return 0;
}

static st_gen_request req(uint64_t id, const int32_t *prompt, int32_t n, int32_t max_tokens) {
    st_gen_request r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.prompt = prompt;
    r.n_prompt = n;
    r.max_tokens = max_tokens;
    r.ignore_eos = 1;
    st_sampler_params_default(&r.sp);
    r.sp.temp = 0;
    return r;
}

static void check_event(const st_engine_event *ev, const char *what) {
    const st_engine_experts *x = &ev->experts;
    CHECK(x->valid && x->belady_valid, "%s: valid %d, belady_valid %d", what, x->valid, x->belady_valid);
    CHECK(x->hits + x->misses > 0 && x->belady_hits >= x->hits && x->belady_hits <= x->hits + x->misses,
          "%s: hits %llu, belady %llu of %llu lookups", what, (unsigned long long)x->hits,
          (unsigned long long)x->belady_hits, (unsigned long long)(x->hits + x->misses));
    CHECK(x->bytes_host > 0 && x->bytes_device > 0 && x->cpu_ms > 0, "%s: bytes dev %llu host %llu, cpu %.3f ms",
          what, (unsigned long long)x->bytes_device, (unsigned long long)x->bytes_host, x->cpu_ms);
    CHECK(x->route_ms > 0, "%s: no time waiting for the router over %llu steps", what, (unsigned long long)x->steps);
    char line[256];
    size_t n = st_engine_experts_format(x, line, sizeof line);
    CHECK(n > 0 && strstr(line, "experts: hit ") && strstr(line, "(belady ") && strstr(line, " lookups in ") &&
              strstr(line, " streamed, router sync "),
          "%s: summary '%s'", what, line);
    printf("%s: %s\n", what, line);
}

/* The engine over a hybrid model. */
static void test_engine(st_model *m, int64_t lookups_per_token) {
    char err[512];
    st_engine_config cfg = {.n_slots = 2, .n_budget = 0, .queue_max = 8};
    st_engine *e = st_engine_new(m, &cfg, NULL, 0, err, sizeof err);
    CHECK(e != NULL, "engine: %s", err);
    if (!e) return;
    int32_t p1[9] = {3, 14, 15, 92, 65, 35, 89, 79, 32}, p2[5] = {27, 18, 28, 18, 28};
    /* alone */
    st_model_expert_info before, after;
    st_model_expert_info_get(m, &before);
    done_log l = {.n = 0};
    st_gen_request r = req(1, p1, 9, 10);
    CHECK(st_engine_submit(e, &r, err, sizeof err) == 0, "submit: %s", err);
    drain(e, &l);
    st_model_expert_info_get(m, &after);
    CHECK(l.n == 1, "%d DONE events", l.n);
    if (l.n == 1) {
        const st_engine_experts *x = &l.ev[0].experts;
        check_event(&l.ev[0], "alone");
        CHECK(x->hits + x->misses == (uint64_t)((9 + 10 - 1) * lookups_per_token),
              "alone: %llu lookups for 18 tokens x %lld", (unsigned long long)(x->hits + x->misses),
              (long long)lookups_per_token);
        CHECK(x->hits == after.stats.hits - before.stats.hits && x->misses == after.stats.misses - before.stats.misses &&
                  x->bytes_upload == after.stats.bytes_upload - before.stats.bytes_upload,
              "alone: the event's counters differ from the cache's");
        CHECK(x->max_slots == 1 && x->steps == after.forwards - before.forwards, "alone: max_slots %d, steps %llu",
              x->max_slots, (unsigned long long)x->steps);
    }
    /* two together, admitted in the same step; the second ends first */
    l.n = 0;
    st_model_expert_info_get(m, &before);
    st_gen_request a = req(2, p1, 9, 12), b = req(3, p2, 5, 4);
    CHECK(st_engine_submit(e, &a, err, sizeof err) == 0 && st_engine_submit(e, &b, err, sizeof err) == 0, "submit");
    drain(e, &l);
    st_model_expert_info_get(m, &after);
    CHECK(l.n == 2, "%d DONE events", l.n);
    if (l.n == 2) {
        check_event(&l.ev[0], "together, shorter");
        check_event(&l.ev[1], "together, longer");
        CHECK(l.ev[0].id == 3 && l.ev[1].id == 2, "order of ends: %llu, %llu", (unsigned long long)l.ev[0].id,
              (unsigned long long)l.ev[1].id);
        CHECK(l.ev[0].experts.max_slots == 2 && l.ev[1].experts.max_slots == 2, "max_slots %d, %d",
              l.ev[0].experts.max_slots, l.ev[1].experts.max_slots);
        const st_engine_experts *x = &l.ev[1].experts;
        CHECK(x->hits + x->misses == after.stats.hits + after.stats.misses - before.stats.hits - before.stats.misses,
              "the longer request's window is not every lookup of the pair's steps");
        CHECK(l.ev[0].experts.hits + l.ev[0].experts.misses < x->hits + x->misses, "the shorter window is not shorter");
    }
    st_engine_free(e);
}

/* The trace windows of the model itself. */
static void test_windows(st_model *m, int64_t lookups_per_token) {
    char err[512];
    st_expert_stats s;
    int32_t toks[512];
    for (int i = 0; i < 512; i++) toks[i] = (i * 37 + 11) % 300;
    st_model_expert_trace(m, 1);
    st_model_expert_stats_reset(m);
    const uint64_t p0 = st_model_expert_trace_pos(m);
    CHECK(st_model_eval(m, 0, toks, 8, 0, 0, NULL, err, sizeof err) == 0, "eval: %s", err);
    const uint64_t p1 = st_model_expert_trace_pos(m);
    CHECK(p1 - p0 == (uint64_t)(8 * lookups_per_token), "8 tokens moved the position by %llu",
          (unsigned long long)(p1 - p0));
    CHECK(st_model_expert_belady(m, &s, err, sizeof err) == 0, "whole-trace Belady before a trim: %s", err);
    CHECK(st_model_expert_belady_window(m, p0, p1, NULL, &s, err, sizeof err) == 0 &&
              s.hits + s.misses == p1 - p0,
          "window [p0, p1): %s", err);
    st_model_expert_trace_trim(m, p0 + 4);
    CHECK(st_model_expert_belady_window(m, p0, p1, NULL, &s, err, sizeof err) == -1, "a trimmed window was accepted");
    CHECK(st_model_expert_belady_window(m, p0 + 4, p1, NULL, &s, err, sizeof err) == 0, "the kept part: %s", err);
    CHECK(st_model_expert_belady(m, &s, err, sizeof err) == -1 && strstr(err, "trimmed"),
          "the whole-trace Belady after a trim: '%s'", err);
    /* past the cap: a window spanning the restart is refused, one opened after it is whole */
    const uint64_t span0 = st_model_expert_trace_pos(m);
    uint64_t opened = 0;
    for (int i = 0; i < 4096 && st_model_expert_trace_pos(m) - span0 < (1u << 20) + 8192u; i++) {
        st_kv_clear(st_model_kv(m));
        if (st_model_eval(m, 0, toks, 512, 0, 0, NULL, err, sizeof err)) {
            CHECK(0, "eval: %s", err);
            return;
        }
    }
    opened = st_model_expert_trace_pos(m);
    st_kv_clear(st_model_kv(m));
    CHECK(st_model_eval(m, 0, toks, 64, 0, 0, NULL, err, sizeof err) == 0, "eval: %s", err);
    const uint64_t end = st_model_expert_trace_pos(m);
    CHECK(st_model_expert_belady_window(m, span0, end, NULL, &s, err, sizeof err) == -1,
          "a window of %llu lookups across the trace's cap was accepted", (unsigned long long)(end - span0));
    CHECK(st_model_expert_belady_window(m, opened, end, NULL, &s, err, sizeof err) == 0 &&
              s.hits + s.misses == end - opened,
          "a window opened after the restart: %s", err);
    st_model_expert_trace(m, 0);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s SIM_MODULE.so CPU_MODULE.so\n", argv[0]);
        return 2;
    }
    char sp[2048], path[256], err[1024];
    snprintf(sp, sizeof sp, "%s:%s", argv[1], argv[2]);
    if (!getenv("STRATA_SIM")) setenv("STRATA_SIM", "devices=1,mem=256MiB", 1);
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    opt.search_path = sp;
    opt.ignore_env_path = 1;
    opt.skip_exe_dir = 1;
    st_backend_registry *reg = st_backend_registry_open(&opt);
    dev gpu, cpu;
    if (!reg || open_dev(reg, "sim", &gpu) || open_dev(reg, "cpu", &cpu)) {
        fprintf(stderr, "SKIP: the simulated device and the CPU module are needed\n");
        if (reg) st_backend_registry_close(reg);
        return 77;
    }
    snprintf(path, sizeof path, "/tmp/strata_reqstats_%d.gguf", (int)getpid());
    st_gen_params gp;
    st_gen_preset("tiny", "qwen3moe", &gp);
    gp.hp.n_layer = 8;
    gp.hp.n_expert = 32;
    gp.hp.n_expert_used = 16; /* many lookups per token: the trace's cap is reached in a few steps */
    gp.router_skew = 1.0f;
    st_gguf *g = NULL;
    st_model_desc *desc = NULL;
    if (st_gen_model(&gp, path, err, sizeof err) || !(g = st_gguf_open(path, err, sizeof err)) ||
        !(desc = st_arch_describe(g, err, sizeof err))) {
        CHECK(0, "model: %s", err);
        goto out;
    }
    int64_t moe = 0;
    for (int l = 0; l < desc->hp.n_layer; l++) moe += desc->layers[l].is_moe;
    const int64_t per_token = moe * desc->hp.n_expert_used;
    st_model_params p;
    st_model_params_default(&p);
    p.n_ctx = 512;
    p.n_seq = 2;
    p.n_batch = 512;
    p.n_out_max = 2;
    p.kv_type = ST_TYPE_F32;
    p.expert_slots = 48;
    p.cpu_api = cpu.api;
    p.cpu_dev = cpu.dev;
    p.cpu_index = cpu.index;
    st_model *m = st_model_load(desc, gpu.api, gpu.dev, gpu.index, &p, err, sizeof err);
    CHECK(m != NULL, "load: %s", err);
    if (m) {
        test_engine(m, per_token);
        test_windows(m, per_token);
        st_model_free(m);
    }
    /* every expert resident: no statistics */
    p.expert_slots = -1;
    m = st_model_load(desc, gpu.api, gpu.dev, gpu.index, &p, err, sizeof err);
    CHECK(m != NULL, "load (all resident): %s", err);
    if (m) {
        st_engine_config cfg = {.n_slots = 1, .n_budget = 0, .queue_max = 8};
        st_engine *e = st_engine_new(m, &cfg, NULL, 0, err, sizeof err);
        done_log l = {.n = 0};
        int32_t pr[3] = {5, 6, 7};
        st_gen_request r = req(9, pr, 3, 3);
        if (e && st_engine_submit(e, &r, err, sizeof err) == 0) drain(e, &l);
        CHECK(l.n == 1 && !l.ev[0].experts.valid, "all resident: %d events, valid %d", l.n,
              l.n ? l.ev[0].experts.valid : -1);
        char line[64] = "x";
        CHECK(st_engine_experts_format(&l.ev[0].experts, line, sizeof line) == 0 && line[0] == 0,
              "all resident: a summary '%s'", line);
        st_engine_free(e);
        st_model_free(m);
    }
out:
    st_model_desc_free(desc);
    st_gguf_close(g);
    unlink(path);
    gpu.api->device_close(gpu.dev);
    cpu.api->device_close(cpu.dev);
    st_backend_registry_close(reg);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("per-request expert statistics: all checks passed\n");
    return 0;
}
