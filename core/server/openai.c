/* SPDX-License-Identifier: Apache-2.0 */
#include "server/openai.h"

#include "template/chat_jinja.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_oai_error_set(st_oai_error *e, int status, const char *type, const char *code, const char *param,
                     const char *fmt, ...) {
    e->status = status;
    snprintf(e->type, sizeof e->type, "%s", type ? type : "invalid_request_error");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    unsigned cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < len; i++) cp = (cp << 6) | (s[i] & 0x3F);
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0; /* overlong, surrogate */
    return len;
}

size_t st_oai_utf8_clean(const char *s, size_t n, char *out, size_t cap) {
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    if (!cap) return 0;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_seq(u + i, n - i);
        const char *piece = l ? s + i : "\xEF\xBF\xBD"; /* U+FFFD for a byte that starts no character */
        size_t pl = l ? l : 3;
        if (o + pl + 1 > cap) break;
        memcpy(out + o, piece, pl);
        o += pl;
        i += l ? l : 1;
    }
    out[o] = 0;
    return o;
}

char *st_oai_error_json(const st_oai_error *e) {
    cJSON *root = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(root, "error");
    char msg[sizeof e->message * 3];
    st_oai_utf8_clean(e->message, strlen(e->message), msg, sizeof msg);
    cJSON_AddStringToObject(o, "message", msg);
    cJSON_AddStringToObject(o, "type", e->type);
    if (e->param[0]) cJSON_AddStringToObject(o, "param", e->param);
    else cJSON_AddNullToObject(o, "param");
    if (e->code[0]) cJSON_AddStringToObject(o, "code", e->code);
    else cJSON_AddNullToObject(o, "code");
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

/* Deepest nesting of arrays/objects outside strings. */
static int json_depth(const char *s, size_t n) {
    int d = 0, max = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') in_str = 1;
        else if (c == '{' || c == '[') {
            if (++d > max) max = d;
        } else if (c == '}' || c == ']') d--;
    }
    return max;
}

static int get_number(cJSON *root, const char *key, double lo, double hi, double *out, st_oai_error *err) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return st_oai_error_set(err, 400, NULL, "invalid_type", key, "'%s' must be a number", key);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return st_oai_error_set(err, 400, NULL, "invalid_value", key, "'%s' must be between %g and %g, got %g", key,
                                lo, hi, v->valuedouble);
    *out = v->valuedouble;
    return 1;
}

static const char *content_text(cJSON *c, char **owned) {
    *owned = NULL;
    if (cJSON_IsString(c)) return c->valuestring;
    if (cJSON_IsNull(c)) return "";
    if (!cJSON_IsArray(c)) return NULL;
    size_t len = 0;
    cJSON *p;
    cJSON_ArrayForEach(p, c) {
        cJSON *ty = cJSON_GetObjectItemCaseSensitive(p, "type"), *tx = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "text") || !cJSON_IsString(tx)) return NULL;
        len += strlen(tx->valuestring);
    }
    char *s = malloc(len + 1);
    if (!s) return NULL;
    s[0] = 0;
    cJSON_ArrayForEach(p, c) strcat(s, cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring);
    *owned = s;
    return s;
}

/* Where the contents lie in a Jinja rendering, when the marked rendering of
 * server/jinja_spans.c could not tell: each message's text found in order after the previous
 * one (one that is transformed is not found and is then tokenized like the template's text).
 * -1 when out of memory. */
static int jinja_spans_search(st_oai_request *out, const st_chat_message *cm, size_t n) {
    out->spans = calloc(n ? n : 1, sizeof *out->spans);
    if (!out->spans) return -1;
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(cm[i].content);
        const char *f = len ? strstr(out->prompt + pos, cm[i].content) : NULL;
        if (!f) continue;
        out->spans[out->n_spans].start = (size_t)(f - out->prompt);
        out->spans[out->n_spans++].len = len;
        pos = (size_t)(f - out->prompt) + len;
    }
    return 0;
}

/* Nonzero when a JSON string of the body holds a NUL character (\u0000, or a raw NUL byte):
 * C strings would cut such text silently, so it is refused. */
static int has_nul(const char *s, size_t n) {
    if (memchr(s, 0, n)) return 1;
    for (size_t i = 0, in_str = 0; i < n; i++) {
        if (!in_str) {
            in_str = s[i] == '"';
        } else if (s[i] == '\\') {
            if (i + 5 < n && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4)) return 1;
            i++;
        } else if (s[i] == '"') {
            in_str = 0;
        }
    }
    return 0;
}

static int cmp_key(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A key that appears twice among the members of object o, or NULL (sorted: n log n). */
static const char *dup_in_object(const cJSON *o, int *oom) {
    int n = cJSON_GetArraySize(o);
    if (n < 2) return NULL;
    const char **k = malloc(sizeof *k * (size_t)n);
    if (!k) {
        *oom = 1;
        return NULL;
    }
    int i = 0;
    for (const cJSON *a = o->child; a && i < n; a = a->next) k[i++] = a->string ? a->string : "";
    qsort(k, (size_t)i, sizeof *k, cmp_key);
    const char *d = NULL;
    for (int j = 1; j < i && !d; j++)
        if (!strcmp(k[j - 1], k[j])) d = k[j];
    free(k);
    return d;
}

/* The first key that appears twice in one object anywhere in the tree, or NULL. */
static const char *dup_key(const cJSON *o, int *oom) {
    const char *d = cJSON_IsObject(o) ? dup_in_object(o, oom) : NULL;
    for (const cJSON *a = o ? o->child : NULL; a && !d && !*oom; a = a->next) d = dup_key(a, oom);
    return d;
}

/* The prompt through the model's Jinja template (template/chat_jinja.h), and where the
 * messages' contents (cm[n]) lie in it. */
static int render_jinja(const st_oai_render *rd, cJSON *root, const st_chat_message *cm, size_t n, st_oai_request *out,
                        st_oai_error *err) {
    char msg[300];
    st_chat_jinja_opts o = {rd->bos_token, rd->eos_token, 1};
    out->prompt = st_chat_jinja_apply(rd->jinja, root, &o, msg, sizeof msg);
    if (!out->prompt) return st_oai_error_set(err, 400, NULL, "invalid_request_error", "messages", "the chat template refused the request: %s", msg);
    if (!st_chat_jinja_spans(rd->jinja, root, &o, out->prompt, &out->spans, &out->n_spans)) return 0;
    static atomic_int noted;
    if (!atomic_exchange(&noted, 1))
        fprintf(stderr, "strata serve: note: the chat template changes a message's content beyond trimming it; for "
                        "such requests the contents are searched for in the prompt, and one the template changed is "
                        "tokenized like the template's text\n");
    if (jinja_spans_search(out, cm, n)) return st_oai_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
    return 0;
}

int st_oai_parse(const char *body, size_t len, int chat, st_chat_template t, int max_depth, st_oai_request *out,
                 st_oai_error *err) {
    st_oai_render r = {.builtin = t};
    return st_oai_parse_ex(body, len, chat, &r, max_depth, out, err);
}

int st_oai_parse_ex(const char *body, size_t len, int chat, const st_oai_render *rd, int max_depth, st_oai_request *out,
                    st_oai_error *err) {
    st_chat_template t = rd->builtin;
    memset(out, 0, sizeof *out);
    out->chat = chat;
    out->max_tokens = -1;
    out->temperature = 1.0f;
    out->top_p = 1.0f;
    out->repeat_penalty = 1.0f;
    if (json_depth(body, len) > max_depth)
        return st_oai_error_set(err, 400, NULL, "invalid_json", NULL, "the JSON body nests deeper than %d levels",
                                max_depth);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    while (root && end < body + len && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')) end++;
    if (root && end != body + len) { /* something follows the value */
        cJSON_Delete(root);
        root = NULL;
    }
    if (!root) return st_oai_error_set(err, 400, NULL, "invalid_json", NULL, "the body is not valid JSON");
    int rc = -1;
    /* a key given twice is refused (parsers disagree on which one counts) */
    int oom = 0;
    const char *dk = dup_key(root, &oom);
    if (oom) {
        st_oai_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        goto done;
    }
    if (dk) {
        char key[40];
        st_oai_utf8_clean(dk, strlen(dk), key, sizeof key);
        st_oai_error_set(err, 400, NULL, "duplicate_key", key, "the key '%s' appears twice in one object", key);
        goto done;
    }
    if (has_nul(body, len)) {
        st_oai_error_set(err, 400, NULL, "invalid_value", NULL, "strings must not contain NUL (\\u0000)");
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        st_oai_error_set(err, 400, NULL, "invalid_json", NULL, "the body must be a JSON object");
        goto done;
    }
    cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsString(model)) {
        st_oai_error_set(err, 400, NULL, "invalid_type", "model", "'model' must be a string");
        goto done;
    }
    snprintf(out->model, sizeof out->model, "%s", model ? model->valuestring : "");
    double v;
    if (get_number(root, "temperature", 0, 2, &v, err) < 0) goto done;
    else if (cJSON_GetObjectItemCaseSensitive(root, "temperature") && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "temperature"))) out->temperature = (float)v;
    int r;
    if ((r = get_number(root, "top_p", 0, 1, &v, err)) < 0) goto done;
    if (r) out->top_p = (float)v;
    if ((r = get_number(root, "min_p", 0, 1, &v, err)) < 0) goto done;
    if (r) out->min_p = (float)v;
    if ((r = get_number(root, "top_k", 0, 1e9, &v, err)) < 0) goto done;
    if (r) out->top_k = (int32_t)v;
    if ((r = get_number(root, "presence_penalty", -2, 2, &v, err)) < 0) goto done;
    if (r) out->presence_penalty = (float)v;
    if ((r = get_number(root, "frequency_penalty", -2, 2, &v, err)) < 0) goto done;
    if (r) out->frequency_penalty = (float)v;
    if ((r = get_number(root, "repetition_penalty", 0.01, 10, &v, err)) < 0) goto done;
    if (r) out->repeat_penalty = (float)v;
    if ((r = get_number(root, "seed", -9.2e18, 9.2e18, &v, err)) < 0) goto done;
    if (r) {
        out->seed = (uint64_t)(int64_t)v;
        out->has_seed = 1;
    }
    if ((r = get_number(root, "max_completion_tokens", 1, 1e9, &v, err)) < 0) goto done;
    if (r) out->max_tokens = (int32_t)v;
    if ((r = get_number(root, "max_tokens", 1, 1e9, &v, err)) < 0) goto done;
    if (r && out->max_tokens < 0) out->max_tokens = (int32_t)v;
    if ((r = get_number(root, "n", 1, ST_AGENT_MAX_N, &v, err)) < 0) goto done; /* n > 1: server/agent_req.c */
    /* tools, tool_choice; features this server does not have are refused, not silently ignored */
    if (st_agent_parse(root, chat, &out->agent, err)) goto done;
    cJSON *stream = cJSON_GetObjectItemCaseSensitive(root, "stream");
    if (stream && !cJSON_IsNull(stream) && !cJSON_IsBool(stream)) {
        st_oai_error_set(err, 400, NULL, "invalid_type", "stream", "'stream' must be a boolean");
        goto done;
    }
    out->stream = cJSON_IsTrue(stream);
    cJSON *ie = cJSON_GetObjectItemCaseSensitive(root, "ignore_eos");
    if (ie && !cJSON_IsNull(ie) && !cJSON_IsBool(ie)) {
        st_oai_error_set(err, 400, NULL, "invalid_type", "ignore_eos", "'ignore_eos' must be a boolean");
        goto done;
    }
    out->ignore_eos = cJSON_IsTrue(ie);
    cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && cJSON_IsObject(so)) out->include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "include_usage"));
    cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (stop && !cJSON_IsNull(stop)) {
        if (cJSON_IsString(stop)) {
            if (stop->valuestring[0]) out->stop[out->n_stop++] = strdup(stop->valuestring);
        } else if (cJSON_IsArray(stop) && cJSON_GetArraySize(stop) <= ST_OAI_MAX_STOP) {
            cJSON *s;
            cJSON_ArrayForEach(s, stop) {
                if (!cJSON_IsString(s)) {
                    st_oai_error_set(err, 400, NULL, "invalid_type", "stop", "'stop' items must be strings");
                    goto done;
                }
                if (s->valuestring[0]) out->stop[out->n_stop++] = strdup(s->valuestring);
            }
        } else {
            st_oai_error_set(err, 400, NULL, "invalid_type", "stop", "'stop' must be a string or up to %d strings",
                             ST_OAI_MAX_STOP);
            goto done;
        }
    }
    if (chat) {
        cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
        int n = cJSON_IsArray(msgs) ? cJSON_GetArraySize(msgs) : -1;
        if (n < 1) {
            st_oai_error_set(err, 400, NULL, n < 0 ? "invalid_type" : "invalid_value", "messages",
                             "'messages' must be a non-empty array");
            goto done;
        }
        st_chat_message *cm = calloc((size_t)n, sizeof *cm);
        char **owned = calloc((size_t)n, sizeof *owned);
        int i = 0, bad = 0;
        if (!cm || !owned) {
            free(cm);
            free(owned);
            st_oai_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
            goto done;
        }
        cJSON *m;
        cJSON_ArrayForEach(m, msgs) {
            cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role"), *content = cJSON_GetObjectItemCaseSensitive(m, "content");
            if (!cJSON_IsString(role)) {
                st_oai_error_set(err, 400, NULL, "invalid_type", "messages", "messages[%d].role must be a string", i);
                bad = 1;
                break;
            }
            const char *txt = content ? content_text(content, &owned[i]) : NULL;
            if (!txt) {
                st_oai_error_set(err, 400, NULL, "invalid_type", "messages",
                                 "messages[%d].content must be a string or an array of text parts", i);
                bad = 1;
                break;
            }
            cm[i].role = role->valuestring;
            cm[i].content = txt;
            i++;
        }
        if (!bad && rd->jinja && render_jinja(rd, root, cm, (size_t)n, out, err)) bad = 1;
        else if (!bad && !rd->jinja) out->prompt = st_chat_render_spans(t, cm, (size_t)n, &out->spans, &out->n_spans);
        for (int j = 0; j < n; j++) free(owned[j]);
        free(owned);
        free(cm);
        if (bad) goto done;
    } else {
        cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
        if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
            p = cJSON_GetArrayItem(p, 0);
        if (!cJSON_IsString(p)) {
            st_oai_error_set(err, 400, NULL, "invalid_type", "prompt", "'prompt' must be a string");
            goto done;
        }
        out->prompt = strdup(p->valuestring);
    }
    if (!out->prompt) {
        st_oai_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        goto done;
    }
    rc = 0;
done:
    cJSON_Delete(root);
    if (rc) st_oai_request_free(out);
    return rc;
}

void st_oai_request_free(st_oai_request *r) {
    st_agent_req_free(&r->agent);
    free(r->prompt);
    r->prompt = NULL;
    free(r->spans);
    r->spans = NULL;
    r->n_spans = 0;
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    r->n_stop = 0;
}

static cJSON *base_obj(int chat, const char *id, long created, const char *model, int chunk) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)created);
    cJSON_AddStringToObject(o, "model", model);
    return o;
}

static void add_str_or_null(cJSON *o, const char *k, const char *v) {
    if (v) cJSON_AddStringToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

static cJSON *usage_obj(const st_oai_usage *u) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "prompt_tokens", u->prompt_tokens);
    cJSON_AddNumberToObject(o, "completion_tokens", u->completion_tokens);
    cJSON_AddNumberToObject(o, "total_tokens", u->prompt_tokens + u->completion_tokens);
    cJSON *d = cJSON_AddObjectToObject(o, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", u->cached_tokens);
    return o;
}

static char *print_free(cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *st_oai_chunk_json(int chat, const char *id, long created, const char *model, const char *role,
                        const char *content, const char *reasoning, const char *finish) {
    cJSON *o = base_obj(chat, id, created, model, 1);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, c);
    cJSON_AddNumberToObject(c, "index", 0);
    if (chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (role) cJSON_AddStringToObject(d, "role", role);
        if (content) cJSON_AddStringToObject(d, "content", content);
        if (reasoning) cJSON_AddStringToObject(d, "reasoning_content", reasoning);
    } else {
        cJSON_AddStringToObject(c, "text", content ? content : "");
    }
    add_str_or_null(c, "finish_reason", finish);
    cJSON_AddNullToObject(o, "usage");
    return print_free(o);
}

char *st_oai_usage_chunk_json(int chat, const char *id, long created, const char *model, const st_oai_usage *u) {
    cJSON *o = base_obj(chat, id, created, model, 1);
    cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToObject(o, "usage", usage_obj(u));
    return print_free(o);
}

char *st_oai_response_json(int chat, const char *id, long created, const char *model, const char *content,
                           const char *reasoning, const char *finish, const st_oai_usage *u) {
    cJSON *o = base_obj(chat, id, created, model, 0);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, c);
    cJSON_AddNumberToObject(c, "index", 0);
    if (chat) {
        cJSON *m = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        cJSON_AddStringToObject(m, "content", content ? content : "");
        if (reasoning) cJSON_AddStringToObject(m, "reasoning_content", reasoning);
    } else {
        cJSON_AddStringToObject(c, "text", content ? content : "");
    }
    cJSON_AddNullToObject(c, "logprobs");
    add_str_or_null(c, "finish_reason", finish);
    cJSON_AddItemToObject(o, "usage", usage_obj(u));
    return print_free(o);
}

/* ---- incremental text ---------------------------------------------------------------- */
void st_oai_text_init(st_oai_text *t, const char *const *stops, int think) {
    memset(t, 0, sizeof *t);
    t->stops = stops;
    t->think_mode = think ? 1 : 0;
    while (stops && stops[t->n_stops]) t->n_stops++;
    if (!t->n_stops) return;
    t->slen = calloc((size_t)t->n_stops, sizeof *t->slen);
    t->state = calloc((size_t)t->n_stops, sizeof *t->state);
    t->fail = calloc((size_t)t->n_stops, sizeof *t->fail);
    t->oom = !t->slen || !t->state || !t->fail;
    for (int i = 0; !t->oom && i < t->n_stops; i++) {
        const char *p = stops[i];
        size_t m = t->slen[i] = strlen(p);
        int32_t *f = t->fail[i] = malloc(sizeof(int32_t) * (m ? m : 1));
        if (!f) {
            t->oom = 1;
            break;
        }
        f[0] = 0;
        for (size_t q = 1, k = 0; q < m; q++) {
            while (k && p[q] != p[k]) k = (size_t)f[k - 1];
            if (p[q] == p[k]) k++;
            f[q] = (int32_t)k;
        }
    }
}

void st_oai_text_free(st_oai_text *t) {
    free(t->pend);
    t->pend = NULL;
    for (int i = 0; t->fail && i < t->n_stops; i++) free(t->fail[i]);
    free(t->fail);
    free(t->slen);
    free(t->state);
    t->fail = NULL;
    t->slen = t->state = NULL;
}

static int append(char **dst, const char *s, size_t n) {
    if (!n) return 0;
    size_t old = *dst ? strlen(*dst) : 0;
    char *p = realloc(*dst, old + n + 1);
    if (!p) return -1;
    memcpy(p + old, s, n);
    p[old + n] = 0;
    *dst = p;
    return 0;
}

/* Route emitted text to content or reasoning according to <think> tags. */
static int route(st_oai_text *t, const char *s, size_t n, char **content, char **reasoning) {
    if (t->think_mode == 2) {
        const char *end = NULL;
        for (size_t i = 0; i + 8 <= n; i++)
            if (!memcmp(s + i, "</think>", 8)) {
                end = s + i;
                break;
            }
        if (!end) return append(reasoning, s, n);
        size_t before = (size_t)(end - s);
        if (append(reasoning, s, before)) return -1;
        t->think_mode = 3;
        s += before + 8;
        n -= before + 8;
        while (n && *s == '\n') s++, n--;
    }
    return append(content, s, n);
}

/* Length of the longest suffix of pend that is a proper prefix of some stop string (the
 * automata's states), or of "<think>" / "</think>" while those may still be forming. */
static size_t held_back(const st_oai_text *t) {
    size_t best = 0;
    for (int i = 0; i < t->n_stops; i++)
        if (t->state[i] > best) best = t->state[i];
    /* while undecided, an opening "<think>" may still be forming */
    if (t->think_mode == 1 && t->n_pend < 7 && !memcmp("<think>", t->pend, t->n_pend)) best = t->n_pend;
    if (t->think_mode == 2)
        for (size_t k = 7; k > best; k--)
            if (k <= t->n_pend && !memcmp(t->pend + t->n_pend - k, "</think>", k)) {
                best = k;
                break;
            }
    return best;
}

/* Feeds pend[fed..n_pend) to the stop automata; returns the pend offset where the first stop
 * to complete begins (the longest of those completing at the same byte), or (size_t)-1. */
static size_t feed_stops(st_oai_text *t) {
    for (; t->fed < t->n_pend; t->fed++) {
        unsigned char c = (unsigned char)t->pend[t->fed];
        size_t cut = (size_t)-1;
        for (int i = 0; i < t->n_stops; i++) {
            const char *p = t->stops[i];
            size_t st = t->state[i], m = t->slen[i];
            if (!m) continue;
            while (st && (unsigned char)p[st] != c) st = (size_t)t->fail[i][st - 1];
            if ((unsigned char)p[st] == c) st++;
            if (st == m) {
                size_t at = t->fed + 1 - m;
                if (at < cut) cut = at;
                st = (size_t)t->fail[i][m - 1];
            }
            t->state[i] = st;
        }
        if (cut != (size_t)-1) return cut;
    }
    return (size_t)-1;
}

int st_oai_text_push(st_oai_text *t, const char *s, size_t n, char **content, char **reasoning) {
    if (t->stopped) return 1;
    if (t->oom) return -1;
    if (t->n_pend + n + 1 > t->cap) {
        size_t cap = (t->n_pend + n + 1) * 2;
        char *p = realloc(t->pend, cap);
        if (!p) return -1;
        t->pend = p;
        t->cap = cap;
    }
    memcpy(t->pend + t->n_pend, s, n);
    t->n_pend += n;
    t->pend[t->n_pend] = 0;
    if (t->think_mode == 1 && t->n_pend >= 7) {
        if (!memcmp(t->pend, "<think>", 7)) {
            size_t skip = 7;
            while (skip < t->n_pend && t->pend[skip] == '\n') skip++;
            memmove(t->pend, t->pend + skip, t->n_pend - skip + 1);
            t->n_pend -= skip;
            t->think_mode = 2;
        } else {
            t->think_mode = 3;
        }
    }
    if (t->think_mode == 1) return 0; /* undecided: nothing is fed or emitted yet */
    size_t cut = feed_stops(t);
    int hit = cut != (size_t)-1;
    size_t emit = hit ? cut : t->n_pend - held_back(t);
    if (route(t, t->pend, emit, content, reasoning)) return -1;
    memmove(t->pend, t->pend + emit, t->n_pend - emit + 1);
    t->n_pend -= emit;
    t->fed -= emit;
    if (hit) {
        t->stopped = 1;
        t->n_pend = 0;
        return 1;
    }
    return 0;
}

int st_oai_text_finish(st_oai_text *t, char **content, char **reasoning) {
    if (t->stopped || !t->n_pend) return 0;
    size_t end = t->n_pend;
    if (t->think_mode == 1) { /* it never opened with <think>: its stops were not looked for yet */
        t->think_mode = 3;
        size_t cut = feed_stops(t);
        if (cut != (size_t)-1) end = cut;
    }
    int rc = route(t, t->pend, end, content, reasoning);
    t->n_pend = 0;
    return rc;
}
