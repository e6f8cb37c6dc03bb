/* SPDX-License-Identifier: Apache-2.0 */
/* Chat: a conversation rendered by the model's template and tokenized so that the template's
 * markers are control tokens and the messages' contents are plain text. The template is the
 * GGUF's tokenizer.chat_template through the Jinja engine (core/template, in builds with cJSON),
 * else the built-in family it names (core/server/chat.c), else the plain "User: ...\nAssistant:"
 * form. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "server/chat.h"
#ifdef STRATA_HAVE_JINJA
#include <cjson/cJSON.h>

#include "template/chat_jinja.h"
#endif

struct st_api_chat {
    const st_tokenizer *tok;
    st_chat_template family;  /* used when jinja is NULL */
    int named;                /* the GGUF names a template (Jinja, or a family we recognized) */
    char bos[64], eos[64];    /* texts of BOS/EOS, for the Jinja template */
#ifdef STRATA_HAVE_JINJA
    st_jinja *jinja;
#endif
};

/* A rendered conversation: the prompt and where the contents lie in it. */
typedef struct rendered {
    char *text;
    st_chat_span *spans;
    size_t n_spans;
} rendered;

#ifdef STRATA_HAVE_JINJA
static cJSON *request_of(const strata_chat_message *msgs, size_t n) {
    cJSON *req = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(req, "messages");
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *m = cJSON_CreateObject();
        if (!m || !cJSON_AddItemToArray(arr, m) || !cJSON_AddStringToObject(m, "role", msgs[i].role) ||
            !cJSON_AddStringToObject(m, "content", msgs[i].content))
            arr = NULL;
    }
    if (!arr) {
        cJSON_Delete(req);
        return NULL;
    }
    return req;
}

static strata_status render_jinja(const st_api_chat *c, const strata_chat_message *msgs, size_t n, rendered *out) {
    char err[512];
    cJSON *req = request_of(msgs, n);
    if (!req) return st_api_fail(STRATA_ERR_NO_MEMORY, "out of memory");
    st_chat_jinja_opts o = {c->bos, c->eos, 1};
    out->text = st_chat_jinja_apply(c->jinja, req, &o, err, sizeof err);
    /* no spans known (the template rewrites contents): the whole prompt's control tokens are parsed */
    if (out->text && st_chat_jinja_spans(c->jinja, req, &o, out->text, &out->spans, &out->n_spans)) out->n_spans = 0;
    cJSON_Delete(req);
    return out->text ? STRATA_OK : st_api_fail(STRATA_ERR_INVALID, "the chat template refused the conversation: %s", err);
}

/* The GGUF's template when it parses and renders a plain conversation. */
static void load_jinja(st_api_chat *c, const char *src) {
    char err[256];
    if (!src || !(c->jinja = st_jinja_parse(src, err, sizeof err))) return;
    const strata_chat_message trial[2] = {{"system", "s"}, {"user", "u"}};
    rendered r = {0};
    if (render_jinja(c, trial, 2, &r)) {
        st_jinja_free(c->jinja);
        c->jinja = NULL;
    }
    free(r.text);
    free(r.spans);
}
#endif

st_api_chat *st_api_chat_new(const st_gguf *g, const st_tokenizer *tok) {
    st_api_chat *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->tok = tok;
    const char *src = NULL;
    if (st_gguf_get_str(g, "tokenizer.chat_template", &src, NULL) != ST_GGUF_OK) src = NULL;
    st_chat_token_text(tok, st_tokenizer_bos(tok), c->bos, sizeof c->bos);
    st_chat_token_text(tok, st_tokenizer_eos(tok), c->eos, sizeof c->eos);
    int recognized = 0, im_start = st_tokenizer_find(tok, "<|im_start|>", 12) >= 0;
    c->family = st_chat_template_detect(src ? src : "", im_start, &recognized);
    c->named = src != NULL;
#ifdef STRATA_HAVE_JINJA
    load_jinja(c, src);
#endif
    return c;
}

void st_api_chat_free(st_api_chat *c) {
    if (!c) return;
#ifdef STRATA_HAVE_JINJA
    st_jinja_free(c->jinja);
#endif
    free(c);
}

int st_api_chat_has_template(const st_api_chat *c) { return c && c->named; }

static strata_status render(const st_api_chat *c, const strata_chat_message *msgs, size_t n, rendered *out) {
    memset(out, 0, sizeof *out);
    if (!msgs || !n) return st_api_fail(STRATA_ERR_INVALID, "a chat needs at least one message");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) return st_api_fail(STRATA_ERR_INVALID, "message %zu: NULL role or content", i);
#ifdef STRATA_HAVE_JINJA
    if (c->jinja) return render_jinja(c, msgs, n, out);
#endif
    st_chat_message *cm = malloc(n * sizeof *cm);
    if (cm) {
        for (size_t i = 0; i < n; i++) cm[i] = (st_chat_message){msgs[i].role, msgs[i].content};
        out->text = st_chat_render_spans(c->family, cm, n, &out->spans, &out->n_spans);
    }
    free(cm);
    return out->text ? STRATA_OK : st_api_fail(STRATA_ERR_NO_MEMORY, "out of memory");
}

STRATA_API strata_status strata_chat_prompt(const strata_model *m, const strata_chat_message *msgs, size_t n,
                                            char **prompt) {
    if (!m || !prompt) return st_api_fail(STRATA_ERR_INVALID, "strata_chat_prompt: NULL argument");
    rendered r;
    strata_status s = render(m->chat, msgs, n, &r);
    free(r.spans);
    *prompt = r.text;
    if (!s) st_api_ok();
    return s;
}

/* The prompt's ids: a leading BOS text dropped when the tokenizer adds BOS itself, the
 * contents' ranges encoded as plain text. -1 when out of memory. */
static int64_t encode(const st_api_chat *c, const rendered *r, int32_t **ids) {
    size_t skip = 0, blen = strlen(c->bos);
    if (blen && st_tokenizer_add_bos(c->tok) && !strncmp(r->text, c->bos, blen)) skip = blen;
    return st_chat_encode_spans(c->tok, r->text, skip, r->spans, r->n_spans, ids);
}

STRATA_API strata_status strata_chat(strata_context *ctx, const strata_chat_message *msgs, size_t n,
                                     const strata_generate_options *o, strata_generate_result *result) {
    if (!ctx) return st_api_fail(STRATA_ERR_INVALID, "strata_chat: NULL context");
    rendered r;
    strata_status s = render(ctx->model->chat, msgs, n, &r);
    if (s) return s;
    int32_t *ids = NULL;
    int64_t k = encode(ctx->model->chat, &r, &ids);
    free(r.text);
    free(r.spans);
    if (k <= 0) {
        free(ids);
        return st_api_fail(STRATA_ERR_NO_MEMORY, "tokenizing the conversation: out of memory, or it is too long");
    }
    s = strata_generate(ctx, ids, (size_t)k, o, result);
    free(ids);
    return s;
}
