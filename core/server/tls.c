// SPDX-License-Identifier: Apache-2.0
/* TLS for `strata serve` (--ssl-key-file / --ssl-cert-file): both PEM files are read before
 * the model is loaded, so that a wrong path ends the start at once with a message that names
 * the file; libmicrohttpd then runs TLS (GnuTLS) with them in memory (server/http.c). */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/front.h"

#define TLS_PEM_MAX (1 << 20)

/* The whole file (malloc'ed, NUL-terminated), or NULL with the reason printed. */
static char *read_pem(const char *opt, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "strata serve: %s %s: cannot open the file\n", opt, path);
        return NULL;
    }
    char *buf = malloc(TLS_PEM_MAX + 1);
    size_t n = buf ? fread(buf, 1, TLS_PEM_MAX + 1, f) : 0;
    int err = ferror(f);
    fclose(f);
    if (!buf || err || n > TLS_PEM_MAX) {
        fprintf(stderr, "strata serve: %s %s: %s\n", opt, path,
                !buf ? "out of memory" : err ? "cannot read the file" : "larger than 1 MiB, not a PEM file");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

/* Nonzero when text holds a PEM block whose label ends with want ("PRIVATE KEY" matches
 * "RSA PRIVATE KEY", "EC PRIVATE KEY" and PKCS#8's plain "PRIVATE KEY"). */
static int has_pem(const char *text, const char *want) {
    for (const char *p = strstr(text, "-----BEGIN "); p; p = strstr(p + 1, "-----BEGIN ")) {
        const char *label = p + 11, *end = strstr(label, "-----");
        size_t n = strlen(want);
        if (end && (size_t)(end - label) >= n && !memcmp(end - n, want, n)) return 1;
    }
    return 0;
}

static char *load_one(const char *opt, const char *path, const char *want) {
    char *pem = read_pem(opt, path);
    if (pem && !has_pem(pem, want)) {
        fprintf(stderr, "strata serve: %s %s: no PEM '-----BEGIN ...%s-----' block in the file\n", opt, path, want);
        free(pem);
        return NULL;
    }
    return pem;
}

int st_tls_load(st_front *f) {
    const char *key = f->cfg.ssl_key_file, *cert = f->cfg.ssl_cert_file;
    if (!key && !cert) return 0;
    if (!key || !cert) {
        fprintf(stderr, "strata serve: TLS needs both --ssl-key-file and --ssl-cert-file (only %s was given)\n",
                key ? "--ssl-key-file" : "--ssl-cert-file");
        return -1;
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        fprintf(stderr, "strata serve: this libmicrohttpd was built without TLS (GnuTLS): "
                        "--ssl-key-file/--ssl-cert-file cannot be used\n");
        return -1;
    }
    f->tls_key = load_one("--ssl-key-file", key, "PRIVATE KEY");
    f->tls_cert = f->tls_key ? load_one("--ssl-cert-file", cert, "CERTIFICATE") : NULL;
    return f->tls_cert ? 0 : -1;
}

void st_tls_free(st_front *f) {
    free(f->tls_key);
    free(f->tls_cert);
    f->tls_key = f->tls_cert = NULL;
}
