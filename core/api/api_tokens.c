/* SPDX-License-Identifier: Apache-2.0 */
/* Tokenizing and detokenizing with the model's tokenizer (read-only: any thread). */
#include <string.h>

#include "api/api_internal.h"

STRATA_API strata_status strata_tokenize(const strata_model *m, const char *text, size_t len, int add_special,
                                         int parse_special, int32_t *tokens, size_t cap, size_t *n_out) {
    if (!m || (!text && len) || (!tokens && cap) || !n_out)
        return st_api_fail(STRATA_ERR_INVALID, "strata_tokenize: NULL argument");
    *n_out = 0;
    int64_t n = st_tokenizer_encode(m->tok, text ? text : "", len, add_special != 0, parse_special != 0, tokens, cap);
    if (n < 0) return st_api_fail(STRATA_ERR_NO_MEMORY, "strata_tokenize: out of memory, or the text is too long");
    *n_out = (size_t)n;
    if ((size_t)n > cap) return st_api_fail(STRATA_ERR_BUFFER, "strata_tokenize: %lld tokens, room for %zu", (long long)n, cap);
    st_api_ok();
    return STRATA_OK;
}

STRATA_API strata_status strata_detokenize(const strata_model *m, const int32_t *tokens, size_t n, int special,
                                           char *buf, size_t cap, size_t *len_out) {
    if (!m || (!tokens && n) || (!buf && cap) || !len_out)
        return st_api_fail(STRATA_ERR_INVALID, "strata_detokenize: NULL argument");
    size_t len = 0;
    char none;
    for (size_t i = 0; i < n; i++) {
        char *dst = len < cap ? buf + len : &none;
        int32_t k = st_tokenizer_token_to_piece(m->tok, tokens[i], dst, len < cap ? cap - len : 0, special != 0);
        if (k < 0) return st_api_fail(STRATA_ERR_INVALID, "strata_detokenize: token %d is not in the vocabulary", tokens[i]);
        len += (size_t)k;
    }
    *len_out = len;
    if (len >= cap) {
        if (cap) buf[cap - 1] = 0;
        return st_api_fail(STRATA_ERR_BUFFER, "strata_detokenize: %zu bytes and a NUL, room for %zu", len, cap);
    }
    buf[len] = 0;
    st_api_ok();
    return STRATA_OK;
}
