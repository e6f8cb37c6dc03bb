/* SPDX-License-Identifier: Apache-2.0 */
/* Unicode helpers for the tokenizers: UTF-8 decoding/encoding with the same lenient rules
 * the reference tokenizers use, general-category classes from a generated range table
 * (unicode_tables.c, made by tools/gen_unicode_tables.c), White_Space, and the byte-level
 * BPE byte <-> code point mapping. Everything here is pure and thread-safe. */
#ifndef STRATA_TOKENIZER_UNICODE_H
#define STRATA_TOKENIZER_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* Category classes (one per code point) plus the White_Space flag. */
enum {
    ST_UCAT_UNDEF = 0x01,     /* Cn: unassigned */
    ST_UCAT_NUMBER = 0x02,    /* \p{N} */
    ST_UCAT_LETTER = 0x04,    /* \p{L} */
    ST_UCAT_SEPARATOR = 0x08, /* \p{Z} */
    ST_UCAT_MARK = 0x10,      /* \p{M} */
    ST_UCAT_PUNCT = 0x20,     /* \p{P} */
    ST_UCAT_SYMBOL = 0x40,    /* \p{S} */
    ST_UCAT_CONTROL = 0x80,   /* \p{C} other than Cn */
    ST_UFLAG_SPACE = 0x100    /* White_Space property (\s) */
};

typedef struct st_ucat_range {
    uint32_t first; /* first code point of the range */
    uint32_t cat;   /* ST_UCAT_* */
} st_ucat_range;

/* Generated data (unicode_tables.c). */
extern const char st_unicode_version[];
extern const st_ucat_range st_ucat_ranges[];
extern const uint32_t st_ucat_n_ranges;
extern const uint32_t st_uspace[];
extern const uint32_t st_uspace_n;

/* Category class of cp, or'ed with ST_UFLAG_SPACE for White_Space code points. Code points
 * above 0x10FFFF are ST_UCAT_UNDEF. */
uint32_t st_unicode_flags(uint32_t cp);

/* Length of the UTF-8 sequence announced by lead byte c (1 for continuation bytes and
 * invalid leads, like the reference implementation). */
size_t st_utf8_len(unsigned char c);

/* Decodes one code point at s[*pos] (n bytes total) and advances *pos. Invalid or truncated
 * sequences yield U+FFFD and advance one byte. Overlong forms are accepted (lenient). */
uint32_t st_utf8_decode(const char *s, size_t n, size_t *pos);

/* Encodes cp (<= 0x10FFFF; larger values encode U+FFFD) into out[4]; returns the length. */
size_t st_utf8_encode(uint32_t cp, char *out);

/* Decodes all of s into a freshly malloc'ed array (caller frees); *n_out = count.
 * Returns NULL only on allocation failure (an empty input gives a non-NULL array). */
uint32_t *st_utf8_to_cps(const char *s, size_t n, size_t *n_out);

/* Byte-level BPE: code point that stands for byte b (GPT-2's printable mapping). */
uint32_t st_bytes_to_unicode(uint8_t b);
/* Inverse of st_bytes_to_unicode: the byte, or -1 if cp stands for no byte. */
int st_unicode_to_byte(uint32_t cp);

/* Strict UTF-8 check (no overlongs, surrogates or values above 0x10FFFF) of the sequence
 * starting at s[0], with n >= 1 bytes available: returns its length 1..4 when it is complete
 * and well-formed, 0 when all n bytes are a well-formed but unfinished prefix, or -k when
 * the first k bytes are an ill-formed maximal subpart (to be replaced by one U+FFFD). */
int st_utf8_check(const char *s, size_t n);

#endif
