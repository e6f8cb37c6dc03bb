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

int st_cmd_bench(int argc, char **argv) {
    st_cli_model_opts o;
    memset(&o, 0, sizeof o);
    long n_p = 512, n_g = 128, reps = 3, par = 1, depth = 0;
    uint64_t seed = 1;
    int seed_given = 0;
    int json = 0, dec_mode = DEC_RANDOM, no_trace = 0;
    st_offload_opts oo;
    st_offload_opts_init(&oo);
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r = st_cli_model_opt("bench", argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r) continue;
        if ((r = st_offload_opt("bench", argc, argv, &i, &oo))) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = st_cli_opt(argc, argv, &i, "-p", "--n-prompt", &v))) {
            if (r < 0 || st_cli_int("bench", "-p", v, 0, 1 << 22, &n_p)) return 2;
        } else if ((r = st_cli_opt(argc, argv, &i, "-n", "--n-gen", &v))) {
            if (r < 0 || st_cli_int("bench", "-n", v, 0, 1 << 22, &n_g)) return 2;
        } else if ((r = st_cli_opt(argc, argv, &i, "-d", "--depth", &v))) {
            if (r < 0 || st_cli_int("bench", "-d", v, 0, 1 << 22, &depth)) return 2;
        } else if ((r = st_cli_opt(argc, argv, &i, "-r", "--repetitions", &v))) {
            if (r < 0 || st_cli_int("bench", "-r", v, 1, 1000, &reps)) return 2;
        } else if ((r = st_cli_opt(argc, argv, &i, "--parallel", "-P", &v))) {
            if (r < 0 || st_cli_int("bench", "--parallel", v, 1, 1024, &par)) return 2;
        } else if ((r = st_cli_opt(argc, argv, &i, "--seed", NULL, &v))) {
            if (r < 0) return 2;
            seed = strtoull(v, NULL, 10);
            seed_given = 1;
        } else if ((r = st_cli_opt(argc, argv, &i, "--decode-tokens", NULL, &v))) {
            dec_mode = -1;
            for (int k = 0; r > 0 && k < 3; k++)
                if (!strcmp(v, k_dec_names[k])) dec_mode = k;
            if (dec_mode < 0) {
                fprintf(stderr, "strata bench: bad value '%s' for --decode-tokens (random, sample or greedy)\n",
                        r > 0 ? v : "");
                return 2;
            }
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--no-routing-trace")) {
            no_trace = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            return 0;
        } else {
            fprintf(stderr, "strata bench: unknown option '%s'\n", argv[i]);
            help(stderr);
            return 2;
        }
    }
    if (n_p + n_g == 0) {
        fprintf(stderr, "strata bench: nothing to measure (-p 0 -n 0)\n");
        return 2;
    }
    st_model_params mp;
    st_model_params_default(&mp);
    if (o.ctx <= 0) mp.n_ctx = (int32_t)((depth + n_p + n_g + 1 + 255) / 256 * 256);
    mp.n_seq = (int32_t)par;
    mp.n_out_max = (int32_t)par;
    if (o.batch > 0 && o.batch < par) {
        fprintf(stderr, "strata bench: --parallel %ld needs --batch >= %ld\n", par, par);
        return 2;
    }
    st_cli_session s;
    st_offload os;
    if (st_cli_open_planned("bench", &s, &o, &oo, &mp, 0, &os)) return 1;
    const st_model_desc *d = s.d;
    const int32_t V = d->hp.n_vocab;
    if (depth + n_p + n_g + 1 > st_model_params_of(s.m)->n_ctx) {
        fprintf(stderr, "strata bench: -d %ld -p %ld -n %ld needs a context of %ld (--ctx)\n", depth, n_p, n_g,
                depth + n_p + n_g + 1);
        st_cli_close_planned(&s, &os);
        return 2;
    }
    const long np1 = n_p > depth ? n_p : depth > 0 ? depth : 1; /* prompt tokens: the longer of -p and -d */
    int32_t *prompt = malloc((size_t)np1 * sizeof *prompt);
    int32_t *tok = malloc((size_t)par * sizeof *tok), *pos = malloc((size_t)par * sizeof *pos);
    int32_t *sq = malloc((size_t)par * sizeof *sq);
    int8_t *want = malloc((size_t)par);
    if (!prompt || !tok || !pos || !sq || !want) {
        fprintf(stderr, "strata bench: out of memory\n");
        free(prompt), free(tok), free(pos), free(sq), free(want);
        st_cli_close_planned(&s, &os);
        return 1;
    }
    /* the prompt: the same token formula as the llama.cpp reference tool, or seeded */
    st_rng rng;
    st_rng_seed(&rng, seed);
    for (long i = 0; i < np1; i++)
        prompt[i] = seed_given ? (int32_t)(st_rng_next(&rng) % (uint64_t)V) : (int32_t)((i * 7919 + 13) % V);
    for (long q = 0; q < par; q++) {
        sq[q] = (int32_t)q;
        want[q] = 1;
    }
    char err[1024];
    int rc = 1;
    stat sp = {0}, sg = {0};
    dec_src ds;
    memset(&ds, 0, sizeof ds);
    ds.mode = dec_mode;
    ds.n_vocab = V;
    st_rng_seed(&ds.rng, seed + 0x5eed);
    st_route_stats *rs = NULL;
    int32_t *resident = NULL;          /* the cache's table where a decode phase starts */
    st_expert_stats bel_dec = {0};     /* Belady over the decode phases, from those tables */
    int bel_ok = 1;
    if (dec_mode == DEC_SAMPLE) {
        st_sampler_params sp0;
        st_sampler_params_default(&sp0);
        sp0.temp = 1.0f;
        sp0.top_k = 0;
        sp0.top_p = 1.0f;
        sp0.min_p = 0.0f;
        sp0.seed = seed;
        ds.smp = st_sampler_new(&sp0, V);
        ds.logits = malloc((size_t)par * (size_t)V * sizeof *ds.logits);
        if (!ds.smp || !ds.logits) {
            snprintf(err, sizeof err, "out of memory for the sampler");
            goto fail;
        }
    }
    if (d->hp.n_expert > 0 && n_g > 0 && !no_trace) {
        rs = st_route_stats_create(d->hp.n_layer, d->hp.n_expert, d->hp.n_expert_used, err, sizeof err);
        if (!rs) goto fail;
    }
    double best_p = 0, best_g = 0;
    st_kv *kv = st_model_kv(s.m);
    /* warm-up: one small forward (first-touch of pages, module threads) */
    if (st_model_eval(s.m, 0, prompt, 1, 0, 0, NULL, err, sizeof err) || st_model_argmax(s.m, tok, err, sizeof err))
        goto fail;
    /* expert cache statistics of the measured runs (the routing trace too, for Belady) */
    st_model_expert_stats_reset(s.m);
    st_model_expert_trace(s.m, !no_trace);
    if (no_trace) bel_ok = 0;
    st_model_expert_info ex_dec; /* summed over the decode phases */
    memset(&ex_dec, 0, sizeof ex_dec);
    for (long r = 0; r < reps; r++) {
        st_kv_clear(kv);
        long at = 0;
        for (long q = 0; q < par; q++) tok[q] = prompt[np1 - 1];
        for (long q = 0; q < par && depth > 0; q++) /* the context already there (not timed) */
            if (st_model_eval(s.m, (int32_t)q, prompt, (int32_t)depth, 0, 0, NULL, err, sizeof err)) goto fail;
        at = depth;
        if (n_p > 0) { /* every sequence gets the prompt */
            uint64_t t0 = st_now_ns();
            for (long q = 0; q < par; q++)
                if (st_model_eval(s.m, (int32_t)q, prompt, (int32_t)n_p, (int32_t)depth, 0, NULL, err, sizeof err) ||
                    st_model_argmax(s.m, &tok[q], err, sizeof err))
                    goto fail;
            double v = (double)(n_p * par) / ((double)(st_now_ns() - t0) / 1e9);
            for (long q = 1; q < par; q++) tok[q] = (int32_t)((tok[q] + q) % V);
            stat_add(&sp, v);
            best_p = v > best_p ? v : best_p;
            at = depth + n_p;
        }
        if (n_g > 0) { /* then they decode together: one token of each per step */
            st_model_expert_info e0;
            st_model_expert_info_get(s.m, &e0);
            const uint64_t tr0 = st_model_expert_trace_pos(s.m);
            if (bel_ok && decode_resident(s.m, &resident)) bel_ok = 0;
            if (rs) {
                st_route_stats_break(rs);
                st_model_route_stats(s.m, rs);
            }
            uint64_t t0 = st_now_ns();
            for (long i = 0; i < n_g; i++, at++) {
                for (long q = 0; q < par; q++) pos[q] = (int32_t)at;
                st_batch b = {(int32_t)par, tok, pos, sq, want};
                if (st_model_forward(s.m, &b, err, sizeof err) || dec_next(&ds, s.m, par, tok, err, sizeof err))
                    goto fail;
            }
            double v = (double)(n_g * par) / ((double)(st_now_ns() - t0) / 1e9);
            st_model_route_stats(s.m, NULL);
            if (bel_ok) bel_ok = decode_belady(s.m, tr0, resident, &bel_dec) == 0;
            st_model_expert_info e1;
            st_model_expert_info_get(s.m, &e1);
            ex_dec.tokens += e1.tokens - e0.tokens;
            ex_dec.cpu_s += e1.cpu_s - e0.cpu_s;
            ex_dec.route_s += e1.route_s - e0.route_s;
            ex_dec.cpu_assign += e1.cpu_assign - e0.cpu_assign;
            ex_dec.stats.hits += e1.stats.hits - e0.stats.hits;
            ex_dec.stats.misses += e1.stats.misses - e0.stats.misses;
            ex_dec.stats.bytes_upload += e1.stats.bytes_upload - e0.stats.bytes_upload;
            stat_add(&sg, v);
            best_g = v > best_g ? v : best_g;
        }
    }
    char ex_json[1024];
    st_offload_format_json(s.m, ex_json, sizeof ex_json);
    st_model_expert_trace(s.m, 0);
    st_model_expert_info ex_all;
    const int hybrid = st_model_expert_info_get(s.m, &ex_all) == 0;
    /* bytes one decode step reads: non-expert weights once, the experts its tokens woke (all
     * k distinct per layer for one sequence; counted on one more step for several), and the
     * KV of every sequence at the mean decode position */
    uint64_t b_nonexp, b_exp;
    decode_bytes(d, &b_nonexp, &b_exp);
    if (par > 1 && d->hp.n_expert > 0 && n_g > 0) {
        long at = depth + n_p + n_g;
        if (at + 1 <= st_model_params_of(s.m)->n_ctx) {
            for (long q = 0; q < par; q++) pos[q] = (int32_t)at;
            st_batch b = {(int32_t)par, tok, pos, sq, want};
            st_model_expert_counts_reset(s.m);
            st_model_count_experts(s.m, 1);
            int frc = st_model_forward(s.m, &b, err, sizeof err);
            st_model_count_experts(s.m, 0);
            if (frc) goto fail;
            b_exp = used_expert_bytes(d, st_model_expert_counts(s.m));
        }
    }
    double mean_pos = (double)(depth + n_p) + (double)n_g / 2.0;
    double b_kv = mean_pos * (double)st_kv_bytes_per_pos(kv) * (double)par;
    double b_tok = (double)b_nonexp + (double)b_exp + b_kv; /* per step */
    double gbs = b_tok * (stat_mean(&sg) / (double)par) / 1e9;
    /* prefill: one counted pass tells which experts the prompt woke */
    double b_pre = 0, gbs_pre = 0;
    if (n_p > 0) {
        uint64_t pre_exp = 0;
        if (d->hp.n_expert > 0) {
            st_kv_clear(kv);
            st_model_expert_counts_reset(s.m);
            st_model_count_experts(s.m, 1);
            int frc = st_model_eval(s.m, 0, prompt, (int32_t)n_p, 0, 0, NULL, err, sizeof err);
            st_model_count_experts(s.m, 0);
            if (frc) goto fail;
            pre_exp = used_expert_bytes(d, st_model_expert_counts(s.m));
        }
        long chunks = (n_p + st_model_params_of(s.m)->n_batch - 1) / st_model_params_of(s.m)->n_batch;
        b_pre = (double)chunks * (double)b_nonexp + (double)pre_exp;
        gbs_pre = b_pre / ((double)n_p / (stat_mean(&sp) / (double)par)) / 1e9;
    }
    const char *kvn = st_type_name(st_model_params_of(s.m)->kv_type);
    const double P = (double)par;
    const double bel_rate = bel_ok && hybrid ? st_expert_stats_hit_rate(&bel_dec) : -1;
    if (json) {
        printf("{\"model\":\"%s\",\"arch\":\"%s\",\"device\":\"%s\",\"weights_in_place\":%s,\"kv_type\":\"%s\","
               "\"decode_tokens\":\"%s\",\"depth\":%ld,\"n_prompt\":%ld,\"n_gen\":%ld,\"repetitions\":%ld,\"threads\":%ld,\"n_ctx\":%d,\"n_batch\":%d,"
               "\"parallel\":%ld,\"prefill_tok_s\":%.3f,\"prefill_tok_s_sd\":%.3f,\"prefill_tok_s_best\":%.3f,"
               "\"decode_tok_s\":%.3f,\"decode_tok_s_sd\":%.3f,\"decode_tok_s_best\":%.3f,",
               o.model, d->hp.arch_name, s.device_text, st_model_weights_in_place(s.m) ? "true" : "false", kvn,
               k_dec_names[dec_mode], depth, n_p,
               n_g, reps, o.threads, st_model_params_of(s.m)->n_ctx, st_model_params_of(s.m)->n_batch, par,
               stat_mean(&sp), stat_sd(&sp), best_p, stat_mean(&sg), stat_sd(&sg), best_g);
        printf("\"decode_bytes_per_token\":{\"nonexpert\":%.0f,\"experts\":%.0f,\"kv\":%.0f,\"total\":%.0f},"
               "\"decode_bytes_per_step\":%.0f,\"decode_gb_s\":%.3f,\"prefill_bytes\":%.0f,\"prefill_gb_s\":%.3f,"
               "\"device_bw_gb_s\":%.1f",
               (double)b_nonexp / P, (double)b_exp / P, b_kv / P, b_tok / P, b_tok, gbs, b_pre, gbs_pre, s.mem_bw_gbs);
        if (s.mem_bw_gbs > 0) printf(",\"decode_bw_fraction\":%.4f", gbs / s.mem_bw_gbs);
        if (hybrid) {
            const double dt = ex_dec.tokens ? (double)ex_dec.tokens : 1.0;
            printf("%s,\"experts_decode\":{\"hit_rate\":%.4f,\"hits\":%llu,\"misses\":%llu,\"upload_bytes\":%llu,"
                   "\"cpu_ms_per_token\":%.4f,\"route_sync_ms_per_token\":%.4f,\"cpu_assignments_per_token\":%.3f}",
                   ex_json, st_expert_stats_hit_rate(&ex_dec.stats), (unsigned long long)ex_dec.stats.hits,
                   (unsigned long long)ex_dec.stats.misses, (unsigned long long)ex_dec.stats.bytes_upload,
                   ex_dec.cpu_s * 1e3 / dt, ex_dec.route_s * 1e3 / dt, (double)ex_dec.cpu_assign / dt);
        }
        if (os.plan) {
            /* the plan, and what a peer keeping some layers' experts on the CPU would place:
             * non-expert weights, the experts of one MoE layer, the other buffers */
            const st_plan_device *pd = &os.plan->dev[0];
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
                   os.device, (unsigned long long)pd->capacity, (unsigned long long)pd->planned,
                   (unsigned long long)pd->allocated, (unsigned long long)pd->in.vram_budget,
                   (long long)os.expert_slots, (long long)pd->expert_slots_max, (unsigned long long)wb,
                   (unsigned long long)other, moe_layers,
                   (unsigned long long)(moe_layers ? d->bytes_experts / (uint64_t)moe_layers : 0));
        }
        if (rs) print_decode_routing(d, rs, hybrid ? ex_all.slots : -1, bel_rate, 1);
        printf("}\n");
    } else {
        char sum[512];
        st_model_desc_summary(d, sum, sizeof sum);
        printf("model:   %s\n         %s\n", o.model, sum);
        printf("device:  %s (weights %s, KV %s)\n", s.device_text,
               st_model_weights_in_place(s.m) ? "read in place" : "copied", kvn);
        if (par > 1) printf("sequences: %ld (each gets the prompt, then they decode together)\n", par);
        if (n_p > 0)
            printf("prefill: %ld tokens: %10.1f tok/s (sd %.1f, best %.1f, %ld runs)  ~%.2f GB/s of weights\n",
                   n_p * par, stat_mean(&sp), stat_sd(&sp), best_p, reps, gbs_pre);
        if (n_g > 0) {
            printf("decode:  %ld tokens: %10.1f tok/s (sd %.1f, best %.1f, %ld runs; %s tokens fed back)\n",
                   n_g * par, stat_mean(&sg), stat_sd(&sg), best_g, reps, k_dec_names[dec_mode]);
            printf("bytes per decode token: %.2f MB = non-expert %.2f MB + routed experts %.2f MB + KV %.2f MB\n",
                   b_tok / P / 1e6, (double)b_nonexp / P / 1e6, (double)b_exp / P / 1e6, b_kv / P / 1e6);
            if (hybrid) {
                const double dt = ex_dec.tokens ? (double)ex_dec.tokens : 1.0;
                st_expert_stats bel;
                char be[256];
                printf("experts: %lld of %lld slots; decode hit rate %.3f, %.2f ms per token on the CPU "
                       "(%.2f expert rows), %.2f ms waiting for the router; whole run hit rate %.3f",
                       (long long)ex_all.slots, (long long)ex_all.experts_total,
                       st_expert_stats_hit_rate(&ex_dec.stats), ex_dec.cpu_s * 1e3 / dt,
                       (double)ex_dec.cpu_assign / dt, ex_dec.route_s * 1e3 / dt, st_expert_stats_hit_rate(&ex_all.stats));
                if (st_model_expert_belady(s.m, &bel, be, sizeof be) == 0)
                    printf(" (Belady %.3f)", st_expert_stats_hit_rate(&bel));
                printf("\n");
            }
            if (rs) print_decode_routing(d, rs, hybrid ? ex_all.slots : -1, bel_rate, 0);
            printf("achieved: %.2f GB/s", gbs);
            if (s.mem_bw_gbs > 0) printf(" (%.0f%% of the device's %.0f GB/s)", 100.0 * gbs / s.mem_bw_gbs, s.mem_bw_gbs);
            printf("\n");
        }
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "strata bench: %s\n", err);
done:
    if (s.m) st_model_route_stats(s.m, NULL);
    st_route_stats_free(rs);
    st_sampler_free(ds.smp);
    free(ds.logits);
    free(resident);
    free(prompt);
    free(tok);
    free(pos);
    free(sq);
    free(want);
    st_cli_close_planned(&s, &os);
    return rc;
}
