// SPDX-License-Identifier: Apache-2.0
/* An embedding example: opens a model with libstrata, streams a completion (or, with --chat,
 * the reply to one user message) to stdout and prints the statistics on stderr.
 *
 *   cc generate.c $(pkg-config --cflags --libs strata) -o strata-generate
 *   ./strata-generate -m model.gguf -p "Once upon a time" -n 64 [--temp 0] [--seed 1] [--chat]
 *                     [--backend cpu] [--threads N] [--ignore-eos]
 *
 * Like `strata run`, it prints the prompt and then the completion, so that with --temp 0 both
 * print the same text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

static int on_token(void *user, int32_t token, const char *text, size_t len) {
    (void)token;
    int *n = user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    if (token >= 0) ++*n;
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: strata-generate -m F.gguf [-p TEXT] [-n N] [--temp X] [--seed S] [--chat] "
                    "[--backend NAME] [--threads N] [--ignore-eos]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *path = NULL, *prompt = "";
    int chat = 0, n_tokens = 0;
    strata_model_options mo;
    strata_generate_options go;
    strata_model_options_init(&mo);
    strata_generate_options_init(&go);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--chat")) chat = 1;
        else if (!strcmp(a, "--ignore-eos")) go.ignore_eos = 1;
        else if (!v) return usage();
        else if (!strcmp(a, "-m")) path = v, i++;
        else if (!strcmp(a, "-p")) prompt = v, i++;
        else if (!strcmp(a, "-n")) go.max_tokens = atoi(v), i++;
        else if (!strcmp(a, "--temp")) go.temperature = (float)atof(v), i++;
        else if (!strcmp(a, "--seed")) go.seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--backend")) mo.backend = v, i++;
        else if (!strcmp(a, "--threads")) mo.threads = atoi(v), i++;
        else return usage();
    }
    if (!path) return usage();

    strata_model *model = NULL;
    strata_context *ctx = NULL;
    strata_status s = strata_model_open(path, &mo, &model);
    if (s == STRATA_OK) s = strata_context_new(model, &ctx);
    if (s != STRATA_OK) {
        fprintf(stderr, "strata-generate: %s: %s\n", strata_status_name(s), strata_last_error());
        strata_model_free(model);
        return 1;
    }
    strata_model_info info = {.size = sizeof info};
    strata_model_get_info(model, &info);
    fprintf(stderr, "[libstrata %s, API %s: %s on %s]\n", strata_version(), strata_api_version(), info.description,
            info.device);

    go.on_token = on_token;
    go.user = &n_tokens;
    strata_generate_result res = {.size = sizeof res};
    if (chat) {
        strata_chat_message msg = {"user", prompt};
        s = strata_chat(ctx, &msg, 1, &go, &res);
    } else {
        fputs(prompt, stdout);
        s = strata_generate_text(ctx, prompt, &go, &res);
    }
    printf("\n");
    static const char *const finish[] = {"stop", "length", "cancel", "error"};
    if (s == STRATA_OK)
        fprintf(stderr, "[prompt: %d tokens | generated: %d tokens (%d streamed) | %s | %.1f ms + %.1f ms]\n", res.n_prompt,
                res.n_generated, n_tokens, finish[res.finish & 3], res.prefill_ms, res.decode_ms);
    else
        fprintf(stderr, "strata-generate: %s: %s\n", strata_status_name(s), strata_last_error());
    strata_context_free(ctx);
    strata_model_free(model);
    return s == STRATA_OK ? 0 : 1;
}
