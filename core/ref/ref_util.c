/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the reference ops: per-thread error text, tensor validation, element and
 * row access for F32/F16/BF16 with strides, dequantized row loads, and tensor views. */
#include "ref/ref_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

static _Thread_local char g_err[512];

const char *st_ref_last_error(void) { return g_err; }

st_status st_ref_fail(st_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    return status;
}

int st_ref_is_act(uint32_t type) { return type == ST_TYPE_F32 || type == ST_TYPE_F16 || type == ST_TYPE_BF16; }

int64_t st_ref_rows(const st_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

uint8_t *st_ref_row_ptr(const st_tensor *t, int64_t r) {
    int64_t i1 = r % t->ne[1];
    int64_t i2 = (r / t->ne[1]) % t->ne[2];
    int64_t i3 = r / (t->ne[1] * t->ne[2]);
    return (uint8_t *)t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

uint8_t *st_ref_elem_ptr(const st_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (uint8_t *)t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

st_status st_ref_check_args(const char *op, const void *args, uint32_t size, size_t need) {
    if (args == NULL) return st_ref_fail(ST_INVALID, "%s: args is NULL", op);
    if (size < need) return st_ref_fail(ST_INVALID, "%s: args size %u < %zu", op, size, need);
    return ST_OK;
}

st_status st_ref_check(const char *op, const char *name, const st_tensor *t, int act) {
    if (t->data == NULL) return st_ref_fail(ST_INVALID, "%s: %s.data is NULL", op, name);
    const st_type_info *ti = st_type_get(t->type);
    if (ti == NULL) return st_ref_fail(ST_UNSUPPORTED, "%s: %s has unknown type %u", op, name, t->type);
    if (act && !st_ref_is_act(t->type))
        return st_ref_fail(ST_UNSUPPORTED, "%s: %s type %s is not F32/F16/BF16", op, name, ti->name);
    if (t->ne[0] < 1 || t->ne[1] < 0 || t->ne[2] < 0 || t->ne[3] < 0)
        return st_ref_fail(ST_INVALID, "%s: %s has shape [%lld][%lld][%lld][%lld]", op, name, (long long)t->ne[3],
                           (long long)t->ne[2], (long long)t->ne[1], (long long)t->ne[0]);
    if (t->ne[0] % ti->block_size != 0)
        return st_ref_fail(ST_INVALID, "%s: %s row of %lld is not a multiple of %s's block of %d", op, name,
                           (long long)t->ne[0], ti->name, ti->block_size);
    if (ti->block_size == 1 && t->nb[0] == 0 && t->ne[0] > 1)
        return st_ref_fail(ST_INVALID, "%s: %s has nb[0] = 0", op, name);
    return ST_OK;
}

st_status st_ref_check_same(const char *op, const char *na, const st_tensor *a, const char *nb,
                            const st_tensor *b) {
    if (a->ne[0] != b->ne[0] || st_ref_rows(a) != st_ref_rows(b))
        return st_ref_fail(ST_INVALID, "%s: %s is [%lld][%lld] but %s is [%lld][%lld]", op, na,
                           (long long)st_ref_rows(a), (long long)a->ne[0], nb, (long long)st_ref_rows(b),
                           (long long)b->ne[0]);
    return ST_OK;
}

double st_ref_load(uint32_t type, const uint8_t *p) {
    switch (type) {
    case ST_TYPE_F32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case ST_TYPE_F16: {
        st_fp16 h;
        memcpy(&h, p, 2);
        return st_fp16_to_f32(h);
    }
    case ST_TYPE_BF16: {
        st_bf16 h;
        memcpy(&h, p, 2);
        return st_bf16_to_f32(h);
    }
    default: return 0.0; /* callers validate types first */
    }
}

void st_ref_store(uint32_t type, uint8_t *p, double v) {
    float f = (float)v;
    switch (type) {
    case ST_TYPE_F32: memcpy(p, &f, 4); break;
    case ST_TYPE_F16: {
        st_fp16 h = st_f32_to_fp16(f);
        memcpy(p, &h, 2);
        break;
    }
    case ST_TYPE_BF16: {
        st_bf16 h = st_f32_to_bf16(f);
        memcpy(p, &h, 2);
        break;
    }
    default: break;
    }
}

void st_ref_load_row(const st_tensor *t, const uint8_t *row, float *dst, int64_t n) {
    if (st_ref_is_act(t->type)) {
        for (int64_t i = 0; i < n; i++) dst[i] = (float)st_ref_load(t->type, row + i * t->nb[0]);
    } else {
        st_dequantize_row(t->type, row, dst, n);
    }
}

void st_ref_load_row_d(const st_tensor *t, const uint8_t *row, double *dst, int64_t n) {
    if (st_ref_is_act(t->type)) {
        for (int64_t i = 0; i < n; i++) dst[i] = st_ref_load(t->type, row + i * t->nb[0]);
    } else {
        /* dequantize in chunks of one block (at most 256) through a float buffer */
        const st_type_info *ti = st_type_get(t->type);
        float buf[256];
        int64_t chunk = ti->block_size > 1 ? ti->block_size : 256;
        for (int64_t i = 0; i < n; i += chunk) {
            int64_t m = n - i < chunk ? n - i : chunk;
            st_dequantize_row(t->type, row + (size_t)(i / ti->block_size) * (size_t)ti->type_size, buf, m);
            for (int64_t j = 0; j < m; j++) dst[i + j] = buf[j];
        }
    }
}

void st_ref_store_row(const st_tensor *t, uint8_t *row, const double *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) st_ref_store(t->type, row + i * t->nb[0], src[i]);
}

void *st_ref_alloc(const char *op, size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p == NULL) st_ref_fail(ST_OOM, "%s: out of host memory for %zu x %zu bytes of scratch", op, count, size);
    return p;
}

st_tensor st_ref_tensor_4d(void *data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    st_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.type = type;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = ne2;
    t.ne[3] = ne3;
    const st_type_info *ti = st_type_get(type);
    size_t rs = st_row_size(type, ne0);
    if (ti != NULL && rs > 0) {
        t.nb[0] = ti->type_size;
        t.nb[1] = (int64_t)rs;
        t.nb[2] = t.nb[1] * ne1;
        t.nb[3] = t.nb[2] * ne2;
    }
    return t;
}

st_tensor st_ref_tensor_3d(void *data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2) {
    return st_ref_tensor_4d(data, type, ne0, ne1, ne2, 1);
}

st_tensor st_ref_tensor_2d(void *data, uint32_t type, int64_t cols, int64_t rows) {
    return st_ref_tensor_4d(data, type, cols, rows, 1, 1);
}
