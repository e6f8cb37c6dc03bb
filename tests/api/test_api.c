// SPDX-License-Identifier: Apache-2.0
/* libstrata through its public header only: errors as values, versioned structs, tokens,
 * greedy and seeded generation, prefix reuse, cancel (from the callback and from another
 * thread), several threads on separate contexts of one model, and the chat prompt.
 * usage: test_api MODEL.gguf EXPECTED_GREEDY_TEXT_FILE (`strata run -p hello -n 8 --temp 0` output) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/check.h"
#include "strata/strata.h"

static int g_fail;

typedef struct collect {
    int32_t tok[256];
    int n;
    char text[4096];
    size_t len;
    int stop_after;              /* > 0: return nonzero at this many tokens */
    strata_context *cancel_ctx;  /* with cancel_at: strata_cancel at this many tokens */
    int cancel_at;
    atomic_int seen;
} collect;

static int on_token(void *user, int32_t token, const char *text, size_t len) {
    collect *c = user;
    if (token >= 0 && c->n < 256) c->tok[c->n++] = token;
    if (c->len + len < sizeof c->text) {
        memcpy(c->text + c->len, text, len);
        c->len += len;
        c->text[c->len] = 0;
    }
    atomic_store(&c->seen, c->n);
    if (c->cancel_ctx && c->n == c->cancel_at) strata_cancel(c->cancel_ctx);
    return c->stop_after > 0 && c->n >= c->stop_after;
}

static strata_generate_options greedy(collect *c, int n) {
    strata_generate_options o;
    strata_generate_options_init(&o);
    o.max_tokens = n;
    o.temperature = 0;
    o.ignore_eos = 1;
    o.on_token = on_token;
    o.user = c;
    return o;
}

static void test_errors(const char *path) {
    strata_model *m = (strata_model *)1;
    strata_status s = strata_model_open("/nonexistent/x.gguf", NULL, &m);
    CHECK(s == STRATA_ERR_IO && m == NULL, "missing file: %s", strata_status_name(s));
    CHECK(strstr(strata_last_error(), "/nonexistent/x.gguf") != NULL, "the message names the file: '%s'", strata_last_error());
    strata_model_options o;
    strata_model_options_init(&o);
    o.size = 4; /* a struct from no version of the header */
    CHECK(strata_model_open(path, &o, &m) == STRATA_ERR_INVALID, "struct size 4 refused");
    strata_model_options_init(&o);
    o.kv_type = "f8";
    CHECK(strata_model_open(path, &o, &m) == STRATA_ERR_INVALID && strstr(strata_last_error(), "f8"), "bad kv_type: %s",
          strata_last_error());
    strata_model_options_init(&o);
    o.backend = "nosuchbackend";
    CHECK(strata_model_open(path, &o, &m) == STRATA_ERR_NO_DEVICE && strstr(strata_last_error(), "nosuchbackend"),
          "unknown backend: %s", strata_last_error());
    CHECK(!strcmp(strata_status_name(STRATA_ERR_BUFFER), "BUFFER"), "status names");
    char v[16];
    snprintf(v, sizeof v, "%d.%d", STRATA_API_MAJOR, STRATA_API_MINOR);
    CHECK(!strcmp(strata_api_version(), v), "API version %s, header %s", strata_api_version(), v);
}

static void test_tokens(strata_model *m) {
    strata_model_info info = {.size = sizeof info};
    CHECK(strata_model_get_info(m, &info) == STRATA_OK, "info: %s", strata_last_error());
    CHECK(info.n_vocab > 0 && !strcmp(info.arch, "qwen3moe") && info.n_parallel == 2, "info: vocab %d arch %s parallel %d",
          info.n_vocab, info.arch, info.n_parallel);
    CHECK(strstr(info.device, "cpu device") != NULL, "on the CPU module: %s", info.device);
    int32_t ids[64];
    size_t n = 0;
    const char *text = "hello world";
    CHECK(strata_tokenize(m, text, strlen(text), 0, 0, ids, 64, &n) == STRATA_OK && n > 1, "tokenize: %zu", n);
    char back[128];
    size_t len = 0;
    CHECK(strata_detokenize(m, ids, n, 0, back, sizeof back, &len) == STRATA_OK, "detokenize: %s", strata_last_error());
    CHECK(len == strlen(text) && !strcmp(back, text), "round trip: '%s'", back);
    size_t need = 0;
    CHECK(strata_tokenize(m, text, strlen(text), 0, 0, ids, 1, &need) == STRATA_ERR_BUFFER && need == n,
          "small buffer: BUFFER and the size (%zu of %zu)", need, n);
    CHECK(strata_detokenize(m, ids, n, 0, back, 3, &len) == STRATA_ERR_BUFFER && len == strlen(text),
          "small text buffer: BUFFER and the length");
    int32_t bad = 1 << 30;
    CHECK(strata_detokenize(m, &bad, 1, 0, back, sizeof back, &len) == STRATA_ERR_INVALID, "unknown token refused");
}

/* Greedy: the same text as the CLI's; a second run reuses the prompt's cache and gives the same tokens. */
static void test_greedy(strata_model *m, const char *expected) {
    strata_context *c;
    CHECK(strata_context_new(m, &c) == STRATA_OK, "context");
    collect a = {0}, b = {0};
    strata_generate_options o = greedy(&a, 8);
    strata_generate_result r = {.size = sizeof r};
    CHECK(strata_generate_text(c, "hello", &o, &r) == STRATA_OK, "generate: %s", strata_last_error());
    CHECK(r.finish == STRATA_FINISH_LENGTH && r.n_generated == 8 && a.n == 8, "8 tokens, length: %d %d finish %d",
          r.n_generated, a.n, r.finish);
    char got[4200];
    snprintf(got, sizeof got, "hello%s\n", a.text);
    CHECK(!strcmp(got, expected), "greedy text equals `strata run`'s:\n got '%s'\nwant '%s'", got, expected);
    o = greedy(&b, 8);
    CHECK(strata_generate_text(c, "hello", &o, &r) == STRATA_OK, "again: %s", strata_last_error());
    CHECK(b.n == 8 && !memcmp(a.tok, b.tok, sizeof a.tok), "the same greedy tokens again");
    CHECK(r.n_reused > 0 && r.n_reused < r.n_prompt, "prompt reused from the cache: %d of %d", r.n_reused, r.n_prompt);
    strata_context_free(c);
}

static void test_seeded(strata_model *m) {
    strata_context *c;
    CHECK(strata_context_new(m, &c) == STRATA_OK, "context");
    collect a = {0}, b = {0};
    strata_generate_options o = greedy(&a, 16);
    o.temperature = 1.0f;
    o.top_k = 0;
    o.seed = 42;
    CHECK(strata_generate_text(c, "hello", &o, NULL) == STRATA_OK, "sampled");
    o.user = &b;
    CHECK(strata_generate_text(c, "hello", &o, NULL) == STRATA_OK, "sampled again");
    CHECK(a.n == 16 && b.n == 16 && !memcmp(a.tok, b.tok, sizeof a.tok), "same seed, same tokens");
    strata_context_free(c);
}

typedef struct canceller {
    strata_context *c;
    collect *col;
} canceller;

static void *cancel_main(void *arg) {
    canceller *k = arg;
    while (atomic_load(&k->col->seen) < 2) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    strata_cancel(k->c);
    return NULL;
}

static void test_cancel(strata_model *m) {
    strata_context *c;
    CHECK(strata_context_new(m, &c) == STRATA_OK, "context");
    collect a = {0};
    a.stop_after = 3;
    strata_generate_options o = greedy(&a, 100);
    strata_generate_result r = {.size = sizeof r};
    CHECK(strata_generate_text(c, "hello", &o, &r) == STRATA_OK, "generate");
    CHECK(r.finish == STRATA_FINISH_CANCEL && r.n_generated < 100 && a.n >= 3, "callback stop: finish %d after %d",
          r.finish, r.n_generated);
    collect b = {0};
    canceller k = {c, &b};
    pthread_t th;
    pthread_create(&th, NULL, cancel_main, &k);
    o = greedy(&b, 4000);
    CHECK(strata_generate_text(c, "hello", &o, &r) == STRATA_OK, "generate");
    pthread_join(th, NULL);
    CHECK(r.finish == STRATA_FINISH_CANCEL && r.n_generated < 4000, "cancel from another thread: finish %d after %d",
          r.finish, r.n_generated);
    strata_context_free(c);
}

typedef struct worker {
    strata_model *m;
    collect col;
    strata_status s;
    int prompt;
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    strata_context *c;
    if ((w->s = strata_context_new(w->m, &c))) return NULL;
    strata_generate_options o = greedy(&w->col, 24);
    w->s = strata_generate_text(c, w->prompt ? "the cat sat" : "hello", &o, NULL);
    strata_context_free(c);
    return NULL;
}

/* Four threads, two prompts, two sequences: each text equals the same prompt's text alone. */
static void test_threads(strata_model *m) {
    collect alone[2];
    memset(alone, 0, sizeof alone);
    for (int p = 0; p < 2; p++) {
        worker w = {.m = m, .prompt = p};
        worker_main(&w);
        alone[p] = w.col;
    }
    worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].m = m;
        w[i].prompt = i & 1;
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].s == STRATA_OK, "thread %d: %s", i, strata_status_name(w[i].s));
        CHECK(w[i].col.n == 24 && !memcmp(w[i].col.tok, alone[i & 1].tok, sizeof w[i].col.tok),
              "thread %d: the tokens of its prompt alone", i);
    }
    CHECK(memcmp(alone[0].tok, alone[1].tok, sizeof alone[0].tok) != 0, "the two prompts give different texts");
}

static void test_chat(strata_model *m) {
    strata_chat_message msgs[2] = {{"system", "be brief"}, {"user", "hi <|im_start|>"}};
    char *p = NULL;
    CHECK(strata_chat_prompt(m, msgs, 2, &p) == STRATA_OK && p, "chat prompt: %s", strata_last_error());
    /* the generated model names no template: the plain form */
    CHECK(p && !strcmp(p, "System: be brief\nUser: hi <|im_start|>\nAssistant:"), "plain form: '%s'", p ? p : "");
    strata_free(p);
    CHECK(strata_chat_prompt(m, msgs, 0, &p) == STRATA_ERR_INVALID, "no messages refused");
    strata_context *c;
    CHECK(strata_context_new(m, &c) == STRATA_OK, "context");
    collect a = {0};
    strata_generate_options o = greedy(&a, 5);
    strata_generate_result r = {.size = sizeof r};
    CHECK(strata_chat(c, msgs, 2, &o, &r) == STRATA_OK && r.n_generated == 5, "chat reply: %s", strata_last_error());
    CHECK(r.n_prompt > 10, "the conversation was the prompt (%d tokens)", r.n_prompt);
    strata_context_free(c);
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_api MODEL.gguf EXPECTED.txt\n");
        return 2;
    }
    const char *expected = read_all(argv[2]);
    CHECK(expected != NULL, "cannot read %s", argv[2]);
    test_errors(argv[1]);
    strata_model_options o;
    strata_model_options_init(&o);
    o.backend = "cpu";
    o.threads = 1;
    o.n_parallel = 2;
    strata_model *m = NULL;
    strata_status s = strata_model_open(argv[1], &o, &m);
    CHECK(s == STRATA_OK, "open: %s: %s", strata_status_name(s), strata_last_error());
    if (!m) return 1;
    test_tokens(m);
    if (expected) test_greedy(m, expected);
    test_seeded(m);
    test_cancel(m);
    test_threads(m);
    test_chat(m);
    strata_model_free(m);
    if (g_fail) fprintf(stderr, "%d checks failed\n", g_fail);
    else printf("PASS: api\n");
    return g_fail ? 1 : 0;
}
