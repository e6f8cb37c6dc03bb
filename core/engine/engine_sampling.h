/* SPDX-License-Identifier: Apache-2.0 */
/* A request's sampler, made when it is submitted: parameters, logit biases and its grammar
 * (compiled here, so a grammar the front let through but the engine cannot use is a refusal
 * with the reason, not a failure later). */
#ifndef STRATA_ENGINE_SAMPLING_H
#define STRATA_ENGINE_SAMPLING_H

#include <stddef.h>

#include "engine/engine.h"

struct st_gvocab;
/* NULL with err ("invalid_grammar: line 1, col 9: ...") when the grammar does not compile, a
 * grammar came without a vocabulary, or memory ran out. */
st_sampler *st_engine_sampler_for(const st_gen_request *r, int32_t n_vocab, const struct st_gvocab *v, char *err,
                                  size_t errlen);

#endif
