/* SPDX-License-Identifier: Apache-2.0 */
/* Streaming GGUF writer: metadata and tensor descriptors are collected in memory, the header
 * (with every tensor's offset, known from type + shape) is written first, then tensor data
 * is appended in declaration order with alignment padding. Memory use is independent of the
 * size of the tensor data. */
#include "gguf/gguf_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


typedef struct wkv {
    char *key;
    uint8_t *bytes; /* value type (u32) + value, encoded as in the file */
    size_t nbytes;
} wkv;

typedef struct wtensor {
    char *name;
    uint32_t type, n_dims;
    int64_t ne[ST_GGUF_MAX_DIMS];
    uint64_t nbytes;
    uint64_t offset; /* relative to the data section */
} wtensor;

/* Growable byte buffer used to encode values. */
typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} wbuf;

struct st_gguf_writer {
    uint32_t version, alignment;
    wkv *kv;
    int64_t n_kv, cap_kv;
    wtensor *t;
    int64_t n_t, cap_t;
    int64_t *names; /* open-addressing set of tensor indices + 1 */
    uint64_t names_cap;
    FILE *f;
    char *path;
    int64_t cur;       /* tensor being written */
    uint64_t cur_done; /* bytes of it written */
    int began, finished, failed;
    int regular; /* the output is a regular file we created: removed if not finished */
    char err[512];
};

static int werr(st_gguf_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int werr(st_gguf_writer *w, const char *fmt, ...)
{
    if (!w->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, sizeof w->err, fmt, ap);
        va_end(ap);
        w->failed = 1;
    }
    return -1;
}

static void put(wbuf *b, const void *src, size_t n)
{
    if (b->oom)
        return;
    if (b->cap - b->n < n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = 1;
                return;
            }
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_le(wbuf *b, uint64_t v, size_t n)
{
    uint8_t x[8];
    for (size_t i = 0; i < n; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, n);
}

static void put_str(wbuf *b, const char *s, size_t len)
{
    put_le(b, len, 8);
    put(b, s, len);
}

st_gguf_writer *st_gguf_writer_new(void)
{
    st_gguf_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->version = 3;
    w->alignment = ST_GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void st_gguf_writer_free(st_gguf_writer *w)
{
    if (!w)
        return;
    if (w->f) {
        fclose(w->f);
        if (!w->finished && w->path && w->regular)
            remove(w->path);
    }
    for (int64_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].bytes);
    }
    for (int64_t i = 0; i < w->n_t; i++)
        free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w->names);
    free(w->path);
    free(w);
}

const char *st_gguf_writer_error(const st_gguf_writer *w)
{
    return w->err;
}

static int check_open(st_gguf_writer *w, const char *what)
{
    if (w->failed)
        return -1;
    if (w->began)
        return werr(w, "%s after st_gguf_writer_begin: the header is already written", what);
    return 0;
}

int st_gguf_writer_set_version(st_gguf_writer *w, uint32_t version)
{
    if (check_open(w, "set_version"))
        return -1;
    if (version != 2 && version != 3)
        return werr(w, "GGUF version %u cannot be written (2 or 3)", version);
    w->version = version;
    return 0;
}

/* Stores an encoded value under key (replacing an existing one). Takes b's buffer. */
static int set_kv(st_gguf_writer *w, const char *key, wbuf *b)
{
    if (check_open(w, "setting a key") || !key) {
        free(b->p);
        return w->failed ? -1 : werr(w, "NULL key");
    }
    if (b->oom) {
        free(b->p);
        return werr(w, "out of memory encoding the value of '%s'", key);
    }
    if (!key[0]) {
        free(b->p);
        return werr(w, "empty key");
    }
    for (int64_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) == 0) {
            free(w->kv[i].bytes);
            w->kv[i].bytes = b->p;
            w->kv[i].nbytes = b->n;
            return 0;
        }
    }
    if (w->n_kv == w->cap_kv) {
        int64_t cap = w->cap_kv ? w->cap_kv * 2 : 32;
        wkv *kv = realloc(w->kv, (size_t)cap * sizeof *kv);
        if (!kv) {
            free(b->p);
            return werr(w, "out of memory adding key '%s'", key);
        }
        w->kv = kv;
        w->cap_kv = cap;
    }
    char *k = malloc(strlen(key) + 1);
    if (!k) {
        free(b->p);
        return werr(w, "out of memory adding key '%s'", key);
    }
    strcpy(k, key);
    w->kv[w->n_kv].key = k;
    w->kv[w->n_kv].bytes = b->p;
    w->kv[w->n_kv].nbytes = b->n;
    w->n_kv++;
    return 0;
}

static size_t scalar_size(st_gguf_type t);

static int set_scalar(st_gguf_writer *w, const char *key, st_gguf_type t, uint64_t bits)
{
    wbuf b = {0};
    put_le(&b, t, 4);
    put_le(&b, bits, scalar_size(t));
    return set_kv(w, key, &b);
}

int st_gguf_writer_set_u8(st_gguf_writer *w, const char *key, uint8_t v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_U8, v);
}
int st_gguf_writer_set_i8(st_gguf_writer *w, const char *key, int8_t v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_I8, (uint8_t)v);
}
int st_gguf_writer_set_u16(st_gguf_writer *w, const char *key, uint16_t v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_U16, v);
}
int st_gguf_writer_set_i16(st_gguf_writer *w, const char *key, int16_t v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_I16, (uint16_t)v);
}
int st_gguf_writer_set_u32(st_gguf_writer *w, const char *key, uint32_t v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_U32, v);
}
int st_gguf_writer_set_i32(st_gguf_writer *w, const char *key, int32_t v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_I32, (uint32_t)v);
}
int st_gguf_writer_set_u64(st_gguf_writer *w, const char *key, uint64_t v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_U64, v);
}
int st_gguf_writer_set_i64(st_gguf_writer *w, const char *key, int64_t v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_I64, (uint64_t)v);
}
int st_gguf_writer_set_f32(st_gguf_writer *w, const char *key, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return set_scalar(w, key, ST_GGUF_TYPE_F32, bits);
}
int st_gguf_writer_set_f64(st_gguf_writer *w, const char *key, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    return set_scalar(w, key, ST_GGUF_TYPE_F64, bits);
}
int st_gguf_writer_set_bool(st_gguf_writer *w, const char *key, bool v)
{
    return set_scalar(w, key, ST_GGUF_TYPE_BOOL, v ? 1 : 0);
}

int st_gguf_writer_set_str(st_gguf_writer *w, const char *key, const char *v)
{
    if (!v)
        return check_open(w, "set_str") ? -1 : werr(w, "NULL string value for '%s'", key);
    wbuf b = {0};
    put_le(&b, ST_GGUF_TYPE_STRING, 4);
    put_str(&b, v, strlen(v));
    return set_kv(w, key, &b);
}

static size_t scalar_size(st_gguf_type t)
{
    switch (t) {
    case ST_GGUF_TYPE_U8: case ST_GGUF_TYPE_I8: case ST_GGUF_TYPE_BOOL: return 1;
    case ST_GGUF_TYPE_U16: case ST_GGUF_TYPE_I16: return 2;
    case ST_GGUF_TYPE_U32: case ST_GGUF_TYPE_I32: case ST_GGUF_TYPE_F32: return 4;
    case ST_GGUF_TYPE_U64: case ST_GGUF_TYPE_I64: case ST_GGUF_TYPE_F64: return 8;
    default: return 0;
    }
}

int st_gguf_writer_set_arr(st_gguf_writer *w, const char *key, st_gguf_type elem_type,
                           const void *data, uint64_t n)
{
    if (check_open(w, "set_arr"))
        return -1;
    size_t es = scalar_size(elem_type);
    if (!es)
        return werr(w, "array '%s': element type %s is not a number or bool (use "
                       "st_gguf_writer_set_arr_str for strings)", key ? key : "(null)",
                    st_gguf_type_name(elem_type));
    if (n && !data)
        return werr(w, "array '%s': NULL data", key ? key : "(null)");
    if (n > SIZE_MAX / es / 2)
        return werr(w, "array '%s': %" PRIu64 " elements is too many", key ? key : "(null)", n);
    wbuf b = {0};
    put_le(&b, ST_GGUF_TYPE_ARRAY, 4);
    put_le(&b, elem_type, 4);
    put_le(&b, n, 8);
    const uint8_t *p = data;
    for (uint64_t i = 0; i < n && !b.oom; i++) {
        uint64_t v = 0;
        switch (es) {
        case 1: v = p[i]; break;
        case 2: { uint16_t x; memcpy(&x, p + 2 * i, 2); v = x; break; }
        case 4: { uint32_t x; memcpy(&x, p + 4 * i, 4); v = x; break; }
        default: memcpy(&v, p + 8 * i, 8); break;
        }
        if (elem_type == ST_GGUF_TYPE_BOOL)
            v = v != 0;
        put_le(&b, v, es);
    }
    return set_kv(w, key, &b);
}

int st_gguf_writer_set_arr_str(st_gguf_writer *w, const char *key, const char *const *strs,
                               uint64_t n)
{
    if (check_open(w, "set_arr_str"))
        return -1;
    if (n && !strs)
        return werr(w, "string array '%s': NULL data", key ? key : "(null)");
    wbuf b = {0};
    put_le(&b, ST_GGUF_TYPE_ARRAY, 4);
    put_le(&b, ST_GGUF_TYPE_STRING, 4);
    put_le(&b, n, 8);
    for (uint64_t i = 0; i < n && !b.oom; i++) {
        if (!strs[i]) {
            free(b.p);
            return werr(w, "string array '%s': item %" PRIu64 " is NULL", key ? key : "(null)", i);
        }
        put_str(&b, strs[i], strlen(strs[i]));
    }
    return set_kv(w, key, &b);
}

int st_gguf_writer_set_alignment(st_gguf_writer *w, uint32_t alignment)
{
    if (check_open(w, "set_alignment"))
        return -1;
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > (1u << 30))
        return werr(w, "alignment %u is not a power of two up to 2^30", alignment);
    w->alignment = alignment;
    int have = 0;
    for (int64_t i = 0; i < w->n_kv; i++)
        have |= strcmp(w->kv[i].key, "general.alignment") == 0;
    if (alignment != ST_GGUF_DEFAULT_ALIGNMENT || have)
        return st_gguf_writer_set_u32(w, "general.alignment", alignment);
    return 0;
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

/* Inserts tensor i into the name set; -1 when out of memory, -2 on a duplicate. */
static int names_insert(st_gguf_writer *w, int64_t i)
{
    if ((uint64_t)(w->n_t + 1) * 2 > w->names_cap) {
        uint64_t cap = w->names_cap ? w->names_cap * 2 : 64;
        int64_t *s = calloc((size_t)cap, sizeof *s);
        if (!s)
            return -1;
        for (uint64_t k = 0; k < w->names_cap; k++) {
            if (!w->names[k])
                continue;
            uint64_t h = hash_name(w->t[w->names[k] - 1].name) & (cap - 1);
            while (s[h])
                h = (h + 1) & (cap - 1);
            s[h] = w->names[k];
        }
        free(w->names);
        w->names = s;
        w->names_cap = cap;
    }
    uint64_t h = hash_name(w->t[i].name) & (w->names_cap - 1);
    while (w->names[h]) {
        if (strcmp(w->t[w->names[h] - 1].name, w->t[i].name) == 0)
            return -2;
        h = (h + 1) & (w->names_cap - 1);
    }
    w->names[h] = i + 1;
    return 0;
}

int st_gguf_writer_add_tensor(st_gguf_writer *w, const char *name, uint32_t type,
                              uint32_t n_dims, const int64_t *ne)
{
    if (check_open(w, "add_tensor"))
        return -1;
    if (!name || !name[0])
        return werr(w, "tensor with an empty name");
    if (n_dims < 1 || n_dims > ST_GGUF_MAX_DIMS || !ne)
        return werr(w, "tensor '%s': n_dims %u is outside 1..%d", name, n_dims, ST_GGUF_MAX_DIMS);
    uint32_t block, bsize;
    if (st_gguf_type_block(type, &block, &bsize))
        return werr(w, "tensor '%s': unknown type %u", name, type);
    wtensor t = {.type = type, .n_dims = n_dims};
    for (int d = 0; d < ST_GGUF_MAX_DIMS; d++)
        t.ne[d] = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] <= 0)
            return werr(w, "tensor '%s': dimension %u is %" PRId64 "", name, d, ne[d]);
        t.ne[d] = ne[d];
    }
    if ((uint64_t)t.ne[0] % block)
        return werr(w, "tensor '%s': ne[0] = %" PRId64 " is not a multiple of %s's block size %u",
                    name, t.ne[0], st_gguf_tensor_type_name(type), block);
    uint64_t nb, nel = 1;
    int ovf = __builtin_mul_overflow((uint64_t)t.ne[0] / block, (uint64_t)bsize, &nb);
    for (int d = 0; d < ST_GGUF_MAX_DIMS; d++) {
        ovf |= __builtin_mul_overflow(nel, (uint64_t)t.ne[d], &nel) || nel > (uint64_t)INT64_MAX;
        if (d)
            ovf |= __builtin_mul_overflow(nb, (uint64_t)t.ne[d], &nb);
    }
    if (ovf || nb > UINT64_MAX / 2)
        return werr(w, "tensor '%s': shape [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                       "] is too large for type %s", name, t.ne[0], t.ne[1], t.ne[2], t.ne[3],
                    st_gguf_tensor_type_name(type));
    t.nbytes = nb;
    if (w->n_t == w->cap_t) {
        int64_t cap = w->cap_t ? w->cap_t * 2 : 64;
        wtensor *p = realloc(w->t, (size_t)cap * sizeof *p);
        if (!p)
            return werr(w, "out of memory adding tensor '%s'", name);
        w->t = p;
        w->cap_t = cap;
    }
    t.name = malloc(strlen(name) + 1);
    if (!t.name)
        return werr(w, "out of memory adding tensor '%s'", name);
    strcpy(t.name, name);
    w->t[w->n_t] = t;
    int r = names_insert(w, w->n_t);
    if (r) {
        free(t.name);
        return r == -2 ? werr(w, "duplicate tensor name '%s'", name)
                       : werr(w, "out of memory adding tensor '%s'", name);
    }
    w->n_t++;
    return 0;
}

uint64_t st_gguf_writer_tensor_nbytes(const st_gguf_writer *w, int64_t i)
{
    return i >= 0 && i < w->n_t ? w->t[i].nbytes : 0;
}

static int wfile(st_gguf_writer *w, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        return werr(w, "%s: write failed: %s", w->path, strerror(errno ? errno : EIO));
    return 0;
}

static int pad(st_gguf_writer *w, uint64_t pos)
{
    static const uint8_t zeros[256];
    uint64_t n = (w->alignment - pos % w->alignment) % w->alignment;
    while (n) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        if (wfile(w, zeros, k))
            return -1;
        n -= k;
    }
    return 0;
}

int st_gguf_writer_begin(st_gguf_writer *w, const char *path)
{
    if (check_open(w, "begin"))
        return -1;
    for (int64_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment") != 0)
            continue;
        uint32_t t = (uint32_t)w->kv[i].bytes[0] | (uint32_t)w->kv[i].bytes[1] << 8, v;
        if (t != ST_GGUF_TYPE_U32)
            return werr(w, "general.alignment must be a u32 (set it with "
                           "st_gguf_writer_set_alignment)");
        const uint8_t *b = w->kv[i].bytes + 4;
        v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if (v == 0 || (v & (v - 1)) || v > (1u << 30))
            return werr(w, "general.alignment %u is not a power of two up to 2^30", v);
        w->alignment = v;
    }
    uint64_t off = 0;
    for (int64_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        uint64_t end = off + w->t[i].nbytes;
        uint64_t padded = end + (w->alignment - end % w->alignment) % w->alignment;
        if (end < off || padded < end)
            return werr(w, "total tensor data exceeds 2^64 bytes");
        off = padded;
    }
    w->path = malloc(strlen(path) + 1);
    if (!w->path)
        return werr(w, "out of memory");
    strcpy(w->path, path);
    w->f = fopen(path, "wb");
    if (!w->f)
        return werr(w, "%s: cannot create: %s", path, strerror(errno));
    struct stat st;
    w->regular = fstat(fileno(w->f), &st) == 0 && S_ISREG(st.st_mode);
    setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    w->began = 1;
    wbuf b = {0};
    put(&b, "GGUF", 4);
    put_le(&b, w->version, 4);
    put_le(&b, (uint64_t)w->n_t, 8);
    put_le(&b, (uint64_t)w->n_kv, 8);
    for (int64_t i = 0; i < w->n_kv; i++) {
        put_str(&b, w->kv[i].key, strlen(w->kv[i].key));
        put(&b, w->kv[i].bytes, w->kv[i].nbytes);
    }
    for (int64_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(&b, t->name, strlen(t->name));
        put_le(&b, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++)
            put_le(&b, (uint64_t)t->ne[d], 8);
        put_le(&b, t->type, 4);
        put_le(&b, t->offset, 8);
    }
    if (b.oom) {
        free(b.p);
        return werr(w, "out of memory encoding the header");
    }
    int r = wfile(w, b.p, b.n);
    if (!r)
        r = pad(w, b.n);
    free(b.p);
    w->cur = 0;
    w->cur_done = 0;
    return r;
}

int st_gguf_writer_write(st_gguf_writer *w, const void *data, size_t n)
{
    if (w->failed)
        return -1;
    if (!w->began || w->finished)
        return werr(w, "write outside begin..finish");
    const uint8_t *p = data;
    while (n) {
        if (w->cur >= w->n_t)
            return werr(w, "%zu bytes of data past the last declared tensor", n);
        const wtensor *t = &w->t[w->cur];
        uint64_t left = t->nbytes - w->cur_done;
        size_t k = n < left ? n : (size_t)left;
        if (wfile(w, p, k))
            return -1;
        p += k;
        n -= k;
        w->cur_done += k;
        if (w->cur_done == t->nbytes) {
            if (pad(w, t->nbytes))
                return -1;
            w->cur++;
            w->cur_done = 0;
        }
    }
    return 0;
}

int st_gguf_writer_write_tensor(st_gguf_writer *w, const char *name, const void *data)
{
    if (w->failed)
        return -1;
    if (!w->began || w->finished)
        return werr(w, "write_tensor outside begin..finish");
    if (w->cur >= w->n_t)
        return werr(w, "write_tensor('%s'): every declared tensor is already written", name);
    const wtensor *t = &w->t[w->cur];
    if (!name || strcmp(name, t->name) != 0)
        return werr(w, "write_tensor('%s'): the next tensor in declaration order is '%s'",
                    name ? name : "(null)", t->name);
    if (w->cur_done)
        return werr(w, "write_tensor('%s'): tensor already partly written", name);
    if (t->nbytes > SIZE_MAX)
        return werr(w, "write_tensor('%s'): too large for one call", name);
    return st_gguf_writer_write(w, data, (size_t)t->nbytes);
}

int st_gguf_writer_finish(st_gguf_writer *w)
{
    if (w->failed)
        return -1;
    if (!w->began || w->finished)
        return werr(w, "finish without begin, or twice");
    if (w->cur < w->n_t)
        return werr(w, "%s: tensor '%s' (%" PRId64 " of %" PRId64 ") has %" PRIu64 " of %" PRIu64
                       " bytes written", w->path, w->t[w->cur].name, w->cur + 1, w->n_t,
                    w->cur_done, w->t[w->cur].nbytes);
    errno = 0;
    if (fflush(w->f) != 0)
        return werr(w, "%s: write failed: %s", w->path, strerror(errno ? errno : EIO));
    FILE *f = w->f;
    w->f = NULL;
    if (fclose(f) != 0) {
        if (w->regular)
            remove(w->path);
        return werr(w, "%s: close failed: %s", w->path, strerror(errno ? errno : EIO));
    }
    w->finished = 1;
    return 0;
}
