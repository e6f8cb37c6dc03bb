/* HTTP front: routes, limits, authentication, the OpenAI endpoints with SSE streaming,
 * /health and /metrics. One thread per connection (libmicrohttpd); a generation waits on its
 * request's condition variable and watches its client's socket, so a client that goes away
 * cancels its request within one engine step. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "platform/platform.h"
#include "server/agent_routes.h"
#include "server/front.h"
#include "server/openai.h"

typedef struct conn_state {
    char *body;
    size_t n, cap;
    int too_big;
} conn_state;

/* A generation in progress: shared by the handler and (when streaming) the content reader. */
typedef struct gen {
    st_front *f;
    st_req *r;
    struct MHD_Connection *conn;
    st_oai_request q;
    st_oai_text text;
    const char *stops[ST_OAI_MAX_STOP + 8];
    st_detok *detok;
    char id[48];
    long created;
    int32_t n_prompt, consumed;
    int role_sent, finished, stop_hit;
    char *content, *reasoning; /* accumulated (non-stream) or pending (stream) */
    char *out;                 /* SSE bytes not yet written */
    size_t out_n, out_off;
    uint64_t t0;
    st_agent_stream ag; /* tool calls (server/agent_http.c) */
    st_agent_lp lp;     /* logprobs (server/agent_logprobs.c) */
    int responses;      /* /v1/responses: chunks become Responses events (server/agent_responses_out.c) */
    st_resp_stream *rs;
} gen;

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *type, const char *body,
                                 const char *retry_after) {
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", type);
    if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
    st_agent_cors_headers(c, r);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

/* Retry-After of 503 answers: about how long a restart of the engine takes (set at start). */
static char g_retry_after[16] = "2";

static enum MHD_Result send_error(struct MHD_Connection *c, const st_oai_error *e) {
    char *j = st_oai_error_json(e);
    enum MHD_Result ok = send_text(c, e->status, "application/json", j ? j : "{}", e->status == 503 ? g_retry_after : NULL);
    free(j);
    return ok;
}

static enum MHD_Result fail(struct MHD_Connection *c, int status, const char *type, const char *code,
                            const char *param, const char *msg) {
    st_oai_error e;
    st_oai_error_set(&e, status, type, code, param, "%s", msg);
    return send_error(c, &e);
}

/* Nonzero when the client closed its side of the connection. */
static int client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static int sbuf_add(char **dst, size_t *n, const char *s) {
    size_t l = strlen(s);
    char *p = realloc(*dst, *n + l + 1);
    if (!p) return -1;
    memcpy(p + *n, s, l + 1);
    *dst = p;
    *n += l;
    return 0;
}

static void sse_data(gen *g, const char *json) {
    if (g->rs) { /* /v1/responses: typed events instead */
        char *ev = NULL;
        st_resp_stream_feed(g->rs, json, &ev);
        if (ev) sbuf_add(&g->out, &g->out_n, ev);
        free(ev);
        return;
    }
    sbuf_add(&g->out, &g->out_n, "data: ");
    sbuf_add(&g->out, &g->out_n, json);
    sbuf_add(&g->out, &g->out_n, "\n\n");
}

/* Move up to `max` newly received tokens into text (content / reasoning). */
static void take_tokens(gen *g, int max) {
    st_req *r = g->r;
    for (int k = 0; k < max; k++) {
        pthread_mutex_lock(&r->mu);
        if (g->consumed >= r->n_toks) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        int32_t t = r->toks[g->consumed++];
        st_token_logprobs lp = {0};
        if (r->lps && g->consumed - 1 < r->lps_cap) lp = r->lps[g->consumed - 1];
        pthread_mutex_unlock(&r->mu);
        if (!g->stop_hit) st_agent_lp_add(&g->lp, g->f->tok, t, &lp);
        const char *s;
        size_t n;
        if (g->stop_hit) continue;
        if (st_detok_push(g->detok, t, &s, &n) == 0 && n) {
            if (st_oai_text_push(&g->text, s, n, &g->content, &g->reasoning) == 1) {
                g->stop_hit = 1;
                st_front_cancel(g->f, g->r);
            }
        }
    }
}

static const char *finish_name(const gen *g) {
    if (g->stop_hit) return "stop";
    return g->r->done_ev.finish == ST_FINISH_LENGTH ? "length" : "stop";
}

static void log_request(const gen *g, const char *finish) {
    const st_engine_event *d = &g->r->done_ev;
    double tps = d->decode_ms > 0 ? (d->n_gen > 1 ? (d->n_gen - 1) * 1e3 / d->decode_ms : 0) : 0;
    char xs[256]; /* the expert summary of a hybrid model, "" otherwise */
    st_engine_experts_format(&d->experts, xs, sizeof xs);
    fprintf(stderr,
            "strata serve: request %llu %s%s: prompt %d tokens = %d reused + %d read, %d generated, "
            "prefill %.0f ms, decode %.1f tok/s, finish %s%s%s\n",
            (unsigned long long)g->r->id, g->q.chat ? "chat" : "completion", g->q.stream ? " stream" : "", d->n_prompt,
            d->n_reused, d->n_prompt - d->n_reused, d->n_gen, d->prefill_ms, tps, finish, xs[0] ? "; " : "", xs);
}

static void log_failure(const gen *g) {
    fprintf(stderr, "strata serve: request %llu %s%s failed (%d %s): %s\n", (unsigned long long)g->r->id,
            g->q.chat ? "chat" : "completion", g->q.stream ? " stream" : "", g->r->fail_status, g->r->fail_code,
            g->r->fail_msg);
}

static void gen_free(gen *g) {
    if (!g) return;
    if (g->r) {
        pthread_mutex_lock(&g->r->mu);
        int live = !g->r->done && !g->r->failed;
        pthread_mutex_unlock(&g->r->mu);
        if (live) st_front_cancel(g->f, g->r);
        st_front_release(g->f, g->r);
    }
    st_detok_free(g->detok);
    st_agent_stream_free(&g->ag);
    st_agent_lp_free(&g->lp);
    st_resp_stream_free(g->rs);
    st_oai_text_free(&g->text);
    st_oai_request_free(&g->q);
    free(g->content);
    free(g->reasoning);
    free(g->out);
    free(g);
}

/* When the client of g has gone away: cancels its request, frees g and returns 1. */
static int cancel_if_gone(st_front *f, gen *g, struct MHD_Connection *c) {
    if (!client_gone(c)) return 0;
    st_front_cancel(f, g->r);
    gen_free(g);
    return 1;
}

/* Waits until the request has news (tokens, done, failure) or ms milliseconds pass. */
static void wait_news(gen *g, long ms) {
    st_req *r = g->r;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->mu);
    if (g->consumed >= r->n_toks && !r->done && !r->failed) pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    pthread_mutex_unlock(&r->mu);
}

static st_oai_usage usage_of(const gen *g) {
    st_oai_usage u = {g->n_prompt, g->r->done_ev.n_gen, g->r->done_ev.n_reused};
    return u;
}

/* Streaming: produce SSE bytes as tokens arrive. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    gen *g = cls;
    for (;;) {
        if (g->out_off < g->out_n) {
            size_t n = g->out_n - g->out_off;
            if (n > max) n = max;
            memcpy(buf, g->out + g->out_off, n);
            g->out_off += n;
            return (ssize_t)n;
        }
        g->out_n = g->out_off = 0;
        if (g->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (client_gone(g->conn)) {
            st_front_cancel(g->f, g->r);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        take_tokens(g, 1); /* one token per chunk, as clients expect */
        pthread_mutex_lock(&g->r->mu);
        int all = g->consumed >= g->r->n_toks;
        int done = g->r->done && all, failed = g->r->failed && all; /* tokens before a failure are sent */
        pthread_mutex_unlock(&g->r->mu);
        if (done && !g->stop_hit) {
            const char *s;
            size_t n;
            if (st_detok_flush(g->detok, &s, &n) == 0 && n) st_oai_text_push(&g->text, s, n, &g->content, &g->reasoning);
            st_oai_text_finish(&g->text, &g->content, &g->reasoning);
        }
        char *calls = NULL;
        st_agent_stream_hold(&g->ag, &g->content, &g->reasoning);
        if (done || (g->stop_hit && g->r->done))
            calls = st_agent_stream_finish(&g->ag, g->id, g->created, g->f->model_id, &g->content, &g->reasoning);
        if (g->content || g->reasoning || (!g->role_sent && g->q.chat)) {
            char *j = st_oai_chunk_json(g->q.chat, g->id, g->created, g->f->model_id, g->role_sent ? NULL : "assistant",
                                        g->content ? g->content : (g->role_sent || g->reasoning ? NULL : ""),
                                        g->reasoning, NULL);
            j = st_agent_lp_inject(&g->lp, j);
            if (j) sse_data(g, j);
            free(j);
            g->role_sent = 1;
            free(g->content);
            free(g->reasoning);
            g->content = g->reasoning = NULL;
        }
        if (calls) sse_data(g, calls);
        free(calls);
        if (failed) {
            log_failure(g);
            st_oai_error e;
            st_oai_error_set(&e, g->r->fail_status, "server_error", g->r->fail_code, NULL, "%s", g->r->fail_msg);
            char *j = st_oai_error_json(&e);
            if (j) sse_data(g, j);
            free(j);
            sbuf_add(&g->out, &g->out_n, "data: [DONE]\n\n");
            g->finished = 1;
            continue;
        }
        if (done || (g->stop_hit && g->r->done)) {
            const char *fin = g->ag.n_calls ? "tool_calls" : finish_name(g);
            char *j = st_oai_chunk_json(g->q.chat, g->id, g->created, g->f->model_id, NULL, NULL, NULL, fin);
            if (g->lp.pending) j = st_agent_lp_inject(&g->lp, j);
            if (j) sse_data(g, j);
            free(j);
            if (g->q.include_usage) {
                st_oai_usage u = usage_of(g);
                j = st_oai_usage_chunk_json(g->q.chat, g->id, g->created, g->f->model_id, &u);
                if (j) sse_data(g, j);
                free(j);
            }
            sbuf_add(&g->out, &g->out_n, "data: [DONE]\n\n");
            log_request(g, fin);
            g->finished = 1;
            continue;
        }
        if (g->out_n == 0) wait_news(g, 50);
    }
}

static void stream_free(void *cls) { gen_free(cls); }

/* One generation. choice > 0 offsets the seed (n > 1); with capture, the finished response JSON
 * goes to *capture instead of the client (an error is still answered, *capture left NULL). */
static enum MHD_Result handle_generate(st_front *f, struct MHD_Connection *c, int chat, const char *body, size_t n,
                                       int responses, int choice, char **capture) {
    gen *g = calloc(1, sizeof *g);
    if (!g) return fail(c, 500, "server_error", NULL, NULL, "out of memory");
    g->f = f;
    g->responses = responses;
    g->conn = c;
    st_oai_error e;
    st_oai_render rd = {f->tmpl, f->jinja, f->bos_text, f->eos_text};
    if (st_oai_parse_ex(body, n, chat, &rd, f->cfg.max_depth, &g->q, &e)) {
        free(g);
        return send_error(c, &e);
    }
    if (st_agent_force_tools(&g->q.agent, f->jinja ? f->tool_syntax : 0, &e)) { /* tool_choice required/named */
        gen_free(g);
        return send_error(c, &e);
    }
    if (g->q.model[0] && strcmp(g->q.model, f->model_id)) {
        st_oai_error_set(&e, 404, "invalid_request_error", "model_not_found", "model",
                         "The model '%s' does not exist; this server serves '%s'", g->q.model, f->model_id);
        gen_free(g);
        return send_error(c, &e);
    }
    int32_t *toks = NULL;
    const char *ptext = chat ? st_front_prompt_text(f, g->q.prompt) : g->q.prompt;
    int64_t nt = st_tokenizer_encode_alloc(f->tok, ptext, strlen(ptext), true, chat != 0, &toks);
    pthread_mutex_lock(&f->mu);
    int n_ctx = f->ready.n_ctx, ready = f->state == ST_ENGINE_READY;
    pthread_mutex_unlock(&f->mu);
    if (nt < 0) {
        gen_free(g);
        return fail(c, 500, "server_error", NULL, NULL, "out of memory while tokenizing");
    }
    if (ready && nt >= n_ctx) {
        char msg[200];
        snprintf(msg, sizeof msg, "This model's maximum context length is %d tokens, but the prompt has %lld tokens",
                 n_ctx, (long long)nt);
        free(toks);
        gen_free(g);
        return fail(c, 400, "invalid_request_error", "context_length_exceeded", "messages", msg);
    }
    g->n_prompt = (int32_t)nt;
    int32_t max_tokens = g->q.max_tokens > 0 ? g->q.max_tokens : n_ctx - (int32_t)nt;
    if (ready && max_tokens > n_ctx - (int32_t)nt) max_tokens = n_ctx - (int32_t)nt;
    st_sampler_params sp;
    st_sampler_params_default(&sp);
    sp.temp = g->q.temperature;
    sp.top_p = g->q.top_p;
    sp.top_k = g->q.top_k;
    sp.min_p = g->q.min_p;
    sp.presence_penalty = g->q.presence_penalty;
    sp.frequency_penalty = g->q.frequency_penalty;
    sp.repeat_penalty = g->q.repeat_penalty;
    sp.penalty_last_n = (g->q.presence_penalty != 0 || g->q.frequency_penalty != 0 || g->q.repeat_penalty != 1) ? -1 : 0;
    sp.seed = g->q.has_seed ? g->q.seed + (uint64_t)choice : (st_now_ns() ^ 0x5DEECE66Dull);
    int status = 0;
    char msg[600];
    st_submit_extra x = {g->q.agent.grammar, g->q.agent.bias_ids, g->q.agent.bias_vals, g->q.agent.n_bias,
                         g->q.agent.want_logprobs, g->q.agent.top_logprobs};
    st_agent_lp_init(&g->lp, g->q.agent.want_logprobs, chat);
    g->r = st_front_submit_ex(f, toks, (int32_t)nt, max_tokens, g->q.ignore_eos, &sp, &x, &status, msg, sizeof msg);
    free(toks);
    if (!g->r) {
        gen_free(g);
        return fail(c, status, status == 503 ? "server_error" : "invalid_request_error",
                    status == 503 ? "engine_unavailable" : NULL, NULL, msg);
    }
    int k = 0;
    for (; k < g->q.n_stop; k++) g->stops[k] = g->q.stop[k];
    for (int i = 0; f->tmpl_stops[i]; i++) g->stops[k++] = f->tmpl_stops[i];
    g->stops[k] = NULL;
    st_oai_text_init(&g->text, g->stops, f->think && chat && !g->q.agent.think_inline);
    int watch = chat && ((g->q.agent.n_tools && g->q.agent.tool_choice != ST_TOOL_CHOICE_NONE) ||
                         st_tokenizer_find(f->tok, "<|channel|>", 11) >= 0); /* tools, or harmony channels */
    st_agent_stream_init(&g->ag, watch);
    g->detok = st_detok_new(f->tok, watch ? ST_DETOK_SPECIAL : 0);
    snprintf(g->id, sizeof g->id, "%s-%llu", chat ? "chatcmpl" : "cmpl", (unsigned long long)g->r->id);
    g->created = (long)time(NULL);
    g->t0 = st_now_ns();
    if (responses && g->q.stream) g->rs = st_resp_stream_new(g->id, g->created, f->model_id);
    /* a refusal (queue full, context) or a failure before the first token arrives quickly:
     * answer it as an HTTP error; once a token came, a stream starts and carries any error */
    for (int i = 0; i < 40; i++) { /* up to 200 ms, watching the client as below */
        pthread_mutex_lock(&g->r->mu);
        int failed = g->r->failed, st = g->r->fail_status, any = g->r->n_toks > 0;
        pthread_mutex_unlock(&g->r->mu);
        if (failed && !any) {
            enum MHD_Result ok = fail(c, st, st >= 500 ? "server_error" : "invalid_request_error", g->r->fail_code,
                                      NULL, g->r->fail_msg);
            gen_free(g);
            return ok;
        }
        if (any || failed) break;
        if (cancel_if_gone(f, g, c)) return MHD_NO;
        wait_news(g, 5);
    }
    if (g->q.stream && g->q.agent.echo) { /* completions with echo: the prompt comes first */
        char *j = st_oai_chunk_json(0, g->id, g->created, f->model_id, NULL, g->q.prompt, NULL, NULL);
        if (j) sse_data(g, j);
        free(j);
    }
    if (g->q.stream) {
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, g, stream_free);
        st_agent_cors_headers(c, r);
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ok;
    }
    /* not streamed: wait here, watching the client */
    for (;;) {
        take_tokens(g, INT32_MAX);
        pthread_mutex_lock(&g->r->mu);
        int done = g->r->done && g->consumed >= g->r->n_toks, failed = g->r->failed;
        pthread_mutex_unlock(&g->r->mu);
        if (failed) {
            log_failure(g);
            int st = g->r->fail_status;
            enum MHD_Result ok = fail(c, st, st >= 500 ? "server_error" : "invalid_request_error", g->r->fail_code, NULL,
                                      g->r->fail_msg);
            gen_free(g);
            return ok;
        }
        if (done) break;
        if (cancel_if_gone(f, g, c)) return MHD_NO;
        /* the client's socket is looked at between short waits, so a cancel reaches the
         * engine within the step that was running when the client went away */
        wait_news(g, 5);
    }
    if (!g->stop_hit) {
        const char *s;
        size_t n2;
        if (st_detok_flush(g->detok, &s, &n2) == 0 && n2) st_oai_text_push(&g->text, s, n2, &g->content, &g->reasoning);
        st_oai_text_finish(&g->text, &g->content, &g->reasoning);
    }
    st_oai_usage u = usage_of(g);
    const char *fin = finish_name(g);
    char *j = st_oai_response_json(chat, g->id, g->created, f->model_id, g->content ? g->content : "", g->reasoning, fin, &u);
    if (g->ag.active) j = st_agent_response_rewrite(j, g->content ? g->content : "", g->id);
    j = st_agent_lp_inject(&g->lp, j);
    if (responses && j) {
        char *rj = st_responses_from_chat(j);
        if (rj) {
            free(j);
            j = rj;
        }
    }
    if (g->q.agent.echo) j = st_agent_echo(j, g->q.prompt);
    log_request(g, fin);
    if (capture) {
        *capture = j;
        gen_free(g);
        return MHD_YES;
    }
    enum MHD_Result ok = send_text(c, 200, "application/json", j ? j : "{}", NULL);
    free(j);
    gen_free(g);
    return ok;
}

/* n > 1: the choices one after the other (the prompt's KV is reused through the prefix cache),
 * merged into one response. */
static enum MHD_Result handle_choices(st_front *f, struct MHD_Connection *c, int chat, const char *body, size_t n) {
    int k = st_agent_peek_n(body, n);
    if (k <= 1) return handle_generate(f, c, chat, body, n, 0, 0, NULL);
    char *out[ST_AGENT_MAX_N] = {0};
    enum MHD_Result r = MHD_YES;
    int i = 0;
    for (; i < k; i++) {
        r = handle_generate(f, c, chat, body, n, 0, i, &out[i]);
        if (!out[i]) break; /* answered with an error already */
    }
    if (i == k) {
        char *merged = st_agent_merge_choices(out, k);
        r = send_text(c, 200, "application/json", merged ? merged : "{}", NULL);
        free(merged);
    }
    for (int j = 0; j < k; j++) free(out[j]);
    return r;
}

static enum MHD_Result handle_health(st_front *f, struct MHD_Connection *c) {
    st_msg_stats s;
    if (st_front_stats(f, &s, 2000) == 0) {
        char body[256];
        pthread_mutex_lock(&f->mu);
        snprintf(body, sizeof body,
                 "{\"status\":\"ok\",\"engine_pid\":%d,\"slots_busy\":%d,\"slots_total\":%d,\"queue_length\":%d,"
                 "\"engine_restarts\":%llu}",
                 (int)f->pid, s.engine.slots_busy, f->ready.n_slots, s.engine.queue_len,
                 (unsigned long long)f->m_restarts);
        pthread_mutex_unlock(&f->mu);
        return send_text(c, 200, "application/json", body, NULL);
    }
    pthread_mutex_lock(&f->mu);
    int state = f->state;
    double since = (double)(st_now_ns() - f->last_frame_ns) / 1e9;
    char reason[600];
    snprintf(reason, sizeof reason, "%s", state == ST_ENGINE_STARTING ? "loading the model"
                                          : f->state_reason[0]    ? f->state_reason
                                                                  : "the engine is not answering");
    pthread_mutex_unlock(&f->mu);
    if (state == ST_ENGINE_READY && since < f->cfg.stall_timeout)
        return send_text(c, 200, "application/json", "{\"status\":\"ok\",\"busy\":true}", NULL);
    return fail(c, 503, "server_error", "engine_unavailable", NULL, reason);
}

static enum MHD_Result handle_models(st_front *f, struct MHD_Connection *c) {
    char body[512];
    snprintf(body, sizeof body,
             "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\",\"created\":0,\"owned_by\":\"strata\"}]}",
             f->model_id);
    return send_text(c, 200, "application/json", body, NULL);
}

static enum MHD_Result handle_metrics(st_front *f, struct MHD_Connection *c) {
    st_msg_stats s;
    memset(&s, 0, sizeof s);
    /* the engine answers between steps; inside a long one, the last answer is shown */
    int have = st_front_stats(f, &s, 500) == 0;
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
             (unsigned long long)f->m_restarts, f->state == ST_ENGINE_READY, have, s.engine.slots_busy,
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
    /* the engine's memory plan and expert cache lines, as it sent them */
    pthread_mutex_lock(&f->mu);
    char *full = f->stats_text ? malloc(strlen(body) + strlen(f->stats_text) + 1) : NULL;
    if (full) {
        strcpy(full, body);
        strcat(full, f->stats_text);
    }
    pthread_mutex_unlock(&f->mu);
    enum MHD_Result ok = send_text(c, 200, "text/plain; version=0.0.4", full ? full : body, NULL);
    free(full);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    st_front *f = cls;
    int post = !strcmp(method, "POST");
    if (!*con_cls) {
        conn_state *cs = calloc(1, sizeof *cs);
        if (!cs) return MHD_NO;
        *con_cls = cs;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > f->cfg.max_body) cs->too_big = 1;
        return MHD_YES;
    }
    conn_state *cs = *con_cls;
    if (post && *upload_size) {
        if (!cs->too_big && cs->n + *upload_size <= f->cfg.max_body) {
            if (cs->n + *upload_size + 1 > cs->cap) {
                size_t cap = (cs->n + *upload_size + 1) * 2;
                char *p = realloc(cs->body, cap);
                if (!p) return MHD_NO;
                cs->body = p;
                cs->cap = cap;
            }
            memcpy(cs->body + cs->n, upload, *upload_size);
            cs->n += *upload_size;
        } else {
            cs->too_big = 1;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    enum MHD_Result pre;
    if (st_agent_preflight(c, method, &pre)) return pre; /* CORS preflight: no key, no body */
    /* probes (/health, /metrics) need no key; the API does */
    if (f->cfg.api_key && !strncmp(url, "/v1/", 4)) {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, f->cfg.api_key))
            return fail(c, 401, "invalid_request_error", "invalid_api_key", NULL,
                        "Incorrect API key provided (send 'Authorization: Bearer <key>')");
    }
    if (cs->too_big) {
        char m[128];
        snprintf(m, sizeof m, "the request body is larger than %zu bytes", f->cfg.max_body);
        return fail(c, 413, "invalid_request_error", "request_too_large", NULL, m);
    }
    int chat = !strcmp(url, "/v1/chat/completions"), cmpl = !strcmp(url, "/v1/completions");
    if (chat || cmpl) {
        if (!post) return fail(c, 405, "invalid_request_error", "method_not_allowed", NULL, "use POST");
        return handle_choices(f, c, chat, cs->body ? cs->body : "", cs->n);
    }
    if (!strcmp(url, "/v1/responses")) { /* the Responses API over chat (server/agent_responses.c) */
        if (!post) return fail(c, 405, "invalid_request_error", "method_not_allowed", NULL, "use POST");
        st_oai_error e;
        char *chat_body = st_responses_to_chat(cs->body ? cs->body : "", cs->n, &e);
        if (!chat_body) return send_error(c, &e);
        enum MHD_Result r = handle_generate(f, c, 1, chat_body, strlen(chat_body), 1, 0, NULL);
        free(chat_body);
        return r;
    }
    enum MHD_Result routed;
    if (st_agent_route(f, c, url, method, cs->body ? cs->body : "", cs->n, &routed)) return routed;
    if (!strcmp(url, "/health")) return handle_health(f, c);
    if (!strcmp(url, "/v1/models")) return handle_models(f, c);
    if (!strcmp(url, "/metrics")) return handle_metrics(f, c);
    char m[300];
    snprintf(m, sizeof m, "no route %s %s", method, url);
    return fail(c, 404, "invalid_request_error", "not_found", NULL, m);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode code) {
    (void)cls;
    (void)c;
    (void)code;
    conn_state *cs = *con_cls;
    if (cs) {
        free(cs->body);
        free(cs);
    }
    *con_cls = NULL;
}

void *st_http_start(st_front *f) {
    snprintf(g_retry_after, sizeof g_retry_after, "%d", (int)f->cfg.restart_delay + 2);
    st_agent_cors_set(f->cfg.cors);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)f->cfg.port);
    if (inet_pton(AF_INET, f->cfg.host, &addr.sin_addr) != 1) {
        fprintf(stderr, "strata serve: --host '%s' is not an IPv4 address\n", f->cfg.host);
        return NULL;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)f->cfg.port, NULL,
        NULL, on_request, f, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
        NULL, MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_END);
    if (!d) fprintf(stderr, "strata serve: cannot listen on %s:%d (in use, or not permitted)\n", f->cfg.host, f->cfg.port);
    return d;
}

void st_http_stop(void *daemon) { MHD_stop_daemon(daemon); }
