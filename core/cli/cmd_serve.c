/* SPDX-License-Identifier: Apache-2.0 */
/* strata serve: the OpenAI-compatible server (core/server). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_alias.h"
#include "cli/commands.h"
#include "server/server.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: strata serve [-m F.gguf] [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N]\n"
            "                    [--api-key K] [--chat-template NAME] [--alias NAME] [--stall-timeout S]\n"
            "                    [--restart-delay S] [--restart-limit N] [--threads N] [--backend NAME] [--device N]\n"
            "                    [--kv-type f16|f32|q8_0] [--max-body BYTES] [--max-depth N] [--queue N]\n"
            "                    [--report-dir DIR] [--config FILE.json] [--content-specials text|parse]\n"
            "                    [--api-key-file FILE] [--max-buffered BYTES] [--max-connections N]\n"
            "                    [--max-conn-per-ip N] [--header-timeout S] [--body-timeout S] [--http-threads N]\n"
            "                    [--vram-budget SIZE] [--vram-reserve-mib N] [--expert-cache auto|N|SIZE]\n"
            "                    [--expert-policy lfru|lru|profile] [--expert-profile FILE] [--cpu-threads N]\n"
            "                    [--chat-template-file F.jinja] [--no-jinja] [--n-cpu-moe N] [--cpu-moe]\n"
            "                    [--cors '*'|ORIGIN,ORIGIN] [--metrics-auth key|open]\n"
            "                    [--ssl-key-file KEY.pem --ssl-cert-file CERT.pem] (HTTPS)\n"
            "llama-server spellings are accepted where the meaning matches (-c/--ctx-size: the whole KV\n"
            "pool, -np, -t, -a, -ctk/-ctv, --jinja, --n-cpu-moe/--cpu-moe, -ngl/-sm/-ts/-mg; -fa, -b are ignored\n"
            "with a note); STRATA_ARG_<OPTION> environment variables set options too (--kv-type:\n"
            "STRATA_ARG_KV_TYPE; llama.cpp names like STRATA_ARG_CTX_SIZE). docs/agent.md lists them.\n"
            "Without -m, serves the built-in demo model (written by `strata gen-model --preset demo`).\n"
            "docs/server.md describes every option and the JSON config file.\n");
    return f == stdout ? 0 : 2;
}

/* Options passed through to the engine child (`strata engine`), as name/value pairs. */
typedef struct engine_args {
    const char *v[34];
    int n;
} engine_args;

static int num_opt(const char *name, const char *v, double lo, double hi, double *out) {
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "strata serve: %s wants a number from %g to %g, got '%s'\n", name, lo, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int g_ctx_total; /* -c/--ctx-size: the whole KV pool, split over the slots at the end */

/* Apply one option (name without the leading dashes). The value string must outlive the
 * configuration. Returns 0, 1 for an unknown name, -1 for a bad value (printed). */
static char *own(char *v);
static int read_key_file(const char *path, const char **key);

static int set_opt(st_serve_config *c, engine_args *ea, const char *k, const char *v) {
    double x;
    if (!strcmp(k, "api-key-file")) return read_key_file(v, &c->api_key);
    if (!strcmp(k, "model") || !strcmp(k, "m")) c->model_path = v;
    else if (!strcmp(k, "host")) c->host = v;
    else if (!strcmp(k, "api-key")) c->api_key = v;
    else if (!strcmp(k, "chat-template")) c->chat_template = v;
    else if (!strcmp(k, "chat-template-file")) c->chat_template_file = v;
    else if (!strcmp(k, "no-jinja")) c->no_jinja = 1;
    else if (!strcmp(k, "cors")) c->cors = v;
    else if (!strcmp(k, "ssl-key-file")) c->ssl_key_file = v;
    else if (!strcmp(k, "ssl-cert-file")) c->ssl_cert_file = v;
    else if (!strcmp(k, "metrics-auth")) {
        if (strcmp(v, "key") && strcmp(v, "open")) {
            fprintf(stderr, "strata serve: --metrics-auth wants key or open, got '%s'\n", v);
            return -1;
        }
        c->metrics_open = !strcmp(v, "open");
    }
    else if (!strcmp(k, "ctx-total")) {
        if (num_opt("--ctx-size", v, 0, 1 << 26, &x)) return -1;
        g_ctx_total = (int)x;
    }
    else if (!strcmp(k, "alias")) c->model_id = v;
    else if (!strcmp(k, "report-dir")) c->report_dir = v;
    else if (!strcmp(k, "port")) {
        if (num_opt("--port", v, 1, 65535, &x)) return -1;
        c->port = (int)x;
    } else if (!strcmp(k, "parallel") || !strcmp(k, "np")) {
        if (num_opt("--parallel", v, 1, 256, &x)) return -1;
        c->parallel = (int)x;
    } else if (!strcmp(k, "ctx") || !strcmp(k, "c")) {
        if (num_opt("--ctx", v, 0, 1 << 24, &x)) return -1;
        c->ctx = (int)x;
    } else if (!strcmp(k, "stall-timeout")) {
        if (num_opt("--stall-timeout", v, 0.1, 1e6, &x)) return -1;
        c->stall_timeout = x;
    } else if (!strcmp(k, "restart-delay")) {
        if (num_opt("--restart-delay", v, 0, 3600, &x)) return -1;
        c->restart_delay = x;
    } else if (!strcmp(k, "content-specials")) {
        if (strcmp(v, "text") && strcmp(v, "parse")) {
            fprintf(stderr, "strata serve: --content-specials wants text or parse, got '%s'\n", v);
            return -1;
        }
        c->content_specials = !strcmp(v, "parse");
    } else if (!strcmp(k, "restart-limit")) {
        if (num_opt("--restart-limit", v, 1, 1000, &x)) return -1;
        c->restart_limit = (int)x;
    } else if (!strcmp(k, "max-body")) {
        if (num_opt("--max-body", v, 1024, 64 << 20, &x)) return -1;
        c->max_body = (size_t)x;
    } else if (!strcmp(k, "max-buffered")) {
        if (num_opt("--max-buffered", v, 1 << 16, 1 << 30, &x)) return -1;
        c->max_buffered = (size_t)x;
    } else if (!strcmp(k, "max-connections")) {
        if (num_opt("--max-connections", v, 16, 1 << 20, &x)) return -1;
        c->max_connections = (int)x;
    } else if (!strcmp(k, "max-conn-per-ip")) {
        if (num_opt("--max-conn-per-ip", v, 0, 1 << 20, &x)) return -1;
        c->max_conn_per_ip = (int)x;
    } else if (!strcmp(k, "header-timeout")) {
        if (num_opt("--header-timeout", v, 0.1, 3600, &x)) return -1;
        c->header_timeout = x;
    } else if (!strcmp(k, "body-timeout")) {
        if (num_opt("--body-timeout", v, 1, 3600, &x)) return -1;
        c->body_timeout = x;
    } else if (!strcmp(k, "http-threads")) {
        if (num_opt("--http-threads", v, 1, 256, &x)) return -1;
        c->http_threads = (int)x;
    } else if (!strcmp(k, "max-depth")) {
        if (num_opt("--max-depth", v, 2, 1000, &x)) return -1;
        c->max_depth = (int)x;
    } else if (!strcmp(k, "queue")) {
        if (num_opt("--queue", v, 1, 1 << 20, &x)) return -1;
        c->queue_max = (int)x;
    } else {
        /* passed through to the engine; given again, the last one counts */
        static const char *const pass[] = {"--threads", "--backend", "--device", "--kv-type", "--vram-budget",
                                           "--vram-reserve-mib", "--expert-cache", "--expert-policy",
                                           "--expert-profile", "--cpu-threads", "--n-cpu-moe", "--n-gpu-layers",
                                           "--split-mode", "--tensor-split", "--main-device", NULL};
        int i = 0;
        while (pass[i] && strcmp(pass[i] + 2, k)) i++;
        if (!pass[i]) return 1;
        int at = 0;
        while (at < ea->n && ea->v[at] != pass[i]) at += 2;
        if (at == ea->n) ea->n += 2;
        ea->v[at] = pass[i];
        ea->v[at + 1] = v;
        return 0;
    }
    return 0;
}

/* Strings of config files: they live while the server runs, freed when it returns. */
static char **g_owned;
static int g_n_owned;

static char *own(char *v) {
    char **p = v ? realloc(g_owned, sizeof *g_owned * (size_t)(g_n_owned + 1)) : NULL;
    if (!p) {
        free(v);
        return NULL;
    }
    g_owned = p;
    g_owned[g_n_owned++] = v;
    return v;
}

/* The API key from a file (its first line, without the line end and trailing blanks), so that
 * it does not show in `ps` as --api-key does. */
static int read_key_file(const char *path, const char **key) {
    FILE *f = fopen(path, "r");
    char line[4096];
    if (!f || !fgets(line, sizeof line, f)) {
        fprintf(stderr, "strata serve: cannot read the API key from --api-key-file %s\n", path);
        if (f) fclose(f);
        return -1;
    }
    fclose(f);
    size_t l = strcspn(line, "\r\n");
    while (l && (line[l - 1] == ' ' || line[l - 1] == '\t')) l--;
    line[l] = 0;
    if (!l) {
        fprintf(stderr, "strata serve: --api-key-file %s: the first line is empty\n", path);
        return -1;
    }
    *key = own(strdup(line));
    return *key ? 0 : -1;
}

/* Options from a JSON file: keys are the long option names without dashes, values strings or
 * numbers (copied; see own()). */
static int load_config(const char *path, st_serve_config *c, engine_args *ea) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "strata serve: cannot read --config %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "strata serve: cannot read --config %s\n", path);
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
    int rc = 0;
    cJSON_ArrayForEach(it, j) {
        char num[64], *v = NULL;
        if (cJSON_IsString(it)) v = own(strdup(it->valuestring));
        else if (cJSON_IsNumber(it)) {
            snprintf(num, sizeof num, "%.17g", it->valuedouble);
            v = own(strdup(num));
        }
        int r = v ? set_opt(c, ea, it->string, v) : 1;
        if (r) {
            if (r > 0)
                fprintf(stderr, "strata serve: --config %s: unknown key '%s' or not a string/number\n", path,
                        it->string);
            rc = -1;
            break;
        }
    }
    cJSON_Delete(j);
    return rc;
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
    char cmd[4096];
    /* written aside and renamed: an interrupted first start leaves no half-written model */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && '/proc/%d/exe' gen-model --preset demo --out '%s.tmp' && mv '%s.tmp' '%s'",
             dir, (int)getpid(), path, path, path);
    fprintf(stderr, "strata serve: no -m given: writing the built-in demo model to %s\n", path);
    if (system(cmd) != 0) {
        fprintf(stderr, "strata serve: could not write the demo model (command: %s)\n", cmd);
        return -1;
    }
    return 0;
}

static const char *const k_known[] = {"--model", "--host", "--port", "--parallel", "--ctx", "--api-key", "--chat-template",
                                     "--chat-template-file", "--alias", "--stall-timeout", "--restart-delay", "--threads",
                                     "--backend", "--device", "--kv-type", "--max-body", "--max-depth", "--queue",
                                     "--report-dir", "--config", "--vram-budget", "--vram-reserve-mib", "--expert-cache",
                                     "--expert-policy", "--expert-profile", "--cpu-threads", "--n-cpu-moe",
                                     "--api-key-file", "--restart-limit", "--content-specials", "--max-buffered",
                                     "--max-connections", "--max-conn-per-ip", "--header-timeout", "--body-timeout",
                                     "--http-threads", "--cors", "--metrics-auth", "--n-gpu-layers", "--split-mode",
                                     "--tensor-split", "--main-device", "--ssl-key-file", "--ssl-cert-file", NULL};

/* A llama.cpp spelling (cli/cli_alias.h): 1 with *k (NULL when ignored) and *v, 0 when argv[*i]
 * is not one, -1 when its value is missing. Its note is printed. */
static int alias_opt(int argc, char **argv, int *i, const char **k, const char **v) {
    const st_cli_alias *al = st_cli_alias_find(argv[*i]);
    if (!al) return 0;
    if (al->note) fprintf(stderr, "strata serve: note: %s\n", al->note);
    *k = al->canon;
    *v = al->flag_value;
    if (al->flag == 2 && *i + 1 < argc &&
        (!strcmp(argv[*i + 1], "on") || !strcmp(argv[*i + 1], "off") || !strcmp(argv[*i + 1], "auto")))
        ++*i;
    if (al->flag) return 1;
    if (*i + 1 >= argc) {
        fprintf(stderr, "strata serve: option %s needs a value\n", argv[*i]);
        return -1;
    }
    *v = argv[++*i];
    return 1;
}

/* STRATA_ARG_<NAME> environment variables, as llama-server reads LLAMA_ARG_<NAME>: every long
 * option (--kv-type: STRATA_ARG_KV_TYPE) and llama.cpp's names (CTX_SIZE, N_PARALLEL,
 * N_CPU_MOE, CACHE_TYPE_K, ...). Options on the command line come after and win. */
static int env_opts(st_serve_config *c, engine_args *ea) {
    static const char *const llama[][2] = {{"CTX_SIZE", "ctx-total"}, {"N_PARALLEL", "parallel"}, {"N_CPU_MOE", "n-cpu-moe"},
                                           {"CACHE_TYPE_K", "kv-type"}, {"CACHE_TYPE_V", "kv-type"}, {"API_KEY", "api-key"}};
    char env[96];
    for (int i = 0; k_known[i]; i++) {
        const char *k = k_known[i] + 2;
        size_t n = (size_t)snprintf(env, sizeof env, "STRATA_ARG_%s", k);
        for (size_t j = 11; j < n; j++) env[j] = env[j] == '-' ? '_' : (char)(env[j] >= 'a' && env[j] <= 'z' ? env[j] - 32 : env[j]);
        const char *v = getenv(env);
        if (v && *v && strcmp(k, "config") && set_opt(c, ea, k, v)) {
            fprintf(stderr, "strata serve: bad %s='%s'\n", env, v);
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof llama / sizeof llama[0]; i++) {
        snprintf(env, sizeof env, "STRATA_ARG_%s", llama[i][0]);
        const char *v = getenv(env);
        if (v && *v && set_opt(c, ea, llama[i][1], v)) {
            fprintf(stderr, "strata serve: bad %s='%s'\n", env, v);
            return -1;
        }
    }
    return 0;
}

int st_cmd_serve(int argc, char **argv) {
    st_serve_config c;
    st_serve_config_default(&c);
    static engine_args ea;
    if (env_opts(&c, &ea)) return 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout);
        const char *k, *v;
        int r = alias_opt(argc, argv, &i, &k, &v);
        if (r < 0) return 2;
        if (r > 0 && !k) continue; /* accepted and ignored */
        if (!r) {
            if (a[0] != '-' || i + 1 >= argc) {
                fprintf(stderr, "strata serve: unknown option or missing value: '%s'\n", a);
                return usage(stderr);
            }
            k = a + (a[1] == '-' ? 2 : 1);
            v = argv[++i];
        }
        r = !strcmp(k, "config") ? load_config(v, &c, &ea) : set_opt(&c, &ea, k, v);
        if (r > 0) {
            const char *near = st_cli_closest(a, k_known);
            fprintf(stderr, "strata serve: unknown option '%s'%s%s%s\n", a, near ? " (did you mean " : "",
                    near ? near : "", near ? "?)" : "");
            return usage(stderr);
        }
        if (r < 0) return 2;
    }
    if (g_ctx_total > 0) c.ctx = g_ctx_total / (c.parallel > 0 ? c.parallel : 1);
    ea.v[ea.n] = NULL;
    c.engine_args = ea.v;
    const char *env_key = getenv("STRATA_API_KEY");
    if (!c.api_key && env_key && *env_key) c.api_key = env_key;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--api-key") || !strcmp(argv[i], "-api-key"))
            fprintf(stderr, "strata serve: WARNING: --api-key on the command line shows in `ps`; "
                            "prefer --api-key-file FILE or the STRATA_API_KEY environment variable\n");
    static char demo[1024];
    if (!c.model_path) {
        if (demo_model(demo, sizeof demo)) return 1;
        c.model_path = demo;
        if (!c.model_id) c.model_id = "demo";
    }
    int rc = st_serve_run(&c);
    for (int i = 0; i < g_n_owned; i++) free(g_owned[i]);
    free(g_owned);
    return rc;
}
