/* SPDX-License-Identifier: Apache-2.0 */
/* A Jinja2 template engine for chat templates: the subset published chat templates use
 * (text, {{ }}, {% %}, {# #}, whitespace control, trim_blocks and lstrip_blocks as Hugging
 * Face renders them; if/elif/else, for with loop.*, else and filters, break/continue, set
 * (plain, attribute, block), macro, call-free filter blocks, raw, generation; expressions with
 * Python-like semantics: slicing, string/list/dict methods, filters, tests, namespace(),
 * range(), raise_exception(), strftime_now()).
 *
 * Values passed in come from cJSON (the request's own JSON). Rendering allocates from a
 * per-render arena with a size cap, so a hostile template cannot take the process down.
 * Errors are values: a message with the template line and column. */
#ifndef STRATA_TEMPLATE_JINJA_H
#define STRATA_TEMPLATE_JINJA_H

#include <stddef.h>

typedef struct cJSON cJSON;
typedef struct st_jinja st_jinja;

/* Parse a template. NULL with err ("line 3, col 14: expected 'endif'") on a syntax error or
 * out of memory. */
st_jinja *st_jinja_parse(const char *src, char *err, size_t errlen);
void st_jinja_free(st_jinja *t);

/* Render with the variables of the object ctx (may be NULL). Returns a malloc'ed string, or
 * NULL with err: a raise_exception() message, a type error, or "output limit exceeded". */
char *st_jinja_render(const st_jinja *t, const cJSON *ctx, char *err, size_t errlen);

/* Fixed "now" for strftime_now() (seconds since the epoch, UTC), for reproducible renders;
 * 0 = the current time (the default). */
void st_jinja_set_time(st_jinja *t, long long epoch_seconds);

/* Most bytes one render may allocate (values, output); default 64 MiB. */
void st_jinja_set_limit(st_jinja *t, size_t bytes);

#endif
