/* SPDX-License-Identifier: Apache-2.0 */
/* A bounded text builder over caller memory: appends printf-formatted text, truncates at the
 * end of the buffer (always NUL-terminated when len > 0) and counts what fitted. Used by the
 * formatters of the plan and the expert cache (tables, Prometheus lines). */
#ifndef STRATA_PLATFORM_TEXTBUF_H
#define STRATA_PLATFORM_TEXTBUF_H

#include <stddef.h>

typedef struct st_textbuf {
    char *buf;  /* caller's memory, len bytes; borrowed */
    size_t len;
    size_t n;   /* bytes wanted so far (may exceed len after truncation) */
} st_textbuf;

/* Appends formatted text; past the end it truncates (the buffer stays terminated). Never fails. */
void st_textbuf_put(st_textbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Length of the text in the buffer (without the NUL): n, or len - 1 when truncated. */
size_t st_textbuf_done(const st_textbuf *t);

#endif
