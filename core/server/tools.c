/* SPDX-License-Identifier: Apache-2.0 */
/* Tool-call parsing of generated text (see tools.h for the syntaxes). */
#include "server/tools.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define DS_CALLS_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALLS_END "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"

static const char *const k_markers[] = {"<tool_call>", "[TOOL_CALLS]", DS_CALLS_BEGIN, DS_CALL_BEGIN,
                                        "<|channel|>", "<|start|>", NULL};

typedef struct sb {
    char *p;
    size_t n, cap;
    int oom;
} sb;

static void sb_put(sb *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static char *dup_n(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static const char *trim_l(const char *s, const char *e) {
    while (s < e && isspace((unsigned char)*s)) s++;
    return s;
}
static const char *trim_r(const char *s, const char *e) {
    while (e > s && isspace((unsigned char)e[-1])) e--;
    return e;
}

static const char *find_in(const char *s, const char *e, const char *needle) {
    size_t n = strlen(needle);
    for (const char *p = s; p + n <= e; p++)
        if (!memcmp(p, needle, n)) return p;
    return NULL;
}

static int add_call(st_tool_result *r, const char *name, size_t nn, char *args_json) {
    st_tool_call *c = realloc(r->calls, sizeof *c * (size_t)(r->n_calls + 1));
    if (!c) {
        free(args_json);
        return -1;
    }
    r->calls = c;
    c[r->n_calls].name = dup_n(name, nn);
    c[r->n_calls].arguments = args_json;
    if (!c[r->n_calls].name || !args_json) {
        free(c[r->n_calls].name);
        free(args_json);
        return -1;
    }
    r->n_calls++;
    return 0;
}

/* Compact JSON of the object in [s, e), or NULL when it is not one. */
static char *json_obj(const char *s, const char *e) {
    char *t = dup_n(s, (size_t)(e - s));
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    char *out = cJSON_IsObject(j) ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    free(t);
    return out;
}

/* {"name": N, "arguments"|"parameters": {...}} objects (one, or an array of them). */
static int calls_from_json(st_tool_result *r, const cJSON *j) {
    if (cJSON_IsArray(j)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, j) if (calls_from_json(r, e)) return -1;
        return 0;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(j, "arguments");
    if (!args) args = cJSON_GetObjectItemCaseSensitive(j, "parameters");
    if (!cJSON_IsString(name)) return -1;
    char *a = cJSON_IsString(args) ? strdup(args->valuestring) : args ? cJSON_PrintUnformatted(args) : strdup("{}");
    return add_call(r, name->valuestring, strlen(name->valuestring), a);
}

static int parse_json_calls(st_tool_result *r, const char *s, const char *e) {
    char *t = dup_n(s, (size_t)(e - s));
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    free(t);
    int rc = j ? calls_from_json(r, j) : -1;
    cJSON_Delete(j);
    return rc;
}

/* A parameter value: JSON when it reads as a number, boolean, null, object or array; else
 * the text as a string. */
static void add_param(cJSON *obj, const char *k, size_t kn, const char *v, const char *ve) {
    v = trim_l(v, ve);
    ve = trim_r(v, ve);
    char *key = dup_n(k, kn), *val = dup_n(v, (size_t)(ve - v));
    cJSON *j = val ? cJSON_Parse(val) : NULL;
    if (!j || cJSON_IsString(j)) {
        cJSON_Delete(j);
        j = cJSON_CreateString(val ? val : "");
    }
    if (key) cJSON_AddItemToObject(obj, key, j);
    else cJSON_Delete(j);
    free(key);
    free(val);
}

/* Qwen3-Coder <function=NAME><parameter=K>V</parameter>... and GLM NAME<arg_key>K</arg_key><arg_value>V</arg_value>... */
static int parse_xml_call(st_tool_result *r, const char *s, const char *e) {
    cJSON *args = cJSON_CreateObject();
    const char *name, *name_end, *p;
    int coder = find_in(s, e, "<function=") != NULL;
    if (coder) {
        name = find_in(s, e, "<function=") + 10;
        name_end = find_in(name, e, ">");
        if (!name_end) goto fail;
        for (p = name_end; (p = find_in(p, e, "<parameter=")) != NULL;) {
            const char *k = p + 11, *ke = find_in(k, e, ">"), *ve = ke ? find_in(ke, e, "</parameter>") : NULL;
            if (!ve) goto fail;
            add_param(args, k, (size_t)(ke - k), ke + 1, ve);
            p = ve + 12;
        }
    } else {
        name = trim_l(s, e);
        name_end = find_in(name, e, "<arg_key>");
        name_end = trim_r(name, name_end ? name_end : e);
        for (p = name_end; (p = find_in(p, e, "<arg_key>")) != NULL;) {
            const char *k = p + 9, *ke = find_in(k, e, "</arg_key>");
            const char *v = ke ? find_in(ke, e, "<arg_value>") : NULL, *ve = v ? find_in(v, e, "</arg_value>") : NULL;
            if (!ve) goto fail;
            add_param(args, k, (size_t)(ke - k), v + 11, ve);
            p = ve + 12;
        }
    }
    if (name_end <= name) goto fail;
    char *a = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    return add_call(r, name, (size_t)(name_end - name), a);
fail:
    cJSON_Delete(args);
    return -1;
}

/* <tool_call>BODY</tool_call> at s: the end of it, or NULL when broken. */
static const char *parse_tool_call_tag(st_tool_result *r, const char *s, const char *e) {
    const char *b = s + 11, *end = find_in(b, e, "</tool_call>");
    if (!end) return NULL;
    const char *bs = trim_l(b, end), *be = trim_r(bs, end);
    int ok = bs < be && *bs == '{' ? parse_json_calls(r, bs, be) == 0 : parse_xml_call(r, bs, be) == 0;
    return ok ? end + 12 : NULL;
}

/* [TOOL_CALLS] followed by a JSON array, or NAME[ARGS]{...} (repeated). */
static const char *parse_mistral(st_tool_result *r, const char *s, const char *e) {
    const char *b = trim_l(s + 12, e);
    if (b < e && *b == '[') {
        const char *be = trim_r(b, e);
        return parse_json_calls(r, b, be) == 0 ? be : NULL;
    }
    const char *p = b;
    while (p < e) {
        const char *args = find_in(p, e, "[ARGS]");
        if (!args) return p == b ? NULL : p;
        const char *next = find_in(args, e, "[TOOL_CALLS]");
        const char *ae = trim_r(args + 6, next ? next : e);
        char *a = json_obj(trim_l(args + 6, ae), ae);
        if (!a || add_call(r, p, (size_t)(args - p), a)) return NULL;
        p = next ? trim_l(next + 12, e) : e;
    }
    return e;
}

/* DeepSeek: <｜tool▁call▁begin｜>[function<｜tool▁sep｜>NAME\n```json\nARGS\n```|NAME<｜tool▁sep｜>ARGS]<｜tool▁call▁end｜> */
static const char *parse_deepseek(st_tool_result *r, const char *s, const char *e) {
    const char *p = s, *last = NULL;
    while ((p = find_in(p, e, DS_CALL_BEGIN)) != NULL) {
        const char *b = p + strlen(DS_CALL_BEGIN), *end = find_in(b, e, DS_CALL_END), *sep = find_in(b, e, DS_SEP);
        if (!end || !sep || sep > end) return NULL;
        const char *after = sep + strlen(DS_SEP), *name = b, *name_end = sep, *as = after, *ae = end;
        const char *fence = find_in(after, end, "```json");
        if (fence) { /* V3: the type before the separator, the name and a fenced block after */
            name = trim_l(after, fence);
            name_end = trim_r(name, fence);
            as = fence + 7;
            const char *close = find_in(as, end, "```");
            ae = close ? close : end;
        }
        ae = trim_r(as, ae);
        char *a = json_obj(trim_l(as, ae), ae);
        if (!a || add_call(r, name, (size_t)(name_end - name), a)) return NULL;
        p = last = end + strlen(DS_CALL_END);
    }
    if (!last) return NULL;
    const char *ce = find_in(last, e, DS_CALLS_END);
    return ce ? ce + strlen(DS_CALLS_END) : last;
}

/* Llama 3.x: the whole answer is {"name": ..., "parameters": {...}} (maybe after <|python_tag|>,
 * several separated by ";"). Taken as calls only when every part parses as one; then *cs moves
 * past them. -1 when out of memory. */
static int bare_json_call(st_tool_result *r, const char **cs, const char *ce) {
    const char *s = *cs;
    if ((size_t)(ce - s) > 14 && !memcmp(s, "<|python_tag|>", 14)) s = trim_l(s + 14, ce);
    if (s >= ce || *s != '{' || ce[-1] != '}') return 0;
    char *t = dup_n(s, (size_t)(ce - s));
    if (!t) return -1;
    int ok = 1, n0 = r->n_calls;
    for (char *part = t, *next; part && ok; part = next) {
        next = strstr(part, "};");
        if (next) next[1] = 0, next += 2;
        cJSON *j = cJSON_Parse(part);
        const cJSON *name = j ? cJSON_GetObjectItemCaseSensitive(j, "name") : NULL;
        ok = cJSON_IsString(name) && (cJSON_HasObjectItem(j, "parameters") || cJSON_HasObjectItem(j, "arguments")) &&
             calls_from_json(r, j) == 0;
        cJSON_Delete(j);
    }
    free(t);
    if (!ok) { /* not calls after all: the text stays content */
        for (int i = n0; i < r->n_calls; i++) {
            free(r->calls[i].name);
            free(r->calls[i].arguments);
        }
        r->n_calls = n0;
        return 0;
    }
    *cs = ce;
    return 0;
}

int st_tools_is_harmony(const char *text) { return strstr(text, "<|channel|>") != NULL; }

/* The end of a harmony message body at b: <|end|>, <|call|>, <|return|> or the next <|start|>. */
static const char *harmony_body_end(const char *b, const char *e) {
    static const char *const ends[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>", "<|channel|>", NULL};
    const char *best = e;
    for (int i = 0; ends[i]; i++) {
        const char *f = find_in(b, best, ends[i]);
        if (f) best = f;
    }
    return best;
}

static int parse_harmony(const char *text, st_tool_result *r, sb *content, sb *reasoning) {
    const char *e = text + strlen(text), *p = text;
    while ((p = find_in(p, e, "<|channel|>")) != NULL) {
        const char *h = p + 11, *msg = find_in(h, e, "<|message|>");
        if (!msg) break;
        const char *b = msg + 11, *be = harmony_body_end(b, e);
        const char *to = find_in(h, msg, "to=functions.");
        if (to) {
            const char *n = to + 13, *ne = n;
            while (ne < msg && !isspace((unsigned char)*ne) && *ne != '<') ne++;
            const char *bs = trim_l(b, be), *bend = trim_r(bs, be);
            char *a = json_obj(bs, bend);
            if (!a) a = strdup("{}");
            if (add_call(r, n, (size_t)(ne - n), a)) return -1;
        } else if (!strncmp(h, "analysis", 8)) {
            sb_put(reasoning, b, (size_t)(be - b));
        } else {
            sb_put(content, b, (size_t)(be - b));
        }
        p = be;
    }
    return 0;
}

static const char *earliest_marker(const char *s, const char *e, int *which) {
    const char *best = NULL;
    for (int i = 0; i < 4; i++) {
        const char *f = find_in(s, best ? best : e, k_markers[i]);
        if (f && (!best || f < best)) {
            best = f;
            *which = i;
        }
    }
    return best;
}

int st_tools_parse(const char *text, st_tool_result *out) {
    memset(out, 0, sizeof *out);
    sb content = {0}, reasoning = {0};
    sb_put(&content, "", 0);
    if (st_tools_is_harmony(text)) {
        if (parse_harmony(text, out, &content, &reasoning)) goto fail;
    } else {
        const char *s = text, *e = text + strlen(text);
        int which = 0;
        while (s < e) {
            const char *m = earliest_marker(s, e, &which);
            if (!m) {
                sb_put(&content, s, (size_t)(e - s));
                break;
            }
            sb_put(&content, s, (size_t)(m - s));
            const char *next = which == 0 ? parse_tool_call_tag(out, m, e) : which == 1 ? parse_mistral(out, m, e)
                                                                                    : parse_deepseek(out, m, e);
            if (!next) { /* broken (cut off): the rest is text */
                sb_put(&content, m, (size_t)(e - m));
                break;
            }
            s = next;
        }
    }
    if (content.oom || reasoning.oom) goto fail;
    const char *cs = trim_l(content.p, content.p + content.n), *ce = trim_r(cs, content.p + content.n);
    if (!out->n_calls && bare_json_call(out, &cs, ce)) goto fail;
    out->content = dup_n(cs, (size_t)(ce - cs));
    if (reasoning.p) {
        const char *rs = trim_l(reasoning.p, reasoning.p + reasoning.n), *re = trim_r(rs, reasoning.p + reasoning.n);
        if (!(out->reasoning = dup_n(rs, (size_t)(re - rs)))) goto fail;
    }
    if (!out->content) goto fail;
    free(content.p);
    free(reasoning.p);
    return 0;
fail:
    free(content.p);
    free(reasoning.p);
    st_tool_result_free(out);
    return -1;
}

void st_tool_result_free(st_tool_result *r) {
    for (int i = 0; i < r->n_calls; i++) {
        free(r->calls[i].name);
        free(r->calls[i].arguments);
    }
    free(r->calls);
    free(r->content);
    free(r->reasoning);
    memset(r, 0, sizeof *r);
}

size_t st_tools_safe_prefix(const char *text, size_t n) {
    size_t safe = n;
    for (int i = 0; k_markers[i]; i++) {
        size_t ml = strlen(k_markers[i]);
        for (size_t at = 0; at < safe; at++) {
            size_t k = n - at < ml ? n - at : ml; /* a whole marker, or a marker's prefix at the end */
            if (!memcmp(text + at, k_markers[i], k)) {
                safe = at;
                break;
            }
        }
    }
    return safe;
}
