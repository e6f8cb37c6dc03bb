/* SPDX-License-Identifier: Apache-2.0 */
/* JSON Schema to GBNF: one rule per schema node, named by its path. */
#include "grammar/json_schema.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char k_base[] =
    "space ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "string ::= \"\\\"\" char* \"\\\"\" space\n"
    "integer ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15}) space\n"
    "number ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? space\n"
    "boolean ::= (\"true\" | \"false\") space\n"
    "null ::= \"null\" space\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" space (string \":\" space value (\",\" space string \":\" space value)*)? \"}\" space\n"
    "array ::= \"[\" space (value (\",\" space value)*)? \"]\" space\n";

typedef struct out {
    char *p;
    size_t n, cap;
    int oom, fail, n_rules;
    const cJSON *root;
    char *err;
    size_t errlen;
    char refs[64][96]; /* $ref targets already given a rule */
    int n_refs;
    const char *prefix; /* of generated rule names, so several schemas share one grammar */
} out;

static void put(out *o, const char *s) {
    size_t l = strlen(s);
    if (o->oom) return;
    if (o->n + l + 1 > o->cap) {
        size_t cap = (o->n + l + 1) * 2;
        char *q = realloc(o->p, cap);
        if (!q) {
            o->oom = 1;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->n, s, l + 1);
    o->n += l;
}

__attribute__((format(printf, 3, 4))) static void sfail(out *o, const char *where, const char *fmt, ...) {
    if (o->fail) return;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(o->err, o->errlen, "%s%s%s", where[0] ? where : "", where[0] ? ": " : "", msg);
    o->fail = 1;
}

/* A GBNF literal matching the JSON text of v (e.g. "\"red\""). */
static void put_json_literal(out *o, const cJSON *v) {
    char *j = cJSON_PrintUnformatted(v);
    if (!j) {
        o->oom = 1;
        return;
    }
    put(o, "\"");
    for (const char *c = j; *c; c++) {
        char t[3] = {*c, 0, 0};
        if (*c == '"' || *c == '\\') t[0] = '\\', t[1] = *c;
        put(o, t);
    }
    put(o, "\"");
    cJSON_free(j);
}

static int new_rule(out *o, char *name, size_t n) { return snprintf(name, n, "%sr%d", o->prefix, o->n_rules++); }

static void node(out *o, const cJSON *s, const char *where, char *rule, size_t rn);

static void alternatives(out *o, const cJSON *list, const char *where, const char *kw, char *rule, size_t rn) {
    if (!cJSON_IsArray(list) || !cJSON_GetArraySize(list)) {
        sfail(o, where, "'%s' must be a non-empty array", kw);
        return;
    }
    char names[32][24], w[256];
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list) {
        if (n == 32) break;
        snprintf(w, sizeof w, "%s%s%s[%d]", where, where[0] ? "." : "", kw, n);
        node(o, e, w, names[n], sizeof names[n]);
        n++;
    }
    new_rule(o, rule, rn);
    put(o, rule);
    put(o, " ::= ");
    for (int i = 0; i < n; i++) {
        if (i) put(o, " | ");
        put(o, names[i]);
    }
    put(o, "\n");
}

/* Object with properties: R_n(i) (nothing written yet) and R_c(i) (a comma is needed). */
static void object_props(out *o, const cJSON *s, const cJSON *props, const char *where, char *rule, size_t rn) {
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required"), *p;
    int n = cJSON_GetArraySize(props);
    if (n > 64) n = 64;
    char kv[64][24], w[256];
    int required[64] = {0}, i = 0;
    cJSON_ArrayForEach(p, props) {
        if (i == n) break;
        const cJSON *r;
        cJSON_ArrayForEach(r, req) if (cJSON_IsString(r) && !strcmp(r->valuestring, p->string)) required[i] = 1;
        char val[24];
        snprintf(w, sizeof w, "%s%sproperties.%s", where, where[0] ? "." : "", p->string);
        node(o, p, w, val, sizeof val);
        new_rule(o, kv[i], sizeof kv[i]);
        cJSON *key = cJSON_CreateString(p->string);
        put(o, kv[i]);
        put(o, " ::= ");
        put_json_literal(o, key);
        cJSON_Delete(key);
        put(o, " space \":\" space ");
        put(o, val);
        put(o, "\n");
        i++;
    }
    int base = o->n_rules;
    o->n_rules += 2 * (n + 1);
    for (int k = n; k >= 0; k--) { /* rN_k = r{base+2k}, rC_k = r{base+2k+1} */
        char line[256];
        const char *P = o->prefix;
        if (k == n) snprintf(line, sizeof line, "%sr%d ::= \"\"\n%sr%d ::= \"\"\n", P, base + 2 * k, P, base + 2 * k + 1);
        else if (required[k])
            snprintf(line, sizeof line, "%sr%d ::= %s %sr%d\n%sr%d ::= \",\" space %s %sr%d\n", P, base + 2 * k, kv[k], P,
                     base + 2 * k + 3, P, base + 2 * k + 1, kv[k], P, base + 2 * k + 3);
        else
            snprintf(line, sizeof line, "%sr%d ::= %s %sr%d | %sr%d\n%sr%d ::= (\",\" space %s)? %sr%d\n", P, base + 2 * k, kv[k],
                     P, base + 2 * k + 3, P, base + 2 * k + 2, P, base + 2 * k + 1, kv[k], P, base + 2 * k + 3);
        put(o, line);
    }
    new_rule(o, rule, rn);
    char line[96];
    snprintf(line, sizeof line, "%s ::= \"{\" space %sr%d \"}\" space\n", rule, o->prefix, base);
    put(o, line);
}

static void typed(out *o, const cJSON *s, const char *type, const char *where, char *rule, size_t rn) {
    if (!strcmp(type, "string") || !strcmp(type, "number") || !strcmp(type, "integer") || !strcmp(type, "boolean") ||
        !strcmp(type, "null")) {
        snprintf(rule, rn, "%s", type);
        return;
    }
    if (!strcmp(type, "object")) {
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
        if (props && !cJSON_IsObject(props)) sfail(o, where, "'properties' must be an object");
        else if (props && cJSON_GetArraySize(props)) object_props(o, s, props, where, rule, rn);
        else snprintf(rule, rn, "object");
        return;
    }
    if (!strcmp(type, "array")) {
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
        if (!items) {
            snprintf(rule, rn, "array");
            return;
        }
        char it[24], w[256];
        snprintf(w, sizeof w, "%s%sitems", where, where[0] ? "." : "");
        node(o, items, w, it, sizeof it);
        new_rule(o, rule, rn);
        char line[160];
        snprintf(line, sizeof line, "%s ::= \"[\" space (%s (\",\" space %s)*)? \"]\" space\n", rule, it, it);
        put(o, line);
        return;
    }
    sfail(o, where, "unknown type '%s' (string, number, integer, boolean, null, object, array)", type);
}

static void ref(out *o, const char *target, const char *where, char *rule, size_t rn) {
    const char *name = !strncmp(target, "#/$defs/", 8) ? target + 8 : !strncmp(target, "#/definitions/", 14) ? target + 14 : NULL;
    if (!name) {
        sfail(o, where, "$ref '%s' is not supported (only #/$defs/NAME and #/definitions/NAME)", target);
        return;
    }
    for (int i = 0; i < o->n_refs; i++)
        if (!strcmp(o->refs[i], target)) {
            snprintf(rule, rn, "%sref%d", o->prefix, i);
            return;
        }
    const cJSON *defs = cJSON_GetObjectItemCaseSensitive(o->root, target[2] == '$' ? "$defs" : "definitions");
    const cJSON *d = defs ? cJSON_GetObjectItemCaseSensitive(defs, name) : NULL;
    if (!d || o->n_refs == 64) {
        sfail(o, where, "$ref '%s' does not resolve", target);
        return;
    }
    int id = o->n_refs++;
    snprintf(o->refs[id], sizeof o->refs[id], "%s", target);
    snprintf(rule, rn, "%sref%d", o->prefix, id);
    char body[40], line[96];
    node(o, d, target + 2, body, sizeof body);
    snprintf(line, sizeof line, "%sref%d ::= %s\n", o->prefix, id, body);
    put(o, line);
}

static void node(out *o, const cJSON *s, const char *where, char *rule, size_t rn) {
    snprintf(rule, rn, "value");
    if (o->fail || o->oom) return;
    if (cJSON_IsTrue(s) || (cJSON_IsObject(s) && !cJSON_GetArraySize(s))) return; /* anything */
    if (!cJSON_IsObject(s)) {
        sfail(o, where, "a schema must be an object");
        return;
    }
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(s, "$ref"), *e = cJSON_GetObjectItemCaseSensitive(s, "enum");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(s, "const"), *t = cJSON_GetObjectItemCaseSensitive(s, "type");
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
    if (!any) any = cJSON_GetObjectItemCaseSensitive(s, "oneOf");
    if (r) {
        if (!cJSON_IsString(r)) sfail(o, where, "'$ref' must be a string");
        else ref(o, r->valuestring, where, rule, rn);
    } else if (e || c) {
        if (e && (!cJSON_IsArray(e) || !cJSON_GetArraySize(e))) {
            sfail(o, where, "'enum' must be a non-empty array");
            return;
        }
        new_rule(o, rule, rn);
        put(o, rule);
        put(o, " ::= (");
        const cJSON *v;
        int i = 0;
        if (c) put_json_literal(o, c);
        else cJSON_ArrayForEach(v, e) {
                if (i++) put(o, " | ");
                put_json_literal(o, v);
            }
        put(o, ") space\n");
    } else if (any) {
        alternatives(o, any, where, cJSON_GetObjectItemCaseSensitive(s, "anyOf") ? "anyOf" : "oneOf", rule, rn);
    } else if (cJSON_IsString(t)) {
        typed(o, s, t->valuestring, where, rule, rn);
    } else if (cJSON_IsArray(t)) {
        char names[8][24];
        int n = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, t) {
            if (!cJSON_IsString(x) || n == 8) {
                sfail(o, where, "'type' must be a string or an array of strings");
                return;
            }
            typed(o, s, x->valuestring, where, names[n], sizeof names[n]);
            n++;
        }
        new_rule(o, rule, rn);
        put(o, rule);
        put(o, " ::= ");
        for (int i = 0; i < n; i++) {
            if (i) put(o, " | ");
            put(o, names[i]);
        }
        put(o, "\n");
    } else if (t) {
        sfail(o, where, "'type' must be a string or an array of strings");
    } else if (cJSON_GetObjectItemCaseSensitive(s, "properties")) {
        typed(o, s, "object", where, rule, rn);
    }
}

char *st_json_schema_rules(const cJSON *schema, const char *prefix, int with_base, char *top, size_t top_n, char *err,
                           size_t errlen) {
    out o = {.root = schema, .err = err, .errlen = errlen, .prefix = prefix ? prefix : ""};
    put(&o, with_base ? k_base : "");
    if (schema) node(&o, schema, "", top, top_n);
    else snprintf(top, top_n, "object");
    if (o.oom && !o.fail) snprintf(err, errlen, "out of memory");
    if (o.fail || o.oom) {
        free(o.p);
        return NULL;
    }
    return o.p;
}

char *st_json_schema_to_gbnf(const cJSON *schema, char *err, size_t errlen) {
    char top[40];
    char *rules = st_json_schema_rules(schema, "", 1, top, sizeof top, err, errlen);
    if (!rules) return NULL;
    size_t n = strlen(rules);
    char *g = realloc(rules, n + strlen(top) + 16);
    if (!g) {
        free(rules);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(g + n, strlen(top) + 16, "root ::= %s\n", top);
    return g;
}
