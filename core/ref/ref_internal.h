/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the reference ops: error text, tensor checks, element and row access.
 * Not part of the public API. */
#ifndef STRATA_REF_INTERNAL_H
#define STRATA_REF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ref/ref.h"

/* Record a formatted error for st_ref_last_error() and return `status`. */
st_status st_ref_fail(st_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* F32, F16 or BF16. */
int st_ref_is_act(uint32_t type);
/* Rows of a [.. ][K] tensor: ne[1]*ne[2]*ne[3]. */
int64_t st_ref_rows(const st_tensor *t);
/* Address of flattened row r (over dims 1..3). */
uint8_t *st_ref_row_ptr(const st_tensor *t, int64_t r);
/* Address of element (i0, i1, i2, i3) of an activation tensor. */
uint8_t *st_ref_elem_ptr(const st_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3);

/* Validate a tensor the op reads or writes: data set, known type, ne >= 0 (ne[0] >= 1),
 * activation type when `act`, ne[0] a multiple of the block size. `op`/`name` name it in the
 * error text. */
st_status st_ref_check(const char *op, const char *name, const st_tensor *t, int act);
/* Same number of columns (ne[0]) and rows. */
st_status st_ref_check_same(const char *op, const char *na, const st_tensor *a, const char *nb,
                            const st_tensor *b);
/* Args struct present and at least as large as this header's version of it. */
st_status st_ref_check_args(const char *op, const void *args, uint32_t size, size_t need);

/* Load/store one element of an activation type at p. */
double st_ref_load(uint32_t type, const uint8_t *p);
void st_ref_store(uint32_t type, uint8_t *p, double v);
/* Load n elements of a row of t (any dequantizable type; activation rows use nb[0]). */
void st_ref_load_row(const st_tensor *t, const uint8_t *row, float *dst, int64_t n);
void st_ref_load_row_d(const st_tensor *t, const uint8_t *row, double *dst, int64_t n);
/* Store n doubles into an activation row of t (nb[0] stride). */
void st_ref_store_row(const st_tensor *t, uint8_t *row, const double *src, int64_t n);

/* calloc that reports ST_OOM through st_ref_fail when it fails (returns NULL then). */
void *st_ref_alloc(const char *op, size_t count, size_t size);

#endif
