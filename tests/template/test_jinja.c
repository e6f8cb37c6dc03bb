/* SPDX-License-Identifier: Apache-2.0 */
/* template.jinja: conformance of the Jinja engine on what chat templates use. Each case is a
 * template, a JSON context and the text Jinja2 renders (Hugging Face settings: trim_blocks,
 * lstrip_blocks), or the start of the error it must give. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "template/jinja.h"

static int g_fail;

typedef struct jcase {
    const char *name, *tmpl, *ctx, *want, *err; /* want NULL: the render must fail with err in the message */
} jcase;

static const jcase k_cases[] = {
    /* whitespace */
    {"ws.trim_blocks", "{% if true %}\nhello\n{% endif %}\n", "{}", "hello\n", NULL},
    {"ws.lstrip_blocks", "    {% if true %}\n    hello\n    {% endif %}\n", "{}", "    hello\n", NULL},
    {"ws.strip_both", "  {%- if true -%}  \nhello\n  {%- endif -%}  \n", "{}", "hello", NULL},
    {"ws.expr_strip", "a  {{- 'x' -}}  b", "{}", "axb", NULL},
    {"ws.plus_keeps", "  {%+ if true %}x{% endif %}", "{}", "  x", NULL},
    {"ws.comment", "a\n{# note #}\nb", "{}", "a\nb", NULL},
    {"ws.raw", "{% raw %}{{ x }}{% endraw %}", "{}", "{{ x }}", NULL},
    /* expressions */
    {"expr.arith", "{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }}", "{}", "7 3 -4 1 1024 3.5", NULL},
    {"expr.float_print", "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 3 * 1.5 }}", "{}", "1.0 0.30000000000000004 4.5", NULL},
    {"expr.concat", "{{ 'a' ~ 1 ~ none }} {{ 'x' + 'y' }}", "{}", "a1None xy", NULL},
    {"expr.compare", "{{ 1 < 2 and 'a' != 'b' }} {{ not 1 == 1 }} {{ 3 in [1,2,3] }} {{ 'b' not in 'abc' }}", "{}", "True False True False", NULL},
    {"expr.cond", "{{ 'y' if x else 'n' }}{{ 'z' if false }}", "{\"x\": 1}", "y", NULL},
    {"expr.or_value", "{{ x or 'dflt' }} {{ y and 'both' }}", "{\"x\": \"\", \"y\": 2}", "dflt both", NULL},
    {"expr.literals", "{{ [1, 'a', true, none] }} {{ {'k': 1} }} {{ (1, 2)|length }}", "{}", "[1, 'a', True, None] {'k': 1} 2", NULL},
    {"expr.index", "{{ m[0].role }} {{ m[-1]['content'] }} {{ m.1.role }}",
     "{\"m\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"bot\", \"content\": \"b\"}]}", "user b bot", NULL},
    {"expr.slice", "{{ [1,2,3,4][1:3] }} {{ [1,2,3][::-1] }} {{ 'hello'[1:] }} {{ 'hello'[:-1] }} {{ [1,2,3][-2:] }}", "{}",
     "[2, 3] [3, 2, 1] ello hell [2, 3]", NULL},
    {"expr.undefined", "[{{ nope }}]{{ nope is defined }}", "{}", "[]False", NULL},
    {"expr.str_percent", "{{ '%s-%d' % ('a', 3) }}", "{}", "a-3", NULL},
    /* statements */
    {"if.elif", "{% for i in [1,2,3] %}{% if i == 1 %}a{% elif i == 2 %}b{% else %}c{% endif %}{% endfor %}", "{}", "abc", NULL},
    {"for.loop_vars", "{% for x in 'ab' %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", "{}",
     "10TrueFalse2;21FalseTrue2;", NULL},
    {"for.else", "{% for x in [] %}x{% else %}empty{% endfor %}", "{}", "empty", NULL},
    {"for.filter", "{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{% endfor %}", "{}", "2242", NULL},
    {"for.dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{\"d\": {\"a\": 1, \"b\": 2}}", "a=1;b=2;", NULL},
    {"for.break_continue", "{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}", "{}", "023", NULL},
    {"for.cycle_prev", "{% for x in [1,2,3] %}{{ loop.cycle('a','b') }}{{ loop.previtem }}{% endfor %}", "{}", "ab1a2", NULL},
    {"set.scope", "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}", "{}", "1", NULL},
    {"set.namespace", "{% set ns = namespace(n=0, s='') %}{% for i in [1,2,3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", "{}", "6", NULL},
    {"set.block", "{% set b %}x{{ 1 + 1 }}{% endset %}[{{ b }}]", "{}", "[x2]", NULL},
    {"set.unpack", "{% set a, b = 1, 2 %}{{ b }}{{ a }}", "{}", "21", NULL},
    {"macro.defaults", "{% macro f(a, b='B') %}{{ a }}-{{ b }}{% endmacro %}{{ f(1) }} {{ f(2, b=3) }} {{ f(a=4) }}", "{}", "1-B 2-3 4-B", NULL},
    {"macro.recursive", "{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(3) }}", "{}", "321", NULL},
    {"filter.block", "{% filter upper %}abc{% endfilter %}", "{}", "ABC", NULL},
    /* filters */
    {"filter.basic", "{{ 'Hi'|upper }} {{ 'Hi'|lower }} {{ 'hi there'|title }} {{ 'hI'|capitalize }} {{ '  x  '|trim }} {{ [1,2]|length }} {{ 'héllo'|length }}", "{}",
     "HI hi Hi There Hi x 2 5", NULL},
    {"filter.join_map", "{{ m|map(attribute='n')|join(', ') }} {{ [3,1,2]|sort|join }} {{ [1,2]|map('string')|join('-') }}",
     "{\"m\": [{\"n\": \"a\"}, {\"n\": \"b\"}]}", "a, b 123 1-2", NULL},
    {"filter.select", "{{ m|selectattr('role', 'equalto', 'user')|list|length }} {{ m|rejectattr('role', 'eq', 'user')|map(attribute='role')|first }} {{ [0,1,2]|select|list }}",
     "{\"m\": [{\"role\": \"user\"}, {\"role\": \"tool\"}, {\"role\": \"user\"}]}", "2 tool [1, 2]", NULL},
    {"filter.selectattr_defined", "{{ m|selectattr('x', 'defined')|list|length }}", "{\"m\": [{\"x\": 1}, {}]}", "1", NULL},
    {"filter.default", "{{ a|default('d') }} {{ ''|default('e', true) }} {{ b|d('f') }}", "{\"b\": 0}", "d e 0", NULL},
    {"filter.first_last", "{{ [1,2,3]|first }}{{ [1,2,3]|last }}{{ 'abc'|first }}", "{}", "13a", NULL},
    {"filter.replace", "{{ 'a-b-c'|replace('-', '+') }} {{ 'aaa'|replace('a', 'b', 2) }}", "{}", "a+b+c bba", NULL},
    {"filter.tojson", "{{ d|tojson }}|{{ d|tojson(indent=2) }}", "{\"d\": {\"a\": [1, \"x\\\"\", null, true], \"b\": 1.5, \"c\": \"é\\n\"}}",
     "{\"a\": [1, \"x\\\"\", null, true], \"b\": 1.5, \"c\": \"é\\n\"}|{\n  \"a\": [\n    1,\n    \"x\\\"\",\n    null,\n    true\n  ],\n  \"b\": 1.5,\n  \"c\": \"é\\n\"\n}", NULL},
    {"filter.tojson_sort", "{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} {{ 'x'|tojson }} {{ [] |tojson }}", "{}", "{\"a\": 2, \"b\": 1} \"x\" []", NULL},
    {"filter.indent", "{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}", "{}", "a\n  b\n\n  c|  a\n  b", NULL},
    {"filter.items_dictsort", "{% for k, v in {'b': 1, 'a': 2}|dictsort %}{{ k }}{{ v }}{% endfor %} {% for k, v in {'x': 1}|items %}{{ k }}{% endfor %}", "{}", "a2b1 x", NULL},
    {"filter.misc", "{{ [1,2,2,1]|unique|list }} {{ [1,5,3]|max }} {{ [1,5,3]|min }} {{ [1,2]|sum }} {{ '3'|int + 1 }} {{ -2|abs }} {{ 2.567|round(1) }} {{ [1,2,3]|reverse|list }}", "{}",
     "[1, 2] 5 1 3 4 2 2.6 [3, 2, 1]", NULL},
    {"filter.string_count", "{{ 5|string ~ 'x' }} {{ [1,2,3]|count }}", "{}", "5x 3", NULL},
    /* tests */
    {"test.types", "{{ x is string }}{{ x is mapping }}{{ n is number }}{{ n is integer }}{{ l is iterable }}{{ l is sequence }}{{ z is none }}{{ b is boolean }}",
     "{\"x\": \"s\", \"n\": 3, \"l\": [1], \"z\": null, \"b\": true}", "TrueFalseTrueTrueTrueTrueTrueTrue", NULL},
    {"test.misc", "{{ 4 is divisibleby 2 }}{{ 3 is odd }}{{ x is not defined }}{{ 'a' is in 'abc' }}{{ 1 is eq 1 }}{{ 'f' is callable }}", "{}",
     "TrueTrueTrueTrueTrueFalse", NULL},
    /* methods */
    {"str.methods", "{{ ' x '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ 'a b  c'.split() }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}",
     "{}", "x|axx|['a', 'b', '', 'c']|['a', 'b', 'c']|True|True", NULL},
    {"str.methods2", "{{ 'a-b-c'.rsplit('-', 1) }}|{{ 'abc'.find('c') }}|{{ 'Hi'.upper() }}|{{ 'aXbX'.count('X') }}|{{ '-'.join(['a', 'b']) }}|{{ '{} is {x}'.format(1, x=2) }}|{{ 'abc'.replace('b', '') }}",
     "{}", "['a-b', 'c']|2|HI|2|a-b|1 is 2|ac", NULL},
    {"list.methods", "{% set l = [1] %}{% set _ = l.append(2) %}{{ l }} {{ l.pop() }} {{ l }} {{ [1,2,1].index(2) }}", "{}", "[1, 2] 2 [1] 1", NULL},
    {"dict.methods", "{{ d.get('a') }} {{ d.get('z', 'no') }} {{ d.get('z') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list|length }}",
     "{\"d\": {\"a\": 1, \"b\": 2}}", "1 no None ['a', 'b'] [1, 2] 2", NULL},
    /* Mixtral-8x7B-Instruct's template (the Mistral-7B-Instruct-v0.2 vector of llama.cpp's test-chat-template.cpp) */
    {"family.mixtral", "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
     "{\"bos_token\": \"\", \"eos_token\": \"</s>\", \"messages\": [{\"role\": \"user\", \"content\": \"You are a helpful assistant\\nHello\"}, {\"role\": \"assistant\", \"content\": \"Hi there\"}, {\"role\": \"user\", \"content\": \"Who are you\"}, {\"role\": \"assistant\", \"content\": \"   I am an assistant   \"}, {\"role\": \"user\", \"content\": \"Another question\"}]}",
     "[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an assistant   </s>[INST] Another question [/INST]", NULL},
    {"family.mixtral_system", "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}", "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"messages\": [{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"u\"}]}", NULL, "Conversation roles must alternate"},
    /* errors */
    {"err.raise", "{{ raise_exception('roles must alternate') }}", "{}", NULL, "roles must alternate"},
    {"err.syntax_pos", "line1\n{% if x %}\nno end", "{}", NULL, "line 3, col 7: expected '{% endif %}'"},
    {"err.unknown_filter", "{{ 1|nosuchfilter }}", "{}", NULL, "line 1, col 6: unknown filter 'nosuchfilter'"},
    {"err.unknown_tag", "{% frobnicate %}", "{}", NULL, "line 1, col 4: unknown tag 'frobnicate'"},
    {"err.call_undefined", "{{ nothere() }}", "{}", NULL, "'nothere' is undefined"},
    {"err.unterminated", "{{ 'abc }}", "{}", NULL, "line 1, col 4: unterminated string"},
};

static void run_case(const jcase *c) {
    char err[512] = "";
    cJSON *ctx = cJSON_Parse(c->ctx);
    CHECK(ctx, "%s: bad context JSON in the test", c->name);
    st_jinja *t = st_jinja_parse(c->tmpl, err, sizeof err);
    char *out = t ? st_jinja_render(t, ctx, err, sizeof err) : NULL;
    if (c->want) {
        CHECK(out && !strcmp(out, c->want), "template.jinja %s: got [%s] (err %s), want [%s]", c->name, out ? out : "(null)", err, c->want);
    } else {
        CHECK(!out && strstr(err, c->err), "template.jinja %s: want an error with [%s], got [%s] err [%s]", c->name, c->err,
              out ? out : "(null)", err);
    }
    free(out);
    st_jinja_free(t);
    cJSON_Delete(ctx);
}

/* A template that builds a string without end must stop at the limit with an error. */
static void run_limit(void) {
    char err[256] = "";
    st_jinja *t = st_jinja_parse("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                                 err, sizeof err);
    CHECK(t, "template.jinja limit: parse failed: %s", err);
    if (!t) return;
    st_jinja_set_limit(t, (size_t)8 << 20);
    char *out = st_jinja_render(t, NULL, err, sizeof err);
    CHECK(!out && strstr(err, "more than 8 MiB"), "template.jinja limit: want the limit error, got %s", out ? "output" : err);
    free(out);
    st_jinja_free(t);
}

/* Every prefix of every case's template, and each with one byte flipped: parsing and rendering
 * must end with a result or an error, never a crash (run under ASan/UBSan in CI). */
static void run_mutations(void) {
    size_t n = sizeof k_cases / sizeof k_cases[0], runs = 0, errors = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(k_cases[i].tmpl);
        cJSON *ctx = cJSON_Parse(k_cases[i].ctx);
        char *buf = malloc(len + 1);
        for (size_t cut = 0; cut <= len; cut++) {
            for (int flip = 0; flip < 2; flip++) {
                memcpy(buf, k_cases[i].tmpl, cut);
                buf[cut] = 0;
                if (flip && cut) buf[cut - 1] = "{}%#-|()[]'\"."[cut % 13];
                char err[256];
                st_jinja *t = st_jinja_parse(buf, err, sizeof err);
                char *out = t ? st_jinja_render(t, ctx, err, sizeof err) : NULL;
                errors += !out;
                runs++;
                free(out);
                st_jinja_free(t);
            }
        }
        free(buf);
        cJSON_Delete(ctx);
    }
    CHECK(runs > 1000 && errors > 0 && errors < runs, "template.jinja mutations: %zu runs, %zu errors", runs, errors);
}

int main(void) {
    size_t n = sizeof k_cases / sizeof k_cases[0];
    for (size_t i = 0; i < n; i++) run_case(&k_cases[i]);
    run_limit();
    run_mutations();
    printf("template.jinja: %zu cases, %d failures\n", n + 1, g_fail);
    return g_fail ? 1 : 0;
}
