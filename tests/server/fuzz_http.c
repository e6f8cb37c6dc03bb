/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the HTTP layer of `strata serve` (libmicrohttpd with core/server/http.c and
 * http_gen.c: routes, methods, the key, body limits, the JSON mapping) over a real socket. The
 * server runs in this process with no engine (every generation ends in 503 after parsing and
 * tokenizing); each input is sent as one client's bytes, then the client half-closes and reads
 * the answer. Needs STRATA_FUZZ_MODEL, a GGUF whose tokenizer is used (ci/fuzz.sh sets it). */
#include <arpa/inet.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/front.h"

static st_front *g_f;
static int g_port;

static int setup(void) {
    const char *model = getenv("STRATA_FUZZ_MODEL");
    char err[512];
    st_front *f = calloc(1, sizeof *f);
    if (!f || !model) {
        fprintf(stderr, "fuzz_http: set STRATA_FUZZ_MODEL to a GGUF with a tokenizer\n");
        return -1;
    }
    st_serve_config_default(&f->cfg);
    f->cfg.model_path = model;
    f->cfg.api_key = "sk-fuzz";
    f->cfg.max_body = 65536;
    f->cfg.port = 20000 + (int)(getpid() % 20000);
    f->gguf = st_gguf_open(model, err, sizeof err);
    f->tok = f->gguf ? st_tokenizer_from_gguf(f->gguf, err, sizeof err) : NULL;
    if (!f->tok) {
        fprintf(stderr, "fuzz_http: %s\n", err);
        return -1;
    }
    snprintf(f->model_id, sizeof f->model_id, "fuzz");
    f->tmpl = ST_CHAT_CHATML;
    f->fd = -1;
    f->state = ST_ENGINE_STOPPED;
    snprintf(f->state_reason, sizeof f->state_reason, "no engine while fuzzing");
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->send_mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (!st_http_start(f)) return -1;
    g_f = f;
    g_port = f->cfg.port;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready = 0;
    if (!ready) ready = setup() == 0 ? 1 : -1;
    if (ready < 0) abort();
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a)) {
        if (s >= 0) close(s);
        return 0;
    }
    for (size_t off = 0; off < size;) {
        ssize_t w = send(s, data + off, size - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
    shutdown(s, SHUT_WR);
    char buf[4096];
    struct pollfd p = {.fd = s, .events = POLLIN};
    while (poll(&p, 1, 200) > 0 && recv(s, buf, sizeof buf, 0) > 0) {
    }
    close(s);
    st_http_tick(NULL);
    return 0;
}
