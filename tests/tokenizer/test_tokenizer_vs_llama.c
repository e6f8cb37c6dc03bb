/* SPDX-License-Identifier: Apache-2.0 */
/* Differential test of st_tokenizer against llama.cpp's own tokenizer (libllama from the
 * reference cache fetched by ci/fetch-llama-ref.sh; built only when that cache is present).
 * For each vocabulary models/ggml-vocab-<name>.gguf it compares, with both tokenizers loaded
 * from the same file:
 *   - the encodings of many generated texts (mixed scripts, combining marks, digits, every
 *     kind of space, contractions, emoji, special-token texts, ill-formed UTF-8) under all
 *     four add_special x parse_special settings, plus the whole llama.cpp README;
 *   - the piece of every token id, with and without special rendering;
 *   - BOS / EOS / EOT ids and the end-of-generation flag of every token.
 * Pre-tokenizers without a vocabulary of their own in llama.cpp's tree are checked on
 * variants: a copy of an existing vocabulary file with tokenizer.ggml.pre changed (the split
 * rules are what differs; any vocabulary exercises them).
 * usage: test_tokenizer_vs_llama MODELS_DIR [N_TEXTS] [VOCAB | PRE@VOCAB[:MODEL] ...]
 * (exit 0 = no difference) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llama.h"

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

static const char *const default_vocabs[] = {
    "llama-spm", "phi-3", "llama-bpe", "qwen2", "qwen35", "deepseek-llm", "deepseek-coder", "gpt-2",
    "mpt", "starcoder", "refact", "command-r", "falcon", "gemma-4",
};

/* Pre-tokenizers checked on a copy of another vocabulary. */
static const struct {
    const char *base, *pre, *model; /* model NULL: as in the base file */
} variants[] = {
    {"deepseek-llm", "deepseek-v3", NULL},
    {"llama-bpe", "glm4", NULL},
    {"qwen2", "deepseek-r1-qwen", NULL},
    {"llama-bpe", "gpt-4o", NULL},
    {"qwen2", "llama4", NULL},
    {"llama-bpe", "minimax-m2", NULL},
    {"qwen2", "grok-2", NULL},
    {"qwen2", "bailingmoe2", NULL},
    {"deepseek-llm", "hunyuan-dense", NULL},
    {"llama-bpe", "tekken", NULL},
    {"qwen2", "kimi-k2", NULL},
    {"qwen2", "seed-coder", NULL},
    {"llama-bpe", "minicpm5", NULL},
    {"deepseek-llm", "afmoe", NULL},
    {"qwen2", "laguna", NULL},
    {"qwen2", "exaone-moe", NULL},
    {"gemma-4", "sarvam-moe", "gpt2"},
    {"gpt-2", "default", NULL},
    {"gpt-2", NULL, NULL}, /* no tokenizer.ggml.pre at all */
};

static char readme[4096]; /* llama.cpp's README.md: a long real document */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* Fragments texts are made of. */
static const char *const frags[] = {
    "Hello", "world", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n ", "'s", "'S", "'ll",
    "'LL", "'re", "'Ve", "'d", "'m", "'t", "'", "\"", "don't", "I'M", "3", "33", "333", "3333", "1234567",
    "3.14", "1,000", "x=y+1;", "()", "[]", "{}", "<", ">", "</", "...", "!!", "?", "-", "--", "__init__",
    "#include", "//", "/* */", "\xc3\xa9", "e\xcc\x81", "\xcc\x81", "\xc3\x84pfel", "stra\xc3\x9f" "e",
    "\xd0\xbd\xd0\xb5\xd1\x89\xd0\xbe", "\xce\xb1\xce\xb2\xce\xb3", "\xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9",
    "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80", "\xe0\xb8\xaa\xe0\xb8\xa7\xe0\xb8\xb1\xe0\xb8\xaa\xe0\xb8\x94\xe0\xb8\xb5",
    "\xe6\x88\x91\xe6\x83\xb3\xe5\x9c\xa8", "\xe4\xb8\xad\xe6\x96\x87", "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4",
    "\xe3\x81\x93\xe3\x82\x93\xe3\x81\xab\xe3\x81\xa1\xe3\x81\xaf", "\xe3\x82\xab\xe3\x82\xbf\xe3\x82\xab\xe3\x83\x8a",
    "\xef\xbd\x9e", "\xef\xbc\x81", "\xe3\x80\x82", "\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x94",
    "\xc2\xa0", "\xe3\x80\x80", "\xe2\x80\xa8", "\xc2\x85", "\xe2\x80\x89", "\xe2\x80\x8b", "\xef\xbb\xbf",
    "\xd9\xa1\xd9\xa2", "\xef\xbc\x91\xef\xbc\x92", "\xc2\xbd", "\xe2\x85\xa0", "\xe2\x82\xac", "\xc2\xa9", "\xe2\x88\x91",
    "\xf0\x9f\xa6\x99", "\xf0\x9f\x98\x81", "\xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f",
    "\xe2\x9c\x85", "\xf0\x9f\x9a\x80", "\xe1\x9e\x80\xe1\x9e\xb6", "\xc2\xb5", "\xe1\xb8\x80", "\xe2\x84\xa6",
    "<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|user|>", "<|end|>",
    "<|begin_of_text|>", "<|eot_id|>", "\xc3\xb8", "\xc3\xbc", "[PAD100015]", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>",
    "\xe2\x96\x81", "\xc4\xa0", "<0x0A>", "HelloWorld", "ABCdef", "camelCase", "XMLHttp", "\xc3\x89" "cole",
    "\xc3\xa9" "A", "a/b", "\n/", "I'Ll", "x'", "ABC'S", "`", "```", "$", "^", "|", "~", "+=", "<=>", "@", "\\",
    "%", "&&", "0x1F", "12345678901",
};

static const char *const bad_utf8[] = {"\x80", "\xc3", "\xe2\x82", "\xf0\x9f\x98", "\xff", "\xc0\xaf", "\xed\xa0\x80"};

/* Appends a random text to buf (cap bytes); returns its length. */
static size_t make_text(char *buf, size_t cap, int allow_bad) {
    size_t n = 0;
    int parts = 1 + (int)(rng() % 12);
    for (int i = 0; i < parts; i++) {
        const char *f;
        char tmp[8];
        uint64_t r = rng() % 100;
        if (allow_bad && r < 3) {
            f = bad_utf8[rng() % (sizeof bad_utf8 / sizeof bad_utf8[0])];
        } else if (r < 8) { /* a random code point from the BMP or beyond */
            uint32_t cp = (uint32_t)(rng() % (r < 6 ? 0x3000 : 0x30000)) + 0x20;
            if (cp >= 0xD800 && cp < 0xE000) cp = 0xE9;
            size_t l;
            if (cp < 0x80) { tmp[0] = (char)cp; l = 1; }
            else if (cp < 0x800) { tmp[0] = (char)(0xC0 | (cp >> 6)); tmp[1] = (char)(0x80 | (cp & 0x3F)); l = 2; }
            else if (cp < 0x10000) { tmp[0] = (char)(0xE0 | (cp >> 12)); tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); tmp[2] = (char)(0x80 | (cp & 0x3F)); l = 3; }
            else { tmp[0] = (char)(0xF0 | (cp >> 18)); tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); tmp[3] = (char)(0x80 | (cp & 0x3F)); l = 4; }
            tmp[l] = 0;
            f = tmp;
        } else {
            f = frags[rng() % (sizeof frags / sizeof frags[0])];
        }
        size_t l = strlen(f);
        int rep = (rng() % 8 == 0) ? 1 + (int)(rng() % 5) : 1;
        for (int k = 0; k < rep && n + l < cap; k++) {
            memcpy(buf + n, f, l);
            n += l;
        }
    }
    return n;
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)level;
    (void)text;
    (void)user;
}

static void show(const char *s, size_t n) {
    fputc('\'', stderr);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F) fprintf(stderr, "\\x%02x", c);
        else fputc(c, stderr);
    }
    fputc('\'', stderr);
}

/* Compares one text under one setting; returns 1 when equal. */
static int compare_text(const struct llama_vocab *lv, const st_tokenizer *t, const char *text, size_t n,
                        bool add_special, bool parse_special, int verbose) {
    int32_t cap = (int32_t)n * 4 + 16;
    llama_token *ref = malloc((size_t)cap * sizeof *ref);
    int32_t n_ref = llama_tokenize(lv, text, (int32_t)n, ref, cap, add_special, parse_special);
    int32_t *got = NULL;
    int64_t n_got = st_tokenizer_encode_alloc(t, text, n, add_special, parse_special, &got);
    int same = n_ref >= 0 && n_got == n_ref && (n_ref == 0 || memcmp(ref, got, (size_t)n_ref * sizeof *got) == 0);
    if (!same && verbose) {
        /* show the neighbourhood of the first difference */
        int64_t d = 0;
        while (d < n_ref && d < n_got && ref[d] == got[d]) d++;
        int64_t from = d > 6 ? d - 6 : 0;
        size_t off = 0;
        for (int64_t i = 0; i < from; i++) {
            char pc[256];
            int32_t pl = st_tokenizer_token_to_piece(t, got[i], pc, sizeof pc, true);
            off += pl > 0 ? (size_t)pl : 0;
        }
        fprintf(stderr, "  add_special=%d parse_special=%d, first difference at token %ld, text from byte %zu: ",
                add_special, parse_special, (long)d, off);
        show(text + (off < n ? off : n), (off < n ? n - off : 0) > 120 ? 120 : (off < n ? n - off : 0));
        fprintf(stderr, "\n    llama.cpp:");
        for (int64_t i = from; i < n_ref && i < d + 8; i++) fprintf(stderr, " %d", ref[i]);
        fprintf(stderr, "\n    strata:   ");
        for (int64_t i = from; i < n_got && i < d + 8; i++) fprintf(stderr, " %d", got[i]);
        fprintf(stderr, "\n");
    }
    free(ref);
    free(got);
    return same;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[sz] = 0;
        *len = (size_t)sz;
    }
    return b;
}

/* Writes a copy of the GGUF at src (metadata only) to dst with tokenizer.ggml.pre = pre (none
 * when NULL) and, when model is not NULL, tokenizer.ggml.model = model. */
static int write_variant(const char *src, const char *dst, const char *pre, const char *model) {
    char err[512];
    st_gguf *g = st_gguf_open(src, err, sizeof err);
    if (!g) {
        fprintf(stderr, "variant: %s\n", err);
        return -1;
    }
    st_gguf_writer *w = st_gguf_writer_new();
    int rc = w ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < st_gguf_kv_count(g); i++) {
        const char *key = st_gguf_kv_key(g, i);
        st_gguf_value v;
        if (st_gguf_kv_get(g, i, &v) != ST_GGUF_OK) {
            rc = -1;
            break;
        }
        if (!strcmp(key, "tokenizer.ggml.pre")) continue;
        if (model && !strcmp(key, "tokenizer.ggml.model")) {
            rc = st_gguf_writer_set_str(w, key, model);
            continue;
        }
        switch (v.type) {
        case ST_GGUF_TYPE_STRING: rc = st_gguf_writer_set_str(w, key, v.v.str.ptr); break;
        case ST_GGUF_TYPE_BOOL: rc = st_gguf_writer_set_bool(w, key, v.v.u64 != 0); break;
        case ST_GGUF_TYPE_U8: case ST_GGUF_TYPE_U16: case ST_GGUF_TYPE_U32:
            rc = st_gguf_writer_set_u32(w, key, (uint32_t)v.v.u64);
            break;
        case ST_GGUF_TYPE_U64: rc = st_gguf_writer_set_u64(w, key, v.v.u64); break;
        case ST_GGUF_TYPE_I8: case ST_GGUF_TYPE_I16: case ST_GGUF_TYPE_I32:
            rc = st_gguf_writer_set_i32(w, key, (int32_t)v.v.i64);
            break;
        case ST_GGUF_TYPE_I64: rc = st_gguf_writer_set_i64(w, key, v.v.i64); break;
        case ST_GGUF_TYPE_F32: rc = st_gguf_writer_set_f32(w, key, (float)v.v.f64); break;
        case ST_GGUF_TYPE_F64: rc = st_gguf_writer_set_f64(w, key, v.v.f64); break;
        case ST_GGUF_TYPE_ARRAY:
            if (v.v.arr.type == ST_GGUF_TYPE_STRING) {
                uint64_t n = v.v.arr.len;
                const char **strs = malloc((n ? n : 1) * sizeof *strs);
                for (uint64_t j = 0; strs && j < n; j++) {
                    st_gguf_value e;
                    strs[j] = st_gguf_arr_get(g, i, j, &e) == ST_GGUF_OK ? e.v.str.ptr : "";
                }
                rc = strs ? st_gguf_writer_set_arr_str(w, key, strs, n) : -1;
                free(strs);
            } else {
                rc = st_gguf_writer_set_arr(w, key, v.v.arr.type, st_gguf_arr_data(g, i), v.v.arr.len);
            }
            break;
        default: rc = -1;
        }
    }
    if (rc == 0 && pre) rc = st_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    if (rc == 0) rc = st_gguf_writer_begin(w, dst);
    if (rc == 0) rc = st_gguf_writer_finish(w);
    if (rc != 0) fprintf(stderr, "variant %s: %s\n", dst, w ? st_gguf_writer_error(w) : "out of memory");
    st_gguf_writer_free(w);
    st_gguf_close(g);
    return rc;
}

static int run_vocab_path(const char *path, const char *name, int n_texts);

static int run_vocab(const char *models, const char *name, int n_texts) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", models, name);
    return run_vocab_path(path, name, n_texts);
}

/* Checks pre-tokenizer `pre` on a copy of vocabulary `base`. */
static int run_variant(const char *models, const char *base, const char *pre, const char *model,
                       int n_texts) {
    char src[4096], dst[4096], name[128];
    snprintf(src, sizeof src, "%s/ggml-vocab-%s.gguf", models, base);
    const char *tmp = getenv("TMPDIR");
    snprintf(dst, sizeof dst, "%s/strata-tok-%ld-%s.gguf", tmp && tmp[0] ? tmp : "/tmp", (long)getpid(),
             pre ? pre : "none");
    snprintf(name, sizeof name, "%s@%s", pre ? pre : "(no pre)", base);
    if (write_variant(src, dst, pre, model) != 0) {
        remove(dst);
        return -1;
    }
    int rc = run_vocab_path(dst, name, n_texts);
    remove(dst);
    return rc;
}

static int run_vocab_path(const char *path, const char *name, int n_texts) {
    char err[512];
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "%s: llama.cpp cannot load %s\n", name, path);
        return -1;
    }
    const struct llama_vocab *lv = llama_model_get_vocab(model);
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_tokenizer *t = g ? st_tokenizer_from_gguf(g, err, sizeof err) : NULL;
    st_gguf_close(g);
    if (!t) {
        fprintf(stderr, "%s: %s\n", name, err);
        llama_model_free(model);
        return -1;
    }

    long bad_meta = 0, bad_piece = 0, bad_text = 0, n_cmp = 0;
    int shown = 0;
    if (llama_vocab_n_tokens(lv) != (int32_t)st_tokenizer_vocab_size(t)) bad_meta++;
    if (llama_vocab_bos(lv) != st_tokenizer_bos(t)) bad_meta++;
    if (llama_vocab_eos(lv) != st_tokenizer_eos(t)) bad_meta++;
    if (llama_vocab_eot(lv) != st_tokenizer_eot(t)) bad_meta++;
    if (llama_vocab_get_add_bos(lv) != st_tokenizer_add_bos(t)) bad_meta++;
    if (llama_vocab_get_add_eos(lv) != st_tokenizer_add_eos(t)) bad_meta++;
    if (bad_meta)
        fprintf(stderr, "%s: ids differ: bos %d/%d eos %d/%d eot %d/%d add_bos %d/%d add_eos %d/%d\n", name,
                llama_vocab_bos(lv), st_tokenizer_bos(t), llama_vocab_eos(lv), st_tokenizer_eos(t),
                llama_vocab_eot(lv), st_tokenizer_eot(t), llama_vocab_get_add_bos(lv), st_tokenizer_add_bos(t),
                llama_vocab_get_add_eos(lv), st_tokenizer_add_eos(t));

    int32_t nv = llama_vocab_n_tokens(lv);
    for (int32_t id = 0; id < nv && id < (int32_t)st_tokenizer_vocab_size(t); id++) {
        if (llama_vocab_is_eog(lv, id) != st_tokenizer_is_eog(t, id)) {
            if (shown++ < 5) fprintf(stderr, "%s: token %d eog %d vs %d\n", name, id, llama_vocab_is_eog(lv, id), st_tokenizer_is_eog(t, id));
            bad_meta++;
        }
        for (int sp = 0; sp < 2; sp++) {
            char a[512], b[512];
            int32_t na = llama_token_to_piece(lv, id, a, sizeof a, 0, sp);
            int32_t nb = st_tokenizer_token_to_piece(t, id, b, sizeof b, sp);
            if (na != nb || (na > 0 && memcmp(a, b, (size_t)(na < 512 ? na : 512)) != 0)) {
                if (shown++ < 5) {
                    fprintf(stderr, "%s: piece of %d (special=%d): ", name, id, sp);
                    show(a, na > 0 ? (size_t)na : 0);
                    fprintf(stderr, " vs ");
                    show(b, nb > 0 ? (size_t)nb : 0);
                    fprintf(stderr, "\n");
                }
                bad_piece++;
            }
        }
    }

    char *buf = malloc(1 << 16);
    rng_state = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < n_texts; i++) {
        size_t n = make_text(buf, 1 << 16, i % 4 == 3);
        for (int s = 0; s < 4; s++) {
            n_cmp++;
            if (!compare_text(lv, t, buf, n, s & 1, (s >> 1) & 1, shown < 8)) {
                bad_text++;
                shown++;
            }
        }
    }
    /* a long real document */
    size_t rl = 0;
    char *doc = read_file(readme, &rl);
    if (doc) {
        n_cmp++;
        if (!compare_text(lv, t, doc, rl, false, false, shown < 8)) bad_text++;
        free(doc);
    }
    free(buf);
    printf("tokenizer vs llama.cpp %-15s: %ld/%ld encodings equal, %ld piece and %ld id/eog differences\n", name,
           n_cmp - bad_text, n_cmp, bad_piece, bad_meta);
    st_tokenizer_free(t);
    llama_model_free(model);
    return (bad_text || bad_piece || bad_meta) ? -1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODELS_DIR [N_TEXTS] [VOCAB...]\n", argv[0]);
        return 1;
    }
    int n_texts = argc > 2 ? atoi(argv[2]) : 2000;
    snprintf(readme, sizeof readme, "%s/../README.md", argv[1]);
    llama_log_set(quiet, NULL);
    llama_backend_init();
    int failed = 0;
    if (argc > 3) {
        for (int i = 3; i < argc; i++) {
            char *at = strchr(argv[i], '@'); /* PRE@BASE: a variant */
            if (at) {
                *at = 0;
                char *colon = strchr(at + 1, ':'); /* PRE@BASE:MODEL */
                if (colon) *colon = 0;
                failed += run_variant(argv[1], at + 1, argv[i], colon ? colon + 1 : NULL, n_texts) != 0;
            } else {
                failed += run_vocab(argv[1], argv[i], n_texts) != 0;
            }
        }
    } else {
        for (size_t i = 0; i < sizeof default_vocabs / sizeof default_vocabs[0]; i++)
            failed += run_vocab(argv[1], default_vocabs[i], n_texts) != 0;
        for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
            failed += run_variant(argv[1], variants[i].base, variants[i].pre, variants[i].model, n_texts) != 0;
    }
    llama_backend_free();
    printf("%s: %d vocabularies differ from llama.cpp\n", failed ? "FAIL" : "PASS", failed);
    return failed ? 1 : 0;
}
