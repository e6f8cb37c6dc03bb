/* strata profile-experts -m F.gguf --prompts FILE --out P [-n N]: runs every non-empty line of
 * FILE as a prompt (then N greedy tokens), counts which (layer, expert) the router picks, and
 * writes the ranked profile (core/experts/expert_profile.h) that --expert-profile reads to fill
 * the expert cache first (and --expert-policy profile keeps fixed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/cli_planned.h"
#include "cli/commands.h"
#include "engine/engine_offload.h"
#include "experts/expert_profile.h"
#include "kv/kv.h"

static void help(FILE *f) {
    fprintf(f, "usage: strata profile-experts -m F.gguf --prompts FILE --out PROFILE [options]\n"
               "  --prompts FILE   one prompt per line (empty lines are skipped)\n"
               "  --out PROFILE    the profile to write\n"
               "  -n N             greedy tokens generated after each prompt (default 32; decode routing counts)\n");
    st_cli_model_opts_help(f);
    st_offload_opts_help(f);
}

int st_cmd_profile_experts(int argc, char **argv) {
    st_cli_model_opts o;
    memset(&o, 0, sizeof o);
    st_offload_opts oo;
    st_offload_opts_init(&oo);
    const char *prompts = NULL, *out = NULL, *v;
    long n_gen = 32;
    for (int i = 1; i < argc; i++) {
        int k = st_cli_model_opt("profile-experts", argc, argv, &i, &o);
        if (k < 0) return 2;
        if (k) continue;
        if ((k = st_offload_opt("profile-experts", argc, argv, &i, &oo))) {
            if (k < 0) return 2;
            continue;
        }
        if ((k = st_cli_opt(argc, argv, &i, "--prompts", NULL, &v))) {
            if (k < 0) return 2;
            prompts = v;
        } else if ((k = st_cli_opt(argc, argv, &i, "--out", "-o", &v))) {
            if (k < 0) return 2;
            out = v;
        } else if ((k = st_cli_opt(argc, argv, &i, "-n", "--n-predict", &v))) {
            if (k < 0 || st_cli_int("profile-experts", "-n", v, 0, 1 << 20, &n_gen)) return 2;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            return 0;
        } else {
            fprintf(stderr, "strata profile-experts: unknown option '%s'\n", argv[i]);
            help(stderr);
            return 2;
        }
    }
    if (!prompts || !out) {
        fprintf(stderr, "strata profile-experts: --prompts FILE and --out PROFILE are required\n");
        return 2;
    }
    if (o.backend && !strcmp(o.backend, "ref")) {
        fprintf(stderr, "strata profile-experts: the scalar reference is not supported here; use a module\n");
        return 2;
    }
    FILE *pf = fopen(prompts, "r");
    if (!pf) {
        fprintf(stderr, "strata profile-experts: cannot read --prompts %s\n", prompts);
        return 1;
    }
    st_model_params mp;
    st_model_params_default(&mp);
    st_cli_session s;
    st_offload off;
    if (st_cli_open_planned("profile-experts", &s, &o, &oo, &mp, 1, &off)) {
        fclose(pf);
        return 1;
    }
    int rc = 1;
    char err[1024];
    const st_hparams *hp = &s.d->hp;
    if (hp->n_expert <= 0) {
        fprintf(stderr, "strata profile-experts: %s has no routed experts\n", o.model);
        goto done;
    }
    const int32_t n_ctx = st_model_params_of(s.m)->n_ctx;
    st_model_expert_counts_reset(s.m);
    st_model_count_experts(s.m, 1);
    char line[65536];
    long n_prompts = 0, n_tokens = 0;
    while (fgets(line, sizeof line, pf)) {
        size_t len = strcspn(line, "\r\n");
        line[len] = 0;
        if (len == 0) continue;
        int32_t *ids = NULL;
        int64_t n = st_tokenizer_encode_alloc(s.tok, line, len, true, false, &ids);
        if (n <= 0) {
            free(ids);
            continue;
        }
        if (n + n_gen > n_ctx) n = n_ctx - n_gen > 1 ? n_ctx - n_gen : 1; /* keep the front of a long line */
        st_kv_clear(st_model_kv(s.m));
        int32_t t = 0;
        int bad = st_model_eval(s.m, 0, ids, (int32_t)n, 0, 0, NULL, err, sizeof err) ||
                  st_model_argmax(s.m, &t, err, sizeof err);
        for (long g = 0; !bad && g < n_gen && n + g < n_ctx; g++)
            bad = st_model_eval(s.m, 0, &t, 1, (int32_t)(n + g), 0, NULL, err, sizeof err) ||
                  st_model_argmax(s.m, &t, err, sizeof err);
        free(ids);
        if (bad) {
            fprintf(stderr, "strata profile-experts: prompt %ld: %s\n", n_prompts + 1, err);
            goto done;
        }
        n_prompts++;
        n_tokens += (long)n + n_gen;
    }
    if (n_prompts == 0) {
        fprintf(stderr, "strata profile-experts: no prompt in %s\n", prompts);
        goto done;
    }
    st_expert_profile *p = st_expert_profile_from_counts(hp->n_layer, hp->n_expert, st_model_expert_counts(s.m), err,
                                                         sizeof err);
    if (!p || st_expert_profile_write(p, out, err, sizeof err)) {
        fprintf(stderr, "strata profile-experts: %s\n", err);
        st_expert_profile_free(p);
        goto done;
    }
    /* how concentrated the routing is: the share of uses the top half of the ranked pairs take */
    uint64_t all = 0, top = 0;
    for (int64_t i = 0; i < p->n; i++) all += p->count[i];
    for (int64_t i = 0; i < p->n / 2; i++) top += p->count[i];
    fprintf(stderr, "profile-experts: %ld prompts, %ld tokens; %lld of %lld (layer, expert) pairs used; the top half "
            "of them took %.1f%% of the uses; wrote %s\n", n_prompts, n_tokens, (long long)p->n,
            (long long)hp->n_layer * hp->n_expert, all ? 100.0 * (double)top / (double)all : 0.0, out);
    st_expert_profile_free(p);
    rc = 0;
done:
    fclose(pf);
    st_cli_close_planned(&s, &off);
    return rc;
}
