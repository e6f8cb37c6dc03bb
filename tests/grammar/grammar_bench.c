/* SPDX-License-Identifier: Apache-2.0 */
/* grammar_bench VOCAB.gguf [runs]: the cost of a grammar-constrained sampling step against a
 * free one, on a real vocabulary (e.g. llama.cpp's ggml-vocab-qwen2.gguf, 151k tokens), with
 * random logits (seeded) and the sampler of the server (temperature 0.8, top-k 40, top-p 0.95,
 * min-p 0.05). Two cases for the constrained step:
 *   follows   the model already writes the schema's JSON (its next token gets +20): the drawn
 *             token passes the grammar check, no mask is computed (the common case);
 *   disagrees pure random logits: the drawn token is refused nearly every step and the whole
 *             vocabulary is masked through the trie (the worst case).
 * Prints microseconds per step and the ratios. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/gguf.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "sample/sample.h"
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static const char k_schema[] = "{\"type\":\"object\",\"properties\":{\"answer\":{\"enum\":[\"yes\",\"no\"]},\"n\":{\"type\":\"integer\"},"
                               "\"reason\":{\"type\":\"string\"}},\"required\":[\"answer\",\"n\",\"reason\"]}";
static const char k_target[] = "{\"answer\": \"yes\", \"n\": 42, \"reason\": \"the sky is blue because air scatters short wavelengths more\"}";

typedef struct run_stats {
    double us;
    int steps, masked, ok;
} run_stats;

/* One generation of n steps; boost >= 0 adds +20 to target[i] at step i. */
static run_stats run(const st_sampler_params *sp, int32_t V, st_grammar *g, const st_gvocab *gv, const int32_t *target, int n,
                     int follow, st_rng *rng, float *logits) {
    run_stats r = {0};
    st_sampler *s = st_sampler_new(sp, V);
    if (g) st_grammar_constrain(s, g, gv);
    for (int i = 0; i < n; i++) {
        for (int32_t t = 0; t < V; t++) logits[t] = st_rng_normal(rng) * 2.0f;
        if (follow) logits[target[i]] += 20.0f;
        double t0 = now_us();
        int32_t tok = st_sampler_sample(s, logits);
        r.us += now_us() - t0;
        st_sampler_accept(s, tok);
        r.steps++;
        if (!follow || tok == target[i]) r.ok++;
    }
    r.masked = (int)st_sampler_masked_steps(s);
    st_sampler_free(s);
    return r;
}

/* The grammar without the sampler: check + advance per token along the target, masks along it,
 * and a cold against a cached mask inside the free string. */
static void grammar_alone(const char *gbnf, const st_gvocab *gv, const int32_t *target, int64_t n, int32_t V) {
    char err[512];
    /* the fast path alone: one check and one advance per token, over the target 200 times */
    double tf = now_us(), tm = 0;
    int checks = 0, masks = 0;
    uint8_t *allowed = malloc((size_t)V);
    for (int k = 0; k < 200; k++) {
        st_grammar *g = st_grammar_parse(gbnf, err, sizeof err);
        st_gmatch *m = st_gmatch_new(g);
        for (int64_t i = 0; i < n; i++) {
            checks += st_gmatch_token_ok(m, gv, target[i]);
            if (k < 3) {
                double a = now_us();
                st_gmatch_mask(m, gv, allowed);
                tm += now_us() - a;
                masks++;
            }
            st_gmatch_accept_token(m, gv, target[i]);
        }
        st_gmatch_free(m);
        st_grammar_free(g);
    }
    tf = now_us() - tf - tm;
    /* inside the free string: the first mask walks the trie, the next one in the same state is cached */
    double cold = 0, warm = 0;
    {
        st_grammar *g = st_grammar_parse(gbnf, err, sizeof err);
        st_gmatch *m = st_gmatch_new(g);
        for (int64_t i = 0; i < n - 3; i++) st_gmatch_accept_token(m, gv, target[i]);
        double a = now_us();
        st_gmatch_mask(m, gv, allowed);
        cold = now_us() - a;
        st_gmatch_accept_token(m, gv, target[n - 3]); /* one more word of the string: the same state */
        a = now_us();
        st_gmatch_mask(m, gv, allowed);
        warm = now_us() - a;
        st_gmatch_free(m);
        st_grammar_free(g);
    }
    printf("mask inside a JSON string: first %.0f us, again in the same state %.0f us (cached)\n", cold, warm);
    free(allowed);
    printf("grammar alone: check + advance %.2f us/token (%d checks passed of %lld); full mask %.0f us/step (%d masks)\n",
           tf / (200.0 * (double)n), checks, 200LL * (long long)n, tm / masks, masks);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: grammar_bench VOCAB.gguf [runs]\n");
        return 2;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    char err[512];
    st_gguf *f = st_gguf_open(argv[1], err, sizeof err);
    st_tokenizer *tok = f ? st_tokenizer_from_gguf(f, err, sizeof err) : NULL;
    if (!tok) {
        fprintf(stderr, "grammar_bench: %s\n", err);
        return 1;
    }
    int32_t V = (int32_t)st_tokenizer_vocab_size(tok);
    double t0 = now_us();
    st_gvocab *gv = st_gvocab_from_tokenizer(tok);
    double t_trie = now_us() - t0;
    cJSON *schema = cJSON_Parse(k_schema);
    char *gbnf = st_json_schema_to_gbnf(schema, err, sizeof err);
    int32_t *target = NULL;
    int64_t n = st_tokenizer_encode_alloc(tok, k_target, strlen(k_target), false, false, &target);
    float *logits = malloc(sizeof(float) * (size_t)V);
    st_sampler_params sp;
    st_sampler_params_default(&sp);
    st_rng rng;
    st_rng_seed(&rng, 42);
    printf("vocabulary %s: %d tokens, trie built in %.1f ms; target JSON %lld tokens; %d runs\n", argv[1], V, t_trie / 1e3,
           (long long)n, runs);
    run_stats free_f = {0}, con_f = {0}, free_d = {0}, con_d = {0};
    for (int k = 0; k < runs; k++) {
        run_stats a = run(&sp, V, NULL, gv, target, (int)n, 1, &rng, logits);
        run_stats b = run(&sp, V, st_grammar_parse(gbnf, err, sizeof err), gv, target, (int)n, 1, &rng, logits);
        run_stats c = run(&sp, V, NULL, gv, target, (int)n, 0, &rng, logits);
        run_stats d = run(&sp, V, st_grammar_parse(gbnf, err, sizeof err), gv, target, (int)n, 0, &rng, logits);
        free_f.us += a.us, free_f.steps += a.steps;
        con_f.us += b.us, con_f.steps += b.steps, con_f.masked += b.masked, con_f.ok += b.ok;
        free_d.us += c.us, free_d.steps += c.steps;
        con_d.us += d.us, con_d.steps += d.steps, con_d.masked += d.masked;
    }
    grammar_alone(gbnf, gv, target, n, V);
    double ff = free_f.us / free_f.steps, cf = con_f.us / con_f.steps, fd = free_d.us / free_d.steps, cd = con_d.us / con_d.steps;
    printf("follows:   free %.1f us/step, constrained %.1f us/step (+%.1f us, x%.3f); masked %d of %d steps; target kept %d/%d\n",
           ff, cf, cf - ff, cf / ff, con_f.masked, con_f.steps, con_f.ok, con_f.steps);
    printf("disagrees: free %.1f us/step, constrained %.1f us/step (+%.1f us, x%.2f); masked %d of %d steps\n", fd, cd, cd - fd,
           cd / fd, con_d.masked, con_d.steps);
    free(logits);
    free(target);
    free(gbnf);
    cJSON_Delete(schema);
    st_gvocab_free(gv);
    st_tokenizer_free(tok);
    st_gguf_close(f);
    return 0;
}
