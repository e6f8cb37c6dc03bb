/* SPDX-License-Identifier: Apache-2.0 */
/* tool_choice "required" / named, enforced: a grammar of the template's call syntax whose
 * arguments follow each tool's JSON Schema (grammar/json_schema.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema.h"
#include "server/agent.h"
#include "server/openai.h"

int st_tool_syntax_of_template(const char *jinja) {
    if (!jinja || !strstr(jinja, "<tool_call>")) return ST_TOOL_SYNTAX_NONE;
    if (strstr(jinja, "<function=") || strstr(jinja, "<arg_key>")) return ST_TOOL_SYNTAX_NONE; /* XML forms */
    return strstr(jinja, "<think>") ? ST_TOOL_SYNTAX_HERMES_JSON_THINK : ST_TOOL_SYNTAX_HERMES_JSON;
}

typedef struct gb {
    char *p;
    size_t n;
    int oom;
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

/* A GBNF literal of text, quotes and backslashes escaped twice: once for JSON, once for GBNF. */
static void put_name_literal(gb *b, const char *name) {
    put(b, "\"<tool_call>\\n{\\\"name\\\": \\\"");
    for (const char *c = name; *c; c++) {
        char t[8] = {*c, 0};
        if (*c == '"' || *c == '\\') snprintf(t, sizeof t, "\\\\\\%c", *c);
        put(b, t);
    }
    put(b, "\\\", \\\"arguments\\\": \"");
}

int st_agent_force_tools(st_agent_req *a, int syntax, st_oai_error *err) {
    if (a->grammar || a->tool_choice < ST_TOOL_CHOICE_REQUIRED || syntax == ST_TOOL_SYNTAX_NONE || !a->tools_json) return 0;
    cJSON *tools = cJSON_Parse(a->tools_json), *t;
    gb b = {0};
    char msg[300], top[40], prefix[16], line[128];
    int i = 0, rc = -1;
    put(&b, "");
    gb calls = {0};
    put(&calls, "call ::= ");
    cJSON_ArrayForEach(t, tools) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (a->tool_choice == ST_TOOL_CHOICE_NAMED && strcmp(name->valuestring, a->tool_name)) {
            i++;
            continue;
        }
        snprintf(prefix, sizeof prefix, "t%d_", i);
        char *rules = st_json_schema_rules(cJSON_IsObject(params) ? params : NULL, prefix, b.n == 0, top, sizeof top, msg, sizeof msg);
        if (!rules) {
            st_oai_error_set(err, 400, NULL, "invalid_value", "tools", "tools[%d].function.parameters: %s", i, msg);
            goto done;
        }
        put(&b, rules);
        free(rules);
        snprintf(line, sizeof line, "%scall ::= ", prefix);
        put(&b, line);
        put_name_literal(&b, name->valuestring);
        snprintf(line, sizeof line, " %s \"}\\n</tool_call>\"\n", top);
        put(&b, line);
        snprintf(line, sizeof line, "%s%scall", calls.n > 9 ? " | " : "", prefix);
        put(&calls, line);
        i++;
    }
    if (b.n == 0) {
        st_oai_error_set(err, 400, NULL, "invalid_value", "tool_choice", "tool_choice names '%s', which is not in 'tools'", a->tool_name);
        goto done;
    }
    put(&b, calls.p);
    int think = syntax == ST_TOOL_SYNTAX_HERMES_JSON_THINK;
    put(&b, "\nthink ::= \"<think>\" ([^<] | \"<\" [^/])* \"</think>\" [ \\n]*\n");
    put(&b, think ? "root ::= think? calls\n" : "root ::= calls\n");
    put(&b, a->parallel_tool_calls && a->tool_choice == ST_TOOL_CHOICE_REQUIRED ? "calls ::= call (\"\\n\" call)*\n" : "calls ::= call\n");
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
