/* SPDX-License-Identifier: Apache-2.0 */
/* The real stories260K model (argv[1]): greedy 200 tokens from BOS must reproduce the known
 * text of its README exactly, on the reference and on every backend given by name in argv[2..]
 * ("ref" = the scalar reference on host memory). Skips (77) with a message when the file is
 * absent. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_pick.h"
#include "model/ref_device.h"
#include "model_util.h"
#include "tokenizer/tokenizer.h"

static const char k_expected[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One "
    "day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said, "
    "\"Lily, let's go to the park.\" Lily was sad and didn't know what to do. She said, \"I want to play "
    "with your ball, but I can't find it.\"\nLily was sad and didn't know what to do. She said, \"I'm "
    "sorry, Lily. I didn't know what to do.\"\nLily didn't want to help her mom, so she";

static int run_on(const char *path, const char *backend) {
    mt_backend be;
    if (mt_backend_pick(&be, backend)) return 77;
    st_model_params p;
    st_model_params_default(&p);
    p.n_ctx = 256;
    mt_model t;
    if (mt_load_dev(&t, path, be.api, be.index, be.dev, &p)) {
        mt_backend_release(&be);
        CHECK(0, "%s: load failed", backend);
        return 1;
    }
    char err[512];
    st_tokenizer *tk = st_tokenizer_from_gguf(t.g, err, sizeof err);
    CHECK(tk != NULL, "tokenizer: %s", err);
    st_detok *dt = tk ? st_detok_new(tk, ST_DETOK_STRIP_LEADING_SPACE) : NULL;
    char *text = calloc(1, 8192);
    size_t tl = 0;
    int32_t tok = 1;
    for (int i = 0; i < 200 && tk; i++) {
        if (st_model_eval(t.m, 0, &tok, 1, i, 0, NULL, err, sizeof err) ||
            st_model_argmax(t.m, &tok, err, sizeof err)) {
            CHECK(0, "%s: step %d: %s", backend, i, err);
            break;
        }
        const char *piece;
        size_t len;
        if (st_detok_push(dt, tok, &piece, &len) == 0 && tl + len < 8191) {
            memcpy(text + tl, piece, len);
            tl += len;
        }
    }
    text[tl] = 0;
    CHECK(!strcmp(text, k_expected), "%s: greedy text differs:\n--- got ---\n%s\n--- expected ---\n%s", backend,
          text, k_expected);
    if (!strcmp(text, k_expected)) printf("%s: greedy 200 tokens reproduce the known text\n", backend);
    free(text);
    st_detok_free(dt);
    st_tokenizer_free(tk);
    mt_unload(&t);
    mt_backend_release(&be);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || access(argv[1], R_OK) != 0) {
        printf("SKIP: %s not found (the real-model check needs ../shared/models/stories260K.gguf)\n",
               argc > 1 ? argv[1] : "(no path)");
        return 77;
    }
    int ran = 0;
    for (int i = 2; i < argc; i++) {
        int rc = run_on(argv[1], argv[i]);
        if (rc == 77) printf("backend %s is not available here: not checked\n", argv[i]);
        else ran++;
    }
    if (argc == 2) {
        run_on(argv[1], "ref");
        ran++;
    }
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    return ran ? 0 : 77;
}
