/* SPDX-License-Identifier: Apache-2.0 */
/* strata tokenize -m F.gguf [--bos] [--special] --text "...": the token ids of a text,
 * separated by spaces, on one line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"

static void help(FILE *f) {
    fprintf(f, "usage: strata tokenize -m F.gguf [--bos] [--special] --text \"...\"\n"
               "  --bos       add the model's special tokens (BOS/EOS as its flags say)\n"
               "  --special   turn special tokens written in the text into their ids\n");
}

int st_cmd_tokenize(int argc, char **argv) {
    st_cli_model_opts o;
    memset(&o, 0, sizeof o);
    const char *text = NULL;
    int bos = 0, special = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r = st_cli_model_opt("tokenize", argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r) continue;
        if ((r = st_cli_opt(argc, argv, &i, "--text", "-p", &v))) {
            if (r < 0) return 2;
            text = v;
        } else if (!strcmp(argv[i], "--bos")) {
            bos = 1;
        } else if (!strcmp(argv[i], "--special")) {
            special = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            return 0;
        } else {
            fprintf(stderr, "strata tokenize: unknown option '%s'\n", argv[i]);
            help(stderr);
            return 2;
        }
    }
    if (!text) {
        fprintf(stderr, "strata tokenize: no --text given\n");
        help(stderr);
        return 2;
    }
    st_cli_session s;
    if (st_cli_open("tokenize", &s, &o, NULL, 1)) return 1;
    int32_t *ids = NULL;
    int64_t n = st_tokenizer_encode_alloc(s.tok, text, strlen(text), bos, special, &ids);
    if (n < 0) {
        fprintf(stderr, "strata tokenize: out of memory\n");
        st_cli_close(&s);
        return 1;
    }
    for (int64_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    free(ids);
    st_cli_close(&s);
    return 0;
}
