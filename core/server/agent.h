/* SPDX-License-Identifier: Apache-2.0 */
/* What agent clients send beyond plain chat: tools and tool_choice, and the fields of
 * structured output and sampling outputs (refused with a clear 400 where not supported yet).
 * Parsed from the request by st_agent_parse, called from st_oai_parse. */
#ifndef STRATA_SERVER_AGENT_H
#define STRATA_SERVER_AGENT_H

#include <stddef.h>
#include <stdint.h>

typedef struct cJSON cJSON;
struct st_oai_error;

#define ST_AGENT_MAX_N 16 /* most choices (n) in one request */

enum { ST_TOOL_CHOICE_AUTO = 0, ST_TOOL_CHOICE_NONE = 1, ST_TOOL_CHOICE_REQUIRED = 2, ST_TOOL_CHOICE_NAMED = 3 };

typedef struct st_agent_req {
    int n_tools;            /* function tools offered (0 = none) */
    int tool_choice;        /* ST_TOOL_CHOICE_* */
    char tool_name[128];    /* NAMED: the function */
    int parallel_tool_calls;/* default 1 */
    int think_inline;       /* keep <think> text in content (extension "reasoning_format": "none") */
    char *grammar;          /* GBNF from "grammar" or response_format (owned), or NULL */
    int32_t *bias_ids;      /* logit_bias (owned) */
    float *bias_vals;
    int32_t n_bias;
    int32_t want_logprobs, top_logprobs; /* logprobs / top_logprobs (completions: logprobs N) */
    int n;                  /* choices (1..ST_AGENT_MAX_N) */
    char *tools_json;       /* the tools (owned) when tool_choice asks for a call */
    int echo;               /* completions: the prompt starts the text */
} st_agent_req;

void st_agent_req_free(st_agent_req *a);

/* Validate and read the agent fields of a request body (root). Returns 0, or -1 with *err
 * (400 with the parameter named) for a malformed value or a feature this server refuses. */
int st_agent_parse(const cJSON *root, int chat, st_agent_req *a, struct st_oai_error *err);


/* ---- tool calls in a generation (server/agent_http.c) -------------------------------------- */
typedef struct st_agent_stream {
    int active;   /* tools offered (or harmony output): content is watched for tool calls */
    int holding;  /* a call marker was seen: everything from it is held until the end */
    char *held;   /* text not yet sent as content */
    size_t n;
    int n_calls;  /* calls found at the end */
    int sent;     /* some content went out already */
    int harmony;  /* 0 plain; harmony channels: 1 between messages, 2 analysis, 3 final/preamble, 4 a call (held) */
} st_agent_stream;

void st_agent_stream_init(st_agent_stream *a, int active);
void st_agent_stream_free(st_agent_stream *a);
/* Streaming: takes *content (malloc'ed, may be NULL) and puts back only what is certainly not
 * part of a tool call (NULL when nothing). Harmony output (gpt-oss) is split as it comes:
 * analysis text is appended to *reasoning, final (and preamble) text goes to *content, calls
 * are held for the end. -1 when out of memory. */
int st_agent_stream_hold(st_agent_stream *a, char **content, char **reasoning);
/* End of a streamed generation: parses what was held. Appends leftover text to *content and
 * harmony reasoning to *reasoning; returns the JSON of a chunk carrying the tool_calls deltas
 * (ids "call_<id_base>_<i>"), or NULL when there are none. */
char *st_agent_stream_finish(st_agent_stream *a, const char *id, long created, const char *model, char **content,
                             char **reasoning);
/* ---- logprobs of a generation (server/agent_logprobs.c) ----------------------------------- */
struct st_tokenizer;
struct st_token_logprobs;
typedef struct st_agent_lp {
    int on, chat;
    size_t offset;  /* completions: text_offset of the next token */
    cJSON *pending; /* entries not yet sent: chat content[] items, or completions columns */
} st_agent_lp;
void st_agent_lp_init(st_agent_lp *l, int on, int chat);
void st_agent_lp_free(st_agent_lp *l);
/* One consumed token and its record (lp may be NULL or not valid: logprob null). */
void st_agent_lp_add(st_agent_lp *l, const struct st_tokenizer *tok, int32_t token, const struct st_token_logprobs *lp);
/* Put the pending entries into choices[0].logprobs of a response or chunk JSON (a new string;
 * the old is freed) and clear them; json unchanged when logprobs are off. */
char *st_agent_lp_inject(st_agent_lp *l, char *json);

/* ---- /v1/responses over chat (server/agent_responses*.c) ------------------------------------ */
typedef struct st_resp_stream st_resp_stream;
/* The chat request body for a Responses request (malloc'ed), or NULL with *err (400). */
char *st_responses_to_chat(const char *body, size_t n, struct st_oai_error *err);
/* A chat completion JSON as a Response object JSON (malloc'ed), NULL when it is not one. */
char *st_responses_from_chat(const char *chat_json);
/* Streaming: chat chunks in, Responses events ("event: T\ndata: {...}\n\n") appended to *out. */
st_resp_stream *st_resp_stream_new(const char *chat_id, long created, const char *model);
void st_resp_stream_free(st_resp_stream *r);
void st_resp_stream_feed(st_resp_stream *r, const char *chunk_json, char **out);

/* ---- forcing a tool call (server/tools_grammar.c) -------------------------------------------- */
enum {
    ST_TOOL_SYNTAX_NONE = 0,
    ST_TOOL_SYNTAX_HERMES_JSON = 1,       /* <tool_call>\n{"name": N, "arguments": A}\n</tool_call> */
    ST_TOOL_SYNTAX_HERMES_JSON_THINK = 2, /* the same; a <think> block may come first */
    ST_TOOL_SYNTAX_HARMONY = 3,           /* <|channel|>commentary to=functions.N <|constrain|>json<|message|>A */
    ST_TOOL_SYNTAX_DEEPSEEK = 4,          /* V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>N<｜tool▁sep｜>A<｜tool▁call▁end｜>...<｜tool▁calls▁end｜> */
    ST_TOOL_SYNTAX_DEEPSEEK_V3 = 5,       /* V3: ...<｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\nA\n```<｜tool▁call▁end｜>... */
    ST_TOOL_SYNTAX_MISTRAL = 6,           /* [TOOL_CALLS][{"name": N, "arguments": A}, ...] */
    ST_TOOL_SYNTAX_MISTRAL_ARGS = 7,      /* [TOOL_CALLS]N[ARGS]A (repeated) */
    ST_TOOL_SYNTAX_QWEN_XML = 8,          /* Qwen3-Coder: <tool_call>\n<function=N>\n<parameter=K>\nV\n</parameter>\n</function>\n</tool_call> */
    ST_TOOL_SYNTAX_GLM_XML = 9            /* GLM-4.5: <tool_call>N\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call> */
};
/* The call syntax a chat template teaches (ST_TOOL_SYNTAX_NONE when not one we can force). */
int st_tool_syntax_of_template(const char *jinja);
/* A marker's token id in the model's vocabulary, or -1 when no single token spells it. */
typedef int32_t (*st_tool_mark_fn)(const void *u, const char *text);
/* tool_choice "required" or a named function: a->grammar makes the output one call (or several
 * with parallel_tool_calls, where the syntax has them) in the template's syntax, each with
 * arguments valid for its schema; a <think> block (Hermes, GLM) or a harmony analysis message
 * may come first. In the XML syntaxes each property is its own element, in the declared order
 * (required ones present, no others): strings (and untyped values) are free text without the
 * closing tag, enum/const values their literals, everything else JSON. A marker that is one token of the vocabulary (mark(u, text) >= 0: <|channel|>,
 * <｜tool▁sep｜>, [TOOL_CALLS], ...) is required as that token (<[id]> in the grammar, never
 * spelled out in text), else as text. Nothing when the syntax is unknown, the request has its
 * own grammar, or tool_choice is auto/none. -1 with *err for a schema that cannot be turned
 * into a grammar (400). */
int st_agent_force_tools(st_agent_req *a, int syntax, st_tool_mark_fn mark, const void *u, struct st_oai_error *err);

/* ---- n > 1 and echo (server/agent_choices.c) ------------------------------------------------ */
/* The request's n when it asks for several choices (2..ST_AGENT_MAX_N), else 1. */
int st_agent_peek_n(const char *body, size_t len);
/* A streamed chunk of choice `index` of n > 1: its choices' index set (json freed; the new
 * JSON, or json itself when it has no choices). */
char *st_agent_chunk_index(char *json, int index);
/* One response JSON with the choices of json[0..n) (indexes 0..n-1, usage summed over the
 * completions, the prompt counted once). Malloc'ed; the inputs are not freed. */
char *st_agent_merge_choices(char *const *json, int n);
/* completions with echo: choices[0].text = prompt + text (and text_offset moved). New string;
 * the old is freed. */
char *st_agent_echo(char *json, const char *prompt);

/* Not streamed: the response JSON (made by st_oai_response_json) rewritten with the tool
 * calls found in *content: message.tool_calls, content null when empty, finish_reason
 * "tool_calls"; harmony reasoning moved to reasoning_content. Returns a new string (the old
 * one is freed) or the old one when nothing changed. */
char *st_agent_response_rewrite(char *json, const char *content, const char *id);

#endif
