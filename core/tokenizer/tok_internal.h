/* SPDX-License-Identifier: Apache-2.0 */
/* Internal layout of st_tokenizer, shared by the files of core/tokenizer only. */
#ifndef STRATA_TOKENIZER_TOK_INTERNAL_H
#define STRATA_TOKENIZER_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer.h"

/* Open-addressing string -> index table over strings stored elsewhere. */
typedef struct st_strtab {
    uint32_t *slot; /* index + 1, 0 = empty */
    uint64_t mask;  /* capacity - 1 (capacity a power of two) */
} st_strtab;

struct st_tokenizer {
    st_tokenizer_kind kind;
    st_pretok pre;
    char pre_name[32];
    uint32_t n_vocab;

    char *text;        /* all token strings, each NUL-terminated */
    uint64_t *text_off; /* [n_vocab] */
    uint32_t *text_len; /* [n_vocab] */
    float *score;      /* [n_vocab] */
    uint32_t *attr;    /* [n_vocab] ST_TOKEN_ATTR_* */
    st_strtab tok_tab; /* text -> id */

    char *merge;        /* merges "a b", each NUL-terminated; rank = index */
    uint64_t *merge_off; /* [n_merges] */
    uint32_t *merge_len; /* [n_merges] */
    uint64_t n_merges;
    st_strtab merge_tab;

    char *piece;        /* rendered pieces (control tokens as their text) */
    uint64_t *piece_off; /* [n_vocab] */
    uint32_t *piece_len; /* [n_vocab] */

    uint8_t *eog; /* [n_vocab] 1 = ends generation */

    int32_t *special; /* ids with CONTROL/USER_DEFINED/UNKNOWN attr, longest text first */
    uint32_t n_special;

    int32_t byte_tok[256]; /* token standing for each raw byte, -1 if none */
    char byte_enc[256][2]; /* byte-level BPE: UTF-8 of the code point for each byte */
    uint8_t byte_enc_len[256];

    /* SPM: every pair of adjacent characters that occurs inside some token; text is cut
     * between characters forming no such pair (no merge can cross there), which keeps the
     * merge queues small. Slots hold two keys (see st_tok_sym_key); 0 = empty. */
    uint64_t *pairs;
    uint64_t pairs_mask;

    int32_t bos, eos, eot, eom, unk, sep, pad;
    bool add_bos, add_eos, add_space_prefix;
    bool ignore_merges; /* BPE: a word that is a token is taken whole */
    bool raw_bpe;       /* BPE over raw UTF-8 with spaces written U+2581 and <0xXX> byte
                           tokens (Gemma 4, Sarvam), instead of byte-level symbols */
    bool newline_whole; /* Gemma 4: a word of newlines that is a token is taken whole */
};

uint64_t st_tok_hash(const char *s, size_t n, uint64_t h);

/* Key of a character symbol of 1..4 bytes: its bytes and its length (never 0). */
static inline uint64_t st_tok_sym_key(const char *s, size_t n) {
    uint64_t k = (uint64_t)n << 32;
    for (size_t i = 0; i < n; i++) k |= (uint64_t)(unsigned char)s[i] << (8 * i);
    return k;
}
/* True when the symbols a, b occur next to each other inside some token. */
bool st_tok_pair_possible(const st_tokenizer *t, uint64_t a, uint64_t b);
#define ST_TOK_HASH_INIT 0xcbf29ce484222325ull

static inline const char *st_tok_str(const st_tokenizer *t, int32_t id) {
    return t->text + t->text_off[id];
}

/* Id of the token with text s[0..n), or -1. */
int32_t st_tok_lookup(const st_tokenizer *t, const char *s, size_t n);
/* Rank of merge "a b", or -1. */
int32_t st_tok_merge_rank(const st_tokenizer *t, const char *a, size_t na, const char *b,
                          size_t nb);

#endif
