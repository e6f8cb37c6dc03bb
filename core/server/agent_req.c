/* Reading tools, tool_choice and the other agent fields of a request. */
#include "server/agent.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

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
    const char *what = (cJSON_IsTrue(lp) || (cJSON_IsNumber(lp) && lp->valuedouble > 0)) ? "logprobs"
                       : rf && !cJSON_IsNull(rf) && !(cJSON_IsString(rft) && !strcmp(rft->valuestring, "text")) ? "response_format"
                       : cJSON_IsNumber(n) && n->valuedouble != 1 ? "n"
                       : cJSON_IsString(g) && g->valuestring[0] ? "grammar"
                       : cJSON_IsObject(lb) && cJSON_GetArraySize(lb) > 0 ? "logit_bias"
                       : cJSON_IsTrue(echo) ? "echo"
                       : NULL;
    if (what)
        return st_oai_error_set(err, 400, NULL, "unsupported_parameter", what, "'%s' is not supported by this server yet", what);
    return 0;
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
    return 0;
}
