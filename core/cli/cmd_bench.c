/* SPDX-License-Identifier: Apache-2.0 */
/* strata bench -m F.gguf [-p 512 -n 128 -r 3] [--json]: prefill and decode speed, the bytes
 * of weights and KV one decode token touches (non-expert weights + the routed experts + the
 * KV it reads), and the bandwidth that implies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/cli_planned.h"
#include "cli/commands.h"
#include "engine/engine_offload.h"
#include "experts/expert_stats.h"
#include "plan/plan.h"
#include "kv/kv.h"
#include "platform/platform.h"
#include "quant/quant.h"
#include "sample/sample.h"

static void help(FILE *f) {
    fprintf(f, "usage: strata bench -m F.gguf [-p 512] [-n 128] [-r 3] [--parallel P] [--json] [options]\n"
               "  -p N        prompt tokens for the prefill measurement (0 = skip)\n"
               "  -n N        tokens decoded one at a time after the prompt (0 = skip)\n"
               "  -d N        depth: N context tokens evaluated (not timed) before the prompt, so prefill\n"
               "              runs at positions N.. and decode at N+p.. (llama-bench's -d; for a decode\n"
               "              figure at the same depth as llama-bench -d N -n M, use -d N -p 0)\n"
               "  -r N        repetitions (mean and standard deviation are reported)\n"
               "  --parallel P  P sequences each get the prompt, then decode together (P tokens per\n"
               "              step); tok/s are aggregate over the sequences\n"
               "  --seed S    random prompt tokens (default: token i = (i * 7919 + 13) mod vocab, as the\n"
               "              llama.cpp reference tool uses)\n"
               "  --decode-tokens M  what each decode step feeds back: random (default, as llama-bench:\n"
               "              routing that a repeating greedy loop would flatter is not measured),\n"
               "              sample (temperature 1.0 from the logits) or greedy (the argmax)\n"
               "  --json      one JSON object on stdout instead of the table\n"
               "  --no-routing-trace  no routing statistics or Belady figures: nothing reads the routers'\n"
               "              choices back, so a fixed placement's fully resident layers skip the host\n");
    st_cli_model_opts_help(f);
    st_offload_opts_help(f);
}

typedef struct stat {
    double sum, sum2;
    int n;
} stat;
static void stat_add(stat *s, double x) {
    s->sum += x;
    s->sum2 += x * x;
    s->n++;
}
static double stat_mean(const stat *s) { return s->n ? s->sum / s->n : 0.0; }
static double stat_sd(const stat *s) {
    if (s->n < 2) return 0.0;
    double m = stat_mean(s), v = (s->sum2 - s->n * m * m) / (s->n - 1);
    return v > 0 ? sqrt(v) : 0.0;
}

/* Bytes of weights one decode token reads: everything but the embedding table (one row of
 * it) and the routed experts, plus k experts of every MoE layer. */
static void decode_bytes(const st_model_desc *d, uint64_t *nonexp, uint64_t *experts) {
    const st_gguf_tensor *te = d->token_embd;
    uint64_t embd_row = st_row_size(te->type, te->ne[0]);
    *nonexp = d->bytes_nonexpert - te->nbytes + embd_row + (d->hp.tied_output ? te->nbytes : 0);
    *experts = 0;
    for (int l = 0; l < d->hp.n_layer; l++) {
        const st_layer_desc *L = &d->layers[l];
        if (!L->is_moe) continue;
        uint64_t slice = 0;
        for (int r = ST_T_FFN_GATE_EXPS; r <= ST_T_FFN_DOWN_EXPS; r++) slice += L->t[r]->nbytes / (uint64_t)d->hp.n_expert;
        *experts += slice * (uint64_t)d->hp.n_expert_used;
    }
}

/* Expert bytes a prefill read: the experts its tokens were routed to (counted on a pass). */
static uint64_t used_expert_bytes(const st_model_desc *d, const uint64_t *counts) {
    uint64_t b = 0;
    if (!counts) return 0;
    for (int l = 0; l < d->hp.n_layer; l++) {
        const st_layer_desc *L = &d->layers[l];
        if (!L->is_moe) continue;
        uint64_t slice = 0;
        for (int r = ST_T_FFN_GATE_EXPS; r <= ST_T_FFN_DOWN_EXPS; r++) slice += L->t[r]->nbytes / (uint64_t)d->hp.n_expert;
        for (int e = 0; e < d->hp.n_expert; e++)
            if (counts[(size_t)l * (size_t)d->hp.n_expert + (size_t)e]) b += slice;
    }
    return b;
}

enum { DEC_RANDOM = 0, DEC_SAMPLE = 1, DEC_GREEDY = 2 };
static const char *const k_dec_names[] = {"random", "sample", "greedy"};

/* The tokens the next decode step feeds back, one per sequence (tok[par]), after a forward. */
typedef struct dec_src {
    int mode;
    int32_t n_vocab;
    st_rng rng;
    st_sampler *smp;  /* sample */
    float *logits;    /* [par][n_vocab], sample */
} dec_src;

static int dec_next(dec_src *d, st_model *m, long par, int32_t *tok, char *err, size_t errlen) {
    if (d->mode == DEC_RANDOM) {
        for (long q = 0; q < par; q++) tok[q] = (int32_t)(st_rng_next(&d->rng) % (uint64_t)d->n_vocab);
        return 0;
    }
    if (d->mode == DEC_GREEDY) {
        if (st_model_argmax(m, tok, err, errlen)) return -1;
        /* same prompts give the same picks: shift them per sequence (as the llama.cpp reference
         * tool does) so the sequences route like different requests */
        for (long q = 1; q < par; q++) tok[q] = (int32_t)((tok[q] + q) % d->n_vocab);
        return 0;
    }
    if (st_model_logits(m, d->logits, err, errlen)) return -1;
    for (long q = 0; q < par; q++) tok[q] = st_sampler_sample(d->smp, d->logits + (size_t)q * (size_t)d->n_vocab);
    return 0;
}

/* The routing of the measured decode steps against what static placements and Belady would have
 * hit on the same lookups: a split keeping whole layers' experts on the device (llama.cpp's
 * --n-cpu-moe; hit rate = resident layers / MoE layers) and the best fixed set of `slots` pairs
 * chosen in hindsight from the decode counts. Printed as a line, or JSON members. */
static void print_decode_routing(const st_model_desc *d, const st_route_stats *rs, int64_t slots, double belady,
                                 int json) {
    st_route_summary r;
    st_route_stats_summary(rs, &r);
    int moe_layers = 0;
    for (int l = 0; l < d->hp.n_layer; l++) moe_layers += d->layers[l].is_moe;
    double static_layers = 0, static_best = 0;
    if (slots >= 0 && moe_layers > 0 && r.uses > 0) {
        int64_t full = slots / d->hp.n_expert;
        static_layers = (double)(full < moe_layers ? full : moe_layers) / (double)moe_layers;
        uint64_t *c = malloc((size_t)r.pairs_total * sizeof *c);
        if (c) {
            memcpy(c, st_route_stats_counts(rs), (size_t)r.pairs_total * sizeof *c);
            static_best = st_expert_top_share(c, r.pairs_total, slots);
            free(c);
        }
    }
    char buf[1024];
    if (json) {
        st_route_summary_json(&r, buf, sizeof buf);
        printf(",\"decode_routing\":{%s", buf);
        if (slots >= 0)
            printf(",\"static_layers_hit_rate\":%.4f,\"static_best_hit_rate\":%.4f,\"belady_hit_rate\":%.4f",
                   static_layers, static_best, belady);
        printf("}");
        return;
    }
    st_route_summary_format(&r, buf, sizeof buf);
    printf("decode %s", buf);
    if (slots >= 0)
        printf("decode routing, same lookups: whole layers resident (static split) would hit %.3f, the best fixed "
               "set of %lld experts %.3f, Belady %.3f\n", static_layers, (long long)slots, static_best, belady);
}

/* A copy of the expert cache's slot table (*table, allocated once), where a decode phase starts.
 * 0, or -1 for a model without a cache. */
static int decode_resident(st_model *m, int32_t **table) {
    const st_expert_cache *c = st_model_expert_cache(m);
    if (!c) return -1;
    const st_hparams *hp = &st_model_desc_of(m)->hp;
    const size_t n = (size_t)hp->n_layer * (size_t)hp->n_expert;
    if (!*table && !(*table = malloc(n * sizeof **table))) return -1;
    memcpy(*table, st_expert_cache_table(c), n * sizeof **table);
    return 0;
}

/* Adds Belady's optimum over the lookups since trace position `from` (from the residents then)
 * to *acc. 0, or -1 when the window was not recorded in full. */
static int decode_belady(st_model *m, uint64_t from, const int32_t *resident, st_expert_stats *acc) {
    st_expert_stats b;
    char e[256];
    if (st_model_expert_belady_window(m, from, st_model_expert_trace_pos(m), resident, &b, e, sizeof e)) return -1;
    acc->hits += b.hits;
    acc->misses += b.misses;
    return 0;
}

/* The command line. */
typedef struct bench_opts {
    st_cli_model_opts o;
    st_offload_opts oo;
    long n_p, n_g, reps, par, depth;
    uint64_t seed;
    int seed_given, json, dec_mode, no_trace;
} bench_opts;

/* One bench option at argv[*i] (not a model or offload one): 1 taken, 0 not ours, -1 bad. */
static int bench_opt(int argc, char **argv, int *i, bench_opts *b) {
    const char *v;
    int r;
    if ((r = st_cli_opt(argc, argv, i, "-p", "--n-prompt", &v)))
        return r < 0 || st_cli_int("bench", "-p", v, 0, 1 << 22, &b->n_p) ? -1 : 1;
    if ((r = st_cli_opt(argc, argv, i, "-n", "--n-gen", &v)))
        return r < 0 || st_cli_int("bench", "-n", v, 0, 1 << 22, &b->n_g) ? -1 : 1;
    if ((r = st_cli_opt(argc, argv, i, "-d", "--depth", &v)))
        return r < 0 || st_cli_int("bench", "-d", v, 0, 1 << 22, &b->depth) ? -1 : 1;
    if ((r = st_cli_opt(argc, argv, i, "-r", "--repetitions", &v)))
        return r < 0 || st_cli_int("bench", "-r", v, 1, 1000, &b->reps) ? -1 : 1;
    if ((r = st_cli_opt(argc, argv, i, "--parallel", "-P", &v)))
        return r < 0 || st_cli_int("bench", "--parallel", v, 1, 1024, &b->par) ? -1 : 1;
    if ((r = st_cli_opt(argc, argv, i, "--seed", NULL, &v))) {
        if (r < 0) return -1;
        b->seed = strtoull(v, NULL, 10);
        b->seed_given = 1;
        return 1;
    }
    if ((r = st_cli_opt(argc, argv, i, "--decode-tokens", NULL, &v))) {
        b->dec_mode = -1;
        for (int k = 0; r > 0 && k < 3; k++)
            if (!strcmp(v, k_dec_names[k])) b->dec_mode = k;
        if (b->dec_mode >= 0) return 1;
        fprintf(stderr, "strata bench: bad value '%s' for --decode-tokens (random, sample or greedy)\n", r > 0 ? v : "");
        return -1;
    }
    if (!strcmp(argv[*i], "--json")) return b->json = 1;
    if (!strcmp(argv[*i], "--no-routing-trace")) return b->no_trace = 1;
    return 0;
}

/* 0 to run, 1 done (help), 2 bad command line. */
static int bench_parse(int argc, char **argv, bench_opts *b) {
    memset(b, 0, sizeof *b);
    b->n_p = 512, b->n_g = 128, b->reps = 3, b->par = 1, b->seed = 1, b->dec_mode = DEC_RANDOM;
    st_offload_opts_init(&b->oo);
    for (int i = 1; i < argc; i++) {
        int r = st_cli_model_opt("bench", argc, argv, &i, &b->o);
        if (!r) r = st_offload_opt("bench", argc, argv, &i, &b->oo);
        if (!r) r = bench_opt(argc, argv, &i, b);
        if (r < 0) return 2;
        if (r) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            return 1;
        }
        fprintf(stderr, "strata bench: unknown option '%s'\n", argv[i]);
        help(stderr);
        return 2;
    }
    if (b->n_p + b->n_g == 0) {
        fprintf(stderr, "strata bench: nothing to measure (-p 0 -n 0)\n");
        return 2;
    }
    if (b->o.batch > 0 && b->o.batch < b->par) {
        fprintf(stderr, "strata bench: --parallel %ld needs --batch >= %ld\n", b->par, b->par);
        return 2;
    }
    return 0;
}

/* A run: the session, the host buffers of the steps, the statistics gathered. */
typedef struct bench_run {
    st_cli_session s;
    st_offload os;
    const st_model_desc *d;
    long np1;                        /* prompt tokens held: the longer of -p and -d, at least 1 */
    int32_t *prompt;                 /* [np1] */
    int32_t *tok, *pos, *sq;         /* [par] the decode step's batch */
    int8_t *want;                    /* [par] */
    dec_src ds;
    st_route_stats *rs;              /* decode routing statistics, or NULL */
    int32_t *resident;               /* the cache's table where a decode phase starts */
    st_expert_stats bel_dec;         /* Belady over the decode phases, from those tables */
    int bel_ok;
    stat sp, sg;                     /* prefill and decode tok/s over the repetitions */
    double best_p, best_g;
    st_model_expert_info ex_dec;     /* expert counters summed over the decode phases */
    double b_nonexp, b_exp, b_kv, b_tok, gbs, b_pre, gbs_pre; /* bytes per step, GB/s */
} bench_run;

/* Host buffers, the prompt (the llama.cpp reference tool's token formula, or seeded), the
 * decode token source and the routing statistics. 0 or -1 with err. */
static int bench_alloc(bench_run *r, const bench_opts *b, char *err, size_t errlen) {
    const int32_t V = r->d->hp.n_vocab;
    const long par = b->par;
    r->np1 = b->n_p > b->depth ? b->n_p : b->depth > 0 ? b->depth : 1;
    r->prompt = malloc((size_t)r->np1 * sizeof *r->prompt);
    r->tok = malloc((size_t)par * sizeof *r->tok), r->pos = malloc((size_t)par * sizeof *r->pos);
    r->sq = malloc((size_t)par * sizeof *r->sq);
    r->want = malloc((size_t)par);
    if (!r->prompt || !r->tok || !r->pos || !r->sq || !r->want) goto oom;
    st_rng rng;
    st_rng_seed(&rng, b->seed);
    for (long i = 0; i < r->np1; i++)
        r->prompt[i] = b->seed_given ? (int32_t)(st_rng_next(&rng) % (uint64_t)V) : (int32_t)((i * 7919 + 13) % V);
    for (long q = 0; q < par; q++) r->sq[q] = (int32_t)q, r->want[q] = 1;
    r->ds.mode = b->dec_mode;
    r->ds.n_vocab = V;
    st_rng_seed(&r->ds.rng, b->seed + 0x5eed);
    r->bel_ok = !b->no_trace;
    if (b->dec_mode == DEC_SAMPLE) {
        st_sampler_params sp0;
        st_sampler_params_default(&sp0);
        sp0.temp = 1.0f, sp0.top_k = 0, sp0.top_p = 1.0f, sp0.min_p = 0.0f, sp0.seed = b->seed;
        r->ds.smp = st_sampler_new(&sp0, V);
        r->ds.logits = malloc((size_t)par * (size_t)V * sizeof *r->ds.logits);
        if (!r->ds.smp || !r->ds.logits) goto oom;
    }
    if (r->d->hp.n_expert > 0 && b->n_g > 0 && !b->no_trace) {
        r->rs = st_route_stats_create(r->d->hp.n_layer, r->d->hp.n_expert, r->d->hp.n_expert_used, err, errlen);
        if (!r->rs) return -1;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of host memory");
    return -1;
}

/* One repetition's prefill: the untimed depth, then every sequence gets the timed prompt. */
static int bench_prefill(bench_run *r, const bench_opts *b, long *at, char *err, size_t errlen) {
    st_model *m = r->s.m;
    for (long q = 0; q < b->par && b->depth > 0; q++) /* the context already there (not timed) */
        if (st_model_eval(m, (int32_t)q, r->prompt, (int32_t)b->depth, 0, 0, NULL, err, errlen)) return -1;
    *at = b->depth;
    if (b->n_p <= 0) return 0;
    uint64_t t0 = st_now_ns();
    for (long q = 0; q < b->par; q++)
        if (st_model_eval(m, (int32_t)q, r->prompt, (int32_t)b->n_p, (int32_t)b->depth, 0, NULL, err, errlen) ||
            st_model_argmax(m, &r->tok[q], err, errlen))
            return -1;
    double v = (double)(b->n_p * b->par) / ((double)(st_now_ns() - t0) / 1e9);
    for (long q = 1; q < b->par; q++) r->tok[q] = (int32_t)((r->tok[q] + q) % r->d->hp.n_vocab);
    stat_add(&r->sp, v);
    r->best_p = v > r->best_p ? v : r->best_p;
    *at = b->depth + b->n_p;
    return 0;
}

static void add_expert_delta(st_model_expert_info *acc, const st_model_expert_info *e0, const st_model_expert_info *e1) {
    acc->tokens += e1->tokens - e0->tokens;
    acc->cpu_s += e1->cpu_s - e0->cpu_s;
    acc->route_s += e1->route_s - e0->route_s;
    acc->cpu_assign += e1->cpu_assign - e0->cpu_assign;
    acc->stats.hits += e1->stats.hits - e0->stats.hits;
    acc->stats.misses += e1->stats.misses - e0->stats.misses;
    acc->stats.bytes_upload += e1->stats.bytes_upload - e0->stats.bytes_upload;
}

/* One repetition's decode: the sequences decode together, one token of each per step, from
 * position at; the routing statistics and Belady's window around it. */
static int bench_decode(bench_run *r, const bench_opts *b, long at, char *err, size_t errlen) {
    st_model *m = r->s.m;
    st_model_expert_info e0, e1;
    st_model_expert_info_get(m, &e0);
    const uint64_t tr0 = st_model_expert_trace_pos(m);
    if (r->bel_ok && decode_resident(m, &r->resident)) r->bel_ok = 0;
    if (r->rs) {
        st_route_stats_break(r->rs);
        st_model_route_stats(m, r->rs);
    }
    uint64_t t0 = st_now_ns();
    for (long i = 0; i < b->n_g; i++, at++) {
        for (long q = 0; q < b->par; q++) r->pos[q] = (int32_t)at;
        st_batch bt = {(int32_t)b->par, r->tok, r->pos, r->sq, r->want};
        if (st_model_forward(m, &bt, err, errlen) || dec_next(&r->ds, m, b->par, r->tok, err, errlen)) return -1;
    }
    double v = (double)(b->n_g * b->par) / ((double)(st_now_ns() - t0) / 1e9);
    st_model_route_stats(m, NULL);
    if (r->bel_ok) r->bel_ok = decode_belady(m, tr0, r->resident, &r->bel_dec) == 0;
    st_model_expert_info_get(m, &e1);
    add_expert_delta(&r->ex_dec, &e0, &e1);
    stat_add(&r->sg, v);
    r->best_g = v > r->best_g ? v : r->best_g;
    return 0;
}

/* Expert bytes a counted forward of `fw` touched (counting on around it). */
static int counted(st_model *m, const st_model_desc *d, int (*fw)(bench_run *, void *), bench_run *r, void *arg,
                   double *bytes) {
    st_model_expert_counts_reset(m);
    st_model_count_experts(m, 1);
    int rc = fw(r, arg);
    st_model_count_experts(m, 0);
    if (!rc) *bytes = (double)used_expert_bytes(d, st_model_expert_counts(m));
    return rc;
}

typedef struct fw_arg { const bench_opts *b; long at; char *err; size_t errlen; } fw_arg;

static int fw_decode_step(bench_run *r, void *p) {
    fw_arg *a = p;
    for (long q = 0; q < a->b->par; q++) r->pos[q] = (int32_t)a->at;
    st_batch bt = {(int32_t)a->b->par, r->tok, r->pos, r->sq, r->want};
    return st_model_forward(r->s.m, &bt, a->err, a->errlen);
}

static int fw_prompt(bench_run *r, void *p) {
    fw_arg *a = p;
    st_model_kv_clear(r->s.m);
    return st_model_eval(r->s.m, 0, r->prompt, (int32_t)a->b->n_p, 0, 0, NULL, a->err, a->errlen);
}

/* Bytes one decode step reads: non-expert weights once, the experts its tokens woke (all k
 * distinct per layer for one sequence; counted on one more step for several), and the KV of
 * every sequence at the mean decode position; and the bytes of the prefill (one counted pass
 * tells which experts the prompt woke). */
static int bench_bytes(bench_run *r, const bench_opts *b, char *err, size_t errlen) {
    const st_model_desc *d = r->d;
    st_model *m = r->s.m;
    uint64_t nonexp, exp;
    decode_bytes(d, &nonexp, &exp);
    r->b_nonexp = (double)nonexp, r->b_exp = (double)exp;
    fw_arg a = {b, b->depth + b->n_p + b->n_g, err, errlen};
    if (b->par > 1 && d->hp.n_expert > 0 && b->n_g > 0 && a.at + 1 <= st_model_params_of(m)->n_ctx &&
        counted(m, d, fw_decode_step, r, &a, &r->b_exp))
        return -1;
    const double mean_pos = (double)(b->depth + b->n_p) + (double)b->n_g / 2.0;
    r->b_kv = mean_pos * (double)st_model_kv_bytes_per_pos(m) * (double)b->par;
    r->b_tok = r->b_nonexp + r->b_exp + r->b_kv; /* per step */
    r->gbs = r->b_tok * (stat_mean(&r->sg) / (double)b->par) / 1e9;
    if (b->n_p <= 0) return 0;
    double pre_exp = 0;
    if (d->hp.n_expert > 0 && counted(m, d, fw_prompt, r, &a, &pre_exp)) return -1;
    const long nb = st_model_params_of(m)->n_batch, chunks = (b->n_p + nb - 1) / nb;
    r->b_pre = (double)chunks * r->b_nonexp + pre_exp;
    r->gbs_pre = r->b_pre / ((double)b->n_p / (stat_mean(&r->sp) / (double)b->par)) / 1e9;
    return 0;
}

/* The plan, and what a peer keeping some layers' experts on the CPU would place: non-expert
 * weights, the experts of one MoE layer, the other buffers (JSON members). */
static void print_plan_json(const st_offload *os, const st_model_desc *d) {
    const st_plan_device *pd = &os->plan->dev[0];
    uint64_t wb = 0, other = 0;
    for (int32_t c = 0; c < pd->n_consumers; c++) {
        const st_plan_consumer *pc = &pd->c[c];
        if (pc->kind == ST_PLAN_WEIGHTS) wb += pc->bytes;
        else if (pc->kind != ST_PLAN_EXPERT_CACHE && st_plan_kind_allocated(pc->kind)) other += pc->bytes;
    }
    int moe_layers = 0;
    for (int l = 0; l < d->hp.n_layer; l++) moe_layers += d->layers[l].is_moe;
    printf(",\"plan\":{\"device\":\"%s\",\"capacity\":%llu,\"planned\":%llu,\"allocated\":%llu,"
           "\"vram_budget\":%llu,\"expert_slots\":%lld,\"expert_slots_max\":%lld,"
           "\"nonexpert_weight_bytes\":%llu,\"other_buffer_bytes\":%llu,\"moe_layers\":%d,"
           "\"expert_bytes_per_layer\":%llu}",
           os->device, (unsigned long long)pd->capacity, (unsigned long long)pd->planned,
           (unsigned long long)pd->allocated, (unsigned long long)pd->in.vram_budget, (long long)os->expert_slots,
           (long long)pd->expert_slots_max, (unsigned long long)wb, (unsigned long long)other, moe_layers,
           (unsigned long long)(moe_layers ? d->bytes_experts / (uint64_t)moe_layers : 0));
}

static void print_json(const bench_run *r, const bench_opts *b, const st_model_expert_info *ex_all, int hybrid,
                       double bel_rate) {
    st_model *m = r->s.m;
    const st_model_params *mp = st_model_params_of(m);
    const double P = (double)b->par;
    printf("{\"model\":\"%s\",\"arch\":\"%s\",\"device\":\"%s\",\"weights_in_place\":%s,\"kv_type\":\"%s\","
           "\"decode_tokens\":\"%s\",\"depth\":%ld,\"n_prompt\":%ld,\"n_gen\":%ld,\"repetitions\":%ld,\"threads\":%ld,"
           "\"n_ctx\":%d,\"n_batch\":%d,\"parallel\":%ld,\"prefill_tok_s\":%.3f,\"prefill_tok_s_sd\":%.3f,"
           "\"prefill_tok_s_best\":%.3f,\"decode_tok_s\":%.3f,\"decode_tok_s_sd\":%.3f,\"decode_tok_s_best\":%.3f,",
           b->o.model, r->d->hp.arch_name, r->s.device_text, st_model_weights_in_place(m) ? "true" : "false",
           st_type_name(mp->kv_type), k_dec_names[b->dec_mode], b->depth, b->n_p, b->n_g, b->reps, b->o.threads,
           mp->n_ctx, mp->n_batch, b->par, stat_mean(&r->sp), stat_sd(&r->sp), r->best_p, stat_mean(&r->sg),
           stat_sd(&r->sg), r->best_g);
    printf("\"decode_bytes_per_token\":{\"nonexpert\":%.0f,\"experts\":%.0f,\"kv\":%.0f,\"total\":%.0f},"
           "\"decode_bytes_per_step\":%.0f,\"decode_gb_s\":%.3f,\"prefill_bytes\":%.0f,\"prefill_gb_s\":%.3f,"
           "\"device_bw_gb_s\":%.1f",
           r->b_nonexp / P, r->b_exp / P, r->b_kv / P, r->b_tok / P, r->b_tok, r->gbs, r->b_pre, r->gbs_pre,
           r->s.mem_bw_gbs);
    if (r->s.mem_bw_gbs > 0) printf(",\"decode_bw_fraction\":%.4f", r->gbs / r->s.mem_bw_gbs);
    if (hybrid) {
        char ex_json[1024];
        st_offload_format_json(m, ex_json, sizeof ex_json);
        const st_model_expert_info *x = &r->ex_dec;
        const double dt = x->tokens ? (double)x->tokens : 1.0;
        printf("%s,\"experts_decode\":{\"hit_rate\":%.4f,\"hits\":%llu,\"misses\":%llu,\"upload_bytes\":%llu,"
               "\"cpu_ms_per_token\":%.4f,\"route_sync_ms_per_token\":%.4f,\"cpu_assignments_per_token\":%.3f}",
               ex_json, st_expert_stats_hit_rate(&x->stats), (unsigned long long)x->stats.hits,
               (unsigned long long)x->stats.misses, (unsigned long long)x->stats.bytes_upload, x->cpu_s * 1e3 / dt,
               x->route_s * 1e3 / dt, (double)x->cpu_assign / dt);
    }
    if (r->os.plan) print_plan_json(&r->os, r->d);
    if (r->rs) print_decode_routing(r->d, r->rs, hybrid ? ex_all->slots : -1, bel_rate, 1);
    printf("}\n");
}

static void print_experts_text(const bench_run *r, const st_model_expert_info *ex_all) {
    const st_model_expert_info *x = &r->ex_dec;
    const double dt = x->tokens ? (double)x->tokens : 1.0;
    st_expert_stats bel;
    char be[256];
    printf("experts: %lld of %lld slots; decode hit rate %.3f, %.2f ms per token on the CPU (%.2f expert rows), "
           "%.2f ms waiting for the router; whole run hit rate %.3f",
           (long long)ex_all->slots, (long long)ex_all->experts_total, st_expert_stats_hit_rate(&x->stats),
           x->cpu_s * 1e3 / dt, (double)x->cpu_assign / dt, x->route_s * 1e3 / dt,
           st_expert_stats_hit_rate(&ex_all->stats));
    if (st_model_expert_belady(r->s.m, &bel, be, sizeof be) == 0) printf(" (Belady %.3f)", st_expert_stats_hit_rate(&bel));
    printf("\n");
}

static void print_text(const bench_run *r, const bench_opts *b, const st_model_expert_info *ex_all, int hybrid,
                       double bel_rate) {
    const double P = (double)b->par;
    char sum[512];
    st_model_desc_summary(r->d, sum, sizeof sum);
    printf("model:   %s\n         %s\n", b->o.model, sum);
    printf("device:  %s (weights %s, KV %s)\n", r->s.device_text,
           st_model_weights_in_place(r->s.m) ? "read in place" : "copied", st_type_name(st_model_params_of(r->s.m)->kv_type));
    if (b->par > 1) printf("sequences: %ld (each gets the prompt, then they decode together)\n", b->par);
    if (b->n_p > 0)
        printf("prefill: %ld tokens: %10.1f tok/s (sd %.1f, best %.1f, %ld runs)  ~%.2f GB/s of weights\n",
               b->n_p * b->par, stat_mean(&r->sp), stat_sd(&r->sp), r->best_p, b->reps, r->gbs_pre);
    if (b->n_g <= 0) return;
    printf("decode:  %ld tokens: %10.1f tok/s (sd %.1f, best %.1f, %ld runs; %s tokens fed back)\n", b->n_g * b->par,
           stat_mean(&r->sg), stat_sd(&r->sg), r->best_g, b->reps, k_dec_names[b->dec_mode]);
    printf("bytes per decode token: %.2f MB = non-expert %.2f MB + routed experts %.2f MB + KV %.2f MB\n",
           r->b_tok / P / 1e6, r->b_nonexp / P / 1e6, r->b_exp / P / 1e6, r->b_kv / P / 1e6);
    if (hybrid) print_experts_text(r, ex_all);
    if (r->rs) print_decode_routing(r->d, r->rs, hybrid ? ex_all->slots : -1, bel_rate, 0);
    printf("achieved: %.2f GB/s", r->gbs);
    if (r->s.mem_bw_gbs > 0)
        printf(" (%.0f%% of the device's %.0f GB/s)", 100.0 * r->gbs / r->s.mem_bw_gbs, r->s.mem_bw_gbs);
    printf("\n");
}

/* The warm-up forward, then the repetitions (prefill, decode), the bytes, the report. */
static int bench_measure(bench_run *r, const bench_opts *b, char *err, size_t errlen) {
    st_model *m = r->s.m;
    /* warm-up: one small forward (first-touch of pages, module threads) */
    if (st_model_eval(m, 0, r->prompt, 1, 0, 0, NULL, err, errlen) || st_model_argmax(m, r->tok, err, errlen))
        return -1;
    /* expert cache statistics of the measured runs (the routing trace too, for Belady) */
    st_model_expert_stats_reset(m);
    st_model_expert_trace(m, !b->no_trace);
    for (long rep = 0; rep < b->reps; rep++) {
        st_model_kv_clear(m);
        for (long q = 0; q < b->par; q++) r->tok[q] = r->prompt[r->np1 - 1];
        long at = 0;
        if (bench_prefill(r, b, &at, err, errlen)) return -1;
        if (b->n_g > 0 && bench_decode(r, b, at, err, errlen)) return -1;
    }
    st_model_expert_trace(m, 0);
    st_model_expert_info ex_all;
    const int hybrid = st_model_expert_info_get(m, &ex_all) == 0;
    const double bel_rate = r->bel_ok && hybrid ? st_expert_stats_hit_rate(&r->bel_dec) : -1;
    if (bench_bytes(r, b, err, errlen)) return -1;
    if (b->json) print_json(r, b, &ex_all, hybrid, bel_rate);
    else print_text(r, b, &ex_all, hybrid, bel_rate);
    return 0;
}

int st_cmd_bench(int argc, char **argv) {
    bench_opts b;
    int pr = bench_parse(argc, argv, &b);
    if (pr) return pr == 1 ? 0 : 2;
    st_model_params mp;
    st_model_params_default(&mp);
    if (b.o.ctx <= 0) mp.n_ctx = (int32_t)((b.depth + b.n_p + b.n_g + 1 + 255) / 256 * 256);
    mp.n_seq = (int32_t)b.par;
    mp.n_out_max = (int32_t)b.par;
    bench_run r;
    memset(&r, 0, sizeof r);
    if (st_cli_open_planned("bench", &r.s, &b.o, &b.oo, &mp, 0, &r.os)) return 1;
    r.d = r.s.d;
    char err[1024];
    int rc = 1;
    const long need = b.depth + b.n_p + b.n_g + 1;
    if (need > st_model_params_of(r.s.m)->n_ctx) {
        fprintf(stderr, "strata bench: -d %ld -p %ld -n %ld needs a context of %ld (--ctx)\n", b.depth, b.n_p, b.n_g,
                need);
        rc = 2;
        goto done;
    }
    if (bench_alloc(&r, &b, err, sizeof err) || bench_measure(&r, &b, err, sizeof err)) {
        fprintf(stderr, "strata bench: %s\n", err);
        goto done;
    }
    rc = 0;
done:
    if (r.s.m) st_model_route_stats(r.s.m, NULL);
    st_route_stats_free(r.rs);
    st_sampler_free(r.ds.smp);
    free(r.ds.logits);
    free(r.resident);
    free(r.prompt);
    free(r.tok);
    free(r.pos);
    free(r.sq);
    free(r.want);
    st_cli_close_planned(&r.s, &r.os);
    return rc;
}
