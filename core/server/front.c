/* SPDX-License-Identifier: Apache-2.0 */
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

#include "arch/arch.h"
#include "platform/platform.h"
#include "template/jinja.h"

void st_serve_config_default(st_serve_config *c) {
    memset(c, 0, sizeof *c);
    c->host = "127.0.0.1";
    c->port = 8080;
    c->parallel = 4;
    c->stall_timeout = 60;
    c->max_body = 1u << 20;
    c->max_buffered = (size_t)64 << 20;
    c->max_connections = 4096;
    c->header_timeout = 10;
    c->body_timeout = 30;
    c->http_threads = 4;
    c->max_depth = 32;
    c->queue_max = 64;
    c->restart_delay = 1.0;
    c->restart_limit = 3;
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

const char *st_front_report_dir(const st_front *f) {
    if (f->cfg.report_dir) return f->cfg.report_dir;
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

void st_front_ring_add(st_front *f, const char *line) {
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

st_req *st_front_find_req(st_front *f, uint64_t id) {
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

void st_req_unref(st_req *r) {
    pthread_mutex_lock(&r->mu);
    int left = --r->refs;
    pthread_mutex_unlock(&r->mu);
    if (left == 0) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r->toks);
        free(r->lps);
        free(r->embd);
        free(r);
    }
}

void st_req_fail(st_req *r, int status, const char *code, const char *msg) {
    pthread_mutex_lock(&r->mu);
    r->failed = 1;
    r->fail_status = status;
    snprintf(r->fail_code, sizeof r->fail_code, "%s", code);
    copy_str(r->fail_msg, sizeof r->fail_msg, msg);
    pthread_cond_broadcast(&r->cv);
    if (r->wake) r->wake(r->wake_arg, 0);
    pthread_mutex_unlock(&r->mu);
}

void st_front_on_event(st_front *f, const st_engine_event *ev, size_t len) {
    pthread_mutex_lock(&f->mu);
    st_req *r = st_front_find_req(f, ev->id);
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
        r->done_ev.embd = NULL; /* the engine's pointer: the vector came after the event */
        size_t ne = ev->n_embd > 0 ? (size_t)ev->n_embd : 0;
        if (ne && len == sizeof *ev + ne * sizeof(float) && (r->embd = malloc(ne * sizeof(float)))) {
            memcpy(r->embd, (const char *)ev + sizeof *ev, ne * sizeof(float));
            r->n_embd = ev->n_embd;
        }
        if (ev->finish == ST_FINISH_ERROR && !strncmp(ev->msg, "grammar: ", 9)) { /* the request's grammar, not the engine */
            r->failed = 1;
            r->fail_status = 400;
            snprintf(r->fail_code, sizeof r->fail_code, "invalid_grammar");
            copy_str(r->fail_msg, sizeof r->fail_msg, ev->msg);
        } else if (ev->finish == ST_FINISH_ERROR) {
            r->failed = 1;
            r->fail_status = 500;
            snprintf(r->fail_code, sizeof r->fail_code, "engine_error");
            snprintf(r->fail_msg, sizeof r->fail_msg, "the engine failed: %s; it is restarted", ev->msg);
        }
    }
    pthread_cond_broadcast(&r->cv);
    if (r->wake) r->wake(r->wake_arg, 0);
    pthread_mutex_unlock(&r->mu);
    if (ev->kind == ST_EV_DONE) st_req_unref(r); /* the registry's reference */
}

void st_front_wake_all(st_front *f) {
    pthread_mutex_lock(&f->mu);
    for (st_req *r = f->reqs; r; r = r->next) {
        pthread_mutex_lock(&r->mu);
        if (r->wake) r->wake(r->wake_arg, 1);
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&f->mu);
}

/* Send one frame to the current engine under send_mu (the fd cannot be closed meanwhile).
 * With try set, gives up at once when another thread is sending (it may be blocked on a
 * frozen engine). Returns 0, or -1 when there is no engine or the send failed. */
static int send_frame(st_front *f, int try, uint32_t type, const void *a, size_t na, const void *b, size_t nb) {
    if (try ? pthread_mutex_trylock(&f->send_mu) : pthread_mutex_lock(&f->send_mu)) return -1;
    pthread_mutex_lock(&f->mu);
    int fd = f->fd;
    pthread_mutex_unlock(&f->mu);
    int rc = fd >= 0 ? st_msg_send(fd, type, a, na, b, nb) : -1;
    pthread_mutex_unlock(&f->send_mu);
    return rc;
}

/* A request with its lock and condition initialized, or NULL. */
static st_req *req_new(void) {
    st_req *r = calloc(1, sizeof *r);
    if (!r || pthread_mutex_init(&r->mu, NULL)) {
        free(r);
        return NULL;
    }
    if (pthread_cond_init(&r->cv, NULL)) {
        pthread_mutex_destroy(&r->mu);
        free(r);
        return NULL;
    }
    return r;
}

st_req *st_front_submit(st_front *f, const int32_t *prompt, int32_t n, int32_t max_tokens, int ignore_eos,
                        const st_sampler_params *sp, int *status, char *msg, size_t msglen) {
    return st_front_submit_ex(f, prompt, n, max_tokens, ignore_eos, sp, NULL, status, msg, msglen);
}

st_req *st_front_submit_ex(st_front *f, const int32_t *prompt, int32_t n, int32_t max_tokens, int ignore_eos,
                           const st_sampler_params *sp, const st_submit_extra *x, int *status, char *msg, size_t msglen) {
    size_t nbody = 0; /* tokens, grammar, biases: server/proto_submit.c */
    void *body = st_msg_submit_pack(prompt, n, x ? x->grammar : NULL, x ? x->bias_ids : NULL, x ? x->bias_vals : NULL,
                                    x ? x->n_bias : 0, &nbody);
    st_req *r = body ? req_new() : NULL;
    if (!r) {
        free(body);
        *status = 500;
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    r->refs = 2;
    r->sp = *sp;
    r->n_prompt = n;
    r->max_tokens = max_tokens;
    pthread_mutex_lock(&f->mu);
    int32_t n_vocab = f->ready.n_vocab, bad = -1;
    for (int32_t i = 0; f->state == ST_ENGINE_READY && n_vocab > 0 && i < n && bad < 0; i++)
        if (prompt[i] < 0 || prompt[i] >= n_vocab) bad = i;
    if (f->state != ST_ENGINE_READY || bad >= 0) {
        if (bad >= 0) {
            *status = 400;
            snprintf(msg, msglen, "prompt token %d (at %d) is outside the model's vocabulary (%d tokens)", prompt[bad],
                     bad, n_vocab);
        } else {
            *status = 503;
            snprintf(msg, msglen, "the engine is not ready (%s)", f->state_reason[0] ? f->state_reason : "loading");
        }
        pthread_mutex_unlock(&f->mu);
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        free(body);
        return NULL;
    }
    r->id = ++f->next_id;
    r->next = f->reqs;
    f->reqs = r;
    f->m_requests++;
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
    m.pooling = x ? x->pooling : 0;
    /* a failed send means the engine died: the reader fails the request */
    send_frame(f, 0, ST_MSG_SUBMIT, &m, sizeof m, body, nbody);
    free(body);
    return r;
}

void st_front_cancel(st_front *f, st_req *r) {
    pthread_mutex_lock(&f->mu);
    int live = st_front_find_req(f, r->id) != NULL;
    pthread_mutex_unlock(&f->mu);
    if (live) send_frame(f, 0, ST_MSG_CANCEL, &r->id, sizeof r->id, NULL, 0);
}

void st_front_release(st_front *f, st_req *r) {
    (void)f;
    st_req_unref(r);
}

int st_front_stats(st_front *f, st_msg_stats *out, int timeout_ms) {
    pthread_mutex_lock(&f->mu);
    if (f->state != ST_ENGINE_READY) {
        pthread_mutex_unlock(&f->mu);
        return -1;
    }
    uint64_t seq = f->stats_seq;
    pthread_mutex_unlock(&f->mu);
    if (send_frame(f, 1, ST_MSG_STATS_REQ, NULL, 0, NULL, 0)) return -1;
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
    /* the model's contents (hyperparameters, tensors) are checked here, before listening: an
     * engine could never load a model that fails this, and would be restarted for nothing */
    st_model_desc *d = st_arch_describe(f->gguf, err, sizeof err);
    if (!d) {
        fprintf(stderr, "strata serve: %s: %s\n", f->cfg.model_path, err);
        return -1;
    }
    int32_t rows = d->hp.n_vocab;
    st_model_desc_free(d);
    uint32_t nt = st_tokenizer_vocab_size(f->tok);
    if (rows <= 0) {
        fprintf(stderr, "strata serve: %s: the token embedding has no rows\n", f->cfg.model_path);
        return -1;
    }
    if (nt > (uint32_t)rows)
        fprintf(stderr, "strata serve: WARNING: the tokenizer of %s has %u tokens but the token embedding only %d rows: "
                        "a prompt with a token id >= %d is refused (400)\n",
                f->cfg.model_path, nt, rows, rows);
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

/* The report directory: its length bounded once for every buffer that holds a report's path
 * (front, engine, crash handler), and a warning when reports cannot be written there. */
#define ST_REPORT_DIR_MAX 400
static int check_report_dir(const st_front *f) {
    const char *dir = st_front_report_dir(f);
    if (strlen(dir) > ST_REPORT_DIR_MAX) {
        fprintf(stderr, "strata serve: --report-dir is %zu bytes long; at most %d\n", strlen(dir), ST_REPORT_DIR_MAX);
        return -1;
    }
    char probe[ST_REPORT_DIR_MAX + 32];
    snprintf(probe, sizeof probe, "%s/strata-probe-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        fprintf(stderr, "strata serve: WARNING: reports cannot be written to %s (%s): crash and stall reports will "
                        "be missing (choose another with --report-dir)\n", dir, strerror(errno));
        return 0;
    }
    close(fd);
    unlink(probe);
    return 0;
}

static void front_free(st_front *f) {
    if (f->fd >= 0) close(f->fd);
    st_tokenizer_free(f->tok);
    st_jinja_free(f->jinja);
    st_tls_free(f);
    free(f->stats_text);
    st_gguf_close(f->gguf);
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->send_mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}

static void print_listening(const st_front *f) {
    fprintf(stderr,
            "strata serve: model '%s' from %s, chat template %s%s%s%s\n"
            "strata serve: listening on %s://%s:%d (API key %s; body <= %zu bytes, JSON depth <= %d, queue <= %d; "
            "stall timeout %g s; reports in %s)\n",
            f->model_id, f->cfg.model_path, f->jinja ? "Jinja from " : "", f->jinja ? f->jinja_origin : "",
            f->jinja ? "" : st_chat_template_name(f->tmpl), f->think ? ", <think> split into reasoning_content" : "",
            f->tls_key ? "https" : "http", f->listen_host, f->cfg.port, f->cfg.api_key ? "required" : "off", f->cfg.max_body, f->cfg.max_depth,
            f->cfg.queue_max, f->cfg.stall_timeout, st_front_report_dir(f));
}

/* Requests in flight end with an error (streams: an error event and [DONE]); new ones get
 * 503; the handlers get a moment to write that before the connections close. */
static void fail_all(st_front *f) {
    pthread_mutex_lock(&f->mu);
    f->state = ST_ENGINE_STOPPED;
    snprintf(f->state_reason, sizeof f->state_reason, "the server is shutting down");
    st_req *list = f->reqs;
    f->reqs = NULL;
    pthread_mutex_unlock(&f->mu);
    int n_failed = 0;
    for (st_req *n; list; list = n, n_failed++) {
        n = list->next;
        st_req_fail(list, 503, "server_shutdown", "the server is shutting down");
        st_req_unref(list);
    }
    if (n_failed) {
        struct timespec ts = {0, 300000000L};
        nanosleep(&ts, NULL);
    }
}

int st_serve_run(const st_serve_config *c) {
    /* SIGTERM and SIGINT end the server at any point from here on */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    st_front *f = calloc(1, sizeof *f);
    if (!f) return 1;
    f->cfg = *c;
    f->fd = -1;
    if (f->cfg.restart_limit < 1) f->cfg.restart_limit = 3;
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->send_mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    int rc = 1;
    void *http = NULL;
    pthread_t reader;
    if (check_report_dir(f) || st_tls_load(f) || load_front(f)) goto fail;
    if (st_engine_spawn(f)) {
        fprintf(stderr, "strata serve: cannot start the engine: %s\n", strerror(errno));
        goto fail;
    }
    if (pthread_create(&reader, NULL, st_engine_reader, f)) {
        fprintf(stderr, "strata serve: cannot create a thread: %s\n", strerror(errno));
        pthread_mutex_lock(&f->mu);
        if (f->pid > 0) kill(f->pid, SIGKILL);
        pthread_mutex_unlock(&f->mu);
        goto fail;
    }
    http = st_http_start(f);
    if (http) print_listening(f);
    int fatal = 0;
    while (http && !g_stop && !fatal) {
        struct timespec ts = {0, 50000000L}; /* a signal ends the wait early */
        nanosleep(&ts, NULL);
        st_engine_watch(f);
        st_front_wake_all(f); /* generations look at their clients */
        st_http_tick(http);
        pthread_mutex_lock(&f->mu);
        fatal = f->fatal;
        pthread_mutex_unlock(&f->mu);
    }
    if (fatal) fprintf(stderr, "strata serve: cannot serve %s: %s\n", f->cfg.model_path, f->fatal_msg);
    else if (http) fprintf(stderr, "strata serve: shutting down\n");
    fail_all(f);
    if (http) st_http_stop(http);
    st_engine_shutdown(f, reader);
    rc = http && !fatal ? 0 : 1;
fail:
    front_free(f);
    return rc;
}
