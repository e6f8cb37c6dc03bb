/* SPDX-License-Identifier: Apache-2.0 */
/* server.tools: tool calls parsed out of each family's output syntax (core/server/tools.c),
 * the streamed hold-back of call markers and the rewritten response JSON
 * (core/server/agent_http.c), and the agent fields of requests (core/server/agent_req.c). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "server/agent.h"
#include "server/openai.h"
#include "server/tools.h"
#include "grammar/grammar.h"

static int g_fail;

typedef struct tcase {
    const char *family, *text;
    int n_calls;
    const char *name0, *args0, *content, *reasoning;
} tcase;

#define DSB "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DSE "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DCB "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DCE "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DSEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"

static const tcase k_cases[] = {
    {"hermes", "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", 1,
     "get_weather", "{\"city\":\"Paris\"}", "Let me check.", NULL},
    {"hermes.two", "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": 1}}\n</tool_call>", 2,
     "a", "{}", "", NULL},
    {"qwen3-coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>", 1,
     "get_weather", "{\"city\":\"Paris\",\"days\":3}", "", NULL},
    {"glm", "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>", 1, "get_weather",
     "{\"city\":\"Paris\"}", "", NULL},
    {"mistral.array", "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"a1b2c3d4e\"}]", 1, "get_weather",
     "{\"city\":\"Paris\"}", "", NULL},
    {"mistral.args", "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}", 1, "get_weather", "{\"city\":\"Paris\"}", "", NULL},
    {"deepseek.v3", DSB DCB "function" DSEP "get_weather\n```json\n{\"city\": \"Paris\"}\n```" DCE DSE, 1, "get_weather",
     "{\"city\":\"Paris\"}", "", NULL},
    {"deepseek.v31", "Sure." DSB DCB "get_weather" DSEP "{\"city\": \"Paris\"}" DCE DSE, 1, "get_weather", "{\"city\":\"Paris\"}",
     "Sure.", NULL},
    {"harmony.call", "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
     1, "get_weather", "{\"city\":\"Paris\"}", "", "Need weather."},
    {"harmony.final", "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.", 0, NULL, NULL,
     "It is sunny.", "Think."},
    {"plain", "No tools needed here.", 0, NULL, NULL, "No tools needed here.", NULL},
    {"llama3", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", 1, "get_weather", "{\"city\":\"Paris\"}", "", NULL},
    {"llama3.python_tag", "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 2}}", 2, "a", "{}", "", NULL},
    {"json.not_a_call", "{\"answer\": 42}", 0, NULL, NULL, "{\"answer\": 42}", NULL},
    {"broken", "Text <tool_call>\n{\"name\": \"get_weather\", \"argu", 0, NULL, NULL, "Text <tool_call>\n{\"name\": \"get_weather\", \"argu", NULL},
};

static void check_case(const tcase *c) {
    st_tool_result r;
    CHECK(st_tools_parse(c->text, &r) == 0, "server.tools %s: parse failed", c->family);
    CHECK(r.n_calls == c->n_calls, "server.tools %s: %d calls, want %d", c->family, r.n_calls, c->n_calls);
    if (c->n_calls && r.n_calls) {
        CHECK(!strcmp(r.calls[0].name, c->name0), "server.tools %s: name %s", c->family, r.calls[0].name);
        CHECK(!strcmp(r.calls[0].arguments, c->args0), "server.tools %s: arguments %s, want %s", c->family, r.calls[0].arguments, c->args0);
    }
    CHECK(r.content && !strcmp(r.content, c->content), "server.tools %s: content [%s], want [%s]", c->family, r.content, c->content);
    CHECK((!c->reasoning && !r.reasoning) || (c->reasoning && r.reasoning && !strcmp(r.reasoning, c->reasoning)),
          "server.tools %s: reasoning [%s]", c->family, r.reasoning ? r.reasoning : "(null)");
    st_tool_result_free(&r);
}

/* Streamed piece by piece: text before the call goes out, the call never leaks as content,
 * and the end gives one tool_calls chunk. */
static void check_stream(void) {
    const char *pieces[] = {"Let me ", "check.\n<tool", "_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", NULL};
    st_agent_stream a;
    st_agent_stream_init(&a, 1);
    char sent[512] = "";
    for (int i = 0; pieces[i]; i++) {
        char *c = strdup(pieces[i]);
        CHECK(st_agent_stream_hold(&a, &c, NULL) == 0, "server.tools stream: hold failed");
        if (c) strcat(sent, c);
        free(c);
    }
    CHECK(!strcmp(sent, "Let me check.\n"), "server.tools stream: sent [%s] before the end", sent);
    char *content = NULL, *reasoning = NULL;
    char *chunk = st_agent_stream_finish(&a, "chatcmpl-7", 1, "m", &content, &reasoning);
    CHECK(chunk && strstr(chunk, "\"tool_calls\":[{\"index\":0,\"id\":\"call_chatcmpl-7_0\",\"type\":\"function\","
                                 "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]"),
          "server.tools stream: chunk %s", chunk ? chunk : "(null)");
    CHECK(a.n_calls == 1 && !content, "server.tools stream: %d calls, leftover [%s]", a.n_calls, content ? content : "");
    free(chunk);
    free(content);
    free(reasoning);
    st_agent_stream_free(&a);
}

/* Harmony streamed: analysis goes out as reasoning, final as content, as the pieces come. */
static void check_harmony_stream(void) {
    const char *pieces[] = {"<|chan", "nel|>analysis<|message|>Need", " weather.<|e", "nd|><|start|>assistant<|channel|>final<|message|>It is",
                            " sunny<", "|end|>", NULL};
    const char *want_content[] = {"", "", "", "It is", " sunny", ""};
    st_agent_stream a;
    st_agent_stream_init(&a, 1);
    char *reasoning = NULL;
    for (int i = 0; pieces[i]; i++) {
        char *c = strdup(pieces[i]);
        st_agent_stream_hold(&a, &c, &reasoning);
        CHECK(!strcmp(c ? c : "", want_content[i]), "server.tools harmony stream piece %d: content [%s], want [%s]", i, c ? c : "",
              want_content[i]);
        free(c);
        if (i == 2) CHECK(reasoning && !strcmp(reasoning, "Need weather."), "server.tools harmony stream: reasoning [%s]", reasoning ? reasoning : "");
    }
    char *content = NULL;
    char *chunk = st_agent_stream_finish(&a, "x", 1, "m", &content, &reasoning);
    CHECK(!chunk && !content, "server.tools harmony stream: nothing left at the end (%s)", content ? content : "");
    free(chunk);
    free(content);
    free(reasoning);
    st_agent_stream_free(&a);
    /* a call: held, then a tool_calls chunk */
    st_agent_stream_init(&a, 1);
    reasoning = NULL;
    char *c = strdup("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}");
    st_agent_stream_hold(&a, &c, &reasoning);
    CHECK(!c, "server.tools harmony call: nothing sent before the end");
    free(c);
    content = NULL;
    chunk = st_agent_stream_finish(&a, "y", 1, "m", &content, &reasoning);
    CHECK(chunk && strstr(chunk, "get_weather") && a.n_calls == 1, "server.tools harmony call: %s", chunk ? chunk : "(none)");
    free(chunk);
    free(content);
    free(reasoning);
    st_agent_stream_free(&a);
}

/* A streamed Llama 3 call (bare JSON) is held to the end and becomes a tool call. */
static void check_llama_stream(void) {
    const char *pieces[] = {"{\"name\": \"f\", ", "\"parameters\": {\"x\": 1}}", NULL};
    st_agent_stream a;
    st_agent_stream_init(&a, 1);
    int leaked = 0;
    for (int i = 0; pieces[i]; i++) {
        char *c = strdup(pieces[i]);
        st_agent_stream_hold(&a, &c, NULL);
        leaked |= c != NULL;
        free(c);
    }
    char *content = NULL, *reasoning = NULL;
    char *chunk = st_agent_stream_finish(&a, "z", 1, "m", &content, &reasoning);
    CHECK(!leaked && chunk && a.n_calls == 1 && !content, "server.tools llama stream: leaked %d, chunk %s", leaked, chunk ? chunk : "(none)");
    free(chunk);
    free(content);
    free(reasoning);
    st_agent_stream_free(&a);
}

static void check_rewrite(void) {
    st_oai_usage u = {5, 7, 0};
    const char *text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>";
    char *j = st_oai_response_json(1, "chatcmpl-1", 1, "m", text, NULL, "stop", &u);
    j = st_agent_response_rewrite(j, text, "chatcmpl-1");
    cJSON *o = cJSON_Parse(j);
    cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), *m = cJSON_GetObjectItem(ch, "message");
    cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "tool_calls"), 0);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(m, "content")), "server.tools rewrite: content not null: %s", j);
    CHECK(!strcmp(cJSON_GetObjectItem(ch, "finish_reason")->valuestring, "tool_calls"), "server.tools rewrite: finish %s", j);
    CHECK(tc && !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(tc, "function"), "arguments")->valuestring, "{\"a\":1}"),
          "server.tools rewrite: %s", j);
    cJSON_Delete(o);
    free(j);
}

static void check_request(void) {
    st_oai_request q;
    st_oai_error e;
    const char *ok = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":"
                     "{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}";
    CHECK(st_oai_parse(ok, strlen(ok), 1, ST_CHAT_CHATML, 32, &q, &e) == 0, "server.tools request: refused: %s", e.message);
    CHECK(q.agent.n_tools == 1 && q.agent.tool_choice == ST_TOOL_CHOICE_NAMED && !strcmp(q.agent.tool_name, "f"),
          "server.tools request: tools %d choice %d", q.agent.n_tools, q.agent.tool_choice);
    st_oai_request_free(&q);
    const char *bad = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":{}}]}";
    CHECK(st_oai_parse(bad, strlen(bad), 1, ST_CHAT_CHATML, 32, &q, &e) < 0 && e.status == 400 && !strcmp(e.param, "tools") &&
              strstr(e.message, "tools[0].function.name"),
          "server.tools request: a nameless tool must be a 400 naming tools[0]: %s", e.message);
    const char *req = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tool_choice\":\"required\"}";
    CHECK(st_oai_parse(req, strlen(req), 1, ST_CHAT_CHATML, 32, &q, &e) < 0 && !strcmp(e.param, "tool_choice"),
          "server.tools request: required without tools must be refused");
}

/* /v1/responses: input items become chat messages; chat chunks become typed events. */
static void check_responses(void) {
    st_oai_error e;
    const char *body = "{\"instructions\":\"sys\",\"input\":[{\"role\":\"user\",\"content\":\"q\"},"
                       "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"},"
                       "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"42\"}],"
                       "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{}}],\"max_output_tokens\":9}";
    char *chat = st_responses_to_chat(body, strlen(body), &e);
    cJSON *o = chat ? cJSON_Parse(chat) : NULL;
    cJSON *msgs = cJSON_GetObjectItem(o, "messages");
    CHECK(cJSON_GetArraySize(msgs) == 4, "server.tools responses: %s", chat ? chat : e.message);
    cJSON *a = cJSON_GetArrayItem(msgs, 2), *t = cJSON_GetArrayItem(msgs, 3);
    CHECK(a && !strcmp(cJSON_GetObjectItem(a, "role")->valuestring, "assistant") &&
              !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(a, "tool_calls"), 0), "function"), "name")->valuestring, "f"),
          "server.tools responses: the function_call is an assistant tool call: %s", chat);
    CHECK(t && !strcmp(cJSON_GetObjectItem(t, "role")->valuestring, "tool") && !strcmp(cJSON_GetObjectItem(t, "tool_call_id")->valuestring, "c1"),
          "server.tools responses: the output is a tool message: %s", chat);
    CHECK(cJSON_GetObjectItem(o, "max_tokens")->valueint == 9 &&
              !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "tools"), 0), "type")->valuestring, "function"),
          "server.tools responses: max_output_tokens and tools: %s", chat);
    cJSON_Delete(o);
    free(chat);
    st_resp_stream *rs = st_resp_stream_new("chatcmpl-9", 1, "m");
    char *ev = NULL;
    st_resp_stream_feed(rs, "{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_x\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}", &ev);
    st_resp_stream_feed(rs, "{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}", &ev);
    st_resp_stream_feed(rs, "{\"id\":\"chatcmpl-9\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}", &ev);
    CHECK(ev && strstr(ev, "event: response.created") && strstr(ev, "event: response.function_call_arguments.done") &&
              strstr(ev, "\"call_id\":\"call_x\"") && strstr(ev, "event: response.completed"),
          "server.tools responses stream: %s", ev ? ev : "(none)");
    free(ev);
    st_resp_stream_free(rs);
}

/* Every prefix of every case parses to a result (calls, or the text as content), never a crash. */
static void check_prefixes(void) {
    int runs = 0, ok = 0;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        size_t len = strlen(k_cases[i].text);
        char *buf = malloc(len + 1);
        for (size_t cut = 0; buf && cut <= len; cut++) {
            memcpy(buf, k_cases[i].text, cut);
            buf[cut] = 0;
            st_tool_result r;
            runs++;
            if (st_tools_parse(buf, &r) == 0) {
                ok += r.content != NULL;
                st_tool_result_free(&r);
            }
        }
        free(buf);
    }
    CHECK(runs > 500 && ok == runs, "server.tools prefixes: %d of %d parsed", ok, runs);
}

/* ---- forced calls (core/server/tools_grammar.c) over a vocabulary with control tokens ------- */
#define DS(x) "<\xef\xbd\x9c" x "\xef\xbd\x9c>" /* DeepSeek's full-width bars */
#define SP "\xe2\x96\x81"                      /* and its word separator */
static const char *const k_marks[] = {"<|channel|>", "<|constrain|>", "<|message|>", "<|end|>", "<|start|>",
                                      DS("tool" SP "calls" SP "begin"), DS("tool" SP "calls" SP "end"),
                                      DS("tool" SP "call" SP "begin"), DS("tool" SP "call" SP "end"), DS("tool" SP "sep"),
                                      "[TOOL_CALLS]", "[ARGS]", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
                                      "<think>", "</think>"};
#define N_MARKS (int)(sizeof k_marks / sizeof k_marks[0])
#define MARK0 1000 /* control tokens: 1000 + index in k_marks; 0..255 are the bytes */

static int32_t fake_mark(const void *u, const char *text) {
    (void)u;
    for (int i = 0; i < N_MARKS; i++)
        if (!strcmp(text, k_marks[i])) return MARK0 + i;
    return -1;
}

/* text as tokens: each marker as its control token, the rest byte by byte. */
static int to_tokens(const char *text, int32_t *out, int cap) {
    int n = 0;
    for (const char *p = text; *p && n < cap;) {
        int k = -1;
        for (int i = 0; i < N_MARKS && k < 0; i++)
            if (!strncmp(p, k_marks[i], strlen(k_marks[i]))) k = i;
        out[n++] = k >= 0 ? MARK0 + k : (unsigned char)*p;
        p += k >= 0 ? strlen(k_marks[k]) : 1;
    }
    return n;
}

typedef struct fcase {
    const char *family, *template_text;
    int syntax;
    const char *output; /* a call of get_weather(city: Paris) in the family's syntax */
} fcase;

static const fcase k_forced[] = {
    {"harmony", "<|start|>assistant<|channel|>commentary to=functions.{{ name }}", ST_TOOL_SYNTAX_HARMONY,
     "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
     "<|constrain|>json<|message|>{\"city\": \"Paris\"}"},
    {"deepseek v3.1", DS("tool" SP "calls" SP "begin") "{{ name }}" DS("tool" SP "sep"), ST_TOOL_SYNTAX_DEEPSEEK,
     DS("tool" SP "calls" SP "begin") DS("tool" SP "call" SP "begin") "get_weather" DS("tool" SP "sep") "{\"city\": \"Paris\"}"
     DS("tool" SP "call" SP "end") DS("tool" SP "calls" SP "end")},
    {"deepseek v3", DS("tool" SP "calls" SP "begin") "function" DS("tool" SP "sep") "{{ name }}", ST_TOOL_SYNTAX_DEEPSEEK_V3,
     DS("tool" SP "calls" SP "begin") DS("tool" SP "call" SP "begin") "function" DS("tool" SP "sep") "get_weather\n```json\n"
     "{\"city\": \"Paris\"}\n```" DS("tool" SP "call" SP "end") DS("tool" SP "calls" SP "end")},
    {"mistral", "[TOOL_CALLS][{{ calls|tojson }}]", ST_TOOL_SYNTAX_MISTRAL,
     "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"},
    {"mistral [ARGS]", "[TOOL_CALLS]{{ name }}[ARGS]{{ args }}", ST_TOOL_SYNTAX_MISTRAL_ARGS,
     "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"},
    {"hermes", "<tool_call>\n{{ call|tojson }}\n</tool_call>", ST_TOOL_SYNTAX_HERMES_JSON,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
    {"qwen3-coder", "<tool_call>\n<function={{ name }}>\n<parameter={{ k }}>", ST_TOOL_SYNTAX_QWEN_XML,
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"},
    {"glm", "<think></think><tool_call>{{ name }}<arg_key>{{ k }}</arg_key>", ST_TOOL_SYNTAX_GLM_XML,
     "\n<think>Need the weather.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
     "</tool_call>"},
};

/* The forced grammar of c over the fake vocabulary (NULL on failure, reported). */
static st_grammar *forced_grammar(const fcase *c, int choice, const char *name) {
    st_agent_req a;
    memset(&a, 0, sizeof a);
    a.tool_choice = choice;
    snprintf(a.tool_name, sizeof a.tool_name, "%s", name ? name : "");
    a.tools_json = strdup("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
                          "\"properties\":{\"city\":{\"enum\":[\"Paris\",\"Berlin\"]},\"days\":{\"type\":\"integer\"},"
                          "\"note\":{\"type\":\"string\"}},\"required\":[\"city\"]}}},"
                          "{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":{\"type\":\"object\"}}}]");
    st_oai_error e;
    char err[256] = "";
    int rc = st_agent_force_tools(&a, c->syntax, fake_mark, NULL, &e);
    st_grammar *g = rc == 0 && a.grammar ? st_grammar_parse(a.grammar, err, sizeof err) : NULL;
    CHECK(g, "server.tools forced %s: grammar (%d): %s\n%s", c->family, rc, err, a.grammar ? a.grammar : e.message);
    free(a.grammar);
    free(a.tools_json);
    return g;
}

/* Accepts the tokens of text from the start; the index of the first refused one, or -1. */
static int feed(st_gmatch *m, const st_gvocab *v, const char *text) {
    int32_t t[512];
    int n = to_tokens(text, t, 512);
    for (int i = 0; i < n; i++)
        if (!st_gmatch_token_ok(m, v, t[i]) || st_gmatch_accept_token(m, v, t[i])) return i;
    return -1;
}

static void check_forced_case(const fcase *c, const st_gvocab *v) {
    CHECK(st_tool_syntax_of_template(c->template_text) == c->syntax, "server.tools forced %s: syntax %d, want %d", c->family,
          st_tool_syntax_of_template(c->template_text), c->syntax);
    st_grammar *g = forced_grammar(c, ST_TOOL_CHOICE_REQUIRED, NULL);
    st_gmatch *m = g ? st_gmatch_new(g) : NULL;
    if (!m) goto done;
    int32_t first[4] = {0};
    to_tokens(c->output, first, 1);
    uint8_t allowed[MARK0 + N_MARKS];
    int32_t n = st_gmatch_mask(m, v, allowed);
    int marker = first[0] >= MARK0;
    CHECK(allowed[first[0]] && (!marker || n == 1), "server.tools forced %s: the first token %d allowed alone (%d allowed)",
          c->family, first[0], n);
    if (marker) CHECK(!allowed[(unsigned char)k_marks[first[0] - MARK0][0]], "server.tools forced %s: the marker is not spelled", c->family);
    int bad = feed(m, v, c->output);
    CHECK(bad < 0 && st_gmatch_can_end(m), "server.tools forced %s: the call refused at token %d", c->family, bad);
    st_gmatch_free(m);
    /* the parser reads the same call back from the text (control tokens rendered) */
    st_tool_result r;
    memset(&r, 0, sizeof r);
    CHECK(st_tools_parse(c->output, &r) == 0 && r.n_calls == 1 && !strcmp(r.calls[0].name, "get_weather") &&
              !strcmp(r.calls[0].arguments, "{\"city\":\"Paris\"}"),
          "server.tools forced %s: parsed %d calls (%s %s)", c->family, r.n_calls, r.n_calls ? r.calls[0].name : "",
          r.n_calls ? r.calls[0].arguments : "");
    st_tool_result_free(&r);
    /* a wrong tool name or argument is refused; so is the named choice of the other tool */
    char wrong[600];
    snprintf(wrong, sizeof wrong, "%s", c->output);
    char *at = strstr(wrong, "Paris");
    if (at) memcpy(at, "Pares", 5);
    m = st_gmatch_new(g);
    CHECK(m && feed(m, v, wrong) >= 0, "server.tools forced %s: an argument outside the schema is refused", c->family);
    st_gmatch_free(m);
    st_grammar_free(g);
    g = forced_grammar(c, ST_TOOL_CHOICE_NAMED, "get_time");
    m = g ? st_gmatch_new(g) : NULL;
    CHECK(m && feed(m, v, c->output) >= 0, "server.tools forced %s: tool_choice get_time refuses get_weather", c->family);
    st_gmatch_free(m);
done:
    st_grammar_free(g);
}

/* The XML syntaxes: every property's value kind, and the ways a call can miss its schema. */
typedef struct xcase {
    int forced;           /* its index in k_forced */
    const char *full;     /* get_weather with all three parameters */
    const char *args;     /* what the parser reads back from full */
    const char *wrong[5]; /* a wrong function name, an unknown parameter, no required city, days not a number,
                           * a string holding the closing tag */
} xcase;

#define QP(k, v) "<parameter=" k ">\n" v "\n</parameter>\n"
#define GP(k, v) "<arg_key>" k "</arg_key>\n<arg_value>" v "</arg_value>\n"
static const xcase k_xml[] = {
    {6, "<tool_call>\n<function=get_weather>\n" QP("city", "Berlin") QP("days", "3") QP("note", "a << b </b> x</para") "</function>\n</tool_call>",
     "{\"city\":\"Berlin\",\"days\":3,\"note\":\"a << b </b> x</para\"}",
     {"<tool_call>\n<function=get_wether>\n" QP("city", "Berlin") "</function>\n</tool_call>",
      "<tool_call>\n<function=get_weather>\n" QP("city", "Berlin") QP("country", "DE") "</function>\n</tool_call>",
      "<tool_call>\n<function=get_weather>\n" QP("days", "3") "</function>\n</tool_call>",
      "<tool_call>\n<function=get_weather>\n" QP("city", "Berlin") QP("days", "three") "</function>\n</tool_call>",
      "<tool_call>\n<function=get_weather>\n" QP("city", "Berlin") QP("note", "a </parameter> b") "</function>\n</tool_call>"}},
    {7, "<tool_call>get_weather\n" GP("city", "Berlin") GP("days", "3") GP("note", "a << b </b> x</arg_") "</tool_call>",
     "{\"city\":\"Berlin\",\"days\":3,\"note\":\"a << b </b> x</arg_\"}",
     {"<tool_call>get_wether\n" GP("city", "Berlin") "</tool_call>",
      "<tool_call>get_weather\n" GP("city", "Berlin") GP("country", "DE") "</tool_call>",
      "<tool_call>get_weather\n" GP("days", "3") "</tool_call>",
      "<tool_call>get_weather\n" GP("city", "Berlin") GP("days", "three") "</tool_call>",
      "<tool_call>get_weather\n" GP("city", "Berlin") GP("note", "a </arg_value> b") "</tool_call>"}},
};

static void check_xml_case(const xcase *x, const st_gvocab *v) {
    const fcase *c = &k_forced[x->forced];
    st_grammar *g = forced_grammar(c, ST_TOOL_CHOICE_REQUIRED, NULL);
    st_gmatch *m = g ? st_gmatch_new(g) : NULL;
    int bad = m ? feed(m, v, x->full) : 0;
    CHECK(m && bad < 0 && st_gmatch_can_end(m), "server.tools xml %s: the full call refused at token %d", c->family, bad);
    st_gmatch_free(m);
    st_tool_result r;
    memset(&r, 0, sizeof r);
    CHECK(st_tools_parse(x->full, &r) == 0 && r.n_calls == 1 && !strcmp(r.calls[0].arguments, x->args),
          "server.tools xml %s: parsed %d calls (%s)", c->family, r.n_calls, r.n_calls ? r.calls[0].arguments : "");
    st_tool_result_free(&r);
    static const char *const what[5] = {"a wrong function name", "an unknown parameter", "a missing required parameter",
                                        "a non-number for an integer", "a string holding the closing tag"};
    for (int i = 0; g && i < 5; i++) {
        m = st_gmatch_new(g);
        CHECK(m && feed(m, v, x->wrong[i]) >= 0, "server.tools xml %s: %s is accepted", c->family, what[i]);
        st_gmatch_free(m);
    }
    st_grammar_free(g);
}

/* A long string value full of starts of the closing tag stays within the matcher's bounds. */
static void check_xml_long(const st_gvocab *v) {
    st_grammar *g = forced_grammar(&k_forced[6], ST_TOOL_CHOICE_REQUIRED, NULL);
    st_gmatch *m = g ? st_gmatch_new(g) : NULL;
    int bad = m ? feed(m, v, "<tool_call>\n<function=get_weather>\n" QP("city", "Paris") "<parameter=note>\n") : 0;
    static const char piece[] = "<</pa<x </para\n<</parameter <>";
    for (int i = 0; m && bad < 0 && i < 4000; i++) {
        int32_t t = (unsigned char)piece[i % (sizeof piece - 1)];
        if (!st_gmatch_token_ok(m, v, t) || st_gmatch_accept_token(m, v, t)) bad = 1000 + i;
    }
    if (m && bad < 0) bad = feed(m, v, "\n</parameter>\n</function>\n</tool_call>");
    CHECK(m && bad < 0 && st_gmatch_can_end(m), "server.tools xml long value: refused at %d (%s)", bad,
          m && st_gmatch_error(m) ? st_gmatch_error(m) : "no bound met");
    st_gmatch_free(m);
    st_grammar_free(g);
}

/* A property schema that cannot be a grammar is a 400 naming it. */
static void check_xml_error(void) {
    st_agent_req a;
    memset(&a, 0, sizeof a);
    a.tool_choice = ST_TOOL_CHOICE_REQUIRED;
    a.tools_json = strdup("[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\","
                          "\"properties\":{\"n\":{\"type\":\"int\"}}}}}]");
    st_oai_error e;
    memset(&e, 0, sizeof e);
    int rc = st_agent_force_tools(&a, ST_TOOL_SYNTAX_GLM_XML, fake_mark, NULL, &e);
    CHECK(rc < 0 && e.status == 400 && strstr(e.message, "tools[0].function.parameters: properties.n"),
          "server.tools xml: a bad property type is a 400 naming it (%d: %s)", rc, e.message);
    free(a.grammar);
    free(a.tools_json);
}

static void check_forced(void) {
    static char bytes[256][2];
    const char *texts[MARK0 + N_MARKS];
    size_t lens[MARK0 + N_MARKS];
    for (int i = 0; i < MARK0 + N_MARKS; i++) {
        if (i < 256) bytes[i][0] = (char)i;
        texts[i] = i < 256 ? bytes[i] : "";
        lens[i] = i > 0 && i < 256; /* 256..: no text (control tokens and unused ids) */
    }
    st_gvocab *v = st_gvocab_new(texts, lens, NULL, MARK0 + N_MARKS);
    CHECK(v, "server.tools forced: vocabulary");
    for (size_t i = 0; v && i < sizeof k_forced / sizeof k_forced[0]; i++) check_forced_case(&k_forced[i], v);
    for (size_t i = 0; v && i < sizeof k_xml / sizeof k_xml[0]; i++) check_xml_case(&k_xml[i], v);
    check_xml_error();
    check_xml_long(v);
    st_gvocab_free(v);
}

int main(void) {
    check_prefixes();
    check_responses();
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) check_case(&k_cases[i]);
    check_stream();
    check_harmony_stream();
    check_llama_stream();
    check_rewrite();
    check_request();
    check_forced();
    printf("server.tools: %d failures\n", g_fail);
    return g_fail ? 1 : 0;
}
