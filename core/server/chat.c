/* SPDX-License-Identifier: Apache-2.0 */
#include "server/chat.h"

#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
    /* with spans: where each message's content lands (a put of that very pointer) */
    const st_chat_message *msgs;
    size_t n_msgs;
    st_chat_span *spans;
    size_t n_spans, cap_spans;
} sbuf;

static void note_span(sbuf *b, const char *s, size_t l) {
    size_t i = 0;
    while (i < b->n_msgs && b->msgs[i].content != s) i++;
    if (i == b->n_msgs || !l) return;
    if (b->n_spans == b->cap_spans) {
        size_t cap = b->cap_spans ? b->cap_spans * 2 : 8;
        st_chat_span *q = realloc(b->spans, cap * sizeof *q);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->spans = q;
        b->cap_spans = cap;
    }
    b->spans[b->n_spans].start = b->n;
    b->spans[b->n_spans].len = l;
    b->n_spans++;
}

static void put(sbuf *b, const char *s) {
    size_t l = strlen(s);
    if (b->oom) return;
    note_span(b, s, l);
    if (b->oom) return;
    if (b->n + l + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256);
        while (cap < b->n + l + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, l + 1);
    b->n += l;
}

static const char *k_names[ST_CHAT_COUNT] = {"chatml", "llama3", "mistral", "deepseek", "tulu", "plain"};

int st_chat_template_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < ST_CHAT_COUNT; i++)
        if (!strcmp(name, k_names[i])) return i;
    if (!strcmp(name, "qwen") || !strcmp(name, "qwen2") || !strcmp(name, "qwen3")) return ST_CHAT_CHATML;
    if (!strcmp(name, "llama-3") || !strcmp(name, "llama3.1")) return ST_CHAT_LLAMA3;
    if (!strcmp(name, "olmoe")) return ST_CHAT_TULU;
    return -1;
}

const char *st_chat_template_name(st_chat_template t) {
    return (unsigned)t < ST_CHAT_COUNT ? k_names[t] : "?";
}

st_chat_template st_chat_template_detect(const char *jinja, int vocab_has_im_start, int *recognized) {
    *recognized = 1;
    if (jinja) {
        if (strstr(jinja, "<|im_start|>")) return ST_CHAT_CHATML;
        if (strstr(jinja, "<|start_header_id|>")) return ST_CHAT_LLAMA3;
        if (strstr(jinja, "<\xef\xbd\x9cUser\xef\xbd\x9c>")) return ST_CHAT_DEEPSEEK; /* <｜User｜> */
        if (strstr(jinja, "[INST]")) return ST_CHAT_MISTRAL;
        if (strstr(jinja, "<|user|>")) return ST_CHAT_TULU;
    }
    *recognized = 0;
    return vocab_has_im_start ? ST_CHAT_CHATML : ST_CHAT_PLAIN;
}

static int is_role(const st_chat_message *m, const char *r) { return m->role && !strcmp(m->role, r); }

char *st_chat_render(st_chat_template t, const st_chat_message *msgs, size_t n) {
    return st_chat_render_spans(t, msgs, n, NULL, NULL);
}

char *st_chat_render_spans(st_chat_template t, const st_chat_message *msgs, size_t n, st_chat_span **spans,
                           size_t *n_spans) {
    sbuf b = {0};
    if (spans) {
        b.msgs = msgs;
        b.n_msgs = n;
    }
    put(&b, "");
    switch (t) {
    case ST_CHAT_CHATML:
        for (size_t i = 0; i < n; i++) {
            put(&b, "<|im_start|>");
            put(&b, is_role(&msgs[i], "system") || is_role(&msgs[i], "assistant") ? msgs[i].role : "user");
            put(&b, "\n");
            put(&b, msgs[i].content);
            put(&b, "<|im_end|>\n");
        }
        put(&b, "<|im_start|>assistant\n");
        break;
    case ST_CHAT_LLAMA3:
        for (size_t i = 0; i < n; i++) {
            put(&b, "<|start_header_id|>");
            put(&b, is_role(&msgs[i], "system") || is_role(&msgs[i], "assistant") ? msgs[i].role : "user");
            put(&b, "<|end_header_id|>\n\n");
            put(&b, msgs[i].content);
            put(&b, "<|eot_id|>");
        }
        put(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case ST_CHAT_MISTRAL: {
        const char *sys = NULL;
        for (size_t i = 0; i < n; i++) {
            if (is_role(&msgs[i], "system")) {
                sys = msgs[i].content;
                continue;
            }
            if (is_role(&msgs[i], "assistant")) {
                put(&b, msgs[i].content);
                put(&b, "</s>");
            } else {
                put(&b, "[INST] ");
                if (sys) {
                    put(&b, sys);
                    put(&b, "\n\n");
                    sys = NULL;
                }
                put(&b, msgs[i].content);
                put(&b, " [/INST]");
            }
        }
        break;
    }
    case ST_CHAT_DEEPSEEK:
        for (size_t i = 0; i < n; i++) {
            if (is_role(&msgs[i], "system")) put(&b, msgs[i].content);
            else if (is_role(&msgs[i], "assistant")) {
                put(&b, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
                put(&b, msgs[i].content);
                put(&b, "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>");
            } else {
                put(&b, "<\xef\xbd\x9cUser\xef\xbd\x9c>");
                put(&b, msgs[i].content);
            }
        }
        put(&b, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
        break;
    case ST_CHAT_TULU:
        for (size_t i = 0; i < n; i++) {
            put(&b, is_role(&msgs[i], "system") ? "<|system|>\n" : is_role(&msgs[i], "assistant") ? "<|assistant|>\n" : "<|user|>\n");
            put(&b, msgs[i].content);
            put(&b, is_role(&msgs[i], "assistant") ? "<|endoftext|>\n" : "\n");
        }
        put(&b, "<|assistant|>\n");
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            put(&b, is_role(&msgs[i], "system") ? "System: " : is_role(&msgs[i], "assistant") ? "Assistant: " : "User: ");
            put(&b, msgs[i].content);
            put(&b, "\n");
        }
        put(&b, "Assistant:");
        break;
    }
    if (b.oom) {
        free(b.p);
        free(b.spans);
        return NULL;
    }
    if (spans) {
        *spans = b.spans;
        *n_spans = b.n_spans;
    }
    return b.p;
}

const char *const *st_chat_stop_strings(st_chat_template t) {
    static const char *const chatml[] = {"<|im_end|>", NULL};
    static const char *const llama3[] = {"<|eot_id|>", NULL};
    static const char *const tulu[] = {"<|user|>", NULL};
    static const char *const plain[] = {"\nUser:", NULL};
    static const char *const none[] = {NULL};
    switch (t) {
    case ST_CHAT_CHATML: return chatml;
    case ST_CHAT_LLAMA3: return llama3;
    case ST_CHAT_TULU: return tulu;
    case ST_CHAT_PLAIN: return plain;
    default: return none;
    }
}

int64_t st_chat_encode_spans(const struct st_tokenizer *tok, const char *prompt, size_t skip, const st_chat_span *spans,
                             size_t n_spans, int32_t **out) {
    size_t *r = malloc(sizeof(size_t) * 2 * (n_spans ? n_spans : 1)), m = 0;
    if (!r) return -1;
    for (size_t i = 0; i < n_spans; i++) {
        if (spans[i].start < skip) continue;
        r[2 * m] = spans[i].start - skip;
        r[2 * m++ + 1] = spans[i].len;
    }
    int64_t n = st_tokenizer_encode_plain_ranges(tok, prompt + skip, strlen(prompt + skip), true, r, m, out);
    free(r);
    return n;
}

void st_chat_token_text(const struct st_tokenizer *tok, int32_t id, char *out, size_t cap) {
    size_t n = 0;
    const char *s = id >= 0 ? st_tokenizer_token_text(tok, id, &n) : NULL;
    if (!s || n >= cap) n = 0;
    if (n) memcpy(out, s, n);
    out[n] = 0;
}
