/* SPDX-License-Identifier: Apache-2.0 */
/* Building an st_tokenizer from a config: token table, merges, attributes, special ids,
 * end-of-generation set and rendered pieces. Accessors of the public API. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "tokenizer/unicode.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

uint64_t st_tok_hash(const char *s, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int strtab_init(st_strtab *tab, uint64_t n) {
    uint64_t cap = 16;
    while (cap < n * 2) cap *= 2;
    tab->slot = calloc(cap, sizeof *tab->slot);
    tab->mask = cap - 1;
    return tab->slot ? 0 : -1;
}

int32_t st_tok_lookup(const st_tokenizer *t, const char *s, size_t n) {
    uint64_t h = st_tok_hash(s, n, ST_TOK_HASH_INIT);
    for (uint64_t i = h & t->tok_tab.mask;; i = (i + 1) & t->tok_tab.mask) {
        uint32_t v = t->tok_tab.slot[i];
        if (v == 0) return -1;
        int32_t id = (int32_t)(v - 1);
        if (t->text_len[id] == n && memcmp(st_tok_str(t, id), s, n) == 0) return id;
    }
}

int32_t st_tok_merge_rank(const st_tokenizer *t, const char *a, size_t na, const char *b,
                          size_t nb) {
    if (!t->merge_tab.slot) return -1;
    uint64_t h = st_tok_hash(a, na, ST_TOK_HASH_INIT);
    h = st_tok_hash(" ", 1, h);
    h = st_tok_hash(b, nb, h);
    for (uint64_t i = h & t->merge_tab.mask;; i = (i + 1) & t->merge_tab.mask) {
        uint32_t v = t->merge_tab.slot[i];
        if (v == 0) return -1;
        uint32_t r = v - 1;
        const char *m = t->merge + t->merge_off[r];
        if (t->merge_len[r] == na + 1 + nb && memcmp(m, a, na) == 0 && m[na] == ' ' &&
            memcmp(m + na + 1, b, nb) == 0)
            return (int32_t)r;
    }
}

/* Inserts index idx (string s, n bytes) unless the string is present; a later duplicate
 * replaces the earlier one (the reference keeps the last id for a repeated token text). */
static void strtab_put(st_strtab *tab, const char *s, size_t n, uint32_t idx,
                       int (*same)(const void *ctx, uint32_t other, const char *s, size_t n),
                       const void *ctx) {
    uint64_t h = st_tok_hash(s, n, ST_TOK_HASH_INIT);
    for (uint64_t i = h & tab->mask;; i = (i + 1) & tab->mask) {
        uint32_t v = tab->slot[i];
        if (v == 0 || same(ctx, v - 1, s, n)) {
            tab->slot[i] = idx + 1;
            return;
        }
    }
}

static int same_token(const void *ctx, uint32_t other, const char *s, size_t n) {
    const st_tokenizer *t = ctx;
    return t->text_len[other] == n && memcmp(st_tok_str(t, (int32_t)other), s, n) == 0;
}

static int same_merge(const void *ctx, uint32_t other, const char *s, size_t n) {
    const st_tokenizer *t = ctx;
    return t->merge_len[other] == n && memcmp(t->merge + t->merge_off[other], s, n) == 0;
}

void st_tokenizer_config_init(st_tokenizer_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->bos_id = cfg->eos_id = cfg->eot_id = cfg->eom_id = ST_TOKEN_UNSET;
    cfg->unk_id = cfg->sep_id = cfg->pad_id = ST_TOKEN_UNSET;
    cfg->add_bos = cfg->add_eos = cfg->add_space_prefix = -1;
}

void st_tokenizer_free(st_tokenizer *t) {
    if (!t) return;
    free(t->text);
    free(t->text_off);
    free(t->text_len);
    free(t->score);
    free(t->attr);
    free(t->tok_tab.slot);
    free(t->merge);
    free(t->merge_off);
    free(t->merge_len);
    free(t->merge_tab.slot);
    free(t->piece);
    free(t->piece_off);
    free(t->piece_len);
    free(t->eog);
    free(t->special);
    free(t->pairs);
    free(t);
}

/* ---- pre-tokenizer names --------------------------------------------------------------- */

typedef struct pre_alias {
    const char *name;
    st_pretok kind;
    unsigned flags;
} pre_alias;

enum { PRE_IGNORE_MERGES = 1, PRE_ADD_BOS = 2, PRE_RAW = 4 };

/* tokenizer.ggml.pre values whose split rules are one of the implemented kinds. */
static const pre_alias pre_aliases[] = {
    {"default", ST_PRETOK_DEFAULT, 0},
    {"gpt-2", ST_PRETOK_GPT2, 0},
    {"phi-2", ST_PRETOK_GPT2, 0},
    {"mpt", ST_PRETOK_GPT2, 0},
    {"olmo", ST_PRETOK_GPT2, 0},
    {"jais", ST_PRETOK_GPT2, 0},
    {"exaone4", ST_PRETOK_GPT2, 0},
    {"trillion", ST_PRETOK_GPT2, 0},
    {"granite-docling", ST_PRETOK_GPT2, 0},
    {"gigachat", ST_PRETOK_GPT2, 0},
    {"a.x-4.0", ST_PRETOK_GPT2, 0},
    {"mellum", ST_PRETOK_GPT2, 0},
    {"falcon", ST_PRETOK_FALCON, 0},
    {"starcoder", ST_PRETOK_STARCODER, 0},
    {"refact", ST_PRETOK_STARCODER, 0},
    {"command-r", ST_PRETOK_STARCODER, 0},
    {"smollm", ST_PRETOK_STARCODER, 0},
    {"codeshell", ST_PRETOK_STARCODER, 0},
    {"exaone", ST_PRETOK_STARCODER, 0},
    {"minerva-7b", ST_PRETOK_STARCODER, 0},
    {"mellum2", ST_PRETOK_STARCODER, 0},
    {"llama3", ST_PRETOK_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {"llama-v3", ST_PRETOK_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {"llama-bpe", ST_PRETOK_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {"falcon3", ST_PRETOK_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {"falcon-h1", ST_PRETOK_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {"pixtral", ST_PRETOK_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {"midm-2.0", ST_PRETOK_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {"lfm2", ST_PRETOK_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {"dbrx", ST_PRETOK_LLAMA3, 0},
    {"smaug-bpe", ST_PRETOK_LLAMA3, 0},
    {"glm4", ST_PRETOK_LLAMA3, 0},
    {"chatglm-bpe", ST_PRETOK_LLAMA3, 0},
    {"qwen2", ST_PRETOK_QWEN2, 0},
    {"deepseek-r1-qwen", ST_PRETOK_QWEN2, 0},
    {"kormo", ST_PRETOK_QWEN2, 0},
    {"f2llmv2", ST_PRETOK_QWEN2, 0},
    {"megrez", ST_PRETOK_QWEN2, 0},
    {"stablelm2", ST_PRETOK_QWEN2, 0},
    {"hunyuan", ST_PRETOK_QWEN2, 0},
    {"solar-open", ST_PRETOK_QWEN2, 0},
    {"grok-2", ST_PRETOK_QWEN2, 0},
    {"bailingmoe", ST_PRETOK_QWEN2, 0},
    {"bailingmoe2", ST_PRETOK_QWEN2, 0},
    {"llada-moe", ST_PRETOK_QWEN2, 0},
    {"qwen35", ST_PRETOK_QWEN35, 0},
    {"deepseek-llm", ST_PRETOK_DEEPSEEK_LLM, 0},
    {"deepseek-coder", ST_PRETOK_DEEPSEEK_CODER, 0},
    {"deepseek-v3", ST_PRETOK_DEEPSEEK3, 0},
    {"hunyuan-dense", ST_PRETOK_DEEPSEEK3, 0},
    {"joyai-llm", ST_PRETOK_DEEPSEEK3, 0},
    {"gpt-4o", ST_PRETOK_GPT4O, 0},
    {"llama4", ST_PRETOK_GPT4O, 0},
    {"minimax-m2", ST_PRETOK_GPT4O, 0},
    {"kanana2", ST_PRETOK_GPT4O, 0},
    {"talkie", ST_PRETOK_GPT4O, 0},
    {"gemma4", ST_PRETOK_NEWLINE_RUNS, PRE_ADD_BOS | PRE_RAW},
    {"kimi-k2", ST_PRETOK_KIMI_K2, 0},
    {"seed-coder", ST_PRETOK_SEED_CODER, 0},
    {"minicpm5", ST_PRETOK_MINICPM5, PRE_IGNORE_MERGES},
    {"afmoe", ST_PRETOK_AFMOE, 0},
    {"laguna", ST_PRETOK_LAGUNA, 0},
    {"exaone-moe", ST_PRETOK_EXAONE_MOE, 0},
    {"sarvam-moe", ST_PRETOK_NEWLINE_RUNS, PRE_RAW},
    {"tekken", ST_PRETOK_TEKKEN, PRE_IGNORE_MERGES | PRE_ADD_BOS},
};

/* ---- special tokens by name -------------------------------------------------------------- */

/* Texts of tokens that end a turn in common chat formats. */
static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "[e~[",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    /* fill-in-the-middle pad / repo / file separators end generation too */
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", "<|repo_name|>", "<|fim_repo|>",
    "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>",
};

/* Texts that identify the end-of-turn token when the file does not name it. */
static const char *const eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<end_of_utterance>",
};

/* Fill-in-the-middle markers: control tokens even when the file calls them user-defined. */
#define FW "\xef\xbd\x9c" /* U+FF5C, as in DeepSeek's markers */
#define LB "\xe2\x96\x81" /* U+2581 */
static const char *const fim_texts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<" FW "fim" LB "begin" FW ">", "<PRE>", LB "<PRE>",
    "<|code_prefix|>", "<|prefix|>", "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
    "<" FW "fim" LB "hole" FW ">", "<SUF>", LB "<SUF>", "<|code_suffix|>", "<|suffix|>", "<|fim_middle|>",
    "<fim-middle>", "<fim_middle>", "<" FW "fim" LB "end" FW ">", "<MID>", LB "<MID>", "<|code_middle|>",
    "<|middle|>", "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", "<|fim_repo|>",
    "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>",
};
#undef FW
#undef LB

static int32_t find_cstr(const st_tokenizer *t, const char *s) { return st_tok_lookup(t, s, strlen(s)); }

static int32_t resolve_id(const st_tokenizer *t, int32_t cfg, int32_t def) {
    int32_t id = cfg == ST_TOKEN_UNSET ? def : cfg;
    if (id < 0 || (uint32_t)id >= t->n_vocab) return ST_TOKEN_NONE;
    return id;
}

static uint32_t attr_of_type(int32_t type) {
    switch (type) {
    case ST_TOKEN_TYPE_UNKNOWN: return ST_TOKEN_ATTR_UNKNOWN;
    case ST_TOKEN_TYPE_UNUSED: return ST_TOKEN_ATTR_UNUSED;
    case ST_TOKEN_TYPE_NORMAL: return ST_TOKEN_ATTR_NORMAL;
    case ST_TOKEN_TYPE_CONTROL: return ST_TOKEN_ATTR_CONTROL;
    case ST_TOKEN_TYPE_USER_DEFINED: return ST_TOKEN_ATTR_USER_DEFINED;
    case ST_TOKEN_TYPE_BYTE: return ST_TOKEN_ATTR_BYTE;
    default: return ST_TOKEN_ATTR_UNDEFINED;
    }
}

/* Byte value of a "<0xXX>" token, or -1. */
static int hex_byte_token(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static const uint32_t ATTR_SPECIAL = ST_TOKEN_ATTR_CONTROL | ST_TOKEN_ATTR_USER_DEFINED |
                                     ST_TOKEN_ATTR_UNKNOWN;

/* Appends the rendered piece of token id to buf (grown as needed); -1 when out of memory. */
typedef struct growbuf {
    char *p;
    size_t n, cap;
} growbuf;

static int gb_put(growbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->n + n + 1 > cap) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

static int render_piece(const st_tokenizer *t, int32_t id, growbuf *b) {
    const char *s = st_tok_str(t, id);
    size_t n = t->text_len[id];
    uint32_t a = t->attr[id];
    if (a & ATTR_SPECIAL) return gb_put(b, s, n);
    if (a & ST_TOKEN_ATTR_BYTE) {
        int v = hex_byte_token(s, n);
        char c = (char)(v < 0 ? 0 : v);
        return v < 0 ? 0 : gb_put(b, &c, 1);
    }
    if (!(a & ST_TOKEN_ATTR_NORMAL)) return 0;
    if (t->kind == ST_TOKENIZER_SPM || t->raw_bpe) { /* U+2581 stands for a space */
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
                if (gb_put(b, " ", 1)) return -1;
                i += 3;
            } else {
                if (gb_put(b, s + i, 1)) return -1;
                i++;
            }
        }
        return 0;
    }
    /* byte-level BPE: each code point stands for one byte */
    for (size_t pos = 0; pos < n;) {
        size_t start = pos;
        uint32_t cp = st_utf8_decode(s, n, &pos);
        int byte = st_unicode_to_byte(cp);
        if (byte >= 0) {
            char c = (char)byte;
            if (gb_put(b, &c, 1)) return -1;
        } else { /* not a byte-level symbol: say so visibly */
            char hex[16];
            if (gb_put(b, "[UNK_BYTE_0x", 12)) return -1;
            for (size_t k = start; k < pos; k++) {
                snprintf(hex, sizeof hex, "%02x", (unsigned char)s[k]);
                if (gb_put(b, hex, 2)) return -1;
            }
            if (gb_put(b, s, n) || gb_put(b, "]", 1)) return -1;
        }
    }
    return 0;
}

static int cmp_special(const void *a, const void *b, const st_tokenizer *t) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->text_len[x] != t->text_len[y]) return t->text_len[x] > t->text_len[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* qsort has no context argument in C11: sort with a small insertion-merge instead. */
static void sort_special(st_tokenizer *t) {
    int32_t *v = t->special;
    uint32_t n = t->n_special;
    int32_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) { /* fall back to insertion sort */
        for (uint32_t i = 1; i < n; i++)
            for (uint32_t j = i; j > 0 && cmp_special(&v[j - 1], &v[j], t) > 0; j--) {
                int32_t s = v[j];
                v[j] = v[j - 1];
                v[j - 1] = s;
            }
        return;
    }
    for (uint32_t w = 1; w < n; w *= 2) { /* bottom-up merge sort */
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = cmp_special(&v[j], &v[i], t) < 0 ? v[j++] : v[i++];
            while (i < mid) tmp[k++] = v[i++];
            while (j < hi) tmp[k++] = v[j++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
    free(tmp);
}

static bool name_has(const char *name, const char *what) {
    if (!name) return false;
    size_t n = strlen(name), w = strlen(what);
    for (size_t i = 0; i + w <= n; i++) {
        size_t k = 0;
        while (k < w && tolower((unsigned char)name[i + k]) == what[k]) k++;
        if (k == w) return true;
    }
    return false;
}

static int build_tokens(st_tokenizer *t, const st_tokenizer_config *cfg, char *err, size_t errlen) {
    uint32_t n = cfg->n_vocab;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!cfg->tokens[i]) {
            set_err(err, errlen, "tokenizer: token %u is NULL", i);
            return -1;
        }
        size_t len = cfg->token_lens ? cfg->token_lens[i] : strlen(cfg->tokens[i]);
        total += (len ? len : 24) + 1;
    }
    t->text = malloc(total ? total : 1);
    t->text_off = malloc(n * sizeof *t->text_off);
    t->text_len = malloc(n * sizeof *t->text_len);
    t->score = malloc(n * sizeof *t->score);
    t->attr = malloc(n * sizeof *t->attr);
    if (!t->text || !t->text_off || !t->text_len || !t->score || !t->attr ||
        strtab_init(&t->tok_tab, n) != 0)
        return -1;
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t len = cfg->token_lens ? cfg->token_lens[i] : strlen(cfg->tokens[i]);
        t->text_off[i] = off;
        if (len == 0) { /* empty strings cannot be matched: give them a visible name */
            len = (size_t)snprintf(t->text + off, 24, "[EMPTY_%u]", i);
        } else {
            memcpy(t->text + off, cfg->tokens[i], len);
        }
        t->text[off + len] = 0;
        t->text_len[i] = (uint32_t)len;
        off += len + 1;
        t->score[i] = cfg->scores ? cfg->scores[i] : 0.0f;
        t->attr[i] = cfg->token_types ? attr_of_type(cfg->token_types[i]) : ST_TOKEN_ATTR_NORMAL;
        strtab_put(&t->tok_tab, st_tok_str(t, (int32_t)i), len, i, same_token, t);
    }
    return 0;
}

static int build_merges(st_tokenizer *t, const st_tokenizer_config *cfg) {
    uint64_t n = cfg->n_merges, total = 0;
    if (n == 0) return 0;
    if (n > UINT32_MAX / 2) return -1;
    for (uint64_t i = 0; i < n; i++)
        total += (cfg->merges[i] ? (cfg->merge_lens ? cfg->merge_lens[i] : strlen(cfg->merges[i])) : 0) + 1;
    t->merge = malloc(total);
    t->merge_off = malloc(n * sizeof *t->merge_off);
    t->merge_len = malloc(n * sizeof *t->merge_len);
    if (!t->merge || !t->merge_off || !t->merge_len || strtab_init(&t->merge_tab, n) != 0) return -1;
    t->n_merges = n;
    uint64_t off = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *m = cfg->merges[i] ? cfg->merges[i] : "";
        size_t len = cfg->merge_lens ? cfg->merge_lens[i] : strlen(m);
        memcpy(t->merge + off, m, len);
        t->merge[off + len] = 0;
        t->merge_off[i] = off;
        t->merge_len[i] = (uint32_t)len;
        off += len + 1;
        /* The reference splits at the first space after the first byte; byte-level tokens
         * contain no raw spaces, so the stored "a b" string is the key as is. A merge seen
         * twice keeps its first (best) rank. */
        uint64_t h = st_tok_hash(m, len, ST_TOK_HASH_INIT);
        for (uint64_t s = h & t->merge_tab.mask;; s = (s + 1) & t->merge_tab.mask) {
            uint32_t v = t->merge_tab.slot[s];
            if (v == 0) {
                t->merge_tab.slot[s] = (uint32_t)i + 1;
                break;
            }
            if (same_merge(t, v - 1, m, len)) break;
        }
    }
    return 0;
}

static uint64_t pair_hash(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

bool st_tok_pair_possible(const st_tokenizer *t, uint64_t a, uint64_t b) {
    if (!t->pairs) return true;
    for (uint64_t i = pair_hash(a, b) & t->pairs_mask;; i = (i + 1) & t->pairs_mask) {
        if (t->pairs[2 * i] == 0) return false;
        if (t->pairs[2 * i] == a && t->pairs[2 * i + 1] == b) return true;
    }
}

/* The set of adjacent character pairs inside tokens (SPM). Characters are cut the way the
 * encoder cuts text: by the length the lead byte announces, clamped at the end. */
static int build_pairs(st_tokenizer *t) {
    uint64_t n_pairs = 0;
    for (uint32_t id = 0; id < t->n_vocab; id++) n_pairs += t->text_len[id];
    uint64_t cap = 16;
    while (cap < n_pairs * 2) cap *= 2;
    t->pairs = calloc(cap * 2, sizeof *t->pairs);
    if (!t->pairs) return -1;
    t->pairs_mask = cap - 1;
    for (uint32_t id = 0; id < t->n_vocab; id++) {
        const char *s = st_tok_str(t, (int32_t)id);
        size_t n = t->text_len[id], off = 0;
        uint64_t prev = 0;
        while (off < n) {
            size_t len = st_utf8_len((unsigned char)s[off]);
            if (len > n - off) len = n - off;
            uint64_t k = st_tok_sym_key(s + off, len);
            if (prev) {
                for (uint64_t i = pair_hash(prev, k) & t->pairs_mask;; i = (i + 1) & t->pairs_mask) {
                    if (t->pairs[2 * i] == 0) {
                        t->pairs[2 * i] = prev;
                        t->pairs[2 * i + 1] = k;
                        break;
                    }
                    if (t->pairs[2 * i] == prev && t->pairs[2 * i + 1] == k) break;
                }
            }
            prev = k;
            off += len;
        }
    }
    return 0;
}

/* Special ids, flags, model-specific attributes, EOG set, byte tokens, special list,
 * rendered pieces. */
static int build_rest(st_tokenizer *t, const st_tokenizer_config *cfg, unsigned pre_flags) {
    bool spm = t->kind == ST_TOKENIZER_SPM;
    t->bos = resolve_id(t, cfg->bos_id, spm ? 1 : ST_TOKEN_NONE);
    t->eos = resolve_id(t, cfg->eos_id, spm ? 2 : ST_TOKEN_NONE);
    t->unk = resolve_id(t, cfg->unk_id, spm ? 0 : ST_TOKEN_NONE);
    t->eot = resolve_id(t, cfg->eot_id, ST_TOKEN_NONE);
    t->eom = resolve_id(t, cfg->eom_id, ST_TOKEN_NONE);
    t->sep = resolve_id(t, cfg->sep_id, ST_TOKEN_NONE);
    t->pad = resolve_id(t, cfg->pad_id, ST_TOKEN_NONE);
    t->add_bos = cfg->add_bos >= 0 ? cfg->add_bos != 0 : (spm || (pre_flags & PRE_ADD_BOS));
    if (t->newline_whole) t->add_bos = true; /* Gemma 4 always starts with BOS */
    t->add_eos = cfg->add_eos >= 0 ? cfg->add_eos != 0 : false;
    t->add_space_prefix = spm && (cfg->add_space_prefix >= 0 ? cfg->add_space_prefix != 0 : true);
    if (t->add_bos && t->bos < 0) t->add_bos = false;
    if (t->add_eos && t->eos < 0) t->add_eos = false;
    t->ignore_merges = (pre_flags & PRE_IGNORE_MERGES) != 0;

    /* end of turn by name when the file does not say */
    if (t->eot < 0)
        for (size_t i = 0; i < sizeof eot_texts / sizeof eot_texts[0] && t->eot < 0; i++)
            t->eot = find_cstr(t, eot_texts[i]);
    if (t->eom < 0) t->eom = find_cstr(t, "<|eom_id|>");

    for (size_t i = 0; i < sizeof fim_texts / sizeof fim_texts[0]; i++) {
        int32_t id = find_cstr(t, fim_texts[i]);
        if (id >= 0) t->attr[id] |= ST_TOKEN_ATTR_CONTROL;
    }
    t->eog = calloc(t->n_vocab, 1);
    if (!t->eog) return -1;
    for (size_t i = 0; i < sizeof eog_texts / sizeof eog_texts[0]; i++) {
        int32_t id = find_cstr(t, eog_texts[i]);
        if (id < 0) continue;
        t->eog[id] = 1;
        t->attr[id] |= ST_TOKEN_ATTR_CONTROL; /* end tokens are control tokens */
    }
    if (t->eot >= 0) t->attr[t->eot] |= ST_TOKEN_ATTR_CONTROL;
    if (t->eom >= 0) t->attr[t->eom] |= ST_TOKEN_ATTR_CONTROL;
    int32_t ends[3] = {t->eos, t->eot, t->eom};
    for (int i = 0; i < 3; i++)
        if (ends[i] >= 0) t->eog[ends[i]] = 1;
    /* harmony-style formats: "<|end|>" ends a message, not generation */
    int32_t end = find_cstr(t, "<|end|>");
    bool has_ret = find_cstr(t, "<|return|>") >= 0, has_flush = find_cstr(t, "<|flush|>") >= 0;
    bool has_call = find_cstr(t, "<|call|>") >= 0 || find_cstr(t, "<|calls|>") >= 0;
    if (end >= 0 && has_call && (has_ret || has_flush)) {
        t->eog[end] = 0;
        t->attr[end] = ST_TOKEN_ATTR_USER_DEFINED;
    }
    /* gemma-4 style: "</s>" is an ordinary token when "<|tool_response>" exists */
    int32_t s_end = find_cstr(t, "</s>");
    if (s_end >= 0 && find_cstr(t, "<|tool_response>") >= 0 && s_end != t->eos) {
        t->eog[s_end] = 0;
        t->attr[s_end] = ST_TOKEN_ATTR_NORMAL;
    }
    /* harmony markup tokens are always shown */
    const char *shown[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
    for (int i = 0; i < 4; i++) {
        int32_t id = find_cstr(t, shown[i]);
        if (id >= 0) t->attr[id] = ST_TOKEN_ATTR_USER_DEFINED;
    }

    /* byte tokens */
    for (int b = 0; b < 256; b++) {
        t->byte_tok[b] = ST_TOKEN_NONE;
        uint32_t cp = st_bytes_to_unicode((uint8_t)b);
        t->byte_enc_len[b] = (uint8_t)st_utf8_encode(cp, t->byte_enc[b]);
        if (spm || t->raw_bpe) {
            char hex[8];
            snprintf(hex, sizeof hex, "<0x%02X>", b);
            t->byte_tok[b] = find_cstr(t, hex);
            if (t->byte_tok[b] < 0 && spm) {
                char c = (char)b;
                t->byte_tok[b] = st_tok_lookup(t, &c, 1);
            }
        } else {
            t->byte_tok[b] = st_tok_lookup(t, t->byte_enc[b], t->byte_enc_len[b]);
        }
    }

    /* tokens matched in text before the model's own splitting */
    uint32_t n_special = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) n_special += (t->attr[i] & ATTR_SPECIAL) != 0;
    t->special = malloc((n_special ? n_special : 1) * sizeof *t->special);
    if (!t->special) return -1;
    for (uint32_t i = 0; i < t->n_vocab; i++)
        if (t->attr[i] & ATTR_SPECIAL) t->special[t->n_special++] = (int32_t)i;
    sort_special(t);

    /* Phi-3: special tokens eat the spaces after them */
    if (name_has(cfg->name, "phi-3") || name_has(cfg->name, "phi3")) {
        for (uint32_t i = 0; i < t->n_special; i++) t->attr[t->special[i]] |= ST_TOKEN_ATTR_RSTRIP;
        int32_t id = find_cstr(t, "</s>");
        if (id >= 0) t->attr[id] |= ST_TOKEN_ATTR_RSTRIP;
        const char *keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (int i = 0; i < 3; i++)
            if ((id = find_cstr(t, keep[i])) >= 0) t->attr[id] &= ~(uint32_t)ST_TOKEN_ATTR_RSTRIP;
    }

    /* rendered pieces */
    growbuf b = {0};
    t->piece_off = malloc(t->n_vocab * sizeof *t->piece_off);
    t->piece_len = malloc(t->n_vocab * sizeof *t->piece_len);
    if (!t->piece_off || !t->piece_len) return -1;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        t->piece_off[i] = b.n;
        if (render_piece(t, (int32_t)i, &b) != 0) {
            free(b.p);
            return -1;
        }
        t->piece_len[i] = (uint32_t)(b.n - t->piece_off[i]);
    }
    if (gb_put(&b, "", 0) != 0) {
        free(b.p);
        return -1;
    }
    t->piece = b.p;
    return 0;
}

st_tokenizer *st_tokenizer_create(const st_tokenizer_config *cfg, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!cfg || !cfg->model || !cfg->tokens || cfg->n_vocab == 0 || cfg->n_vocab > INT32_MAX) {
        set_err(err, errlen, "tokenizer: no vocabulary");
        return NULL;
    }
    st_tokenizer *t = calloc(1, sizeof *t);
    if (!t) goto oom;
    unsigned pre_flags = 0;
    if (strcmp(cfg->model, "llama") == 0) {
        t->kind = ST_TOKENIZER_SPM;
        t->pre_name[0] = 0;
    } else if (strcmp(cfg->model, "gpt2") == 0 || strcmp(cfg->model, "gemma4") == 0) {
        t->kind = ST_TOKENIZER_BPE;
        const char *pre = cfg->pre;
        if (!pre || !pre[0]) pre = "default"; /* old conversions: the reference's default rules */
        if (strcmp(cfg->model, "gemma4") == 0) { /* its own scheme, whatever the file says */
            pre = "gemma4";
            t->newline_whole = true;
        }
        size_t i = 0, n = sizeof pre_aliases / sizeof pre_aliases[0];
        while (i < n && strcmp(pre_aliases[i].name, pre) != 0) i++;
        if (i == n) {
            set_err(err, errlen, "tokenizer: unsupported pre-tokenizer '%s'", pre);
            st_tokenizer_free(t);
            return NULL;
        }
        t->pre = pre_aliases[i].kind;
        pre_flags = pre_aliases[i].flags;
        t->raw_bpe = (pre_flags & PRE_RAW) != 0;
        snprintf(t->pre_name, sizeof t->pre_name, "%s", pre_aliases[i].name);
        if (cfg->n_merges && !cfg->merges) {
            set_err(err, errlen, "tokenizer: merges missing");
            st_tokenizer_free(t);
            return NULL;
        }
    } else {
        set_err(err, errlen, "tokenizer: unsupported tokenizer model '%s'", cfg->model);
        st_tokenizer_free(t);
        return NULL;
    }
    t->n_vocab = cfg->n_vocab;
    if (build_tokens(t, cfg, err, errlen) != 0) {
        if (err && err[0]) {
            st_tokenizer_free(t);
            return NULL;
        }
        goto oom;
    }
    if (t->kind == ST_TOKENIZER_BPE && build_merges(t, cfg) != 0) goto oom;
    if (build_rest(t, cfg, pre_flags) != 0) goto oom;
    if (t->kind == ST_TOKENIZER_SPM && build_pairs(t) != 0) goto oom;
    return t;
oom:
    st_tokenizer_free(t);
    set_err(err, errlen, "tokenizer: out of memory");
    return NULL;
}

/* ---- accessors ------------------------------------------------------------------------- */

static bool valid(const st_tokenizer *t, int32_t id) { return id >= 0 && (uint32_t)id < t->n_vocab; }

int32_t st_tokenizer_token_to_piece(const st_tokenizer *t, int32_t id, char *buf, size_t cap,
                                    bool special) {
    if (!valid(t, id)) return -1;
    if (!special && (t->attr[id] & (ST_TOKEN_ATTR_CONTROL | ST_TOKEN_ATTR_UNKNOWN))) return 0;
    uint32_t n = t->piece_len[id];
    if (buf && cap) memcpy(buf, t->piece + t->piece_off[id], n < cap ? n : cap);
    return (int32_t)n;
}

const char *st_tokenizer_token_text(const st_tokenizer *t, int32_t id, size_t *len) {
    if (!valid(t, id)) return NULL;
    if (len) *len = t->text_len[id];
    return st_tok_str(t, id);
}

uint32_t st_tokenizer_token_attr(const st_tokenizer *t, int32_t id) { return valid(t, id) ? t->attr[id] : 0; }
float st_tokenizer_token_score(const st_tokenizer *t, int32_t id) { return valid(t, id) ? t->score[id] : 0.0f; }
int32_t st_tokenizer_find(const st_tokenizer *t, const char *text, size_t len) { return st_tok_lookup(t, text, len); }
st_tokenizer_kind st_tokenizer_kind_of(const st_tokenizer *t) { return t->kind; }
const char *st_tokenizer_pre_name(const st_tokenizer *t) { return t->pre_name; }
uint32_t st_tokenizer_vocab_size(const st_tokenizer *t) { return t->n_vocab; }
int32_t st_tokenizer_bos(const st_tokenizer *t) { return t->bos; }
int32_t st_tokenizer_eos(const st_tokenizer *t) { return t->eos; }
int32_t st_tokenizer_eot(const st_tokenizer *t) { return t->eot; }
int32_t st_tokenizer_unk(const st_tokenizer *t) { return t->unk; }
int32_t st_tokenizer_pad(const st_tokenizer *t) { return t->pad; }
bool st_tokenizer_add_bos(const st_tokenizer *t) { return t->add_bos; }
bool st_tokenizer_add_eos(const st_tokenizer *t) { return t->add_eos; }
bool st_tokenizer_is_eog(const st_tokenizer *t, int32_t id) { return valid(t, id) && t->eog[id]; }
