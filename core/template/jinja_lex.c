/* SPDX-License-Identifier: Apache-2.0 */
/* The Jinja lexer: template text to tokens, with whitespace control ("-" strips, "+" keeps),
 * trim_blocks (the newline after a block or comment tag goes) and lstrip_blocks (spaces and
 * tabs from a line's start to a block or comment tag go), as Hugging Face renders chat
 * templates. {% raw %} bodies become text. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "template/jinja_lex.h"

typedef struct lexer {
    jn_arena *a;
    const char *src;
    size_t pos, n;
    jn_tok *toks;
    size_t ntok, cap;
    int strip_next; /* the previous tag ended with "-": strip the next text's leading space */
    int trim_next;  /* trim_blocks: drop one newline at the next text's start */
    char *err;
    size_t errlen;
} lexer;

static void pos_of(const char *src, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (src[i] == '\n') {
            (*line)++;
            *col = 1;
        } else (*col)++;
    }
}

static int lex_fail(lexer *L, size_t off, const char *msg) {
    int line, col;
    pos_of(L->src, off, &line, &col);
    snprintf(L->err, L->errlen, "line %d, col %d: %s", line, col, msg);
    return -1;
}

static jn_tok *push(lexer *L, int kind, size_t off, const char *p, size_t n) {
    if (L->ntok == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jn_tok *t = jn_alloc(L->a, cap * sizeof *t);
        if (L->ntok) memcpy(t, L->toks, L->ntok * sizeof *t);
        L->toks = t;
        L->cap = cap;
    }
    jn_tok *t = &L->toks[L->ntok++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->p = p;
    t->n = n;
    pos_of(L->src, off, &t->line, &t->col);
    return t;
}

/* Emit text [b, e), applying the pending strip/trim and this tag's left-side rules. */
static void emit_text(lexer *L, size_t b, size_t e, int tag_strip, int tag_lstrip) {
    const char *s = L->src;
    if (L->strip_next) {
        while (b < e && isspace((unsigned char)s[b])) b++;
    } else if (L->trim_next) {
        if (b < e && s[b] == '\n') b++;
        else if (b + 1 < e && s[b] == '\r' && s[b + 1] == '\n') b += 2;
    }
    L->strip_next = L->trim_next = 0;
    if (tag_strip) {
        while (e > b && isspace((unsigned char)s[e - 1])) e--;
    } else if (tag_lstrip) {
        size_t k = e;
        while (k > b && (s[k - 1] == ' ' || s[k - 1] == '\t')) k--;
        if (k == 0 || s[k - 1] == '\n') e = k; /* only spaces between a line start and the tag */
    }
    if (e > b) push(L, JN_T_TEXT, b, s + b, e - b);
}

static int is_name_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int is_name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static int lex_string(lexer *L) {
    const char *s = L->src;
    char q = s[L->pos];
    size_t b = L->pos;
    char *out = jn_alloc(L->a, L->n - L->pos + 1);
    size_t o = 0, i = L->pos + 1;
    for (; i < L->n && s[i] != q; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < L->n) {
            c = s[++i];
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case '0': c = '\0'; break;
            case '\\': case '\'': case '"': break;
            default: out[o++] = '\\'; break;
            }
        }
        out[o++] = c;
    }
    if (i >= L->n) return lex_fail(L, b, "unterminated string");
    out[o] = 0;
    push(L, JN_T_STR, b, out, o);
    L->pos = i + 1;
    return 0;
}

static int lex_number(lexer *L) {
    const char *s = L->src;
    size_t b = L->pos, i = b;
    int is_float = 0;
    while (i < L->n && (isdigit((unsigned char)s[i]) || s[i] == '_')) i++;
    if (i + 1 < L->n && s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
        is_float = 1;
        i++;
        while (i < L->n && isdigit((unsigned char)s[i])) i++;
    }
    if (i < L->n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < L->n && (s[j] == '+' || s[j] == '-')) j++;
        if (j < L->n && isdigit((unsigned char)s[j])) {
            is_float = 1;
            i = j;
            while (i < L->n && isdigit((unsigned char)s[i])) i++;
        }
    }
    push(L, is_float ? JN_T_FLOAT : JN_T_INT, b, s + b, i - b);
    L->pos = i;
    return 0;
}

static const char *const k_ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                    "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "=", NULL};

/* Tokens of one tag up to its closer ("%}" or "}}"); sets the strip/trim state it leaves. */
static int lex_tag(lexer *L, int block) {
    const char *s = L->src;
    const char *close = block ? "%}" : "}}";
    for (;;) {
        while (L->pos < L->n && isspace((unsigned char)s[L->pos])) L->pos++;
        if (L->pos >= L->n) return lex_fail(L, L->pos, block ? "expected '%}'" : "expected '}}'");
        char c = s[L->pos];
        size_t rest = L->n - L->pos;
        if ((c == '-' || c == '+') && rest >= 3 && !memcmp(s + L->pos + 1, close, 2)) {
            L->strip_next = c == '-';
            L->trim_next = block && c != '+' && c != '-';
            push(L, block ? JN_T_BLOCK_END : JN_T_VAR_END, L->pos, s + L->pos, 3);
            L->pos += 3;
            return 0;
        }
        if (rest >= 2 && !memcmp(s + L->pos, close, 2)) {
            L->trim_next = block;
            push(L, block ? JN_T_BLOCK_END : JN_T_VAR_END, L->pos, s + L->pos, 2);
            L->pos += 2;
            return 0;
        }
        if (c == '\'' || c == '"') {
            if (lex_string(L)) return -1;
            continue;
        }
        if (isdigit((unsigned char)c)) {
            lex_number(L);
            continue;
        }
        if (is_name_start(c)) {
            size_t b = L->pos;
            while (L->pos < L->n && is_name_char(s[L->pos])) L->pos++;
            push(L, JN_T_NAME, b, s + b, L->pos - b);
            continue;
        }
        int found = 0;
        for (int k = 0; k_ops[k]; k++) {
            size_t ol = strlen(k_ops[k]);
            if (rest >= ol && !memcmp(s + L->pos, k_ops[k], ol)) {
                push(L, JN_T_OP, L->pos, k_ops[k], ol);
                L->pos += ol;
                found = 1;
                break;
            }
        }
        if (!found) return lex_fail(L, L->pos, "unexpected character");
    }
}

/* "{%[-+]? *word *[-+]?%}" at p: its length, else 0; *lm and *rm get the modifiers. */
static size_t match_word_tag(const char *s, size_t p, size_t n, const char *word, char *lm, char *rm) {
    size_t i = p, wl = strlen(word);
    if (i + 2 > n || s[i] != '{' || s[i + 1] != '%') return 0;
    i += 2;
    *lm = (i < n && (s[i] == '-' || s[i] == '+')) ? s[i++] : 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    if (i + wl > n || memcmp(s + i, word, wl) || (i + wl < n && is_name_char(s[i + wl]))) return 0;
    i += wl;
    while (i < n && isspace((unsigned char)s[i])) i++;
    *rm = (i < n && (s[i] == '-' || s[i] == '+')) ? s[i++] : 0;
    if (i + 2 > n || s[i] != '%' || s[i + 1] != '}') return 0;
    return i + 2 - p;
}

/* {% raw %}...{% endraw %} at L->pos: emit the body as text. 1 when handled. */
static int lex_raw(lexer *L, size_t text_start) {
    char lm, rm, elm, erm;
    size_t tl = match_word_tag(L->src, L->pos, L->n, "raw", &lm, &rm);
    if (!tl) return 0;
    emit_text(L, text_start, L->pos, lm == '-', lm != '+');
    size_t b = L->pos + tl, e = b, el = 0;
    for (; e < L->n; e++)
        if ((el = match_word_tag(L->src, e, L->n, "endraw", &elm, &erm))) break;
    if (e >= L->n) return lex_fail(L, L->pos, "expected '{% endraw %}'");
    L->strip_next = rm == '-';
    L->trim_next = rm != '-' && rm != '+';
    emit_text(L, b, e, elm == '-', elm != '+');
    L->strip_next = erm == '-';
    L->trim_next = erm != '-' && erm != '+';
    L->pos = e + el;
    return 1;
}

static int lex_comment(lexer *L, size_t text_start) {
    const char *s = L->src;
    char lm = L->pos + 2 < L->n ? s[L->pos + 2] : 0;
    emit_text(L, text_start, L->pos, lm == '-', lm != '+');
    const char *end = NULL;
    for (size_t i = L->pos + 2; i + 1 < L->n; i++)
        if (s[i] == '#' && s[i + 1] == '}') {
            end = s + i;
            break;
        }
    if (!end) return lex_fail(L, L->pos, "unterminated comment");
    char rm = end > s + L->pos + 2 ? end[-1] : 0;
    L->strip_next = rm == '-';
    L->trim_next = rm != '-' && rm != '+';
    L->pos = (size_t)(end - s) + 2;
    return 0;
}

int jn_lex(jn_arena *a, const char *src, jn_tok **out, size_t *nout, char *err, size_t errlen) {
    lexer L = {.a = a, .src = src, .n = strlen(src), .err = err, .errlen = errlen};
    size_t text_start = 0;
    while (L.pos < L.n) {
        const char *s = src + L.pos;
        if (s[0] != '{' || L.pos + 1 >= L.n || (s[1] != '{' && s[1] != '%' && s[1] != '#')) {
            L.pos++;
            continue;
        }
        int r;
        if (s[1] == '#') r = lex_comment(&L, text_start);
        else if (s[1] == '%' && (r = lex_raw(&L, text_start)) != 0) r = r < 0 ? -1 : 0;
        else {
            int block = s[1] == '%';
            char m = L.pos + 2 < L.n ? s[2] : 0;
            emit_text(&L, text_start, L.pos, m == '-', block && m != '+');
            push(&L, block ? JN_T_BLOCK_BEGIN : JN_T_VAR_BEGIN, L.pos, s, 2);
            L.pos += 2 + (m == '-' || m == '+');
            r = lex_tag(&L, block);
        }
        if (r) return -1;
        text_start = L.pos;
    }
    emit_text(&L, text_start, L.n, 0, 0);
    push(&L, JN_T_EOF, L.n, src + L.n, 0);
    *out = L.toks;
    *nout = L.ntok;
    return 0;
}
