/* SPDX-License-Identifier: Apache-2.0 */
/* Pre-tokenizers of byte-level BPE vocabularies: split text (as code points) into words
 * before BPE merging. Each kind reproduces the split rules published with the model's
 * tokenizer (the regular expressions in its tokenizer.json), implemented as hand-written
 * scanners: no regex engine. Categories come from unicode.h. */
#ifndef STRATA_TOKENIZER_PRETOK_H
#define STRATA_TOKENIZER_PRETOK_H

#include <stddef.h>
#include <stdint.h>

typedef enum st_pretok {
    ST_PRETOK_GPT2 = 0,       /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    ST_PRETOK_LLAMA3,         /* llama-3: case-insensitive contractions, \p{N}{1,3}, ... */
    ST_PRETOK_QWEN2,          /* as llama-3 but single digits */
    ST_PRETOK_QWEN35,         /* as qwen2, letters runs also take \p{M} */
    ST_PRETOK_DEEPSEEK_LLM,   /* six sequential splits (newlines, latin words, punct, ...) */
    ST_PRETOK_DEEPSEEK_CODER, /* five sequential splits */
    ST_PRETOK_DEEPSEEK3,      /* DeepSeek-V3/R1: digit groups, CJK/kana runs, then words */
    ST_PRETOK_GPT4O,          /* GPT-4o / gpt-oss / Llama 4: case-aware words, \p{N}{1,3} */
    ST_PRETOK_DEFAULT,        /* no/"default" pre-tokenizer: punct runs, gpt-2, \p{N}+, digit triples */
    ST_PRETOK_FALCON,         /* punct runs, gpt-2, ASCII digit triples */
    ST_PRETOK_STARCODER,      /* single digits, then gpt-2 (starcoder, refact, command-r, ...) */
    ST_PRETOK_NEWLINE_RUNS,   /* Gemma 4: runs of newlines and runs of everything else */
    ST_PRETOK_KIMI_K2,        /* Kimi K2: Han runs, non-Han letter words, \p{N}{1,3}, ... */
    ST_PRETOK_SEED_CODER,     /* qwen2-like, punctuation runs do not take newlines */
    ST_PRETOK_MINICPM5,       /* digit groups, then llama-3 rules with whole digit runs */
    ST_PRETOK_AFMOE,          /* AFMoE: digit groups from the right, CJK/SE-Asian runs, words */
    ST_PRETOK_LAGUNA,         /* newline runs, then qwen2 rules */
    ST_PRETOK_EXAONE_MOE,     /* EXAONE-MoE: words continue through single spaces */
    ST_PRETOK_TEKKEN,         /* Mistral's tekken: gpt-4o words without contractions, \p{N} */
    ST_PRETOK_COUNT
} st_pretok;

/* Growable array of word lengths in code points. */
typedef struct st_pretok_words {
    size_t *len;
    size_t n, cap;
} st_pretok_words;

/* Splits cps[0..n) into words: on success replaces w's contents with the word lengths (in
 * code points, summing to n; none is 0) and returns 0; returns -1 when out of memory (w then
 * holds a valid but unspecified list). w is caller-owned; free w->len when done. */
int st_pretok_split(st_pretok kind, const uint32_t *cps, size_t n, st_pretok_words *w);

/* Name used in logs ("gpt-2", "llama3", ...). Static storage. */
const char *st_pretok_name(st_pretok kind);

#endif
