/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance test calls the module's table directly, not through the device door
 * (core/backend/dev.h): it tests the table itself (each slot as the module filled it, its
 * statuses and texts unchanged), which the door would check, rename and retry around. */
#include "conformance/conf_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

static uint64_t next_u64(st_conf_ctx *c) { /* splitmix64 */
    uint64_t z = (c->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float st_conf_randf(st_conf_ctx *c, float lo, float hi) {
    double u = (double)(next_u64(c) >> 11) / 9007199254740992.0;
    return (float)(lo + (hi - lo) * u);
}

int st_conf_randi(st_conf_ctx *c, int n) { return (int)(next_u64(c) % (uint64_t)n); }

void *st_conf_host(st_conf_ctx *c, size_t bytes) {
    if (c->n_hbuf >= (int)(sizeof c->hbuf / sizeof c->hbuf[0])) {
        st_conf_device_failed(c, "harness: too many host buffers in one case", ST_INTERNAL);
        return NULL;
    }
    void *p = calloc(1, bytes ? bytes : 1);
    if (p) c->hbuf[c->n_hbuf++] = p;
    return p;
}

int st_conf_device_failed(st_conf_ctx *c, const char *what, st_status s) {
    if (!c->alloc_failed)
        snprintf(c->fail_text, sizeof c->fail_text, "%s: status %d: %s", what, (int)s, c->api->last_error());
    c->alloc_failed = 1;
    return 0;
}

static void *dev_alloc(st_conf_ctx *c, size_t bytes) {
    if (c->alloc_failed || c->n_dbuf >= ST_CONF_MAX_BUFS) {
        if (!c->alloc_failed) st_conf_device_failed(c, "too many buffers in one case", ST_INTERNAL);
        return NULL;
    }
    void *d = NULL;
    st_status s = c->api->mem_alloc(c->dev, bytes ? bytes : 1, &d);
    if (s != ST_OK || !d) {
        st_conf_device_failed(c, "mem_alloc", s);
        return NULL;
    }
    c->dbuf[c->n_dbuf++] = d;
    return d;
}

void *st_conf_upload(st_conf_ctx *c, const void *host, size_t bytes) {
    void *d = dev_alloc(c, bytes);
    if (!d) return NULL;
    st_status s = c->api->copy_h2d(c->stream, d, host, bytes);
    if (s == ST_OK) s = c->api->stream_sync(c->stream);
    if (s != ST_OK) {
        st_conf_device_failed(c, "copy_h2d", s);
        return NULL;
    }
    return d;
}

void *st_conf_poisoned(st_conf_ctx *c, size_t bytes) {
    void *d = dev_alloc(c, bytes);
    if (!d) return NULL;
    st_status s = c->api->memset_d(c->stream, d, 0xFF, bytes);
    if (s == ST_OK) s = c->api->stream_sync(c->stream);
    if (s != ST_OK) {
        st_conf_device_failed(c, "memset_d", s);
        return NULL;
    }
    return d;
}

void *st_conf_download(st_conf_ctx *c, const void *dev, size_t bytes) {
    if (c->alloc_failed || !dev) return NULL;
    void *h = st_conf_host(c, bytes);
    if (!h) return NULL;
    st_status s = c->api->copy_d2h(c->stream, h, dev, bytes);
    if (s == ST_OK) s = c->api->stream_sync(c->stream);
    if (s != ST_OK) {
        st_conf_device_failed(c, "copy_d2h", s);
        return NULL;
    }
    return h;
}

st_tensor st_conf_tensor(uint32_t type, int64_t n0, int64_t n1, int64_t n2) {
    st_tensor t;
    memset(&t, 0, sizeof t);
    t.type = type;
    t.ne[0] = n0;
    t.ne[1] = n1;
    t.ne[2] = n2;
    t.ne[3] = 1;
    t.nb[0] = (int64_t)st_type_get(type)->type_size;
    t.nb[1] = (int64_t)st_row_size(type, n0);
    t.nb[2] = t.nb[1] * n1;
    t.nb[3] = t.nb[2] * n2;
    return t;
}

size_t st_conf_nbytes(const st_tensor *t) { return (size_t)(t->nb[1] * t->ne[1] * t->ne[2] * t->ne[3]); }

void *st_conf_random_tensor(st_conf_ctx *c, st_tensor *t, float amp) {
    size_t bytes = st_conf_nbytes(t);
    void *h = st_conf_host(c, bytes);
    float *row = malloc(sizeof(float) * (size_t)t->ne[0]);
    if (!h || !row) {
        free(row);
        st_conf_device_failed(c, "host allocation", ST_OOM);
        return NULL;
    }
    int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
    for (int64_t r = 0; r < rows; r++) {
        /* vary the row's scale so per-row scales matter */
        float ra = amp * st_conf_randf(c, 0.25f, 1.0f);
        for (int64_t i = 0; i < t->ne[0]; i++) row[i] = st_conf_randf(c, -ra, ra);
        st_quantize_row(t->type, row, (char *)h + r * t->nb[1], t->ne[0]);
    }
    free(row);
    t->data = h;
    return h;
}

st_tensor st_conf_to_device(st_conf_ctx *c, const st_tensor *host) {
    st_tensor d = *host;
    d.data = st_conf_upload(c, host->data, st_conf_nbytes(host));
    return d;
}

void st_conf_output_pair(st_conf_ctx *c, const st_tensor *like, st_tensor *host, st_tensor *dev) {
    *host = *like;
    *dev = *like;
    size_t bytes = st_conf_nbytes(like);
    host->data = st_conf_host(c, bytes);
    if (host->data) memset(host->data, 0xFF, bytes);
    dev->data = st_conf_poisoned(c, bytes);
}

static double load_act(uint32_t type, const void *row, int64_t i) {
    switch (type) {
    case ST_TYPE_F32: return ((const float *)row)[i];
    case ST_TYPE_F16: return st_fp16_to_f32(((const st_fp16 *)row)[i]);
    case ST_TYPE_BF16: return st_bf16_to_f32(((const st_bf16 *)row)[i]);
    default: return NAN;
    }
}

double st_conf_compare(st_conf_ctx *c, const st_tensor *dev, const st_tensor *host) {
    return st_conf_compare_den(c, dev, host, NULL);
}

int st_conf_dot_scale_into(const st_tensor *w, const st_tensor *x, double *den) {
    int64_t K = w->ne[0], M = w->ne[1], n = x->ne[1];
    double *w2 = calloc((size_t)K, sizeof(double));
    float *row = malloc(sizeof(float) * (size_t)K);
    if (!w2 || !row) {
        free(w2);
        free(row);
        return -1;
    }
    for (int64_t m = 0; m < M; m++) { /* column sums of w^2 */
        st_dequantize_row(w->type, (const char *)w->data + m * w->nb[1], row, K);
        for (int64_t k = 0; k < K; k++) w2[k] += (double)row[k] * row[k];
    }
    for (int64_t i = 0; i < n; i++) {
        st_dequantize_row(x->type, (const char *)x->data + i * x->nb[1], row, K);
        double s = 0;
        for (int64_t k = 0; k < K; k++) s += w2[k] * row[k] * row[k];
        den[i] = s;
    }
    free(w2);
    free(row);
    return 0;
}

double *st_conf_dot_scale(st_conf_ctx *c, const st_tensor *w, const st_tensor *x) {
    double *den = st_conf_host(c, sizeof(double) * (size_t)x->ne[1]);
    if (!den || st_conf_dot_scale_into(w, x, den)) return NULL;
    return den;
}

double st_conf_compare_den(st_conf_ctx *c, const st_tensor *dev, const st_tensor *host, const double *den_rows) {
    size_t bytes = st_conf_nbytes(host);
    const char *got = st_conf_download(c, dev->data, bytes);
    if (!got) return INFINITY;
    const char *want = host->data;
    int64_t rows = host->ne[1] * host->ne[2] * host->ne[3];
    double worst = 0;
    for (int64_t r = 0; r < rows; r++) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < host->ne[0]; i++) {
            double g = load_act(host->type, got + r * host->nb[1], i);
            double w = load_act(host->type, want + r * host->nb[1], i);
            if (isnan(g) || isinf(g)) return INFINITY;
            num += (g - w) * (g - w);
            den += w * w;
        }
        if (den_rows) den = den_rows[r];
        double e = num / (den > 1e-30 ? den : 1e-30);
        if (den <= 1e-30 && num <= 1e-30) e = 0;
        if (e > worst) worst = e;
    }
    return worst;
}

int st_conf_compare_i32(st_conf_ctx *c, const int32_t *dev, const int32_t *host, size_t n, size_t *first) {
    const int32_t *got = st_conf_download(c, dev, n * sizeof(int32_t));
    if (!got) {
        *first = 0;
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (got[i] != host[i]) {
            *first = i;
            return 1;
        }
    return 0;
}

static void case_free(st_conf_ctx *c) {
    for (int i = 0; i < c->n_dbuf; i++) c->api->mem_free(c->dev, c->dbuf[i]);
    for (int i = 0; i < c->n_hbuf; i++) free(c->hbuf[i]);
    c->n_dbuf = c->n_hbuf = 0;
    c->alloc_failed = 0;
    c->fail_text[0] = 0;
}

void st_conf_case_end(st_conf_ctx *c, const char *name, double err, double thr) {
    int ok = !c->alloc_failed && err <= thr;
    if (ok) {
        c->res->passed++;
        if (c->opt->verbose) fprintf(c->out, "PASS %-48s err %.2e (limit %.0e)\n", name, err, thr);
    } else {
        c->res->failed++;
        if (c->alloc_failed)
            fprintf(c->out, "FAIL %-48s %s\n", name, c->fail_text);
        else
            fprintf(c->out, "FAIL %-48s err %.2e (limit %.0e)\n", name, err, thr);
    }
    case_free(c);
}

void st_conf_case_skip(st_conf_ctx *c, const char *name, const char *why) {
    c->res->skipped++;
    if (c->opt->verbose) fprintf(c->out, "SKIP %-48s %s\n", name, why);
    case_free(c);
}

int st_conf_claimed(st_conf_ctx *c, const void *slot, uint32_t op, uint32_t type, const char *name) {
    if (!slot) {
        st_conf_case_skip(c, name, "op absent");
        return 0;
    }
    if (!c->api->op_supported(c->index, op, type)) {
        st_conf_case_skip(c, name, "format not supported by the device");
        return 0;
    }
    return 1;
}

int st_conf_run_ok(st_conf_ctx *c, const char *op, st_status s) {
    if (s == ST_OK) s = c->api->stream_sync(c->stream);
    if (s != ST_OK) return st_conf_device_failed(c, op, s);
    return 1;
}

/* Normalized error of selected rows of two buffers holding rows of `type`, compared as floats. */
double st_conf_rows_error(uint32_t type, int64_t cols, size_t row_bytes, const char *got, const char *want,
                         const int32_t *rows, int64_t n_rows, const double *den_rows) {
    float a[4096], b[4096];
    double worst = 0;
    if (cols > 4096) return INFINITY;
    for (int64_t i = 0; i < n_rows; i++) {
        st_dequantize_row(type, got + (size_t)rows[i] * row_bytes, a, cols);
        st_dequantize_row(type, want + (size_t)rows[i] * row_bytes, b, cols);
        double num = 0, den = 0;
        for (int64_t j = 0; j < cols; j++) {
            if (!isfinite(a[j])) return INFINITY;
            num += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
            den += (double)b[j] * b[j];
        }
        if (den_rows) den = den_rows[i];
        double e = den > 1e-30 ? num / den : num;
        if (e > worst) worst = e;
    }
    return worst;
}
