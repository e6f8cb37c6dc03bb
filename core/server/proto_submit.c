/* SPDX-License-Identifier: Apache-2.0 */
/* The SUBMIT frame's variable part: prompt tokens, grammar text, logit biases. */
#include <stdlib.h>
#include <string.h>

#include "server/proto.h"

void *st_msg_submit_pack(const int32_t *prompt, int32_t n, const char *grammar, const int32_t *bias_ids,
                         const float *bias_vals, int32_t n_bias, size_t *out_n) {
    size_t ng = grammar ? strlen(grammar) : 0, nt = sizeof(int32_t) * (size_t)n;
    size_t nb = (sizeof(int32_t) + sizeof(float)) * (size_t)n_bias;
    char *b = malloc(nt + ng + nb + 1);
    if (!b) return NULL;
    memcpy(b, prompt, nt);
    if (ng) memcpy(b + nt, grammar, ng);
    if (n_bias) {
        memcpy(b + nt + ng, bias_ids, sizeof(int32_t) * (size_t)n_bias);
        memcpy(b + nt + ng + sizeof(int32_t) * (size_t)n_bias, bias_vals, sizeof(float) * (size_t)n_bias);
    }
    *out_n = nt + ng + nb;
    return b;
}

int st_msg_submit_unpack(void *p, size_t len, st_gen_request *r) {
    static _Thread_local char *grammar;
    const st_msg_submit *s = p;
    if (len < sizeof *s || s->n_prompt < 0 || s->n_grammar < 0 || s->n_bias < 0) return -1;
    size_t nt = sizeof(int32_t) * (size_t)s->n_prompt, ng = (size_t)s->n_grammar;
    size_t nb = (sizeof(int32_t) + sizeof(float)) * (size_t)s->n_bias;
    if (len != sizeof *s + nt + ng + nb) return -1;
    const char *base = (const char *)(s + 1);
    memset(r, 0, sizeof *r);
    r->id = s->id;
    r->prompt = (const int32_t *)base;
    r->n_prompt = s->n_prompt;
    r->max_tokens = s->max_tokens;
    r->ignore_eos = s->ignore_eos;
    r->sp = s->sp;
    r->want_logprobs = s->want_logprobs;
    r->top_logprobs = s->top_logprobs;
    r->pooling = s->pooling;
    free(grammar);
    grammar = NULL;
    if (ng) {
        if (!(grammar = malloc(ng + 1))) return -1;
        memcpy(grammar, base + nt, ng);
        grammar[ng] = 0;
        r->grammar = grammar;
    }
    if (s->n_bias) {
        r->bias_ids = (const int32_t *)(base + nt + ng);
        r->bias_vals = (const float *)(base + nt + ng + sizeof(int32_t) * (size_t)s->n_bias);
        r->n_bias = s->n_bias;
    }
    return 0;
}
