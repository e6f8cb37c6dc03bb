/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenAI request and response shapes: parsing and validating request bodies, and
 * building the JSON of responses, stream chunks and errors exactly as the official SDKs
 * parse them. Uses cJSON. */
#ifndef STRATA_OPENAI_H
#define STRATA_OPENAI_H

#include <stddef.h>
#include <stdint.h>

#include "server/agent.h"
#include "server/chat.h"

#define ST_OAI_MAX_STOP 4

typedef struct st_oai_error {
    int status;         /* HTTP status */
    char type[48];      /* "invalid_request_error", ... */
    char code[48];      /* "" for null */
    char param[48];     /* "" for null */
    char message[400];
} st_oai_error;

typedef struct st_oai_request {
    int chat;                /* /v1/chat/completions (1) or /v1/completions (0) */
    char *prompt;            /* rendered prompt text (owned) */
    st_chat_span *spans;     /* chat: where the messages' contents lie in prompt (owned) */
    size_t n_spans;
    char model[128];
    int stream, include_usage;
    int ignore_eos;          /* extension: generate past end-of-generation tokens */
    int32_t max_tokens;      /* -1 = not given */
    float temperature, top_p, min_p, presence_penalty, frequency_penalty, repeat_penalty;
    int32_t top_k;
    uint64_t seed;
    int has_seed;
    char *stop[ST_OAI_MAX_STOP]; /* owned */
    int n_stop;
    st_agent_req agent;      /* tools, tool_choice, ... (server/agent.h) */
} st_oai_request;

/* Set an error (printf-style message). Returns -1 for chaining. */
int st_oai_error_set(st_oai_error *e, int status, const char *type, const char *code, const char *param,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Copies s[0..n) into out as valid UTF-8: every byte that starts no valid character (and
 * overlong or surrogate forms) becomes U+FFFD; cut at a character boundary to fit cap with
 * its NUL. Returns the bytes written. */
size_t st_oai_utf8_clean(const char *s, size_t n, char *out, size_t cap);
/* The error's JSON body {"error":{...}} (the message made valid UTF-8); malloc'ed, caller frees. */
char *st_oai_error_json(const st_oai_error *e);

/* Parse a body. Chat requests render their messages with template `t`. Returns 0, or -1 with
 * *err filled (400 for bad JSON, types and values; nesting deeper than max_depth too). The
 * caller frees the request with st_oai_request_free. */
int st_oai_parse(const char *body, size_t len, int chat, st_chat_template t, int max_depth, st_oai_request *out,
                 st_oai_error *err);
void st_oai_request_free(st_oai_request *r);

/* How chat messages become the prompt: the model's Jinja template when jinja is set (with the
 * BOS/EOS texts it may print), else the built-in family. */
struct st_jinja;
typedef struct st_oai_render {
    st_chat_template builtin;
    const struct st_jinja *jinja;
    const char *bos_token, *eos_token;
} st_oai_render;
/* st_oai_parse with a renderer; a template error (e.g. its raise_exception) is a 400. */
int st_oai_parse_ex(const char *body, size_t len, int chat, const st_oai_render *r, int max_depth, st_oai_request *out,
                    st_oai_error *err);

/* Usage numbers of a finished request. */
typedef struct st_oai_usage {
    int32_t prompt_tokens, completion_tokens, cached_tokens;
} st_oai_usage;

/* JSON of one stream chunk (chat: delta with optional role/content/reasoning; completions:
 * text). finish may be NULL. Malloc'ed; caller frees. */
char *st_oai_chunk_json(int chat, const char *id, long created, const char *model, const char *role,
                        const char *content, const char *reasoning, const char *finish);
/* JSON of the usage chunk (choices empty) sent before [DONE] with include_usage. */
char *st_oai_usage_chunk_json(int chat, const char *id, long created, const char *model, const st_oai_usage *u);
/* JSON of a complete (non-streamed) response. Malloc'ed; caller frees. */
char *st_oai_response_json(int chat, const char *id, long created, const char *model, const char *content,
                           const char *reasoning, const char *finish, const st_oai_usage *u);

/* ---- incremental text: stop strings and <think> split ---------------------------------- */
typedef struct st_oai_text {
    const char *const *stops; /* borrowed: user stops then template stops, NULL-terminated */
    char *pend;               /* text not yet emitted (may hold a stop string's prefix) */
    size_t n_pend, cap;
    int think_mode;           /* 0 off; 1 undecided at start; 2 inside <think>; 3 content */
    int stopped;              /* a stop string matched: nothing more is emitted */
    /* stop matching, linear in the text added: per stop a KMP automaton over the text */
    int n_stops, oom;
    size_t *slen, *state;     /* [n_stops] length; matched prefix of the text's end */
    int32_t **fail;           /* [n_stops][slen] failure function */
    size_t fed;               /* bytes of pend already fed to the automata */
} st_oai_text;

/* Start a text stream; think nonzero when the model may open with <think>. */
void st_oai_text_init(st_oai_text *t, const char *const *stops, int think);
void st_oai_text_free(st_oai_text *t);
/* Add generated text; appends what may be emitted now to *content and *reasoning (malloc'ed
 * growing strings owned by the caller, may start NULL). Returns 1 when a stop string
 * matched (the request should end with finish "stop"), 0 otherwise, -1 on out-of-memory.
 * The text ends before the stop string that completes first (at the earliest end; of those,
 * the longest); the cost is linear in the bytes added, whatever the stop strings' lengths. */
int st_oai_text_push(st_oai_text *t, const char *s, size_t n, char **content, char **reasoning);
/* End of generation: release held-back text (a partial stop that never completed). */
int st_oai_text_finish(st_oai_text *t, char **content, char **reasoning);

#endif
