/* SPDX-License-Identifier: Apache-2.0 */
/* Tokenizers of GGUF models: SentencePiece-style BPE ("llama" vocabularies, SPM),
 * byte-level BPE ("gpt2" vocabularies) with the pre-tokenizer named by tokenizer.ggml.pre, and
 * Gemma 4's BPE over raw UTF-8 ("gemma4" vocabularies).
 * Behaviour follows the reference implementation the GGUF format comes from, so token ids
 * match what models were trained and evaluated with.
 *
 * An st_tokenizer is immutable after creation: every function taking a const pointer may be
 * called from any number of threads at once. A detokenizer stream (st_detok) belongs to one
 * thread at a time. Token ids are int32_t; -1 means "none". */
#ifndef STRATA_TOKENIZER_TOKENIZER_H
#define STRATA_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_tokenizer st_tokenizer;
typedef struct st_gguf st_gguf;

#define ST_TOKEN_NONE (-1)
#define ST_TOKENIZER_MAX_TEXT ((size_t)1 << 29) /* longest text st_tokenizer_encode takes */
#define ST_TOKEN_UNSET (-2) /* config only: use the model type's default */

/* Token types as stored in tokenizer.ggml.token_type (numbers fixed by the file format). */
typedef enum st_token_type {
    ST_TOKEN_TYPE_UNDEFINED = 0,
    ST_TOKEN_TYPE_NORMAL = 1,
    ST_TOKEN_TYPE_UNKNOWN = 2,
    ST_TOKEN_TYPE_CONTROL = 3,
    ST_TOKEN_TYPE_USER_DEFINED = 4,
    ST_TOKEN_TYPE_UNUSED = 5,
    ST_TOKEN_TYPE_BYTE = 6
} st_token_type;

/* Token attributes (bit set) derived from the type and model-specific rules. */
enum {
    ST_TOKEN_ATTR_UNDEFINED = 1 << 0,
    ST_TOKEN_ATTR_UNKNOWN = 1 << 1,
    ST_TOKEN_ATTR_UNUSED = 1 << 2,
    ST_TOKEN_ATTR_NORMAL = 1 << 3,
    ST_TOKEN_ATTR_CONTROL = 1 << 4,
    ST_TOKEN_ATTR_USER_DEFINED = 1 << 5,
    ST_TOKEN_ATTR_BYTE = 1 << 6,
    ST_TOKEN_ATTR_LSTRIP = 1 << 7, /* when matched in text, eat spaces on its left */
    ST_TOKEN_ATTR_RSTRIP = 1 << 8  /* ... and on its right */
};

typedef enum st_tokenizer_kind {
    ST_TOKENIZER_SPM = 1, /* tokenizer.ggml.model "llama" */
    ST_TOKENIZER_BPE = 2  /* tokenizer.ggml.model "gpt2" or "gemma4" */
} st_tokenizer_kind;

/* Everything a tokenizer is built from; the GGUF keys are named beside each field. Arrays
 * are borrowed for the duration of st_tokenizer_create only (it copies what it keeps).
 * Initialize with st_tokenizer_config_init, then fill what you have. */
typedef struct st_tokenizer_config {
    const char *model;              /* tokenizer.ggml.model: "llama", "gpt2" or "gemma4" */
    const char *pre;                /* tokenizer.ggml.pre; NULL/"" = "default" (the reference's
                                       rules for files converted without a pre-tokenizer) */
    const char *name;               /* general.name (a few quirks depend on it); may be NULL */
    uint32_t n_vocab;               /* number of tokens */
    const char *const *tokens;      /* tokenizer.ggml.tokens [n_vocab] */
    const size_t *token_lens;       /* byte lengths [n_vocab], or NULL to use strlen */
    const float *scores;            /* tokenizer.ggml.scores [n_vocab] or NULL (all 0) */
    const int32_t *token_types;     /* tokenizer.ggml.token_type [n_vocab] or NULL (normal) */
    const char *const *merges;      /* tokenizer.ggml.merges [n_merges] ("a b"), BPE only */
    const size_t *merge_lens;       /* byte lengths [n_merges], or NULL to use strlen */
    uint64_t n_merges;
    /* Special ids: ST_TOKEN_UNSET = the model type's default, ST_TOKEN_NONE = none. */
    int32_t bos_id, eos_id, eot_id, eom_id, unk_id, sep_id, pad_id; /* tokenizer.ggml.*_token_id */
    /* Flags: -1 = the model type's default, 0 = false, 1 = true. */
    int add_bos;          /* tokenizer.ggml.add_bos_token */
    int add_eos;          /* tokenizer.ggml.add_eos_token */
    int add_space_prefix; /* tokenizer.ggml.add_space_prefix (SPM) */
} st_tokenizer_config;

/* Sets every id to ST_TOKEN_UNSET, every flag to -1 and everything else to 0/NULL. */
void st_tokenizer_config_init(st_tokenizer_config *cfg);

/* Builds a tokenizer from cfg. Returns NULL on error (unknown model or pre-tokenizer, bad
 * arrays, out of memory) with a message in err; the caller owns the result. */
st_tokenizer *st_tokenizer_create(const st_tokenizer_config *cfg, char *err, size_t errlen);

/* Builds a tokenizer from a GGUF file's tokenizer.ggml.* metadata (the st_gguf may be closed
 * afterwards). NULL on error with a message in err; the caller owns the result. */
st_tokenizer *st_tokenizer_from_gguf(const st_gguf *g, char *err, size_t errlen);

/* Frees t. NULL is ok. */
void st_tokenizer_free(st_tokenizer *t);

/* Encodes text[0..len) (UTF-8; invalid bytes are tolerated). add_special adds BOS/EOS as the
 * model's flags say; parse_special makes control tokens written in the text (e.g.
 * "<|im_start|>") become their ids; user-defined tokens are always recognized.
 * Writes at most cap ids to out and returns the total number of ids of the encoding (call
 * again with a larger buffer when it exceeds cap), or -1 when out of memory or when len
 * exceeds ST_TOKENIZER_MAX_TEXT. */
int64_t st_tokenizer_encode(const st_tokenizer *t, const char *text, size_t len, bool add_special,
                            bool parse_special, int32_t *out, size_t cap);

/* Same, into a malloc'ed array the caller frees (*out = NULL when the result is empty).
 * Returns the number of ids or -1 (out of memory, or text longer than ST_TOKENIZER_MAX_TEXT). */
int64_t st_tokenizer_encode_alloc(const st_tokenizer *t, const char *text, size_t len,
                                  bool add_special, bool parse_special, int32_t **out);

/* st_tokenizer_encode_alloc with parse_special, except that a control token written inside one
 * of the byte ranges (pairs start, len in ranges[2 * n_ranges]) is encoded as the text it is:
 * a chat prompt's template markers become special tokens, the same characters typed in a
 * message's content do not. */
int64_t st_tokenizer_encode_plain_ranges(const st_tokenizer *t, const char *text, size_t len, bool add_special,
                                         const size_t *ranges, size_t n_ranges, int32_t **out);

/* The bytes a token stands for, as generation would print them. Control and unknown tokens
 * give "" unless special is true (then their text). Copies min(piece, cap) bytes into buf
 * and returns the piece's full length, or -1 for an id out of range. No NUL is added. */
int32_t st_tokenizer_token_to_piece(const st_tokenizer *t, int32_t id, char *buf, size_t cap,
                                    bool special);

/* The raw vocabulary string of a token (NUL-terminated, owned by t), *len its byte length
 * (len may be NULL); NULL for an id out of range. */
const char *st_tokenizer_token_text(const st_tokenizer *t, int32_t id, size_t *len);
/* ST_TOKEN_ATTR_* bits of a token, 0 for an id out of range. */
uint32_t st_tokenizer_token_attr(const st_tokenizer *t, int32_t id);
/* Score of a token (SPM merge priority), 0 for an id out of range. */
float st_tokenizer_token_score(const st_tokenizer *t, int32_t id);
/* Id of the token whose vocabulary string is exactly text[0..len), or -1. */
int32_t st_tokenizer_find(const st_tokenizer *t, const char *text, size_t len);

/* SPM or BPE. */
st_tokenizer_kind st_tokenizer_kind_of(const st_tokenizer *t);
/* Pre-tokenizer name in use ("gpt-2", "llama3", ...; "" for SPM). Owned by t. */
const char *st_tokenizer_pre_name(const st_tokenizer *t);
/* Number of tokens; valid ids are 0 .. vocab_size - 1. */
uint32_t st_tokenizer_vocab_size(const st_tokenizer *t);
/* Special ids (-1 when the model has none): beginning / end of sequence, end of turn (from
 * the file, else found by name), unknown, padding. */
int32_t st_tokenizer_bos(const st_tokenizer *t);
int32_t st_tokenizer_eos(const st_tokenizer *t);
int32_t st_tokenizer_eot(const st_tokenizer *t);
int32_t st_tokenizer_unk(const st_tokenizer *t);
int32_t st_tokenizer_pad(const st_tokenizer *t);
/* Whether encoding with add_special puts BOS first / EOS last. */
bool st_tokenizer_add_bos(const st_tokenizer *t);
bool st_tokenizer_add_eos(const st_tokenizer *t);
/* True when generating id ends the turn: EOS, EOT, EOM and the end tokens known by name
 * ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", ...). False for ids out of range. */
bool st_tokenizer_is_eog(const st_tokenizer *t, int32_t id);

/* ---- streaming detokenizer ----------------------------------------------------------------
 * Turns generated ids into text piece by piece without ever splitting a UTF-8 character:
 * bytes of an unfinished character are held back until the next token completes it.
 * Output is always well-formed UTF-8: ill-formed byte sequences become U+FFFD. */
typedef struct st_detok st_detok;

enum {
    ST_DETOK_SPECIAL = 1 << 0,            /* render control tokens as their text */
    ST_DETOK_STRIP_LEADING_SPACE = 1 << 1 /* drop the first piece's leading space when the
                                             model adds a space prefix (SPM), as decoding a
                                             whole prompt does */
};

/* New stream over t (which must outlive it), flags ST_DETOK_*. NULL when out of memory.
 * The caller frees it with st_detok_free. */
st_detok *st_detok_new(const st_tokenizer *t, unsigned flags);
/* Frees d (held bytes are dropped). NULL is ok. */
void st_detok_free(st_detok *d);
/* Forgets held bytes and starts over as if new. */
void st_detok_reset(st_detok *d);
/* Feeds one id. On success returns 0 and sets *text and *len to the newly completed text (may be
 * empty), valid until the next call on d. Returns -1 for an id out of range (nothing
 * consumed) or when out of memory. */
int st_detok_push(st_detok *d, int32_t id, const char **text, size_t *len);
/* Ends the stream: returns the held-back bytes of an unfinished character as U+FFFD (or ""),
 * like st_detok_push; the stream is then reset. */
int st_detok_flush(st_detok *d, const char **text, size_t *len);
/* Number of bytes currently held back (0..3). */
size_t st_detok_pending(const st_detok *d);

#ifdef __cplusplus
}
#endif
#endif
