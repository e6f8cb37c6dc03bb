/* SPDX-License-Identifier: Apache-2.0 */
/* Private helpers of the model generator. */
#ifndef STRATA_MODEL_GEN_INTERNAL_H
#define STRATA_MODEL_GEN_INTERNAL_H

#include "gguf/gguf.h"
#include "model/gen.h"

/* Sets the built-in byte-level vocabulary's tokenizer keys, padded to `want` tokens when that
 * is larger than its natural size; *n_vocab gets the size. 0 or -1. */
int st_gen_vocab_builtin(st_gguf_writer *w, int32_t want, int32_t *n_vocab);
/* Copies every tokenizer.* key of the GGUF at path; *n_vocab = its token count. 0 or -1 + err. */
int st_gen_vocab_copy(st_gguf_writer *w, const char *path, int32_t *n_vocab, char *err, size_t errlen);

#endif
