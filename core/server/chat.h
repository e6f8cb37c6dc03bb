/* SPDX-License-Identifier: Apache-2.0 */
/* Chat templates: turning OpenAI-style messages into the prompt text a model family was
 * trained on. Built in: ChatML (Qwen), Llama 3, Mistral, DeepSeek, Tulu (OLMoE), plain. */
#ifndef STRATA_CHAT_H
#define STRATA_CHAT_H

#include <stddef.h>
#include <stdint.h>

typedef enum st_chat_template {
    ST_CHAT_CHATML = 0,
    ST_CHAT_LLAMA3 = 1,
    ST_CHAT_MISTRAL = 2,
    ST_CHAT_DEEPSEEK = 3,
    ST_CHAT_TULU = 4,
    ST_CHAT_PLAIN = 5,
    ST_CHAT_COUNT
} st_chat_template;

typedef struct st_chat_message {
    const char *role;    /* "system", "user", "assistant" (others are treated as user) */
    const char *content; /* UTF-8, borrowed */
} st_chat_message;

/* Template id for a name ("chatml", "qwen", "llama3", "mistral", "deepseek", "tulu",
 * "olmoe", "plain"); -1 when unknown. */
int st_chat_template_from_name(const char *name);
/* The template's canonical name. Static storage. */
const char *st_chat_template_name(st_chat_template t);
/* Detect the family from a GGUF tokenizer.chat_template text (Jinja). Sets *recognized to 0
 * (and returns ST_CHAT_PLAIN, or ChatML when the vocabulary has <|im_start|>) when unknown. */
st_chat_template st_chat_template_detect(const char *jinja, int vocab_has_im_start, int *recognized);
/* Render messages into a newly allocated prompt (caller frees), ending with the assistant's
 * turn opened. The BOS token is not included (the tokenizer adds it per the model's flags).
 * NULL on out-of-memory. */
char *st_chat_render(st_chat_template t, const st_chat_message *msgs, size_t n_msgs);
/* Where a message's content lies in a rendered prompt: bytes [start, start + len). */
typedef struct st_chat_span {
    size_t start, len;
} st_chat_span;
/* The ids of prompt[skip..] (a leading BOS text skipped), the contents' spans (offsets into
 * prompt; those before skip dropped) encoded as plain text, the rest with its control tokens.
 * Returns the count (*out malloc'ed), or -1 when out of memory. */
struct st_tokenizer;
/* The text of control token id (BOS, EOS) as a template sees it: "" when none or longer than cap-1. */
void st_chat_token_text(const struct st_tokenizer *tok, int32_t id, char *out, size_t cap);
int64_t st_chat_encode_spans(const struct st_tokenizer *tok, const char *prompt, size_t skip, const st_chat_span *spans,
                             size_t n_spans, int32_t **out);
/* st_chat_render that also returns the spans of the messages' contents (malloc'ed, in prompt
 * order; *spans may be NULL when there are none), so that content can be tokenized as plain
 * text while the template's own markers become special tokens. */
char *st_chat_render_spans(st_chat_template t, const st_chat_message *msgs, size_t n_msgs, st_chat_span **spans,
                           size_t *n_spans);
/* The spans of the messages' contents in prompt, rendered by the Jinja template t from the
 * chat request req with options o (server/jinja_spans.c): 0 with *spans (malloc'ed, may be
 * NULL), or -1 when the template does more to a content than trimming it (no spans known). */
struct cJSON;
struct st_jinja;
struct st_chat_jinja_opts;
int st_chat_jinja_spans(const struct st_jinja *t, const struct cJSON *req, const struct st_chat_jinja_opts *o,
                        const char *prompt, st_chat_span **spans, size_t *n_spans);
/* Extra stop strings the template's turn end implies (e.g. "<|im_end|>"); NULL-terminated
 * static list. */
const char *const *st_chat_stop_strings(st_chat_template t);

#endif
