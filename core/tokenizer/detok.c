/* SPDX-License-Identifier: Apache-2.0 */
/* Streaming detokenizer: token pieces in, well-formed UTF-8 out, never splitting a
 * character across two outputs (see tokenizer.h). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "tokenizer/unicode.h"

struct st_detok {
    const st_tokenizer *t;
    unsigned flags;
    bool first;     /* no token seen yet */
    char held[4];   /* bytes of an unfinished character */
    size_t n_held;
    char *out;      /* output of the last call */
    size_t out_cap;
};

st_detok *st_detok_new(const st_tokenizer *t, unsigned flags) {
    st_detok *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->t = t;
    d->flags = flags;
    d->first = true;
    return d;
}

void st_detok_free(st_detok *d) {
    if (!d) return;
    free(d->out);
    free(d);
}

void st_detok_reset(st_detok *d) {
    d->first = true;
    d->n_held = 0;
}

size_t st_detok_pending(const st_detok *d) { return d->n_held; }

static int reserve_out(st_detok *d, size_t n) {
    if (n <= d->out_cap) return 0;
    size_t cap = d->out_cap ? d->out_cap : 64;
    while (cap < n) cap *= 2;
    char *p = realloc(d->out, cap);
    if (!p) return -1;
    d->out = p;
    d->out_cap = cap;
    return 0;
}

static const char replacement[3] = {'\xef', '\xbf', '\xbd'};

/* Validates src[0..n) (held bytes followed by the new piece) into d->out: complete
 * characters are copied, ill-formed parts become U+FFFD, and an unfinished character at the
 * end is kept in d->held. Returns the number of output bytes. */
static size_t emit_valid(st_detok *d, const char *src, size_t n) {
    size_t o = 0, i = 0;
    d->n_held = 0;
    while (i < n) {
        int k = st_utf8_check(src + i, n - i);
        if (k > 0) {
            memcpy(d->out + o, src + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else if (k == 0) { /* unfinished: keep for the next token */
            d->n_held = n - i;
            memcpy(d->held, src + i, d->n_held);
            break;
        } else {
            memcpy(d->out + o, replacement, 3);
            o += 3;
            i += (size_t)-k;
        }
    }
    return o;
}

int st_detok_push(st_detok *d, int32_t id, const char **text, size_t *len) {
    const st_tokenizer *t = d->t;
    *text = "";
    *len = 0;
    if (id < 0 || (uint32_t)id >= t->n_vocab) return -1;
    const char *piece = t->piece + t->piece_off[id];
    size_t n = t->piece_len[id];
    if (!(d->flags & ST_DETOK_SPECIAL) &&
        (t->attr[id] & (ST_TOKEN_ATTR_CONTROL | ST_TOKEN_ATTR_UNKNOWN)))
        n = 0;
    if (d->first) {
        d->first = false;
        if ((d->flags & ST_DETOK_STRIP_LEADING_SPACE) && t->add_space_prefix && n > 0 &&
            piece[0] == ' ') {
            piece++;
            n--;
        }
    }
    /* worst case: every byte becomes a 3-byte U+FFFD */
    size_t total = d->n_held + n;
    if (reserve_out(d, total * 3 + 1) != 0) return -1;
    char *src = malloc(total ? total : 1);
    if (!src) return -1;
    memcpy(src, d->held, d->n_held);
    memcpy(src + d->n_held, piece, n);
    size_t o = emit_valid(d, src, total);
    free(src);
    d->out[o] = 0;
    *text = d->out;
    *len = o;
    return 0;
}

int st_detok_flush(st_detok *d, const char **text, size_t *len) {
    *text = "";
    *len = 0;
    if (reserve_out(d, 4) != 0) return -1;
    size_t o = 0;
    if (d->n_held) {
        memcpy(d->out, replacement, 3);
        o = 3;
    }
    d->out[o] = 0;
    st_detok_reset(d);
    *text = d->out;
    *len = o;
    return 0;
}
