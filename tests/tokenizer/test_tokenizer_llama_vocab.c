/* SPDX-License-Identifier: Apache-2.0 */
/* Checks st_tokenizer against llama.cpp's tokenizer test vectors: for each vocabulary
 * models/ggml-vocab-<name>.gguf of the llama.cpp source (fetched by ci/fetch-llama-ref.sh into
 * a cache outside the repository), every case of <name>.gguf.inp must encode (add_special and
 * parse_special off) to exactly the ids on the same line of <name>.gguf.out, and the pieces
 * of those ids must give the input text back. The cases are then encoded again from four
 * threads sharing one tokenizer, which must give the same ids.
 *
 * File format (as read by llama.cpp's tests/test-tokenizer-0.cpp): the .inp file holds the
 * cases, each followed by the line "__ggml_vocab_test__"; line i of the .out file holds the
 * ids of case i separated by spaces (after stripping surrounding whitespace).
 *
 * usage: test_tokenizer_llama_vocab REF_DIR FETCH_SCRIPT [VOCAB...]
 * Exit 0 when all pass, 1 on any mismatch or error, 77 (skip) when the reference is absent
 * and cannot be fetched because the network is unavailable. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

#define SKIP 77

static const char *const default_vocabs[] = {
    "llama-spm", "phi-3", "llama-bpe", "qwen2", "qwen35", "deepseek-llm", "deepseek-coder", "gpt-2",
    "mpt", "starcoder", "refact", "command-r", "falcon", "gemma-4",
};

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, (cap *= 2) + 1);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    *len = n;
    return buf;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void print_escaped(FILE *f, const char *s, size_t n) {
    fputc('\'', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c < 0x20) fprintf(f, "\\x%02x", c);
        else fputc(c, f);
    }
    fputc('\'', f);
}

static void print_ids(FILE *f, const st_tokenizer *t, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char piece[64];
        int32_t pl = st_tokenizer_token_to_piece(t, ids[i], piece, sizeof piece, true);
        fprintf(f, " %d", ids[i]);
        if (pl >= 0) {
            fputc('=', f);
            print_escaped(f, piece, (size_t)(pl < 64 ? pl : 64));
        }
    }
    fputc('\n', f);
}

/* The cases of one vocabulary, kept for the concurrent pass. */
typedef struct tcase {
    const char *text;
    size_t len;
    int32_t *exp;
    size_t n_exp;
} tcase;

typedef struct tjob {
    const st_tokenizer *t;
    const tcase *cases;
    int n_cases;
    int mismatches;
} tjob;

/* Encodes every case a few times from one thread; counts results that differ. */
static void *encode_all_cases(void *arg) {
    tjob *j = arg;
    for (int rep = 0; rep < 4; rep++) {
        for (int i = 0; i < j->n_cases; i++) {
            int32_t *ids = NULL;
            const tcase *c = &j->cases[i];
            int64_t n = st_tokenizer_encode_alloc(j->t, c->text, c->len, false, false, &ids);
            if (n < 0 || (size_t)n != c->n_exp || (n && memcmp(ids, c->exp, (size_t)n * sizeof *ids) != 0))
                j->mismatches++;
            free(ids);
        }
    }
    return NULL;
}

/* Parses one .out line into ids; returns the count. */
static size_t parse_ids(const char *line, size_t len, int32_t *ids, size_t cap) {
    size_t n = 0, i = 0;
    while (i < len) {
        while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
        if (i >= len) break;
        char *end;
        long v = strtol(line + i, &end, 10);
        if (end == line + i) break;
        if (n < cap) ids[n] = (int32_t)v;
        n++;
        i = (size_t)(end - line);
    }
    return n;
}

/* Runs one vocabulary; returns 0 when every case passes, -1 otherwise. */
static int run_vocab(const char *models, const char *name, int *total_cases) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", models, name);
    double t0 = now_s();
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    if (!g) {
        fprintf(stderr, "%s: cannot open: %s\n", name, err);
        return -1;
    }
    st_tokenizer *t = st_tokenizer_from_gguf(g, err, sizeof err);
    st_gguf_close(g);
    if (!t) {
        fprintf(stderr, "%s: cannot build tokenizer: %s\n", name, err);
        return -1;
    }
    double t_load = now_s() - t0;

    size_t inp_len = 0, out_len = 0;
    char inp_path[4200], out_path[4200];
    snprintf(inp_path, sizeof inp_path, "%s.inp", path);
    snprintf(out_path, sizeof out_path, "%s.out", path);
    char *inp = read_file(inp_path, &inp_len), *out = read_file(out_path, &out_len);
    if (!inp || !out) {
        fprintf(stderr, "%s: cannot read %s / %s\n", name, inp_path, out_path);
        free(inp);
        free(out);
        st_tokenizer_free(t);
        return -1;
    }

    const char *sep = "\n__ggml_vocab_test__\n";
    size_t sep_len = strlen(sep);
    size_t ipos = 0, opos = 0;
    int n_cases = 0, n_pass = 0, n_round = 0, shown = 0, n_kept = 0;
    tcase cases[512];
    int32_t *exp = malloc(65536 * sizeof *exp);
    double t_enc = 0;
    st_detok *d = st_detok_new(t, ST_DETOK_STRIP_LEADING_SPACE);
    while (ipos < inp_len) {
        const char *next = strstr(inp + ipos, sep);
        size_t clen = next ? (size_t)(next - (inp + ipos)) : inp_len - ipos;
        const char *cas = inp + ipos;
        ipos = next ? ipos + clen + sep_len : inp_len;
        /* the matching .out line */
        if (opos >= out_len) {
            fprintf(stderr, "%s: .out has fewer lines than .inp has cases\n", name);
            n_cases++;
            break;
        }
        const char *eol = memchr(out + opos, '\n', out_len - opos);
        size_t llen = eol ? (size_t)(eol - (out + opos)) : out_len - opos;
        size_t n_exp = parse_ids(out + opos, llen, exp, 65536);
        opos += llen + (eol ? 1 : 0);
        n_cases++;

        int32_t *ids = NULL;
        double te = now_s();
        int64_t n = st_tokenizer_encode_alloc(t, cas, clen, false, false, &ids);
        t_enc += now_s() - te;
        int ok = n >= 0 && (size_t)n == n_exp && (n == 0 || memcmp(ids, exp, (size_t)n * sizeof *ids) == 0);
        /* round trip through the streaming detokenizer */
        size_t cap = clen * 3 + 16, got = 0;
        char *txt = malloc(cap);
        int round_ok = txt != NULL && n >= 0;
        for (int64_t i = 0; round_ok && i < n; i++) {
            const char *p;
            size_t pl;
            if (st_detok_push(d, ids[i], &p, &pl) != 0 || got + pl > cap) {
                round_ok = 0;
                break;
            }
            memcpy(txt + got, p, pl);
            got += pl;
        }
        const char *p;
        size_t pl;
        if (round_ok && st_detok_flush(d, &p, &pl) == 0 && got + pl <= cap) {
            memcpy(txt + got, p, pl);
            got += pl;
        } else {
            round_ok = 0;
        }
        st_detok_reset(d);
        round_ok = round_ok && got == clen && memcmp(txt, cas, clen) == 0;
        free(txt);
        n_pass += ok;
        n_round += round_ok;
        if ((!ok || !round_ok) && shown < 8) {
            shown++;
            fprintf(stderr, "%s: case %d %s: ", name, n_cases, ok ? "round trip FAILED" : "FAILED");
            print_escaped(stderr, cas, clen);
            fprintf(stderr, "\n  expected:");
            print_ids(stderr, t, exp, n_exp < 65536 ? n_exp : 65536);
            fprintf(stderr, "  got:     ");
            print_ids(stderr, t, ids, n > 0 ? (size_t)n : 0);
        }
        if (n_kept < 512) {
            tcase *c = &cases[n_kept];
            c->exp = malloc((n_exp ? n_exp : 1) * sizeof *c->exp);
            if (c->exp) {
                c->text = cas;
                c->len = clen;
                c->n_exp = n_exp < 65536 ? n_exp : 65536;
                memcpy(c->exp, exp, c->n_exp * sizeof *exp);
                n_kept++;
            }
        }
        free(ids);
    }
    /* the same cases from four threads at once on the one shared tokenizer */
    tjob jobs[4];
    pthread_t th[4];
    int started = 0, mt_bad = 0;
    for (int i = 0; i < 4; i++) {
        jobs[i] = (tjob){t, cases, n_kept, 0};
        if (pthread_create(&th[i], NULL, encode_all_cases, &jobs[i]) == 0) started++;
        else break;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        mt_bad += jobs[i].mismatches;
    }
    if (started != 4) mt_bad++;
    for (int i = 0; i < n_kept; i++) free(cases[i].exp);
    if (mt_bad) fprintf(stderr, "%s: %d mismatches when encoding from 4 threads\n", name, mt_bad);
    if (opos < out_len) {
        /* trailing lines must be empty */
        for (size_t i = opos; i < out_len; i++)
            if (out[i] != '\n' && out[i] != ' ' && out[i] != '\r') {
                fprintf(stderr, "%s: .out has more lines than .inp has cases\n", name);
                n_cases++;
                break;
            }
    }
    printf("tokenizer vocab %-15s (%s%s%s): %d/%d cases match, %d/%d round trips; load %.0f ms, encode %.2f ms\n",
           name, st_tokenizer_kind_of(t) == ST_TOKENIZER_SPM ? "SPM" : "BPE",
           st_tokenizer_pre_name(t)[0] ? " " : "", st_tokenizer_pre_name(t), n_pass, n_cases,
           n_round, n_cases, t_load * 1e3, t_enc * 1e3);
    *total_cases += n_cases;
    st_detok_free(d);
    free(exp);
    free(inp);
    free(out);
    st_tokenizer_free(t);
    return (n_cases > 0 && n_pass == n_cases && n_round == n_cases && mt_bad == 0) ? 0 : -1;
}

static int dir_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s REF_DIR FETCH_SCRIPT [VOCAB...]\n", argv[0]);
        return 1;
    }
    char models[4096];
    snprintf(models, sizeof models, "%s/src/models", argv[1]);
    if (!dir_exists(models)) {
        printf("llama.cpp reference not found in %s: fetching with %s\n", argv[1], argv[2]);
        fflush(stdout);
        if (setenv("STRATA_LLAMA_REF_DIR", argv[1], 1) != 0) return 1;
        char cmd[8400];
        snprintf(cmd, sizeof cmd, "bash '%s'", argv[2]);
        int rc = system(cmd);
        int code = (rc != -1 && WIFEXITED(rc)) ? WEXITSTATUS(rc) : -1;
        if (code == 2) {
            printf("SKIP: llama.cpp reference absent and the network is unavailable (%s exited 2)\n", argv[2]);
            return SKIP;
        }
        if (code != 0 || !dir_exists(models)) {
            fprintf(stderr, "fetching the llama.cpp reference failed (exit %d)\n", code);
            return 1;
        }
    }
    int failed = 0, total = 0;
    if (argc > 3) {
        for (int i = 3; i < argc; i++) failed += run_vocab(models, argv[i], &total) != 0;
    } else {
        for (size_t i = 0; i < sizeof default_vocabs / sizeof default_vocabs[0]; i++)
            failed += run_vocab(models, default_vocabs[i], &total) != 0;
    }
    printf("%s: %d vocabularies failed, %d cases in all\n", failed ? "FAIL" : "PASS", failed, total);
    return failed ? 1 : 0;
}
