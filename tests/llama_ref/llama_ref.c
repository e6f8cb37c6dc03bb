/* SPDX-License-Identifier: Apache-2.0 */
/* llama-ref: drives llama.cpp's library (fetched by ci/fetch-llama-ref.sh, never part of the
 * tree) as the correctness reference and speed rival for Strata's tests and benchmarks.
 *   llama-ref logits   -m F --tokens 1,2,3 --out F.f32 [--all] [-t N] [--ngl N]
 *   llama-ref generate -m F --tokens 1,2,3 -n N [-t N] [--ngl N]   (greedy ids on stdout)
 *   llama-ref embed    -m F --tokens 1,2,3 --out F.f32   (the sequence's embedding, pooled as
 *                      the model's pooling_type says, not normalized: n_embd floats)
 *   llama-ref bench    -m F [-p 512] [-n 128] [-r 3] [-t N] [--ngl N] [--ncmoe N] [--kv f16|f32]
 *                      [--parallel P]   (P sequences each get the prompt, then decode together:
 *                                        aggregate tok/s of P tokens per step)
 * Logits/generate use an F32 KV cache and flash attention off, the configuration in which
 * llama.cpp's logits agree with a plain FP32 forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_tokens(const char *s, llama_token **out) {
    int n = 0, cap = 64;
    llama_token *t = malloc(sizeof *t * cap);
    while (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) break;
        if (n == cap) t = realloc(t, sizeof *t * (cap *= 2));
        t[n++] = (llama_token)v;
        s = *end ? end + 1 : end;
    }
    *out = t;
    return n;
}

/* A batch of the tokens of sequence 0 at positions 0..n-1; outputs on all, or on the last. */
static struct llama_batch token_batch(const llama_token *toks, int n, int all) {
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = toks[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = all || i == n - 1;
    }
    b.n_tokens = n;
    return b;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: llama-ref logits|generate|bench -m MODEL ...\n");
        return 2;
    }
    const char *mode = argv[1], *model_path = NULL, *out_path = NULL, *tokens_s = NULL, *kv = "f32";
    int all = 0, threads = 1, ngl = 0, n_gen = 0, n_prompt = 512, reps = 3, ncmoe = -1, flash = 0, par = 1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-m") && more) model_path = argv[++i];
        else if (!strcmp(a, "--out") && more) out_path = argv[++i];
        else if (!strcmp(a, "--tokens") && more) tokens_s = argv[++i];
        else if (!strcmp(a, "--all")) all = 1;
        else if (!strcmp(a, "-t") && more) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--ngl") && more) ngl = atoi(argv[++i]);
        else if (!strcmp(a, "--ncmoe") && more) ncmoe = atoi(argv[++i]);
        else if (!strcmp(a, "-n") && more) n_gen = atoi(argv[++i]);
        else if (!strcmp(a, "-p") && more) n_prompt = atoi(argv[++i]);
        else if (!strcmp(a, "-r") && more) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--kv") && more) kv = argv[++i];
        else if (!strcmp(a, "--flash")) flash = 1;
        else if (!strcmp(a, "--parallel") && more) par = atoi(argv[++i]);
        else {
            fprintf(stderr, "llama-ref: unknown option %s\n", a);
            return 2;
        }
    }
    if (!model_path) {
        fprintf(stderr, "llama-ref: -m MODEL is required\n");
        return 2;
    }
    llama_log_set(quiet_log, NULL);
    const char *libdir = getenv("LLAMA_REF_LIBDIR");
#ifdef LLAMA_REF_LIBDIR_DEFAULT
    if (!libdir) libdir = LLAMA_REF_LIBDIR_DEFAULT;
#endif
    if (libdir) ggml_backend_load_all_from_path(libdir);
    else ggml_backend_load_all();
    llama_backend_init();

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = ngl;
    /* --ncmoe N: keep the expert tensors of the first N layers in host memory */
    char (*patterns)[64] = NULL;
    struct llama_model_tensor_buft_override *ov = NULL;
    if (ncmoe > 0) {
        patterns = calloc((size_t)ncmoe, sizeof *patterns);
        ov = calloc((size_t)ncmoe + 1, sizeof *ov);
        ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        for (int l = 0; l < ncmoe; l++) {
            snprintf(patterns[l], sizeof patterns[l], "blk\\.%d\\.ffn_(up|down|gate)_exps", l);
            ov[l].pattern = patterns[l];
            ov[l].buft = ggml_backend_dev_buffer_type(cpu);
        }
        mp.tensor_buft_overrides = ov;
    }
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) {
        fprintf(stderr, "llama-ref: cannot load %s\n", model_path);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);

    llama_token *toks = NULL;
    int n_tok = parse_tokens(tokens_s, &toks);
    int is_bench = !strcmp(mode, "bench");
    struct llama_context_params cp = llama_context_default_params();
    int need = is_bench ? n_prompt + n_gen + 8 : n_tok + n_gen + 8;
    cp.n_ctx = (uint32_t)(need < 256 ? 256 : need);
    cp.n_batch = cp.n_ubatch = is_bench ? (uint32_t)(n_prompt < 512 ? n_prompt : 512) : (uint32_t)(n_tok > 0 ? n_tok : 1);
    if (is_bench && cp.n_batch < 1) cp.n_batch = cp.n_ubatch = 1;
    cp.n_threads = cp.n_threads_batch = threads;
    if (par > 1) {
        cp.n_seq_max = (uint32_t)par;
        cp.n_ctx = (uint32_t)need * (uint32_t)par;
        cp.kv_unified = 1;
    }
    cp.flash_attn_type = flash ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = cp.type_v = !strcmp(kv, "f16") ? GGML_TYPE_F16 : GGML_TYPE_F32;
    cp.no_perf = 1;
    int embed = !strcmp(mode, "embed");
    if (embed) {
        cp.embeddings = 1;
        cp.pooling_type = LLAMA_POOLING_TYPE_UNSPECIFIED; /* the model's */
    }
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama-ref: cannot create a context\n");
        return 1;
    }

    if (embed) {
        if (n_tok < 1) {
            fprintf(stderr, "llama-ref: --tokens is required\n");
            return 2;
        }
        struct llama_batch b = token_batch(toks, n_tok, 1);
        const float *v = llama_decode(ctx, b) ? NULL : llama_get_embeddings_seq(ctx, 0);
        if (!v) {
            fprintf(stderr, "llama-ref: no pooled embedding (decode failed, or the model has no pooling type)\n");
            return 1;
        }
        FILE *f = fopen(out_path ? out_path : "/dev/stdout", "wb");
        if (!f) {
            perror(out_path);
            return 1;
        }
        fwrite(v, sizeof(float), (size_t)llama_model_n_embd(model), f);
        fclose(f);
        llama_batch_free(b);
    } else if (!strcmp(mode, "logits") || !strcmp(mode, "generate")) {
        if (n_tok < 1) {
            fprintf(stderr, "llama-ref: --tokens is required\n");
            return 2;
        }
        struct llama_batch b = token_batch(toks, n_tok, all);
        if (llama_decode(ctx, b)) {
            fprintf(stderr, "llama-ref: decode failed\n");
            return 1;
        }
        if (!strcmp(mode, "logits")) {
            FILE *f = fopen(out_path ? out_path : "/dev/stdout", "wb");
            if (!f) {
                perror(out_path);
                return 1;
            }
            for (int i = all ? 0 : n_tok - 1; i < n_tok; i++)
                fwrite(llama_get_logits_ith(ctx, i), sizeof(float), (size_t)n_vocab, f);
            fclose(f);
        } else {
            int pos = n_tok;
            const float *lg = llama_get_logits_ith(ctx, n_tok - 1);
            for (int g = 0; g < n_gen; g++) {
                int best = 0;
                for (int v = 1; v < n_vocab; v++)
                    if (lg[v] > lg[best]) best = v;
                printf("%d%s", best, g + 1 < n_gen ? " " : "\n");
                struct llama_batch one = llama_batch_get_one((llama_token[]){best}, 1);
                (void)pos;
                if (llama_decode(ctx, one)) {
                    fprintf(stderr, "llama-ref: decode failed\n");
                    return 1;
                }
                lg = llama_get_logits_ith(ctx, -1);
                pos++;
            }
        }
        llama_batch_free(b);
    } else if (is_bench) {
        if (n_gen <= 0) n_gen = 128;
        double best_pp = 0, best_tg = 0;
        llama_token *prompt = malloc(sizeof *prompt * (size_t)n_prompt);
        for (int i = 0; i < n_prompt; i++) prompt[i] = (llama_token)((i * 7919 + 13) % n_vocab);
        struct llama_batch pb = llama_batch_init((int)cp.n_batch > par ? (int)cp.n_batch : par, 0, 1);
        for (int r = 0; r < reps + 1; r++) { /* first round warms up */
            llama_memory_clear(llama_get_memory(ctx), 1);
            double t0 = now_s();
            for (int sq = 0; sq < par; sq++)
                for (int i = 0; i < n_prompt; i += (int)cp.n_batch) {
                    int nb = n_prompt - i < (int)cp.n_batch ? n_prompt - i : (int)cp.n_batch;
                    pb.n_tokens = nb;
                    for (int j = 0; j < nb; j++) {
                        pb.token[j] = prompt[i + j];
                        pb.pos[j] = i + j;
                        pb.n_seq_id[j] = 1;
                        pb.seq_id[j][0] = sq;
                        pb.logits[j] = i + j == n_prompt - 1;
                    }
                    if (llama_decode(ctx, pb)) return 1;
                }
            llama_synchronize(ctx);
            double t1 = now_s();
            llama_token t = prompt[n_prompt - 1];
            for (int g = 0; g < n_gen; g++) {
                pb.n_tokens = par;
                for (int sq = 0; sq < par; sq++) {
                    pb.token[sq] = (llama_token)((t + sq) % n_vocab);
                    pb.pos[sq] = n_prompt + g;
                    pb.n_seq_id[sq] = 1;
                    pb.seq_id[sq][0] = sq;
                    pb.logits[sq] = 1;
                }
                if (llama_decode(ctx, pb)) return 1;
                llama_synchronize(ctx);
                t = (llama_token)((t * 31 + 7) % n_vocab);
            }
            double t2 = now_s();
            if (r == 0) continue;
            double pp = (double)n_prompt * par / (t1 - t0), tg = (double)n_gen * par / (t2 - t1);
            if (pp > best_pp) best_pp = pp;
            if (tg > best_tg) best_tg = tg;
        }
        llama_batch_free(pb);
        printf("{\"engine\":\"llama.cpp\",\"model\":\"%s\",\"threads\":%d,\"ngl\":%d,\"ncmoe\":%d,"
               "\"parallel\":%d,\"prefill_tokens\":%d,\"prefill_tok_s\":%.2f,\"decode_tokens\":%d,\"decode_tok_s\":%.2f}\n",
               model_path, threads, ngl, ncmoe, par, n_prompt, best_pp, n_gen, best_tg);
        free(prompt);
    } else {
        fprintf(stderr, "llama-ref: unknown mode %s\n", mode);
        return 2;
    }
    llama_free(ctx);
    llama_model_free(model);
    free(toks);
    free(ov);
    free(patterns);
    return 0;
}
