/* SPDX-License-Identifier: Apache-2.0 */
/* strata: command dispatcher. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} st_command;

static int usage(FILE *f, const st_command *cmds, size_t n) {
    fprintf(f, "usage: strata <command> [options]   (strata <command> --help for details)\n"
               "       strata --version   version, commit, backend ABI and the modules found\n\n");
    for (size_t i = 0; i < n; i++)
        if (cmds[i].fn && cmds[i].help) fprintf(f, "  %-16s %s\n", cmds[i].name, cmds[i].help);
    return f == stderr ? 2 : 0;
}

int main(int argc, char **argv) {
    const st_command cmds[] = {
        {"backends", st_cmd_backends, "list backend modules, why each loaded or not, and devices"},
        {"conformance", st_cmd_conformance, "check every op of a backend against the reference"},
        {"gguf", st_cmd_gguf, "print a GGUF file's metadata and tensor table"},
        {"gen-model", st_cmd_gen_model, "write a GGUF model with random weights"},
        {"run", st_cmd_run, "generate text from a prompt"},
        {"tokenize", st_cmd_tokenize, "print the token ids of a text"},
        {"logits", st_cmd_logits, "write the logits of a token sequence"},
        {"bench", st_cmd_bench, "measure prefill and decode speed"},
        {"serve", st_cmd_serve, "serve the OpenAI-compatible HTTP API"},
        {"profile-experts", st_cmd_profile_experts, "record which experts prompts route to"},
        {"plan", st_cmd_plan, "print the memory plan of a model on the chosen devices"},
        {"engine", st_cmd_engine, NULL}, /* started by `strata serve` */
    };
    const size_t n = sizeof cmds / sizeof cmds[0];
    if (argc < 2) return usage(stderr, cmds, n);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        return usage(stdout, cmds, n);
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        if (st_cmd_version) return st_cmd_version(argc - 1, argv + 1);
        printf("strata (version not part of this build)\n");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[1], cmds[i].name)) continue;
        if (!cmds[i].fn) {
            fprintf(stderr, "strata: '%s' is not part of this build%s\n", argv[1],
                    strcmp(argv[1], "serve") ? ""
                                             : " (the server needs libmicrohttpd and cJSON when it is built; the "
                                               "Windows build leaves it out: docs/packaging.md)");
            return 2;
        }
        return cmds[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "strata: unknown command '%s'\n", argv[1]);
    return usage(stderr, cmds, n);
}
