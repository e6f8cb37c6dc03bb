/* strata engine: the engine child of `strata serve` (not for direct use). Holds the model and
 * the device, runs the slot engine, and talks to the front over the socket given by --fd. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "backend/backend_registry.h"
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

typedef struct {
    int fd;
    st_watchdog *wd;
} emit_ctx;

static void emit(void *user, const st_engine_event *ev) {
    emit_ctx *c = user;
    st_msg_send(c->fd, ST_MSG_EVENT, ev, sizeof *ev, NULL, 0);
}

typedef struct {
    const st_backend_api *api;
    st_device *dev;
    char name[128];
} dev_info;

/* Device lines of a stall report: name, module and memory (the report's stage says what
 * was running). Runs on the watchdog thread while the engine thread may be stuck in the device;
 * mem_info is a query every module answers without waiting for its streams. */
static void describe_devices(void *user, int fd) {
    dev_info *d = user;
    uint64_t fr = 0, tot = 0;
    int have = d->api && d->dev && d->api->mem_info && d->api->mem_info(d->dev, &fr, &tot) == ST_OK;
    dprintf(fd, "  %s (module %s)", d->name, d->api ? d->api->name : "?");
    if (have) dprintf(fd, ": %.1f MiB free of %.1f MiB", (double)fr / 1048576.0, (double)tot / 1048576.0);
    dprintf(fd, "\n");
}

/* The memory plan and expert cache of the model, for the statistics' Prometheus lines. */
static st_offload g_off;

/* Serve one message from the front; returns -1 when the front is gone. */
static int handle(int fd, st_engine *e, st_model *m) {
    uint32_t type;
    void *p;
    size_t len;
    if (st_msg_recv(fd, &type, &p, &len)) return -1;
    if (type == ST_MSG_SUBMIT && len >= sizeof(st_msg_submit)) {
        st_msg_submit *s = p;
        st_gen_request r;
        char err[256] = "";
        if (st_msg_submit_unpack(p, len, &r) || st_engine_submit(e, &r, err, sizeof err)) {
            st_msg_refused rf;
            memset(&rf, 0, sizeof rf);
            rf.id = s->id;
            snprintf(rf.msg, sizeof rf.msg, "%s", err[0] ? err : "malformed request");
            st_msg_send(fd, ST_MSG_REFUSED, &rf, sizeof rf, NULL, 0);
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
        /* the plan's table and the expert cache's statistics follow as Prometheus text */
        static char text[1 << 17];
        size_t tl = st_offload_format_metrics(&g_off, m, text, sizeof text);
        st_msg_send(fd, ST_MSG_STATS, &st, sizeof st, text, tl);
    }
    free(p);
    return 0;
}

int st_cmd_engine(int argc, char **argv) {
    int fd = -1, parallel = 4, ctx = 0, threads = 0, device = -1, queue = 64;
    double stall = 60;
    const char *model = NULL, *dir = "/tmp", *backend = NULL, *kv_type = "f16";
    st_offload_opts oo;
    st_offload_opts_init(&oo);
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
        else {
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
    st_crash_set_stage("loading %s", model);
    if (oo.cpu_threads > 0) st_backend_set_threads((unsigned)oo.cpu_threads);
    else if (threads > 0) st_backend_set_threads((unsigned)threads);
    st_backend_registry *reg = st_backend_registry_open(NULL);
    const st_backend_device *pick = NULL;
    for (uint32_t i = 0; reg && i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (backend && strcmp(d->module->backend, backend) && strcmp(d->module->name, backend)) continue;
        if (device >= 0 && (uint32_t)device != d->index) continue;
        pick = d;
        break;
    }
    if (!pick) {
        elog("no usable device%s%s (see `strata backends`)", backend ? " of backend " : "", backend ? backend : "");
        return 1;
    }
    dev_info di = {.api = pick->module->api};
    snprintf(di.name, sizeof di.name, "%s", pick->props->name);
    char err[512];
    st_gguf *g = st_gguf_open(model, err, sizeof err);
    st_model_desc *desc = g ? st_arch_describe(g, err, sizeof err) : NULL;
    st_tokenizer *tok = desc ? st_tokenizer_from_gguf(g, err, sizeof err) : NULL;
    if (!tok) {
        elog("%s", err);
        return 1;
    }
    st_status s = di.api->device_open(pick->index, &di.dev);
    if (s != ST_OK) {
        elog("cannot open %s: %s", di.name, di.api->last_error());
        return 1;
    }
    st_model_params mp;
    st_model_params_default(&mp);
    mp.n_seq = parallel;
    if (ctx > 0) mp.n_ctx = ctx;
    mp.n_out_max = parallel > 1 ? parallel : 1;
    int kt = st_kv_type_from_name(kv_type);
    if (kt < 0) {
        elog("unknown --kv-type '%s' (f16, f32, q8_0)", kv_type);
        return 1;
    }
    mp.kv_type = (uint32_t)kt;
    /* the memory plan before the first allocation: its table goes to the log */
    if (st_offload_prepare(&oo, desc, reg, pick, di.dev, &mp, stderr, &g_off, err, sizeof err)) {
        elog("%s", err);
        return 1;
    }
    st_model *m = st_offload_load(&g_off, desc, di.api, di.dev, pick->index, &mp, stderr, err, sizeof err);
    if (!m) {
        elog("%s", err);
        return 1;
    }
    int32_t eog[16], n_eog = 0;
    for (int32_t t = 0; t < (int32_t)st_tokenizer_vocab_size(tok) && n_eog < 16; t++)
        if (st_tokenizer_is_eog(tok, t)) eog[n_eog++] = t;
    st_gvocab *gv = st_gvocab_from_tokenizer(tok); /* for grammar-constrained requests (NULL: refused) */
    st_engine_config ec = {.n_slots = parallel, .n_budget = 0, .queue_max = queue, .where = di.name,
                           .max_step_s = stall / 4, .gvocab = gv};
    st_engine *e = st_engine_new(m, &ec, eog, n_eog, err, sizeof err);
    if (!e) {
        elog("%s", err);
        return 1;
    }
    st_msg_ready rd;
    memset(&rd, 0, sizeof rd);
    rd.n_ctx = st_model_params_of(m)->n_ctx;
    rd.n_slots = parallel;
    rd.n_vocab = desc->hp.n_vocab;
    snprintf(rd.device, sizeof rd.device, "%s", di.name);
    snprintf(rd.model, sizeof rd.model, "%s", model);
    elog("model %s on %s: %d slots x %d positions", model, di.name, parallel, rd.n_ctx);
    if (st_msg_send(fd, ST_MSG_READY, &rd, sizeof rd, NULL, 0)) return 0;
    st_watchdog *wd = st_watchdog_start(stall, dir, describe_devices, &di);
    emit_ctx ecx = {fd, wd};
    uint64_t step = 0;
    int status = 0;
    for (;;) {
        int busy = st_engine_busy(e);
        if (wd) st_watchdog_busy(wd, busy);
        /* every message that waits is served before the next step (a cancel among them) */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, busy ? 0 : 500), gone = 0;
        while (r > 0 && !(gone = handle(fd, e, m))) r = poll(&p, 1, 0);
        if (gone || (r < 0 && errno != EINTR)) break; /* the front is gone: leave quietly */
        if (!st_engine_busy(e)) continue;
        if (wd) st_watchdog_busy(wd, 1);
        step++;
        if (st_engine_step(e, emit, &ecx, err, sizeof err)) {
            /* the device may be in any state now: every request got its error; end so that the
             * front starts a fresh engine with a freshly opened device */
            elog("step %llu failed: %s; the engine exits (code %d) to be restarted", (unsigned long long)step, err,
                 ST_ENGINE_EXIT_DEVICE);
            status = ST_ENGINE_EXIT_DEVICE;
            break;
        }
        if (wd) st_watchdog_progress(wd);
    }
    st_watchdog_stop(wd);
    st_engine_free(e);
    st_gvocab_free(gv);
    st_model_free(m);
    st_offload_release(&g_off);
    di.api->device_close(di.dev);
    st_tokenizer_free(tok);
    st_model_desc_free(desc);
    st_gguf_close(g);
    st_backend_registry_close(reg);
    return status;
}
