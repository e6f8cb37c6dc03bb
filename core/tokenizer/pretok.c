/* SPDX-License-Identifier: Apache-2.0 */
/* Pre-tokenizer scanners (see pretok.h).
 *
 * Each split rule is a leftmost-first regular-expression split: the text is scanned, every
 * match becomes a word and so does every stretch between matches. Rules with several
 * expressions apply them in sequence, each one to every word the previous one produced.
 * \s means the White_Space property; \p{X} the general category class. */
#include "tokenizer/pretok.h"

#include <stdbool.h>
#include <stdlib.h>

#include "tokenizer/unicode.h"

typedef struct scan {
    const uint32_t *cp;
    const uint16_t *fl; /* st_unicode_flags of each code point */
    size_t b, e;        /* the word being split */
    size_t prev;        /* end of the last emitted piece */
    st_pretok_words *out;
    int oom;
} scan;

static int words_push(st_pretok_words *w, size_t len) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        size_t *p = realloc(w->len, cap * sizeof *p);
        if (!p) return -1;
        w->len = p;
        w->cap = cap;
    }
    w->len[w->n++] = len;
    return 0;
}

/* Emits [prev, end) when non-empty. */
static void emit(scan *s, size_t end) {
    if (end > s->prev && words_push(s->out, end - s->prev) != 0) s->oom = 1;
    s->prev = end;
}

static uint32_t cp_at(const scan *s, size_t i) { return i < s->e ? s->cp[i] : 0xFFFFFFFFu; }
/* Flags of position i; 0 outside the word (no category). */
static uint32_t fl_at(const scan *s, size_t i) { return i < s->e ? s->fl[i] : 0; }

static uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d at pos (case-insensitive when icase): match length or 0.
 * (No code point other than ASCII letters lowercases to one of these letters, so ASCII
 * folding is exact.) */
static size_t contraction(const scan *s, size_t pos, bool icase) {
    if (s->cp[pos] != '\'' || pos + 1 >= s->e) return 0;
    uint32_t a = cp_at(s, pos + 1);
    if (icase) a = ascii_lower(a);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= s->e) return 0;
    uint32_t b = cp_at(s, pos + 2);
    if (icase) b = ascii_lower(b);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* Case-insensitive contraction starting at pos (which may be the end): its length or 0. */
static size_t contraction_at(const scan *s, size_t pos) {
    return pos < s->e ? contraction(s, pos, true) : 0;
}

#define F_SP ST_UFLAG_SPACE
#define F_L ST_UCAT_LETTER
#define F_N ST_UCAT_NUMBER
#define F_M ST_UCAT_MARK

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static void split_gpt2(scan *s) {
    size_t pos = s->b;
    while (pos < s->e) {
        uint32_t c = s->cp[pos];
        size_t k = contraction(s, pos, false);
        if (k) {
            pos += k;
            emit(s, pos);
            continue;
        }
        uint32_t f2 = c == ' ' ? fl_at(s, pos + 1) : s->fl[pos];
        uint32_t cls = (f2 & F_L) ? F_L : (f2 & F_N) ? F_N : 0;
        if (cls) { /* ' ?\p{L}+' or ' ?\p{N}+' */
            pos += c == ' ';
            while (fl_at(s, pos) & cls) pos++;
            emit(s, pos);
            continue;
        }
        if (f2 && !(f2 & (F_SP | F_L | F_N))) { /* ' ?[^\s\p{L}\p{N}]+' */
            pos += c == ' ';
            for (uint32_t f = fl_at(s, pos); f && !(f & (F_SP | F_L | F_N)); f = fl_at(s, ++pos)) {
            }
            emit(s, pos);
            continue;
        }
        size_t nws = 0;
        while (fl_at(s, pos + nws) & F_SP) nws++;
        if (nws > 1 && pos + nws < s->e) { /* \s+(?!\S): leave the last space to the next word */
            pos += nws - 1;
        } else if (nws > 0) {
            pos += nws;
        } else {
            pos++;
        }
        emit(s, pos);
    }
}

/* llama-3 / qwen2 / qwen3.5 family:
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?LETTERS+|DIGITS| ?[^\s LETTERS \p{N}]+[\r\n]*
 *   |\s*[\r\n]+|\s+(?!\S)|\s+
 * letters = \p{L} (\p{L}\p{M} for qwen3.5); digits = \p{N}{1,3} (llama-3) or \p{N}. */
static void split_llama3_family(scan *s, size_t max_digits, uint32_t letters, bool punct_newlines) {
    size_t pos = s->b;
    while (pos < s->e) {
        uint32_t c = s->cp[pos];
        uint32_t f = s->fl[pos];
        size_t k = contraction(s, pos, true);
        if (k) {
            pos += k;
            emit(s, pos);
            continue;
        }
        if (!(c == '\r' || c == '\n' || (f & F_N)) && ((f & letters) || (fl_at(s, pos + 1) & letters))) {
            pos++;
            while (fl_at(s, pos) & letters) pos++;
            emit(s, pos);
            continue;
        }
        if (f & F_N) { /* digits in groups of at most max_digits */
            size_t start = pos;
            while (fl_at(s, pos) & F_N) {
                pos++;
                if (pos - start >= max_digits) {
                    emit(s, pos);
                    start = pos;
                }
            }
            emit(s, pos);
            continue;
        }
        uint32_t f2 = c == ' ' ? fl_at(s, pos + 1) : f;
        uint32_t excl = F_SP | letters | F_N;
        if (!(f2 & excl)) { /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
            pos += c == ' ';
            for (uint32_t g = fl_at(s, pos); g && !(g & excl); g = fl_at(s, ++pos)) {
            }
            while (punct_newlines && pos < s->e && (s->cp[pos] == '\r' || s->cp[pos] == '\n')) pos++;
            emit(s, pos);
            continue;
        }
        size_t nws = 0, last_nl = 0;
        while (fl_at(s, pos + nws) & F_SP) {
            uint32_t w = s->cp[pos + nws];
            if (w == '\r' || w == '\n') last_nl = pos + nws + 1;
            nws++;
        }
        if (last_nl > 0) { /* \s*[\r\n]+ */
            pos = last_nl;
        } else if (nws > 1 && pos + nws < s->e) { /* \s+(?!\S) */
            pos += nws - 1;
        } else if (nws > 0) {
            pos += nws;
        } else {
            pos++;
        }
        emit(s, pos);
    }
}

/* ---- the DeepSeek splits ---------------------------------------------------------------
 * Sets are tested on code points that are not White_Space (the reference treats every
 * non-ASCII space as \s before matching, so no set ever contains a space). */

typedef struct cp_range {
    uint32_t lo, hi;
} cp_range;

static bool in_ranges(uint32_t c, const cp_range *r, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (c >= r[i].lo && c <= r[i].hi) return true;
    return false;
}

/* Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, ... letters of DeepSeek LLM's
 * "\s?[A-Za-zµÀ-ÖØ-ö...]+" expression, as code point ranges. */
static const cp_range ds_latin[] = {
    {0x0041, 0x005A}, {0x0061, 0x007A}, {0x00B5, 0x00B5}, {0x00C0, 0x00D6}, {0x00D8, 0x00F6},
    {0x00F8, 0x01BA}, {0x01BC, 0x01BF}, {0x01C4, 0x0293}, {0x0295, 0x02AF}, {0x0370, 0x0373},
    {0x0376, 0x0377}, {0x037B, 0x037D}, {0x037F, 0x037F}, {0x0386, 0x0386}, {0x0388, 0x038A},
    {0x038C, 0x038C}, {0x038E, 0x03A1}, {0x03A3, 0x03F5}, {0x03F7, 0x0481}, {0x048A, 0x052F},
    {0x0531, 0x0556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107},
    {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
    {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F},
    {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F},
    {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
    {0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF},
    {0x1E900, 0x1E943},
};

/* "\s?[!-/:-~！-／：-～‘-‟　-。]+" */
static const cp_range ds_punct[] = {
    {0x0021, 0x002F}, {0x003A, 0x007E}, {0xFF01, 0xFF0F},
    {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};

/* "[一-龥ࠀ-一가-퟿]+" (note the second range: U+0800..U+4E00) */
static const cp_range ds_cjk[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};

typedef enum set_kind { SET_LATIN, SET_PUNCT, SET_CJK, SET_LETTER, SET_PUNCT_CAT, SET_NUMBER } set_kind;

static bool in_set(const scan *s, size_t i, set_kind k) {
    if (i >= s->e) return false;
    uint32_t f = s->fl[i], c = s->cp[i];
    if (f & F_SP) return false;
    switch (k) {
    case SET_LATIN: return in_ranges(c, ds_latin, sizeof ds_latin / sizeof ds_latin[0]);
    case SET_PUNCT: return in_ranges(c, ds_punct, sizeof ds_punct / sizeof ds_punct[0]);
    case SET_CJK: return in_ranges(c, ds_cjk, sizeof ds_cjk / sizeof ds_cjk[0]);
    case SET_LETTER: return (f & F_L) != 0;
    case SET_PUNCT_CAT: return (f & ST_UCAT_PUNCT) != 0;
    case SET_NUMBER: return (f & F_N) != 0;
    }
    return false;
}

/* "[\r\n]": every CR and LF alone. */
static void split_newlines(scan *s) {
    for (size_t pos = s->b; pos < s->e; pos++) {
        if (s->cp[pos] == '\r' || s->cp[pos] == '\n') {
            emit(s, pos);
            emit(s, pos + 1);
        }
    }
    emit(s, s->e);
}

/* "\s?SET+" when opt_space, else "SET+"; with single: "SET" (one code point). */
static void split_set(scan *s, set_kind k, bool opt_space, bool single) {
    size_t pos = s->b;
    while (pos < s->e) {
        size_t start = pos;
        if (opt_space && (s->fl[pos] & F_SP) && in_set(s, pos + 1, k)) {
            pos++;
        } else if (!in_set(s, pos, k)) {
            pos++;
            continue;
        }
        emit(s, start);
        if (single) {
            pos++;
        } else {
            while (in_set(s, pos, k)) pos++;
        }
        emit(s, pos);
    }
    emit(s, s->e);
}

/* "\s+$": the trailing run of spaces. */
static void split_trailing_space(scan *s) {
    size_t pos = s->e;
    while (pos > s->b && (s->fl[pos - 1] & F_SP)) pos--;
    emit(s, pos);
    emit(s, s->e);
}

/* "\p{N}{1,3}": digits in groups of at most three; everything else is left between. */
static void split_digit_groups(scan *s) {
    size_t pos = s->b;
    while (pos < s->e) {
        if (!(s->fl[pos] & F_N)) {
            pos++;
            continue;
        }
        emit(s, pos);
        size_t start = pos;
        while (pos < s->e && (s->fl[pos] & F_N) && pos - start < 3) pos++;
        emit(s, pos);
    }
    emit(s, s->e);
}

/* "[一-龥぀-ゟ゠-ヿ]+": CJK ideographs, hiragana and katakana. */
static const cp_range ds3_cjk[] = {{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}};

static void split_cjk_kana(scan *s) {
    size_t pos = s->b;
    const size_t nr = sizeof ds3_cjk / sizeof ds3_cjk[0];
    while (pos < s->e) {
        if (!in_ranges(s->cp[pos], ds3_cjk, nr)) {
            pos++;
            continue;
        }
        emit(s, pos);
        while (pos < s->e && in_ranges(s->cp[pos], ds3_cjk, nr)) pos++;
        emit(s, pos);
    }
    emit(s, s->e);
}

static bool is_ascii_letter(uint32_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static bool is_ascii_punct(uint32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

#define F_P ST_UCAT_PUNCT
#define F_S ST_UCAT_SYMBOL

/* DeepSeek-V3's main expression, alternatives tried in order at each position:
 *   [!-/:-@[-`{-~][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ?[\p{P}\p{S}]+[\r\n]*
 *   | \s*[\r\n]+ | \s+(?!\S) | \s+
 * Returns the match length at pos, 0 when none matches there. */
static size_t ds3_match(const scan *s, size_t pos) {
    uint32_t c = s->cp[pos], f = s->fl[pos], fn = fl_at(s, pos + 1);
    size_t i;
    if (is_ascii_punct(c) && pos + 1 < s->e && is_ascii_letter(s->cp[pos + 1])) {
        for (i = pos + 1; i < s->e && is_ascii_letter(s->cp[i]); i++) {
        }
        return i - pos;
    }
    bool lead_ok = c != '\r' && c != '\n' && !(f & (F_L | F_P | F_S));
    if ((lead_ok && (fn & (F_L | F_M))) || (f & (F_L | F_M))) {
        for (i = pos + 1; fl_at(s, i) & (F_L | F_M); i++) {
        }
        return i - pos;
    }
    if ((f & (F_P | F_S)) || (c == ' ' && (fn & (F_P | F_S)))) {
        i = pos + (c == ' ');
        while (fl_at(s, i) & (F_P | F_S)) i++;
        while (i < s->e && (s->cp[i] == '\r' || s->cp[i] == '\n')) i++;
        return i - pos;
    }
    size_t nws = 0, last_nl = 0;
    while (fl_at(s, pos + nws) & F_SP) {
        uint32_t w = s->cp[pos + nws];
        if (w == '\r' || w == '\n') last_nl = pos + nws + 1;
        nws++;
    }
    if (last_nl) return last_nl - pos;
    if (nws > 1 && pos + nws < s->e) return nws - 1;
    return nws;
}

static void split_ds3_main(scan *s) {
    size_t pos = s->b;
    while (pos < s->e) {
        size_t k = ds3_match(s, pos);
        if (k == 0) { /* no alternative matches here: part of the stretch between matches */
            pos++;
            continue;
        }
        emit(s, pos);
        pos += k;
        emit(s, pos);
    }
    emit(s, s->e);
}

/* ---- GPT-4o / Llama 4 ----------------------------------------------------------------------
 *   [^\r\n\p{L}\p{N}]?UPPER*LOWER+(CONTRACTION)? | [^\r\n\p{L}\p{N}]?UPPER+LOWER*(CONTRACTION)?
 *   | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * as the reference evaluates it: UPPER is a letter other than a-z and LOWER a letter other
 * than A-Z, so a non-ASCII letter counts as both. */
static bool o_upper(const scan *s, size_t i) {
    return i < s->e && (s->fl[i] & F_L) && !(s->cp[i] >= 'a' && s->cp[i] <= 'z');
}
static bool o_lower(const scan *s, size_t i) {
    return i < s->e && (s->fl[i] & F_L) && !(s->cp[i] >= 'A' && s->cp[i] <= 'Z');
}

/* UPPER*LOWER+ (upper_first = 0) or UPPER+LOWER* (1) at q with backtracking; end or 0. */
static size_t o_word(const scan *s, size_t q, int upper_first) {
    size_t u = 0;
    while (o_upper(s, q + u)) u++;
    if (upper_first) {
        if (u == 0) return 0;
        size_t i = q + u;
        while (o_lower(s, i)) i++;
        return i;
    }
    for (size_t k = u + 1; k-- > 0;) { /* longest UPPER* first, then shorter */
        if (!o_lower(s, q + k)) continue;
        size_t i = q + k;
        while (o_lower(s, i)) i++;
        return i;
    }
    return 0;
}

/* Optional contraction ('s 't 're 've 'm 'll 'd, either case) at i: its end. */
static size_t o_contraction(const scan *s, size_t i) {
    if (i >= s->e || s->cp[i] != '\'') return i;
    uint32_t a = ascii_lower(cp_at(s, i + 1)), b = ascii_lower(cp_at(s, i + 2));
    if (i + 1 < s->e && (a == 's' || a == 't' || a == 'm' || a == 'd')) return i + 2;
    if (i + 2 < s->e && ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')))
        return i + 3;
    return i;
}

/* tekken (Mistral) is the same without contractions and with single digits. */
static size_t gpt4o_match(const scan *s, size_t pos, bool contractions, size_t max_digits) {
    uint32_t c = s->cp[pos], f = s->fl[pos];
    bool prefix_ok = c != '\r' && c != '\n' && !(f & (F_L | F_N));
    for (int alt = 0; alt < 2; alt++) {
        size_t end = 0;
        if (prefix_ok) end = o_word(s, pos + 1, alt);
        if (!end) end = o_word(s, pos, alt);
        if (end) return (contractions ? o_contraction(s, end) : end) - pos;
    }
    if (f & F_N) {
        size_t i = pos;
        while (i < s->e && (s->fl[i] & F_N) && i - pos < max_digits) i++;
        return i - pos;
    }
    uint32_t f2 = c == ' ' ? fl_at(s, pos + 1) : f;
    if (f2 && !(f2 & (F_SP | F_L | F_N))) {
        size_t i = pos + (c == ' ');
        while (i < s->e && !(s->fl[i] & (F_SP | F_L | F_N))) i++;
        while (i < s->e && (s->cp[i] == '\r' || s->cp[i] == '\n' || s->cp[i] == '/')) i++;
        return i - pos;
    }
    size_t nws = 0, last_nl = 0;
    while (fl_at(s, pos + nws) & F_SP) {
        uint32_t w = s->cp[pos + nws];
        if (w == '\r' || w == '\n') last_nl = pos + nws + 1;
        nws++;
    }
    if (last_nl) return last_nl - pos;
    if (nws > 1 && pos + nws < s->e) return nws - 1;
    return nws;
}

static void split_gpt4o(scan *s, bool contractions, size_t max_digits) {
    size_t pos = s->b;
    while (pos < s->e) {
        size_t k = gpt4o_match(s, pos, contractions, max_digits);
        if (k == 0) {
            pos++;
            continue;
        }
        emit(s, pos);
        pos += k;
        emit(s, pos);
    }
    emit(s, s->e);
}

/* "[\p{P}\$\+<=>\^~\|]+" (default rules) or "[\p{P}\$\+<=>\^~\|`]+" (falcon):
 * punctuation runs plus a few ASCII symbols. */
static bool punct_sym(const scan *s, size_t i, bool backtick) {
    if (i >= s->e) return false;
    uint32_t c = s->cp[i];
    return (s->fl[i] & F_P) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' ||
           c == '~' || c == '|' || (backtick && c == '`');
}

static void split_punct_sym(scan *s, bool backtick) {
    size_t pos = s->b;
    while (pos < s->e) {
        if (!punct_sym(s, pos, backtick)) {
            pos++;
            continue;
        }
        emit(s, pos);
        while (punct_sym(s, pos, backtick)) pos++;
        emit(s, pos);
    }
    emit(s, s->e);
}

/* "[0-9][0-9][0-9]": non-overlapping triples of ASCII digits, leftmost first. */
static bool ascii_digit(const scan *s, size_t i) { return i < s->e && s->cp[i] >= '0' && s->cp[i] <= '9'; }

static void split_ascii_digit3(scan *s) {
    size_t pos = s->b;
    while (pos < s->e) {
        if (ascii_digit(s, pos) && ascii_digit(s, pos + 1) && ascii_digit(s, pos + 2)) {
            emit(s, pos);
            pos += 3;
            emit(s, pos);
        } else {
            pos++;
        }
    }
    emit(s, s->e);
}

/* "[^\n]+|[\n]+": runs of newlines and runs of anything else. */
static void split_newline_runs(scan *s) {
    size_t pos = s->b;
    while (pos < s->e) {
        bool nl = s->cp[pos] == '\n';
        while (pos < s->e && (s->cp[pos] == '\n') == nl) pos++;
        emit(s, pos);
    }
}

/* ---- Kimi K2 --------------------------------------------------------------------------------
 * [\p{Han}]+ | [^\r\n\p{L}\p{N}]?LETTERS+(?i:'s|'t|'re|'ve|'m|'ll|'d)? | \p{N}{1,3}
 * | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * where LETTERS are letters other than Han ideographs, as the reference implements it. */
static bool is_han(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2EBEF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static bool kimi_letter(const scan *s, size_t i) {
    return i < s->e && (s->fl[i] & F_L) && !is_han(s->cp[i]);
}

static void split_kimi(scan *s) {
    size_t pos = s->b;
    while (pos < s->e) {
        uint32_t c = s->cp[pos], f = s->fl[pos];
        if (is_han(c)) {
            while (pos < s->e && is_han(s->cp[pos])) pos++;
            emit(s, pos);
            continue;
        }
        bool lead = !(c == '\r' || c == '\n' || (f & (F_L | F_N)));
        if (kimi_letter(s, pos) || (lead && kimi_letter(s, pos + 1))) {
            pos += lead;
            while (kimi_letter(s, pos)) pos++;
            size_t k = contraction_at(s, pos);
            emit(s, pos + k);
            pos += k;
            continue;
        }
        if (f & F_N) {
            size_t start = pos;
            while (fl_at(s, pos) & F_N) {
                pos++;
                if (pos - start >= 3) {
                    emit(s, pos);
                    start = pos;
                }
            }
            emit(s, pos);
            continue;
        }
        uint32_t f2 = c == ' ' ? fl_at(s, pos + 1) : f;
        if (f2 && !(f2 & (F_SP | F_L | F_N))) {
            pos += c == ' ';
            for (uint32_t g = fl_at(s, pos); g && !(g & (F_SP | F_L | F_N)); g = fl_at(s, ++pos)) {
            }
            while (pos < s->e && (s->cp[pos] == '\r' || s->cp[pos] == '\n')) pos++;
            emit(s, pos);
            continue;
        }
        size_t nws = 0, last_nl = 0;
        while (fl_at(s, pos + nws) & F_SP) {
            uint32_t w = s->cp[pos + nws];
            if (w == '\r' || w == '\n') last_nl = pos + nws + 1;
            nws++;
        }
        if (last_nl > 0) {
            pos = last_nl;
        } else if (nws > 1 && pos + nws < s->e) {
            pos += nws - 1;
        } else if (nws > 0) {
            pos += nws;
        } else {
            pos++;
        }
        emit(s, pos);
    }
}

/* AFMoE digits: each run of digits is cut into groups of three counted from its end; the
 * text before a run (since the previous run) joins the run's first group, as the reference
 * implements it. */
static void split_afmoe_digits(scan *s) {
    size_t pos = s->b;
    while (pos < s->e) {
        if (!(s->fl[pos] & F_N)) {
            pos++;
            continue;
        }
        size_t start = pos;
        while (pos < s->e && (s->fl[pos] & F_N)) pos++;
        size_t count = pos - start, cur = start;
        if (count % 3) {
            cur += count % 3;
            emit(s, cur);
        }
        while (cur < pos) {
            cur += 3;
            emit(s, cur);
        }
    }
    emit(s, s->e);
}

/* Runs of code points from a set of ranges (White_Space excluded), everything else between. */
static void split_ranges(scan *s, const cp_range *r, size_t nr) {
    size_t pos = s->b;
    while (pos < s->e) {
        if ((s->fl[pos] & F_SP) || !in_ranges(s->cp[pos], r, nr)) {
            pos++;
            continue;
        }
        emit(s, pos);
        while (pos < s->e && !(s->fl[pos] & F_SP) && in_ranges(s->cp[pos], r, nr)) pos++;
        emit(s, pos);
    }
    emit(s, s->e);
}

/* AFMoE's "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+" (CJK, kana, Thai, Lao,
 * Khmer, Myanmar, Hangul; the third range starts at U+8C48 as written there). */
static const cp_range afmoe_cjk[] = {
    {0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x8C48, 0xFAFF}, {0x3040, 0x309F}, {0x30A0, 0x30FF},
    {0xFF65, 0xFF9F}, {0x2F00, 0x2FDF}, {0x0E40, 0x0E7F}, {0x0E80, 0x0EFF}, {0x1780, 0x17FF},
    {0x1000, 0x109F}, {0xAA60, 0xAA7F}, {0xA9E0, 0xA9FF}, {0xAC00, 0xD7AF}, {0x1100, 0x11FF},
};

/* EXAONE-MoE: words run on through single spaces before letters:
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+ | \p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n/]? | \s*[\r\n] | \s+(?!\S) | \s+ */
static size_t exaone_match(const scan *s, size_t pos) {
    uint32_t c = s->cp[pos], f = s->fl[pos];
    size_t k = contraction(s, pos, true);
    if (k) return k;
    bool lead = c != '\r' && c != '\n' && !(f & (F_L | F_N));
    size_t q = (f & F_L) ? pos : (lead && (fl_at(s, pos + 1) & F_L)) ? pos + 1 : SIZE_MAX;
    if (q != SIZE_MAX) {
        size_t i = q + 1;
        for (;;) {
            if (fl_at(s, i) & (F_L | F_M))
                i++;
            else if (i < s->e && s->cp[i] == ' ' && (fl_at(s, i + 1) & F_L))
                i += 2;
            else
                break;
        }
        return i - pos;
    }
    if (f & F_N) return 1;
    uint32_t f2 = c == ' ' ? fl_at(s, pos + 1) : f;
    if (f2 && !(f2 & (F_SP | F_L | F_N))) {
        size_t i = pos + (c == ' ');
        while (i < s->e && !(s->fl[i] & (F_SP | F_L | F_N))) i++;
        if (i < s->e && (s->cp[i] == '\r' || s->cp[i] == '\n' || s->cp[i] == '/')) i++;
        return i - pos;
    }
    size_t nws = 0, last_nl = 0;
    while (fl_at(s, pos + nws) & F_SP) {
        uint32_t w = s->cp[pos + nws];
        if (w == '\r' || w == '\n') last_nl = pos + nws + 1;
        nws++;
    }
    if (last_nl) return last_nl - pos;
    if (nws > 1 && pos + nws < s->e) return nws - 1;
    return nws;
}

static void split_exaone(scan *s) {
    size_t pos = s->b;
    while (pos < s->e) {
        size_t k = exaone_match(s, pos);
        if (k == 0) {
            pos++;
            continue;
        }
        emit(s, pos);
        pos += k;
        emit(s, pos);
    }
    emit(s, s->e);
}

typedef enum step_kind {
    STEP_GPT2,
    STEP_LLAMA3,
    STEP_QWEN2,
    STEP_QWEN35,
    STEP_NEWLINES,
    STEP_DS_LATIN,
    STEP_DS_PUNCT,
    STEP_TRAILING_SPACE,
    STEP_DS_CJK,
    STEP_NUMBERS,
    STEP_NUMBER,
    STEP_SP_LETTERS,
    STEP_SP_PUNCT,
    STEP_DIGIT_GROUPS,
    STEP_CJK_KANA,
    STEP_DS3_MAIN,
    STEP_GPT4O,
    STEP_TEKKEN,
    STEP_NEWLINE_RUNS,
    STEP_KIMI,
    STEP_SEED_CODER,
    STEP_MINICPM5,
    STEP_AFMOE_DIGITS,
    STEP_AFMOE_CJK,
    STEP_EXAONE,
    STEP_PUNCT_SYM,
    STEP_FALCON_PUNCT,
    STEP_ASCII_DIGIT3,
} step_kind;

static void run_step(scan *s, step_kind k) {
    switch (k) {
    case STEP_GPT2: split_gpt2(s); break;
    case STEP_LLAMA3: split_llama3_family(s, 3, F_L, true); break;
    case STEP_QWEN2: split_llama3_family(s, 1, F_L, true); break;
    case STEP_QWEN35: split_llama3_family(s, 1, F_L | F_M, true); break;
    case STEP_SEED_CODER: split_llama3_family(s, 1, F_L, false); break;
    case STEP_MINICPM5: split_llama3_family(s, SIZE_MAX, F_L, true); break;
    case STEP_AFMOE_DIGITS: split_afmoe_digits(s); break;
    case STEP_EXAONE: split_exaone(s); break;
    case STEP_AFMOE_CJK: split_ranges(s, afmoe_cjk, sizeof afmoe_cjk / sizeof afmoe_cjk[0]); break;
    case STEP_NEWLINES: split_newlines(s); break;
    case STEP_DS_LATIN: split_set(s, SET_LATIN, true, false); break;
    case STEP_DS_PUNCT: split_set(s, SET_PUNCT, true, false); break;
    case STEP_TRAILING_SPACE: split_trailing_space(s); break;
    case STEP_DS_CJK: split_set(s, SET_CJK, false, false); break;
    case STEP_NUMBERS: split_set(s, SET_NUMBER, false, false); break;
    case STEP_NUMBER: split_set(s, SET_NUMBER, false, true); break;
    case STEP_SP_LETTERS: split_set(s, SET_LETTER, true, false); break;
    case STEP_SP_PUNCT: split_set(s, SET_PUNCT_CAT, true, false); break;
    case STEP_DIGIT_GROUPS: split_digit_groups(s); break;
    case STEP_CJK_KANA: split_cjk_kana(s); break;
    case STEP_DS3_MAIN: split_ds3_main(s); break;
    case STEP_GPT4O: split_gpt4o(s, true, 3); break;
    case STEP_TEKKEN: split_gpt4o(s, false, 1); break;
    case STEP_NEWLINE_RUNS: split_newline_runs(s); break;
    case STEP_KIMI: split_kimi(s); break;
    case STEP_PUNCT_SYM: split_punct_sym(s, false); break;
    case STEP_FALCON_PUNCT: split_punct_sym(s, true); break;
    case STEP_ASCII_DIGIT3: split_ascii_digit3(s); break;
    }
}

static const step_kind steps_gpt2[] = {STEP_GPT2};
static const step_kind steps_llama3[] = {STEP_LLAMA3};
static const step_kind steps_qwen2[] = {STEP_QWEN2};
static const step_kind steps_qwen35[] = {STEP_QWEN35};
static const step_kind steps_ds_llm[] = {STEP_NEWLINES, STEP_DS_LATIN, STEP_DS_PUNCT,
                                         STEP_TRAILING_SPACE, STEP_DS_CJK, STEP_NUMBERS};
static const step_kind steps_ds_coder[] = {STEP_NEWLINES, STEP_SP_LETTERS, STEP_SP_PUNCT,
                                           STEP_DS_CJK, STEP_NUMBER};

static const step_kind steps_ds3[] = {STEP_DIGIT_GROUPS, STEP_CJK_KANA, STEP_DS3_MAIN};
static const step_kind steps_gpt4o[] = {STEP_GPT4O};
static const step_kind steps_tekken[] = {STEP_TEKKEN};
static const step_kind steps_newline_runs[] = {STEP_NEWLINE_RUNS};
static const step_kind steps_kimi[] = {STEP_KIMI};
static const step_kind steps_seed_coder[] = {STEP_SEED_CODER};
static const step_kind steps_minicpm5[] = {STEP_DIGIT_GROUPS, STEP_MINICPM5};
static const step_kind steps_afmoe[] = {STEP_AFMOE_DIGITS, STEP_AFMOE_CJK, STEP_DS3_MAIN};
static const step_kind steps_laguna[] = {STEP_NEWLINE_RUNS, STEP_QWEN2};
static const step_kind steps_exaone[] = {STEP_EXAONE};
static const step_kind steps_default[] = {STEP_PUNCT_SYM, STEP_GPT2, STEP_NUMBERS, STEP_ASCII_DIGIT3};
static const step_kind steps_falcon[] = {STEP_FALCON_PUNCT, STEP_GPT2, STEP_ASCII_DIGIT3};
static const step_kind steps_starcoder[] = {STEP_NUMBER, STEP_GPT2};

typedef struct pretok_def {
    const char *name;
    const step_kind *steps;
    size_t n_steps;
} pretok_def;

#define DEF(n, a) {n, a, sizeof a / sizeof a[0]}
static const pretok_def defs[ST_PRETOK_COUNT] = {
    [ST_PRETOK_GPT2] = DEF("gpt-2", steps_gpt2),
    [ST_PRETOK_LLAMA3] = DEF("llama3", steps_llama3),
    [ST_PRETOK_QWEN2] = DEF("qwen2", steps_qwen2),
    [ST_PRETOK_QWEN35] = DEF("qwen35", steps_qwen35),
    [ST_PRETOK_DEEPSEEK_LLM] = DEF("deepseek-llm", steps_ds_llm),
    [ST_PRETOK_DEEPSEEK_CODER] = DEF("deepseek-coder", steps_ds_coder),
    [ST_PRETOK_DEEPSEEK3] = DEF("deepseek-v3", steps_ds3),
    [ST_PRETOK_GPT4O] = DEF("gpt-4o", steps_gpt4o),
    [ST_PRETOK_DEFAULT] = DEF("default", steps_default),
    [ST_PRETOK_FALCON] = DEF("falcon", steps_falcon),
    [ST_PRETOK_STARCODER] = DEF("starcoder", steps_starcoder),
    [ST_PRETOK_TEKKEN] = DEF("tekken", steps_tekken),
    [ST_PRETOK_NEWLINE_RUNS] = DEF("gemma4", steps_newline_runs),
    [ST_PRETOK_KIMI_K2] = DEF("kimi-k2", steps_kimi),
    [ST_PRETOK_SEED_CODER] = DEF("seed-coder", steps_seed_coder),
    [ST_PRETOK_MINICPM5] = DEF("minicpm5", steps_minicpm5),
    [ST_PRETOK_AFMOE] = DEF("afmoe", steps_afmoe),
    [ST_PRETOK_LAGUNA] = DEF("laguna", steps_laguna),
    [ST_PRETOK_EXAONE_MOE] = DEF("exaone-moe", steps_exaone),
};

const char *st_pretok_name(st_pretok kind) {
    return (unsigned)kind < ST_PRETOK_COUNT ? defs[kind].name : "?";
}

int st_pretok_split(st_pretok kind, const uint32_t *cps, size_t n, st_pretok_words *w) {
    w->n = 0;
    if ((unsigned)kind >= ST_PRETOK_COUNT) kind = ST_PRETOK_GPT2;
    if (n == 0) return 0;
    uint16_t *fl = malloc(n * sizeof *fl);
    if (!fl) return -1;
    for (size_t i = 0; i < n; i++) fl[i] = (uint16_t)st_unicode_flags(cps[i]);

    st_pretok_words tmp = {0};
    int rc = words_push(w, n);
    const pretok_def *d = &defs[kind];
    for (size_t st = 0; rc == 0 && st < d->n_steps; st++) {
        tmp.n = 0;
        size_t b = 0;
        for (size_t i = 0; i < w->n && rc == 0; i++) {
            scan s = {cps, fl, b, b + w->len[i], b, &tmp, 0};
            run_step(&s, d->steps[st]);
            if (s.oom) rc = -1;
            b += w->len[i];
        }
        /* swap: the new list becomes the current one */
        st_pretok_words t = *w;
        *w = tmp;
        tmp = t;
    }
    free(tmp.len);
    free(fl);
    return rc;
}
