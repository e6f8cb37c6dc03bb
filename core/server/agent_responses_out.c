/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/responses output: a chat completion (or its stream chunks) as a Response object (or
 * Responses stream events: response.created, output_item.added, content_part.added,
 * output_text.delta, function_call_arguments.delta/.done, output_item.done, response.completed). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent.h"

struct st_resp_stream {
    char id[80], model[128];
    long created;
    int seq, started, msg_open, n_out, reasoning_sent;
    char *text, *reasoning;
    cJSON *items; /* finished output items, in order */
    char finish[32];
    int in_tok, out_tok, cached_tok;
};

static void cat(char **dst, const char *s) {
    if (!s || !*s) return;
    size_t a = *dst ? strlen(*dst) : 0, b = strlen(s);
    char *p = realloc(*dst, a + b + 1);
    if (!p) return;
    memcpy(p + a, s, b + 1);
    *dst = p;
}

st_resp_stream *st_resp_stream_new(const char *chat_id, long created, const char *model) {
    st_resp_stream *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    snprintf(r->id, sizeof r->id, "resp_%s", chat_id);
    snprintf(r->model, sizeof r->model, "%s", model);
    r->created = created;
    r->items = cJSON_CreateArray();
    return r;
}

void st_resp_stream_free(st_resp_stream *r) {
    if (!r) return;
    free(r->text);
    free(r->reasoning);
    cJSON_Delete(r->items);
    free(r);
}

static cJSON *message_item(const st_resp_stream *r, const char *status) {
    char id[96];
    snprintf(id, sizeof id, "msg_%s", r->id + 5);
    cJSON *m = cJSON_CreateObject(), *part = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "type", "message");
    cJSON_AddStringToObject(m, "id", id);
    cJSON_AddStringToObject(m, "status", status);
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(m, "content");
    if (!strcmp(status, "in_progress")) {
        cJSON_Delete(part);
        return m;
    }
    cJSON_AddStringToObject(part, "type", "output_text");
    cJSON_AddStringToObject(part, "text", r->text ? r->text : "");
    cJSON_AddArrayToObject(part, "annotations");
    cJSON_AddItemToArray(content, part);
    return m;
}

static cJSON *response_obj(const st_resp_stream *r, const char *status) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", "response");
    cJSON_AddNumberToObject(o, "created_at", (double)r->created);
    cJSON_AddStringToObject(o, "status", status);
    cJSON_AddStringToObject(o, "model", r->model);
    cJSON_AddItemToObject(o, "output", cJSON_Duplicate(r->items, 1));
    cJSON_AddNullToObject(o, "error");
    if (!strcmp(status, "incomplete")) cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "incomplete_details"), "reason", "max_output_tokens");
    else cJSON_AddNullToObject(o, "incomplete_details");
    cJSON_AddBoolToObject(o, "parallel_tool_calls", 1);
    cJSON_AddObjectToObject(o, "metadata");
    if (strcmp(status, "in_progress")) {
        cJSON *u = cJSON_AddObjectToObject(o, "usage");
        cJSON_AddNumberToObject(u, "input_tokens", r->in_tok);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "input_tokens_details"), "cached_tokens", r->cached_tok);
        cJSON_AddNumberToObject(u, "output_tokens", r->out_tok);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "output_tokens_details"), "reasoning_tokens", 0);
        cJSON_AddNumberToObject(u, "total_tokens", r->in_tok + r->out_tok);
    } else cJSON_AddNullToObject(o, "usage");
    return o;
}

/* "event: T\ndata: {...}\n\n" with type and sequence_number added to ev (consumed). */
static void emit(st_resp_stream *r, const char *type, cJSON *ev, char **out) {
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddNumberToObject(ev, "sequence_number", r->seq++);
    char *j = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    cat(out, "event: ");
    cat(out, type);
    cat(out, "\ndata: ");
    cat(out, j);
    cat(out, "\n\n");
    free(j);
}

static cJSON *at(int output_index, const char *item_id) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "output_index", output_index);
    if (item_id) cJSON_AddStringToObject(e, "item_id", item_id);
    return e;
}

static void flush_reasoning(st_resp_stream *r) {
    if (r->reasoning_sent || !r->reasoning) return;
    cJSON *it = cJSON_CreateObject(), *c = cJSON_CreateObject();
    char id[96];
    snprintf(id, sizeof id, "rs_%s", r->id + 5);
    cJSON_AddStringToObject(it, "type", "reasoning");
    cJSON_AddStringToObject(it, "id", id);
    cJSON_AddArrayToObject(it, "summary");
    cJSON_AddStringToObject(c, "type", "reasoning_text");
    cJSON_AddStringToObject(c, "text", r->reasoning);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(it, "content"), c);
    cJSON_AddItemToArray(r->items, it);
    r->n_out++;
    r->reasoning_sent = 1;
}

static void close_message(st_resp_stream *r, char **out) {
    if (!r->msg_open) return;
    char id[96];
    snprintf(id, sizeof id, "msg_%s", r->id + 5);
    int idx = r->n_out;
    cJSON *e = at(idx, id);
    cJSON_AddNumberToObject(e, "content_index", 0);
    cJSON_AddStringToObject(e, "text", r->text ? r->text : "");
    emit(r, "response.output_text.done", e, out);
    cJSON *item = message_item(r, "completed");
    e = at(idx, id);
    cJSON_AddNumberToObject(e, "content_index", 0);
    cJSON_AddItemToObject(e, "part", cJSON_Duplicate(cJSON_GetArrayItem(cJSON_GetObjectItem(item, "content"), 0), 1));
    emit(r, "response.content_part.done", e, out);
    e = at(idx, NULL);
    cJSON_AddItemToObject(e, "item", cJSON_Duplicate(item, 1));
    emit(r, "response.output_item.done", e, out);
    cJSON_AddItemToArray(r->items, item);
    r->n_out++;
    r->msg_open = 0;
}

static void text_delta(st_resp_stream *r, const char *delta, char **out) {
    char id[96];
    snprintf(id, sizeof id, "msg_%s", r->id + 5);
    if (!r->msg_open) {
        flush_reasoning(r);
        cJSON *e = at(r->n_out, NULL);
        cJSON_AddItemToObject(e, "item", message_item(r, "in_progress"));
        emit(r, "response.output_item.added", e, out);
        e = at(r->n_out, id);
        cJSON *part = cJSON_CreateObject();
        cJSON_AddStringToObject(part, "type", "output_text");
        cJSON_AddStringToObject(part, "text", "");
        cJSON_AddArrayToObject(part, "annotations");
        cJSON_AddNumberToObject(e, "content_index", 0);
        cJSON_AddItemToObject(e, "part", part);
        emit(r, "response.content_part.added", e, out);
        r->msg_open = 1;
    }
    cat(&r->text, delta);
    cJSON *e = at(r->n_out, id);
    cJSON_AddNumberToObject(e, "content_index", 0);
    cJSON_AddStringToObject(e, "delta", delta);
    emit(r, "response.output_text.delta", e, out);
}

static void function_call(st_resp_stream *r, const cJSON *tc, char **out) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function"), *cid = cJSON_GetObjectItemCaseSensitive(tc, "id");
    const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
    const cJSON *args = fn ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;
    close_message(r, out);
    flush_reasoning(r);
    char id[128];
    snprintf(id, sizeof id, "fc_%s", cJSON_IsString(cid) ? cid->valuestring : "");
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "type", "function_call");
    cJSON_AddStringToObject(item, "id", id);
    cJSON_AddStringToObject(item, "call_id", cJSON_IsString(cid) ? cid->valuestring : "");
    cJSON_AddStringToObject(item, "name", cJSON_IsString(name) ? name->valuestring : "");
    cJSON_AddStringToObject(item, "arguments", "");
    cJSON_AddStringToObject(item, "status", "in_progress");
    if (out) {
        cJSON *e = at(r->n_out, NULL);
        cJSON_AddItemToObject(e, "item", cJSON_Duplicate(item, 1));
        emit(r, "response.output_item.added", e, out);
        e = at(r->n_out, id);
        cJSON_AddStringToObject(e, "delta", cJSON_IsString(args) ? args->valuestring : "{}");
        emit(r, "response.function_call_arguments.delta", e, out);
        e = at(r->n_out, id);
        cJSON_AddStringToObject(e, "arguments", cJSON_IsString(args) ? args->valuestring : "{}");
        emit(r, "response.function_call_arguments.done", e, out);
    }
    cJSON_ReplaceItemInObjectCaseSensitive(item, "arguments", cJSON_CreateString(cJSON_IsString(args) ? args->valuestring : "{}"));
    cJSON_ReplaceItemInObjectCaseSensitive(item, "status", cJSON_CreateString("completed"));
    if (out) {
        cJSON *e = at(r->n_out, NULL);
        cJSON_AddItemToObject(e, "item", cJSON_Duplicate(item, 1));
        emit(r, "response.output_item.done", e, out);
    }
    cJSON_AddItemToArray(r->items, item);
    r->n_out++;
}

static void take_usage(st_resp_stream *r, const cJSON *u) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens"), *c = cJSON_GetObjectItemCaseSensitive(u, "completion_tokens");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens_details");
    const cJSON *k = d ? cJSON_GetObjectItemCaseSensitive(d, "cached_tokens") : NULL;
    r->in_tok = cJSON_IsNumber(p) ? p->valueint : 0;
    r->out_tok = cJSON_IsNumber(c) ? c->valueint : 0;
    r->cached_tok = cJSON_IsNumber(k) ? k->valueint : 0;
}

static const char *final_status(const st_resp_stream *r) { return !strcmp(r->finish, "length") ? "incomplete" : "completed"; }

void st_resp_stream_feed(st_resp_stream *r, const char *chunk, char **out) {
    cJSON *o = cJSON_Parse(chunk);
    if (!o) return;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
    if (err) {
        cJSON *e = cJSON_Duplicate(err, 1);
        emit(r, "error", e, out);
        cJSON_Delete(o);
        return;
    }
    if (!r->started) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "response", response_obj(r, "in_progress"));
        emit(r, "response.created", e, out);
        r->started = 1;
    }
    const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
    const cJSON *d = ch ? cJSON_GetObjectItemCaseSensitive(ch, "delta") : NULL, *tc;
    const cJSON *content = d ? cJSON_GetObjectItemCaseSensitive(d, "content") : NULL;
    const cJSON *reasoning = d ? cJSON_GetObjectItemCaseSensitive(d, "reasoning_content") : NULL;
    const cJSON *fin = ch ? cJSON_GetObjectItemCaseSensitive(ch, "finish_reason") : NULL;
    if (cJSON_IsString(reasoning)) cat(&r->reasoning, reasoning->valuestring);
    if (cJSON_IsString(content) && content->valuestring[0]) text_delta(r, content->valuestring, out);
    const cJSON *tcs = d ? cJSON_GetObjectItemCaseSensitive(d, "tool_calls") : NULL;
    cJSON_ArrayForEach(tc, tcs) function_call(r, tc, out);
    if (cJSON_IsString(fin)) {
        snprintf(r->finish, sizeof r->finish, "%s", fin->valuestring);
        close_message(r, out);
        flush_reasoning(r);
    }
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "usage");
    if (!ch && cJSON_IsObject(u)) { /* the usage chunk comes last */
        take_usage(r, u);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "response", response_obj(r, final_status(r)));
        emit(r, "response.completed", e, out);
    }
    cJSON_Delete(o);
}

char *st_responses_from_chat(const char *chat_json) {
    cJSON *o = cJSON_Parse(chat_json);
    const cJSON *id = o ? cJSON_GetObjectItemCaseSensitive(o, "id") : NULL;
    const cJSON *ch = o ? cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0) : NULL;
    if (!cJSON_IsString(id) || !ch) {
        cJSON_Delete(o);
        return NULL;
    }
    const cJSON *created = cJSON_GetObjectItemCaseSensitive(o, "created"), *model = cJSON_GetObjectItemCaseSensitive(o, "model");
    st_resp_stream *r = st_resp_stream_new(id->valuestring, cJSON_IsNumber(created) ? (long)created->valuedouble : 0,
                                           cJSON_IsString(model) ? model->valuestring : "");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(ch, "message"), *tc;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content"), *reasoning = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
    const cJSON *fin = cJSON_GetObjectItemCaseSensitive(ch, "finish_reason");
    if (cJSON_IsString(reasoning)) cat(&r->reasoning, reasoning->valuestring);
    flush_reasoning(r);
    if (cJSON_IsString(content) && content->valuestring[0]) {
        cat(&r->text, content->valuestring);
        cJSON_AddItemToArray(r->items, message_item(r, "completed"));
        r->n_out++;
    }
    cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(m, "tool_calls")) function_call(r, tc, NULL);
    if (cJSON_IsString(fin)) snprintf(r->finish, sizeof r->finish, "%s", fin->valuestring);
    take_usage(r, cJSON_GetObjectItemCaseSensitive(o, "usage"));
    cJSON *resp = response_obj(r, final_status(r));
    cJSON_AddStringToObject(resp, "output_text", r->text ? r->text : "");
    char *s = cJSON_PrintUnformatted(resp);
    cJSON_Delete(resp);
    cJSON_Delete(o);
    st_resp_stream_free(r);
    return s;
}
