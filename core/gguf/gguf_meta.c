/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata access of an open GGUF model: pairs by index, typed getters with lossless
 * conversions, and array element access. */
#include "gguf/gguf_internal.h"

#include <string.h>

static const char *const type_names[ST_GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

const char *st_gguf_type_name(uint32_t type)
{
    return type < ST_GGUF_TYPE_COUNT ? type_names[type] : "?";
}

static int is_unsigned(st_gguf_type t)
{
    return t == ST_GGUF_TYPE_U8 || t == ST_GGUF_TYPE_U16 || t == ST_GGUF_TYPE_U32 ||
           t == ST_GGUF_TYPE_U64;
}

static int is_signed(st_gguf_type t)
{
    return t == ST_GGUF_TYPE_I8 || t == ST_GGUF_TYPE_I16 || t == ST_GGUF_TYPE_I32 ||
           t == ST_GGUF_TYPE_I64;
}

int st_gguf_value_to_i64(const st_gguf_value *v, int64_t *out)
{
    if (is_signed(v->type)) {
        *out = v->v.i64;
        return ST_GGUF_OK;
    }
    if (is_unsigned(v->type) && v->v.u64 <= (uint64_t)INT64_MAX) {
        *out = (int64_t)v->v.u64;
        return ST_GGUF_OK;
    }
    return ST_GGUF_WRONG_TYPE;
}

int st_gguf_value_to_u64(const st_gguf_value *v, uint64_t *out)
{
    if (is_unsigned(v->type)) {
        *out = v->v.u64;
        return ST_GGUF_OK;
    }
    if (is_signed(v->type) && v->v.i64 >= 0) {
        *out = (uint64_t)v->v.i64;
        return ST_GGUF_OK;
    }
    return ST_GGUF_WRONG_TYPE;
}

int st_gguf_value_to_f64(const st_gguf_value *v, double *out)
{
    if (v->type == ST_GGUF_TYPE_F32 || v->type == ST_GGUF_TYPE_F64) {
        *out = v->v.f64;
        return ST_GGUF_OK;
    }
    return ST_GGUF_WRONG_TYPE;
}

static const st_gguf_file *meta(const st_gguf *g)
{
    return &g->files[0];
}

static const char *kv_name(const void *ctx, int64_t i)
{
    return ((const st_gguf_kv *)ctx)[i].key;
}

int64_t st_gguf_file_kv_find(const st_gguf_file *f, const char *key)
{
    return st_gguf_index_find(&f->kv_index, key, kv_name, f->kv);
}

int64_t st_gguf_kv_count(const st_gguf *g)
{
    return meta(g)->n_kv;
}

const char *st_gguf_kv_key(const st_gguf *g, int64_t i)
{
    return i >= 0 && i < meta(g)->n_kv ? meta(g)->kv[i].key : NULL;
}

int64_t st_gguf_kv_find(const st_gguf *g, const char *key)
{
    return st_gguf_file_kv_find(meta(g), key);
}

int st_gguf_kv_get(const st_gguf *g, int64_t i, st_gguf_value *out)
{
    if (i < 0 || i >= meta(g)->n_kv)
        return ST_GGUF_ABSENT;
    *out = meta(g)->kv[i].val;
    return ST_GGUF_OK;
}

int st_gguf_arr_get(const st_gguf *g, int64_t i, uint64_t j, st_gguf_value *out)
{
    if (i < 0 || i >= meta(g)->n_kv)
        return ST_GGUF_ABSENT;
    const st_gguf_kv *kv = &meta(g)->kv[i];
    if (kv->val.type != ST_GGUF_TYPE_ARRAY || kv->val.v.arr.type == ST_GGUF_TYPE_ARRAY)
        return ST_GGUF_WRONG_TYPE;
    if (j >= kv->val.v.arr.len)
        return ST_GGUF_ABSENT;
    st_gguf_type et = kv->val.v.arr.type;
    if (et == ST_GGUF_TYPE_STRING) {
        out->type = ST_GGUF_TYPE_STRING;
        out->v.str.ptr = kv->strs[j];
        out->v.str.len = kv->lens[j];
        return ST_GGUF_OK;
    }
    st_gguf_decode_scalar(et, kv->raw + j * st_gguf_type_size(et), out);
    return ST_GGUF_OK;
}

const void *st_gguf_arr_data(const st_gguf *g, int64_t i)
{
    if (i < 0 || i >= meta(g)->n_kv)
        return NULL;
    return meta(g)->kv[i].raw;
}

/* Value of `key`, or NULL. */
static const st_gguf_value *find(const st_gguf *g, const char *key)
{
    int64_t i = st_gguf_kv_find(g, key);
    return i < 0 ? NULL : &meta(g)->kv[i].val;
}

int st_gguf_get_i64(const st_gguf *g, const char *key, int64_t *out)
{
    const st_gguf_value *v = find(g, key);
    return v ? st_gguf_value_to_i64(v, out) : ST_GGUF_ABSENT;
}

int st_gguf_get_u64(const st_gguf *g, const char *key, uint64_t *out)
{
    const st_gguf_value *v = find(g, key);
    return v ? st_gguf_value_to_u64(v, out) : ST_GGUF_ABSENT;
}

int st_gguf_get_u32(const st_gguf *g, const char *key, uint32_t *out)
{
    uint64_t u;
    int r = st_gguf_get_u64(g, key, &u);
    if (r != ST_GGUF_OK)
        return r;
    if (u > UINT32_MAX)
        return ST_GGUF_WRONG_TYPE;
    *out = (uint32_t)u;
    return ST_GGUF_OK;
}

int st_gguf_get_i32(const st_gguf *g, const char *key, int32_t *out)
{
    int64_t s;
    int r = st_gguf_get_i64(g, key, &s);
    if (r != ST_GGUF_OK)
        return r;
    if (s < INT32_MIN || s > INT32_MAX)
        return ST_GGUF_WRONG_TYPE;
    *out = (int32_t)s;
    return ST_GGUF_OK;
}

int st_gguf_get_f64(const st_gguf *g, const char *key, double *out)
{
    const st_gguf_value *v = find(g, key);
    return v ? st_gguf_value_to_f64(v, out) : ST_GGUF_ABSENT;
}

int st_gguf_get_f32(const st_gguf *g, const char *key, float *out)
{
    double d;
    int r = st_gguf_get_f64(g, key, &d);
    if (r == ST_GGUF_OK)
        *out = (float)d;
    return r;
}

int st_gguf_get_bool(const st_gguf *g, const char *key, bool *out)
{
    const st_gguf_value *v = find(g, key);
    if (!v)
        return ST_GGUF_ABSENT;
    if (v->type != ST_GGUF_TYPE_BOOL)
        return ST_GGUF_WRONG_TYPE;
    *out = v->v.u64 != 0;
    return ST_GGUF_OK;
}

int st_gguf_get_str(const st_gguf *g, const char *key, const char **out, size_t *len)
{
    const st_gguf_value *v = find(g, key);
    if (!v)
        return ST_GGUF_ABSENT;
    if (v->type != ST_GGUF_TYPE_STRING)
        return ST_GGUF_WRONG_TYPE;
    *out = v->v.str.ptr;
    if (len)
        *len = (size_t)v->v.str.len;
    return ST_GGUF_OK;
}

#define ST_GGUF_GET_OR(name, T)                                                      \
    int st_gguf_get_##name##_or(const st_gguf *g, const char *key, T def, T *out)    \
    {                                                                                \
        int r = st_gguf_get_##name(g, key, out);                                     \
        if (r != ST_GGUF_OK)                                                         \
            *out = def;                                                              \
        return r == ST_GGUF_ABSENT ? ST_GGUF_OK : r;                                 \
    }
ST_GGUF_GET_OR(u32, uint32_t)
ST_GGUF_GET_OR(i32, int32_t)
ST_GGUF_GET_OR(u64, uint64_t)
ST_GGUF_GET_OR(f32, float)
ST_GGUF_GET_OR(bool, bool)
#undef ST_GGUF_GET_OR

int st_gguf_get_arr(const st_gguf *g, const char *key, st_gguf_type *elem_type, uint64_t *len)
{
    const st_gguf_value *v = find(g, key);
    if (!v)
        return ST_GGUF_ABSENT;
    if (v->type != ST_GGUF_TYPE_ARRAY)
        return ST_GGUF_WRONG_TYPE;
    if (elem_type)
        *elem_type = v->v.arr.type;
    if (len)
        *len = v->v.arr.len;
    return ST_GGUF_OK;
}

const char *st_gguf_arr_str(const st_gguf *g, const char *key, uint64_t j, size_t *len)
{
    st_gguf_value v;
    if (st_gguf_arr_get(g, st_gguf_kv_find(g, key), j, &v) != ST_GGUF_OK ||
        v.type != ST_GGUF_TYPE_STRING)
        return NULL;
    if (len)
        *len = (size_t)v.v.str.len;
    return v.v.str.ptr;
}

int st_gguf_arr_i64(const st_gguf *g, const char *key, uint64_t j, int64_t *out)
{
    st_gguf_value v;
    int r = st_gguf_arr_get(g, st_gguf_kv_find(g, key), j, &v);
    return r != ST_GGUF_OK ? r : st_gguf_value_to_i64(&v, out);
}

int st_gguf_arr_f32(const st_gguf *g, const char *key, uint64_t j, float *out)
{
    st_gguf_value v;
    double d;
    int r = st_gguf_arr_get(g, st_gguf_kv_find(g, key), j, &v);
    if (r == ST_GGUF_OK)
        r = st_gguf_value_to_f64(&v, &d);
    if (r == ST_GGUF_OK)
        *out = (float)d;
    return r;
}

int st_gguf_arr_copy_i32(const st_gguf *g, const char *key, int32_t *dst, uint64_t n)
{
    int64_t i = st_gguf_kv_find(g, key);
    st_gguf_type et;
    uint64_t len;
    int r = st_gguf_get_arr(g, key, &et, &len);
    if (r != ST_GGUF_OK)
        return r;
    if (len != n)
        return ST_GGUF_WRONG_TYPE;
    for (uint64_t j = 0; j < n; j++) {
        st_gguf_value v;
        int64_t s;
        if ((r = st_gguf_arr_get(g, i, j, &v)) != ST_GGUF_OK ||
            (r = st_gguf_value_to_i64(&v, &s)) != ST_GGUF_OK)
            return ST_GGUF_WRONG_TYPE;
        if (s < INT32_MIN || s > INT32_MAX)
            return ST_GGUF_WRONG_TYPE;
        dst[j] = (int32_t)s;
    }
    return ST_GGUF_OK;
}

int st_gguf_arr_copy_f32(const st_gguf *g, const char *key, float *dst, uint64_t n)
{
    int64_t i = st_gguf_kv_find(g, key);
    st_gguf_type et;
    uint64_t len;
    int r = st_gguf_get_arr(g, key, &et, &len);
    if (r != ST_GGUF_OK)
        return r;
    if (len != n)
        return ST_GGUF_WRONG_TYPE;
    for (uint64_t j = 0; j < n; j++) {
        st_gguf_value v;
        double d;
        if (st_gguf_arr_get(g, i, j, &v) != ST_GGUF_OK || st_gguf_value_to_f64(&v, &d) != ST_GGUF_OK)
            return ST_GGUF_WRONG_TYPE;
        dst[j] = (float)d;
    }
    return ST_GGUF_OK;
}
