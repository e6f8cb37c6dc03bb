/* SPDX-License-Identifier: Apache-2.0 */
/* Reading tools, tool_choice and the other agent fields of a request. */
#include "server/agent.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "server/openai.h"

static int parse_tools(const cJSON *root, st_agent_req *a, st_oai_error *err) {
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools"), *t;
    if (!tools || cJSON_IsNull(tools)) return 0;
    if (!cJSON_IsArray(tools)) return st_oai_error_set(err, 400, NULL, "invalid_type", "tools", "'tools' must be an array");
    int i = 0;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "function"))
            return st_oai_error_set(err, 400, NULL, "invalid_value", "tools", "tools[%d].type must be \"function\"", i);
        if (!cJSON_IsObject(fn) || !cJSON_IsString(name) || !name->valuestring[0])
            return st_oai_error_set(err, 400, NULL, "invalid_value", "tools", "tools[%d].function.name must be a non-empty string", i);
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
            return st_oai_error_set(err, 400, NULL, "invalid_type", "tools", "tools[%d].function.parameters must be a JSON Schema object", i);
        i++;
    }
    a->n_tools = i;
    return 0;
}

static int parse_tool_choice(const cJSON *root, st_agent_req *a, st_oai_error *err) {
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    if (!tc || cJSON_IsNull(tc)) return 0;
    if (cJSON_IsString(tc)) {
        const char *s = tc->valuestring;
        if (!strcmp(s, "auto")) a->tool_choice = ST_TOOL_CHOICE_AUTO;
        else if (!strcmp(s, "none")) a->tool_choice = ST_TOOL_CHOICE_NONE;
        else if (!strcmp(s, "required")) a->tool_choice = ST_TOOL_CHOICE_REQUIRED;
        else return st_oai_error_set(err, 400, NULL, "invalid_value", "tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}}");
    } else {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (!cJSON_IsString(name))
            return st_oai_error_set(err, 400, NULL, "invalid_value", "tool_choice", "'tool_choice.function.name' must be a string");
        a->tool_choice = ST_TOOL_CHOICE_NAMED;
        snprintf(a->tool_name, sizeof a->tool_name, "%s", name->valuestring);
    }
    if (a->tool_choice >= ST_TOOL_CHOICE_REQUIRED && !a->n_tools)
        return st_oai_error_set(err, 400, NULL, "invalid_value", "tool_choice", "'tool_choice' asks for a tool call but 'tools' is empty");
    if (a->tool_choice >= ST_TOOL_CHOICE_REQUIRED)
        a->tools_json = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(root, "tools"));
    return 0;
}

/* Fields whose features are not there yet: a 400 naming them, never silently ignored. */
static int refuse_unsupported(const cJSON *root, st_oai_error *err) {
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(root, "logprobs");
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "response_format");
    const cJSON *rft = cJSON_IsObject(rf) ? cJSON_GetObjectItemCaseSensitive(rf, "type") : NULL;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "n");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "grammar");
    const cJSON *lb = cJSON_GetObjectItemCaseSensitive(root, "logit_bias");
    const cJSON *echo = cJSON_GetObjectItemCaseSensitive(root, "echo");
    (void)rf;
    (void)rft;
    (void)g;
    (void)lb;
    (void)lp;
    (void)n;
    (void)echo;
    const char *what = NULL;
    if (what)
        return st_oai_error_set(err, 400, NULL, "unsupported_parameter", what, "'%s' is not supported by this server yet", what);
    return 0;
}

/* response_format json_object / json_schema, or a GBNF "grammar": a->grammar, checked here so
 * a mistake is a 400 that says where. */
static int parse_structured(const cJSON *root, st_agent_req *a, st_oai_error *err) {
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "response_format");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "grammar");
    char msg[300];
    if (rf && !cJSON_IsNull(rf)) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(rf, "type");
        if (!cJSON_IsString(ty))
            return st_oai_error_set(err, 400, NULL, "invalid_value", "response_format", "'response_format.type' must be a string");
        if (!strcmp(ty->valuestring, "json_object")) a->grammar = st_json_schema_to_gbnf(NULL, msg, sizeof msg);
        else if (!strcmp(ty->valuestring, "json_schema")) {
            const cJSON *js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
            const cJSON *schema = js ? cJSON_GetObjectItemCaseSensitive(js, "schema") : NULL;
            if (!cJSON_IsObject(schema))
                return st_oai_error_set(err, 400, NULL, "invalid_value", "response_format", "'response_format.json_schema.schema' must be an object");
            a->grammar = st_json_schema_to_gbnf(schema, msg, sizeof msg);
            if (!a->grammar)
                return st_oai_error_set(err, 400, NULL, "invalid_value", "response_format", "invalid JSON schema at response_format.json_schema.schema.%s", msg);
        } else if (strcmp(ty->valuestring, "text"))
            return st_oai_error_set(err, 400, NULL, "invalid_value", "response_format", "'response_format.type' must be text, json_object or json_schema");
    }
    if (g && !cJSON_IsNull(g)) {
        if (!cJSON_IsString(g)) return st_oai_error_set(err, 400, NULL, "invalid_type", "grammar", "'grammar' must be a GBNF string");
        if (a->grammar) return st_oai_error_set(err, 400, NULL, "invalid_value", "grammar", "give 'grammar' or 'response_format', not both");
        if (g->valuestring[0] && !(a->grammar = strdup(g->valuestring)))
            return st_oai_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (!a->grammar) return 0;
    st_grammar *c = st_grammar_parse(a->grammar, msg, sizeof msg);
    int bad = !c || st_grammar_check(c, msg, sizeof msg); /* too ambiguous to match within bounds */
    st_grammar_free(c);
    if (bad) return st_oai_error_set(err, 400, NULL, "invalid_grammar", g && cJSON_IsString(g) ? "grammar" : "response_format", "invalid grammar: %s", msg);
    return 0;
}

static int parse_bias(const cJSON *root, st_agent_req *a, st_oai_error *err) {
    const cJSON *lb = cJSON_GetObjectItemCaseSensitive(root, "logit_bias"), *e;
    if (!lb || cJSON_IsNull(lb)) return 0;
    if (!cJSON_IsObject(lb)) return st_oai_error_set(err, 400, NULL, "invalid_type", "logit_bias", "'logit_bias' must be an object of token id -> bias");
    int n = cJSON_GetArraySize(lb);
    a->bias_ids = malloc(sizeof *a->bias_ids * (size_t)(n ? n : 1));
    a->bias_vals = malloc(sizeof *a->bias_vals * (size_t)(n ? n : 1));
    if (!a->bias_ids || !a->bias_vals) return st_oai_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
    cJSON_ArrayForEach(e, lb) {
        char *end;
        long id = strtol(e->string, &end, 10);
        if (*end || end == e->string || id < 0 || id > INT32_MAX)
            return st_oai_error_set(err, 400, NULL, "invalid_value", "logit_bias", "logit_bias key '%.60s' is not a token id", e->string);
        if (!cJSON_IsNumber(e) || e->valuedouble < -100 || e->valuedouble > 100)
            return st_oai_error_set(err, 400, NULL, "invalid_value", "logit_bias", "logit_bias['%.60s'] must be a number from -100 to 100", e->string);
        a->bias_ids[a->n_bias] = (int32_t)id;
        a->bias_vals[a->n_bias++] = e->valuedouble <= -100 ? -INFINITY : (float)e->valuedouble;
    }
    return 0;
}

/* chat: logprobs true + top_logprobs 0..20; completions: logprobs N (0..5) */
static int parse_logprobs(const cJSON *root, int chat, st_agent_req *a, st_oai_error *err) {
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(root, "logprobs");
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(root, "top_logprobs");
    if (!lp || cJSON_IsNull(lp) || cJSON_IsFalse(lp)) {
        if (top && !cJSON_IsNull(top) && chat)
            return st_oai_error_set(err, 400, NULL, "invalid_value", "top_logprobs", "'top_logprobs' needs 'logprobs': true");
        return 0;
    }
    if (chat) {
        if (!cJSON_IsBool(lp)) return st_oai_error_set(err, 400, NULL, "invalid_type", "logprobs", "'logprobs' must be a boolean");
        a->want_logprobs = 1;
        if (top && !cJSON_IsNull(top)) {
            if (!cJSON_IsNumber(top) || top->valuedouble < 0 || top->valuedouble > 20 || top->valuedouble != (int)top->valuedouble)
                return st_oai_error_set(err, 400, NULL, "invalid_value", "top_logprobs", "'top_logprobs' must be an integer from 0 to 20");
            a->top_logprobs = (int32_t)top->valuedouble;
        }
        return 0;
    }
    if (!cJSON_IsNumber(lp) || lp->valuedouble < 0 || lp->valuedouble > 5 || lp->valuedouble != (int)lp->valuedouble)
        return st_oai_error_set(err, 400, NULL, "invalid_value", "logprobs", "'logprobs' must be an integer from 0 to 5");
    a->want_logprobs = 1;
    a->top_logprobs = (int32_t)lp->valuedouble;
    return 0;
}

void st_agent_req_free(st_agent_req *a) {
    free(a->grammar);
    free(a->tools_json);
    a->tools_json = NULL;
    free(a->bias_ids);
    free(a->bias_vals);
    a->grammar = NULL;
    a->bias_ids = NULL;
    a->bias_vals = NULL;
    a->n_bias = 0;
}

int st_agent_parse(const cJSON *root, int chat, st_agent_req *a, st_oai_error *err) {
    memset(a, 0, sizeof *a);
    a->parallel_tool_calls = 1;
    if (refuse_unsupported(root, err)) return -1;
    if (chat && parse_tools(root, a, err)) return -1;
    if (!chat && cJSON_GetObjectItemCaseSensitive(root, "tools"))
        return st_oai_error_set(err, 400, NULL, "unsupported_parameter", "tools", "'tools' needs /v1/chat/completions");
    if (parse_tool_choice(root, a, err)) return -1;
    const cJSON *ptc = cJSON_GetObjectItemCaseSensitive(root, "parallel_tool_calls");
    if (cJSON_IsBool(ptc)) a->parallel_tool_calls = cJSON_IsTrue(ptc);
    const cJSON *rfmt = cJSON_GetObjectItemCaseSensitive(root, "reasoning_format");
    a->think_inline = cJSON_IsString(rfmt) && !strcmp(rfmt->valuestring, "none");
    if (parse_structured(root, a, err) || parse_bias(root, a, err) || parse_logprobs(root, chat, a, err)) return -1;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "n"), *echo = cJSON_GetObjectItemCaseSensitive(root, "echo");
    a->n = cJSON_IsNumber(n) ? (int)n->valuedouble : 1;
    if (echo && !cJSON_IsNull(echo) && !cJSON_IsBool(echo))
        return st_oai_error_set(err, 400, NULL, "invalid_type", "echo", "'echo' must be a boolean");
    a->echo = !chat && cJSON_IsTrue(echo);
    if (a->echo && a->want_logprobs)
        return st_oai_error_set(err, 400, NULL, "unsupported_parameter", "echo", "'echo' with 'logprobs' is not supported (prompt tokens have no logprobs here)");
    return 0;
}
