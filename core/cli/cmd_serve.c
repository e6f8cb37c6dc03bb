/* strata serve: the OpenAI-compatible server (core/server). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "server/server.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: strata serve [-m F.gguf] [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N]\n"
            "                    [--api-key K] [--chat-template NAME] [--stall-timeout S] [--alias NAME]\n"
            "                    [--threads N] [--backend NAME] [--device N] [--kv-type f16|f32|q8_0]\n"
            "                    [--max-body BYTES] [--queue N] [--report-dir DIR] [--config FILE.json]\n"
            "Without -m, serves the built-in demo model (written by `strata gen-model --preset demo`).\n"
            "docs/server.md describes every option and the JSON config file.\n");
    return f == stdout ? 0 : 2;
}

/* Options from a JSON file: keys are the long option names without dashes. */
/* String values are duplicated and live as long as the process (they configure it). */
static int load_config(const char *path, st_serve_config *c) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "strata serve: cannot read --config %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return -1;
    }
    buf[n] = 0;
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    if (!cJSON_IsObject(j)) {
        fprintf(stderr, "strata serve: --config %s is not a JSON object\n", path);
        cJSON_Delete(j);
        return -1;
    }
    cJSON *it;
    cJSON_ArrayForEach(it, j) {
        const char *k = it->string;
        char *sv = cJSON_IsString(it) ? strdup(it->valuestring) : NULL;
        double dv = cJSON_IsNumber(it) ? it->valuedouble : 0;
        if (!strcmp(k, "model") && sv) c->model_path = sv;
        else if (!strcmp(k, "host") && sv) c->host = sv;
        else if (!strcmp(k, "port")) c->port = (int)dv;
        else if (!strcmp(k, "parallel")) c->parallel = (int)dv;
        else if (!strcmp(k, "ctx")) c->ctx = (int)dv;
        else if (!strcmp(k, "api-key") && sv) c->api_key = sv;
        else if (!strcmp(k, "chat-template") && sv) c->chat_template = sv;
        else if (!strcmp(k, "stall-timeout")) c->stall_timeout = dv;
        else if (!strcmp(k, "alias") && sv) c->model_id = sv;
        else {
            fprintf(stderr, "strata serve: --config %s: unknown or mistyped key '%s'\n", path, k);
            cJSON_Delete(j);
            return -1;
        }
    }
    cJSON_Delete(j);
    return 0;
}

/* The built-in demo model: $XDG_CACHE_HOME/strata/demo.gguf (or ~/.cache/...), written by
 * `strata gen-model --preset demo` on first use. */
static int demo_model(char *path, size_t n) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[900];
    if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/strata", xdg);
    else snprintf(dir, sizeof dir, "%s/.cache/strata", home && *home ? home : "/tmp");
    snprintf(path, n, "%s/demo.gguf", dir);
    if (access(path, R_OK) == 0) {
        fprintf(stderr, "strata serve: no -m given: serving the built-in demo model %s (random weights)\n", path);
        return 0;
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && '/proc/%d/exe' gen-model --preset demo --out '%s'", dir, (int)getpid(),
             path);
    fprintf(stderr, "strata serve: no -m given: writing the built-in demo model to %s\n", path);
    if (system(cmd) != 0) {
        fprintf(stderr, "strata serve: could not write the demo model (command: %s)\n", cmd);
        return -1;
    }
    return 0;
}

int st_cmd_serve(int argc, char **argv) {
    st_serve_config c;
    st_serve_config_default(&c);
    static const char *eng[32];
    int n_eng = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && more) c.model_path = argv[++i];
        else if (!strcmp(a, "--host") && more) c.host = argv[++i];
        else if (!strcmp(a, "--port") && more) c.port = atoi(argv[++i]);
        else if ((!strcmp(a, "--parallel") || !strcmp(a, "-np")) && more) c.parallel = atoi(argv[++i]);
        else if ((!strcmp(a, "--ctx") || !strcmp(a, "-c")) && more) c.ctx = atoi(argv[++i]);
        else if (!strcmp(a, "--api-key") && more) c.api_key = argv[++i];
        else if (!strcmp(a, "--chat-template") && more) c.chat_template = argv[++i];
        else if (!strcmp(a, "--stall-timeout") && more) c.stall_timeout = atof(argv[++i]);
        else if (!strcmp(a, "--alias") && more) c.model_id = argv[++i];
        else if (!strcmp(a, "--max-body") && more) c.max_body = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--queue") && more) c.queue_max = atoi(argv[++i]);
        else if (!strcmp(a, "--report-dir") && more) c.report_dir = argv[++i];
        else if (!strcmp(a, "--config") && more) {
            if (load_config(argv[++i], &c)) return 2;
        } else if ((!strcmp(a, "--threads") || !strcmp(a, "--backend") || !strcmp(a, "--device") ||
                    !strcmp(a, "--kv-type")) && more && n_eng < 30) {
            eng[n_eng++] = a;
            eng[n_eng++] = argv[++i];
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout);
        else {
            fprintf(stderr, "strata serve: unknown option '%s'\n", a);
            return usage(stderr);
        }
    }
    eng[n_eng] = NULL;
    c.engine_args = eng;
    if (c.parallel < 1 || c.parallel > 256) {
        fprintf(stderr, "strata serve: --parallel must be 1..256\n");
        return 2;
    }
    static char demo[1024];
    if (!c.model_path) {
        if (demo_model(demo, sizeof demo)) return 1;
        c.model_path = demo;
        if (!c.model_id) c.model_id = "demo";
    }
    return st_serve_run(&c);
}
