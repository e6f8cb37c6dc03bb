/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of core/tokenizer on hand-built vocabularies: Unicode tables, pre-tokenizer
 * splits, SPM merging and byte fallback, BPE merge ranks, special-token parsing (control vs
 * user-defined, strip attributes), BOS/EOS, end-of-generation ids, token pieces and the
 * streaming detokenizer's UTF-8 hold-back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

static int failures = 0;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* ---- helpers ------------------------------------------------------------------------------ */

static int ids_equal(const int32_t *got, int64_t n, const int32_t *exp, size_t n_exp) {
    if (n < 0 || (size_t)n != n_exp) return 0;
    return n == 0 || memcmp(got, exp, n_exp * sizeof *exp) == 0;
}

static void print_ids(const char *what, const int32_t *ids, int64_t n) {
    fprintf(stderr, "  %s:", what);
    for (int64_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n");
}

#define CHECK_ENC(t, text, add_special, parse_special, ...)                                  \
    do {                                                                                     \
        const int32_t exp_[] = {__VA_ARGS__};                                                \
        int32_t *got_ = NULL;                                                                \
        int64_t n_ = st_tokenizer_encode_alloc(t, text, strlen(text), add_special, parse_special, &got_); \
        if (!ids_equal(got_, n_, exp_, sizeof exp_ / sizeof exp_[0])) {                      \
            fprintf(stderr, "%s:%d: encode '%s' mismatch\n", __FILE__, __LINE__, text);      \
            print_ids("expected", exp_, (int64_t)(sizeof exp_ / sizeof exp_[0]));            \
            print_ids("got", got_, n_);                                                      \
            failures++;                                                                      \
        }                                                                                    \
        free(got_);                                                                          \
    } while (0)

/* Word split check: words given as a NULL-terminated list of UTF-8 strings. */
static void check_split(int line, st_pretok kind, const char *text, const char *const *words) {
    size_t n_cps = 0;
    uint32_t *cps = st_utf8_to_cps(text, strlen(text), &n_cps);
    st_pretok_words w = {0};
    int ok = cps && st_pretok_split(kind, cps, n_cps, &w) == 0;
    size_t n_exp = 0;
    while (words[n_exp]) n_exp++;
    if (ok && w.n != n_exp) ok = 0;
    size_t start = 0;
    for (size_t i = 0; ok && i < n_exp; i++) {
        size_t n_w = 0;
        uint32_t *wc = st_utf8_to_cps(words[i], strlen(words[i]), &n_w);
        ok = wc && n_w == w.len[i] && memcmp(wc, cps + start, n_w * sizeof *wc) == 0;
        free(wc);
        start += w.len[i];
    }
    if (!ok) {
        fprintf(stderr, "line %d: %s split of '%s' mismatch; got %zu words:", line, st_pretok_name(kind), text, w.n);
        size_t s = 0;
        for (size_t i = 0; i < w.n; i++) {
            fprintf(stderr, " [");
            for (size_t k = s; k < s + w.len[i]; k++) {
                char u[4];
                size_t ul = st_utf8_encode(cps[k], u);
                fwrite(u, 1, ul, stderr);
            }
            fprintf(stderr, "]");
            s += w.len[i];
        }
        fprintf(stderr, "\n");
        failures++;
    }
    free(w.len);
    free(cps);
}

#define SPLIT(kind, text, ...)                                    \
    do {                                                          \
        const char *const w_[] = {__VA_ARGS__, NULL};             \
        check_split(__LINE__, kind, text, w_);                    \
    } while (0)

/* ---- Unicode -------------------------------------------------------------------------------- */

static void test_unicode(void) {
    CHECK(st_unicode_flags('a') == ST_UCAT_LETTER);
    CHECK(st_unicode_flags('7') == ST_UCAT_NUMBER);
    CHECK(st_unicode_flags(' ') == (ST_UCAT_SEPARATOR | ST_UFLAG_SPACE));
    CHECK(st_unicode_flags('\n') == (ST_UCAT_CONTROL | ST_UFLAG_SPACE));
    CHECK(st_unicode_flags('$') == ST_UCAT_SYMBOL);
    CHECK(st_unicode_flags('!') == ST_UCAT_PUNCT);
    CHECK(st_unicode_flags(0x00E9) == ST_UCAT_LETTER);            /* é */
    CHECK(st_unicode_flags(0x0301) == ST_UCAT_MARK);              /* combining acute */
    CHECK(st_unicode_flags(0x0085) == (ST_UCAT_CONTROL | ST_UFLAG_SPACE));
    CHECK(st_unicode_flags(0x3000) == (ST_UCAT_SEPARATOR | ST_UFLAG_SPACE));
    CHECK(st_unicode_flags(0x200B) == ST_UCAT_CONTROL);           /* ZWSP: Cf, not a space */
    CHECK(st_unicode_flags(0x4E00) == ST_UCAT_LETTER);
    CHECK(st_unicode_flags(0x0661) == ST_UCAT_NUMBER);            /* Arabic-Indic one */
    CHECK(st_unicode_flags(0x1F600) == ST_UCAT_SYMBOL);           /* emoji */
    CHECK(st_unicode_flags(0x0378) == ST_UCAT_UNDEF);             /* unassigned */
    CHECK(st_unicode_flags(0x2EBF0) == ST_UCAT_LETTER);           /* CJK Ext. I (Unicode 15.1) */
    CHECK(st_unicode_flags(0x31EF) == ST_UCAT_SYMBOL);            /* Unicode 15.1 */
    CHECK(st_unicode_flags(0xE000) == ST_UCAT_CONTROL);           /* private use */
    CHECK(st_unicode_flags(0x110000) == ST_UCAT_UNDEF);

    /* decoding, lenient like the reference */
    const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x80\xc3";
    size_t n = strlen(s), pos = 0;
    uint32_t want[] = {'a', 0xE9, 0x20AC, 0x1F600, 0xFFFD, 0xFFFD};
    for (size_t i = 0; i < 6; i++) CHECK(st_utf8_decode(s, n, &pos) == want[i]);
    CHECK(pos == n);
    char u[4];
    CHECK(st_utf8_encode(0x1F600, u) == 4 && memcmp(u, "\xf0\x9f\x98\x80", 4) == 0);
    CHECK(st_utf8_encode(0xE9, u) == 2 && memcmp(u, "\xc3\xa9", 2) == 0);

    /* strict check used by the detokenizer */
    CHECK(st_utf8_check("a", 1) == 1);
    CHECK(st_utf8_check("\xc3\xa9", 2) == 2);
    CHECK(st_utf8_check("\xc3", 1) == 0);
    CHECK(st_utf8_check("\xf0\x9f\x98", 3) == 0);
    CHECK(st_utf8_check("\xf0\x9f\x98\x80", 4) == 4);
    CHECK(st_utf8_check("\x80", 1) == -1);
    CHECK(st_utf8_check("\xc0\x80", 2) == -1);    /* overlong lead */
    CHECK(st_utf8_check("\xed\xa0\x80", 3) == -1); /* surrogate: ill-formed after 1 byte */
    CHECK(st_utf8_check("\xe2\x82" "a", 3) == -2);
    CHECK(st_utf8_check("\xf4\x90\x80\x80", 4) == -1); /* above U+10FFFF */

    /* GPT-2 byte mapping */
    CHECK(st_bytes_to_unicode('a') == 'a');
    CHECK(st_bytes_to_unicode(' ') == 0x120);  /* Ġ */
    CHECK(st_bytes_to_unicode('\n') == 0x10A); /* Ċ */
    CHECK(st_bytes_to_unicode(0xAD) == 0x143);
    int bijective = 1;
    for (int b = 0; b < 256; b++) bijective &= st_unicode_to_byte(st_bytes_to_unicode((uint8_t)b)) == b;
    CHECK(bijective);
    CHECK(st_unicode_to_byte(0x144) == -1);
}

/* ---- pre-tokenizers ------------------------------------------------------------------------- */

static void test_pretok(void) {
    SPLIT(ST_PRETOK_GPT2, "Hello world's  x\n\n  42 !!?", "Hello", " world", "'s", " ", " x", "\n\n ",
          " 42", " !!?");
    SPLIT(ST_PRETOK_GPT2, "it'S  ", "it", "'", "S", "  "); /* case-sensitive contractions */
    SPLIT(ST_PRETOK_LLAMA3, "Hello  WORLD'S 1234567\r\n\n x", "Hello", " ", " WORLD", "'S", " ", "123",
          "456", "7", "\r\n\n", " x");
    SPLIT(ST_PRETOK_LLAMA3, "a... \n", "a", "...", " \n");
    SPLIT(ST_PRETOK_QWEN2, "ab 12 \xe2\x82\xac" "5", "ab", " ", "1", "2", " \xe2\x82\xac", "5");
    /* combining marks: qwen3.5 keeps them in letter runs, qwen2 does not */
    SPLIT(ST_PRETOK_QWEN35, "e\xcc\x81x \xcc\x81" "a", "e\xcc\x81x", " \xcc\x81" "a");
    SPLIT(ST_PRETOK_QWEN2, "e\xcc\x81x \xcc\x81" "a", "e", "\xcc\x81x", " \xcc\x81", "a");
    SPLIT(ST_PRETOK_DEEPSEEK_CODER, "ab(x)\n 12 \xe4\xb8\xad\xe6\x96\x87", "ab", "(", "x", ")", "\n", " ", "1",
          "2", " ", "\xe4\xb8\xad\xe6\x96\x87");
    SPLIT(ST_PRETOK_DEEPSEEK_LLM, "Hi  there!\n  ", "Hi", " ", " there", "!", "\n", "  ");
    SPLIT(ST_PRETOK_DEEPSEEK_LLM, "x=3.14", "x", "=", "3", ".", "14");
    SPLIT(ST_PRETOK_DEEPSEEK3, "Hello,world 12345 \xe4\xb8\xad\xe6\x96\x87\xe3\x81\x8b\xe3\x81\xaa", "Hello", ",world", " ",
          "123", "45", " ", "\xe4\xb8\xad\xe6\x96\x87\xe3\x81\x8b\xe3\x81\xaa");
    SPLIT(ST_PRETOK_DEEPSEEK3, "a \xcc\x81x", "a", " \xcc\x81x");
    SPLIT(ST_PRETOK_KIMI_K2, "ab\xe4\xb8\xad\xe6\x96\x87" "cd 1234", "ab", "\xe4\xb8\xad\xe6\x96\x87", "cd", " ", "123", "4");
    SPLIT(ST_PRETOK_NEWLINE_RUNS, "a b\n\nc\n", "a b", "\n\n", "c", "\n");
    SPLIT(ST_PRETOK_EXAONE_MOE, "Hello big world, ok\n", "Hello big world", ",", " ok", "\n");
    /* AFMoE: the text before a digit run joins its first group (visible with a format char) */
    SPLIT(ST_PRETOK_AFMOE, "ab1234 x", "ab", "1", "234", " x");
    SPLIT(ST_PRETOK_AFMOE, "\xe2\x80\x8b" "1234", "\xe2\x80\x8b" "1", "234");
    /* gpt-4o: non-ASCII letters count as upper and lower case */
    SPLIT(ST_PRETOK_GPT4O, "HelloWorld ABCdef \xc3\xa9" "A x'S 12345", "Hello", "World", " ABCdef", " \xc3\xa9", "A",
          " x'S", " ", "123", "45");
    st_pretok_words w = {0};
    CHECK(st_pretok_split(ST_PRETOK_GPT2, NULL, 0, &w) == 0 && w.n == 0);
    free(w.len);
}

/* ---- SPM -------------------------------------------------------------------------------------- */

#define SP "\xe2\x96\x81"

/* <unk> <s> </s> <0x00>..<0xFF> then normal pieces; returns the tokenizer. */
static st_tokenizer *make_spm(const char *name) {
    static const char *normal[] = {SP, "h", "e", "l", "o", "i", "ll", "he", "hell", "hello", SP "hello",
                                   SP "h", "hi", SP "hi", "<|end|>", "<|user|>"};
    static const float nscore[] = {-1, -2, -2, -2, -2, -2, -1, -2, -3, -4, -5, -6, -3, -4, 0, 0};
    enum { NN = sizeof normal / sizeof normal[0], NV = 3 + 256 + NN };
    static char bytes[256][8];
    const char *toks[NV];
    float scores[NV];
    int32_t types[NV];
    toks[0] = "<unk>";
    toks[1] = "<s>";
    toks[2] = "</s>";
    types[0] = ST_TOKEN_TYPE_UNKNOWN;
    types[1] = types[2] = ST_TOKEN_TYPE_CONTROL;
    scores[0] = scores[1] = scores[2] = 0;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        toks[3 + b] = bytes[b];
        types[3 + b] = ST_TOKEN_TYPE_BYTE;
        scores[3 + b] = 0;
    }
    for (int i = 0; i < NN; i++) {
        toks[259 + i] = normal[i];
        scores[259 + i] = nscore[i];
        types[259 + i] = ST_TOKEN_TYPE_NORMAL;
    }
    types[259 + 14] = ST_TOKEN_TYPE_CONTROL;      /* <|end|> */
    types[259 + 15] = ST_TOKEN_TYPE_USER_DEFINED; /* <|user|> */
    st_tokenizer_config cfg;
    st_tokenizer_config_init(&cfg);
    cfg.model = "llama";
    cfg.name = name;
    cfg.n_vocab = NV;
    cfg.tokens = toks;
    cfg.scores = scores;
    cfg.token_types = types;
    char err[256];
    st_tokenizer *t = st_tokenizer_create(&cfg, err, sizeof err);
    if (!t) fprintf(stderr, "make_spm: %s\n", err);
    return t;
}

enum { SPM_SP = 259, SPM_H, SPM_E, SPM_L, SPM_O, SPM_I, SPM_LL, SPM_HE, SPM_HELL, SPM_HELLO,
       SPM_SPHELLO, SPM_SPH, SPM_HI, SPM_SPHI, SPM_END, SPM_USER };
#define BYTE(b) (3 + (b))

static void test_spm(void) {
    st_tokenizer *t = make_spm("tiny-llama");
    CHECK(t != NULL);
    if (!t) return;
    CHECK(st_tokenizer_kind_of(t) == ST_TOKENIZER_SPM);
    CHECK(st_tokenizer_bos(t) == 1 && st_tokenizer_eos(t) == 2 && st_tokenizer_unk(t) == 0);
    CHECK(st_tokenizer_add_bos(t) && !st_tokenizer_add_eos(t));
    CHECK_ENC(t, "hello", false, false, SPM_SPHELLO);
    CHECK_ENC(t, "hello", true, false, 1, SPM_SPHELLO);
    /* é is no piece: byte fallback */
    CHECK_ENC(t, "hello \xc3\xa9", false, false, SPM_SPHELLO, SPM_SP, BYTE(0xC3), BYTE(0xA9));
    CHECK_ENC(t, "", false, false);
    {
        int32_t *ids = NULL;
        CHECK(st_tokenizer_encode_alloc(t, "", 0, true, false, &ids) == 1 && ids && ids[0] == 1);
        free(ids);
    }
    /* control tokens only with parse_special; a space prefix follows a special token */
    CHECK_ENC(t, "<s>hi", false, true, 1, SPM_SPHI);
    CHECK_ENC(t, "<s>hi", false, false, SPM_SP, BYTE('<'), BYTE('s'), BYTE('>'), SPM_HI);
    /* user-defined tokens are always recognized */
    CHECK_ENC(t, "hi<|user|>hi", false, false, SPM_SPHI, SPM_USER, SPM_SPHI);
    /* without the phi-3 rule the spaces after a special token stay */
    CHECK_ENC(t, "hi<|end|>  hi", false, true, SPM_SPHI, SPM_END, SPM_SP, SPM_SP, SPM_SPHI);
    /* pieces */
    char buf[32];
    CHECK(st_tokenizer_token_to_piece(t, SPM_SPHELLO, buf, sizeof buf, false) == 6 && memcmp(buf, " hello", 6) == 0);
    CHECK(st_tokenizer_token_to_piece(t, BYTE('A'), buf, sizeof buf, false) == 1 && buf[0] == 'A');
    CHECK(st_tokenizer_token_to_piece(t, 1, buf, sizeof buf, false) == 0);
    CHECK(st_tokenizer_token_to_piece(t, 1, buf, sizeof buf, true) == 3 && memcmp(buf, "<s>", 3) == 0);
    CHECK(st_tokenizer_token_to_piece(t, SPM_USER, buf, sizeof buf, false) == 8);
    CHECK(st_tokenizer_token_to_piece(t, 99999, buf, sizeof buf, false) == -1);
    memset(buf, 'x', sizeof buf);
    CHECK(st_tokenizer_token_to_piece(t, SPM_SPHELLO, buf, 2, false) == 6 && buf[1] == 'h' && buf[2] == 'x');
    /* eog: </s> (eos) and <|end|> by name */
    CHECK(st_tokenizer_is_eog(t, 2));
    CHECK(st_tokenizer_is_eog(t, SPM_END));
    CHECK(!st_tokenizer_is_eog(t, SPM_HELLO));
    CHECK(!st_tokenizer_is_eog(t, -1) && !st_tokenizer_is_eog(t, 1 << 30));
    CHECK(st_tokenizer_eot(t) == SPM_END);
    /* detokenizing drops the added space prefix only when asked */
    st_detok *d = st_detok_new(t, ST_DETOK_STRIP_LEADING_SPACE);
    const char *txt;
    size_t len;
    CHECK(d && st_detok_push(d, SPM_SPHELLO, &txt, &len) == 0 && len == 5 && memcmp(txt, "hello", 5) == 0);
    CHECK(d && st_detok_push(d, SPM_SPHI, &txt, &len) == 0 && len == 3 && memcmp(txt, " hi", 3) == 0);
    st_detok_free(d);
    st_tokenizer_free(t);

    /* Phi-3: special tokens eat the spaces on their right */
    t = make_spm("Phi3");
    CHECK(t != NULL);
    if (!t) return;
    CHECK(st_tokenizer_token_attr(t, SPM_END) & ST_TOKEN_ATTR_RSTRIP);
    CHECK(!(st_tokenizer_token_attr(t, 1) & ST_TOKEN_ATTR_RSTRIP)); /* <s> keeps its spaces */
    CHECK_ENC(t, "hi<|end|>  hi", false, true, SPM_SPHI, SPM_END, SPM_SPHI);
    st_tokenizer_free(t);
}

/* ---- byte-level BPE ------------------------------------------------------------------------- */

/* The 256 byte symbols (id = byte value), then extra tokens; merges as given. */
static st_tokenizer *make_bpe(const char *const *extra, const int32_t *extra_types, int n_extra,
                              const char *const *merges, int n_merges, const char *pre,
                              int32_t bos, int32_t eos, int add_bos, int add_eos) {
    static char sym[256][4];
    const char *toks[512];
    int32_t types[512];
    for (int b = 0; b < 256; b++) {
        size_t l = st_utf8_encode(st_bytes_to_unicode((uint8_t)b), sym[b]);
        sym[b][l] = 0;
        toks[b] = sym[b];
        types[b] = ST_TOKEN_TYPE_NORMAL;
    }
    for (int i = 0; i < n_extra; i++) {
        toks[256 + i] = extra[i];
        types[256 + i] = extra_types ? extra_types[i] : ST_TOKEN_TYPE_NORMAL;
    }
    st_tokenizer_config cfg;
    st_tokenizer_config_init(&cfg);
    cfg.model = "gpt2";
    cfg.pre = pre;
    cfg.n_vocab = (uint32_t)(256 + n_extra);
    cfg.tokens = toks;
    cfg.token_types = types;
    cfg.merges = merges;
    cfg.n_merges = (uint64_t)n_merges;
    cfg.bos_id = bos;
    cfg.eos_id = eos;
    cfg.add_bos = add_bos;
    cfg.add_eos = add_eos;
    char err[256];
    st_tokenizer *t = st_tokenizer_create(&cfg, err, sizeof err);
    if (!t) fprintf(stderr, "make_bpe: %s\n", err);
    return t;
}

enum { B_HE = 256, B_LL, B_HELL, B_HELLO, B_GW, B_OR, B_GWOR, B_GWORL, B_GWORLD, B_IMS, B_IME, B_TOOL, B_EOT };

static void test_bpe(void) {
    const char *extra[] = {"he", "ll", "hell", "hello", "\xc4\xa0w", "or", "\xc4\xa0wor", "\xc4\xa0worl",
                           "\xc4\xa0world", "<|im_start|>", "<|im_end|>", "<tool>", "<|endoftext|>"};
    const int32_t types[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, ST_TOKEN_TYPE_CONTROL, ST_TOKEN_TYPE_CONTROL,
                             ST_TOKEN_TYPE_USER_DEFINED, ST_TOKEN_TYPE_CONTROL};
    const char *merges[] = {"h e", "l l", "he ll", "hell o", "\xc4\xa0 w", "o r", "\xc4\xa0w or",
                            "\xc4\xa0wor l", "\xc4\xa0worl d"};
    st_tokenizer *t = make_bpe(extra, types, 13, merges, 9, "gpt-2", B_EOT, B_IME, 1, 1);
    CHECK(t != NULL);
    if (!t) return;
    CHECK(st_tokenizer_kind_of(t) == ST_TOKENIZER_BPE);
    CHECK(strcmp(st_tokenizer_pre_name(t), "gpt-2") == 0);
    CHECK(st_tokenizer_vocab_size(t) == 256 + 13);
    CHECK_ENC(t, "hello world", false, false, B_HELLO, B_GWORLD);
    CHECK_ENC(t, "hello world", true, false, B_EOT, B_HELLO, B_GWORLD, B_IME);
    CHECK_ENC(t, "hello  world!", false, false, B_HELLO, ' ', B_GWORLD, '!');
    CHECK_ENC(t, "h\xc3\xa9", false, false, 'h', 0xC3, 0xA9);
    /* specials: control only with parse_special, user-defined always */
    CHECK_ENC(t, "<|im_start|>hello<tool>x", false, true, B_IMS, B_HELLO, B_TOOL, 'x');
    CHECK_ENC(t, "<|im_start|>hello<tool>x", false, false, '<', '|', 'i', 'm', '_', 's', 't', 'a', 'r', 't',
              '|', '>', B_HELLO, B_TOOL, 'x');
    /* the longer special token wins over a shorter one inside it */
    CHECK_ENC(t, "<|im_end|><|im_end|>", false, true, B_IME, B_IME);
    /* capacity semantics */
    int32_t one[1] = {-7};
    CHECK(st_tokenizer_encode(t, "hello world", 11, false, false, one, 1) == 2 && one[0] == B_HELLO);
    CHECK(st_tokenizer_encode(t, "hello world", 11, false, false, NULL, 0) == 2);
    /* pieces decode the byte symbols */
    char buf[32];
    CHECK(st_tokenizer_token_to_piece(t, B_GWORLD, buf, sizeof buf, false) == 6 && memcmp(buf, " world", 6) == 0);
    CHECK(st_tokenizer_token_to_piece(t, '\n', buf, sizeof buf, false) == 1 && buf[0] == '\n'); /* "Ċ" */
    CHECK(st_tokenizer_token_to_piece(t, B_IMS, buf, sizeof buf, false) == 0);
    CHECK(st_tokenizer_token_to_piece(t, B_TOOL, buf, sizeof buf, false) == 6);
    CHECK(st_tokenizer_find(t, "hello", 5) == B_HELLO);
    CHECK(st_tokenizer_find(t, "nope", 4) == -1);
    CHECK(st_tokenizer_is_eog(t, B_IME) && st_tokenizer_is_eog(t, B_EOT) && !st_tokenizer_is_eog(t, B_IMS));
    CHECK(st_tokenizer_eot(t) == B_IME); /* found by name: first of the known end-of-turn texts */
    st_tokenizer_free(t);

    /* merge ranks decide: "a b" before "b c" gives ab|c, the other order a|bc */
    const char *abx[] = {"ab", "bc"};
    const char *m1[] = {"a b", "b c"}, *m2[] = {"b c", "a b"};
    t = make_bpe(abx, NULL, 2, m1, 2, "gpt-2", ST_TOKEN_UNSET, ST_TOKEN_UNSET, -1, -1);
    CHECK(t != NULL);
    if (t) CHECK_ENC(t, "abc", true, false, 256, 'c'); /* no BOS by default for BPE */
    st_tokenizer_free(t);
    t = make_bpe(abx, NULL, 2, m2, 2, "gpt-2", ST_TOKEN_UNSET, ST_TOKEN_UNSET, -1, -1);
    CHECK(t != NULL);
    if (t) CHECK_ENC(t, "abc", false, false, 'a', 257);
    st_tokenizer_free(t);

    /* llama-3 style: a word that is a token is taken whole, merges or not */
    const char *whole[] = {"abc"};
    t = make_bpe(whole, NULL, 1, m1, 0, "llama-bpe", ST_TOKEN_UNSET, ST_TOKEN_UNSET, -1, -1);
    CHECK(t != NULL);
    if (t) CHECK_ENC(t, "abc", false, false, 256);
    st_tokenizer_free(t);
    t = make_bpe(whole, NULL, 1, m1, 0, "gpt-2", ST_TOKEN_UNSET, ST_TOKEN_UNSET, -1, -1);
    CHECK(t != NULL);
    if (t) CHECK_ENC(t, "abc", false, false, 'a', 'b', 'c');
    st_tokenizer_free(t);

    /* errors */
    char err[256] = "";
    st_tokenizer_config cfg;
    st_tokenizer_config_init(&cfg);
    const char *one_tok[] = {"a"};
    cfg.model = "bert";
    cfg.n_vocab = 1;
    cfg.tokens = one_tok;
    CHECK(st_tokenizer_create(&cfg, err, sizeof err) == NULL && strstr(err, "bert") != NULL);
    cfg.model = "gpt2";
    cfg.pre = "no-such-pre";
    CHECK(st_tokenizer_create(&cfg, err, sizeof err) == NULL && strstr(err, "no-such-pre") != NULL);
    cfg.n_vocab = 0;
    CHECK(st_tokenizer_create(&cfg, err, sizeof err) == NULL && err[0] != 0);
}

/* ---- streaming detokenizer ----------------------------------------------------------------- */

static int push_str(st_detok *d, int32_t id, const char *want, size_t want_len) {
    const char *txt;
    size_t len;
    if (st_detok_push(d, id, &txt, &len) != 0) return 0;
    return len == want_len && memcmp(txt, want, len) == 0;
}

static void test_detok(void) {
    /* token 257: byte-level symbols of the bytes of "éé" */
    const char *extra[] = {"<|im_start|>", "\xc3\x83\xc2\xa9\xc3\x83\xc2\xa9"};
    const int32_t types[] = {ST_TOKEN_TYPE_CONTROL, ST_TOKEN_TYPE_NORMAL};
    st_tokenizer *t = make_bpe(extra, types, 2, NULL, 0, "gpt-2", ST_TOKEN_UNSET, ST_TOKEN_UNSET, -1, -1);
    CHECK(t != NULL);
    if (!t) return;
    st_detok *d = st_detok_new(t, 0);
    CHECK(d != NULL);
    if (!d) {
        st_tokenizer_free(t);
        return;
    }
    /* byte token ids are the byte values in this vocabulary */
    CHECK(push_str(d, 'a', "a", 1));
    CHECK(push_str(d, 0xC3, "", 0) && st_detok_pending(d) == 1);
    CHECK(push_str(d, 0xA9, "\xc3\xa9", 2) && st_detok_pending(d) == 0);
    /* a 4-byte character arrives in four tokens */
    CHECK(push_str(d, 0xF0, "", 0));
    CHECK(push_str(d, 0x9F, "", 0));
    CHECK(push_str(d, 0x98, "", 0) && st_detok_pending(d) == 3);
    CHECK(push_str(d, 0x80, "\xf0\x9f\x98\x80", 4));
    /* a control token in between renders nothing and keeps the held bytes */
    CHECK(push_str(d, 0xE2, "", 0));
    CHECK(push_str(d, 256, "", 0) && st_detok_pending(d) == 1);
    CHECK(push_str(d, 0x82, "", 0) && st_detok_pending(d) == 2);
    CHECK(push_str(d, 0xAC, "\xe2\x82\xac", 3));
    /* ill-formed input becomes U+FFFD */
    CHECK(push_str(d, 0x80, "\xef\xbf\xbd", 3));
    CHECK(push_str(d, 0xC3, "", 0));
    CHECK(push_str(d, 'x', "\xef\xbf\xbdx", 4));
    CHECK(push_str(d, 0xED, "", 0));
    CHECK(push_str(d, 0xA0, "\xef\xbf\xbd\xef\xbf\xbd", 6)); /* surrogate prefix: two FFFDs */
    /* a multi-character token after a held lead byte */
    CHECK(push_str(d, 0xC3, "", 0));
    CHECK(push_str(d, 257, "\xef\xbf\xbd\xc3\xa9\xc3\xa9", 7));
    /* flush: an unfinished character becomes U+FFFD, then the stream starts over */
    const char *txt;
    size_t len;
    CHECK(push_str(d, 0xE2, "", 0));
    CHECK(st_detok_flush(d, &txt, &len) == 0 && len == 3 && memcmp(txt, "\xef\xbf\xbd", 3) == 0);
    CHECK(st_detok_pending(d) == 0);
    CHECK(st_detok_flush(d, &txt, &len) == 0 && len == 0);
    CHECK(st_detok_push(d, 100000, &txt, &len) == -1);
    st_detok_free(d);
    /* rendering control tokens on request */
    d = st_detok_new(t, ST_DETOK_SPECIAL);
    CHECK(d && push_str(d, 256, "<|im_start|>", 12));
    st_detok_free(d);
    st_tokenizer_free(t);
}

int main(void) {
    test_unicode();
    test_pretok();
    test_spm();
    test_bpe();
    test_detok();
    if (failures) {
        printf("FAIL: %d checks failed\n", failures);
        return 1;
    }
    printf("PASS: tokenizer unit tests (Unicode %s tables)\n", st_unicode_version);
    return 0;
}
