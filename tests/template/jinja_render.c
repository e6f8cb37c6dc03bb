/* SPDX-License-Identifier: Apache-2.0 */
/* jinja_render TEMPLATE_FILE CONTEXT_JSON_FILE: prints the rendering (or the error on stderr,
 * exit 1). The template conformance test runs it over the published chat templates. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

int main(int argc, char **argv) {
    long long now = 0;
    if (argc == 5 && !strcmp(argv[1], "--time")) { /* fixed strftime_now() */
        now = atoll(argv[2]);
        argv += 2;
        argc -= 2;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: jinja_render [--time EPOCH] TEMPLATE CONTEXT.json\n");
        return 2;
    }
    char *src = slurp(argv[1]), *ctx_text = slurp(argv[2]), err[512] = "", *out = NULL;
    cJSON *ctx = ctx_text ? cJSON_Parse(ctx_text) : NULL;
    st_jinja *t = NULL;
    int rc = 1;
    if (!src || !ctx) {
        fprintf(stderr, "cannot read %s\n", !src ? argv[1] : argv[2]);
        goto fail;
    }
    t = st_jinja_parse(src, err, sizeof err);
    if (t && now) st_jinja_set_time(t, now);
    if (!t || !(out = st_jinja_render(t, ctx, err, sizeof err))) {
        fprintf(stderr, "error: %s\n", err);
        goto fail;
    }
    fputs(out, stdout);
    rc = 0;
fail:
    free(out);
    st_jinja_free(t);
    cJSON_Delete(ctx);
    free(src);
    free(ctx_text);
    return rc;
}
