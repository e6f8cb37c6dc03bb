/* SPDX-License-Identifier: Apache-2.0 */
/* Internal state of the front process shared by the supervisor (front.c) and the HTTP
 * handlers (http.c). */
#ifndef STRATA_FRONT_H
#define STRATA_FRONT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "gguf/gguf.h"
#include "server/chat.h"
#include "server/proto.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"

enum { ST_ENGINE_STARTING = 0, ST_ENGINE_READY = 1, ST_ENGINE_RESTARTING = 2, ST_ENGINE_STOPPED = 3 };

/* One request in flight, shared by its HTTP thread and the engine reader thread. */
typedef struct st_req {
    uint64_t id;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int32_t *toks; /* tokens received and not yet consumed */
    int32_t n_toks, cap;
    int done;            /* DONE event received (done_ev valid) */
    st_engine_event done_ev;
    int failed;          /* engine died or refused: fail_msg says why */
    int fail_status;     /* HTTP status for a failure before streaming (429, 400, 503) */
    char fail_code[48];
    char fail_msg[1024];
    int refs;
    /* called under mu whenever the request has news (a token, its end, a failure) and on every
     * tick of the server's main loop: the HTTP side resumes the connection that waits for it */
    void (*wake)(void *arg, int tick); /* tick: 1 from the main loop, 0 for news */
    void *wake_arg;
    struct st_req *next;
    st_token_logprobs *lps; /* [cap] per token when the request asked for logprobs (else NULL) */
    int32_t lps_cap;
    st_sampler_params sp;   /* as submitted (for /slots) */
    int32_t n_prompt, max_tokens;
    float *embd;            /* an embedding request's pooled vector [n_embd] once done (else NULL) */
    int32_t n_embd;
} st_req;


/* Keep token i's log probabilities (under r->mu; server/agent_front.c). */
void st_front_store_lp(st_req *r, int32_t i, const st_token_logprobs *lp);

#define ST_LOG_RING 16

typedef struct st_front {
    st_serve_config cfg;
    char model_id[128];
    char listen_host[64]; /* the address the server listens on, as a URL has it ("[::1]" for IPv6) */
    st_gguf *gguf;
    st_tokenizer *tok;
    st_chat_template tmpl;
    int think; /* the vocabulary has <think> */
    const char *tmpl_stops[8];

    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;  /* state changes, stats replies */
    int state;
    char state_reason[1200];
    int fd;     /* socket to the engine: changed under send_mu and mu; senders use it under send_mu */
    pid_t pid;
    st_msg_ready ready;
    st_req *reqs;
    uint64_t next_id;
    uint64_t last_frame_ns; /* when the engine last said anything */
    st_msg_stats stats;
    uint64_t stats_seq;
    uint64_t stats_ns;  /* when the last stats answer came */
    char *stats_text;   /* Prometheus lines the engine sent after its last stats (plan, experts), or NULL */
    char log_ring[ST_LOG_RING][256];
    int log_head;
    int stopping;
    /* supervision (supervise.c) */
    int ever_ready;          /* some engine got ready since the server started */
    int deaths;              /* engine deaths in a row before one got ready: the back-off's exponent */
    int same_fails;          /* start-up failures in a row with the same signature */
    char fail_sig[256];      /* signature of the last start-up failure (status and last log line) */
    uint64_t retry_at_ns;    /* while restarting: when the next engine is started */
    uint64_t spawn_ns;       /* when the current engine was started */
    double load_s;           /* how long the last engine took to get ready (Retry-After estimate) */
    int hb_killed;           /* the current engine was killed for missing its heartbeats */
    char hb_what[256];       /* what the front saw then ("no heartbeat for 2.1 s; process state T (stopped)") */
    char hb_report[512];     /* the report the front wrote then */
    int fatal;               /* the server must exit with status 1: fatal_msg says why */
    char fatal_msg[1024];
    int reader_done;         /* the reader thread has returned */
    /* metrics */
    uint64_t m_requests, m_prompt_tokens, m_gen_tokens, m_restarts, m_cached_tokens;
    double m_gen_seconds;
    pthread_mutex_t send_mu; /* one writer on fd at a time; taken before mu when both are */
    pthread_t log_thread;    /* reads the engine's stderr; joined when the engine dies */
    int log_thread_ok;
    /* the model's Jinja chat template (server/agent_front.c); NULL = the built-in family */
    struct st_jinja *jinja;
    char jinja_origin[160];  /* "the GGUF's tokenizer.chat_template", a file name */
    char bos_text[64], eos_text[64];
    int tool_syntax;         /* ST_TOOL_SYNTAX_* of the template: tool_choice required/named is enforced */
    char *tls_key, *tls_cert; /* PEM texts of --ssl-key-file/--ssl-cert-file; NULL = plain HTTP */
} st_front;

/* Read the TLS key and certificate (server/tls.c): 0 when neither option is given or both
 * files hold PEM blocks of their kind, else -1 with a message that names the option and file
 * (only one option, a missing/unreadable file, no PEM block, no TLS in libmicrohttpd). */
int st_tls_load(st_front *f);
void st_tls_free(st_front *f);

/* Load the Jinja chat template: --chat-template-file, else the GGUF's (gguf_jinja, may be NULL)
 * unless a built-in was named with --chat-template. A GGUF template that does not parse or
 * render a plain conversation falls back to the built-in family with a warning; a file that
 * does not is an error (-1, printed). */
int st_front_load_jinja(st_front *f, const char *gguf_jinja);
/* The prompt text to tokenize: past a leading BOS text the template printed when the
 * tokenizer adds BOS itself (so it is not there twice). */
const char *st_front_prompt_text(const st_front *f, const char *prompt);
/* Requests (front.c), shared with the supervisor. */
/* An event frame of len bytes: the event, and an embedding's vector after it. */
void st_front_on_event(st_front *f, const st_engine_event *ev, size_t len);
void st_req_fail(st_req *r, int status, const char *code, const char *msg);
void st_req_unref(st_req *r);
const char *st_front_report_dir(const st_front *f);
void st_front_ring_add(st_front *f, const char *line);

/* Supervision of the engine child (supervise.c). st_engine_spawn starts an engine (0, or -1
 * with errno); st_engine_reader is the thread that reads its frames, and on its death fails
 * every request and starts a new one after a growing back-off (or stops restarting, or sets
 * f->fatal); st_engine_watch is called by the main thread a few times a second and kills an
 * engine that missed its heartbeats; st_engine_shutdown ends the engine and joins the reader
 * promptly even when the engine is stopped or the reader is in its back-off. */
int st_engine_spawn(st_front *f);
void *st_engine_reader(void *f);
void st_engine_watch(st_front *f);
void st_engine_shutdown(st_front *f, pthread_t reader);
/* Seconds for the Retry-After header of a 503 in the current state (f->mu not held), 0 for
 * none (the engine will not come back by itself). */
int st_front_retry_after(st_front *f);
/* 1 when the engine is ready and its heartbeats are on time (f->mu not held). */
int st_front_engine_up(st_front *f);

/* Register a request and send it to the engine. Returns the request (refs held by the caller
 * and the registry), or NULL with *status/msg when the engine is not ready (503). */
st_req *st_front_submit(st_front *f, const int32_t *prompt, int32_t n, int32_t max_tokens, int ignore_eos,
                        const st_sampler_params *sp, int *status, char *msg, size_t msglen);
/* st_front_submit with a grammar and logit biases (any may be NULL/0). */
typedef struct st_submit_extra {
    const char *grammar;
    const int32_t *bias_ids;
    const float *bias_vals;
    int32_t n_bias;
    int32_t want_logprobs, top_logprobs;
    int32_t pooling; /* ST_POOL_*: an embedding request */
} st_submit_extra;
st_req *st_front_submit_ex(st_front *f, const int32_t *prompt, int32_t n, int32_t max_tokens, int ignore_eos,
                           const st_sampler_params *sp, const st_submit_extra *x, int *status, char *msg, size_t msglen);
/* The request with this id in flight, or NULL (under f->mu). */
st_req *st_front_find_req(st_front *f, uint64_t id);
/* Ask the engine to cancel a request (ignored when it already finished). */
void st_front_cancel(st_front *f, st_req *r);
/* Drop the caller's reference (the registry drops its own when the request is done). */
void st_front_release(st_front *f, st_req *r);
/* Ask the engine for statistics and wait up to timeout_ms; 0 when it answered. */
int st_front_stats(st_front *f, st_msg_stats *out, int timeout_ms);
/* The last engine log lines joined with " | " into buf. */
void st_front_last_log(st_front *f, char *buf, size_t n);

/* Calls the wake hook of every request in flight (the main loop, a few times a second). */
void st_front_wake_all(st_front *f);

/* Start the HTTP server; returns an opaque daemon handle or NULL (message printed). */
void *st_http_start(st_front *f);
/* Enforces the header deadline on waiting connections (the main loop, a few times a second). */
void st_http_tick(void *daemon);
void st_http_stop(void *daemon);

#endif
