/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing and validation of one GGUF file that is already mapped read-only.
 * Every read is bounds-checked against the mapping with overflow-safe arithmetic; every
 * error names the file, the item (key or tensor), the field and its byte offset. */
#include "gguf/gguf_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

#define ST_GGUF_MAX_ARRAY_DEPTH 8

typedef struct cursor {
    const uint8_t *p; /* the mapping */
    uint64_t size;    /* its size */
    uint64_t off;     /* next byte to read */
    const char *path;
    char ctx[320]; /* what is being read: "key 3 'general.name'" */
    char *err;
    size_t errlen;
} cursor;

static int fail(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(cursor *c, const char *fmt, ...)
{
    if (!c->err || !c->errlen)
        return -1;
    int n = snprintf(c->err, c->errlen, "%s: %s%s", c->path, c->ctx, c->ctx[0] ? ": " : "");
    if (n < 0 || (size_t)n >= c->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Printable, shortened copy of a name from the file for error contexts. */
static void quote_name(char *dst, size_t cap, const uint8_t *s, uint64_t len)
{
    size_t o = 0;
    for (uint64_t i = 0; i < len && o + 5 < cap; i++) {
        uint8_t ch = s[i];
        if (i >= 96) {
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        if (ch >= 0x20 && ch < 0x7f && ch != '\'') {
            dst[o++] = (char)ch;
        } else {
            if (o + 4 >= cap)
                break;
            snprintf(dst + o, cap - o, "\\x%02x", ch);
            o += 4;
        }
    }
    dst[o] = 0;
}

static int need(cursor *c, uint64_t n, const char *what)
{
    if (n > c->size - c->off)
        return fail(c, "%s at offset 0x%" PRIx64 " needs %" PRIu64
                       " bytes but the file ends at %" PRIu64 " (truncated file)",
                    what, c->off, n, c->size);
    return 0;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what)
{
    if (need(c, 4, what))
        return -1;
    *v = le32(c->p + c->off);
    c->off += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what)
{
    if (need(c, 8, what))
        return -1;
    *v = le64(c->p + c->off);
    c->off += 8;
    return 0;
}

/* A string: u64 length then bytes. Returns a pointer into the mapping. */
static int rd_str(cursor *c, const uint8_t **s, uint64_t *len, const char *what)
{
    uint64_t at = c->off;
    char w[96];
    snprintf(w, sizeof w, "%s length", what);
    if (rd_u64(c, len, w))
        return -1;
    if (*len > c->size - c->off) {
        c->off = at;
        return fail(c, "%s length %" PRIu64 " at offset 0x%" PRIx64
                       " runs past the end of the file (size %" PRIu64 ")",
                    what, *len, at, c->size);
    }
    *s = c->p + c->off;
    c->off += *len;
    return 0;
}

size_t st_gguf_type_size(uint32_t t)
{
    switch (t) {
    case ST_GGUF_TYPE_U8: case ST_GGUF_TYPE_I8: case ST_GGUF_TYPE_BOOL: return 1;
    case ST_GGUF_TYPE_U16: case ST_GGUF_TYPE_I16: return 2;
    case ST_GGUF_TYPE_U32: case ST_GGUF_TYPE_I32: case ST_GGUF_TYPE_F32: return 4;
    case ST_GGUF_TYPE_U64: case ST_GGUF_TYPE_I64: case ST_GGUF_TYPE_F64: return 8;
    default: return 0;
    }
}

/* Decodes one little-endian scalar of type t at p into v. */
static void decode_scalar(uint32_t t, const uint8_t *p, st_gguf_value *v)
{
    v->type = (st_gguf_type)t;
    switch (t) {
    case ST_GGUF_TYPE_U8: v->v.u64 = p[0]; break;
    case ST_GGUF_TYPE_I8: v->v.i64 = (int8_t)p[0]; break;
    case ST_GGUF_TYPE_BOOL: v->v.u64 = p[0] != 0; break;
    case ST_GGUF_TYPE_U16: v->v.u64 = (uint16_t)(p[0] | p[1] << 8); break;
    case ST_GGUF_TYPE_I16: v->v.i64 = (int16_t)(uint16_t)(p[0] | p[1] << 8); break;
    case ST_GGUF_TYPE_U32: v->v.u64 = le32(p); break;
    case ST_GGUF_TYPE_I32: v->v.i64 = (int32_t)le32(p); break;
    case ST_GGUF_TYPE_U64: v->v.u64 = le64(p); break;
    case ST_GGUF_TYPE_I64: v->v.i64 = (int64_t)le64(p); break;
    case ST_GGUF_TYPE_F32: {
        uint32_t b = le32(p);
        float f;
        memcpy(&f, &b, 4);
        v->v.f64 = f;
        break;
    }
    case ST_GGUF_TYPE_F64: {
        uint64_t b = le64(p);
        memcpy(&v->v.f64, &b, 8);
        break;
    }
    default: v->v.u64 = 0; break;
    }
}

void st_gguf_decode_scalar(uint32_t t, const void *p, st_gguf_value *v)
{
    decode_scalar(t, (const uint8_t *)p, v);
}

/* Skips over (validating) an array's elements; used for arrays nested in arrays. */
static int skip_array(cursor *c, int depth)
{
    uint32_t et;
    uint64_t n;
    uint64_t at = c->off;
    if (rd_u32(c, &et, "nested array element type") || rd_u64(c, &n, "nested array length"))
        return -1;
    if (et >= ST_GGUF_TYPE_COUNT)
        return fail(c, "nested array at offset 0x%" PRIx64 " has unknown element type %u", at, et);
    if (et == ST_GGUF_TYPE_ARRAY) {
        if (depth >= ST_GGUF_MAX_ARRAY_DEPTH)
            return fail(c, "arrays nested deeper than %d at offset 0x%" PRIx64,
                        ST_GGUF_MAX_ARRAY_DEPTH, at);
        if (n > (c->size - c->off) / 12)
            return fail(c, "nested array length %" PRIu64 " at offset 0x%" PRIx64
                           " exceeds what the rest of the file can hold", n, at);
        for (uint64_t i = 0; i < n; i++)
            if (skip_array(c, depth + 1))
                return -1;
        return 0;
    }
    if (et == ST_GGUF_TYPE_STRING) {
        if (n > (c->size - c->off) / 8)
            return fail(c, "nested string array length %" PRIu64 " at offset 0x%" PRIx64
                           " exceeds what the rest of the file can hold", n, at);
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *s = NULL;
            uint64_t l;
            if (rd_str(c, &s, &l, "nested array string"))
                return -1;
        }
        return 0;
    }
    size_t es = st_gguf_type_size(et);
    if (n > (c->size - c->off) / es)
        return fail(c, "nested array of %" PRIu64 " x %zu bytes at offset 0x%" PRIx64
                       " runs past the end of the file (size %" PRIu64 ")", n, es, at, c->size);
    c->off += n * es;
    return 0;
}

/* Reads the value of one KV (type already read) into kv. */
static int read_value(cursor *c, st_gguf_arena *arena, uint32_t type, st_gguf_kv *kv)
{
    uint64_t at = c->off;
    if (type >= ST_GGUF_TYPE_COUNT)
        return fail(c, "unknown value type %u (field at offset 0x%" PRIx64 ")", type, at - 4);
    kv->val.type = (st_gguf_type)type;
    if (type == ST_GGUF_TYPE_STRING) {
        const uint8_t *s = NULL;
        uint64_t len = 0;
        if (rd_str(c, &s, &len, "string value"))
            return -1;
        char *copy = st_gguf_arena_strdup(arena, s, (size_t)len);
        if (!copy)
            return fail(c, "out of memory copying a string of %" PRIu64 " bytes", len);
        kv->val.v.str.ptr = copy;
        kv->val.v.str.len = len;
        return 0;
    }
    if (type != ST_GGUF_TYPE_ARRAY) {
        size_t sz = st_gguf_type_size(type);
        if (need(c, sz, "value"))
            return -1;
        decode_scalar(type, c->p + c->off, &kv->val);
        c->off += sz;
        return 0;
    }
    uint32_t et;
    uint64_t n;
    if (rd_u32(c, &et, "array element type"))
        return -1;
    if (et >= ST_GGUF_TYPE_COUNT)
        return fail(c, "array element type %u at offset 0x%" PRIx64 " is not a known type", et,
                    at);
    uint64_t len_at = c->off;
    if (rd_u64(c, &n, "array length"))
        return -1;
    kv->val.v.arr.type = (st_gguf_type)et;
    kv->val.v.arr.len = n;
    uint64_t rest = c->size - c->off;
    if (et == ST_GGUF_TYPE_ARRAY) {
        if (n > rest / 12)
            return fail(c, "array length %" PRIu64 " at offset 0x%" PRIx64
                           " exceeds what the rest of the file (%" PRIu64 " bytes) can hold",
                        n, len_at, rest);
        for (uint64_t i = 0; i < n; i++)
            if (skip_array(c, 1))
                return -1;
        return 0;
    }
    if (et == ST_GGUF_TYPE_STRING) {
        if (n > rest / 8)
            return fail(c, "string array length %" PRIu64 " at offset 0x%" PRIx64
                           " exceeds what the rest of the file (%" PRIu64 " bytes) can hold",
                        n, len_at, rest);
        kv->strs = st_gguf_arena_alloc(arena, (size_t)n * sizeof(char *));
        kv->lens = st_gguf_arena_alloc(arena, (size_t)n * sizeof(uint64_t));
        if (n && (!kv->strs || !kv->lens))
            return fail(c, "out of memory for a string array of %" PRIu64 " items", n);
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *s = NULL;
            uint64_t len = 0;
            if (rd_str(c, &s, &len, "array string")) {
                char tmp[64];
                snprintf(tmp, sizeof tmp, " (item %" PRIu64 " of %" PRIu64 ")", i, n);
                size_t el = strlen(c->err ? c->err : "");
                if (c->err && el + strlen(tmp) < c->errlen)
                    strcat(c->err, tmp);
                return -1;
            }
            char *copy = st_gguf_arena_strdup(arena, s, (size_t)len);
            if (!copy)
                return fail(c, "out of memory copying array strings");
            kv->strs[i] = copy;
            kv->lens[i] = len;
        }
        return 0;
    }
    size_t es = st_gguf_type_size(et);
    if (n > rest / es)
        return fail(c, "array of %" PRIu64 " x %zu-byte items (length at offset 0x%" PRIx64
                       ") runs past the end of the file (size %" PRIu64 ")",
                    n, es, len_at, c->size);
    kv->raw = c->p + c->off;
    c->off += n * es;
    return 0;
}

static const char *kv_name(const void *ctx, int64_t i)
{
    return ((const st_gguf_kv *)ctx)[i].key;
}

static const char *tensor_name(const void *ctx, int64_t i)
{
    return ((const st_gguf_tensor *)ctx)[i].name;
}

typedef struct span {
    uint64_t off, end;
    int64_t idx;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

static int read_header(cursor *c, st_gguf_file *f, uint64_t *n_tensors, uint64_t *n_kv)
{
    if (c->size < 4 || memcmp(c->p, "GGUF", 4) != 0) {
        if (c->size < 4)
            return fail(c, "not a GGUF file: %" PRIu64 " bytes, too short for the magic", c->size);
        return fail(c, "not a GGUF file: magic at offset 0x0 is %02x %02x %02x %02x, expected "
                       "'GGUF'", c->p[0], c->p[1], c->p[2], c->p[3]);
    }
    c->off = 4;
    if (rd_u32(c, &f->version, "version"))
        return -1;
    if (f->version == 1)
        return fail(c, "GGUF version 1 (offset 0x4) is not supported: it predates 64-bit "
                       "counts; convert the model again with a current converter");
    if (f->version != 2 && f->version != 3) {
        if ((f->version & 0xffff) == 0 && f->version != 0)
            return fail(c, "version field at offset 0x4 reads 0x%08x: a big-endian GGUF file, "
                           "which is not supported", f->version);
        return fail(c, "GGUF version %u at offset 0x4 is not supported (2 and 3 are)",
                    f->version);
    }
    if (rd_u64(c, n_tensors, "tensor count") || rd_u64(c, n_kv, "metadata count"))
        return -1;
    /* Each KV takes at least 13 bytes (key length, type, 1-byte value); each tensor info at
     * least 32 (name length, n_dims, one dim, type, offset). */
    uint64_t rest = c->size - c->off;
    if (*n_kv > rest / 13)
        return fail(c, "metadata count %" PRIu64 " at offset 0x10 exceeds what the file "
                       "(%" PRIu64 " bytes) can hold", *n_kv, c->size);
    if (*n_tensors > rest / 32)
        return fail(c, "tensor count %" PRIu64 " at offset 0x8 exceeds what the file "
                       "(%" PRIu64 " bytes) can hold", *n_tensors, c->size);
    return 0;
}

static int read_kvs(cursor *c, st_gguf_file *f, st_gguf_arena *arena)
{
    for (int64_t i = 0; i < f->n_kv; i++) {
        st_gguf_kv *kv = &f->kv[i];
        kv->file_off = c->off;
        snprintf(c->ctx, sizeof c->ctx, "metadata pair %" PRId64 " (at offset 0x%" PRIx64 ")",
                 i, kv->file_off);
        const uint8_t *k = NULL;
        uint64_t klen = 0;
        if (rd_str(c, &k, &klen, "key"))
            return -1;
        char q[200];
        quote_name(q, sizeof q, k, klen);
        snprintf(c->ctx, sizeof c->ctx, "key '%s' (at offset 0x%" PRIx64 ")", q, kv->file_off);
        if (klen == 0)
            return fail(c, "empty key");
        if (memchr(k, 0, (size_t)klen))
            return fail(c, "key contains a NUL byte");
        kv->key = st_gguf_arena_strdup(arena, k, (size_t)klen);
        if (!kv->key)
            return fail(c, "out of memory");
        uint32_t type;
        if (rd_u32(c, &type, "value type") || read_value(c, arena, type, kv))
            return -1;
    }
    c->ctx[0] = 0;
    int64_t a, b;
    int r = st_gguf_index_build(&f->kv_index, f->n_kv, kv_name, f->kv, &a, &b);
    if (r == -1)
        return fail(c, "out of memory");
    if (r == -2)
        return fail(c, "duplicate key '%s' (pairs at offsets 0x%" PRIx64 " and 0x%" PRIx64 ")",
                    f->kv[a].key, f->kv[a].file_off, f->kv[b].file_off);
    f->alignment = ST_GGUF_DEFAULT_ALIGNMENT;
    int64_t ai = st_gguf_file_kv_find(f, "general.alignment");
    if (ai >= 0) {
        uint64_t al;
        if (st_gguf_value_to_u64(&f->kv[ai].val, &al) != ST_GGUF_OK || al == 0 ||
            al > (1u << 30) || (al & (al - 1)))
            return fail(c, "general.alignment (pair at offset 0x%" PRIx64 ") must be an integer "
                           "power of two up to 2^30", f->kv[ai].file_off);
        f->alignment = (uint32_t)al;
    }
    return 0;
}

static int read_tensor_infos(cursor *c, st_gguf_file *f, st_gguf_arena *arena,
                             uint64_t *info_offs)
{
    for (int64_t i = 0; i < f->n_tensors; i++) {
        st_gguf_tensor *t = &f->tensors[i];
        uint64_t at = c->off;
        info_offs[i] = at;
        snprintf(c->ctx, sizeof c->ctx, "tensor %" PRId64 " (info at offset 0x%" PRIx64 ")", i,
                 at);
        const uint8_t *nm = NULL;
        uint64_t nlen = 0;
        if (rd_str(c, &nm, &nlen, "name"))
            return -1;
        char q[200];
        quote_name(q, sizeof q, nm, nlen);
        snprintf(c->ctx, sizeof c->ctx, "tensor '%s' (info at offset 0x%" PRIx64 ")", q, at);
        if (nlen == 0)
            return fail(c, "empty tensor name");
        if (memchr(nm, 0, (size_t)nlen))
            return fail(c, "tensor name contains a NUL byte");
        t->name = st_gguf_arena_strdup(arena, nm, (size_t)nlen);
        if (!t->name)
            return fail(c, "out of memory");
        uint64_t dims_at = c->off;
        if (rd_u32(c, &t->n_dims, "n_dims"))
            return -1;
        if (t->n_dims < 1 || t->n_dims > ST_GGUF_MAX_DIMS)
            return fail(c, "n_dims %u at offset 0x%" PRIx64 " is outside 1..%d", t->n_dims,
                        dims_at, ST_GGUF_MAX_DIMS);
        for (int d = 0; d < ST_GGUF_MAX_DIMS; d++)
            t->ne[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            uint64_t ne_at = c->off, ne;
            if (rd_u64(c, &ne, "dimension"))
                return -1;
            if (ne == 0 || ne > (uint64_t)INT64_MAX)
                return fail(c, "dimension %u at offset 0x%" PRIx64 " is %s (%" PRIu64 ")", d,
                            ne_at, ne == 0 ? "zero" : "negative", ne);
            t->ne[d] = (int64_t)ne;
        }
        uint64_t type_at = c->off;
        if (rd_u32(c, &t->type, "type"))
            return -1;
        uint32_t block, bsize;
        if (st_gguf_type_block(t->type, &block, &bsize))
            return fail(c, "tensor type %u at offset 0x%" PRIx64 " is not a known type", t->type,
                        type_at);
        if ((uint64_t)t->ne[0] % block != 0)
            return fail(c, "row length ne[0] = %" PRId64 " is not a multiple of %s's block "
                           "size %u", t->ne[0], st_gguf_tensor_type_name(t->type), block);
        uint64_t nel = 1, nb;
        if (__builtin_mul_overflow((uint64_t)t->ne[0] / block, (uint64_t)bsize, &nb))
            return fail(c, "row of %" PRId64 " elements of type %s overflows 64 bits", t->ne[0],
                        st_gguf_tensor_type_name(t->type));
        for (int d = 0; d < ST_GGUF_MAX_DIMS; d++)
            if (__builtin_mul_overflow(nel, (uint64_t)t->ne[d], &nel) || nel > (uint64_t)INT64_MAX)
                return fail(c, "element count of shape [%" PRId64 ", %" PRId64 ", %" PRId64
                               ", %" PRId64 "] overflows 63 bits",
                            t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
        for (int d = 1; d < ST_GGUF_MAX_DIMS; d++)
            if (__builtin_mul_overflow(nb, (uint64_t)t->ne[d], &nb))
                return fail(c, "byte size of shape [%" PRId64 ", %" PRId64 ", %" PRId64
                               ", %" PRId64 "] overflows 64 bits",
                            t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
        t->nbytes = nb;
        uint64_t off_at = c->off;
        if (rd_u64(c, &t->offset, "data offset"))
            return -1;
        if (t->offset % f->alignment != 0)
            return fail(c, "data offset 0x%" PRIx64 " (field at 0x%" PRIx64 ") is not a "
                           "multiple of the alignment %u", t->offset, off_at, f->alignment);
    }
    c->ctx[0] = 0;
    return 0;
}

static int check_data(cursor *c, st_gguf_file *f, const uint64_t *info_offs)
{
    uint64_t pad = (f->alignment - c->off % f->alignment) % f->alignment;
    if (__builtin_add_overflow(c->off, pad, &f->data_offset))
        return fail(c, "data section offset overflows");
    if (f->n_tensors == 0)
        return 0;
    if (f->data_offset > c->size)
        return fail(c, "data section would start at 0x%" PRIx64 ", past the end of the file "
                       "(size %" PRIu64 ")", f->data_offset, c->size);
    uint64_t room = c->size - f->data_offset;
    span *sp = malloc((size_t)f->n_tensors * sizeof *sp);
    if (!sp)
        return fail(c, "out of memory");
    for (int64_t i = 0; i < f->n_tensors; i++) {
        st_gguf_tensor *t = &f->tensors[i];
        if (t->offset > room || t->nbytes > room - t->offset) {
            snprintf(c->ctx, sizeof c->ctx, "tensor '%s' (info at offset 0x%" PRIx64 ")",
                     t->name, info_offs[i]);
            free(sp);
            uint64_t abs;
            if (__builtin_add_overflow(f->data_offset, t->offset, &abs))
                return fail(c, "data offset 0x%" PRIx64 " (relative to the data section at 0x%"
                               PRIx64 ") overflows", t->offset, f->data_offset);
            return fail(c, "data offset 0x%" PRIx64 " + %" PRIu64 " bytes past end of file "
                           "(size %" PRIu64 ")", abs, t->nbytes, c->size);
        }
        sp[i].off = t->offset;
        sp[i].end = t->offset + t->nbytes;
        sp[i].idx = i;
        t->data = c->p + f->data_offset + t->offset;
        t->offset += f->data_offset;
    }
    qsort(sp, (size_t)f->n_tensors, sizeof *sp, span_cmp);
    for (int64_t i = 1; i < f->n_tensors; i++) {
        if (sp[i].off < sp[i - 1].end) {
            const st_gguf_tensor *a = &f->tensors[sp[i - 1].idx], *b = &f->tensors[sp[i].idx];
            c->ctx[0] = 0;
            fail(c, "tensor '%s' (data 0x%" PRIx64 "..0x%" PRIx64 ") overlaps tensor '%s' "
                    "(data 0x%" PRIx64 "..0x%" PRIx64 ")",
                 b->name, b->offset, b->offset + b->nbytes, a->name, a->offset,
                 a->offset + a->nbytes);
            free(sp);
            return -1;
        }
    }
    free(sp);
    return 0;
}

int st_gguf_file_parse(st_gguf_file *f, st_gguf_arena *arena, char *err, size_t errlen)
{
    cursor c = {.p = f->map.base, .size = f->map.size, .path = f->path, .err = err,
                .errlen = errlen};
    uint64_t n_tensors = 0, n_kv = 0;
    if (read_header(&c, f, &n_tensors, &n_kv))
        return -1;
    f->n_kv = (int64_t)n_kv;
    f->n_tensors = (int64_t)n_tensors;
    f->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *f->kv);
    f->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *f->tensors);
    if (!f->kv || !f->tensors)
        return fail(&c, "out of memory for %" PRIu64 " pairs and %" PRIu64 " tensors", n_kv,
                    n_tensors);
    if (read_kvs(&c, f, arena))
        return -1;
    uint64_t *info_offs = malloc((n_tensors ? (size_t)n_tensors : 1) * sizeof *info_offs);
    if (!info_offs)
        return fail(&c, "out of memory");
    int r = read_tensor_infos(&c, f, arena, info_offs);
    if (r == 0)
        r = check_data(&c, f, info_offs);
    if (r == 0) {
        int64_t a, b;
        st_gguf_index ix = {0};
        int d = st_gguf_index_build(&ix, f->n_tensors, tensor_name, f->tensors, &a, &b);
        if (d == -1)
            r = fail(&c, "out of memory");
        else if (d == -2)
            r = fail(&c, "duplicate tensor name '%s' (infos at offsets 0x%" PRIx64
                         " and 0x%" PRIx64 ")", f->tensors[a].name, info_offs[a], info_offs[b]);
        st_gguf_index_free(&ix);
    }
    free(info_offs);
    return r;
}

void st_gguf_file_free(st_gguf_file *f)
{
    if (!f)
        return;
    free(f->kv);
    free(f->tensors);
    st_gguf_index_free(&f->kv_index);
    st_mapfile_close(&f->map);
    free(f->path);
    memset(f, 0, sizeof *f);
    f->map.fd = -1;
}
