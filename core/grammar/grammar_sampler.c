/* SPDX-License-Identifier: Apache-2.0 */
/* A grammar as a sampler constraint, and the vocabulary of a tokenizer for its masks. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "sample/sample.h"
#include "tokenizer/tokenizer.h"

st_gvocab *st_gvocab_from_tokenizer(const st_tokenizer *t) {
    int32_t n = (int32_t)st_tokenizer_vocab_size(t);
    char **texts = calloc((size_t)n, sizeof *texts);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    uint8_t *eog = calloc((size_t)n, 1);
    st_gvocab *v = NULL;
    if (!texts || !lens || !eog) goto fail;
    for (int32_t i = 0; i < n; i++) {
        char buf[512];
        int32_t len = st_tokenizer_token_to_piece(t, i, buf, sizeof buf, false); /* control tokens: "" */
        if (len < 0 || len > (int32_t)sizeof buf) len = 0;
        texts[i] = malloc((size_t)len + 1);
        if (!texts[i]) goto fail;
        memcpy(texts[i], buf, (size_t)len);
        texts[i][len] = 0;
        lens[i] = (size_t)len;
        eog[i] = st_tokenizer_is_eog(t, i);
    }
    v = st_gvocab_new((const char *const *)texts, lens, eog, n);
fail:
    for (int32_t i = 0; texts && i < n; i++) free(texts[i]);
    free(texts);
    free(lens);
    free(eog);
    return v;
}

typedef struct gcon {
    st_grammar *g;
    st_gmatch *m;
    const st_gvocab *v;
} gcon;

static int con_ok(void *u, int32_t t) {
    gcon *c = u;
    return st_gmatch_token_ok(c->m, c->v, t);
}

static int32_t con_mask(void *u, uint8_t *allowed) {
    gcon *c = u;
    return st_gmatch_mask(c->m, c->v, allowed);
}

static void con_accept(void *u, int32_t t) {
    gcon *c = u;
    st_gmatch_accept_token(c->m, c->v, t);
}

static const char *con_error(void *u) {
    gcon *c = u;
    return st_gmatch_error(c->m);
}

static void con_free(void *u) {
    gcon *c = u;
    st_gmatch_free(c->m);
    st_grammar_free(c->g);
    free(c);
}

int st_grammar_constrain(st_sampler *s, st_grammar *g, const st_gvocab *v) {
    gcon *c = calloc(1, sizeof *c);
    if (!c || !(c->m = st_gmatch_new(g))) {
        free(c);
        st_grammar_free(g);
        return -1;
    }
    c->g = g;
    c->v = v;
    st_sampler_constraint k = {con_ok, con_mask, con_accept, con_free, c, con_error};
    st_sampler_set_constraint(s, &k);
    return 0;
}
