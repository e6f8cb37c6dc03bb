/* SPDX-License-Identifier: Apache-2.0 */
/* Internal helpers of the conformance harness: device buffers, random inputs, comparison. */
#ifndef STRATA_CONF_UTIL_H
#define STRATA_CONF_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conformance/conformance.h"

#define ST_CONF_MAX_BUFS 16

/* One case in flight: the device side and host side of every buffer it made. */
typedef struct st_conf_ctx {
    const st_backend_api *api;
    const st_backend_ops *ops; /* the device's op table */
    const st_backend_ops *ref; /* core/ref's op table (host pointers) */
    st_device *dev;
    st_stream *stream;
    uint32_t index;
    const st_conf_options *opt;
    st_conf_result *res;
    FILE *out;
    uint64_t rng;
    int quick;
    void *dbuf[ST_CONF_MAX_BUFS]; /* device buffers of the current case */
    int n_dbuf;
    void *hbuf[ST_CONF_MAX_BUFS * 2]; /* host buffers of the current case */
    int n_hbuf;
    int alloc_failed;               /* a device call failed inside the current case */
    char fail_text[512];
} st_conf_ctx;

/* Random float in [lo, hi). */
float st_conf_randf(st_conf_ctx *c, float lo, float hi);
/* Random int in [0, n). */
int st_conf_randi(st_conf_ctx *c, int n);

/* Host buffer of `bytes` owned by the case (freed by st_conf_case_end). NULL on OOM. */
void *st_conf_host(st_conf_ctx *c, size_t bytes);
/* Device copy of host data, owned by the case. NULL (and the case marked failed) on error. */
void *st_conf_upload(st_conf_ctx *c, const void *host, size_t bytes);
/* Device buffer filled with 0xFF bytes (NaN for floats, -1 for ints), owned by the case. */
void *st_conf_poisoned(st_conf_ctx *c, size_t bytes);
/* Copy device data back into a new case-owned host buffer; NULL on error. */
void *st_conf_download(st_conf_ctx *c, const void *dev, size_t bytes);

/* A contiguous tensor view of `type` with ne = {n0, n1, n2, 1}; data NULL. */
st_tensor st_conf_tensor(uint32_t type, int64_t n0, int64_t n1, int64_t n2);
/* Bytes of a contiguous tensor view. */
size_t st_conf_nbytes(const st_tensor *t);
/* Host tensor of random values in [-amp, amp) quantized to its type (weights or activations). */
void *st_conf_random_tensor(st_conf_ctx *c, st_tensor *t, float amp);
/* Device twin of a host tensor view (same shape, data uploaded). */
st_tensor st_conf_to_device(st_conf_ctx *c, const st_tensor *host);
/* Poisoned device tensor with the shape of `like` and a host tensor for the reference's output. */
void st_conf_output_pair(st_conf_ctx *c, const st_tensor *like, st_tensor *host, st_tensor *dev);

/* Largest per-row normalized squared error between device output (downloaded from `dev`) and
 * the reference `host`, for F32/F16/BF16 views; NaN in the device output gives +inf. */
double st_conf_compare(st_conf_ctx *c, const st_tensor *dev, const st_tensor *host);
/* Same, with each row's squared error divided by den[row] instead of the row's sum of squares
 * (for dot products: the sum of squared products, which does not vanish when outputs cancel). */
double st_conf_compare_den(st_conf_ctx *c, const st_tensor *dev, const st_tensor *host, const double *den);
/* den[i] = sum over outputs m and inputs k of (w[m][k] * x[i][k])^2 for a matmul w [M][K] by
 * x [n][K] (host tensors); malloc'ed [n], owned by the case. NULL on out-of-memory. */
double *st_conf_dot_scale(st_conf_ctx *c, const st_tensor *w, const st_tensor *x);
/* The same into den[n] owned by the caller; 0, or -1 on out-of-memory. */
int st_conf_dot_scale_into(const st_tensor *w, const st_tensor *x, double *den);
/* Largest normalized squared error over the listed rows of two host buffers of rows of `type`
 * (any dequantizable type, cols <= 4096): each row's error over its sum of squares, or over
 * den_rows[i] when given; a non-finite device value gives +inf. */
double st_conf_rows_error(uint32_t type, int64_t cols, size_t row_bytes, const char *got, const char *want,
                          const int32_t *rows, int64_t n_rows, const double *den_rows);
/* Nonzero when two int32 device/host arrays of n items differ; writes the first index. */
int st_conf_compare_i32(st_conf_ctx *c, const int32_t *dev, const int32_t *host, size_t n, size_t *first);

/* Nonzero when the device claims `op` for `type` (slot non-NULL, op_supported true); otherwise
 * the case named `name` is counted as not claimed. */
int st_conf_claimed(st_conf_ctx *c, const void *slot, uint32_t op, uint32_t type, const char *name);
/* Nonzero when an op's status and the stream's sync are OK; else the case records the failure. */
int st_conf_run_ok(st_conf_ctx *c, const char *op, st_status s);
/* Record a device call's failure text in the case. Returns 0 so callers can chain. */
int st_conf_device_failed(st_conf_ctx *c, const char *what, st_status s);
/* Finish a case: print its line, count it, free its buffers. `err` <= thr passes. */
void st_conf_case_end(st_conf_ctx *c, const char *name, double err, double thr);
/* Count a case the device does not claim (printed only when verbose). */
void st_conf_case_skip(st_conf_ctx *c, const char *name, const char *why);

#endif
