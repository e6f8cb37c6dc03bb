/* SPDX-License-Identifier: Apache-2.0 */
/* tool_choice "required" / named, enforced: a grammar of the template's call syntax whose
 * arguments follow each tool's JSON Schema (grammar/json_schema.h), or for the XML syntaxes
 * (Qwen3-Coder, GLM) one element per property; the syntax's markers are required as the
 * model's own control tokens where the vocabulary has them (<[id]>). */
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
    if (strstr(jinja, "<function=")) return ST_TOOL_SYNTAX_QWEN_XML;
    if (strstr(jinja, "<arg_key>")) return ST_TOOL_SYNTAX_GLM_XML;
    return strstr(jinja, "<think>") ? ST_TOOL_SYNTAX_HERMES_JSON_THINK : ST_TOOL_SYNTAX_HERMES_JSON;
}

typedef struct gb {
    char *p;
    size_t n;
    int oom;
    int based; /* the JSON base rules (space, string, ...) are in */
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

/* ---- the XML syntaxes: one element per property ------------------------------------------ */

/* xtext: free text that never holds `close` (a closing tag whose only '<' is its first byte),
 * so the first `close` after it is the one the grammar writes. xbrk: a start of close broken
 * by another byte than '<'; xpre: a start of close cut short (by the next '<', or by the end). */
static void text_rules(gb *b, const char *close) {
    size_t n = strlen(close);
    char c[8];
    put(b, "xbrk ::= \"<\"");
    for (size_t i = 1; i < n; i++) {
        snprintf(c, sizeof c, "%c", close[i]);
        put(b, " ([^"), put(b, c), put(b, "<]");
        if (i + 1 < n) put(b, " |"), lit(b, c);
    }
    for (size_t i = 1; i < n; i++) put(b, ")");
    put(b, "\nxpre ::= \"<\"");
    for (size_t i = 1; i + 1 < n; i++) snprintf(c, sizeof c, "%c", close[i]), put(b, " ("), lit(b, c);
    for (size_t i = 1; i + 1 < n; i++) put(b, ")?");
    put(b, "\nxtext ::= ([^<] | xpre* xbrk)* xpre*\n");
}

/* May the value be any text? Strings, lists of types with "string", and untyped schemas. */
static int is_text(const cJSON *s) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type"), *e;
    if (cJSON_IsString(t)) return !strcmp(t->valuestring, "string");
    if (cJSON_IsArray(t)) {
        cJSON_ArrayForEach(e, t) if (cJSON_IsString(e) && !strcmp(e->valuestring, "string")) return 1;
        return 0;
    }
    static const char *const typed[] = {"properties", "items", "anyOf", "oneOf", "allOf", "$ref"};
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++)
        if (cJSON_HasObjectItem(s, typed[i])) return 0;
    return 1;
}

/* The rule `v` for one property's value as the XML forms write it: a string bare (the
 * parser reads any text that is not JSON as a string), anything else as JSON. */
static int value_rule(gb *b, const cJSON *s, const char *v, char *msg, size_t mn) {
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum"), *cn = cJSON_GetObjectItemCaseSensitive(s, "const"), *e;
    if (cJSON_IsArray(en) && !en->child && !cn) return snprintf(msg, mn, "properties.%s.enum: empty", s->string), -1;
    put(b, v), put(b, " ::=");
    if (cJSON_IsArray(en) || cn) {
        int first = 1;
        for (e = cn ? cn : en->child; e; e = cn ? NULL : e->next, first = 0) {
            char *j = cJSON_IsString(e) ? NULL : cJSON_PrintUnformatted(e);
            put(b, first ? "" : " |"), lit(b, j ? j : cJSON_IsString(e) ? e->valuestring : "");
            free(j);
        }
        return put(b, "\n"), 0;
    }
    if (is_text(s)) return put(b, " xtext\n"), 0;
    char top[40], prefix[48];
    snprintf(prefix, sizeof prefix, "%s_", v);
    char why[200];
    char *rules = st_json_schema_rules(s, prefix, !b->based, top, sizeof top, why, sizeof why);
    if (!rules) return snprintf(msg, mn, "properties.%s: %s", s->string, why), -1;
    b->based = 1;
    put(b, " "), put(b, top), put(b, "\n"), put(b, rules);
    free(rules);
    return 0;
}

/* The property k's element with value rule v. */
static void element(gb *b, int syntax, const char *k, const char *v) {
    if (syntax == ST_TOOL_SYNTAX_QWEN_XML) {
        lit(b, "<parameter="), lit(b, k), lit(b, ">\n"), put(b, " "), put(b, v), lit(b, "\n</parameter>\n");
        return;
    }
    mark(b, "<arg_key>"), lit(b, k), mark(b, "</arg_key>"), lit(b, "\n"), mark(b, "<arg_value>"), put(b, " "), put(b, v),
        mark(b, "</arg_value>"), lit(b, "\n");
}

/* prefix+"args": the elements of params' properties in their order, the required ones present.
 * The rule's name in top; -1 with msg for a property schema that cannot be a grammar. */
static int xml_args(gb *b, int syntax, const cJSON *params, const char *prefix, char *top, size_t tn, char *msg, size_t mn) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(params, "required"), *p, *r;
    char v[64];
    int i = 0;
    if (props && !cJSON_IsObject(props)) return snprintf(msg, mn, "properties: must be an object"), -1;
    snprintf(top, tn, "%sargs", prefix);
    cJSON_ArrayForEach(p, props) { /* the value rules first */
        snprintf(v, sizeof v, "%sv%d", prefix, i++);
        if (value_rule(b, p, v, msg, mn)) return -1;
    }
    put(b, top), put(b, " ::= \"\"");
    i = 0;
    cJSON_ArrayForEach(p, props) {
        int need = 0;
        cJSON_ArrayForEach(r, req) need |= cJSON_IsString(r) && !strcmp(r->valuestring, p->string);
        snprintf(v, sizeof v, "%sv%d", prefix, i++);
        put(b, " (");
        element(b, syntax, p->string, v);
        put(b, need ? ")" : ")?");
    }
    put(b, "\n");
    return 0;
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
    case ST_TOOL_SYNTAX_QWEN_XML: mark(b, "<tool_call>"), lit(b, "\n<function="), lit(b, name), lit(b, ">\n"); break;
    case ST_TOOL_SYNTAX_GLM_XML: mark(b, "<tool_call>"), lit(b, name), lit(b, "\n"); break;
    default: mark(b, "<tool_call>"), lit(b, "\n{\"name\": \""), lit(b, name), lit(b, "\", \"arguments\": ");
    }
    snprintf(line, sizeof line, " %s", args);
    put(b, line);
    switch (syntax) {
    case ST_TOOL_SYNTAX_HARMONY: case ST_TOOL_SYNTAX_MISTRAL_ARGS: break;
    case ST_TOOL_SYNTAX_DEEPSEEK: mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81""call\xe2\x96\x81""end\xef\xbd\x9c>"); break;
    case ST_TOOL_SYNTAX_DEEPSEEK_V3: lit(b, "\n```"), mark(b, "<\xef\xbd\x9ctool\xe2\x96\x81""call\xe2\x96\x81""end\xef\xbd\x9c>"); break;
    case ST_TOOL_SYNTAX_MISTRAL: lit(b, "}"); break;
    case ST_TOOL_SYNTAX_QWEN_XML: lit(b, "</function>\n"), mark(b, "</tool_call>"); break;
    case ST_TOOL_SYNTAX_GLM_XML: mark(b, "</tool_call>"); break;
    default: lit(b, "}\n"), mark(b, "</tool_call>");
    }
    put(b, "\n");
}

/* root and calls: what may come first, and how several calls are joined. */
static void root_rules(gb *b, int syntax, int many) {
    int nl = syntax == ST_TOOL_SYNTAX_DEEPSEEK_V3 || syntax <= ST_TOOL_SYNTAX_HERMES_JSON_THINK || syntax >= ST_TOOL_SYNTAX_QWEN_XML;
    const char *join = syntax == ST_TOOL_SYNTAX_MISTRAL ? " (\", \" call)*" : nl ? " (\"\\n\" call)*" : " call*";
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
    case ST_TOOL_SYNTAX_QWEN_XML: text_rules(b, "</parameter>"), put(b, "root ::= calls\n"); break;
    case ST_TOOL_SYNTAX_GLM_XML: /* GLM thinks first */
        text_rules(b, "</arg_value>");
        put(b, "think ::= [ \\n]*"), mark(b, "<think>"), put(b, " ([^<] | \"<\" [^/])*"), mark(b, "</think>"),
            put(b, " [ \\n]*\nroot ::= think? calls\n");
        break;
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

/* The rules of one tool's arguments (the rule's name in top): XML elements or a JSON object. */
static int args_rules(gb *b, int syntax, const cJSON *params, const char *prefix, char *top, size_t tn, char *msg, size_t mn) {
    if (syntax >= ST_TOOL_SYNTAX_QWEN_XML) return xml_args(b, syntax, params, prefix, top, tn, msg, mn);
    char *rules = st_json_schema_rules(params, prefix, !b->based, top, tn, msg, mn);
    if (!rules) return -1;
    b->based = 1;
    put(b, rules);
    free(rules);
    return 0;
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
        if (args_rules(b, syntax, cJSON_IsObject(params) ? params : NULL, prefix, top, sizeof top, msg, sizeof msg)) {
            st_oai_error_set(err, 400, NULL, "invalid_value", "tools", "tools[%d].function.parameters: %s", i, msg);
            return -1;
        }
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
