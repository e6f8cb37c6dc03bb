/* SPDX-License-Identifier: Apache-2.0 */
/* strata logits -m F.gguf --tokens 1,2,3 [--all] --out F.f32: float32 logits of the last
 * position, or of every position with --all ([n_tokens][n_vocab]), little-endian, raw.
 * The KV cache defaults to F32 here so the numbers compare cleanly with other engines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"

static void help(FILE *f) {
    fprintf(f, "usage: strata logits -m F.gguf (--tokens 1,2,3 | --text \"...\" [--bos]) [--all] --out F.f32\n"
               "  --tokens LIST   comma-separated token ids\n"
               "  --text T        tokenize T instead (--bos adds the model's special tokens)\n"
               "  --all           logits of every position ([n_tokens][n_vocab]); default: the last\n"
               "  --out F         output file of float32 little-endian values\n");
    st_cli_model_opts_help(f);
    fprintf(f, "  (the KV cache type defaults to f32 for this command)\n");
}

static int parse_tokens(const char *s, int32_t **out, int64_t *n) {
    int64_t cap = 16, k = 0;
    int32_t *v = malloc((size_t)cap * sizeof *v);
    while (v && *s) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < 0 || x > 0x7fffffff) break;
        if (k == cap) {
            int32_t *nv = realloc(v, (size_t)(cap *= 2) * sizeof *v);
            if (!nv) break;
            v = nv;
        }
        v[k++] = (int32_t)x;
        s = end;
        while (*s == ',' || *s == ' ') s++;
        if (!*s) {
            *out = v;
            *n = k;
            return 0;
        }
    }
    free(v);
    return -1;
}

int st_cmd_logits(int argc, char **argv) {
    st_cli_model_opts o;
    memset(&o, 0, sizeof o);
    const char *tokens = NULL, *text = NULL, *out = NULL;
    int all = 0, bos = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r = st_cli_model_opt("logits", argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r) continue;
        if ((r = st_cli_opt(argc, argv, &i, "--tokens", NULL, &v))) {
            if (r < 0) return 2;
            tokens = v;
        } else if ((r = st_cli_opt(argc, argv, &i, "--text", NULL, &v))) {
            if (r < 0) return 2;
            text = v;
        } else if ((r = st_cli_opt(argc, argv, &i, "--out", "-o", &v))) {
            if (r < 0) return 2;
            out = v;
        } else if (!strcmp(argv[i], "--all")) {
            all = 1;
        } else if (!strcmp(argv[i], "--bos")) {
            bos = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            return 0;
        } else {
            fprintf(stderr, "strata logits: unknown option '%s'\n", argv[i]);
            help(stderr);
            return 2;
        }
    }
    if ((!tokens && !text) || !out) {
        fprintf(stderr, "strata logits: need --tokens (or --text) and --out\n");
        help(stderr);
        return 2;
    }
    int32_t *ids = NULL;
    int64_t n = 0;
    if (tokens && (parse_tokens(tokens, &ids, &n) || n == 0)) {
        fprintf(stderr, "strata logits: --tokens must be comma-separated ids (got '%s')\n", tokens);
        return 2;
    }
    if (!o.kv_type) o.kv_type = "f32";
    st_model_params mp;
    st_model_params_default(&mp);
    st_cli_session s;
    if (text) { /* tokenizer first, to size the context */
        st_cli_session ts;
        if (st_cli_open("logits", &ts, &o, NULL, 1)) return 1;
        n = st_tokenizer_encode_alloc(ts.tok, text, strlen(text), bos, false, &ids);
        st_cli_close(&ts);
        if (n <= 0) {
            fprintf(stderr, "strata logits: the text gave no tokens\n");
            free(ids);
            return 2;
        }
    }
    if (o.ctx <= 0 && n > 4096) mp.n_ctx = (int32_t)n;
    if (all) mp.n_out_max = o.batch > 0 ? (int32_t)o.batch : mp.n_batch;
    if (st_cli_open("logits", &s, &o, &mp, 0)) {
        free(ids);
        return 1;
    }
    const int32_t V = s.d->hp.n_vocab;
    char err[1024];
    float *buf = malloc((size_t)(all ? n : 1) * (size_t)V * sizeof *buf);
    int rc = 1;
    if (!buf) {
        fprintf(stderr, "strata logits: out of memory\n");
    } else if (st_model_eval(s.m, 0, ids, (int32_t)n, 0, all, buf, err, sizeof err) ||
               (!all && st_model_logits(s.m, buf, err, sizeof err))) {
        fprintf(stderr, "strata logits: %s\n", err);
    } else {
        FILE *f = fopen(out, "wb");
        size_t count = (size_t)(all ? n : 1) * (size_t)V;
        const uint16_t probe = 1;
        if (*(const uint8_t *)&probe != 1) /* big-endian host: write little-endian */
            for (size_t i = 0; i < count; i++) {
                uint8_t *b = (uint8_t *)&buf[i], t0 = b[0], t1 = b[1];
                b[0] = b[3], b[1] = b[2], b[2] = t1, b[3] = t0;
            }
        if (!f || fwrite(buf, sizeof *buf, count, f) != count || fclose(f)) {
            fprintf(stderr, "strata logits: writing %s failed\n", out);
        } else {
            fprintf(stderr, "strata logits: %lld row(s) x %d logits -> %s (%s, KV %s)\n", (long long)(all ? n : 1), V,
                    out, s.device_text, o.kv_type);
            rc = 0;
        }
    }
    free(buf);
    free(ids);
    st_cli_close(&s);
    return rc;
}
