/* SPDX-License-Identifier: Apache-2.0 */
/* strata run -m F.gguf -p "text" [-n N --temp --top-k --top-p --min-p --seed ...]: streams
 * the completion (UTF-8 safe) to stdout and ends with a statistics line on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_common.h"
#include "cli/cli_planned.h"
#include "engine/engine_split.h"
#include "cli/commands.h"
#include "engine/engine_offload.h"
#include "kv/kv.h"
#include "platform/platform.h"
#include "sample/sample.h"

static void help(FILE *f) {
    fprintf(f, "usage: strata run -m F.gguf -p \"text\" [options]\n"
               "  -p, --prompt T          prompt text (BOS added as the model says)\n"
               "  -n, --n-predict N       tokens to generate (default 128; stops early at end of text)\n"
               "  --temp X                temperature (default 0.8; 0 = greedy)\n"
               "  --top-k N               keep the N best tokens (default 40; 0 = off)\n"
               "  --top-p X               nucleus cut (default 0.95; 1 = off)\n"
               "  --min-p X               drop tokens below X * p(best) (default 0.05; 0 = off)\n"
               "  --repeat-penalty X      (default 1 = off)   --repeat-last-n N (default 64)\n"
               "  --presence-penalty X    --frequency-penalty X\n"
               "  --seed S                sampling seed (default: from the clock; printed at the end)\n"
               "  --ignore-eos            do not stop at the end-of-text token\n");
    st_cli_model_opts_help(f);
    st_offload_opts_help(f);
}

typedef struct run_opts {
    const char *prompt;
    long n_predict;
    st_sampler_params sp;
    int seed_given;
    int ignore_eos;
    st_offload_opts off;
} run_opts;

static int parse(int argc, char **argv, st_cli_model_opts *o, run_opts *r) {
    for (int i = 1; i < argc; i++) {
        const char *v;
        double x;
        long n;
        int k = st_cli_model_opt("run", argc, argv, &i, o);
        if (k < 0) return -1;
        if (k) continue;
        if ((k = st_offload_opt("run", argc, argv, &i, &r->off))) {
            if (k < 0) return -1;
            continue;
        }
#define FOPT(name, field)                                                                                  \
    if ((k = st_cli_opt(argc, argv, &i, name, NULL, &v))) {                                                \
        if (k < 0 || st_cli_float("run", name, v, &x)) return -1;                                          \
        r->sp.field = (float)x;                                                                            \
        continue;                                                                                          \
    }
        FOPT("--temp", temp)
        FOPT("--top-p", top_p)
        FOPT("--min-p", min_p)
        FOPT("--repeat-penalty", repeat_penalty)
        FOPT("--presence-penalty", presence_penalty)
        FOPT("--frequency-penalty", frequency_penalty)
#undef FOPT
        if ((k = st_cli_opt(argc, argv, &i, "--prompt", "-p", &v))) {
            if (k < 0) return -1;
            r->prompt = v;
        } else if ((k = st_cli_opt(argc, argv, &i, "--n-predict", "-n", &v))) {
            if (k < 0 || st_cli_int("run", "-n", v, 0, 1 << 24, &r->n_predict)) return -1;
        } else if ((k = st_cli_opt(argc, argv, &i, "--top-k", NULL, &v))) {
            if (k < 0 || st_cli_int("run", "--top-k", v, 0, 1 << 24, &n)) return -1;
            r->sp.top_k = (int32_t)n;
        } else if ((k = st_cli_opt(argc, argv, &i, "--repeat-last-n", NULL, &v))) {
            if (k < 0 || st_cli_int("run", "--repeat-last-n", v, -1, 1 << 24, &n)) return -1;
            r->sp.penalty_last_n = (int32_t)n;
        } else if ((k = st_cli_opt(argc, argv, &i, "--seed", "-s", &v))) {
            char *end;
            if (k < 0) return -1;
            r->sp.seed = strtoull(v, &end, 10);
            if (end == v || *end) {
                fprintf(stderr, "strata run: bad --seed '%s'\n", v);
                return -1;
            }
            r->seed_given = 1;
        } else if (!strcmp(argv[i], "--ignore-eos")) {
            r->ignore_eos = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            return 1;
        } else {
            fprintf(stderr, "strata run: unknown option '%s'\n", argv[i]);
            help(stderr);
            return -1;
        }
    }
    return 0;
}

/* Picks the next token from the last forward's logits, reading back as little as the
 * sampler needs: one id (greedy), the top candidates, or the whole row. */
static int next_token(st_cli_session *s, st_sampler *smp, float *row, int32_t *cid, float *cval, int32_t *out,
                      char *err, size_t errlen) {
    const st_model_params *mp = st_model_params_of(s->m);
    if (st_sampler_is_greedy(smp)) return st_model_argmax(s->m, out, err, errlen);
    int32_t k = st_sampler_candidates_needed(smp);
    if (k > 0 && k <= mp->topk_max) {
        if (st_model_topk(s->m, k, cid, cval, err, errlen)) return -1;
        *out = st_sampler_sample_cand(smp, cid, cval, k);
        return 0;
    }
    if (st_model_logits(s->m, row, err, errlen)) return -1;
    *out = st_sampler_sample(smp, row);
    return 0;
}

static void emit(const char *p, size_t n) {
    if (n) {
        fwrite(p, 1, n, stdout);
        fflush(stdout);
    }
}

int st_cmd_run(int argc, char **argv) {
    st_cli_model_opts o;
    memset(&o, 0, sizeof o);
    run_opts r;
    memset(&r, 0, sizeof r);
    r.n_predict = 128;
    st_sampler_params_default(&r.sp);
    st_offload_opts_init(&r.off);
    int pr = parse(argc, argv, &o, &r);
    if (pr) return pr > 0 ? 0 : 2;
    if (!r.seed_given) r.sp.seed = (uint64_t)time(NULL) ^ (st_now_ns() << 16);
    st_model_params mp;
    st_model_params_default(&mp);
    st_cli_session s;
    st_offload os;
    if (st_cli_open_planned("run", &s, &o, &r.off, &mp, 1, &os)) return 1;
    const int32_t V = s.d->hp.n_vocab, n_ctx = st_model_params_of(s.m)->n_ctx;
    char err[1024];
    int rc = 1;
    const char *prompt = r.prompt ? r.prompt : "";
    int32_t *ids = NULL;
    int64_t n_prompt = st_tokenizer_encode_alloc(s.tok, prompt, strlen(prompt), true, false, &ids);
    st_sampler *smp = st_sampler_new(&r.sp, V);
    /* the prompt is echoed and the completion continues it; from nothing, drop the leading space */
    st_detok *dt = st_detok_new(s.tok, prompt[0] ? 0u : (unsigned)ST_DETOK_STRIP_LEADING_SPACE);
    float *row = malloc((size_t)V * sizeof *row);
    const int32_t kmax = st_model_params_of(s.m)->topk_max;
    int32_t *cid = malloc(sizeof(int32_t) * (size_t)kmax);
    float *cval = malloc(sizeof(float) * (size_t)kmax);
    if (n_prompt < 0 || !smp || !dt || !row || !cid || !cval) {
        fprintf(stderr, "strata run: out of memory\n");
        goto done;
    }
    if (n_prompt == 0) { /* nothing to condition on: start from BOS (or token 0) */
        int32_t bos = st_tokenizer_bos(s.tok);
        free(ids);
        ids = malloc(sizeof *ids);
        if (!ids) goto done;
        ids[0] = bos >= 0 ? bos : 0;
        n_prompt = 1;
    }
    if (n_prompt >= n_ctx) {
        fprintf(stderr, "strata run: the prompt has %lld tokens; the context holds %d (use --ctx)\n",
                (long long)n_prompt, n_ctx);
        goto done;
    }
    for (int64_t i = 0; i < n_prompt; i++) st_sampler_accept(smp, ids[i]);
    {
        char sum[512];
        st_model_desc_summary(s.d, sum, sizeof sum);
        fprintf(stderr, "[%s on %s]\n", sum, s.device_text);
    }
    emit(prompt, strlen(prompt));
    uint64_t t0 = st_now_ns();
    if (st_model_eval(s.m, 0, ids, (int32_t)n_prompt, 0, 0, NULL, err, sizeof err)) {
        fprintf(stderr, "\nstrata run: prompt: %s\n", err);
        goto done;
    }
    int32_t tok;
    if (next_token(&s, smp, row, cid, cval, &tok, err, sizeof err)) {
        fprintf(stderr, "\nstrata run: %s\n", err);
        goto done;
    }
    uint64_t t1 = st_now_ns();
    int64_t n_gen = 0, n_dec = 0, pos = n_prompt; /* n_dec: decode forwards */
    const char *piece;
    size_t plen;
    const char *stop = "length";
    while (n_gen < r.n_predict) {
        if (!r.ignore_eos && st_tokenizer_is_eog(s.tok, tok)) {
            stop = "end of text";
            break;
        }
        n_gen++;
        st_sampler_accept(smp, tok);
        if (st_detok_push(dt, tok, &piece, &plen) == 0) emit(piece, plen);
        if (n_gen == r.n_predict) break;
        if (pos >= n_ctx) {
            stop = "context full";
            break;
        }
        if (st_model_eval(s.m, 0, &tok, 1, (int32_t)pos, 0, NULL, err, sizeof err) ||
            next_token(&s, smp, row, cid, cval, &tok, err, sizeof err)) {
            fprintf(stderr, "\nstrata run: token %lld: %s\n", (long long)n_gen, err);
            goto done;
        }
        pos++;
        n_dec++;
    }
    if (st_detok_flush(dt, &piece, &plen) == 0) emit(piece, plen);
    uint64_t t2 = st_now_ns();
    double tp = (double)(t1 - t0) / 1e9, tg = (double)(t2 - t1) / 1e9;
    printf("\n");
    fflush(stdout);
    fprintf(stderr,
            "[prompt: %lld tokens, %.1f tok/s | generated: %lld tokens, %.1f tok/s | stop: %s | seed %llu | %s]\n",
            (long long)n_prompt, tp > 0 ? (double)n_prompt / tp : 0.0, (long long)n_gen,
            tg > 0 ? (double)n_dec / tg : 0.0, stop, (unsigned long long)r.sp.seed, s.device_text);
    if (st_model_n_stages(s.m) > 1) {
        double last[ST_PLAN_MAX_DEVICES] = {0};
        char per[512];
        st_split_times(s.m, last, per, sizeof per);
        fprintf(stderr, "[time per device: %s]\n", per);
    }
    st_model_expert_info ei;
    if (st_model_expert_info_get(s.m, &ei) == 0)
        fprintf(stderr, "[experts: %lld of %lld slots, hit rate %.3f (%llu hits, %llu misses, %llu uploaded), "
                "CPU %.2f ms per token, %llu layer steps without a router sync]\n", (long long)ei.slots,
                (long long)ei.experts_total, st_expert_stats_hit_rate(&ei.stats), (unsigned long long)ei.stats.hits,
                (unsigned long long)ei.stats.misses, (unsigned long long)ei.stats.inserts,
                ei.tokens ? ei.cpu_s * 1e3 / (double)ei.tokens : 0.0, (unsigned long long)ei.resident_calls);
    if (st_model_expert_info_get(s.m, &ei) == 0 && ei.pin_note && ei.pin_note[0])
        fprintf(stderr, "[experts: %s]\n", ei.pin_note);
    rc = 0;
done:
    free(ids);
    free(row);
    free(cid);
    free(cval);
    st_detok_free(dt);
    st_sampler_free(smp);
    st_cli_close_planned(&s, &os);
    return rc;
}
