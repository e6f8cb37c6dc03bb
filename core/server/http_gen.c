/* SPDX-License-Identifier: Apache-2.0 */
/* The generation endpoints (/v1/chat/completions, /v1/completions), streamed and not.
 *
 * Nothing here blocks a server thread: a request that waits for tokens suspends its
 * connection; the engine reader resumes it through the request's wake hook when the request
 * has news, and the main loop resumes it a few times a second so that it can look at its
 * client. The wake hook and MHD_suspend_connection are both called under the request's mutex,
 * so a connection is resumed only after it was suspended, and never after its generation was
 * freed (gen_free clears the hook under the same mutex).
 *
 * A client that closed its side: before the answer starts, a connection that reports a
 * read hang-up gets an interim "HTTP/1.1 100 Continue" (every HTTP/1.1 client skips it): a
 * client that only half-closed reads on and gets its answer; one that is gone answers with a
 * reset, and the request is cancelled at the next look. Inside a stream, an SSE comment line
 * does the same. libmicrohttpd 0.9.75 ends a connection as soon as it reads the end of
 * stream, which a half-closed client has sent, so a generation keeps its own copy of the
 * socket (conn_state.fd) and the daemon runs in turbo mode (no shutdown() on close): when
 * the library ends a connection whose answer has not started and the client only
 * half-closed, the answer (whole, streamed, every choice of n > 1) is written on that copy by
 * a thread of its own (st_http_detach). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "platform/platform.h"
#include "server/agent.h"
#include "server/agent_routes.h"
#include "server/http_internal.h"

struct gen {
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
    int suspended; /* under r->mu */
    int probed;    /* the client's read hang-up was probed (100 Continue or an SSE comment) */
    int gone;      /* the tick found the client gone */
    int detached;  /* answered by a thread of its own (st_http_detach): wake signals cv */
    pthread_cond_t cv;
    int streaming; /* the stream's answer has started */
    int fd;        /* the client's socket (for looks; the library owns it) */
    int http10;    /* the client speaks HTTP/1.0: no interim answers */
    char *content, *reasoning; /* accumulated (non-stream) or pending (stream) */
    char *out;                 /* SSE bytes not yet written */
    size_t out_n, out_off;
    uint64_t t0;
    st_agent_stream ag; /* tool calls (server/agent_http.c) */
    st_agent_lp lp;     /* logprobs (server/agent_logprobs.c) */
    st_resp_stream *rs; /* /v1/responses streamed: chunks become typed events (server/agent_responses_out.c) */
    int responses;      /* /v1/responses */
    int choice;         /* n > 1: which choice this generation is */
    int n_choices;      /* streamed n > 1: the choices, run one after the other in one stream */
    char *choices_body; /* streamed n > 1: the request body for the next choice */
    size_t choices_n;
    int32_t prior_gen;  /* streamed n > 1: tokens the earlier choices generated (usage) */
};

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
    char *k = g->choice > 0 ? st_agent_chunk_index(strdup(json), g->choice) : NULL; /* n > 1 */
    sbuf_add(&g->out, &g->out_n, "data: ");
    sbuf_add(&g->out, &g->out_n, k ? k : json);
    sbuf_add(&g->out, &g->out_n, "\n\n");
    free(k);
}


/* One received token into text (content / reasoning); 1 when a stop string matched. */
static int take_one(gen *g, int32_t t) {
    const char *s;
    size_t n;
    if (g->stop_hit) return 0;
    if (st_detok_push(g->detok, t, &s, &n) == 0 && n &&
        st_oai_text_push(&g->text, s, n, &g->content, &g->reasoning) == 1) {
        g->stop_hit = 1;
        return 1;
    }
    return 0;
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
        if (take_one(g, t)) st_front_cancel(g->f, g->r);
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
            "prefill %.0f ms, decode %.1f tok/s, finish %s%s%s%s%s\n",
            (unsigned long long)g->r->id, g->q.chat ? "chat" : "completion", g->q.stream ? " stream" : "", d->n_prompt,
            d->n_reused, d->n_prompt - d->n_reused, d->n_gen, d->prefill_ms, tps, finish, xs[0] ? "; " : "", xs,
            d->devices[0] ? "; time per device: " : "", d->devices);
}

static void log_failure(const gen *g) {
    fprintf(stderr, "strata serve: request %llu %s%s failed (%d %s): %s\n", (unsigned long long)g->r->id,
            g->q.chat ? "chat" : "completion", g->q.stream ? " stream" : "", g->r->fail_status, g->r->fail_code,
            g->r->fail_msg);
}

/* The client's socket now: 2 gone (hang-up or error), 1 read hang-up only, 0 fine. */
static int peer_state(gen *g) {
    struct pollfd p = {.fd = g->fd, .events = POLLRDHUP};
    if (g->fd < 0 || poll(&p, 1, 0) <= 0) return 0;
    return p.revents & (POLLHUP | POLLERR) ? 2 : p.revents & POLLRDHUP ? 1 : 0;
}

/* Sends the interim answer that tells a half-closed client from a gone one (see the top);
 * only before the answer starts, while nothing else writes on the connection. */
static int probe_100(gen *g) {
    g->probed = 1;
    if (g->http10) return -1;
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    return send(g->fd, cont, sizeof cont - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? -1 : 0;
}

/* The wake hook (under r->mu): resume the connection if it waits. A generation that is not
 * streamed waits for its end; it is resumed on a tick too, to look for stop strings and at
 * its client. A detached one is signalled instead. */
static void gen_wake(void *arg, int tick) {
    gen *g = arg;
    if (g->detached) {
        pthread_cond_signal(&g->cv);
        return;
    }
    if (!g->suspended) return;
    if (!g->q.stream && !g->r->done && !g->r->failed && !tick) return;
    g->suspended = 0;
    MHD_resume_connection(g->conn);
}

/* Suspends the connection unless the request has news; returns 1 when it was suspended. */
static int suspend_unless_news(gen *g) {
    st_req *r = g->r;
    pthread_mutex_lock(&r->mu);
    int news = g->consumed < r->n_toks || r->done || r->failed;
    if (!news) {
        g->suspended = 1;
        MHD_suspend_connection(g->conn);
    }
    pthread_mutex_unlock(&r->mu);
    return !news;
}

/* Everything g holds, not g itself. */
static void gen_clear(gen *g) {
    if (g->r) {
        pthread_mutex_lock(&g->r->mu);
        g->r->wake = NULL;
        g->r->wake_arg = NULL;
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
    if (g->detached) pthread_cond_destroy(&g->cv);
    free(g->content);
    free(g->reasoning);
    free(g->out);
    free(g->choices_body);
}

void st_http_gen_free(gen *g) {
    if (!g) return;
    gen_clear(g);
    free(g);
}

/* Nonzero when the client of g is gone. A read hang-up alone is probed once (see the top). */
static int client_gone(gen *g) {
    if (g->gone) return 1;
    int ps = peer_state(g);
    if (ps != 1 || g->probed) return ps == 2;
    if (g->f->tls_key) { /* no plain interim answer inside TLS: the library ends a closed connection */
        g->probed = 1;
        return 0;
    }
    if (g->streaming) {
        g->probed = 1;
        sbuf_add(&g->out, &g->out_n, ":\n\n");
        return 0;
    }
    return probe_100(g) != 0;
}

static st_oai_usage usage_of(const gen *g) {
    st_oai_usage u = {g->n_prompt, g->r->done_ev.n_gen, g->r->done_ev.n_reused};
    return u;
}

static int gen_init(gen *g, st_front *f, conn_state *cs, int chat, st_oai_error *e);
static void gen_hook(gen *g, int detached);

/* Streamed n > 1: g is made again, in place, as the next choice's generation, which keeps
 * its stream (the pending bytes, the id, the socket); an error event ends the stream when it
 * cannot start. */
static void stream_next_choice(gen *g) {
    gen keep = *g; /* only its plain fields are read below */
    conn_state cs = {.fd = -1, .http10 = g->http10, .choice = g->choice + 1, .n_choices = g->n_choices};
    int chat = g->q.chat;
    int32_t prior = g->prior_gen + g->r->done_ev.n_gen;
    g->choices_body = g->out = NULL;
    gen_clear(g);
    memset(g, 0, sizeof *g);
    g->conn = keep.conn, g->fd = keep.fd, g->probed = keep.probed, g->streaming = keep.streaming;
    g->n_choices = keep.n_choices, g->choices_body = keep.choices_body, g->choices_n = keep.choices_n;
    g->prior_gen = prior;
    g->out = keep.out, g->out_n = keep.out_n, g->out_off = keep.out_off;
    memcpy(g->id, keep.id, sizeof g->id); /* one id for the whole stream */
    g->created = keep.created;
    st_oai_error e;
    int bad = -1;
    if ((cs.body = malloc(keep.choices_n + 1))) { /* cap 0: the release only frees it */
        memcpy(cs.body, keep.choices_body, keep.choices_n);
        cs.body[cs.n = keep.choices_n] = 0;
        bad = gen_init(g, keep.f, &cs, chat, &e);
    } else {
        st_oai_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (bad) {
        g->f = keep.f;
        char *j = st_oai_error_json(&e);
        if (j) sse_data(g, j);
        free(j);
        sbuf_add(&g->out, &g->out_n, "data: [DONE]\n\n");
        g->finished = 1;
        return;
    }
    gen_hook(g, keep.detached);
}

/* Streamed n > 1: the stream of g runs every choice (cs's body is g's from now on). */
static void gen_take_choices(gen *g, conn_state *cs) {
    if (cs->n_choices <= 1 || !cs->choices_body) return;
    g->n_choices = cs->n_choices;
    g->choices_body = cs->choices_body;
    g->choices_n = cs->choices_n;
    cs->choices_body = NULL;
}

/* The end of a stream: the rest of the text, the finish chunk, usage, [DONE]. */
static void stream_end(gen *g) {
    const char *fin = g->ag.n_calls ? "tool_calls" : finish_name(g);
    char *j = st_oai_chunk_json(g->q.chat, g->id, g->created, g->f->model_id, NULL, NULL, NULL, fin);
    if (g->lp.pending) j = st_agent_lp_inject(&g->lp, j);
    if (j) sse_data(g, j);
    free(j);
    if (g->choice + 1 < g->n_choices) { /* n > 1: the next choice follows in the same stream */
        log_request(g, fin);
        stream_next_choice(g);
        return;
    }
    if (g->q.include_usage) {
        st_oai_usage u = usage_of(g);
        u.completion_tokens += g->prior_gen;
        j = st_oai_usage_chunk_json(g->q.chat, g->id, g->created, g->f->model_id, &u);
        if (j) sse_data(g, j);
        free(j);
    }
    sbuf_add(&g->out, &g->out_n, "data: [DONE]\n\n");
    log_request(g, fin);
    g->finished = 1;
}

static void stream_fail(gen *g) {
    log_failure(g);
    st_oai_error e;
    st_oai_error_set(&e, g->r->fail_status, "server_error", g->r->fail_code, NULL, "%s", g->r->fail_msg);
    char *j = st_oai_error_json(&e);
    if (j) sse_data(g, j);
    free(j);
    sbuf_add(&g->out, &g->out_n, "data: [DONE]\n\n");
    g->finished = 1;
}

/* One step of a stream: the next token's chunk, or its end. */
static void stream_step(gen *g) {
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
    char *calls = NULL; /* tool calls (server/agent_http.c): held text, then one tool_calls chunk */
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
    if (failed) stream_fail(g);
    else if (done || (g->stop_hit && g->r->done)) stream_end(g);
}

/* Streaming: produce SSE bytes as tokens arrive; suspend while there are none. */
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
        if (client_gone(g)) {
            st_front_cancel(g->f, g->r);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (g->out_n) continue; /* the probe comment */
        stream_step(g);
        if (g->out_n == 0 && suspend_unless_news(g)) return 0;
    }
}

static void stream_free(void *cls) { st_http_gen_free(cls); }

/* The prompt's tokens. Completions: all text. Chat: the template's markers are special
 * tokens; the same characters typed in a message's content are text, unless the server was
 * started with --content-specials parse. */
static int64_t encode_prompt(const st_front *f, const st_oai_request *q, int32_t **out) {
    /* a Jinja template's BOS text is dropped when the tokenizer adds BOS (server/agent_front.c) */
    const char *text = q->chat ? st_front_prompt_text(f, q->prompt) : q->prompt;
    if (!q->chat || f->cfg.content_specials)
        return st_tokenizer_encode_alloc(f->tok, text, strlen(text), true, q->chat != 0, out);
    return st_chat_encode_spans(f->tok, q->prompt, (size_t)(text - q->prompt), q->spans, q->n_spans, out);
}

static void sampler_of(const st_oai_request *q, int choice, st_sampler_params *sp) {
    st_sampler_params_default(sp);
    sp->temp = q->temperature;
    sp->top_p = q->top_p;
    sp->top_k = q->top_k;
    sp->min_p = q->min_p;
    sp->presence_penalty = q->presence_penalty;
    sp->frequency_penalty = q->frequency_penalty;
    sp->repeat_penalty = q->repeat_penalty;
    sp->penalty_last_n = (q->presence_penalty != 0 || q->frequency_penalty != 0 || q->repeat_penalty != 1) ? -1 : 0;
    sp->seed = q->has_seed ? q->seed + (uint64_t)choice : (st_now_ns() ^ 0x5DEECE66Dull); /* n > 1: seed + i */
}

/* Tokenizes and submits; on failure sets e and returns -1. */
static int submit(st_front *f, gen *g, st_oai_error *e) {
    int32_t *toks = NULL;
    int64_t nt = encode_prompt(f, &g->q, &toks);
    pthread_mutex_lock(&f->mu);
    int n_ctx = f->ready.n_ctx, ready = f->state == ST_ENGINE_READY;
    pthread_mutex_unlock(&f->mu);
    if (nt < 0 || (ready && nt >= n_ctx)) {
        if (nt < 0) st_oai_error_set(e, 500, "server_error", NULL, NULL, "out of memory while tokenizing");
        else
            st_oai_error_set(e, 400, "invalid_request_error", "context_length_exceeded", g->q.chat ? "messages" : "prompt",
                             "This model's maximum context length is %d tokens, but the prompt has %lld tokens", n_ctx,
                             (long long)nt);
        free(toks);
        return -1;
    }
    g->n_prompt = (int32_t)nt;
    int32_t max_tokens = g->q.max_tokens > 0 ? g->q.max_tokens : n_ctx - (int32_t)nt;
    if (ready && max_tokens > n_ctx - (int32_t)nt) max_tokens = n_ctx - (int32_t)nt;
    st_sampler_params sp;
    sampler_of(&g->q, g->choice, &sp);
    int status = 0;
    char msg[600];
    st_submit_extra x = {g->q.agent.grammar, g->q.agent.bias_ids, g->q.agent.bias_vals, g->q.agent.n_bias,
                         g->q.agent.want_logprobs, g->q.agent.top_logprobs, ST_POOL_NONE};
    g->r = st_front_submit_ex(f, toks, (int32_t)nt, max_tokens, g->q.ignore_eos, &sp, &x, &status, msg, sizeof msg);
    free(toks);
    if (!g->r) {
        st_oai_error_set(e, status, status == 503 ? "server_error" : "invalid_request_error",
                         status == 503 ? "engine_unavailable" : status == 400 ? "invalid_token" : NULL,
                         status == 400 ? (g->q.chat ? "messages" : "prompt") : NULL, "%s", msg);
        return -1;
    }
    return 0;
}

/* The request's text state: stop strings, reasoning split, tool-call watch, detokenizer. */
static int gen_text_init(st_front *f, gen *g, int chat) {
    int k = 0;
    for (; k < g->q.n_stop; k++) g->stops[k] = g->q.stop[k];
    for (int i = 0; f->tmpl_stops[i]; i++) g->stops[k++] = f->tmpl_stops[i];
    g->stops[k] = NULL;
    st_oai_text_init(&g->text, g->stops, f->think && chat && !g->q.agent.think_inline);
    int watch = chat && ((g->q.agent.n_tools && g->q.agent.tool_choice != ST_TOOL_CHOICE_NONE) ||
                         st_tokenizer_find(f->tok, "<|channel|>", 11) >= 0); /* tools, or harmony channels */
    st_agent_stream_init(&g->ag, watch);
    st_agent_lp_init(&g->lp, g->q.agent.want_logprobs, chat);
    g->detok = st_detok_new(f->tok, watch ? ST_DETOK_SPECIAL : 0);
    return g->detok ? 0 : -1;
}

/* A tool-call marker's token (server/tools_grammar.c). */
static int32_t tool_mark(const void *tok, const char *text) { return st_tokenizer_find(tok, text, strlen(text)); }

/* Fills the zeroed g with a generation of the request in cs->body (parsed, checked and
 * submitted): 0, or -1 with e (then gen_clear(g) frees what it holds). The struct holds
 * pointers into itself (the stop strings): it is made in place and never copied. */
static int gen_init(gen *g, st_front *f, conn_state *cs, int chat, st_oai_error *e) {
    g->f = f;
    g->http10 = cs->http10;
    st_oai_render rd = {f->tmpl, f->jinja, f->bos_text, f->eos_text}; /* the model's Jinja template */
    int bad = st_oai_parse_ex(cs->body ? cs->body : "", cs->n, chat, &rd, f->cfg.max_depth, &g->q, e);
    st_http_body_release(cs); /* parsed: its bytes are free for other clients */
    if (bad) return -1;
    g->responses = cs->responses;
    g->choice = cs->choice;
    if (st_agent_force_tools(&g->q.agent, f->jinja ? f->tool_syntax : 0, tool_mark, f->tok, e)) return -1; /* tool_choice required/named */
    if (g->q.model[0] && strcmp(g->q.model, f->model_id)) {
        st_oai_error_set(e, 404, "invalid_request_error", "model_not_found", "model",
                         "The model '%s' does not exist; this server serves '%s'", g->q.model, f->model_id);
        return -1;
    }
    if (submit(f, g, e)) return -1;
    if (gen_text_init(f, g, chat)) {
        st_oai_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return -1;
    }
    if (!g->id[0]) snprintf(g->id, sizeof g->id, "%s-%llu", chat ? "chatcmpl" : "cmpl", (unsigned long long)g->r->id);
    if (!g->created) g->created = (long)time(NULL);
    g->t0 = st_now_ns();
    if (g->responses && g->q.stream) g->rs = st_resp_stream_new(g->id, g->created, f->model_id);
    if (g->q.stream && g->q.agent.echo) { /* completions with echo: the prompt comes first */
        char *j = st_oai_chunk_json(0, g->id, g->created, f->model_id, NULL, g->q.prompt, NULL, NULL);
        if (j) sse_data(g, j);
        free(j);
    }
    return 0;
}

/* A new generation (gen_init), or NULL with e. */
static gen *gen_new(st_front *f, conn_state *cs, int chat, st_oai_error *e) {
    gen *g = calloc(1, sizeof *g);
    if (!g) {
        st_http_body_release(cs);
        st_oai_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    if (!gen_init(g, f, cs, chat, e)) return g;
    st_http_gen_free(g);
    return NULL;
}

/* Hooks g to its request's news (under r->mu; a detached one waits on its own cv). */
static void gen_hook(gen *g, int detached) {
    pthread_mutex_lock(&g->r->mu);
    if (detached && !g->detached) pthread_cond_init(&g->cv, NULL);
    g->detached = detached;
    g->r->wake = gen_wake;
    g->r->wake_arg = g;
    pthread_mutex_unlock(&g->r->mu);
}

enum MHD_Result st_http_gen_start(st_front *f, struct MHD_Connection *c, conn_state *cs, int chat) {
    st_oai_error e;
    if (cs->fd < 0 && !f->tls_key) { /* the generation's own copy of the socket (see the top); none
                                          * under TLS, where plain bytes cannot be written aside */
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        cs->fd = ci ? fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
    }
    gen *g = gen_new(f, cs, chat, &e);
    if (!g) return st_http_send_error(c, &e);
    g->conn = c;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    g->fd = ci ? ci->connect_fd : -1;
    gen_hook(g, 0);
    cs->g = g;
    return st_http_gen_continue(f, c, cs);
}

/* The whole answer of a request that is not streamed. */
/* The JSON of the whole answer of a request that is not streamed (malloc'ed, or NULL). */
static char *whole_json(gen *g) {
    if (!g->stop_hit) {
        const char *s;
        size_t n2;
        if (st_detok_flush(g->detok, &s, &n2) == 0 && n2) st_oai_text_push(&g->text, s, n2, &g->content, &g->reasoning);
        st_oai_text_finish(&g->text, &g->content, &g->reasoning);
    }
    st_oai_usage u = usage_of(g);
    const char *fin = finish_name(g);
    log_request(g, fin);
    char *j = st_oai_response_json(g->q.chat, g->id, g->created, g->f->model_id, g->content ? g->content : "",
                                   g->reasoning, fin, &u);
    if (g->ag.active) j = st_agent_response_rewrite(j, g->content ? g->content : "", g->id); /* tool calls */
    j = st_agent_lp_inject(&g->lp, j);
    if (g->q.agent.echo) j = st_agent_echo(j, g->q.prompt);
    if (g->responses && j) { /* /v1/responses: a Response object */
        char *rj = st_responses_from_chat(j);
        if (rj) {
            free(j);
            j = rj;
        }
    }
    return j;
}

static enum MHD_Result answer_whole(struct MHD_Connection *c, gen *g) {
    char *j = whole_json(g);
    enum MHD_Result ok = j ? st_http_send(c, 200, "application/json", j, NULL, NULL)
                           : st_http_fail(c, 500, "server_error", NULL, NULL, "out of memory");
    free(j);
    return ok;
}

static enum MHD_Result start_stream(struct MHD_Connection *c, gen *g) {
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, g, stream_free);
    if (!r) {
        st_http_gen_free(g);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    st_agent_cors_headers(c, r);
    st_http_keep_alive_header(r);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

/* n > 1 (server/agent_choices.c): the finished choice's answer is kept; the next choice starts
 * on the same connection (its prompt reuses the KV the previous one left in the prefix cache);
 * after the last, one answer with every choice. */
static enum MHD_Result next_choice(st_front *f, struct MHD_Connection *c, conn_state *cs, gen *g) {
    int chat = g->q.chat;
    cs->choice_json[cs->choice] = whole_json(g);
    cs->g = NULL;
    st_http_gen_free(g);
    if (!cs->choice_json[cs->choice]) return st_http_fail(c, 500, "server_error", NULL, NULL, "out of memory");
    if (++cs->choice < cs->n_choices) {
        cs->body = malloc(cs->choices_n + 1); /* cap 0: not counted, the release only frees it */
        if (!cs->body) return st_http_fail(c, 500, "server_error", NULL, NULL, "out of memory");
        memcpy(cs->body, cs->choices_body, cs->choices_n);
        cs->body[cs->choices_n] = 0;
        cs->n = cs->choices_n;
        return st_http_gen_start(f, c, cs, chat);
    }
    char *merged = st_agent_merge_choices(cs->choice_json, cs->n_choices);
    enum MHD_Result ok = merged ? st_http_send(c, 200, "application/json", merged, NULL, NULL)
                                : st_http_fail(c, 500, "server_error", NULL, NULL, "out of memory");
    free(merged);
    return ok;
}

enum MHD_Result st_http_gen_continue(st_front *f, struct MHD_Connection *c, conn_state *cs) {
    gen *g = cs->g;
    for (;;) {
        if (!g->q.stream) take_tokens(g, INT32_MAX);
        pthread_mutex_lock(&g->r->mu);
        int failed = g->r->failed, any = g->r->n_toks > 0, done = g->r->done && g->consumed >= g->r->n_toks;
        int st = g->r->fail_status;
        pthread_mutex_unlock(&g->r->mu);
        enum MHD_Result ok;
        if (failed && (!g->q.stream || !any)) { /* an HTTP error while no answer has started */
            log_failure(g);
            ok = st_http_fail(c, st, st >= 500 ? "server_error" : "invalid_request_error", g->r->fail_code, NULL,
                              g->r->fail_msg);
        } else if (g->q.stream && (any || done || failed)) {
            cs->g = NULL; /* the stream owns it now */
            g->streaming = 1;
            gen_take_choices(g, cs);
            return start_stream(c, g);
        } else if (done && cs->n_choices > 1) { /* n > 1: keep this choice, run the next */
            return next_choice(f, c, cs, g);
        } else if (done) {
            ok = answer_whole(c, g);
        } else if (client_gone(g)) {
            st_front_cancel(f, g->r);
            ok = MHD_NO;
        } else if (suspend_unless_news(g)) {
            return MHD_YES;
        } else {
            continue;
        }
        cs->g = NULL;
        st_http_gen_free(g);
        return ok;
    }
}

/* ---- answers of half-closed clients, on the generation's own socket (see the top) ------- */
static atomic_int g_detached;     /* threads writing such answers now */
static atomic_int g_detached_end; /* the server stops: writes give up */

/* Writes all of buf within 30 s; 0, or -1 when the client is gone or reads nothing (or the
 * server stops). */
static int send_all(int fd, const char *buf, size_t n) {
    uint64_t t0 = st_now_ns();
    for (size_t off = 0; off < n;) {
        if (st_now_ns() - t0 > 30000000000ull || atomic_load(&g_detached_end)) return -1;
        ssize_t w = send(fd, buf + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) off += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EINTR) return -1;
        else poll(&(struct pollfd){.fd = fd, .events = POLLOUT}, 1, 100);
    }
    return 0;
}

static int send_head(int fd, int status, const char *type, const char *body) {
    char head[256];
    int n = body ? snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                                                "Connection: close\r\n\r\n",
                            status, MHD_get_reason_phrase_for((unsigned)status), type, strlen(body))
                 : snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nCache-Control: no-cache\r\n"
                                                "Connection: close\r\n\r\n",
                            status, MHD_get_reason_phrase_for((unsigned)status), type);
    return send_all(fd, head, (size_t)n) || (body && send_all(fd, body, strlen(body))) ? -1 : 0;
}

/* Waits for news or the next tick; 1 when the client is gone. */
static int detached_wait(gen *g) {
    st_req *r = g->r;
    pthread_mutex_lock(&r->mu);
    if (g->consumed >= r->n_toks && !r->done && !r->failed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->cv, &r->mu, &ts);
    }
    pthread_mutex_unlock(&r->mu);
    return peer_state(g) == 2;
}

/* The request failed before its answer started: its HTTP error (malloc'ed JSON). */
static char *failure_json(gen *g, int *status) {
    log_failure(g);
    *status = g->r->fail_status;
    st_oai_error e;
    st_oai_error_set(&e, *status, *status >= 500 ? "server_error" : "invalid_request_error", g->r->fail_code, NULL, "%s",
                     g->r->fail_msg);
    return st_oai_error_json(&e);
}

/* The next choice of n > 1 after *gp, hooked for a detached writer; NULL with e. */
static gen *next_detached(conn_state *cs, gen **gp, st_oai_error *e) {
    gen *g = *gp;
    st_front *f = g->f;
    int chat = g->q.chat;
    st_http_gen_free(g);
    *gp = NULL;
    cs->body = malloc(cs->choices_n + 1); /* cap 0: not counted, the release only frees it */
    if (!cs->body) {
        st_oai_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    memcpy(cs->body, cs->choices_body, cs->choices_n);
    cs->body[cs->choices_n] = 0;
    cs->n = cs->choices_n;
    if (!(g = gen_new(f, cs, chat, e))) return NULL;
    g->fd = cs->fd;
    gen_hook(g, 1);
    return *gp = g;
}

/* The whole answer (every choice of n > 1) as JSON with its status; NULL when the client went. */
static char *detached_whole(conn_state *cs, gen **gp, int *status) {
    st_oai_error e;
    *status = 200;
    for (gen *g = *gp;;) {
        take_tokens(g, INT32_MAX);
        pthread_mutex_lock(&g->r->mu);
        int failed = g->r->failed, done = g->r->done && g->consumed >= g->r->n_toks;
        pthread_mutex_unlock(&g->r->mu);
        if (failed) return failure_json(g, status);
        if (!done) {
            if (detached_wait(g)) return NULL;
            continue;
        }
        char *j = whole_json(g);
        if (!j) {
            st_oai_error_set(&e, *status = 500, "server_error", NULL, NULL, "out of memory");
            return st_oai_error_json(&e);
        }
        if (cs->n_choices <= 1) return j;
        cs->choice_json[cs->choice] = j;
        if (++cs->choice >= cs->n_choices) return st_agent_merge_choices(cs->choice_json, cs->n_choices);
        if (!(g = next_detached(cs, gp, &e))) {
            *status = e.status;
            return st_oai_error_json(&e);
        }
    }
}

/* A stream: its head once the first news came, then its events as they come. */
static void detached_stream(gen *g) {
    int news = 0, failed = 0;
    while (!news) {
        pthread_mutex_lock(&g->r->mu);
        news = g->r->n_toks > 0 || g->r->done || g->r->failed;
        failed = g->r->failed && !g->r->n_toks;
        pthread_mutex_unlock(&g->r->mu);
        if (!news && detached_wait(g)) {
            st_front_cancel(g->f, g->r);
            return;
        }
    }
    int status;
    char *j = failed ? failure_json(g, &status) : NULL;
    int bad = failed ? send_head(g->fd, status, "application/json", j ? j : "{}")
                     : send_head(g->fd, 200, "text/event-stream", NULL);
    free(j);
    g->streaming = 1;
    while (!bad && !failed) {
        stream_step(g);
        if (g->out_n && send_all(g->fd, g->out, g->out_n)) break;
        int fresh = g->out_n > 0;
        g->out_n = g->out_off = 0;
        if (g->finished) return;
        if (!fresh && detached_wait(g)) break;
    }
    if (!failed) st_front_cancel(g->f, g->r); /* the client went away */
}

static void *detached_main(void *arg) {
    conn_state *cs = arg;
    gen *g = cs->g;
    if (!g->probed) probe_100(g); /* a client that is gone answers with a reset */
    if (g->q.stream) {
        gen_take_choices(g, cs);
        detached_stream(g);
    } else {
        int status;
        char *j = detached_whole(cs, &g, &status);
        if (!j || send_head(cs->fd, status, "application/json", j)) {
            if (g) st_front_cancel(g->f, g->r);
        }
        free(j);
    }
    st_http_gen_free(g);
    cs->g = NULL;
    st_http_cs_free(cs); /* closes the socket: the client reads its end */
    atomic_fetch_sub(&g_detached, 1);
    return NULL;
}

int st_http_detach(conn_state *cs) {
    gen *g = cs->g;
    if (!g || cs->fd < 0 || g->streaming) return -1;
    g->fd = cs->fd;
    if (peer_state(g) != 1) return -1; /* gone (or not closed at all: the library ended it for its own reasons) */
    gen_hook(g, 1);
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    atomic_fetch_add(&g_detached, 1);
    int rc = pthread_create(&t, &at, detached_main, cs);
    pthread_attr_destroy(&at);
    if (rc) atomic_fetch_sub(&g_detached, 1);
    return rc ? -1 : 0;
}

void st_http_detached_drain(int ms) {
    for (int i = 0; i < ms / 10 && atomic_load(&g_detached) > 0; i++) {
        if (i == ms / 20) atomic_store(&g_detached_end, 1); /* half the time given: writes give up */
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    }
}
