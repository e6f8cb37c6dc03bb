/* SPDX-License-Identifier: Apache-2.0 */
/* Grammar-constrained sampling: a GBNF grammar (llama.cpp's notation) compiled to a
 * pushdown matcher over bytes, and the set of vocabulary tokens it allows next, found by
 * walking a trie of the token texts once per step (a subtree whose prefix the grammar rejects
 * is skipped whole).
 *
 * GBNF: rules `name ::= alternatives`, "literals" (\n \t \r \\ \" \xHH \uHHHH escapes),
 * [character classes] with ranges and ^, `.`, rule references, ( groups ), * + ? {m} {m,}
 * {m,n}, # comments, and <[id]>: exactly the vocabulary token id (a control token such as
 * <|channel|> that has no text to match, or any token by its id; st_gmatch_token_ok /
 * _accept_token / _mask take it); a rule's alternatives continue on the next line after a
 * trailing `|` or inside parentheses. The start rule is `root`. Matching is on bytes: non-ASCII literals work,
 * classes with non-ASCII ranges are refused (negated ASCII classes such as [^"\\] accept any
 * UTF-8 text, byte by byte). Errors name the line and column. */
#ifndef STRATA_GRAMMAR_GRAMMAR_H
#define STRATA_GRAMMAR_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

typedef struct st_grammar st_grammar; /* compiled; immutable, shareable across threads */
typedef struct st_gmatch st_gmatch;   /* one generation's position in a grammar */
typedef struct st_gvocab st_gvocab;   /* the vocabulary as a trie of token texts */

/* Compile; NULL with err ("line 2, col 9: undefined rule 'valu'") on an error. */
st_grammar *st_grammar_parse(const char *gbnf, char *err, size_t errlen);
void st_grammar_free(st_grammar *g);

/* Can a matcher start on g? 0, or -1 with why in err (the grammar is too ambiguous: its
 * alternatives multiply past the matcher's bounds; or it matches nothing). */
int st_grammar_check(const st_grammar *g, char *err, size_t errlen);
/* A matcher at the start of g (which must outlive it); NULL when out of memory or when
 * st_grammar_check fails. */
st_gmatch *st_gmatch_new(const st_grammar *g);
/* Why the last check, advance or mask failed for a bound rather than for the text: the
 * matcher bounds its work (rule expansions per byte and per mask, parses alive at once), so a
 * pathological grammar fails with this message instead of running without end. NULL when no
 * bound was met. */
const char *st_gmatch_error(const st_gmatch *m);
void st_gmatch_free(st_gmatch *m);
/* Would the bytes be accepted from here? (no change) */
int st_gmatch_check(const st_gmatch *m, const char *s, size_t n);
/* Advance over the bytes: 0, or -1 when the grammar rejects them (the state is unchanged). */
int st_gmatch_accept(st_gmatch *m, const char *s, size_t n);
/* Nonzero when the text so far is a complete sentence of the grammar (end may come). */
int st_gmatch_can_end(const st_gmatch *m);

/* Trie over texts[n] (byte lengths lens[n], or NULL for NUL-terminated; copied); eog[i] nonzero marks end-of-generation tokens
 * (allowed exactly when the grammar can end); tokens with empty text and not eog are never
 * allowed. NULL when out of memory. */
st_gvocab *st_gvocab_new(const char *const *texts, const size_t *lens, const uint8_t *eog, int32_t n);
void st_gvocab_free(st_gvocab *v);
/* allowed[n] = 1 for each token the grammar accepts next, else 0. Returns how many, or -1
 * when a bound was met (st_gmatch_error). */
int32_t st_gmatch_mask(const st_gmatch *m, const st_gvocab *v, uint8_t *allowed);
/* Token t allowed next? (one token's check: the fast path of sampling) */
int st_gmatch_token_ok(const st_gmatch *m, const st_gvocab *v, int32_t t);
/* Advance over token t's text (an eog token changes nothing). 0, or -1 when rejected. */
int st_gmatch_accept_token(st_gmatch *m, const st_gvocab *v, int32_t t);

/* ---- with the sampler and the tokenizer (grammar_sampler.c) ---------------------------------- */
typedef struct st_sampler st_sampler;
typedef struct st_tokenizer st_tokenizer;
/* The vocabulary of a tokenizer: each token's decoded bytes; end-of-generation tokens marked. */
st_gvocab *st_gvocab_from_tokenizer(const st_tokenizer *t);
/* Make sampler s follow grammar g (owned by s from now on) over vocabulary v (must outlive s).
 * 0, or -1 when out of memory (g is freed then too). */
int st_grammar_constrain(st_sampler *s, st_grammar *g, const st_gvocab *v);

#endif
