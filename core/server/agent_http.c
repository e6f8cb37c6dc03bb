/* SPDX-License-Identifier: Apache-2.0 */
/* Tool calls in a generation: holding back streamed text that may be a call, and the
 * tool_calls JSON of stream chunks and responses, as OpenAI's SDKs read them. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent.h"
#include "server/tools.h"

void st_agent_stream_init(st_agent_stream *a, int active) {
    memset(a, 0, sizeof *a);
    a->active = active;
}

void st_agent_stream_free(st_agent_stream *a) {
    free(a->held);
    a->held = NULL;
    a->n = 0;
}

static int held_add(st_agent_stream *a, const char *s, size_t n) {
    char *p = realloc(a->held, a->n + n + 1);
    if (!p) return -1;
    memcpy(p + a->n, s, n);
    a->n += n;
    p[a->n] = 0;
    a->held = p;
    return 0;
}

static void append(char **dst, const char *s);

static void append_n(char **dst, const char *s, size_t n) {
    char *t = malloc(n + 1);
    if (!t) return;
    memcpy(t, s, n);
    t[n] = 0;
    append(dst, t);
    free(t);
}

static void held_drop(st_agent_stream *a, size_t n) {
    memmove(a->held, a->held + n, a->n - n + 1);
    a->n -= n;
}

/* Harmony channels as they come: <|channel|>NAME[ to=functions.F]...<|message|>BODY<|end|>. */
static void harmony_step(st_agent_stream *a, char **content, char **reasoning) {
    for (;;) {
        if (a->harmony == 4 || !a->n) return; /* a call: held for the end */
        if (a->harmony == 1) {                /* between messages: wait for a whole header */
            char *ch = strstr(a->held, "<|channel|>"), *msg = ch ? strstr(ch, "<|message|>") : NULL;
            if (!msg) return;
            *msg = 0;
            int call = strstr(ch, "to=functions.") != NULL, analysis = !strncmp(ch + 11, "analysis", 8);
            *msg = '<';
            if (call) {
                held_drop(a, (size_t)(ch - a->held)); /* keep the header: the final parse needs it */
                a->harmony = 4;
                return;
            }
            held_drop(a, (size_t)(msg + 11 - a->held));
            a->harmony = analysis ? 2 : 3;
            continue;
        }
        /* inside a message: text up to "<|" goes out; a whole end marker closes it */
        char *lt = strstr(a->held, "<|");
        size_t text = lt ? (size_t)(lt - a->held) : a->n;
        if (!lt && a->n && a->held[a->n - 1] == '<') text--; /* maybe the start of "<|" */
        if (text) append_n(a->harmony == 2 ? reasoning : content, a->held, text);
        held_drop(a, text);
        if (!lt) return;
        const char *ends[] = {"<|end|>", "<|start|>", "<|channel|>", "<|call|>", "<|return|>"};
        int closed = 0;
        for (int i = 0; i < 5 && !closed; i++)
            if (!strncmp(a->held, ends[i], strlen(ends[i]))) {
                if (i < 2) held_drop(a, strlen(ends[i]));
                closed = 1;
            }
        if (!closed) {
            const char *gt = strstr(a->held, "|>");
            if (!gt) return;                         /* the marker is not complete yet */
            append_n(a->harmony == 2 ? reasoning : content, a->held, (size_t)(gt + 2 - a->held)); /* not a marker */
            held_drop(a, (size_t)(gt + 2 - a->held));
            continue;
        }
        a->harmony = 1;
    }
}

int st_agent_stream_hold(st_agent_stream *a, char **content, char **reasoning) {
    if (!a->active || !*content) return 0;
    int rc = held_add(a, *content, strlen(*content));
    free(*content);
    *content = NULL;
    if (!rc && !a->harmony && reasoning && strstr(a->held, "<|channel|>")) a->harmony = 1;
    if (!rc && a->harmony) {
        harmony_step(a, content, reasoning);
        return 0;
    }
    if (rc || a->holding) return rc;
    if (!a->sent) { /* an answer that opens with JSON may be a Llama 3 call: held to the end */
        const char *p = a->held;
        while (*p == ' ' || *p == '\n') p++;
        if (*p == '{' || !strncmp(p, "<|python_tag|>", strlen(p) < 14 ? strlen(p) : 14)) {
            a->holding = *p == '{' || strlen(p) >= 14;
            return 0;
        }
    }
    size_t safe = st_tools_safe_prefix(a->held, a->n);
    if (safe < a->n && st_tools_safe_prefix(a->held + safe, a->n - safe) == 0 && strchr(a->held + safe, '>'))
        a->holding = 1; /* a whole marker from here on, not only a prefix at the end */
    if (!safe) return 0;
    a->sent = 1;
    *content = malloc(safe + 1);
    if (!*content) return -1;
    memcpy(*content, a->held, safe);
    (*content)[safe] = 0;
    memmove(a->held, a->held + safe, a->n - safe + 1);
    a->n -= safe;
    return 0;
}

static void append(char **dst, const char *s) {
    if (!dst || !s || !*s) return;
    size_t old = *dst ? strlen(*dst) : 0, n = strlen(s);
    char *p = realloc(*dst, old + n + 1);
    if (!p) return;
    memcpy(p + old, s, n + 1);
    *dst = p;
}

static cJSON *calls_json(const st_tool_result *r, const char *id, int with_index) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < r->n_calls; i++) {
        char cid[96];
        snprintf(cid, sizeof cid, "call_%s_%d", id, i);
        cJSON *c = cJSON_CreateObject(), *fn;
        if (with_index) cJSON_AddNumberToObject(c, "index", i);
        cJSON_AddStringToObject(c, "id", cid);
        cJSON_AddStringToObject(c, "type", "function");
        fn = cJSON_AddObjectToObject(c, "function");
        cJSON_AddStringToObject(fn, "name", r->calls[i].name);
        cJSON_AddStringToObject(fn, "arguments", r->calls[i].arguments);
        cJSON_AddItemToArray(arr, c);
    }
    return arr;
}

char *st_agent_stream_finish(st_agent_stream *a, const char *id, long created, const char *model, char **content,
                             char **reasoning) {
    st_tool_result r;
    if (!a->active || !a->held || st_tools_parse(a->held, &r)) {
        if (a->held) append(content, a->held);
        return NULL;
    }
    append(content, r.content);
    append(reasoning, r.reasoning);
    a->n_calls = r.n_calls;
    char *out = NULL;
    if (r.n_calls) {
        cJSON *o = cJSON_CreateObject(), *ch = cJSON_CreateObject(), *d;
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "object", "chat.completion.chunk");
        cJSON_AddNumberToObject(o, "created", (double)created);
        cJSON_AddStringToObject(o, "model", model);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), ch);
        cJSON_AddNumberToObject(ch, "index", 0);
        d = cJSON_AddObjectToObject(ch, "delta");
        cJSON_AddItemToObject(d, "tool_calls", calls_json(&r, id, 1));
        cJSON_AddNullToObject(ch, "finish_reason");
        out = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    }
    st_tool_result_free(&r);
    return out;
}

char *st_agent_response_rewrite(char *json, const char *content, const char *id) {
    st_tool_result r;
    if (!json || !content || st_tools_parse(content, &r)) return json;
    cJSON *o = cJSON_Parse(json);
    cJSON *ch = o ? cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0) : NULL;
    cJSON *m = ch ? cJSON_GetObjectItemCaseSensitive(ch, "message") : NULL;
    char *out = json;
    if (m && (r.n_calls || r.reasoning)) {
        if (r.content[0] || !r.n_calls) cJSON_ReplaceItemInObjectCaseSensitive(m, "content", cJSON_CreateString(r.content));
        else cJSON_ReplaceItemInObjectCaseSensitive(m, "content", cJSON_CreateNull());
        if (r.reasoning) {
            cJSON_DeleteItemFromObjectCaseSensitive(m, "reasoning_content");
            cJSON_AddStringToObject(m, "reasoning_content", r.reasoning);
        }
        if (r.n_calls) {
            cJSON_AddItemToObject(m, "tool_calls", calls_json(&r, id, 0));
            cJSON_ReplaceItemInObjectCaseSensitive(ch, "finish_reason", cJSON_CreateString("tool_calls"));
        }
        char *s = cJSON_PrintUnformatted(o);
        if (s) {
            free(json);
            out = s;
        }
    }
    cJSON_Delete(o);
    st_tool_result_free(&r);
    return out;
}
