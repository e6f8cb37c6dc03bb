/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the Jinja engine shared by its files: the arena, values, the syntax tree. */
#ifndef STRATA_TEMPLATE_JINJA_INT_H
#define STRATA_TEMPLATE_JINJA_INT_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "template/jinja.h"

/* ---- arena: every render allocation; freed at once ------------------------------------ */
typedef struct jn_arena {
    struct jn_chunk *head;
    size_t used, limit;
    jmp_buf *oom; /* longjmp target when the limit is hit or malloc fails */
} jn_arena;

void *jn_alloc(jn_arena *a, size_t n);
void jn_arena_free(jn_arena *a);

/* ---- values ----------------------------------------------------------------------------- */
typedef enum {
    JV_UNDEF = 0, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_FUNC
} jv_type;

typedef struct jv jv;
typedef struct jn_list jn_list;
typedef struct jn_dict jn_dict;
typedef struct jn_func jn_func;

struct jv {
    jv_type t;
    int ns; /* JV_DICT: a namespace() (attributes may be set) */
    union {
        int b;
        int64_t i;
        double f;
        struct {
            const char *p;
            size_t n;
        } s;
        jn_list *l;
        jn_dict *d;
        jn_func *fn;
    } u;
};

struct jn_list {
    jv *v;
    size_t n, cap;
};

struct jn_dict {
    jv *k, *v; /* keys are strings (or ints) */
    size_t n, cap;
};

typedef struct jn_ctx jn_ctx;
typedef struct jn_node jn_node;

typedef struct jn_args {
    jv *pos;
    size_t npos;
    const char **kname;
    jv *kval;
    size_t nkw;
} jn_args;

typedef jv (*jn_native)(jn_ctx *c, const jn_func *f, const jn_args *a, const jn_node *at);

struct jn_func {
    jn_native native; /* builtin or bound method */
    jv self;
    const char *name; /* the method's name */
    const jn_node *macro; /* a macro definition */
    struct jn_scope *closure;
};

jv jv_undef(void);
jv jv_none(void);
jv jv_bool(int b);
jv jv_int(int64_t i);
jv jv_float(double f);
jv jv_str(jn_arena *a, const char *p, size_t n); /* copies */
jv jv_cstr(const char *static_text);             /* borrows static storage */
jv jv_list(jn_arena *a);
jv jv_dict(jn_arena *a);
void jn_list_push(jn_arena *a, jn_list *l, jv v);
void jn_dict_set(jn_arena *a, jn_dict *d, jv k, jv v);
jv *jn_dict_get(const jn_dict *d, const char *k, size_t n);
int jv_truthy(jv v);
int jv_equal(jv a, jv b);
/* -1, 0, 1; *ok = 0 when the types cannot be ordered */
int jv_compare(jv a, jv b, int *ok);
const char *jv_type_name(jv v);
jv jv_from_cjson(jn_arena *a, const cJSON *j);

/* ---- growable output text ---------------------------------------------------------------- */
typedef struct jn_buf {
    char *p;
    size_t n, cap;
    jn_arena *a;
} jn_buf;

void jn_buf_put(jn_buf *b, const char *s, size_t n);
void jn_buf_puts(jn_buf *b, const char *s);
/* str(v) as Python prints it inside Jinja ({{ v }}): None -> "None", True -> "True" */
void jv_write_str(jn_buf *b, jv v);
/* tojson: Python's json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) */
void jv_write_json(jn_buf *b, jv v, int indent, int depth, const char *item_sep, const char *key_sep, int sort_keys);
jv jv_to_string(jn_arena *a, jv v);

/* ---- syntax tree -------------------------------------------------------------------------- */
typedef enum {
    /* statements */
    JN_TEXT, JN_OUTPUT, JN_IF, JN_FOR, JN_SET, JN_SET_BLOCK, JN_MACRO, JN_BREAK, JN_CONTINUE, JN_BLOCK,
    JN_FILTER_BLOCK, JN_CALL_BLOCK,
    /* expressions */
    JN_LIT, JN_NAME, JN_ATTR, JN_INDEX, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST, JN_UNARY, JN_BINARY,
    JN_AND, JN_OR, JN_NOT, JN_COND, JN_LIST, JN_DICT, JN_TUPLE
} jn_kind;

struct jn_node {
    jn_kind k;
    int line, col;
    int op;           /* operator token for UNARY/BINARY; negate for TEST */
    const char *name; /* NAME, ATTR, FILTER, TEST, MACRO; SET target name */
    size_t name_n;
    jv lit;           /* LIT; TEXT (string) */
    jn_node *a, *b, *c; /* operands; IF: cond, then, else; FOR: iter, body, else; SLICE: obj,start,stop + d step */
    jn_node *d;       /* FOR: filter condition; SLICE: step; SET: attribute target object */
    jn_node **kids;   /* BLOCK statements; CALL/FILTER/TEST args; LIST/TUPLE items; DICT k,v pairs */
    size_t n_kids;
    const char **knames; /* CALL/FILTER/TEST/MACRO: keyword names per kid (NULL = positional) */
    const char **vars;   /* FOR/SET: target names (tuple unpacking) */
    size_t n_vars;
};

struct st_jinja {
    jn_arena ast; /* nodes and literals */
    jn_node *root;
    size_t limit;
    long long now; /* 0 = current time */
    char *src;
};

/* Parse into t->root; 0, or -1 with err. */
int jn_parse(st_jinja *t, char *err, size_t errlen);

/* ---- evaluation -------------------------------------------------------------------------- */
typedef struct jn_scope {
    struct jn_scope *parent;
    jn_dict vars;
} jn_scope;

struct jn_ctx {
    jn_arena *a;
    jn_scope *globals;
    jmp_buf fail;
    char *err;
    size_t errlen;
    int brk; /* 1 break, 2 continue pending */
    long long now; /* strftime_now's time; 0 = current */
};

/* Fail the render with a message at a node's position (longjmp). */
_Noreturn void jn_fail(jn_ctx *c, const jn_node *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
jv jn_eval(jn_ctx *c, jn_scope *s, const jn_node *n);
jv jn_call_value(jn_ctx *c, jv f, const jn_args *a, const jn_node *at);
jv jn_getattr(jn_ctx *c, jv obj, const char *name, size_t n, const jn_node *at);
jv jn_getitem(jn_ctx *c, jv obj, jv key, const jn_node *at);

/* builtins (jinja_builtins.c) */
jv jn_filter(jn_ctx *c, const char *name, jv v, const jn_args *a, const jn_node *at);
int jn_test(jn_ctx *c, const char *name, jv v, const jn_args *a, const jn_node *at);
/* A bound method of a string/list/dict, or undefined. */
jv jn_method(jn_ctx *c, jv obj, const char *name, size_t n);
/* A global function (range, namespace, raise_exception, strftime_now, dict), or undefined. */
jv jn_global(const char *name, size_t n);
/* Python's "fmt % args" (%s, %d, %i, %f, %r, %%); args is one value or a list. */
jv jn_format_percent(jn_ctx *c, jv fmt, jv args, const jn_node *at);
jv jn_strip(jn_ctx *c, jv v, jv chars, int sides); /* sides: 1 left, 2 right, 3 both */
jv jn_replace(jn_ctx *c, jv v, jv from, jv to, int64_t count);
jv jn_arg(const jn_args *a, size_t pos, const char *kw); /* positional i or keyword kw, else undef */
/* Iterate: a list for lists, strings (chars), dicts (keys); undefined/none is empty. */
jn_list *jn_iterable(jn_ctx *c, jv v, const jn_node *at);

#endif
