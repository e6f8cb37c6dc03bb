/* SPDX-License-Identifier: Apache-2.0 */
/* llama-server's utility endpoints, front-only (no engine round trip):
 *   POST /apply-template  {"messages": [...], "tools": [...]} -> {"prompt": "..."}
 *   POST /tokenize        {"content": "...", "add_special": false, "with_pieces": false} -> {"tokens": [...]}
 *   POST /detokenize      {"tokens": [...]} -> {"content": "..."}
 *   GET  /props           the chat template, BOS/EOS, slots and context
 *   GET  /slots           each slot's request and progress (server/agent_slots.c) */
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent_routes.h"
#include "server/http_internal.h"
#include "server/openai.h"
#include "template/chat_jinja.h"

static enum MHD_Result reply(struct MHD_Connection *c, int status, cJSON *o) { return st_http_send_json(c, status, o); }

static enum MHD_Result reply_error(struct MHD_Connection *c, const st_oai_error *e) {
    char *j = st_oai_error_json(e);
    cJSON *o = cJSON_Parse(j ? j : "{}");
    free(j);
    return reply(c, e->status, o);
}

static enum MHD_Result bad(struct MHD_Connection *c, const char *param, const char *msg) {
    st_oai_error e;
    st_oai_error_set(&e, 400, NULL, "invalid_value", param, "%s", msg);
    return reply_error(c, &e);
}

static enum MHD_Result apply_template(st_front *f, struct MHD_Connection *c, const char *body, size_t n) {
    st_oai_request q;
    st_oai_error e;
    st_oai_render rd = {f->tmpl, f->jinja, f->bos_text, f->eos_text};
    if (st_oai_parse_ex(body, n, 1, &rd, f->cfg.max_depth, &q, &e)) return reply_error(c, &e);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "prompt", q.prompt);
    st_oai_request_free(&q);
    return reply(c, 200, o);
}

static enum MHD_Result tokenize(st_front *f, struct MHD_Connection *c, cJSON *req) {
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(req, "content");
    if (!cJSON_IsString(content)) return bad(c, "content", "'content' must be a string");
    int add_special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "add_special"));
    int parse_special = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(req, "parse_special"));
    int pieces = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "with_pieces"));
    int32_t *toks = NULL;
    int64_t nt = st_tokenizer_encode_alloc(f->tok, content->valuestring, strlen(content->valuestring), add_special,
                                           parse_special, &toks);
    if (nt < 0) return bad(c, "content", "the text cannot be tokenized");
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "tokens");
    for (int64_t i = 0; i < nt; i++) {
        if (!pieces) {
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(toks[i]));
            continue;
        }
        char buf[256];
        int32_t len = st_tokenizer_token_to_piece(f->tok, toks[i], buf, sizeof buf - 1, true);
        buf[len > 0 && len < (int32_t)sizeof buf ? len : 0] = 0;
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "id", toks[i]);
        cJSON_AddStringToObject(p, "piece", buf);
        cJSON_AddItemToArray(arr, p);
    }
    free(toks);
    return reply(c, 200, o);
}

static enum MHD_Result detokenize(st_front *f, struct MHD_Connection *c, cJSON *req) {
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(req, "tokens"), *t;
    if (!cJSON_IsArray(toks)) return bad(c, "tokens", "'tokens' must be an array of token ids");
    st_detok *d = st_detok_new(f->tok, ST_DETOK_SPECIAL);
    char *out = calloc(1, 1);
    size_t n = 0;
    int ok = d && out;
    cJSON_ArrayForEach(t, toks) {
        const char *s;
        size_t l;
        if (!ok) break;
        if (!cJSON_IsNumber(t) || st_detok_push(d, (int32_t)t->valuedouble, &s, &l)) {
            ok = -1;
            break;
        }
        char *p = realloc(out, n + l + 1);
        if (!p) break;
        memcpy(p + n, s, l);
        n += l;
        p[n] = 0;
        out = p;
    }
    st_detok_free(d);
    if (ok != 1) {
        free(out);
        return bad(c, "tokens", "'tokens' holds an id outside the vocabulary");
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "content", out);
    free(out);
    return reply(c, 200, o);
}

static enum MHD_Result props(st_front *f, struct MHD_Connection *c) {
    cJSON *o = cJSON_CreateObject();
    const char *jinja = NULL;
    if (st_gguf_get_str(f->gguf, "tokenizer.chat_template", &jinja, NULL) != ST_GGUF_OK) jinja = NULL;
    cJSON_AddStringToObject(o, "model_path", f->cfg.model_path);
    cJSON_AddStringToObject(o, "chat_template", jinja && f->jinja && !f->cfg.chat_template_file ? jinja : "");
    cJSON_AddStringToObject(o, "chat_template_source", f->jinja ? f->jinja_origin : st_chat_template_name(f->tmpl));
    cJSON_AddStringToObject(o, "bos_token", f->bos_text);
    cJSON_AddStringToObject(o, "eos_token", f->eos_text);
    pthread_mutex_lock(&f->mu);
    cJSON_AddNumberToObject(o, "total_slots", f->ready.n_slots);
    cJSON *dg = cJSON_AddObjectToObject(o, "default_generation_settings");
    cJSON_AddNumberToObject(dg, "n_ctx", f->ready.n_ctx);
    pthread_mutex_unlock(&f->mu);
    cJSON_AddStringToObject(o, "build_info", "strata");
    return reply(c, 200, o);
}

int st_agent_is_route(const char *url) {
    return !strcmp(url, "/v1/embeddings") || !strcmp(url, "/apply-template") || !strcmp(url, "/tokenize") ||
           !strcmp(url, "/detokenize") || !strcmp(url, "/props") || !strcmp(url, "/slots");
}

int st_agent_route(st_front *f, struct MHD_Connection *c, const char *url, const char *method, const char *body,
                   size_t n, enum MHD_Result *res) {
    int post = !strcmp(method, "POST");
    if (!strcmp(url, "/v1/embeddings")) { /* a POST goes to st_agent_embeddings (server/http.c) */
        *res = bad(c, NULL, "use POST");
        return 1;
    }
    int known = !strcmp(url, "/apply-template") || !strcmp(url, "/tokenize") || !strcmp(url, "/detokenize") ||
                !strcmp(url, "/props") || !strcmp(url, "/slots");
    if (!known) return 0;
    /* the API key was checked on the headers (server/http.c) */
    if (!strcmp(url, "/props")) {
        *res = props(f, c);
        return 1;
    }
    if (!strcmp(url, "/slots")) {
        *res = post ? bad(c, NULL, "use GET") : st_agent_slots(f, c);
        return 1;
    }
    if (!post) {
        *res = bad(c, NULL, "use POST");
        return 1;
    }
    if (!strcmp(url, "/apply-template")) {
        *res = apply_template(f, c, body, n);
        return 1;
    }
    cJSON *req = cJSON_ParseWithLength(body, n);
    if (!cJSON_IsObject(req)) *res = bad(c, NULL, "the body must be a JSON object");
    else *res = !strcmp(url, "/tokenize") ? tokenize(f, c, req) : detokenize(f, c, req);
    cJSON_Delete(req);
    return 1;
}

/* ---- CORS ------------------------------------------------------------------------------------ */
static const char *g_cors; /* set before the daemon starts, read-only afterwards */

void st_agent_cors_set(const char *origins) { g_cors = origins && *origins ? origins : NULL; }

/* The origin to echo back, or NULL when this request's Origin is not allowed. */
static const char *allowed_origin(struct MHD_Connection *c) {
    const char *o = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!g_cors || !o) return NULL;
    if (!strcmp(g_cors, "*")) return "*";
    size_t n = strlen(o);
    for (const char *p = g_cors; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        while (l && *p == ' ') p++, l--;
        if (l == n && !memcmp(p, o, n)) return o;
        p += l + (e != NULL);
    }
    return NULL;
}

void st_agent_cors_headers(struct MHD_Connection *c, struct MHD_Response *r) {
    const char *o = allowed_origin(c);
    if (!o) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", o);
    if (strcmp(o, "*")) MHD_add_response_header(r, "Vary", "Origin");
}

int st_agent_preflight(struct MHD_Connection *c, const char *method, enum MHD_Result *res) {
    if (strcmp(method, "OPTIONS") || !g_cors) return 0;
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    st_agent_cors_headers(c, r);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type, OpenAI-Beta, X-Stainless-Lang, "
                                                               "X-Stainless-Package-Version, X-Stainless-OS, X-Stainless-Arch, "
                                                               "X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Retry-Count, "
                                                               "X-Stainless-Timeout");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    *res = MHD_queue_response(c, 204, r);
    MHD_destroy_response(r);
    return 1;
}
