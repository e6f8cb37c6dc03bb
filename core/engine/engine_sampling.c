/* SPDX-License-Identifier: Apache-2.0 */
/* Making a request's sampler: parameters, logit biases, grammar. */
#include "engine/engine_sampling.h"

#include <stdio.h>

#include "grammar/grammar.h"

st_sampler *st_engine_sampler_for(const st_gen_request *r, int32_t n_vocab, const struct st_gvocab *v, char *err,
                                  size_t errlen) {
    char gerr[300];
    snprintf(err, errlen, "engine: out of host memory"); /* replaced by a more precise reason below */
    st_sampler *s = st_sampler_new(&r->sp, n_vocab);
    if (!s) goto fail;
    if (r->n_bias > 0 && st_sampler_set_bias(s, r->bias_ids, r->bias_vals, r->n_bias)) goto fail;
    st_sampler_set_logprobs(s, r->want_logprobs ? r->top_logprobs : -1);
    if (!r->grammar || !r->grammar[0]) return s;
    if (!v) {
        snprintf(err, errlen, "invalid_grammar: this engine has no vocabulary for grammars");
        goto fail;
    }
    st_grammar *g = st_grammar_parse(r->grammar, gerr, sizeof gerr);
    if (!g || st_grammar_check(g, gerr, sizeof gerr)) {
        st_grammar_free(g);
        snprintf(err, errlen, "invalid_grammar: %s", gerr);
        goto fail;
    }
    if (st_grammar_constrain(s, g, v)) goto fail;
    return s;
fail:
    st_sampler_free(s);
    return NULL;
}
