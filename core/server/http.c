/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP front: the connection layer (libmicrohttpd), routes, limits, authentication, /health,
 * /v1/models and /metrics. The generation endpoints are in http_gen.c.
 *
 * Event-driven: a few threads (libmicrohttpd's epoll mode with a thread pool) serve every
 * connection, so idle, keep-alive and slow connections cost memory, not threads, and never
 * keep /health or a new request waiting. Limits, each a flag:
 *  - connections: --max-connections in all (raised fd limit), --max-conn-per-ip per address;
 *  - headers: a request's headers must be complete within --header-timeout of the
 *    connection's start or of the previous answer on it (slow headers and idle keep-alive
 *    alike); with fewer than a reserve of free connections left, that deadline drops to 1 s;
 *  - bodies: --body-timeout without a byte; --max-body each; --max-buffered for all bodies
 *    held at once (a body past it is dropped and answered 503);
 *  - the API key is checked on the headers, before any body byte is kept. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "platform/platform.h"
#include "server/agent.h"
#include "server/agent_routes.h"
#include "server/http_internal.h"

/* Bodies over --max-body up to this size are read and dropped before the 413 (see on_headers). */
#define ST_HTTP_DRAIN_MAX (64ull << 20)

enum { R_NONE = 0, R_CHAT, R_CMPL, R_HEALTH, R_MODELS, R_METRICS, R_RESP, R_AGENT };

/* The server this process runs (one per process): for Retry-After. */
static st_front *g_front;
/* Bytes of request bodies held now, all connections together. */
static atomic_size_t g_buffered;
/* Connections that ended because their client went away (the library's messages about them). */
static atomic_ulong g_client_closures;

void st_http_keep_alive_header(struct MHD_Response *r) {
    if (!g_front) return;
    char v[32];
    snprintf(v, sizeof v, "timeout=%d", (int)g_front->cfg.header_timeout > 1 ? (int)g_front->cfg.header_timeout : 1);
    MHD_add_response_header(r, "Keep-Alive", v);
}

enum MHD_Result st_http_send(struct MHD_Connection *c, int status, const char *type, const char *body,
                             const char *hname, const char *hval) {
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    st_agent_cors_headers(c, r); /* --cors (server/agent_routes.c) */
    MHD_add_response_header(r, "Content-Type", type);
    if (hname && hval) MHD_add_response_header(r, hname, hval);
    st_http_keep_alive_header(r);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result st_http_send_json(struct MHD_Connection *c, int status, cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    enum MHD_Result ok = s ? st_http_send(c, status, "application/json", s, NULL, NULL)
                           : st_http_fail(c, 500, "server_error", NULL, NULL, "out of memory");
    free(s);
    return ok;
}

/* Retry-After: on 503, when the engine should be back (the restart's back-off plus its last
 * load time; none when it will not come back by itself); on 429, 1 s. */
enum MHD_Result st_http_send_error(struct MHD_Connection *c, const st_oai_error *e) {
    char *j = st_oai_error_json(e);
    char ra[16] = "";
    int secs = e->status == 503 && g_front ? st_front_retry_after(g_front) : e->status == 429 ? 1 : 0;
    if (secs > 0) snprintf(ra, sizeof ra, "%d", secs);
    enum MHD_Result ok = st_http_send(c, e->status, "application/json", j ? j : "{}", ra[0] ? "Retry-After" : NULL, ra);
    free(j);
    return ok;
}

enum MHD_Result st_http_fail(struct MHD_Connection *c, int status, const char *type, const char *code,
                             const char *param, const char *msg) {
    st_oai_error e;
    st_oai_error_set(&e, status, type, code, param, "%s", msg);
    return st_http_send_error(c, &e);
}

void st_http_body_release(conn_state *cs) {
    if (cs->cap) atomic_fetch_sub(&g_buffered, cs->cap);
    free(cs->body);
    cs->body = NULL;
    cs->n = cs->cap = 0;
}

/* ---- connections and their header deadline ------------------------------------------- */
typedef struct conn_track {
    int fd;
    int waiting;    /* for a request's headers: since `since` */
    int cut;        /* shut down for missing the deadline */
    uint64_t since;
    struct conn_track *prev, *next;
} conn_track;

static pthread_mutex_t g_conn_mu = PTHREAD_MUTEX_INITIALIZER;
static conn_track *g_conns;
static int g_n_conns;
static uint64_t g_cut_total;

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    (void)cls;
    conn_track *t = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        t = ci ? calloc(1, sizeof *t) : NULL;
        if (!t) return; /* untracked: only the inactivity timeout applies */
        t->fd = ci->connect_fd;
        t->waiting = 1;
        t->since = st_now_ns();
        pthread_mutex_lock(&g_conn_mu);
        t->next = g_conns;
        if (g_conns) g_conns->prev = t;
        g_conns = t;
        g_n_conns++;
        pthread_mutex_unlock(&g_conn_mu);
        *socket_context = t;
    } else if (t) {
        pthread_mutex_lock(&g_conn_mu);
        if (t->prev) t->prev->next = t->next;
        else g_conns = t->next;
        if (t->next) t->next->prev = t->prev;
        g_n_conns--;
        pthread_mutex_unlock(&g_conn_mu);
        free(t);
        *socket_context = NULL;
    }
}

static void track_waiting(struct MHD_Connection *c, int waiting) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_track *t = ci ? ci->socket_context : NULL;
    if (!t) return;
    pthread_mutex_lock(&g_conn_mu);
    t->waiting = waiting;
    t->since = st_now_ns();
    pthread_mutex_unlock(&g_conn_mu);
}

/* Shuts down (the library closes them) connections past their header deadline. */
void st_http_tick(void *daemon) {
    (void)daemon;
    st_front *f = g_front;
    if (!f) return;
    pthread_mutex_lock(&g_conn_mu);
    uint64_t now = st_now_ns(); /* under the lock: no connection registered later than it */
    int reserve = f->cfg.max_connections / 8 > 64 ? 64 : f->cfg.max_connections / 8;
    double limit = g_n_conns > f->cfg.max_connections - reserve ? 1.0 : f->cfg.header_timeout;
    for (conn_track *t = g_conns; t; t = t->next)
        if (t->waiting && !t->cut && now > t->since && (double)(now - t->since) / 1e9 > limit) {
            shutdown(t->fd, SHUT_RDWR);
            t->cut = 1;
            g_cut_total++;
        }
    pthread_mutex_unlock(&g_conn_mu);
}


/* ---- authentication ------------------------------------------------------------------ */
/* "Bearer <key>" (the scheme in any case), compared in time that does not depend on where the
 * given key differs from the server's. */
static int key_ok(const char *auth, const char *key) {
    if (!auth || strncasecmp(auth, "bearer ", 7)) return 0;
    const char *k = auth + 7;
    while (*k == ' ') k++;
    size_t lk = strlen(k), lw = strlen(key);
    unsigned char d = lk != lw;
    for (size_t i = 0; i < lw; i++) d |= (unsigned char)(key[i] ^ (i < lk ? k[i] : 0));
    return d == 0;
}

/* ---- small routes -------------------------------------------------------------------- */
static enum MHD_Result handle_health(st_front *f, struct MHD_Connection *c) {
    st_msg_stats s;
    int fresh = st_front_stats(f, &s, 200) == 0, up = st_front_engine_up(f);
    pthread_mutex_lock(&f->mu);
    if (!fresh) s = f->stats;
    int state = f->state;
    char reason[1200];
    snprintf(reason, sizeof reason, "%s", state == ST_ENGINE_STARTING ? "loading the model"
                                          : f->state_reason[0]    ? f->state_reason
                                                                  : "the engine is not answering");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddNumberToObject(o, "engine_pid", (double)f->pid);
    cJSON_AddNumberToObject(o, "slots_busy", s.engine.slots_busy);
    cJSON_AddNumberToObject(o, "slots_total", f->ready.n_slots);
    cJSON_AddNumberToObject(o, "queue_length", s.engine.queue_len);
    cJSON_AddNumberToObject(o, "engine_restarts", (double)f->m_restarts);
    if (!fresh) cJSON_AddBoolToObject(o, "busy", 1);
    pthread_mutex_unlock(&f->mu);
    char *body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    enum MHD_Result ok = up && body ? st_http_send(c, 200, "application/json", body, NULL, NULL)
                                    : st_http_fail(c, 503, "server_error", "engine_unavailable", NULL, reason);
    free(body);
    return ok;
}

static enum MHD_Result handle_models(st_front *f, struct MHD_Connection *c) {
    cJSON *o = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(o, "data"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddItemToArray(data, m);
    char id[sizeof f->model_id * 3];
    st_oai_utf8_clean(f->model_id, strlen(f->model_id), id, sizeof id);
    cJSON_AddStringToObject(m, "id", id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", 0);
    cJSON_AddStringToObject(m, "owned_by", "strata");
    char *body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    enum MHD_Result ok = body ? st_http_send(c, 200, "application/json", body, NULL, NULL) : MHD_NO;
    free(body);
    return ok;
}

static enum MHD_Result handle_metrics(st_front *f, struct MHD_Connection *c) {
    st_msg_stats s;
    memset(&s, 0, sizeof s);
    /* the engine answers between steps; inside a long one, the last answer is shown */
    int have = st_front_stats(f, &s, 500) == 0, up = st_front_engine_up(f);
    pthread_mutex_lock(&f->mu);
    if (!have) s = f->stats;
    char body[8192];
    double tps = f->m_gen_seconds > 0 ? (double)f->m_gen_tokens / f->m_gen_seconds : 0;
    snprintf(body, sizeof body,
             "# TYPE strata_requests_total counter\nstrata_requests_total %llu\n"
             "# TYPE strata_prompt_tokens_total counter\nstrata_prompt_tokens_total %llu\n"
             "# TYPE strata_prompt_tokens_cached_total counter\nstrata_prompt_tokens_cached_total %llu\n"
             "# TYPE strata_generated_tokens_total counter\nstrata_generated_tokens_total %llu\n"
             "# TYPE strata_decode_tokens_per_second gauge\nstrata_decode_tokens_per_second %.3f\n"
             "# TYPE strata_engine_restarts_total counter\nstrata_engine_restarts_total %llu\n"
             "# TYPE strata_engine_up gauge\nstrata_engine_up %d\n"
             "# HELP strata_engine_stats_fresh 0 when the engine was inside a step and the engine figures are its last answer\n"
             "# TYPE strata_engine_stats_fresh gauge\nstrata_engine_stats_fresh %d\n"
             "# TYPE strata_slots_busy gauge\nstrata_slots_busy %d\n"
             "# TYPE strata_slots_total gauge\nstrata_slots_total %d\n"
             "# TYPE strata_queue_length gauge\nstrata_queue_length %d\n"
             "# TYPE strata_engine_steps_total counter\nstrata_engine_steps_total %llu\n"
             "# HELP strata_engine_max_slots_in_step most requests that shared one forward step\n"
             "# TYPE strata_engine_max_slots_in_step gauge\nstrata_engine_max_slots_in_step %llu\n"
             "# TYPE strata_engine_prefill_tokens_total counter\nstrata_engine_prefill_tokens_total %llu\n"
             "# TYPE strata_engine_decode_tokens_total counter\nstrata_engine_decode_tokens_total %llu\n"
             "# TYPE strata_engine_reused_tokens_total counter\nstrata_engine_reused_tokens_total %llu\n"
             "# TYPE strata_engine_pid gauge\nstrata_engine_pid %d\n"
             "# TYPE strata_kv_cells_used gauge\nstrata_kv_cells_used %lld\n"
             "# TYPE strata_kv_cells_total gauge\nstrata_kv_cells_total %lld\n",
             (unsigned long long)f->m_requests, (unsigned long long)f->m_prompt_tokens,
             (unsigned long long)f->m_cached_tokens, (unsigned long long)f->m_gen_tokens, tps,
             (unsigned long long)f->m_restarts, up, have, s.engine.slots_busy,
             f->ready.n_slots, s.engine.queue_len, (unsigned long long)s.engine.steps,
             (unsigned long long)s.engine.max_slots_in_step, (unsigned long long)s.engine.tokens_prefill,
             (unsigned long long)s.engine.tokens_decode, (unsigned long long)s.engine.tokens_reused,
             f->state == ST_ENGINE_READY ? (int)f->pid : 0,
             (long long)(s.kv_cells_total - s.kv_cells_free), (long long)s.kv_cells_total);
    pthread_mutex_unlock(&f->mu);
    /* where the engine's time goes, and decode-only steps by their number of rows (the
     * continuous-batching gain is rows / mean step time) */
    size_t l = strlen(body);
    l += (size_t)snprintf(body + l, sizeof body - l,
                          "# TYPE strata_engine_forward_seconds_total counter\nstrata_engine_forward_seconds_total %.6f\n"
                          "# TYPE strata_engine_sample_seconds_total counter\nstrata_engine_sample_seconds_total %.6f\n"
                          "# TYPE strata_engine_decode_step_seconds summary\n",
                          s.engine.forward_s, s.engine.sample_s);
    for (int k = 1; k < ST_ENGINE_HIST && l < sizeof body; k++) {
        if (!s.engine.decode_steps[k]) continue;
        char rows[8];
        snprintf(rows, sizeof rows, k == ST_ENGINE_HIST - 1 ? "%d+" : "%d", k);
        l += (size_t)snprintf(body + l, sizeof body - l,
                              "strata_engine_decode_step_seconds_sum{rows=\"%s\"} %.6f\n"
                              "strata_engine_decode_step_seconds_count{rows=\"%s\"} %llu\n",
                              rows, s.engine.decode_step_s[k], rows, (unsigned long long)s.engine.decode_steps[k]);
    }
    /* the connection layer's own figures */
    pthread_mutex_lock(&g_conn_mu);
    l = strlen(body);
    snprintf(body + l, sizeof body - l,
             "# TYPE strata_http_connections gauge\nstrata_http_connections %d\n"
             "# HELP strata_http_connections_cut_total connections closed for missing their header deadline\n"
             "# TYPE strata_http_connections_cut_total counter\nstrata_http_connections_cut_total %llu\n"
             "# TYPE strata_http_buffered_bytes gauge\nstrata_http_buffered_bytes %zu\n"
             "# HELP strata_http_client_closures_total connections that ended because their client went away\n"
             "# TYPE strata_http_client_closures_total counter\nstrata_http_client_closures_total %lu\n",
             g_n_conns, (unsigned long long)g_cut_total, (size_t)atomic_load(&g_buffered),
             (unsigned long)atomic_load(&g_client_closures));
    pthread_mutex_unlock(&g_conn_mu);
    /* the engine's memory plan and expert cache lines, as it sent them */
    pthread_mutex_lock(&f->mu);
    char *full = f->stats_text ? malloc(strlen(body) + strlen(f->stats_text) + 1) : NULL;
    if (full) {
        strcpy(full, body);
        strcat(full, f->stats_text);
    }
    pthread_mutex_unlock(&f->mu);
    enum MHD_Result ok = st_http_send(c, 200, "text/plain; version=0.0.4", full ? full : body, NULL, NULL);
    free(full);
    return ok;
}

/* ---- requests ------------------------------------------------------------------------ */
static int route_of(const char *url) {
    if (!strcmp(url, "/v1/chat/completions")) return R_CHAT;
    if (!strcmp(url, "/v1/completions")) return R_CMPL;
    if (!strcmp(url, "/health")) return R_HEALTH;
    if (!strcmp(url, "/v1/models")) return R_MODELS;
    if (!strcmp(url, "/metrics")) return R_METRICS;
    if (!strcmp(url, "/v1/responses")) return R_RESP;
    if (st_agent_is_route(url)) return R_AGENT; /* /apply-template, /tokenize, ... (server/agent_routes.c) */
    return R_NONE;
}

/* The headers are complete: everything that can be refused without the body is refused now,
 * so no body byte is kept for it. */
static enum MHD_Result on_headers(st_front *f, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, void **con_cls) {
    conn_state *cs = calloc(1, sizeof *cs);
    if (!cs) return MHD_NO;
    cs->fd = -1;
    *con_cls = cs;
    cs->http10 = version && !strcmp(version, MHD_HTTP_VERSION_1_0);
    track_waiting(c, 0);
    enum MHD_Result pre;
    if (st_agent_preflight(c, method, &pre)) return pre; /* CORS preflight (--cors) */
    cs->route = route_of(url);
    int gen = cs->route == R_CHAT || cs->route == R_CMPL || cs->route == R_RESP;
    if (cs->route == R_AGENT) { /* its methods are checked by the route itself */
        snprintf(cs->url, sizeof cs->url, "%s", url);
        gen = !strcmp(method, "POST");
    }
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    char m[300];
    if (cs->route == R_NONE) {
        snprintf(m, sizeof m, "no route %.40s %.200s", method, url);
        char clean[sizeof m * 3];
        st_oai_utf8_clean(m, strlen(m), clean, sizeof clean);
        return st_http_fail(c, 404, "invalid_request_error", "not_found", NULL, clean);
    }
    if (cs->route != R_AGENT && (gen ? strcmp(method, "POST") : !get)) {
        st_oai_error e;
        st_oai_error_set(&e, 405, "invalid_request_error", "method_not_allowed", NULL, "%s takes %s", url,
                         gen ? "POST" : "GET or HEAD");
        char *j = st_oai_error_json(&e);
        enum MHD_Result ok = st_http_send(c, 405, "application/json", j ? j : "{}", "Allow", gen ? "POST" : "GET, HEAD");
        free(j);
        return ok;
    }
    /* /health needs no key; the API and the utility routes do, and so do /metrics and /slots
     * unless --metrics-auth open */
    int open = cs->route == R_HEALTH || (f->cfg.metrics_open && (cs->route == R_METRICS || !strcmp(url, "/slots")));
    if (f->cfg.api_key && !open && (cs->route == R_AGENT || cs->route == R_METRICS || !strncmp(url, "/v1/", 4)) &&
        !key_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"), f->cfg.api_key))
        return st_http_fail(c, 401, "invalid_request_error", "invalid_api_key", NULL,
                            "Incorrect API key provided (send 'Authorization: Bearer <key>')");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > f->cfg.max_body) {
        /* a body of a reasonable size is read and dropped, then answered (on_complete): an answer
         * sent while the client still sends would be lost to the reset that closing a socket with
         * unread data causes; a larger one is answered at once */
        if (strtoull(cl, NULL, 10) <= ST_HTTP_DRAIN_MAX) {
            cs->too_big = 1;
            return MHD_YES;
        }
        snprintf(m, sizeof m, "the request body is larger than %zu bytes", f->cfg.max_body);
        return st_http_fail(c, 413, "invalid_request_error", "request_too_large", NULL, m);
    }
    if (cl && gen) { /* the exact size, at once: no growth, no slack */
        size_t want = (size_t)strtoull(cl, NULL, 10) + 1;
        if (atomic_fetch_add(&g_buffered, want) + want > f->cfg.max_buffered) {
            atomic_fetch_sub(&g_buffered, want);
            cs->over_cap = 1;
        } else if (!(cs->body = malloc(want))) {
            atomic_fetch_sub(&g_buffered, want);
            return MHD_NO;
        } else {
            cs->cap = want;
        }
    }
    return MHD_YES;
}

/* A piece of the body: kept when it fits both limits, dropped (and answered at the end) else. */
static enum MHD_Result on_body(st_front *f, conn_state *cs, const char *data, size_t *size) {
    size_t add = *size;
    *size = 0;
    if (cs->too_big || cs->over_cap || (cs->route != R_CHAT && cs->route != R_CMPL && cs->route != R_RESP && cs->route != R_AGENT))
        return MHD_YES;
    if (cs->n + add > f->cfg.max_body) {
        cs->too_big = 1;
        st_http_body_release(cs);
        return MHD_YES;
    }
    if (cs->n + add + 1 > cs->cap) {
        size_t cap = cs->cap * 2 > cs->n + add + 1 ? cs->cap * 2 : cs->n + add + 1;
        if (cap > f->cfg.max_body + 1) cap = f->cfg.max_body + 1;
        size_t grow = cap - cs->cap;
        char *p = NULL;
        if (atomic_fetch_add(&g_buffered, grow) + grow > f->cfg.max_buffered || !(p = realloc(cs->body, cap))) {
            atomic_fetch_sub(&g_buffered, grow);
            cs->over_cap = 1;
            st_http_body_release(cs);
            return MHD_YES;
        }
        cs->body = p;
        cs->cap = cap;
    }
    memcpy(cs->body + cs->n, data, add);
    cs->n += add;
    cs->body[cs->n] = 0;
    return MHD_YES;
}

static enum MHD_Result on_complete(st_front *f, struct MHD_Connection *c, conn_state *cs) {
    if (cs->too_big) {
        char m[128];
        snprintf(m, sizeof m, "the request body is larger than %zu bytes", f->cfg.max_body);
        return st_http_fail(c, 413, "invalid_request_error", "request_too_large", NULL, m);
    }
    if (cs->over_cap)
        return st_http_fail(c, 503, "server_error", "server_busy", NULL,
                            "the server holds too many request bodies now (--max-buffered); retry");
    switch (cs->route) {
    case R_AGENT: {
        enum MHD_Result r;
        if (!strcmp(cs->url, "/v1/embeddings")) return st_agent_embeddings(f, c, cs); /* server/agent_embed.c */
        st_agent_route(f, c, cs->url, cs->body ? "POST" : "GET", cs->body ? cs->body : "", cs->n, &r);
        return r;
    }
    case R_RESP: { /* the Responses API as a chat request (server/agent_responses.c) */
        st_oai_error e;
        char *chat = st_responses_to_chat(cs->body ? cs->body : "", cs->n, &e);
        st_http_body_release(cs);
        if (!chat) return st_http_send_error(c, &e);
        cs->body = chat; /* not counted in the buffered bytes (cap 0): the release only frees it */
        cs->n = strlen(chat);
        cs->responses = 1;
        return st_http_gen_start(f, c, cs, 1);
    }
    case R_CHAT:
    case R_CMPL:
        if ((cs->n_choices = st_agent_peek_n(cs->body ? cs->body : "", cs->n)) > 1) { /* server/agent_choices.c */
            cs->choices_body = malloc(cs->n + 1);
            if (!cs->choices_body) return st_http_fail(c, 500, "server_error", NULL, NULL, "out of memory");
            memcpy(cs->choices_body, cs->body, cs->n);
            cs->choices_n = cs->n;
        }
        return st_http_gen_start(f, c, cs, cs->route == R_CHAT);
    case R_HEALTH: return handle_health(f, c);
    case R_MODELS: return handle_models(f, c);
    default: return handle_metrics(f, c);
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    st_front *f = cls;
    conn_state *cs = *con_cls;
    if (!cs) return on_headers(f, c, url, method, version, con_cls);
    if (*upload_size) return on_body(f, cs, upload, upload_size);
    if (cs->g) return st_http_gen_continue(f, c, cs);
    if (cs->embed) return st_agent_embed_continue(f, c, cs);
    return on_complete(f, c, cs);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode code) {
    (void)cls;
    conn_state *cs = *con_cls;
    /* ended before its answer: a client that only half-closed still gets it (http_gen.c) */
    if (cs && !(code != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN && st_http_detach(cs) == 0)) st_http_cs_free(cs);
    *con_cls = NULL;
    track_waiting(c, 1); /* keep-alive: the next request's headers have a deadline */
}

void st_http_cs_free(conn_state *cs) {
    st_http_gen_free(cs->g); /* a client that went away before its answer */
    st_agent_embed_free(cs->embed);
    st_http_body_release(cs);
    free(cs->choices_body);
    for (int i = 0; i < 16; i++) free(cs->choice_json[i]);
    if (cs->fd >= 0) close(cs->fd);
    free(cs);
}

/* The library's messages: those about clients that went away (a cancelled stream, a closed
 * socket) are counted in /metrics, not printed; the rest get the server's prefix. */
static void http_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    static const char *const benign[] = {"Closing connection (application error", "Connection socket is closed when reading",
                                         "forcibly closed by remote peer", "closed by remote side", "Connection reset"};
    for (size_t i = 0; i < sizeof benign / sizeof benign[0]; i++)
        if (strstr(line, benign[i])) {
            atomic_fetch_add(&g_client_closures, 1);
            return;
        }
    size_t l = strcspn(line, "\n");
    fprintf(stderr, "strata serve: http: %.*s\n", (int)l, line);
}

/* Connections need file descriptors: the soft limit goes up to the hard one. */
static int fit_fd_limit(st_front *f) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) return f->cfg.max_connections;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    long room = (long)rl.rlim_cur - 64;
    if (room < f->cfg.max_connections) {
        fprintf(stderr, "strata serve: WARNING: the fd limit (%ld) allows %ld connections, not %d (--max-connections)\n",
                (long)rl.rlim_cur, room, f->cfg.max_connections);
        f->cfg.max_connections = room > 16 ? (int)room : 16;
    }
    return f->cfg.max_connections;
}

/* --host: an IPv4 or IPv6 address ([brackets] allowed) or a name. A name listens on its first
 * IPv4 address when it has one (clients of "localhost" reach 127.0.0.1 whatever order their
 * resolver gives), else on its first IPv6 one. Fills f->listen_host ("[::1]" for IPv6); the
 * daemon flags the family needs (IPv6; dual stack for "::", which takes IPv4 clients too). */
static int listen_addr(st_front *f, struct sockaddr_storage *ss, unsigned *flags) {
    char h[256];
    const char *host = f->cfg.host;
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') snprintf(h, sizeof h, "%.*s", (int)(n - 2), host + 1);
    else snprintf(h, sizeof h, "%s", host);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL, *pick = NULL;
    int rc = getaddrinfo(h, NULL, &hints, &res);
    if (rc) {
        fprintf(stderr, "strata serve: --host '%s' is not an address or a name this machine resolves (%s)\n", host, gai_strerror(rc));
        return -1;
    }
    for (struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET ? !pick || pick->ai_family != AF_INET : a->ai_family == AF_INET6 && !pick) pick = a;
    if (pick) memcpy(ss, pick->ai_addr, pick->ai_addrlen);
    freeaddrinfo(res);
    if (!pick) {
        fprintf(stderr, "strata serve: --host '%s' has no IPv4 or IPv6 address\n", host);
        return -1;
    }
    char text[INET6_ADDRSTRLEN];
    if (ss->ss_family == AF_INET) {
        struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
        a4->sin_port = htons((uint16_t)f->cfg.port);
        inet_ntop(AF_INET, &a4->sin_addr, text, sizeof text);
        snprintf(f->listen_host, sizeof f->listen_host, "%s", text);
        return 0;
    }
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    a6->sin6_port = htons((uint16_t)f->cfg.port);
    inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof text);
    snprintf(f->listen_host, sizeof f->listen_host, "[%s]", text);
    *flags |= IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr) ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    return 0;
}

void *st_http_start(st_front *f) {
    g_front = f;
    st_agent_cors_set(f->cfg.cors);
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (listen_addr(f, &addr, &flags)) return NULL;
    unsigned limit = (unsigned)fit_fd_limit(f);
    /* TLS (server/tls.c read the PEM texts): GnuTLS inside libmicrohttpd */
    struct MHD_OptionItem tls[] = {{MHD_OPTION_HTTPS_MEM_KEY, 0, f->tls_key},
                                   {MHD_OPTION_HTTPS_MEM_CERT, 0, f->tls_cert},
                                   {MHD_OPTION_END, 0, NULL}};
    if (f->tls_key) flags |= MHD_USE_TLS;
    else tls[0].option = MHD_OPTION_END;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)f->cfg.port, NULL, NULL, on_request, f, MHD_OPTION_EXTERNAL_LOGGER, http_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
        MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)f->cfg.max_conn_per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(f->cfg.body_timeout + 0.5),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)f->cfg.http_threads,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (!d && f->tls_key)
        fprintf(stderr, "strata serve: cannot start HTTPS on %s:%d: the port is in use or not permitted, or GnuTLS "
                        "refused --ssl-key-file %s / --ssl-cert-file %s (a message above says which)\n",
                f->listen_host, f->cfg.port, f->cfg.ssl_key_file, f->cfg.ssl_cert_file);
    else if (!d) fprintf(stderr, "strata serve: cannot listen on %s:%d (in use, or not permitted)\n", f->listen_host, f->cfg.port);
    return d;
}

void st_http_stop(void *daemon) {
    MHD_stop_daemon(daemon);
    st_http_detached_drain(3000); /* the answers of half-closed clients (the requests failed by now) */
}
