/* SPDX-License-Identifier: Apache-2.0 */
/* A tiny streaming JSON writer (objects, arrays, strings, numbers, booleans, null) for
 * machine-readable reports such as `strata backends --json`. Output goes to a FILE. */
#ifndef STRATA_BACKEND_JSON_WRITER_H
#define STRATA_BACKEND_JSON_WRITER_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ST_JSON_MAX_DEPTH 32

typedef struct st_json_writer {
    FILE *f;
    int depth;
    int n_items[ST_JSON_MAX_DEPTH]; /* values written so far at each nesting level */
    int after_key;                  /* a key was written; its value comes next */
    int error;                      /* nonzero after misuse (too deep, unbalanced) */
} st_json_writer;

/* Start writing to `f` (borrowed). Values are pretty-printed with 2-space indents. */
void st_json_init(st_json_writer *w, FILE *f);
/* Containers. Inside an object every value must be preceded by st_json_key. */
void st_json_begin_object(st_json_writer *w);
void st_json_end_object(st_json_writer *w);
void st_json_begin_array(st_json_writer *w);
void st_json_end_array(st_json_writer *w);
void st_json_key(st_json_writer *w, const char *key);
/* Scalars. Strings are escaped (control characters as \u00XX); NULL writes null. Non-finite
 * doubles are written as null (JSON has no NaN/Inf). */
void st_json_string(st_json_writer *w, const char *s);
void st_json_int(st_json_writer *w, int64_t v);
void st_json_uint(st_json_writer *w, uint64_t v);
void st_json_double(st_json_writer *w, double v);
void st_json_bool(st_json_writer *w, int v);
void st_json_null(st_json_writer *w);
/* Finish the document with a newline. Returns 0, or -1 when containers were unbalanced. */
int st_json_finish(st_json_writer *w);

#ifdef __cplusplus
}
#endif
#endif
