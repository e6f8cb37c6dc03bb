/* SPDX-License-Identifier: Apache-2.0 */
/* Unit test of the chat templates (core/server/chat.c): rendering of each family against the
 * published formats, detection from GGUF Jinja texts, names and stop strings; the content spans
 * of a Jinja rendering (core/server/jinja_spans.c). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/chat.h"
#include "template/chat_jinja.h"

static int fails;

static void expect_render(st_chat_template t, const char *want) {
    const st_chat_message m[] = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Why?"}};
    char *got = st_chat_render(t, m, 4);
    if (!got || strcmp(got, want)) {
        fprintf(stderr, "template %s:\n got: [%s]\nwant: [%s]\n", st_chat_template_name(t), got ? got : "(null)", want);
        fails++;
    }
    free(got);
}

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            fails++;                                                              \
        }                                                                         \
    } while (0)

/* Spans of a Jinja rendering of req by src: their count (-1 when none could be found), the
 * prompt in *prompt and the spans as "start:text" joined with '|' in joined. */
static int jinja_spans(const char *src, const char *req, char **prompt, char *joined, size_t cap) {
    char err[256];
    st_jinja *t = st_jinja_parse(src, err, sizeof err);
    cJSON *r = cJSON_Parse(req);
    st_chat_jinja_opts o = {"", "", 1};
    *prompt = t && r ? st_chat_jinja_apply(t, r, &o, err, sizeof err) : NULL;
    st_chat_span *sp = NULL;
    size_t n = 0;
    int rc = *prompt ? st_chat_jinja_spans(t, r, &o, *prompt, &sp, &n) : -1;
    joined[0] = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        snprintf(joined + strlen(joined), cap - strlen(joined), "%s%zu:%.*s", i ? "|" : "", sp[i].start,
                 (int)sp[i].len, *prompt + sp[i].start);
    free(sp);
    cJSON_Delete(r);
    st_jinja_free(t);
    return rc ? -1 : (int)n;
}

static void test_jinja_spans(void) {
    static const char chatml[] = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                                 "<|im_start|>assistant\n";
    char *p, j[256];
    /* a content that is exactly the template's marker: the content is the span, not the marker */
    int n = jinja_spans(chatml, "{\"messages\":[{\"role\":\"system\",\"content\":\"S\"},"
                                "{\"role\":\"user\",\"content\":\"<|im_end|>\"}]}", &p, j, sizeof j);
    CHECK(n == 2 && !strcmp(j, "19:S|48:<|im_end|>"));
    free(p);
    /* text parts joined; an empty content has no span */
    n = jinja_spans(chatml, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a \"},"
                            "{\"type\":\"text\",\"text\":\"<|im_start|>b\"}]},{\"role\":\"assistant\",\"content\":\"\"}]}",
                    &p, j, sizeof j);
    CHECK(n == 1 && !strcmp(j, "17:a <|im_start|>b"));
    free(p);
    /* a template that trims (Llama 3's): the trimmed text is the span */
    n = jinja_spans("{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content | trim }}"
                    "<|eot_id|>{% endfor %}", "{\"messages\":[{\"role\":\"user\",\"content\":\"  hi <|eot_id|> \\n\"}]}",
                    &p, j, sizeof j);
    CHECK(n == 1 && !strcmp(j, "42:hi <|eot_id|>"));
    free(p);
    /* a template that rewrites a content: no spans */
    n = jinja_spans("{% for m in messages %}[{{ m.content | upper }}]{% endfor %}",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"abc\"}]}", &p, j, sizeof j);
    CHECK(n == -1);
    free(p);
}

int main(void) {
    test_jinja_spans();
    expect_render(ST_CHAT_CHATML, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                                  "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWhy?<|im_end|>\n"
                                  "<|im_start|>assistant\n");
    expect_render(ST_CHAT_LLAMA3, "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                                  "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                                  "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                                  "<|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|>"
                                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_render(ST_CHAT_MISTRAL, "[INST] Be brief.\n\nHi [/INST]Hello.</s>[INST] Why? [/INST]");
    expect_render(ST_CHAT_DEEPSEEK, "Be brief.<\xef\xbd\x9cUser\xef\xbd\x9c>Hi<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>Hello."
                                    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
                                    "<\xef\xbd\x9cUser\xef\xbd\x9c>Why?<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
    expect_render(ST_CHAT_TULU, "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\nHello.<|endoftext|>\n"
                                "<|user|>\nWhy?\n<|assistant|>\n");
    expect_render(ST_CHAT_PLAIN, "System: Be brief.\nUser: Hi\nAssistant: Hello.\nUser: Why?\nAssistant:");

    int rec;
    CHECK(st_chat_template_detect("{% for m in messages %}<|im_start|>{{m.role}}", 0, &rec) == ST_CHAT_CHATML && rec);
    CHECK(st_chat_template_detect("{{ '<|start_header_id|>' + m['role'] }}", 0, &rec) == ST_CHAT_LLAMA3 && rec);
    CHECK(st_chat_template_detect("{{'<\xef\xbd\x9cUser\xef\xbd\x9c>' + c}}", 0, &rec) == ST_CHAT_DEEPSEEK && rec);
    CHECK(st_chat_template_detect("{{ '[INST] ' + m['content'] }}", 0, &rec) == ST_CHAT_MISTRAL && rec);
    CHECK(st_chat_template_detect("{{ '<|user|>\n' + m['content'] }}", 0, &rec) == ST_CHAT_TULU && rec);
    CHECK(st_chat_template_detect("{{ something else }}", 0, &rec) == ST_CHAT_PLAIN && !rec);
    CHECK(st_chat_template_detect(NULL, 1, &rec) == ST_CHAT_CHATML && !rec);
    CHECK(st_chat_template_detect(NULL, 0, &rec) == ST_CHAT_PLAIN && !rec);

    CHECK(st_chat_template_from_name("qwen") == ST_CHAT_CHATML);
    CHECK(st_chat_template_from_name("olmoe") == ST_CHAT_TULU);
    CHECK(st_chat_template_from_name("llama3") == ST_CHAT_LLAMA3);
    CHECK(st_chat_template_from_name("nope") == -1);
    for (int t = 0; t < ST_CHAT_COUNT; t++)
        CHECK(st_chat_template_from_name(st_chat_template_name((st_chat_template)t)) == t);
    CHECK(!strcmp(st_chat_stop_strings(ST_CHAT_CHATML)[0], "<|im_end|>"));
    CHECK(!strcmp(st_chat_stop_strings(ST_CHAT_LLAMA3)[0], "<|eot_id|>"));
    CHECK(st_chat_stop_strings(ST_CHAT_MISTRAL)[0] == NULL);

    /* a message without content renders as empty, never crashes */
    const st_chat_message e[] = {{"user", ""}};
    char *s = st_chat_render(ST_CHAT_CHATML, e, 1);
    CHECK(s && !strcmp(s, "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n"));
    free(s);
    {   /* spans: each message's content, where it landed, so it can be tokenized as text */
        const st_chat_message m[] = {{"system", "S"}, {"user", "a <|im_end|> b"}, {"assistant", ""}, {"user", "Q"}};
        st_chat_span *sp = NULL;
        size_t n = 0;
        char *p = st_chat_render_spans(ST_CHAT_CHATML, m, 4, &sp, &n);
        CHECK(p && n == 3); /* the empty content has no span */
        for (size_t i = 0; p && i < n; i++) CHECK(sp[i].start + sp[i].len <= strlen(p));
        CHECK(p && n == 3 && !strncmp(p + sp[0].start, "S", sp[0].len));
        CHECK(p && n == 3 && sp[1].len == 14 && !strncmp(p + sp[1].start, "a <|im_end|> b", 14));
        CHECK(p && n == 3 && !strncmp(p + sp[2].start, "Q", 1) && sp[2].start > sp[1].start);
        free(p);
        free(sp);
    }
    if (fails) fprintf(stderr, "%d checks failed\n", fails);
    else printf("all checks passed\n");
    return fails ? 1 : 0;
}
