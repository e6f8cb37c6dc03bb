/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the grammar engine: the compiled form shared by the parser and the matcher. */
#ifndef STRATA_GRAMMAR_INT_H
#define STRATA_GRAMMAR_INT_H

#include <stdint.h>

#include "grammar/grammar.h"

enum { GE_END = 0, GE_CHARS = 1, GE_RULE = 2, GE_TOKEN = 3 /* one vocabulary token by id, <[id]> */ };

typedef struct gelem {
    uint8_t type;
    uint32_t rule;    /* GE_RULE; GE_TOKEN: the token id */
    uint8_t set[32];  /* GE_CHARS: bit b set when byte b matches */
} gelem;

/* Rule r's alternatives are alt_start[rule_alt0[r] .. rule_alt0[r] + rule_nalt[r]); each
 * alternative is a run of elements in el[] ending with GE_END. */
struct st_grammar {
    gelem *el;
    uint32_t n_el;
    uint32_t *rule_alt0, *rule_nalt, n_rules;
    uint32_t *alt_start, n_alts;
    uint32_t root;
};

#endif
