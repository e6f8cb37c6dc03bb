/* SPDX-License-Identifier: Apache-2.0 */
/* POST /v1/embeddings: each input's final hidden states (after the output norm), pooled as
 * the model's <arch>.pooling_type says (1 mean, 2 cls: the first token, 3 last: the last
 * token) by the engine, then scaled to unit length here (OpenAI's embeddings are). Inputs: a
 * string, an array of strings, an array of token ids, or an array of such arrays (at most
 * ST_EMBED_MAX). Each input is one engine request (slots run them together); the connection
 * is suspended until all are done, and resumed by their wake hooks, so no server thread waits.
 * `encoding_format` "base64" sends the little-endian float32 bytes; `dimensions` must be the
 * model's width when given. A generative model (no pooling type) is a 400 that says so. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent_routes.h"
#include "server/http_internal.h"

#define ST_EMBED_MAX 64

typedef struct embed_job embed_job;
typedef struct embed_one {
    embed_job *job;
    st_req *r;
    int seen; /* counted in job->n_done (under job->mu) */
} embed_one;

struct embed_job {
    st_front *f;
    struct MHD_Connection *c;
    pthread_mutex_t mu; /* suspended, n_done, seen */
    int suspended;
    int n, n_done;
    int base64;
    int64_t n_tokens;
    embed_one one[ST_EMBED_MAX];
};

/* The model's pooling (ST_POOL_*), or 0 with e set. */
static int pooling_of(st_front *f, st_oai_error *e) {
    const char *arch = NULL;
    char key[160];
    uint32_t pooling = 0;
    if (st_gguf_get_str(f->gguf, "general.architecture", &arch, NULL) != ST_GGUF_OK) arch = "";
    snprintf(key, sizeof key, "%s.pooling_type", arch);
    if (st_gguf_get_u32(f->gguf, key, &pooling) != ST_GGUF_OK || pooling == 0) {
        st_oai_error_set(e, 400, NULL, "model_not_embedding", "model",
                         "'%s' has no pooling type (%s is absent or none): it is a generative model and gives no embeddings; "
                         "serve an embedding model for /v1/embeddings", f->model_id, key);
        return 0;
    }
    if (pooling > ST_POOL_LAST) {
        st_oai_error_set(e, 400, NULL, "unsupported_pooling", "model", "%s is %u; supported: 1 (mean), 2 (cls), 3 (last)", key,
                         pooling);
        return 0;
    }
    return (int)pooling;
}

/* Called under r->mu: count a finished input once; resume when all are. */
static void embed_wake(void *arg, int tick) {
    (void)tick;
    embed_one *o = arg;
    embed_job *j = o->job;
    pthread_mutex_lock(&j->mu);
    if (!o->seen && (o->r->done || o->r->failed)) {
        o->seen = 1;
        j->n_done++;
    }
    if (j->suspended && j->n_done == j->n) {
        j->suspended = 0;
        MHD_resume_connection(j->c);
    }
    pthread_mutex_unlock(&j->mu);
}

void st_agent_embed_free(embed_job *j) {
    if (!j) return;
    for (int i = 0; i < j->n; i++) {
        st_req *r = j->one[i].r;
        pthread_mutex_lock(&r->mu);
        r->wake = NULL;
        r->wake_arg = NULL;
        int live = !r->done && !r->failed;
        pthread_mutex_unlock(&r->mu);
        if (live) st_front_cancel(j->f, r);
        st_front_release(j->f, r);
    }
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* One input's tokens (malloc'ed) from a string or an array of ids; -1 with e. */
static int64_t input_tokens(st_front *f, const cJSON *in, int32_t **toks, st_oai_error *e) {
    if (cJSON_IsString(in)) {
        size_t l = strlen(in->valuestring);
        int64_t n = l ? st_tokenizer_encode_alloc(f->tok, in->valuestring, l, true, false, toks) : 0;
        if (n <= 0) st_oai_error_set(e, 400, NULL, "invalid_value", "input", l ? "an input is too long" : "an input is empty");
        return n > 0 ? n : -1;
    }
    int n = cJSON_GetArraySize(in), k = 0;
    const cJSON *t;
    if (!cJSON_IsArray(in) || n == 0 || !(*toks = malloc(sizeof(int32_t) * (size_t)n))) {
        st_oai_error_set(e, 400, NULL, "invalid_type", "input", "'input' must be a string, an array of strings, an array of "
                                                                 "token ids, or an array of arrays of token ids (none empty)");
        return -1;
    }
    cJSON_ArrayForEach(t, in) {
        if (!cJSON_IsNumber(t) || t->valuedouble != (int32_t)t->valuedouble) {
            st_oai_error_set(e, 400, NULL, "invalid_type", "input", "token ids must be integers");
            free(*toks);
            *toks = NULL;
            return -1;
        }
        (*toks)[k++] = (int32_t)t->valuedouble;
    }
    return k;
}

/* Submits each input of the body; 0, or -1 with e. */
static int submit_all(st_front *f, embed_job *j, const cJSON *input, int pooling, st_oai_error *e) {
    int many = cJSON_IsArray(input) && cJSON_GetArraySize(input) > 0 && !cJSON_IsNumber(cJSON_GetArrayItem(input, 0));
    int n = many ? cJSON_GetArraySize(input) : 1;
    if (n > ST_EMBED_MAX) {
        st_oai_error_set(e, 400, NULL, "invalid_value", "input", "at most %d inputs in one request", ST_EMBED_MAX);
        return -1;
    }
    st_sampler_params sp;
    st_sampler_params_default(&sp);
    st_submit_extra x = {.pooling = pooling};
    for (int i = 0; i < n; i++) {
        int32_t *toks = NULL;
        int64_t nt = input_tokens(f, many ? cJSON_GetArrayItem(input, i) : input, &toks, e);
        if (nt < 0) return -1;
        int status = 0;
        char msg[600];
        st_req *r = st_front_submit_ex(f, toks, (int32_t)nt, 1, 0, &sp, &x, &status, msg, sizeof msg);
        free(toks);
        if (!r) {
            st_oai_error_set(e, status, status >= 500 ? "server_error" : "invalid_request_error",
                             status == 503 ? "engine_unavailable" : NULL, status == 400 ? "input" : NULL, "%s", msg);
            return -1;
        }
        j->n_tokens += nt;
        j->one[i] = (embed_one){j, r, 0};
        j->n = i + 1;
        pthread_mutex_lock(&r->mu);
        r->wake = embed_wake;
        r->wake_arg = &j->one[i];
        embed_wake(&j->one[i], 0); /* it may be done already */
        pthread_mutex_unlock(&r->mu);
    }
    return 0;
}

/* v / |v| (the L2 norm), as float32 numbers or their base64 bytes. */
static cJSON *vector_json(const float *v, int32_t n, int base64) {
    double ss = 0;
    for (int32_t i = 0; i < n; i++) ss += (double)v[i] * v[i];
    float inv = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0.0f;
    if (!base64) {
        cJSON *a = cJSON_CreateArray();
        for (int32_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i] * inv));
        return a;
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t nb = (size_t)n * 4, o = 0;
    unsigned char *bytes = malloc(nb);
    char *s = malloc((nb + 2) / 3 * 4 + 1);
    for (int32_t i = 0; bytes && s && i < n; i++) {
        float x = v[i] * inv;
        memcpy(bytes + 4 * (size_t)i, &x, 4); /* little-endian hosts (x86-64, ppc64le) */
    }
    for (size_t i = 0; bytes && s && i < nb; i += 3) {
        uint32_t w = (uint32_t)bytes[i] << 16 | (i + 1 < nb ? (uint32_t)bytes[i + 1] << 8 : 0) | (i + 2 < nb ? bytes[i + 2] : 0);
        s[o++] = b64[w >> 18 & 63];
        s[o++] = b64[w >> 12 & 63];
        s[o++] = i + 1 < nb ? b64[w >> 6 & 63] : '=';
        s[o++] = i + 2 < nb ? b64[w & 63] : '=';
    }
    cJSON *r = s && bytes ? (s[o] = 0, cJSON_CreateString(s)) : cJSON_CreateNull();
    free(bytes);
    free(s);
    return r;
}

/* Every input is done: the answer (or the first failure). */
static enum MHD_Result answer(embed_job *j, struct MHD_Connection *c) {
    for (int i = 0; i < j->n; i++) {
        st_req *r = j->one[i].r;
        if (r->failed || !r->embd)
            return st_http_fail(c, r->failed ? r->fail_status : 500, r->failed && r->fail_status < 500 ? "invalid_request_error" : "server_error",
                                r->failed ? r->fail_code : NULL, NULL, r->failed ? r->fail_msg : "the engine sent no embedding");
    }
    cJSON *o = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(o, "data");
    cJSON_AddStringToObject(o, "object", "list");
    for (int i = 0; i < j->n; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "object", "embedding");
        cJSON_AddNumberToObject(d, "index", i);
        cJSON_AddItemToObject(d, "embedding", vector_json(j->one[i].r->embd, j->one[i].r->n_embd, j->base64));
        cJSON_AddItemToArray(data, d);
    }
    cJSON_AddStringToObject(o, "model", j->f->model_id);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)j->n_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", (double)j->n_tokens);
    return st_http_send_json(c, 200, o);
}

enum MHD_Result st_agent_embed_continue(st_front *f, struct MHD_Connection *c, conn_state *cs) {
    (void)f;
    embed_job *j = cs->embed;
    pthread_mutex_lock(&j->mu);
    int wait = j->n_done < j->n;
    if (wait) {
        j->suspended = 1;
        MHD_suspend_connection(c);
    }
    pthread_mutex_unlock(&j->mu);
    if (wait) return MHD_YES;
    enum MHD_Result ok = answer(j, c);
    st_agent_embed_free(j);
    cs->embed = NULL;
    return ok;
}

/* The request's options: encoding_format and dimensions; 0, or -1 with e. */
static int embed_options(const cJSON *o, int32_t n_embd, int *base64, st_oai_error *e) {
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(o, "encoding_format");
    const cJSON *dim = cJSON_GetObjectItemCaseSensitive(o, "dimensions");
    *base64 = cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "base64");
    if (fmt && !cJSON_IsNull(fmt) && !*base64 && !(cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "float"))) {
        st_oai_error_set(e, 400, NULL, "invalid_value", "encoding_format", "'encoding_format' is 'float' or 'base64'");
        return -1;
    }
    if (dim && !cJSON_IsNull(dim) && !(cJSON_IsNumber(dim) && dim->valuedouble == n_embd)) {
        st_oai_error_set(e, 400, NULL, "unsupported_value", "dimensions", "this model's embeddings have %d dimensions", n_embd);
        return -1;
    }
    return 0;
}

enum MHD_Result st_agent_embeddings(st_front *f, struct MHD_Connection *c, conn_state *cs) {
    st_oai_error e;
    int pooling = pooling_of(f, &e);
    if (!pooling) return st_http_send_error(c, &e);
    cJSON *o = cJSON_ParseWithLength(cs->body ? cs->body : "", cs->n);
    st_http_body_release(cs);
    embed_job *j = o ? calloc(1, sizeof *j) : NULL;
    int base64 = 0, bad = -1;
    pthread_mutex_lock(&f->mu);
    int32_t n_embd = f->ready.n_embd;
    pthread_mutex_unlock(&f->mu);
    if (!cJSON_IsObject(o)) st_oai_error_set(&e, 400, NULL, "invalid_json", NULL, "the body must be a JSON object");
    else if (!j) st_oai_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    else if (!embed_options(o, n_embd, &base64, &e)) {
        j->f = f;
        j->c = c;
        j->base64 = base64;
        pthread_mutex_init(&j->mu, NULL);
        bad = submit_all(f, j, cJSON_GetObjectItemCaseSensitive(o, "input"), pooling, &e);
    }
    cJSON_Delete(o);
    if (bad) {
        if (j && j->f) st_agent_embed_free(j);
        else free(j);
        return st_http_send_error(c, &e);
    }
    cs->embed = j;
    return st_agent_embed_continue(f, c, cs);
}
