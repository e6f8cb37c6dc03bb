/* SPDX-License-Identifier: Apache-2.0 */
/* The context a chat template is rendered with, built from the request's JSON. */
#include "template/chat_jinja.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *st_chat_text_parts(const cJSON *c) {
    if (!cJSON_IsArray(c)) return NULL;
    size_t len = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, c) {
        const cJSON *tx = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (cJSON_IsString(tx)) len += strlen(tx->valuestring);
    }
    char *s = malloc(len + 1);
    if (!s) return NULL;
    s[0] = 0;
    cJSON_ArrayForEach(p, c) {
        const cJSON *tx = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (cJSON_IsString(tx)) strcat(s, tx->valuestring);
    }
    return s;
}

/* Text parts [{type:"text", text}] joined into one string; other content as is. */
static cJSON *normalize_content(const cJSON *c) {
    if (!c || cJSON_IsNull(c)) return cJSON_CreateString("");
    if (!cJSON_IsArray(c)) return cJSON_Duplicate(c, 1);
    char *s = st_chat_text_parts(c);
    if (!s) return NULL;
    cJSON *r = cJSON_CreateString(s);
    free(s);
    return r;
}

/* tool_calls[].function.arguments given as JSON text become objects (templates iterate them). */
static void normalize_tool_calls(cJSON *m) {
    cJSON *tcs = cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), *tc;
    cJSON_ArrayForEach(tc, tcs) {
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        cJSON *args = fn ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;
        if (!cJSON_IsString(args)) continue;
        cJSON *parsed = cJSON_Parse(args->valuestring);
        if (parsed && cJSON_IsObject(parsed)) cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", parsed);
        else cJSON_Delete(parsed);
    }
}

static cJSON *normalize_messages(const cJSON *msgs) {
    cJSON *out = cJSON_CreateArray();
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        cJSON *c = cJSON_Duplicate(m, 1);
        if (!c) goto fail;
        cJSON_AddItemToArray(out, c);
        cJSON *content = normalize_content(cJSON_GetObjectItemCaseSensitive(m, "content"));
        if (!content) goto fail;
        if (cJSON_HasObjectItem(c, "content")) cJSON_ReplaceItemInObjectCaseSensitive(c, "content", content);
        else cJSON_AddItemToObject(c, "content", content);
        normalize_tool_calls(c);
    }
    return out;
fail:
    cJSON_Delete(out);
    return NULL;
}

char *st_chat_jinja_apply(const st_jinja *t, const cJSON *req, const st_chat_jinja_opts *o, char *err, size_t errlen) {
    char *res = NULL;
    cJSON *ctx = cJSON_CreateObject();
    cJSON *msgs = normalize_messages(cJSON_GetObjectItemCaseSensitive(req, "messages"));
    if (!ctx || !msgs) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    cJSON_AddItemToObject(ctx, "messages", msgs);
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(req, "tools");
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(req, "tool_choice");
    int none = cJSON_IsString(tc) && !strcmp(tc->valuestring, "none");
    if (cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0 && !none)
        cJSON_AddItemToObject(ctx, "tools", cJSON_Duplicate(tools, 1));
    cJSON_AddBoolToObject(ctx, "add_generation_prompt", o->add_generation_prompt);
    cJSON_AddStringToObject(ctx, "bos_token", o->bos_token ? o->bos_token : "");
    cJSON_AddStringToObject(ctx, "eos_token", o->eos_token ? o->eos_token : "");
    const cJSON *effort = cJSON_GetObjectItemCaseSensitive(req, "reasoning_effort");
    if (cJSON_IsString(effort)) cJSON_AddStringToObject(ctx, "reasoning_effort", effort->valuestring);
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(req, "chat_template_kwargs"), *e;
    cJSON_ArrayForEach(e, kw) { /* enable_thinking, ...: the client's words win */
        if (!e->string) continue;
        cJSON_DeleteItemFromObjectCaseSensitive(ctx, e->string);
        cJSON_AddItemToObject(ctx, e->string, cJSON_Duplicate(e, 1));
    }
    res = st_jinja_render(t, ctx, err, errlen);
fail:
    cJSON_Delete(ctx);
    return res;
}
