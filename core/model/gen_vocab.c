/* SPDX-License-Identifier: Apache-2.0 */
/* Tokenizer metadata for generated models: the built-in byte-level vocabulary, or every
 * tokenizer.* key copied from another GGUF. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gen_internal.h"

/* GPT-2 byte-level alphabet: printable bytes stand for themselves, the others are shifted to
 * code points 256.. in byte order. Writes the UTF-8 of byte b's symbol into out (NUL-ended). */
static void byte_symbol(int b, char *out) {
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
        cp = b;
    } else {
        int n = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

/* A few common English merges, in rank order ("\xC4\xA0" is the symbol of a space). */
#define SP "\xC4\xA0"
static const char *const k_merges[][2] = {
    {SP, "t"}, {"h", "e"}, {SP, "a"}, {"i", "n"}, {"e", "r"}, {SP "t", "he"}, {"o", "n"}, {SP, "s"},
    {"e", "d"}, {SP, "w"}, {SP, "o"}, {"a", "n"}, {"i", "s"}, {"r", "e"}, {"o", "u"}, {SP, "b"},
    {SP, "c"}, {"in", "g"}, {SP, "f"}, {SP, "p"}, {"a", "t"}, {"e", "n"}, {SP, "m"}, {"o", "r"},
    {SP, "h"}, {"a", "r"}, {SP, "d"}, {"l", "l"}, {SP, "l"}, {"n", "d"}, {SP "a", "nd"}, {SP, "i"},
    {SP "o", "n"}, {SP "t", "o"}, {SP "o", "f"}, {SP, "n"}, {"e", "s"}, {SP, "e"}, {SP, "g"},
    {SP "i", "n"}, {SP, "y"}, {"a", "s"}, {SP "w", "as"},
};
#undef SP

int st_gen_vocab_builtin(st_gguf_writer *w, int32_t want, int32_t *n_vocab) {
    const int n_merges = (int)(sizeof k_merges / sizeof k_merges[0]);
    const int natural = 256 + n_merges + 2;
    const int n = want > natural ? want : natural; /* padded with unreachable tokens */
    char **tok = calloc((size_t)n, sizeof *tok);
    char **mer = calloc((size_t)n_merges, sizeof *mer);
    int32_t *types = calloc((size_t)n, sizeof *types);
    int rc = -1;
    if (!tok || !mer || !types) goto done;
    for (int b = 0; b < 256; b++) {
        tok[b] = malloc(4);
        if (!tok[b]) goto done;
        byte_symbol(b, tok[b]);
        types[b] = 1;
    }
    for (int i = 0; i < n_merges; i++) {
        size_t la = strlen(k_merges[i][0]), lb = strlen(k_merges[i][1]);
        tok[256 + i] = malloc(la + lb + 1);
        mer[i] = malloc(la + lb + 2);
        if (!tok[256 + i] || !mer[i]) goto done;
        snprintf(tok[256 + i], la + lb + 1, "%s%s", k_merges[i][0], k_merges[i][1]);
        snprintf(mer[i], la + lb + 2, "%s %s", k_merges[i][0], k_merges[i][1]);
        types[256 + i] = 1;
    }
    for (int i = 256 + n_merges; i < n - 2; i++) { /* padding: never produced by the merges */
        tok[i] = malloc(24);
        if (!tok[i]) goto done;
        snprintf(tok[i], 24, "[PAD%d]", i);
        types[i] = 1;
    }
    tok[n - 2] = strdup("<|begin_of_text|>");
    tok[n - 1] = strdup("<|end_of_text|>");
    if (!tok[n - 2] || !tok[n - 1]) goto done;
    types[n - 2] = types[n - 1] = 3; /* control */
    if (st_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2") ||
        st_gguf_writer_set_str(w, "tokenizer.ggml.pre", "default") ||
        st_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok, (uint64_t)n) ||
        st_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", ST_GGUF_TYPE_I32, types, (uint64_t)n) ||
        st_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)mer, (uint64_t)n_merges) ||
        st_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)(n - 2)) ||
        st_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)(n - 1)) ||
        st_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true))
        goto done;
    *n_vocab = n;
    rc = 0;
done:
    for (int i = 0; tok && i < n; i++) free(tok[i]);
    for (int i = 0; mer && i < n_merges; i++) free(mer[i]);
    free(tok);
    free(mer);
    free(types);
    return rc;
}

int st_gen_copy_key(st_gguf_writer *w, const st_gguf *g, int64_t i, const char *key) {
    st_gguf_value v;
    if (st_gguf_kv_get(g, i, &v) != ST_GGUF_OK) return -1;
    switch (v.type) {
    case ST_GGUF_TYPE_U8: return st_gguf_writer_set_u8(w, key, (uint8_t)v.v.u64);
    case ST_GGUF_TYPE_I8: return st_gguf_writer_set_i8(w, key, (int8_t)v.v.i64);
    case ST_GGUF_TYPE_U16: return st_gguf_writer_set_u16(w, key, (uint16_t)v.v.u64);
    case ST_GGUF_TYPE_I16: return st_gguf_writer_set_i16(w, key, (int16_t)v.v.i64);
    case ST_GGUF_TYPE_U32: return st_gguf_writer_set_u32(w, key, (uint32_t)v.v.u64);
    case ST_GGUF_TYPE_I32: return st_gguf_writer_set_i32(w, key, (int32_t)v.v.i64);
    case ST_GGUF_TYPE_U64: return st_gguf_writer_set_u64(w, key, v.v.u64);
    case ST_GGUF_TYPE_I64: return st_gguf_writer_set_i64(w, key, v.v.i64);
    case ST_GGUF_TYPE_F32: return st_gguf_writer_set_f32(w, key, (float)v.v.f64);
    case ST_GGUF_TYPE_F64: return st_gguf_writer_set_f64(w, key, v.v.f64);
    case ST_GGUF_TYPE_BOOL: return st_gguf_writer_set_bool(w, key, v.v.u64 != 0);
    case ST_GGUF_TYPE_STRING: return st_gguf_writer_set_str(w, key, v.v.str.ptr);
    case ST_GGUF_TYPE_ARRAY: {
        uint64_t n = v.v.arr.len;
        if (v.v.arr.type == ST_GGUF_TYPE_STRING) {
            const char **s = malloc((size_t)(n ? n : 1) * sizeof *s);
            if (!s) return -1;
            for (uint64_t j = 0; j < n; j++) {
                s[j] = st_gguf_arr_str(g, key, j, NULL);
                if (!s[j]) s[j] = "";
            }
            int rc = st_gguf_writer_set_arr_str(w, key, s, n);
            free(s);
            return rc;
        }
        const void *data = st_gguf_arr_data(g, i);
        if (!data) return 0; /* arrays of arrays: not part of any tokenizer we know; skip */
        return st_gguf_writer_set_arr(w, key, v.v.arr.type, data, n);
    }
    default: return 0;
    }
}

int st_gen_vocab_copy(st_gguf_writer *w, const char *path, int32_t *n_vocab, char *err, size_t errlen) {
    st_gguf *g = st_gguf_open(path, err, errlen);
    if (!g) return -1;
    st_gguf_type et;
    uint64_t n = 0;
    if (st_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n) != ST_GGUF_OK || n == 0) {
        snprintf(err, errlen, "%s has no tokenizer.ggml.tokens", path);
        st_gguf_close(g);
        return -1;
    }
    for (int64_t i = 0; i < st_gguf_kv_count(g); i++) {
        const char *key = st_gguf_kv_key(g, i);
        if (!key || strncmp(key, "tokenizer.", 10)) continue;
        if (st_gen_copy_key(w, g, i, key)) {
            snprintf(err, errlen, "copying %s from %s: %s", key, path, st_gguf_writer_error(w));
            st_gguf_close(g);
            return -1;
        }
    }
    st_gguf_close(g);
    *n_vocab = (int32_t)n;
    return 0;
}
