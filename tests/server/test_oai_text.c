/* SPDX-License-Identifier: Apache-2.0 */
/* Unit test of the incremental text of a generation (core/server/openai.c): stop strings that
 * arrive split over pushes, held-back prefixes released at the end, the <think> split into
 * reasoning, and the JSON shapes of chunks and errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/openai.h"

static int fails;
#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);  \
            fails++;                                                               \
        }                                                                          \
    } while (0)

static const char *s0(const char *s) { return s ? s : ""; }

/* Push the pieces in order; returns the push index where a stop hit (-1 none). */
static int run(const char *const *stops, int think, const char *const *pieces, char **content, char **reasoning) {
    st_oai_text t;
    st_oai_text_init(&t, stops, think);
    *content = *reasoning = NULL;
    int hit = -1;
    for (int i = 0; pieces[i]; i++) {
        int r = st_oai_text_push(&t, pieces[i], strlen(pieces[i]), content, reasoning);
        if (r == 1 && hit < 0) hit = i;
    }
    st_oai_text_finish(&t, content, reasoning);
    st_oai_text_free(&t);
    return hit;
}

int main(void) {
    char *c, *r;
    {   /* a stop split over three pieces: nothing of it leaks, the text before it is kept */
        const char *stops[] = {"lo wor", NULL};
        const char *p[] = {"Hel", "lo w", "orld", "!", NULL};
        CHECK(run(stops, 0, p, &c, &r) == 2);
        CHECK(!strcmp(s0(c), "Hel"));
        CHECK(r == NULL);
        free(c);
        free(r);
    }
    {   /* a prefix that never completes is released (in order) */
        const char *stops[] = {"abc", NULL};
        const char *p[] = {"xa", "b", "d", "ab", NULL};
        CHECK(run(stops, 0, p, &c, &r) == -1);
        CHECK(!strcmp(s0(c), "xabdab"));
        free(c);
        free(r);
    }
    {   /* streaming view: after "xa" only "x" may be shown */
        const char *stops[] = {"abc", NULL};
        st_oai_text t;
        st_oai_text_init(&t, stops, 0);
        c = r = NULL;
        CHECK(st_oai_text_push(&t, "xa", 2, &c, &r) == 0);
        CHECK(!strcmp(s0(c), "x"));
        CHECK(st_oai_text_push(&t, "bc tail", 7, &c, &r) == 1);
        CHECK(!strcmp(s0(c), "x"));
        CHECK(st_oai_text_push(&t, "more", 4, &c, &r) == 1); /* stopped: nothing more */
        CHECK(!strcmp(s0(c), "x"));
        st_oai_text_finish(&t, &c, &r);
        CHECK(!strcmp(s0(c), "x"));
        st_oai_text_free(&t);
        free(c);
        free(r);
    }
    {   /* the earliest of several stops wins */
        const char *stops[] = {"END", "ST", NULL};
        const char *p[] = {"one ST two END", NULL};
        CHECK(run(stops, 0, p, &c, &r) == 0);
        CHECK(!strcmp(s0(c), "one "));
        free(c);
        free(r);
    }
    {   /* <think> split, tags arriving in pieces */
        const char *stops[] = {NULL};
        const char *p[] = {"<thi", "nk>\nreason", "ing</th", "ink>\n\nanswer", NULL};
        run(stops, 1, p, &c, &r);
        CHECK(!strcmp(s0(r), "reasoning"));
        CHECK(!strcmp(s0(c), "answer"));
        free(c);
        free(r);
    }
    {   /* no opening <think>: everything is content, a later tag included */
        const char *stops[] = {NULL};
        const char *p[] = {"hel", "lo <think>x", NULL};
        run(stops, 1, p, &c, &r);
        CHECK(!strcmp(s0(c), "hello <think>x"));
        CHECK(r == NULL);
        free(c);
        free(r);
    }
    {   /* a stop inside the reasoning ends everything */
        const char *stops[] = {"STOP", NULL};
        const char *p[] = {"<think>abc S", "TOP def", NULL};
        CHECK(run(stops, 1, p, &c, &r) == 1);
        CHECK(!strcmp(s0(r), "abc "));
        CHECK(c == NULL);
        free(c);
        free(r);
    }
    {   /* JSON shapes */
        char *j = st_oai_chunk_json(1, "chatcmpl-1", 7, "m", "assistant", "", NULL, NULL);
        CHECK(j && !strcmp(j, "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\","
                              "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                              "\"finish_reason\":null}],\"usage\":null}"));
        free(j);
        st_oai_usage u = {10, 3, 9};
        j = st_oai_usage_chunk_json(1, "chatcmpl-1", 7, "m", &u);
        CHECK(j && strstr(j, "\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"total_tokens\":13,"
                             "\"prompt_tokens_details\":{\"cached_tokens\":9}}"));
        free(j);
        st_oai_error e;
        st_oai_error_set(&e, 400, NULL, "invalid_type", "stop", "bad %s", "stop");
        j = st_oai_error_json(&e);
        CHECK(j && !strcmp(j, "{\"error\":{\"message\":\"bad stop\",\"type\":\"invalid_request_error\",\"param\":\"stop\","
                              "\"code\":\"invalid_type\"}}"));
        free(j);
    }
    {   /* stop matching is linear in the text added: four 250 KB stop strings, 2,000 pushes */
        enum { L = 250000 };
        char *big[4];
        for (int i = 0; i < 4; i++) {
            big[i] = malloc(L + 1);
            memset(big[i], 'a' + i, L);
            big[i][L] = 0;
        }
        big[0][L - 1] = 'z'; /* "aaaa...z": the text below keeps matching its prefix */
        const char *stops[] = {big[0], big[1], big[2], big[3], NULL};
        st_oai_text t;
        st_oai_text_init(&t, stops, 0);
        c = r = NULL;
        clock_t t0 = clock();
        int hit = 0;
        for (int i = 0; i < 2000 && !hit; i++) hit = st_oai_text_push(&t, i % 2 ? "aaa" : "b a", 3, &c, &r) == 1;
        double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
        CHECK(!hit);
        CHECK(secs < 0.2); /* was 1.35 s */
        st_oai_text_finish(&t, &c, &r);
        CHECK(c && strlen(c) == 6000);
        st_oai_text_free(&t);
        free(c);
        for (int i = 0; i < 4; i++) free(big[i]);
    }
    {   /* the stop that completes first wins; a stop in text shorter than "<think>" is found */
        const char *stops[] = {"abcd", "bc", NULL};
        const char *p[] = {"xabcdy", NULL};
        CHECK(run(stops, 0, p, &c, &r) == 0);
        CHECK(!strcmp(s0(c), "xa"));
        free(c);
        free(r);
        const char *stops2[] = {"Q", NULL};
        const char *p2[] = {"ab", "Qcd", NULL};
        run(stops2, 1, p2, &c, &r);
        CHECK(!strcmp(s0(c), "ab"));
        free(c);
        free(r);
    }
    {   /* UTF-8 cleaning: bad bytes, overlong forms and surrogates become U+FFFD; cut on a boundary */
        char out[64];
        st_oai_utf8_clean("a\xff" "b", 3, out, sizeof out);
        CHECK(!strcmp(out, "a\xEF\xBF\xBD" "b"));
        st_oai_utf8_clean("\xC0\xAF", 2, out, sizeof out);
        CHECK(!strcmp(out, "\xEF\xBF\xBD\xEF\xBF\xBD"));
        st_oai_utf8_clean("\xED\xA0\x80", 3, out, sizeof out); /* a UTF-16 surrogate */
        CHECK(!strcmp(out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
        st_oai_utf8_clean("\xC3\xA9t\xC3\xA9", 5, out, sizeof out);
        CHECK(!strcmp(out, "\xC3\xA9t\xC3\xA9"));
        st_oai_utf8_clean("ab\xC3\xA9", 4, out, 4); /* room for "ab" + NUL only: the character is not split */
        CHECK(!strcmp(out, "ab"));
    }
    {   /* NUL in strings and duplicate keys, at any depth */
        st_oai_request q;
        st_oai_error e;
        const char *b1 = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"content\":\"y\"}]}";
        CHECK(st_oai_parse(b1, strlen(b1), 1, ST_CHAT_CHATML, 32, &q, &e) == -1 && !strcmp(e.code, "duplicate_key") &&
              !strcmp(e.param, "content"));
        const char *b2 = "{\"prompt\":\"a\\u0000\"}";
        CHECK(st_oai_parse(b2, strlen(b2), 0, ST_CHAT_PLAIN, 32, &q, &e) == -1 && e.status == 400);
        const char *b3 = "{\"prompt\":\"a\\\\u0000\"}"; /* an escaped backslash, then text */
        CHECK(st_oai_parse(b3, strlen(b3), 0, ST_CHAT_PLAIN, 32, &q, &e) == 0 && !strcmp(q.prompt, "a\\u0000"));
        st_oai_request_free(&q);
    }
    {   /* parsing: trailing data, depth, max_completion_tokens over max_tokens */
        st_oai_request q;
        st_oai_error e;
        const char *b1 = "{\"prompt\":\"x\"} {}";
        CHECK(st_oai_parse(b1, strlen(b1), 0, ST_CHAT_PLAIN, 32, &q, &e) == -1 && e.status == 400);
        const char *b2 = "{\"prompt\":\"x\",\"max_tokens\":9,\"max_completion_tokens\":4}  \n";
        CHECK(st_oai_parse(b2, strlen(b2), 0, ST_CHAT_PLAIN, 32, &q, &e) == 0 && q.max_tokens == 4);
        st_oai_request_free(&q);
        const char *b3 = "{\"prompt\":\"[[[[\",\"a\":[[[1]]]}";
        CHECK(st_oai_parse(b3, strlen(b3), 0, ST_CHAT_PLAIN, 4, &q, &e) == 0); /* brackets in strings do not count */
        st_oai_request_free(&q);
        CHECK(st_oai_parse(b3, strlen(b3), 0, ST_CHAT_PLAIN, 3, &q, &e) == -1 && !strcmp(e.code, "invalid_json"));
    }
    if (fails) fprintf(stderr, "%d checks failed\n", fails);
    else printf("all checks passed\n");
    return fails ? 1 : 0;
}
