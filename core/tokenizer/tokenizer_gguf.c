/* SPDX-License-Identifier: Apache-2.0 */
/* st_tokenizer_from_gguf: reads the tokenizer.ggml.* metadata of a GGUF file into an
 * st_tokenizer_config and builds the tokenizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

static int32_t get_id(const st_gguf *g, const char *key) {
    uint32_t v;
    if (st_gguf_get_u32(g, key, &v) != ST_GGUF_OK || v > INT32_MAX) return ST_TOKEN_UNSET;
    return (int32_t)v;
}

static int get_flag(const st_gguf *g, const char *key) {
    bool b;
    return st_gguf_get_bool(g, key, &b) == ST_GGUF_OK ? (int)b : -1;
}

/* Reads the string array `key` into freshly allocated pointer/length arrays (the strings
 * stay owned by g). Returns the element count, 0 when absent, or -1 on a bad type/OOM. */
static int64_t get_strings(const st_gguf *g, const char *key, const char ***strs, size_t **lens) {
    st_gguf_type et;
    uint64_t n;
    *strs = NULL;
    *lens = NULL;
    int rc = st_gguf_get_arr(g, key, &et, &n);
    if (rc == ST_GGUF_ABSENT) return 0;
    if (rc != ST_GGUF_OK || et != ST_GGUF_TYPE_STRING || n > INT32_MAX) return -1;
    *strs = malloc((n ? n : 1) * sizeof **strs);
    *lens = malloc((n ? n : 1) * sizeof **lens);
    if (!*strs || !*lens) return -1;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *s = st_gguf_arr_str(g, key, i, &len);
        if (!s) return -1;
        (*strs)[i] = s;
        (*lens)[i] = len;
    }
    return (int64_t)n;
}

st_tokenizer *st_tokenizer_from_gguf(const st_gguf *g, char *err, size_t errlen) {
    st_tokenizer_config cfg;
    st_tokenizer_config_init(&cfg);
    st_tokenizer *t = NULL;
    const char **tokens = NULL, **merges = NULL;
    size_t *token_lens = NULL, *merge_lens = NULL;
    float *scores = NULL;
    int32_t *types = NULL;
    const char *what = NULL;

    if (st_gguf_get_str(g, "tokenizer.ggml.model", &cfg.model, NULL) != ST_GGUF_OK) {
        what = "tokenizer.ggml.model missing";
        goto fail;
    }
    if (st_gguf_get_str(g, "tokenizer.ggml.pre", &cfg.pre, NULL) != ST_GGUF_OK) cfg.pre = NULL;
    if (st_gguf_get_str(g, "general.name", &cfg.name, NULL) != ST_GGUF_OK) cfg.name = NULL;

    int64_t n = get_strings(g, "tokenizer.ggml.tokens", &tokens, &token_lens);
    if (n <= 0) {
        what = "tokenizer.ggml.tokens missing or not a string array";
        goto fail;
    }
    cfg.n_vocab = (uint32_t)n;
    cfg.tokens = tokens;
    cfg.token_lens = token_lens;

    st_gguf_type et;
    uint64_t len;
    if (st_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &len) == ST_GGUF_OK) {
        if (len < (uint64_t)n) {
            what = "tokenizer.ggml.scores shorter than the vocabulary";
            goto fail;
        }
        scores = malloc(len * sizeof *scores);
        if (!scores) goto oom;
        int rc;
        if (et == ST_GGUF_TYPE_F32 || et == ST_GGUF_TYPE_F64) {
            rc = st_gguf_arr_copy_f32(g, "tokenizer.ggml.scores", scores, len);
        } else {
            int32_t *tmp = malloc(len * sizeof *tmp);
            if (!tmp) goto oom;
            rc = st_gguf_arr_copy_i32(g, "tokenizer.ggml.scores", tmp, len);
            for (uint64_t i = 0; rc == ST_GGUF_OK && i < len; i++) scores[i] = (float)tmp[i];
            free(tmp);
        }
        if (rc != ST_GGUF_OK) {
            what = "tokenizer.ggml.scores has a bad type";
            goto fail;
        }
        cfg.scores = scores;
    }
    if (st_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &len) == ST_GGUF_OK) {
        if (len < (uint64_t)n) {
            what = "tokenizer.ggml.token_type shorter than the vocabulary";
            goto fail;
        }
        types = malloc(len * sizeof *types);
        if (!types) goto oom;
        if (st_gguf_arr_copy_i32(g, "tokenizer.ggml.token_type", types, len) != ST_GGUF_OK) {
            what = "tokenizer.ggml.token_type has a bad type";
            goto fail;
        }
        cfg.token_types = types;
    }
    int64_t nm = get_strings(g, "tokenizer.ggml.merges", &merges, &merge_lens);
    if (nm < 0) {
        what = "tokenizer.ggml.merges is not a string array";
        goto fail;
    }
    cfg.merges = merges;
    cfg.merge_lens = merge_lens;
    cfg.n_merges = (uint64_t)nm;
    if ((strcmp(cfg.model, "gpt2") == 0 || strcmp(cfg.model, "gemma4") == 0) && nm == 0) {
        what = "tokenizer.ggml.merges missing for a BPE vocabulary";
        goto fail;
    }

    cfg.bos_id = get_id(g, "tokenizer.ggml.bos_token_id");
    cfg.eos_id = get_id(g, "tokenizer.ggml.eos_token_id");
    cfg.eot_id = get_id(g, "tokenizer.ggml.eot_token_id");
    cfg.eom_id = get_id(g, "tokenizer.ggml.eom_token_id");
    cfg.unk_id = get_id(g, "tokenizer.ggml.unknown_token_id");
    cfg.sep_id = get_id(g, "tokenizer.ggml.seperator_token_id"); /* sic, as written by converters */
    cfg.pad_id = get_id(g, "tokenizer.ggml.padding_token_id");
    cfg.add_bos = get_flag(g, "tokenizer.ggml.add_bos_token");
    cfg.add_eos = get_flag(g, "tokenizer.ggml.add_eos_token");
    cfg.add_space_prefix = get_flag(g, "tokenizer.ggml.add_space_prefix");

    t = st_tokenizer_create(&cfg, err, errlen);
    goto done;
oom:
    what = "out of memory";
fail:
    if (err && errlen) snprintf(err, errlen, "tokenizer: %s", what);
done:
    free(tokens);
    free(token_lens);
    free(merges);
    free(merge_lens);
    free(scores);
    free(types);
    return t;
}
