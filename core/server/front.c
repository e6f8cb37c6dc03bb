/* The front process: loads the tokenizer, starts and supervises the engine child, routes
 * the engine's events to requests, and restarts the engine when it dies or stalls. */
#include "server/front.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "platform/platform.h"
#include "template/jinja.h"

void st_serve_config_default(st_serve_config *c) {
    memset(c, 0, sizeof *c);
    c->host = "127.0.0.1";
    c->port = 8080;
    c->parallel = 4;
    c->stall_timeout = 60;
    c->max_body = 1u << 20;
    c->max_depth = 32;
    c->queue_max = 64;
    c->restart_delay = 1.0;
}

/* Copy a string, truncating to fit (the texts here are messages for people). */
static void copy_str(char *dst, size_t n, const char *src) {
    size_t l = strlen(src);
    if (l >= n) l = n - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

static volatile sig_atomic_t g_stop;
static void on_stop(int sig) {
    (void)sig;
    g_stop = 1;
}

static const char *report_dir(const st_front *f) {
    if (f->cfg.report_dir) return f->cfg.report_dir;
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

static void ring_add(st_front *f, const char *line) {
    pthread_mutex_lock(&f->mu);
    snprintf(f->log_ring[f->log_head % ST_LOG_RING], sizeof f->log_ring[0], "%s", line);
    f->log_head++;
    pthread_mutex_unlock(&f->mu);
}

void st_front_last_log(st_front *f, char *buf, size_t n) {
    buf[0] = 0;
    pthread_mutex_lock(&f->mu);
    int start = f->log_head > 4 ? f->log_head - 4 : 0;
    for (int i = start; i < f->log_head; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", l ? " | " : "", f->log_ring[i % ST_LOG_RING]);
    }
    pthread_mutex_unlock(&f->mu);
}

/* Engine stderr: echo with a prefix and keep the last lines for death reports. */
static void *log_reader(void *arg) {
    st_front *f = ((void **)arg)[0];
    int fd = (int)(intptr_t)((void **)arg)[1];
    free(arg);
    FILE *in = fdopen(fd, "r");
    char line[1024];
    int in_report = 0;
    while (in && fgets(line, sizeof line, in)) {
        size_t l = strlen(line);
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r')) line[--l] = 0;
        fprintf(stderr, "engine: %s\n", line);
        /* a crash or stall report's body is in its file: keep the ring for ordinary log lines */
        if (!strncmp(line, "strata crash report", 19) || !strncmp(line, "strata stall report", 19)) in_report = 1;
        if (!in_report) ring_add(f, line);
        if (strstr(line, "report written to ")) in_report = 0;
    }
    if (in) fclose(in);
    return NULL;
}

static int spawn_engine(st_front *f) {
    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return -1;
    if (pipe2(ep, O_CLOEXEC)) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    char ctx[32], par[32], stall[32], queue[32], fdbuf[8] = "3";
    snprintf(ctx, sizeof ctx, "%d", f->cfg.ctx);
    snprintf(queue, sizeof queue, "%d", f->cfg.queue_max);
    snprintf(par, sizeof par, "%d", f->cfg.parallel);
    snprintf(stall, sizeof stall, "%g", f->cfg.stall_timeout);
    const char *argv[64];
    int a = 0;
    argv[a++] = "strata";
    argv[a++] = "engine";
    argv[a++] = "--fd";
    argv[a++] = fdbuf;
    argv[a++] = "-m";
    argv[a++] = f->cfg.model_path;
    argv[a++] = "--parallel";
    argv[a++] = par;
    argv[a++] = "--ctx";
    argv[a++] = ctx;
    argv[a++] = "--queue";
    argv[a++] = queue;
    argv[a++] = "--stall-timeout";
    argv[a++] = stall;
    argv[a++] = "--report-dir";
    argv[a++] = report_dir(f);
    for (int i = 0; f->cfg.engine_args && f->cfg.engine_args[i] && a < 62; i++) argv[a++] = f->cfg.engine_args[i];
    argv[a] = NULL;
    const char *exe = f->cfg.exe ? f->cfg.exe : "/proc/self/exe";
    pthread_mutex_lock(&f->mu);
    f->log_head = 0; /* "last log lines" are this engine's */
    pthread_mutex_unlock(&f->mu);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(sv[1], 3);
        dup2(ep[1], 2);
        int fl = fcntl(3, F_GETFD);
        fcntl(3, F_SETFD, fl & ~FD_CLOEXEC);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    close(sv[1]);
    close(ep[1]);
    void **arg = malloc(2 * sizeof(void *));
    if (arg) {
        arg[0] = f;
        arg[1] = (void *)(intptr_t)ep[0];
    }
    f->log_thread_ok = arg && pthread_create(&f->log_thread, NULL, log_reader, arg) == 0;
    if (!f->log_thread_ok) {
        free(arg);
        close(ep[0]);
    }
    pthread_mutex_lock(&f->mu);
    f->fd = sv[0];
    f->pid = pid;
    f->state = ST_ENGINE_STARTING;
    f->last_frame_ns = st_now_ns();
    pthread_mutex_unlock(&f->mu);
    return 0;
}

static st_req *find_req(st_front *f, uint64_t id) {
    for (st_req *r = f->reqs; r; r = r->next)
        if (r->id == id) return r;
    return NULL;
}

static void unlink_req(st_front *f, st_req *r) {
    for (st_req **p = &f->reqs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            return;
        }
}

static void req_unref(st_req *r) {
    pthread_mutex_lock(&r->mu);
    int left = --r->refs;
    pthread_mutex_unlock(&r->mu);
    if (left == 0) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r->toks);
        free(r->lps);
        free(r);
    }
}

static void req_fail(st_req *r, int status, const char *code, const char *msg) {
    pthread_mutex_lock(&r->mu);
    r->failed = 1;
    r->fail_status = status;
    snprintf(r->fail_code, sizeof r->fail_code, "%s", code);
    copy_str(r->fail_msg, sizeof r->fail_msg, msg);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void on_event(st_front *f, const st_engine_event *ev) {
    pthread_mutex_lock(&f->mu);
    st_req *r = find_req(f, ev->id);
    if (r && ev->kind == ST_EV_DONE) unlink_req(f, r);
    if (ev->kind == ST_EV_DONE) {
        f->m_gen_tokens += (uint64_t)ev->n_gen;
        f->m_prompt_tokens += (uint64_t)ev->n_prompt;
        f->m_cached_tokens += (uint64_t)ev->n_reused;
        f->m_gen_seconds += ev->decode_ms / 1e3;
    }
    pthread_mutex_unlock(&f->mu);
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    if (ev->kind == ST_EV_TOKEN) {
        if (r->n_toks == r->cap) {
            int32_t cap = r->cap ? r->cap * 2 : 64;
            int32_t *p = realloc(r->toks, sizeof(int32_t) * (size_t)cap);
            if (p) {
                r->toks = p;
                r->cap = cap;
            }
        }
        if (r->n_toks < r->cap) {
            if (ev->lp.valid) st_front_store_lp(r, r->n_toks, &ev->lp);
            r->toks[r->n_toks++] = ev->token;
        }
    } else {
        r->done = 1;
        r->done_ev = *ev;
        if (ev->finish == ST_FINISH_ERROR) {
            r->failed = 1;
            r->fail_status = 500;
            snprintf(r->fail_code, sizeof r->fail_code, "engine_error");
            snprintf(r->fail_msg, sizeof r->fail_msg, "the engine failed: %s; it is restarted", ev->msg);
        }
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (ev->kind == ST_EV_DONE) req_unref(r); /* the registry's reference */
}

/* Describe how the engine ended, with its report's path and stage when it wrote one. */
static void describe_death(st_front *f, pid_t pid, int wstatus, char *out, size_t n) {
    char what[128], path[512] = "", stage[256] = "", logs[600];
    if (WIFSIGNALED(wstatus)) {
        int s = WTERMSIG(wstatus);
        snprintf(what, sizeof what, "was killed by signal %s (%d)", sigabbrev_np(s) ? sigabbrev_np(s) : "?", s);
        snprintf(path, sizeof path, "%s/strata-crash-%d.txt", report_dir(f), (int)pid);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == ST_ENGINE_EXIT_STALL) {
        snprintf(what, sizeof what, "stalled (no progress for %g s) and was stopped by its watchdog", f->cfg.stall_timeout);
        snprintf(path, sizeof path, "%s/strata-stall-%d.txt", report_dir(f), (int)pid);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == ST_ENGINE_EXIT_DEVICE) {
        snprintf(what, sizeof what, "stopped after a failed forward on its device (exit code %d)", ST_ENGINE_EXIT_DEVICE);
    } else {
        snprintf(what, sizeof what, "exited with code %d", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
        snprintf(path, sizeof path, "%s/strata-crash-%d.txt", report_dir(f), (int)pid);
    }
    FILE *r = fopen(path, "r");
    if (r) {
        char line[512];
        while (fgets(line, sizeof line, r))
            if (!strncmp(line, "stage: ", 7)) {
                line[strcspn(line, "\n")] = 0;
                copy_str(stage, sizeof stage, line + 7);
                break;
            }
        fclose(r);
    } else {
        path[0] = 0;
    }
    st_front_last_log(f, logs, sizeof logs);
    snprintf(out, n, "the engine %s%s%s%s%s%s%s", what, stage[0] ? " during " : "", stage,
             path[0] ? "; report: " : "", path, logs[0] ? "; last log: " : "", logs);
}

/* Reads the engine's frames; on its death fails every request and starts a new engine. */
static void *reader_main(void *arg) {
    st_front *f = arg;
    int fails = 0;
    for (;;) {
        uint32_t type;
        void *p;
        size_t len;
        if (st_msg_recv(f->fd, &type, &p, &len) == 0) {
            pthread_mutex_lock(&f->mu);
            f->last_frame_ns = st_now_ns();
            pthread_mutex_unlock(&f->mu);
            if (type == ST_MSG_EVENT && len == sizeof(st_engine_event)) on_event(f, p);
            else if (type == ST_MSG_READY && len == sizeof(st_msg_ready)) {
                pthread_mutex_lock(&f->mu);
                f->ready = *(st_msg_ready *)p;
                memset(&f->stats, 0, sizeof f->stats); /* a new engine: its figures start at 0 */
                f->state = ST_ENGINE_READY;
                f->state_reason[0] = 0;
                pthread_cond_broadcast(&f->cv);
                pthread_mutex_unlock(&f->mu);
                fails = 0;
                fprintf(stderr, "strata serve: engine (pid %d) ready on %s: %d slots x %d positions\n", (int)f->pid,
                        f->ready.device, f->ready.n_slots, f->ready.n_ctx);
            } else if (type == ST_MSG_REFUSED && len == sizeof(st_msg_refused)) {
                st_msg_refused *m = p;
                pthread_mutex_lock(&f->mu);
                st_req *r = find_req(f, m->id);
                if (r) unlink_req(f, r);
                pthread_mutex_unlock(&f->mu);
                if (r) {
                    int q = !strncmp(m->msg, "queue full", 10), c = !strncmp(m->msg, "context_length", 14);
                    req_fail(r, q ? 429 : 400, q ? "rate_limit_exceeded" : c ? "context_length_exceeded" : "invalid_request",
                             m->msg);
                    req_unref(r);
                }
            } else if (type == ST_MSG_STATS && len >= sizeof(st_msg_stats)) {
                /* text after the record: the engine's plan and expert lines for /metrics */
                char *text = len > sizeof(st_msg_stats) ? strndup((char *)p + sizeof(st_msg_stats),
                                                                  len - sizeof(st_msg_stats)) : NULL;
                pthread_mutex_lock(&f->mu);
                free(f->stats_text);
                f->stats_text = text;
                f->stats = *(st_msg_stats *)p;
                f->stats_seq++;
                pthread_cond_broadcast(&f->cv);
                pthread_mutex_unlock(&f->mu);
            }
            free(p);
            continue;
        }
        /* the engine is gone */
        int wstatus = 0;
        pid_t pid = f->pid;
        while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        /* its stderr ends with it: read the last lines before describing the death */
        if (f->log_thread_ok) pthread_join(f->log_thread, NULL);
        f->log_thread_ok = 0;
        char why[1400];
        describe_death(f, pid, wstatus, why, sizeof why);
        pthread_mutex_lock(&f->mu);
        close(f->fd);
        f->fd = -1;
        int stopping = f->stopping;
        st_req *list = f->reqs;
        f->reqs = NULL;
        if (!stopping) {
            f->state = ST_ENGINE_RESTARTING;
            snprintf(f->state_reason, sizeof f->state_reason, "restarting: %.490s", why);
            f->m_restarts++;
        }
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        if (!stopping) fprintf(stderr, "strata serve: ERROR %s; restarting it\n", why);
        while (list) {
            st_req *n = list->next;
            req_fail(list, 503, "engine_died", why);
            req_unref(list);
            list = n;
        }
        if (stopping) return NULL;
        /* wait before restarting; longer when it keeps dying before it gets ready */
        double delay = f->cfg.restart_delay * (++fails > 5 ? 5 : fails);
        if (delay > 0) {
            struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
            nanosleep(&ts, NULL);
        }
        pthread_mutex_lock(&f->mu);
        stopping = f->stopping;
        pthread_mutex_unlock(&f->mu);
        if (stopping) return NULL;
        if (spawn_engine(f)) {
            fprintf(stderr, "strata serve: cannot start the engine: %s\n", strerror(errno));
            pthread_mutex_lock(&f->mu);
            f->state = ST_ENGINE_STOPPED;
            snprintf(f->state_reason, sizeof f->state_reason, "the engine cannot be started: %s", strerror(errno));
            pthread_mutex_unlock(&f->mu);
            return NULL;
        }
    }
}

st_req *st_front_submit(st_front *f, const int32_t *prompt, int32_t n, int32_t max_tokens, int ignore_eos,
                        const st_sampler_params *sp, int *status, char *msg, size_t msglen) {
    return st_front_submit_ex(f, prompt, n, max_tokens, ignore_eos, sp, NULL, status, msg, msglen);
}

st_req *st_front_submit_ex(st_front *f, const int32_t *prompt, int32_t n, int32_t max_tokens, int ignore_eos,
                           const st_sampler_params *sp, const st_submit_extra *x, int *status, char *msg, size_t msglen) {
    size_t nbody = 0;
    void *body = st_msg_submit_pack(prompt, n, x ? x->grammar : NULL, x ? x->bias_ids : NULL, x ? x->bias_vals : NULL,
                                    x ? x->n_bias : 0, &nbody);
    st_req *r = body ? calloc(1, sizeof *r) : NULL;
    if (!r) {
        free(body);
        *status = 500;
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->refs = 2;
    pthread_mutex_lock(&f->mu);
    if (f->state != ST_ENGINE_READY) {
        *status = 503;
        snprintf(msg, msglen, "the engine is not ready (%s)", f->state_reason[0] ? f->state_reason : "loading");
        pthread_mutex_unlock(&f->mu);
        free(r);
        free(body);
        return NULL;
    }
    r->id = ++f->next_id;
    r->next = f->reqs;
    f->reqs = r;
    f->m_requests++;
    int fd = f->fd;
    pthread_mutex_unlock(&f->mu);
    st_msg_submit m;
    memset(&m, 0, sizeof m);
    m.id = r->id;
    m.max_tokens = max_tokens;
    m.ignore_eos = ignore_eos != 0;
    m.n_prompt = n;
    m.sp = *sp;
    m.n_grammar = x && x->grammar ? (int32_t)strlen(x->grammar) : 0;
    m.n_bias = x ? x->n_bias : 0;
    m.want_logprobs = x ? x->want_logprobs : 0;
    m.top_logprobs = x ? x->top_logprobs : 0;
    pthread_mutex_lock(&f->send_mu);
    st_msg_send(fd, ST_MSG_SUBMIT, &m, sizeof m, body, nbody);
    pthread_mutex_unlock(&f->send_mu);
    free(body);
    /* a failed send means the engine died: the reader fails the request */
    return r;
}

void st_front_cancel(st_front *f, st_req *r) {
    pthread_mutex_lock(&f->mu);
    int live = find_req(f, r->id) != NULL;
    int fd = f->fd;
    pthread_mutex_unlock(&f->mu);
    if (!live || fd < 0) return;
    pthread_mutex_lock(&f->send_mu);
    st_msg_send(fd, ST_MSG_CANCEL, &r->id, sizeof r->id, NULL, 0);
    pthread_mutex_unlock(&f->send_mu);
}

void st_front_release(st_front *f, st_req *r) {
    (void)f;
    req_unref(r);
}

int st_front_stats(st_front *f, st_msg_stats *out, int timeout_ms) {
    pthread_mutex_lock(&f->mu);
    if (f->state != ST_ENGINE_READY) {
        pthread_mutex_unlock(&f->mu);
        return -1;
    }
    uint64_t seq = f->stats_seq;
    int fd = f->fd;
    pthread_mutex_unlock(&f->mu);
    pthread_mutex_lock(&f->send_mu);
    int sent = st_msg_send(fd, ST_MSG_STATS_REQ, NULL, 0, NULL, 0);
    pthread_mutex_unlock(&f->send_mu);
    if (sent) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    ts.tv_sec += timeout_ms / 1000 + ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&f->mu);
    while (f->stats_seq == seq && f->state == ST_ENGINE_READY)
        if (pthread_cond_timedwait(&f->cv, &f->mu, &ts)) break;
    int ok = f->stats_seq != seq;
    if (ok) *out = f->stats;
    pthread_mutex_unlock(&f->mu);
    return ok ? 0 : -1;
}

static int load_front(st_front *f) {
    char err[512];
    f->gguf = st_gguf_open(f->cfg.model_path, err, sizeof err);
    if (!f->gguf) {
        fprintf(stderr, "strata serve: %s\n", err);
        return -1;
    }
    f->tok = st_tokenizer_from_gguf(f->gguf, err, sizeof err);
    if (!f->tok) {
        fprintf(stderr, "strata serve: tokenizer of %s: %s\n", f->cfg.model_path, err);
        return -1;
    }
    const char *jinja = NULL;
    if (st_gguf_get_str(f->gguf, "tokenizer.chat_template", &jinja, NULL) != ST_GGUF_OK) jinja = NULL;
    int recognized = 1;
    if (f->cfg.chat_template) {
        int t = st_chat_template_from_name(f->cfg.chat_template);
        if (t < 0) {
            fprintf(stderr, "strata serve: unknown chat template '%s' (chatml, llama3, mistral, deepseek, tulu, plain)\n",
                    f->cfg.chat_template);
            return -1;
        }
        f->tmpl = (st_chat_template)t;
    } else {
        f->tmpl = st_chat_template_detect(jinja, st_tokenizer_find(f->tok, "<|im_start|>", 12) >= 0, &recognized);
        if (!recognized && !f->cfg.chat_template_file)
            fprintf(stderr, "strata serve: WARNING: the model's chat template is %s; using the '%s' template "
                            "(choose another with --chat-template)\n",
                    jinja ? "not one Strata recognizes" : "absent", st_chat_template_name(f->tmpl));
    }
    if (st_front_load_jinja(f, jinja)) return -1;
    f->think = st_tokenizer_find(f->tok, "<think>", 7) >= 0;
    const char *const *ts = st_chat_stop_strings(f->tmpl);
    int n = 0;
    for (; ts[n] && n < 7; n++) f->tmpl_stops[n] = ts[n];
    f->tmpl_stops[n] = NULL;
    const char *base = strrchr(f->cfg.model_path, '/');
    base = base ? base + 1 : f->cfg.model_path;
    snprintf(f->model_id, sizeof f->model_id, "%s", f->cfg.model_id ? f->cfg.model_id : base);
    char *dot = strstr(f->model_id, ".gguf");
    if (dot && !f->cfg.model_id) *dot = 0;
    return 0;
}

int st_serve_run(const st_serve_config *c) {
    st_front *f = calloc(1, sizeof *f);
    if (!f) return 1;
    f->cfg = *c;
    f->fd = -1;
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->send_mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (load_front(f)) return 1;
    if (spawn_engine(f)) {
        fprintf(stderr, "strata serve: cannot start the engine: %s\n", strerror(errno));
        return 1;
    }
    pthread_t reader;
    pthread_create(&reader, NULL, reader_main, f);
    void *http = st_http_start(f);
    if (!http) {
        kill(f->pid, SIGTERM);
        return 1;
    }
    fprintf(stderr,
            "strata serve: model '%s' from %s, chat template %s%s%s%s\n"
            "strata serve: listening on http://%s:%d (API key %s; body <= %zu bytes, JSON depth <= %d, queue <= %d; "
            "stall timeout %g s; reports in %s)\n",
            f->model_id, f->cfg.model_path, f->jinja ? "Jinja from " : "", f->jinja ? f->jinja_origin : "",
            f->jinja ? "" : st_chat_template_name(f->tmpl), f->think ? ", <think> split into reasoning_content" : "",
            f->cfg.host, f->cfg.port, f->cfg.api_key ? "required" : "off", f->cfg.max_body, f->cfg.max_depth,
            f->cfg.queue_max, f->cfg.stall_timeout, report_dir(f));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!g_stop) pause();
    fprintf(stderr, "strata serve: shutting down\n");
    /* requests in flight end with an error (streams: an error event and [DONE]); new ones get
     * 503; the handlers get a moment to write that before the connections close */
    pthread_mutex_lock(&f->mu);
    f->stopping = 1;
    f->state = ST_ENGINE_STOPPED;
    snprintf(f->state_reason, sizeof f->state_reason, "the server is shutting down");
    st_req *list = f->reqs;
    f->reqs = NULL;
    pid_t pid = f->pid;
    pthread_mutex_unlock(&f->mu);
    int n_failed = 0;
    for (st_req *n; list; list = n, n_failed++) {
        n = list->next;
        req_fail(list, 503, "server_shutdown", "the server is shutting down");
        req_unref(list);
    }
    if (n_failed) {
        struct timespec ts = {0, 300000000L};
        nanosleep(&ts, NULL);
    }
    st_http_stop(http);
    kill(pid, SIGTERM);
    pthread_join(reader, NULL);
    if (f->fd >= 0) close(f->fd);
    st_tokenizer_free(f->tok);
    st_jinja_free(f->jinja);
    free(f->stats_text);
    f->stats_text = NULL;
    st_gguf_close(f->gguf);
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->send_mu);
    pthread_cond_destroy(&f->cv);
    free(f);
    return 0;
}
