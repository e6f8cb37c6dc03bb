/* SPDX-License-Identifier: Apache-2.0 */
/* grammar.gbnf / grammar.schema / grammar.mask: the GBNF engine (core/grammar) accepts and
 * rejects text as its grammar says, errors name the place, JSON Schemas become grammars that
 * accept exactly the documents they describe, and token masks match per-token checks. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/check.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"

static int g_fail;

static int matches(const st_grammar *g, const char *s) {
    st_gmatch *m = st_gmatch_new(g);
    int ok = m && st_gmatch_accept(m, s, strlen(s)) == 0 && st_gmatch_can_end(m);
    st_gmatch_free(m);
    return ok;
}

static void gbnf_cases(void) {
    char err[256];
    st_grammar *g = st_grammar_parse("root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\n"
                                     "term ::= [0-9]+ | \"(\" expr \")\"   # numbers and groups\n", err, sizeof err);
    CHECK(g, "grammar.gbnf arithmetic: %s", err);
    if (g) {
        CHECK(matches(g, "1+(23-4)"), "grammar.gbnf: 1+(23-4) must match");
        CHECK(!matches(g, "1+"), "grammar.gbnf: 1+ is incomplete");
        CHECK(!matches(g, "1+a"), "grammar.gbnf: 1+a must not match");
        st_gmatch *m = st_gmatch_new(g);
        CHECK(m && st_gmatch_accept(m, "(1", 2) == 0 && !st_gmatch_can_end(m) && st_gmatch_accept(m, "x", 1) < 0 &&
                  st_gmatch_accept(m, ")", 1) == 0 && st_gmatch_can_end(m),
              "grammar.gbnf: step by step, a rejected byte leaves the state as it was");
        st_gmatch_free(m);
        st_grammar_free(g);
    }
    g = st_grammar_parse("root ::= \"ab\"{2,3} [^x]? \"\\u00e9\"\n", err, sizeof err);
    CHECK(g && matches(g, "ababy\xc3\xa9") && matches(g, "ababab\xc3\xa9") && !matches(g, "ab\xc3\xa9") && !matches(g, "ababx\xc3\xa9"),
          "grammar.gbnf: repetitions, negated class, \\u escape (%s)", g ? "" : err);
    st_grammar_free(g);
    static const struct {
        const char *src, *err;
    } bad[] = {
        {"root ::= value\n", "line 1, col 10: undefined rule 'value'"},
        {"root ::= \"a\" |\n  [b-a]\n", "line 2, col 3: empty range"},
        {"root ::= x\nx ::= x \"a\" | \"b\"\n", "rule 'x' is left-recursive"},
        {"item ::= \"a\"\n", "no 'root' rule"},
        {"root ::= \"abc\n", "line 1, col 10: unterminated literal"},
        {"root ::= [\xc3\xa9]\n", "non-ASCII"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st_grammar *b = st_grammar_parse(bad[i].src, err, sizeof err);
        CHECK(!b && strstr(err, bad[i].err), "grammar.gbnf error %zu: want [%s], got [%s]", i, bad[i].err, b ? "(parsed)" : err);
        st_grammar_free(b);
    }
}

static st_grammar *schema_grammar(const char *schema_json) {
    char err[256];
    cJSON *s = schema_json ? cJSON_Parse(schema_json) : NULL;
    char *gbnf = st_json_schema_to_gbnf(s, err, sizeof err);
    cJSON_Delete(s);
    st_grammar *g = gbnf ? st_grammar_parse(gbnf, err, sizeof err) : NULL;
    CHECK(g, "grammar.schema: %s", err);
    free(gbnf);
    return g;
}

static void schema_cases(void) {
    st_grammar *g = schema_grammar(NULL); /* json_object */
    CHECK(g && matches(g, "{\"a\": [1, 2.5e3, true, null, \"x\\n\"], \"b\": {}}") && !matches(g, "[1]") &&
              !matches(g, "{\"a\": tru}") && matches(g, "{ }"),
          "grammar.schema json_object: objects only, any JSON inside");
    st_grammar_free(g);
    g = schema_grammar("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"},"
                       "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]}},\"nick\":{\"type\":[\"string\",\"null\"]}},"
                       "\"required\":[\"name\",\"age\"]}");
    if (g) {
        CHECK(matches(g, "{\"name\": \"Ann\", \"age\": 31}"), "grammar.schema: required only");
        CHECK(matches(g, "{\"name\": \"Ann\", \"age\": -3, \"tags\": [\"a\", \"b\"], \"nick\": null}"), "grammar.schema: all");
        CHECK(matches(g, "{\"name\": \"Ann\", \"age\": 3, \"nick\": \"x\"}"), "grammar.schema: an optional one skipped");
        CHECK(!matches(g, "{\"age\": 31}"), "grammar.schema: a missing required property must fail");
        CHECK(!matches(g, "{\"name\": \"Ann\", \"age\": 3.5}"), "grammar.schema: integer");
        CHECK(!matches(g, "{\"name\": \"Ann\", \"age\": 3, \"tags\": [\"c\"]}"), "grammar.schema: enum");
        CHECK(!matches(g, "{\"name\": \"Ann\", \"age\": 3, \"extra\": 1}"), "grammar.schema: no other properties");
        st_grammar_free(g);
    }
    g = schema_grammar("{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}}}},"
                       "\"$ref\":\"#/$defs/node\"}");
    CHECK(g && matches(g, "{\"kids\": [{\"kids\": []}, {}]}") && !matches(g, "{\"kids\": [1]}"), "grammar.schema: recursive $ref");
    st_grammar_free(g);
    char err[256];
    cJSON *s = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"age\":{\"type\":\"int\"}}}");
    char *gb = st_json_schema_to_gbnf(s, err, sizeof err);
    CHECK(!gb && strstr(err, "properties.age: unknown type 'int'"), "grammar.schema error: %s", gb ? "(converted)" : err);
    free(gb);
    cJSON_Delete(s);
}

/* The trie mask equals one check per token. */
static void mask_cases(void) {
    const char *texts[] = {"{", "\"", "a", "}", " ", "{\"", "\"a", "ab", "", "<eos>", "\xc3\xa9", "{}"};
    uint8_t eog[12] = {0};
    eog[9] = 1;
    int32_t n = 12;
    char err[256];
    st_gvocab *v = st_gvocab_new(texts, NULL, eog, n);
    st_grammar *g = st_grammar_parse("root ::= \"{\" (\"\\\"\" ([a-z] | \"\\u00e9\")* \"\\\"\")? \"}\"\n", err, sizeof err);
    CHECK(v && g, "grammar.mask: setup %s", err);
    if (!v || !g) goto done;
    st_gmatch *m = st_gmatch_new(g);
    const char *steps[] = {"", "{", "\"a", "\"}", NULL}; /* fed one after the other */
    for (int k = 0; steps[k]; k++) {
        CHECK(st_gmatch_accept(m, steps[k], strlen(steps[k])) == 0 || !steps[k][0], "grammar.mask: step %d", k);
        uint8_t allowed[12];
        int32_t cnt = st_gmatch_mask(m, v, allowed), want = 0;
        for (int32_t t = 0; t < n; t++) {
            int ok = st_gmatch_token_ok(m, v, t);
            want += ok;
            CHECK(allowed[t] == ok, "grammar.mask step %d token '%s': mask %d, check %d", k, texts[t], allowed[t], ok);
        }
        CHECK(cnt == want, "grammar.mask step %d: count %d, want %d", k, cnt, want);
    }
    CHECK(st_gmatch_token_ok(m, v, 9), "grammar.mask: end of generation allowed at the end");
    st_gmatch_free(m);
done:
    st_grammar_free(g);
    st_gvocab_free(v);
}

/* Every prefix of a generated grammar, with a byte flipped or not: compiled, or refused with a
 * message; never a crash. */
static void mutation_cases(void) {
    char err[256];
    cJSON *s = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"a\":{\"enum\":[\"x\",1]},\"b\":{\"type\":\"array\",\"items\":{\"type\":\"number\"}}}}");
    char *g = st_json_schema_to_gbnf(s, err, sizeof err);
    cJSON_Delete(s);
    size_t len = g ? strlen(g) : 0, ok = 0, bad = 0;
    char *buf = malloc(len + 1);
    for (size_t cut = 0; buf && cut <= len; cut += 3) {
        for (int flip = 0; flip < 2; flip++) {
            memcpy(buf, g, cut);
            buf[cut] = 0;
            if (flip && cut) buf[cut - 1] = "[](){}|*+?\"\\:="[cut % 14];
            st_grammar *c = st_grammar_parse(buf, err, sizeof err);
            if (c) {
                st_gmatch *m = st_gmatch_new(c);
                if (m) st_gmatch_accept(m, "{\"a\": 1}", 8);
                st_gmatch_free(m);
                ok++;
            } else bad++;
            st_grammar_free(c);
        }
    }
    CHECK(ok > 0 && bad > 0, "grammar.engine mutations: %zu compiled, %zu refused", ok, bad);
    free(buf);
    free(g);
}

/* ---- grammar.bounds: pathological grammars fail with a message within a time limit ---------- */
/* CPU time of this (single-threaded) test: the bounds are on work, whatever the machine's load. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A chain of $defs, each anyOf three times the next: 3^depth parses of one string. */
static char *chain_schema(int depth) {
    char *s = malloc(128 + (size_t)depth * 160), *p = s;
    p += sprintf(p, "{\"$ref\":\"#/$defs/d0\",\"$defs\":{");
    for (int i = 0; i < depth; i++)
        p += sprintf(p, "\"d%d\":{\"anyOf\":[{\"$ref\":\"#/$defs/d%d\"},{\"$ref\":\"#/$defs/d%d\"},{\"$ref\":\"#/$defs/d%d\"}]},",
                     i, i + 1, i + 1, i + 1);
    sprintf(p, "\"d%d\":{\"type\":\"string\"}}}", depth);
    return s;
}

/* GBNF: "s" then a chain of rules, each three alternatives of the next, ending in [lo-hi] and
 * back to the chain's start (the start set is cheap; every byte after "s" pays 3^depth). */
static char *chain_gbnf(int depth, const char *cls) {
    char *s = malloc(64 + (size_t)depth * 48), *p = s;
    p += sprintf(p, "root ::= \"s\" d0\n");
    for (int i = 0; i < depth; i++) p += sprintf(p, "d%d ::= d%d | d%d | d%d\n", i, i + 1, i + 1, i + 1);
    sprintf(p, "d%d ::= %s d0?\n", depth, cls);
    return s;
}

static void bound_cases(void) {
    char err[256] = "";
    /* a schema whose parses multiply: refused at the start, with the reason */
    char *js = chain_schema(25);
    cJSON *sc = cJSON_Parse(js);
    char *gb = st_json_schema_to_gbnf(sc, err, sizeof err);
    CHECK(gb, "grammar.bounds: the chain schema converts: %s", err);
    double t0 = now_s();
    st_grammar *g = gb ? st_grammar_parse(gb, err, sizeof err) : NULL;
    int rc = g ? st_grammar_check(g, err, sizeof err) : 0;
    double dt = now_s() - t0;
    CHECK(g && rc == -1 && strstr(err, "too ambiguous"), "grammar.bounds schema: check %d, '%s'", rc, err);
    CHECK(g && !st_gmatch_new(g), "grammar.bounds schema: no matcher starts");
    CHECK(dt < 2.0, "grammar.bounds schema: refused after %.2f s (bound 2 s)", dt);
    printf("grammar.bounds: schema refused after %.3f s of CPU\n", dt);
    st_grammar_free(g);
    free(gb);
    cJSON_Delete(sc);
    free(js);
    /* the same at depth 5 is fine: the bound is not met by ordinary alternatives */
    js = chain_schema(5);
    sc = cJSON_Parse(js);
    gb = st_json_schema_to_gbnf(sc, err, sizeof err);
    g = gb ? st_grammar_parse(gb, err, sizeof err) : NULL;
    CHECK(g && st_grammar_check(g, err, sizeof err) == 0 && matches(g, "\"ok\""), "grammar.bounds: depth 5 matches: %s", err);
    st_grammar_free(g);
    free(gb);
    cJSON_Delete(sc);
    free(js);
    /* starts fine, then one byte costs 3^20 expansions: the advance fails and says why */
    char *text = chain_gbnf(20, "[a-z]");
    g = st_grammar_parse(text, err, sizeof err);
    st_gmatch *m = g ? st_gmatch_new(g) : NULL;
    t0 = now_s();
    int acc = m ? st_gmatch_accept(m, "s", 1) : 0;
    dt = now_s() - t0;
    CHECK(m && acc == -1 && st_gmatch_error(m) && strstr(st_gmatch_error(m), "65536"), "grammar.bounds advance: %d '%s'", acc,
          m && st_gmatch_error(m) ? st_gmatch_error(m) : "(none)");
    CHECK(dt < 1.0, "grammar.bounds advance: %.2f s (bound 1 s)", dt);
    printf("grammar.bounds: advance refused after %.3f s of CPU\n", dt);
    st_gmatch_free(m);
    st_grammar_free(g);
    free(text);
    /* each byte within the per-byte bound (3^9), but a mask over 255 one-byte tokens needs more
     * than the mask's: the mask is -1 and says why; a token check still works */
    text = chain_gbnf(9, "[^\\x00]");
    g = st_grammar_parse(text, err, sizeof err);
    CHECK(g, "grammar.bounds mask grammar: %s", err);
    char texts[256][2];
    const char *tp[256];
    for (int i = 0; i < 256; i++) texts[i][0] = (char)i, texts[i][1] = 0, tp[i] = texts[i];
    size_t lens[256];
    for (int i = 0; i < 256; i++) lens[i] = i ? 1 : 0;
    st_gvocab *v = st_gvocab_new(tp, lens, NULL, 256);
    m = g ? st_gmatch_new(g) : NULL;
    uint8_t allowed[256];
    if (m && v && st_gmatch_accept(m, "s", 1) == 0) {
        CHECK(st_gmatch_token_ok(m, v, 'q'), "grammar.bounds mask: one token's check passes");
        t0 = now_s();
        int32_t n = st_gmatch_mask(m, v, allowed);
        dt = now_s() - t0;
        CHECK(n == -1 && st_gmatch_error(m) && strstr(st_gmatch_error(m), "4194304"), "grammar.bounds mask: %d '%s'", n,
              st_gmatch_error(m) ? st_gmatch_error(m) : "(none)");
        CHECK(dt < 5.0, "grammar.bounds mask: %.2f s (bound 5 s)", dt);
        printf("grammar.bounds: mask refused after %.3f s of CPU\n", dt);
    } else {
        CHECK(0, "grammar.bounds mask: the matcher starts and takes 's'");
    }
    st_gmatch_free(m);
    st_gvocab_free(v);
    st_grammar_free(g);
    free(text);
}

/* grammar.tokens: <[id]> names one token (a control token without text): the mask allows it
 * exactly where the grammar names it, and text tokens never stand in for it. */
static void token_cases(void) {
    char err[256];
    static char texts[310][2];
    const char *tp[310];
    size_t lens[310];
    for (int i = 0; i < 310; i++) {
        texts[i][0] = (char)(i < 256 ? i : 0);
        tp[i] = texts[i];
        lens[i] = i > 0 && i < 256; /* 256..309: control tokens, no text */
    }
    st_gvocab *v = st_gvocab_new(tp, lens, NULL, 310);
    st_grammar *g = st_grammar_parse("root ::= <[300]> \"ab\" (<[301]> | \"c\")\n", err, sizeof err);
    CHECK(g && v, "grammar.tokens: compiles: %s", err);
    st_gmatch *m = g ? st_gmatch_new(g) : NULL;
    uint8_t allowed[310];
    if (m && v) {
        CHECK(st_gmatch_mask(m, v, allowed) == 1 && allowed[300], "grammar.tokens: only <[300]> at the start");
        CHECK(!st_gmatch_token_ok(m, v, 301) && !st_gmatch_token_ok(m, v, 'a'), "grammar.tokens: others refused");
        CHECK(st_gmatch_accept_token(m, v, 300) == 0 && st_gmatch_accept_token(m, v, 'a') == 0 &&
                  st_gmatch_accept_token(m, v, 'b') == 0,
              "grammar.tokens: <[300]> a b accepted");
        CHECK(st_gmatch_mask(m, v, allowed) == 2 && allowed[301] && allowed['c'], "grammar.tokens: <[301]> or c next");
        CHECK(!st_gmatch_can_end(m) && st_gmatch_accept_token(m, v, 301) == 0 && st_gmatch_can_end(m),
              "grammar.tokens: <[301]> ends it");
    }
    st_gmatch_free(m);
    st_grammar_free(g);
    const char *bad[] = {"root ::= <[x]>\n", "root ::= <[12\n", "root ::= <[-1]>\n"};
    for (int i = 0; i < 3; i++) {
        g = st_grammar_parse(bad[i], err, sizeof err);
        CHECK(!g && strstr(err, "bad token reference"), "grammar.tokens: '%s' refused: %s", bad[i], err);
        st_grammar_free(g);
    }
    st_gvocab_free(v);
}

int main(void) {
    mutation_cases();
    gbnf_cases();
    schema_cases();
    mask_cases();
    bound_cases();
    token_cases();
    printf("grammar: %d failures\n", g_fail);
    return g_fail ? 1 : 0;
}
