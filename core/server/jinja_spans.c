/* SPDX-License-Identifier: Apache-2.0 */
/* Where the messages' contents lie in a prompt rendered by a Jinja chat template, so that
 * control tokens typed in content stay text (--content-specials text) with the model's own
 * template as with the built-in ones (server/chat.c records its spans as it writes).
 *
 * The template runs a second time with every message's content replaced by a marker that
 * holds a per-process random tag: what lies between the markers is the template's own text.
 * Walking both renderings side by side, each marker must stand for the content verbatim or
 * trimmed of white space (templates such as Llama 3's trim it); anything else (a template that
 * rewrites a content, or branches on what it holds) gives no spans here, and the caller
 * (server/openai.c) searches for the contents in the prompt instead. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
#include "server/chat.h"
#include "template/chat_jinja.h"

typedef struct span_list {
    st_chat_span *v;
    size_t n, cap;
} span_list;

static int span_add(span_list *l, size_t start, size_t len) {
    if (!len) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        st_chat_span *p = realloc(l->v, cap * sizeof *p);
        if (!p) return -1;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n].start = start;
    l->v[l->n].len = len;
    l->n++;
    return 0;
}

/* A message's content as the template sees it (text parts joined), malloc'ed; NULL for none. */
static char *content_text(const cJSON *c) {
    return cJSON_IsString(c) ? strdup(c->valuestring) : st_chat_text_parts(c);
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* At p, the text marker k stands for (verbatim or trimmed) followed by the template's next
 * piece q[0..nq): its length in *len, or -1. */
static int match_content(const char *p, const char *text, const char *q, size_t nq, size_t *len) {
    size_t n = strlen(text), a = 0, b = n;
    while (a < b && is_space(text[a])) a++;
    while (b > a && is_space(text[b - 1])) b--;
    const size_t from[2] = {0, a}, to[2] = {n, b};
    for (int i = 0; i < 2; i++) {
        size_t l = to[i] - from[i];
        if (!strncmp(p, text + from[i], l) && !strncmp(p + l, q, nq)) {
            *len = l;
            return 0;
        }
    }
    return -1;
}

/* Walks the real prompt against the marked one; 0 with the spans, -1 when they differ. */
static int walk(const char *prompt, const char *marked, const char *tag, char **texts, int n, span_list *out) {
    size_t tl = strlen(tag);
    const char *p = prompt, *q = marked;
    for (;;) {
        const char *m = strstr(q, tag);
        size_t seg = m ? (size_t)(m - q) : strlen(q);
        if (strncmp(p, q, seg)) return -1;
        p += seg;
        if (!m) return *p ? -1 : 0;
        char *end;
        long k = strtol(m + tl, &end, 10);
        if (*end != 'Z' || k < 0 || k >= n || !texts[k]) return -1;
        q = end + 1;
        const char *next = strstr(q, tag);
        size_t nq = next ? (size_t)(next - q) : strlen(q), len;
        if (match_content(p, texts[k], q, nq, &len) || span_add(out, (size_t)(p - prompt), len)) return -1;
        p += len;
    }
}

/* The request with each message's content replaced by "<tag><index>Z"; texts[i] the content. */
static cJSON *marked_request(const cJSON *req, const char *tag, char ***texts, int *n) {
    cJSON *copy = cJSON_Duplicate(req, 1);
    cJSON *msgs = copy ? cJSON_GetObjectItemCaseSensitive(copy, "messages") : NULL, *m;
    *n = cJSON_GetArraySize(msgs);
    *texts = *n > 0 ? calloc((size_t)*n, sizeof **texts) : NULL;
    if (!copy || !*texts) {
        cJSON_Delete(copy);
        return NULL;
    }
    int i = 0;
    cJSON_ArrayForEach(m, msgs) {
        cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
        char mark[64];
        snprintf(mark, sizeof mark, "%s%dZ", tag, i);
        if (((*texts)[i] = content_text(c)) && !cJSON_ReplaceItemInObjectCaseSensitive(m, "content", cJSON_CreateString(mark))) {
            free((*texts)[i]);
            (*texts)[i] = NULL;
        }
        i++;
    }
    return copy;
}

int st_chat_jinja_spans(const struct st_jinja *t, const struct cJSON *req, const st_chat_jinja_opts *o,
                        const char *prompt, st_chat_span **spans, size_t *n_spans) {
    static uint64_t salt;
    *spans = NULL;
    *n_spans = 0;
    char tag[48], err[64];
    uint64_t r = st_now_ns() ^ (uint64_t)(uintptr_t)&salt ^ __atomic_add_fetch(&salt, 0x9E3779B97F4A7C15ull, __ATOMIC_RELAXED);
    snprintf(tag, sizeof tag, "STRATA%016llxC", (unsigned long long)r);
    if (strstr(prompt, tag)) return -1;
    char **texts = NULL;
    int n = 0;
    cJSON *marked = marked_request(req, tag, &texts, &n);
    char *p2 = marked ? st_chat_jinja_apply(t, marked, o, err, sizeof err) : NULL;
    span_list l = {0};
    int rc = p2 ? walk(prompt, p2, tag, texts, n, &l) : -1;
    free(p2);
    cJSON_Delete(marked);
    for (int i = 0; i < n && texts; i++) free(texts[i]);
    free(texts);
    if (rc) {
        free(l.v);
        return -1;
    }
    *spans = l.v;
    *n_spans = l.n;
    return 0;
}
