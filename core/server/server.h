/* SPDX-License-Identifier: Apache-2.0 */
/* `strata serve`: the front process. It owns HTTP (libmicrohttpd), JSON (cJSON), chat
 * templates and tokenization, and supervises one engine child process (the same executable
 * run as `strata engine`) that holds the model and the devices. When the engine dies or
 * stalls, every in-flight request ends with an error that says what happened, new requests
 * get 503 with Retry-After, and the engine is started again. */
#ifndef STRATA_SERVER_H
#define STRATA_SERVER_H

#include <stddef.h>

typedef struct st_serve_config {
    const char *model_path;   /* GGUF file (required) */
    const char *model_id;     /* name clients use; NULL = file name without .gguf */
    const char *host;         /* default 127.0.0.1 */
    int port;                 /* default 8080 */
    int parallel;             /* slots (default 4) */
    int ctx;                  /* context per slot (0 = model default, capped at 4096) */
    const char *api_key;      /* NULL = no authentication */
    const char *chat_template;/* name, or NULL to detect from the GGUF */
    double stall_timeout;     /* seconds without progress before the engine is restarted (default 60) */
    double restart_delay;     /* seconds to wait before restarting a dead engine (default 1; doubled
                                 after each death before an engine got ready, up to 300 s) */
    int restart_limit;        /* start-up failures in a row, the same way, before the restarts stop
                                 (default 3; the first engine's ST_ENGINE_EXIT_START ends the server) */
    size_t max_body;          /* bytes of one request body (default 1 MiB, at most 64 MiB) */
    size_t max_buffered;      /* bytes of request bodies buffered at once, all connections together
                                 (default 64 MiB; a body past it gets 503 and is not kept) */
    int max_connections;      /* open connections (default 4096, less when the fd limit is lower) */
    int max_conn_per_ip;      /* open connections from one address (default 0: no limit) */
    double header_timeout;    /* seconds for a request's headers to arrive, from the connection's
                                 start or the previous answer on it (keep-alive idle); default 10 */
    double body_timeout;      /* seconds without a byte while a body is read (default 30) */
    int http_threads;         /* threads serving every connection (default 4) */
    int max_depth;            /* JSON nesting (default 32) */
    int queue_max;            /* waiting requests before 429 (default 64) */
    int content_specials;     /* 1: control tokens typed in chat content are parsed as special tokens
                                 (--content-specials parse); 0 (default): they are plain text */
    const char *report_dir;   /* crash and stall reports (default $TMPDIR or /tmp) */
    const char *exe;          /* this executable, for the engine child (default /proc/self/exe) */
    const char *const *engine_args; /* extra arguments for `strata engine` (NULL-terminated) */
    const char *chat_template_file; /* a Jinja chat template file (overrides the GGUF's) */
    int no_jinja;             /* use the built-in families only (--no-jinja) */
    const char *cors;         /* allowed browser origins: "*" or "https://a,https://b"; NULL = no CORS headers */
    const char *ssl_key_file; /* PEM private key: with ssl_cert_file, the server speaks HTTPS only */
    const char *ssl_cert_file;/* PEM certificate (chain) */
    int metrics_open;         /* --metrics-auth open: /metrics and /slots answer without the API key */
} st_serve_config;

/* Fill defaults (everything above that has one). */
void st_serve_config_default(st_serve_config *c);
/* Run the server until SIGINT/SIGTERM. Returns the process exit status (0 after a clean
 * shutdown, 1 when it could not start: the reason is printed). */
int st_serve_run(const st_serve_config *c);

#endif
