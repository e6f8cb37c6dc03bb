/* SPDX-License-Identifier: Apache-2.0 */
/* JSON Schema (and OpenAI's json_object mode) to a GBNF grammar for constrained sampling.
 * Supported: type (string, number, integer, boolean, null, object, array, and lists of
 * types), properties with required (in the declared order; optional ones may be left out),
 * items, enum, const, anyOf/oneOf, $ref to #/$defs/... or #/definitions/... (recursion
 * allowed). Ignored (not enforced): pattern, format, minimum/maximum, minLength/maxLength,
 * minItems/maxItems, additionalProperties (no other properties are generated). */
#ifndef STRATA_GRAMMAR_JSON_SCHEMA_H
#define STRATA_GRAMMAR_JSON_SCHEMA_H

#include <stddef.h>

typedef struct cJSON cJSON;

/* GBNF for values of schema; schema NULL means any JSON object (json_object mode). Returns a
 * malloc'ed grammar, or NULL with err naming where the schema is wrong
 * ("properties.age.type: unknown type 'int'"). */
char *st_json_schema_to_gbnf(const cJSON *schema, char *err, size_t errlen);

/* The rules for schema without a root line, generated names starting with prefix, the common
 * rules (space, string, number, value, ...) first when with_base; *top gets the schema's rule
 * name. For grammars that hold several schemas (tool calls). */
char *st_json_schema_rules(const cJSON *schema, const char *prefix, int with_base, char *top, size_t top_n, char *err,
                           size_t errlen);

#endif
