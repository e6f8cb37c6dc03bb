/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8, category lookup and the byte-level BPE byte mapping (see unicode.h). */
#include "tokenizer/unicode.h"

#include <stdlib.h>

uint32_t st_unicode_flags(uint32_t cp) {
    if (cp > 0x10FFFF) return ST_UCAT_UNDEF;
    /* binary search: last range whose first <= cp */
    uint32_t lo = 0, hi = st_ucat_n_ranges;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (st_ucat_ranges[mid].first <= cp)
            lo = mid;
        else
            hi = mid;
    }
    uint32_t flags = st_ucat_ranges[lo].cat;
    /* White_Space: 25 code points, all below 0x3001 */
    if (cp <= 0x3000) {
        if (cp < 0x80) {
            if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20) flags |= ST_UFLAG_SPACE;
        } else {
            for (uint32_t i = 0; i < st_uspace_n; i++) {
                if (st_uspace[i] == cp) {
                    flags |= ST_UFLAG_SPACE;
                    break;
                }
                if (st_uspace[i] > cp) break;
            }
        }
    }
    return flags;
}

size_t st_utf8_len(unsigned char c) {
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

uint32_t st_utf8_decode(const char *str, size_t n, size_t *pos) {
    const unsigned char *s = (const unsigned char *)str + *pos;
    size_t avail = n - *pos;
    unsigned char c = s[0];
    if (c < 0x80) {
        *pos += 1;
        return c;
    }
    if ((c & 0xE0) == 0xC0 && avail >= 2 && is_cont(s[1])) {
        *pos += 2;
        return ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if ((c & 0xF0) == 0xE0 && avail >= 3 && is_cont(s[1]) && is_cont(s[2])) {
        *pos += 3;
        return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    if ((c & 0xF8) == 0xF0 && avail >= 4 && is_cont(s[1]) && is_cont(s[2]) && is_cont(s[3])) {
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
                      ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        *pos += 4;
        return cp <= 0x10FFFF ? cp : 0xFFFD;
    }
    *pos += 1;
    return 0xFFFD;
}

size_t st_utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

uint32_t *st_utf8_to_cps(const char *s, size_t n, size_t *n_out) {
    uint32_t *cps = malloc((n ? n : 1) * sizeof *cps);
    if (!cps) return NULL;
    size_t k = 0, pos = 0;
    while (pos < n) cps[k++] = st_utf8_decode(s, n, &pos);
    *n_out = k;
    return cps;
}

/* GPT-2's mapping: bytes that are printable Latin-1 (0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF) map to
 * themselves; the other 68 bytes map to 0x100, 0x101, ... in ascending byte order. */
static int byte_is_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t st_bytes_to_unicode(uint8_t b) {
    if (byte_is_printable(b)) return b;
    /* count non-printable bytes below b */
    uint32_t n = 0;
    for (unsigned x = 0; x < b; x++) n += !byte_is_printable(x);
    return 0x100 + n;
}

int st_unicode_to_byte(uint32_t cp) {
    if (cp < 0x100) return byte_is_printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68) return -1;
    uint32_t k = cp - 0x100;
    for (unsigned x = 0; x < 256; x++) {
        if (byte_is_printable(x)) continue;
        if (k == 0) return (int)x;
        k--;
    }
    return -1;
}

int st_utf8_check(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return -1;
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= n) return 0;
        unsigned char b = s[i];
        unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) return -(int)i;
    }
    return (int)need;
}
