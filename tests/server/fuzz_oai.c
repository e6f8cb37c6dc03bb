/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the OpenAI JSON mapping (core/server/openai.c) and chat rendering.
 * Input: byte 0 picks chat or completions and the template; the rest is the request body.
 * Also drives the incremental text (stop strings, <think>) with stops and pieces cut from the
 * body. Build: ci/fuzz.sh (clang, -DSTRATA_FUZZ=ON). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai.h"

static void fuzz_text(const char *d, size_t n, int think) {
    /* stops: the first up to 3 NUL-separated pieces; the rest pushed in 1..8-byte pieces */
    char *copy = malloc(n + 1);
    if (!copy) return;
    memcpy(copy, d, n);
    copy[n] = 0;
    const char *stops[4] = {NULL, NULL, NULL, NULL};
    size_t off = 0;
    for (int i = 0; i < 3 && off < n; i++) {
        size_t l = strlen(copy + off);
        if (l) stops[i] = copy + off;
        off += l + 1;
    }
    int k = 0;
    for (int i = 0; i < 3; i++)
        if (stops[i]) stops[k++] = stops[i];
    stops[k] = NULL;
    st_oai_text t;
    st_oai_text_init(&t, stops, think);
    char *c = NULL, *r = NULL;
    for (size_t p = off; p < n;) {
        size_t step = 1 + (unsigned char)d[p] % 8;
        if (step > n - p) step = n - p;
        if (st_oai_text_push(&t, d + p, step, &c, &r)) break;
        p += step;
    }
    st_oai_text_finish(&t, &c, &r);
    st_oai_text_free(&t);
    free(c);
    free(r);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int chat = data[0] & 1, think = (data[0] >> 1) & 1;
    st_chat_template t = (st_chat_template)((data[0] >> 2) % ST_CHAT_COUNT);
    const char *body = (const char *)data + 1;
    size_t n = size - 1;
    st_oai_request q;
    st_oai_error e;
    if (st_oai_parse(body, n, chat, t, 32, &q, &e) == 0) {
        for (size_t i = 0; i < q.n_spans; i++)
            if (q.spans[i].start + q.spans[i].len > strlen(q.prompt)) abort(); /* spans lie inside the prompt */
        st_oai_request_free(&q);
    } else {
        char *j = st_oai_error_json(&e);
        free(j);
    }
    char clean[256];
    st_oai_utf8_clean(body, n, clean, sizeof clean);
    fuzz_text(body, n, think);
    return 0;
}
