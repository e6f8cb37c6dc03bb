/* SPDX-License-Identifier: Apache-2.0 */
/* llama.cpp spellings: one table for all commands. */
#include "cli/cli_alias.h"

#include <string.h>

static const st_cli_alias k_alias[] = {
    {"--ctx-size", "ctx-total", 0, NULL, "-c/--ctx-size is the whole KV pool shared by the slots, as in llama.cpp: each slot gets N / --parallel (--ctx sets one slot's)"},
    {"-c", "ctx-total", 0, NULL, "-c/--ctx-size is the whole KV pool shared by the slots, as in llama.cpp: each slot gets N / --parallel (--ctx sets one slot's)"},
    {"-np", "parallel", 0, NULL, NULL},
    {"-t", "threads", 0, NULL, NULL},
    {"-a", "alias", 0, NULL, NULL},
    {"-ctk", "kv-type", 0, NULL, NULL},
    {"--cache-type-k", "kv-type", 0, NULL, NULL},
    {"-ctv", "kv-type", 0, NULL, "-ctv: Strata stores K and V in one type: the last of -ctk/-ctv counts"},
    {"--cache-type-v", "kv-type", 0, NULL, "--cache-type-v: Strata stores K and V in one type: the last of -ctk/-ctv counts"},
    {"-ncmoe", "n-cpu-moe", 0, NULL, NULL},
    {"--cpu-moe", "n-cpu-moe", 1, "1048576", NULL},
    {"-cmoe", "n-cpu-moe", 1, "1048576", NULL},
    {"--jinja", NULL, 1, NULL, NULL}, /* the default: the model's template runs */
    {"--no-jinja", "no-jinja", 1, "1", NULL},
    {"-fa", NULL, 2, NULL, "-fa/--flash-attn: Strata's attention is always fused over the paged KV cache; ignored"},
    {"--flash-attn", NULL, 2, NULL, "-fa/--flash-attn: Strata's attention is always fused over the paged KV cache; ignored"},
    {"-ngl", "n-gpu-layers", 0, NULL, NULL},
    {"--gpu-layers", "n-gpu-layers", 0, NULL, NULL},
    {"-sm", "split-mode", 0, NULL, NULL},
    {"-ts", "tensor-split", 0, NULL, NULL},
    {"-mg", "main-device", 0, NULL, NULL},
    {"--main-gpu", "main-device", 0, NULL, NULL},
    {"-b", NULL, 0, NULL, "-b/--batch-size: the server's step budget follows the memory plan; ignored"},
    {"--batch-size", NULL, 0, NULL, "-b/--batch-size: the server's step budget follows the memory plan; ignored"},
    {"-ub", NULL, 0, NULL, "-ub/--ubatch-size: ignored"},
    {"--ubatch-size", NULL, 0, NULL, "-ub/--ubatch-size: ignored"},
    {"-tb", NULL, 0, NULL, "-tb/--threads-batch: one pool serves prefill and decode (-t); ignored"},
    {"--threads-batch", NULL, 0, NULL, "-tb/--threads-batch: one pool serves prefill and decode (-t); ignored"},
    {"--no-mmap", NULL, 1, NULL, "--no-mmap: the server's engine maps the file and reads experts from it by design; ignored"},
    {"--mlock", NULL, 1, NULL, "--mlock: ignored"},
    {"--metrics", NULL, 1, NULL, NULL}, /* /metrics is always on */
    {"-cb", NULL, 1, NULL, NULL},       /* continuous batching is always on */
    {"--cont-batching", NULL, 1, NULL, NULL},
    {"--no-webui", NULL, 1, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL}};

const st_cli_alias *st_cli_alias_find(const char *arg) {
    for (int i = 0; k_alias[i].spelling; i++)
        if (!strcmp(arg, k_alias[i].spelling)) return &k_alias[i];
    return NULL;
}

static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b), row[64];
    if (la > 62 || lb > 62) return 99;
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int cur = row[j], sub = prev + (a[i - 1] != b[j - 1]);
            int best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            prev = cur;
        }
    }
    return row[lb];
}

const char *st_cli_closest(const char *arg, const char *const *known) {
    const char *best = NULL;
    int bd = 1 << 30;
    for (int i = 0; known && known[i]; i++) {
        int d = edit_distance(arg, known[i]);
        if (d < bd) bd = d, best = known[i];
    }
    for (int i = 0; k_alias[i].spelling; i++) {
        int d = edit_distance(arg, k_alias[i].spelling);
        if (d < bd) bd = d, best = k_alias[i].spelling;
    }
    int len = (int)strlen(arg);
    return bd <= (len > 6 ? 3 : 2) ? best : NULL;
}
