/* SPDX-License-Identifier: Apache-2.0 */
/* Tokens of the Jinja lexer. */
#ifndef STRATA_TEMPLATE_JINJA_LEX_H
#define STRATA_TEMPLATE_JINJA_LEX_H

#include "template/jinja_int.h"

enum {
    JN_T_TEXT = 1, JN_T_VAR_BEGIN, JN_T_VAR_END, JN_T_BLOCK_BEGIN, JN_T_BLOCK_END,
    JN_T_NAME, JN_T_STR, JN_T_INT, JN_T_FLOAT, JN_T_OP, JN_T_EOF
};

typedef struct jn_tok {
    int kind;
    const char *p; /* text (strings: unescaped, NUL-terminated) */
    size_t n;
    int line, col;
} jn_tok;

/* Tokens of src into *out (arena memory); 0, or -1 with err ("line L, col C: ..."). */
int jn_lex(jn_arena *a, const char *src, jn_tok **out, size_t *nout, char *err, size_t errlen);

#endif
