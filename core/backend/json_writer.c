/* SPDX-License-Identifier: Apache-2.0 */
/* Tiny streaming JSON writer. See json_writer.h. */
#include "backend/json_writer.h"

#include <math.h>

void st_json_init(st_json_writer *w, FILE *f) {
    w->f = f;
    w->depth = 0;
    w->n_items[0] = 0;
    w->after_key = 0;
    w->error = 0;
}

static void indent(st_json_writer *w) {
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++) fputs("  ", w->f);
}

/* Separator and indentation before a value (or a key) at the current level. */
static void before_value(st_json_writer *w) {
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0) {
        if (w->n_items[w->depth]++) fputc(',', w->f);
        indent(w);
    }
}

static void open_container(st_json_writer *w, char c) {
    before_value(w);
    fputc(c, w->f);
    if (w->depth + 1 >= ST_JSON_MAX_DEPTH) {
        w->error = 1;
        return;
    }
    w->depth++;
    w->n_items[w->depth] = 0;
}

static void close_container(st_json_writer *w, char c) {
    if (w->depth == 0) {
        w->error = 1;
        return;
    }
    int had = w->n_items[w->depth];
    w->depth--;
    if (had) indent(w);
    fputc(c, w->f);
}

void st_json_begin_object(st_json_writer *w) { open_container(w, '{'); }
void st_json_end_object(st_json_writer *w) { close_container(w, '}'); }
void st_json_begin_array(st_json_writer *w) { open_container(w, '['); }
void st_json_end_array(st_json_writer *w) { close_container(w, ']'); }

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not valid UTF-8. */
static int utf8_len(const unsigned char *p) {
    int n;
    uint32_t cp;
    if (p[0] < 0x80) return 1;
    if ((p[0] & 0xe0) == 0xc0) n = 2, cp = p[0] & 0x1f;
    else if ((p[0] & 0xf0) == 0xe0) n = 3, cp = p[0] & 0x0f;
    else if ((p[0] & 0xf8) == 0xf0) n = 4, cp = p[0] & 0x07;
    else return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

/* Quoted JSON string; bytes that are not valid UTF-8 become U+FFFD. */
static void write_escaped(FILE *f, const char *s) {
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        switch (*p) {
        case '"': fputs("\\\"", f); p++; continue;
        case '\\': fputs("\\\\", f); p++; continue;
        case '\n': fputs("\\n", f); p++; continue;
        case '\r': fputs("\\r", f); p++; continue;
        case '\t': fputs("\\t", f); p++; continue;
        default: break;
        }
        if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
            p++;
            continue;
        }
        int n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", f);
            p++;
            continue;
        }
        fwrite(p, 1, (size_t)n, f);
        p += n;
    }
    fputc('"', f);
}

void st_json_key(st_json_writer *w, const char *key) {
    before_value(w);
    write_escaped(w->f, key ? key : "");
    fputs(": ", w->f);
    w->after_key = 1;
}

void st_json_string(st_json_writer *w, const char *s) {
    if (!s) {
        st_json_null(w);
        return;
    }
    before_value(w);
    write_escaped(w->f, s);
}

void st_json_int(st_json_writer *w, int64_t v) {
    before_value(w);
    fprintf(w->f, "%lld", (long long)v);
}

void st_json_uint(st_json_writer *w, uint64_t v) {
    before_value(w);
    fprintf(w->f, "%llu", (unsigned long long)v);
}

void st_json_double(st_json_writer *w, double v) {
    if (!isfinite(v)) {
        st_json_null(w);
        return;
    }
    before_value(w);
    fprintf(w->f, "%.10g", v);
}

void st_json_bool(st_json_writer *w, int v) {
    before_value(w);
    fputs(v ? "true" : "false", w->f);
}

void st_json_null(st_json_writer *w) {
    before_value(w);
    fputs("null", w->f);
}

int st_json_finish(st_json_writer *w) {
    fputc('\n', w->f);
    return w->error || w->depth != 0 || w->after_key ? -1 : 0;
}
