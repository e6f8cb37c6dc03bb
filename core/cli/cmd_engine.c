/* SPDX-License-Identifier: Apache-2.0 */
/* strata engine: the engine child of `strata serve` (not for direct use). Holds the model and
 * the device, runs the slot engine, and talks to the front over the socket given by --fd. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "backend/backend_registry.h"
#include "backend/dev.h"
#include "cli/cli_planned.h"
#include "engine/engine_split.h"
#include "cli/commands.h"
#include "engine/engine.h"
#include "engine/engine_offload.h"
#include "engine/watchdog.h"
#include "gguf/gguf.h"
#include "grammar/grammar.h"
#include "model/model.h"
#include "platform/crash.h"
#include "server/proto.h"
#include "tokenizer/tokenizer.h"

static void elog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void elog(const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
    st_crash_log_line(line);
}

/* Frames to the front come from the engine thread and the heartbeat thread: one at a time. */
static pthread_mutex_t g_send_mu = PTHREAD_MUTEX_INITIALIZER;

static int esend(int fd, uint32_t type, const void *a, size_t na, const void *b, size_t nb) {
    pthread_mutex_lock(&g_send_mu);
    int rc = st_msg_send(fd, type, a, na, b, nb);
    pthread_mutex_unlock(&g_send_mu);
    return rc;
}

/* The heartbeat: a frame every `interval` seconds from its own thread, from the start (the
 * model's load included) to the end, so the front sees a frozen or stopped process (SIGSTOP,
 * a machine-wide hang) even when the engine thread is inside a long step. A step that never
 * ends while the process runs is the watchdog's to see. */
typedef struct heartbeat {
    int fd;
    double interval;
    uint64_t steps; /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    pthread_t th;
    int started;
} heartbeat;

static void *heartbeat_main(void *arg) {
    heartbeat *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        uint64_t steps = h->steps;
        pthread_mutex_unlock(&h->mu);
        if (esend(h->fd, ST_MSG_PROGRESS, &steps, sizeof steps, NULL, 0)) return NULL; /* the front is gone */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = (long)(h->interval * 1e9);
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec += ns % 1000000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&h->mu);
        if (!h->stop) pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void heartbeat_start(heartbeat *h, int fd, double stall) {
    memset(h, 0, sizeof *h);
    h->fd = fd;
    h->interval = stall / 5 < 0.05 ? 0.05 : stall / 5 > 1.0 ? 1.0 : stall / 5;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->started = pthread_create(&h->th, NULL, heartbeat_main, h) == 0;
    if (!h->started) fprintf(stderr, "strata engine: WARNING: no heartbeat thread; the front may take this engine for frozen\n");
}

static void heartbeat_stop(heartbeat *h) {
    if (h->started) {
        pthread_mutex_lock(&h->mu);
        h->stop = 1;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->th, NULL);
    }
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
}

typedef struct {
    int fd;
    st_watchdog *wd;
} emit_ctx;

static void emit(void *user, const st_engine_event *ev) {
    emit_ctx *c = user;
    /* an embedding's vector follows the event */
    esend(c->fd, ST_MSG_EVENT, ev, sizeof *ev, ev->embd, ev->embd ? sizeof(float) * (size_t)ev->n_embd : 0);
}

typedef struct {
    st_dev door;
    char name[128];
} dev_info;

/* Device lines of a stall report: name, module and memory (the report's stage says what
 * was running). Runs on the watchdog thread while the engine thread may be stuck in the device;
 * mem_info is a query every module answers without waiting for its streams. */
static void describe_one(int fd, const char *name, st_dev *door) {
    uint64_t fr = 0, tot = 0;
    int have = door->api && door->handle && st_dev_mem_info(door, &fr, &tot) == ST_OK;
    dprintf(fd, "  %s (%s, module %s)%s", name, door->api ? door->name : "?", door->api ? door->api->name : "?",
            door->lost ? " LOST" : "");
    if (have) dprintf(fd, ": %.1f MiB free of %.1f MiB", (double)fr / 1048576.0, (double)tot / 1048576.0);
    dprintf(fd, "\n");
}

static st_split g_split;

static void describe_devices(void *user, int fd) {
    dev_info *d = user;
    if (!g_split.n) describe_one(fd, d->name, &d->door);
    for (int32_t i = 0; i < g_split.n; i++) describe_one(fd, g_split.dev[i].props.name, &g_split.dev[i]);
}

/* The memory plan and expert cache of the model, for the statistics' Prometheus lines; or, for a
 * model over several devices, the split (g_split.n > 0) and its options (replanning after a loss). */
static st_offload g_off;
static st_split_opts g_split_opts;

/* Serve one message from the front; returns -1 when the front is gone. */
static int handle(int fd, st_engine *e, st_model *m) {
    uint32_t type;
    void *p;
    size_t len;
    if (st_msg_recv(fd, &type, &p, &len)) return -1;
    if (type == ST_MSG_SUBMIT && len >= sizeof(st_msg_submit)) {
        st_msg_submit *s = p;
        st_gen_request r; /* tokens, grammar and biases follow the struct (server/proto_submit.c) */
        char err[256] = "";
        if (st_msg_submit_unpack(p, len, &r) || st_engine_submit(e, &r, err, sizeof err)) {
            st_msg_refused rf;
            memset(&rf, 0, sizeof rf);
            rf.id = s->id;
            snprintf(rf.msg, sizeof rf.msg, "%s", err[0] ? err : "malformed request");
            esend(fd, ST_MSG_REFUSED, &rf, sizeof rf, NULL, 0);
        }
    } else if (type == ST_MSG_CANCEL && len == sizeof(uint64_t)) {
        st_engine_cancel(e, *(uint64_t *)p);
    } else if (type == ST_MSG_STATS_REQ) {
        st_msg_stats st;
        memset(&st, 0, sizeof st);
        st_engine_get_stats(e, &st.engine);
        st_kv *kv = st_model_kv(m);
        st.kv_cells_free = st_kv_cells_free(kv);
        st.kv_cells_total = st_kv_params_of(kv)->n_cells;
        st.n_slots = st_engine_get_slots(e, st.slot, ST_MSG_SLOTS);
        /* the plan's table and the expert cache's statistics follow as Prometheus text */
        static char text[1 << 17];
        size_t tl = g_split.n ? st_plan_format_metrics(g_split.plan, text, sizeof text)
                              : st_offload_format_metrics(&g_off, m, text, sizeof text);
        if (g_split.n && tl < sizeof text) tl += st_split_format_metrics(m, text + tl, sizeof text - tl);
        esend(fd, ST_MSG_STATS, &st, sizeof st, text, tl);
    }
    free(p);
    return 0;
}

/* Everything the engine process holds; engine_release frees what was made. */
typedef struct engine_run {
    int fd, parallel;
    double stall;
    const char *dir, *model;
    heartbeat *hb;
    st_backend_registry *reg;
    const st_backend_device *pick;
    dev_info di;
    st_gguf *g;
    st_model_desc *desc;
    st_tokenizer *tok;
    int planned;
    st_model *m;
    st_engine *e;
    st_gvocab *gv; /* the vocabulary for grammar-constrained requests (NULL: they are refused) */
    st_model_params mp; /* what the model was loaded with (a replan loads it again) */
    int queue;
} engine_run;

static void engine_release(engine_run *er) {
    st_engine_free(er->e);
    st_gvocab_free(er->gv);
    st_model_free(er->m);
    if (er->planned) st_offload_release(&g_off);
    st_split_release(&g_split);
    st_dev_close(&er->di.door);
    st_tokenizer_free(er->tok);
    st_model_desc_free(er->desc);
    st_gguf_close(er->g);
    if (er->reg) st_backend_registry_close(er->reg);
}

static int engine_start(engine_run *er, int queue);

/* "layer split: sim0 sim1" as the engine's device name, and the start-up table on the log. */
static void split_name(engine_run *er) {
    st_split_report(&g_split, er->m, stderr);
    size_t at = (size_t)snprintf(er->di.name, sizeof er->di.name, "layer split:");
    st_model_stage_info si;
    for (int32_t i = 0; st_model_stage_get(er->m, i, &si) == 0 && at < sizeof er->di.name; i++)
        at += (size_t)snprintf(er->di.name + at, sizeof er->di.name - at, " %s", si.device);
}

/* The model over several devices (--split-mode, -ngl, --tensor-split, or more than one device of
 * the kind). 0, or ST_ENGINE_EXIT_START after saying why. */
static int engine_load_split(engine_run *er, int queue) {
    char err[1024];
    if (st_split_prepare(&g_split, &g_split_opts, er->reg, er->desc, &er->mp, stderr, err, sizeof err) ||
        !(er->m = st_split_load(&g_split, er->desc, &er->mp, err, sizeof err))) {
        elog("layer split: %s", err);
        return ST_ENGINE_EXIT_START;
    }
    split_name(er);
    return engine_start(er, queue);
}

/* A step failed on a split model: when a device was lost, the model is planned again on the devices
 * that remain (every request in flight got its error already) and the engine goes on; 1 then, 0 when
 * no device was lost, -1 when the model no longer fits (the reason is logged). */
static int engine_replan(engine_run *er, int queue) {
    if (!g_split.n) return 0;
    char err[1024];
    st_engine_free(er->e);
    er->e = NULL;
    st_gvocab_free(er->gv);
    er->gv = NULL;
    int r = st_split_replan(&g_split, &er->m, &g_split_opts, er->reg, er->desc, &er->mp, stderr, err, sizeof err);
    if (r < 0) elog("refusing to go on: %s", err);
    if (r <= 0) return r;
    split_name(er);
    elog("WARNING: the model runs on fewer devices now: %s", er->di.name);
    return engine_start(er, queue) == 0 ? 1 : -1;
}

/* Opens the device, the model and the engine. Returns 0, or the exit status: a start-up
 * failure that will repeat is ST_ENGINE_EXIT_START (the front does not loop on it). */
static int engine_load(engine_run *er, st_offload_opts *oo, const char *backend, int device, int ctx, int queue,
                       const char *kv_type) {
    char err[512];
    er->reg = st_backend_registry_open(NULL);
    for (uint32_t i = 0; er->reg && i < st_backend_registry_n_devices(er->reg) && !er->pick; i++) {
        const st_backend_device *d = st_backend_registry_device(er->reg, i);
        if (backend && strcmp(d->module->backend, backend) && strcmp(d->module->name, backend)) continue;
        if (device >= 0 && (uint32_t)device != d->index) continue;
        er->pick = d;
    }
    if (!er->pick) {
        elog("no usable device%s%s (see `strata backends`)", backend ? " of backend " : "", backend ? backend : "");
        return ST_ENGINE_EXIT_START;
    }
    snprintf(er->di.name, sizeof er->di.name, "%s", er->pick->props->name);
    er->g = st_gguf_open(er->model, err, sizeof err);
    er->desc = er->g ? st_arch_describe(er->g, err, sizeof err) : NULL;
    er->tok = er->desc ? st_tokenizer_from_gguf(er->g, err, sizeof err) : NULL;
    int kt = st_kv_type_from_name(kv_type);
    if (!er->tok || kt < 0) {
        if (kt < 0) snprintf(err, sizeof err, "unknown --kv-type '%s' (f16, f32, q8_0)", kv_type);
        elog("%s", err);
        return ST_ENGINE_EXIT_START;
    }
    st_model_params mp;
    st_model_params_default(&mp);
    mp.n_seq = er->parallel;
    if (ctx > 0) mp.n_ctx = ctx;
    mp.n_out_max = er->parallel > 1 ? er->parallel : 1;
    mp.kv_type = (uint32_t)kt;
    er->mp = mp;
    g_split_opts.backend = backend;
    g_split_opts.vram_budget = oo->vram_budget;
    g_split_opts.reserve = oo->reserve;
    g_split_opts.n_slots = er->parallel;
    if (st_split_wanted(&g_split_opts, er->reg, er->desc->hp.n_layer)) return engine_load_split(er, queue);
    if (st_dev_open(&er->di.door, er->pick->module->api, er->pick->index) != ST_OK) {
        elog("cannot open %s: %s", er->di.name, st_dev_error());
        return 1; /* a device may be busy for a while: not a start-up failure that must repeat */
    }
    /* the memory plan before the first allocation: its table goes to the log */
    if (st_offload_prepare(oo, er->desc, er->reg, er->pick, er->di.door.handle, &mp, stderr, &g_off, err, sizeof err)) {
        elog("%s", err);
        return ST_ENGINE_EXIT_START;
    }
    er->planned = 1;
    er->m = st_offload_load(&g_off, er->desc, er->di.door.api, er->di.door.handle, er->pick->index, &mp, stderr, err, sizeof err);
    if (!er->m) {
        elog("%s", err);
        return ST_ENGINE_EXIT_START;
    }
    return engine_start(er, queue);
}

/* The engine over a loaded model. 0, or ST_ENGINE_EXIT_START. */
static int engine_start(engine_run *er, int queue) {
    char err[512];
    int32_t eog[16], n_eog = 0;
    for (int32_t t = 0; er->m && t < (int32_t)st_tokenizer_vocab_size(er->tok) && n_eog < 16; t++)
        if (st_tokenizer_is_eog(er->tok, t)) eog[n_eog++] = t;
    er->gv = er->m ? st_gvocab_from_tokenizer(er->tok) : NULL;
    st_engine_config ec = {.n_slots = er->parallel, .n_budget = 0, .queue_max = queue, .where = er->di.name,
                           .max_step_s = er->stall / 4, .gvocab = er->gv};
    er->e = er->m ? st_engine_new(er->m, &ec, eog, n_eog, err, sizeof err) : NULL;
    if (!er->e) {
        elog("%s", err);
        return ST_ENGINE_EXIT_START;
    }
    return 0;
}

/* Says READY, then serves the front's messages and runs steps until the front goes away or a
 * step fails. Returns the exit status. */
static int engine_serve(engine_run *er) {
    int fd = er->fd;
    char err[512];
    st_msg_ready rd;
    memset(&rd, 0, sizeof rd);
    rd.n_ctx = st_model_params_of(er->m)->n_ctx;
    rd.n_slots = er->parallel;
    rd.n_vocab = er->desc->hp.n_vocab;
    rd.n_embd = (int32_t)er->desc->hp.n_embd;
    snprintf(rd.device, sizeof rd.device, "%s", er->di.name);
    snprintf(rd.model, sizeof rd.model, "%s", er->model);
    elog("model %s on %s: %d slots x %d positions", er->model, er->di.name, er->parallel, rd.n_ctx);
    if (esend(fd, ST_MSG_READY, &rd, sizeof rd, NULL, 0)) return 0;
    st_watchdog *wd = st_watchdog_start(er->stall, er->dir, describe_devices, &er->di);
    emit_ctx ecx = {fd, wd};
    uint64_t step = 0;
    int status = 0;
    for (;;) {
        int busy = st_engine_busy(er->e);
        if (wd) st_watchdog_busy(wd, busy);
        /* every message that waits is served before the next step (a cancel among them) */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, busy ? 0 : 500), gone = 0;
        while (r > 0 && !(gone = handle(fd, er->e, er->m))) r = poll(&p, 1, 0);
        if (gone || (r < 0 && errno != EINTR)) break; /* the front is gone: leave quietly */
        if (!st_engine_busy(er->e)) continue;
        if (wd) st_watchdog_busy(wd, 1);
        step++;
        if (st_engine_step(er->e, emit, &ecx, err, sizeof err)) {
            int rp = engine_replan(er, er->queue);
            if (rp > 0) {
                elog("step %llu failed: %s; the engine goes on with the new plan", (unsigned long long)step, err);
                continue;
            }
            if (rp < 0) { /* a lost device and no plan without it: starting again would not help */
                status = ST_ENGINE_EXIT_START;
                break;
            }
            /* the device may be in any state now: every request got its error; end so that the
             * front starts a fresh engine with a freshly opened device */
            elog("step %llu failed: %s; the engine exits (code %d) to be restarted", (unsigned long long)step, err,
                 ST_ENGINE_EXIT_DEVICE);
            status = ST_ENGINE_EXIT_DEVICE;
            break;
        }
        if (wd) st_watchdog_progress(wd);
        pthread_mutex_lock(&er->hb->mu);
        er->hb->steps = step;
        pthread_mutex_unlock(&er->hb->mu);
    }
    st_watchdog_stop(wd);
    return status;
}

int st_cmd_engine(int argc, char **argv) {
    int fd = -1, parallel = 4, ctx = 0, threads = 0, device = -1, queue = 64;
    double stall = 60;
    const char *model = NULL, *dir = "/tmp", *backend = NULL, *kv_type = "f16";
    st_offload_opts oo;
    st_offload_opts_init(&oo);
    st_cli_model_opts mo;
    memset(&mo, 0, sizeof mo);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        int ko = st_offload_opt("engine", argc, argv, &i, &oo);
        if (ko < 0) return 2;
        if (ko) continue;
        if (!strcmp(a, "--fd") && more) fd = atoi(argv[++i]);
        else if (!strcmp(a, "-m") && more) model = argv[++i];
        else if (!strcmp(a, "--parallel") && more) parallel = atoi(argv[++i]);
        else if (!strcmp(a, "--ctx") && more) ctx = atoi(argv[++i]);
        else if (!strcmp(a, "--queue") && more) queue = atoi(argv[++i]);
        else if (!strcmp(a, "--stall-timeout") && more) stall = atof(argv[++i]);
        else if (!strcmp(a, "--report-dir") && more) dir = argv[++i];
        else if (!strcmp(a, "--threads") && more) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--device") && more) device = atoi(argv[++i]);
        else if (!strcmp(a, "--backend") && more) backend = argv[++i];
        else if (!strcmp(a, "--kv-type") && more) kv_type = argv[++i];
        else if ((ko = st_cli_model_opt("engine", argc, argv, &i, &mo)) != 0) {
            if (ko < 0) return 2;
        } else {
            fprintf(stderr, "strata engine: unknown option '%s' (this command is started by `strata serve`)\n", a);
            return 2;
        }
    }
    if (fd < 0 || !model) {
        fprintf(stderr, "strata engine: started by `strata serve`; needs --fd and -m\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_NAME, "strata-engine"); /* started as /proc/self/exe: name it for ps and reports */
    prctl(PR_SET_PDEATHSIG, SIGTERM);     /* never outlive the front, even inside a hung step */
    st_crash_install(dir);
    static heartbeat hb;
    heartbeat_start(&hb, fd, stall);
    st_crash_set_stage("loading %s", model);
    if (oo.cpu_threads > 0) st_backend_set_threads((unsigned)oo.cpu_threads);
    else if (threads > 0) st_backend_set_threads((unsigned)threads);
    engine_run er;
    memset(&er, 0, sizeof er);
    er.fd = fd;
    er.stall = stall;
    er.dir = dir;
    er.model = model;
    er.parallel = parallel;
    er.hb = &hb;
    er.queue = queue;
    st_cli_split_opts(&mo, &oo, parallel, &g_split_opts);
    int status = engine_load(&er, &oo, backend, device, ctx, queue, kv_type);
    if (status == 0) status = engine_serve(&er);
    heartbeat_stop(&hb);
    engine_release(&er);
    return status;
}
