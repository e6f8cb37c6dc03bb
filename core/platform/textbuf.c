/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded text builder (textbuf.h). */
#include "platform/textbuf.h"

#include <stdarg.h>
#include <stdio.h>

void st_textbuf_put(st_textbuf *t, const char *fmt, ...) {
    if (t->len == 0) return;
    size_t room = t->n < t->len ? t->len - t->n : 0;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(room ? t->buf + t->n : NULL, room, fmt, ap);
    va_end(ap);
    if (w > 0) t->n += (size_t)w;
    if (t->n >= t->len) t->buf[t->len - 1] = 0;
}

size_t st_textbuf_done(const st_textbuf *t) { return t->n < t->len ? t->n : (t->len ? t->len - 1 : 0); }
