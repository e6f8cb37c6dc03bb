/* SPDX-License-Identifier: Apache-2.0 */
/* strata profile-experts -m F.gguf --prompts FILE --out P [-n N]: runs every non-empty line of
 * FILE as a prompt (then N greedy tokens), counts which (layer, expert) the router picks, and
 * writes the ranked profile (core/experts/expert_profile.h) that --expert-profile reads to fill
 * the expert cache first (and --expert-policy profile keeps fixed). Prints the routing
 * statistics of what it ran (core/experts/expert_stats.h): pairs used, the top half's share,
 * adjacent-token overlap and reuse distances; --out may be omitted to print them alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/cli_planned.h"
#include "cli/commands.h"
#include "engine/engine_offload.h"
#include "experts/expert_profile.h"
#include "experts/expert_stats.h"
#include "kv/kv.h"

static void help(FILE *f) {
    fprintf(f, "usage: strata profile-experts -m F.gguf --prompts FILE --out PROFILE [options]\n"
               "  --prompts FILE   one prompt per line (empty lines are skipped)\n"
               "  --out PROFILE    the profile to write (omitted: print the routing statistics only)\n"
               "  -n N             greedy tokens generated after each prompt (default 32; decode routing counts)\n");
    st_cli_model_opts_help(f);
    st_offload_opts_help(f);
}

/* The ranked profile of counts [n_layer][n_expert], written to path. 0, or -1 (printed). */
static int write_profile(const st_hparams *hp, const uint64_t *counts, const char *path) {
    char err[512];
    st_expert_profile *p = st_expert_profile_from_counts(hp->n_layer, hp->n_expert, counts, err, sizeof err);
    int rc = p && st_expert_profile_write(p, path, err, sizeof err) == 0 ? 0 : -1;
    if (rc) fprintf(stderr, "strata profile-experts: %s\n", err);
    st_expert_profile_free(p);
    return rc;
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
    if (!prompts) {
        fprintf(stderr, "strata profile-experts: --prompts FILE is required\n");
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
    st_route_stats *rs = NULL;
    const st_hparams *hp = &s.d->hp;
    if (hp->n_expert <= 0) {
        fprintf(stderr, "strata profile-experts: %s has no routed experts\n", o.model);
        goto done;
    }
    const int32_t n_ctx = st_model_params_of(s.m)->n_ctx;
    st_model_expert_counts_reset(s.m);
    st_model_count_experts(s.m, 1);
    rs = st_route_stats_create(hp->n_layer, hp->n_expert, hp->n_expert_used, err, sizeof err);
    if (!rs) {
        fprintf(stderr, "strata profile-experts: %s\n", err);
        goto done;
    }
    st_model_route_stats(s.m, rs);
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
        st_model_kv_clear(s.m);
        st_route_stats_break(rs);
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
    if (out && write_profile(hp, st_model_expert_counts(s.m), out)) goto done;
    st_route_summary sum;
    st_route_stats_summary(rs, &sum);
    char text[1024];
    st_route_summary_format(&sum, text, sizeof text);
    fprintf(stderr, "profile-experts: %ld prompts, %ld tokens%s%s\n%s", n_prompts, n_tokens, out ? "; wrote " : "",
            out ? out : "", text);
    rc = 0;
done:
    if (s.m) st_model_route_stats(s.m, NULL);
    st_route_stats_free(rs);
    fclose(pf);
    st_cli_close_planned(&s, &off);
    return rc;
}
