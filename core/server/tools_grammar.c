/* SPDX-License-Identifier: Apache-2.0 */
/* tool_choice "required" / named, enforced: a grammar of the template's call syntax whose
 * arguments follow each tool's JSON Schema (grammar/json_schema.h); the syntax's markers are
 * required as the model's own control tokens where the vocabulary has them (<[id]>). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema.h"
#include "server/agent.h"
#include "server/openai.h"

int st_tool_syntax_of_template(const char *jinja) {
    if (!jinja) return ST_TOOL_SYNTAX_NONE;
    if (strstr(jinja, "<|channel|>") && strstr(jinja, "to=functions")) return ST_TOOL_SYNTAX_HARMONY;
    if (strstr(jinja, "tool\xe2\x96\x81""calls\xe2\x96\x81""begin"))
        return strstr(jinja, "function<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>") ? ST_TOOL_SYNTAX_DEEPSEEK_V3 : ST_TOOL_SYNTAX_DEEPSEEK;
    if (strstr(jinja, "[TOOL_CALLS]")) return strstr(jinja, "[ARGS]") ? ST_TOOL_SYNTAX_MISTRAL_ARGS : ST_TOOL_SYNTAX_MISTRAL;
    if (!strstr(jinja, "<tool_call>")) return ST_TOOL_SYNTAX_NONE;
    if (strstr(jinja, "<function=") || strstr(jinja, "<arg_key>")) return ST_TOOL_SYNTAX_NONE; /* XML forms */
    return strstr(jinja, "<think>") ? ST_TOOL_SYNTAX_HERMES_JSON_THINK : ST_TOOL_SYNTAX_HERMES_JSON;
}

typedef struct gb {
    char *p;
    size_t n;
    int oom;
    st_tool_mark_fn mark;
    const void *u;
} gb;

static void put(gb *b, const char *s) {
    size_t l = strlen(s);
    char *q = b->oom ? NULL : realloc(b->p, b->n + l + 1);
    if (!q) {
        b->oom = 1;
        return;
    }
    memcpy(q + b->n, s, l + 1);
    b->p = q;
    b->n += l;
}

/* text as a GBNF literal: quotes, backslashes and newlines escaped. */
static void lit(gb *b, const char *text) {
    put(b, " \"");
    for (const char *c = text; *c; c++) {
        char t[4] = {*c, 0};
        if (*c == '"' || *c == '\\') t[0] = '\\', t[1] = *c, t[2] = 0;
        else if (*c == '\n') strcpy(t, "\\n");
        put(b, t);
    }
    put(b, "\"");
}

/* A marker: its token when the vocabulary has one, else its text. */
static void mark(gb *b, const char *text) {
    int32_t id = b->mark ? b->mark(b->u, text) : -1;
    char t[24];
    snprintf(t, sizeof t, " <[%d]>", (int)id);
    if (id >= 0) put(b, t);
    else lit(b, text);
}

/* The rule tN_call: one call of the tool `name` (already JSON-escaped when it is inside JSON)
 * whose arguments are the rule `args`, in the syntax's form. */
static void call_rule(gb *b, int syntax, const char *prefix, const char *name, const char *args) {
    char line[160];
    snprintf(line, sizeof line, "%scall ::=", prefix);
    put(b, line);
    switch (syntax) {
    case ST_TOOL_SYNTAX_HARMONY:
        mark(b, "<|channel|>"), lit(b, "commentary to=functions."), lit(b, name), put(b, " (\" \""), mark(b, "<|constrain|>"),
            lit(b, "json"), put(b, ")?"), mark(b, "<|message|>");
        break;
    case ST_TOOL_SYNTAX_DEEPSEEK:
        mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81""call\xe2\x96\x81""begin\xef\xbd\x9c>"), lit(b, name),
            mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>");
        break;
    case ST_TOOL_SYNTAX_DEEPSEEK_V3:
        mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81""call\xe2\x96\x81""begin\xef\xbd\x9c>"), lit(b, "function"),
            mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"), lit(b, name), lit(b, "\n```json\n");
        break;
    case ST_TOOL_SYNTAX_MISTRAL_ARGS: mark(b, "[TOOL_CALLS]"), lit(b, name), mark(b, "[ARGS]"); break;
    case ST_TOOL_SYNTAX_MISTRAL: lit(b, "{\"name\": \""), lit(b, name), lit(b, "\", \"arguments\": "); break;
    default: mark(b, "<tool_call>"), lit(b, "\n{\"name\": \""), lit(b, name), lit(b, "\", \"arguments\": ");
    }
    snprintf(line, sizeof line, " %s", args);
    put(b, line);
    switch (syntax) {
    case ST_TOOL_SYNTAX_HARMONY: case ST_TOOL_SYNTAX_MISTRAL_ARGS: break;
    case ST_TOOL_SYNTAX_DEEPSEEK: mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81""call\xe2\x96\x81""end\xef\xbd\x9c>"); break;
    case ST_TOOL_SYNTAX_DEEPSEEK_V3: lit(b, "\n```"), mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81""call\xe2\x96\x81""end\xef\xbd\x9c>"); break;
    case ST_TOOL_SYNTAX_MISTRAL: lit(b, "}"); break;
    default: lit(b, "}\n"), mark(b, "</tool_call>");
    }
    put(b, "\n");
}

/* root and calls: what may come first, and how several calls are joined. */
static void root_rules(gb *b, int syntax, int many) {
    const char *join = syntax == ST_TOOL_SYNTAX_MISTRAL ? " (\", \" call)*" : syntax == ST_TOOL_SYNTAX_DEEPSEEK_V3 || syntax <= ST_TOOL_SYNTAX_HERMES_JSON_THINK ? " (\"\\n\" call)*" : " call*";
    put(b, "calls ::= call");
    put(b, many && syntax != ST_TOOL_SYNTAX_HARMONY ? join : "");
    put(b, "\n");
    switch (syntax) {
    case ST_TOOL_SYNTAX_HERMES_JSON_THINK:
        put(b, "think ::= \"<think>\" ([^<] | \"<\" [^/])* \"</think>\" [ \\n]*\nroot ::= think? calls\n");
        break;
    case ST_TOOL_SYNTAX_HARMONY: /* an analysis message may come first */
        put(b, "analysis ::="), mark(b, "<|channel|>"), lit(b, "analysis"), mark(b, "<|message|>"), put(b, " [^\\x00]*"),
            mark(b, "<|end|>"), mark(b, "<|start|>"), lit(b, "assistant"), put(b, "\nroot ::= analysis? calls\n");
        break;
    case ST_TOOL_SYNTAX_DEEPSEEK: case ST_TOOL_SYNTAX_DEEPSEEK_V3:
        put(b, "root ::="), mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81""calls\xe2\x96\x81""begin\xef\xbd\x9c>"), put(b, " calls"),
            mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81""calls\xe2\x96\x81""end\xef\xbd\x9c>"), put(b, "\n");
        break;
    case ST_TOOL_SYNTAX_MISTRAL: put(b, "root ::="), mark(b, "[TOOL_CALLS]"), put(b, " \"[\" calls \"]\"\n"); break;
    default: put(b, "root ::= calls\n");
    }
}

/* The tool's name as it stands in the output: JSON-escaped where the syntax writes JSON. */
static void name_text(int syntax, const char *name, char *out, size_t n) {
    int json = syntax == ST_TOOL_SYNTAX_MISTRAL || syntax <= ST_TOOL_SYNTAX_HERMES_JSON_THINK;
    size_t o = 0;
    for (const char *c = name; *c && o + 3 < n; c++) {
        if (json && (*c == '"' || *c == '\\')) out[o++] = '\\';
        out[o++] = *c;
    }
    out[o] = 0;
}

/* Every (or the named) tool's call rule; the number of tools, or -1 with err. */
static int tool_rules(gb *b, gb *calls, const st_agent_req *a, int syntax, cJSON *tools, st_oai_error *err) {
    int i = 0, n = 0;
    char msg[300], top[40], prefix[16], name[300];
    cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (a->tool_choice == ST_TOOL_CHOICE_NAMED && strcmp(nm->valuestring, a->tool_name)) {
            i++;
            continue;
        }
        snprintf(prefix, sizeof prefix, "t%d_", i);
        char *rules = st_json_schema_rules(cJSON_IsObject(params) ? params : NULL, prefix, n == 0, top, sizeof top, msg, sizeof msg);
        if (!rules) {
            st_oai_error_set(err, 400, NULL, "invalid_value", "tools", "tools[%d].function.parameters: %s", i, msg);
            return -1;
        }
        put(b, rules);
        free(rules);
        name_text(syntax, nm->valuestring, name, sizeof name);
        call_rule(b, syntax, prefix, name, top);
        put(calls, n ? " | " : "call ::= ");
        put(calls, prefix);
        put(calls, "call");
        n++, i++;
    }
    return n;
}

int st_agent_force_tools(st_agent_req *a, int syntax, st_tool_mark_fn markf, const void *u, st_oai_error *err) {
    if (a->grammar || a->tool_choice < ST_TOOL_CHOICE_REQUIRED || syntax == ST_TOOL_SYNTAX_NONE || !a->tools_json) return 0;
    cJSON *tools = cJSON_Parse(a->tools_json);
    gb b = {.mark = markf, .u = u}, calls = {0};
    int rc = -1, n = tool_rules(&b, &calls, a, syntax, tools, err);
    if (n < 0) goto done;
    if (n == 0) {
        st_oai_error_set(err, 400, NULL, "invalid_value", "tool_choice", "tool_choice names '%s', which is not in 'tools'", a->tool_name);
        goto done;
    }
    put(&calls, "\n");
    put(&b, calls.p);
    root_rules(&b, syntax, a->parallel_tool_calls && a->tool_choice == ST_TOOL_CHOICE_REQUIRED);
    if (b.oom || calls.oom) {
        st_oai_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        goto done;
    }
    a->grammar = b.p;
    b.p = NULL;
    rc = 0;
done:
    free(b.p);
    free(calls.p);
    cJSON_Delete(tools);
    return rc;
}
