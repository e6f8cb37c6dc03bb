/* SPDX-License-Identifier: Apache-2.0 */
/* Chat templates through the Jinja engine: an OpenAI request's messages and tools rendered
 * by the model's own template (tokenizer.chat_template, or a --chat-template-file), with the
 * variables Hugging Face's apply_chat_template passes. */
#ifndef STRATA_TEMPLATE_CHAT_JINJA_H
#define STRATA_TEMPLATE_CHAT_JINJA_H

#include <stddef.h>

#include "template/jinja.h"

typedef struct st_chat_jinja_opts {
    const char *bos_token, *eos_token; /* texts of the model's BOS/EOS ("" when none) */
    int add_generation_prompt;         /* open the assistant's turn (1 for chat requests) */
} st_chat_jinja_opts;

/* A message content's text parts [{type:"text", text}] joined into one malloc'ed string; NULL
 * when c is not an array of parts or out of memory. */
char *st_chat_text_parts(const cJSON *c);

/* Render req (an OpenAI chat request object: messages, tools, chat_template_kwargs,
 * reasoning_effort) with template t. Messages are normalized as templates expect: text-part
 * arrays become one string, a null content becomes "", tool call arguments given as JSON text
 * become objects. Returns the malloc'ed prompt, or NULL with err (a template error such as a
 * raise_exception() message, with its line). */
char *st_chat_jinja_apply(const st_jinja *t, const cJSON *req, const st_chat_jinja_opts *o, char *err, size_t errlen);

#endif
