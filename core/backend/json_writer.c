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

static void write_escaped(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
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
