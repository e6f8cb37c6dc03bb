/* SPDX-License-Identifier: Apache-2.0 */
/* GGUF files: a reader that maps every shard read-only in place (tensor data is never
 * copied) and validates the whole header before handing anything out, and a streaming
 * writer that emits the header first and then tensor data one tensor at a time.
 *
 * Format facts used here (little-endian files only):
 *   magic "GGUF", u32 version (2 or 3; 1 is refused), u64 tensor count, u64 KV count,
 *   KVs (string key, u32 value type, value), tensor infos (string name, u32 n_dims,
 *   u64 ne[n_dims], u32 tensor type, u64 offset relative to the data section), padding to
 *   the alignment (key general.alignment, default 32), then the data section.
 *   Strings are u64 length + bytes (not NUL-terminated in the file).
 *
 * Split models: opening "name-00001-of-00003.gguf" also opens the other shards
 * (keys split.no, split.count, split.tensors.count). Metadata comes from the first shard;
 * tensors of all shards form one table.
 *
 * Thread safety: an open st_gguf is immutable; every const accessor may be called from any
 * thread. A writer belongs to one thread at a time. */
#ifndef STRATA_GGUF_H
#define STRATA_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ST_GGUF_DEFAULT_ALIGNMENT 32u
#define ST_GGUF_MAX_DIMS 4

/* Metadata value types: numbers fixed by the file format. */
typedef enum st_gguf_type {
    ST_GGUF_TYPE_U8 = 0,
    ST_GGUF_TYPE_I8 = 1,
    ST_GGUF_TYPE_U16 = 2,
    ST_GGUF_TYPE_I16 = 3,
    ST_GGUF_TYPE_U32 = 4,
    ST_GGUF_TYPE_I32 = 5,
    ST_GGUF_TYPE_F32 = 6,
    ST_GGUF_TYPE_BOOL = 7,
    ST_GGUF_TYPE_STRING = 8,
    ST_GGUF_TYPE_ARRAY = 9,
    ST_GGUF_TYPE_U64 = 10,
    ST_GGUF_TYPE_I64 = 11,
    ST_GGUF_TYPE_F64 = 12,
    ST_GGUF_TYPE_COUNT = 13 /* not a type */
} st_gguf_type;

/* Return codes of the typed getters. */
#define ST_GGUF_OK 0
#define ST_GGUF_ABSENT (-1)     /* no such key (or array index out of range) */
#define ST_GGUF_WRONG_TYPE (-2) /* present, but its type cannot be converted losslessly */

/* "u32", "string", "array", ...; "?" for unknown ids. Static storage. */
const char *st_gguf_type_name(uint32_t type);

/* Name of a GGUF tensor type id ("Q4_K"), including ids the format defines that this build
 * cannot compute with ("IQ2_XXS", "MXFP4"); "?" for others. Static storage. */
const char *st_gguf_tensor_type_name(uint32_t type);

/* ==== reader ====================================================================== */

typedef struct st_gguf st_gguf;

/* One metadata value (a scalar, a string, or an array header). Strings point into memory
 * owned by the st_gguf and are NUL-terminated; `len` excludes the NUL. */
typedef struct st_gguf_value {
    st_gguf_type type;
    union {
        uint64_t u64;  /* U8, U16, U32, U64, BOOL (0/1) */
        int64_t i64;   /* I8, I16, I32, I64 */
        double f64;    /* F32, F64 */
        struct {
            const char *ptr;
            uint64_t len;
        } str; /* STRING */
        struct {
            st_gguf_type type; /* element type */
            uint64_t len;      /* element count */
        } arr; /* ARRAY */
    } v;
} st_gguf_value;

/* One tensor. All pointers are owned by the st_gguf and live until st_gguf_close. */
typedef struct st_gguf_tensor {
    const char *name;         /* NUL-terminated */
    uint32_t type;            /* GGUF tensor type id == st_type (strata/backend.h); may be a
                                 type this build cannot compute with: check st_type_get */
    uint32_t n_dims;          /* 1..4 */
    int64_t ne[ST_GGUF_MAX_DIMS]; /* ne[0] innermost; unused dims are 1 */
    uint64_t nbytes;          /* st_row_size(type, ne[0]) * ne[1] * ne[2] * ne[3] */
    const void *data;         /* into the read-only mapping of its shard: never write */
    uint64_t offset;          /* absolute byte offset of the data in its shard file */
    uint32_t shard;           /* index into the shards (0 for single files) */
} st_gguf_tensor;

/* One mapped file of a (possibly split) model. */
typedef struct st_gguf_shard {
    const char *path;
    const void *base;     /* read-only mapping of the whole file */
    uint64_t size;        /* file size in bytes */
    uint64_t data_offset; /* start of the data section */
    int fd;               /* open read-only descriptor (for pread), owned by the st_gguf */
} st_gguf_shard;

/* Opens and validates a GGUF file, and its sibling shards when `path` names the first shard
 * of a split model. Returns NULL on any error with a message in err (which names the file, the
 * field and its byte offset); the caller owns the result and frees it with st_gguf_close. */
st_gguf *st_gguf_open(const char *path, char *err, size_t errlen);
/* Unmaps every shard and frees the handle; every pointer obtained from it dies. NULL is ok. */
void st_gguf_close(st_gguf *g);

/* Format version of the first shard (2 or 3). */
uint32_t st_gguf_version(const st_gguf *g);
/* Data alignment in bytes (general.alignment, default 32). */
uint32_t st_gguf_alignment(const st_gguf *g);
/* Number of shards (1 for a single file) and shard i (NULL if out of range). */
uint32_t st_gguf_shard_count(const st_gguf *g);
const st_gguf_shard *st_gguf_shard_at(const st_gguf *g, uint32_t i);

/* ---- metadata (of the first shard) ---- */

/* Number of key/value pairs. */
int64_t st_gguf_kv_count(const st_gguf *g);
/* Key of pair i (NUL-terminated, owned by g); NULL if out of range. */
const char *st_gguf_kv_key(const st_gguf *g, int64_t i);
/* Index of `key`, or -1 if absent. */
int64_t st_gguf_kv_find(const st_gguf *g, const char *key);
/* Value of pair i; ST_GGUF_OK or ST_GGUF_ABSENT if i is out of range. */
int st_gguf_kv_get(const st_gguf *g, int64_t i, st_gguf_value *out);
/* Element j of the array at pair i. ST_GGUF_ABSENT if i or j is out of range,
 * ST_GGUF_WRONG_TYPE if pair i is not an array or is an array of arrays. */
int st_gguf_arr_get(const st_gguf *g, int64_t i, uint64_t j, st_gguf_value *out);
/* Raw little-endian element storage of a numeric/bool array at pair i (points into the
 * mapping, possibly unaligned: read with memcpy); NULL if not such an array. */
const void *st_gguf_arr_data(const st_gguf *g, int64_t i);

/* Typed getters by key. Return ST_GGUF_OK, ST_GGUF_ABSENT or ST_GGUF_WRONG_TYPE; `out` is
 * written only on ST_GGUF_OK. Integers convert among widths and signedness when the value
 * fits; floats accept F32 and F64 (F64 rounded to float for get_f32); bool accepts BOOL only. */
int st_gguf_get_u32(const st_gguf *g, const char *key, uint32_t *out);
int st_gguf_get_i32(const st_gguf *g, const char *key, int32_t *out);
int st_gguf_get_u64(const st_gguf *g, const char *key, uint64_t *out);
int st_gguf_get_i64(const st_gguf *g, const char *key, int64_t *out);
int st_gguf_get_f32(const st_gguf *g, const char *key, float *out);
int st_gguf_get_f64(const st_gguf *g, const char *key, double *out);
int st_gguf_get_bool(const st_gguf *g, const char *key, bool *out);
/* String value (NUL-terminated, owned by g); len may be NULL. */
int st_gguf_get_str(const st_gguf *g, const char *key, const char **out, size_t *len);

/* Same with a default: `out` = def when the key is absent and ST_GGUF_OK is returned;
 * ST_GGUF_WRONG_TYPE (out = def) when present with an unconvertible type. */
int st_gguf_get_u32_or(const st_gguf *g, const char *key, uint32_t def, uint32_t *out);
int st_gguf_get_i32_or(const st_gguf *g, const char *key, int32_t def, int32_t *out);
int st_gguf_get_u64_or(const st_gguf *g, const char *key, uint64_t def, uint64_t *out);
int st_gguf_get_f32_or(const st_gguf *g, const char *key, float def, float *out);
int st_gguf_get_bool_or(const st_gguf *g, const char *key, bool def, bool *out);

/* Arrays by key: element type and length. ST_GGUF_WRONG_TYPE if the key is not an array. */
int st_gguf_get_arr(const st_gguf *g, const char *key, st_gguf_type *elem_type, uint64_t *len);
/* Element j of a string array (NUL-terminated, owned by g); NULL if absent, not a string
 * array, or j out of range. len may be NULL. */
const char *st_gguf_arr_str(const st_gguf *g, const char *key, uint64_t j, size_t *len);
/* Element j of a numeric array converted like the scalar getters. */
int st_gguf_arr_i64(const st_gguf *g, const char *key, uint64_t j, int64_t *out);
int st_gguf_arr_f32(const st_gguf *g, const char *key, uint64_t j, float *out);
/* Copies a whole numeric array into dst (n elements, must equal the array length),
 * converting each element like the scalar getters. ST_GGUF_WRONG_TYPE on a length mismatch
 * or an element that does not convert. */
int st_gguf_arr_copy_i32(const st_gguf *g, const char *key, int32_t *dst, uint64_t n);
int st_gguf_arr_copy_f32(const st_gguf *g, const char *key, float *dst, uint64_t n);

/* ---- tensors (of all shards, in file order: shard 0 first) ---- */

/* Number of tensors over all shards. */
int64_t st_gguf_tensor_count(const st_gguf *g);
/* Tensor i; NULL if out of range. */
const st_gguf_tensor *st_gguf_tensor_at(const st_gguf *g, int64_t i);
/* Tensor by name (hash lookup); NULL if absent. */
const st_gguf_tensor *st_gguf_tensor_find(const st_gguf *g, const char *name);
/* Index of the tensor named `name`, or -1. */
int64_t st_gguf_tensor_index(const st_gguf *g, const char *name);

/* Access hint for bytes [off, off+len) of tensor t's data (clamped to the tensor).
 * advice: ST_MAP_* from platform/mapfile.h. Returns 0, or -1 when the OS refused (harmless). */
int st_gguf_advise(const st_gguf *g, const st_gguf_tensor *t, uint64_t off, uint64_t len,
                   int advice);

/* ==== writer ======================================================================= */

/* Usage: st_gguf_writer_new; set KVs and add tensor descriptors in any order; then
 * st_gguf_writer_begin (writes the header with every offset, computed from type + shape);
 * then the tensors' bytes in declaration order through st_gguf_writer_write (any chunking)
 * or st_gguf_writer_write_tensor; then st_gguf_writer_finish. Padding is inserted
 * automatically. Every call returns 0 or -1; after -1 st_gguf_writer_error says why and
 * the writer refuses further calls except st_gguf_writer_free. */
typedef struct st_gguf_writer st_gguf_writer;

/* New empty writer (version 3, alignment 32). NULL only when out of memory. Caller frees. */
st_gguf_writer *st_gguf_writer_new(void);
/* Closes the file if open; when finish has not succeeded, the partial file is removed. */
void st_gguf_writer_free(st_gguf_writer *w);
/* Text of the first error (empty string if none). Owned by w. */
const char *st_gguf_writer_error(const st_gguf_writer *w);

/* Version written to the header: 2 or 3 (identical layout for little-endian files). */
int st_gguf_writer_set_version(st_gguf_writer *w, uint32_t version);
/* Data alignment: a power of two; also stores general.alignment (u32) when not 32. */
int st_gguf_writer_set_alignment(st_gguf_writer *w, uint32_t alignment);

/* Scalar KVs; setting a key again replaces its value (keeping its original position). */
int st_gguf_writer_set_u8(st_gguf_writer *w, const char *key, uint8_t v);
int st_gguf_writer_set_i8(st_gguf_writer *w, const char *key, int8_t v);
int st_gguf_writer_set_u16(st_gguf_writer *w, const char *key, uint16_t v);
int st_gguf_writer_set_i16(st_gguf_writer *w, const char *key, int16_t v);
int st_gguf_writer_set_u32(st_gguf_writer *w, const char *key, uint32_t v);
int st_gguf_writer_set_i32(st_gguf_writer *w, const char *key, int32_t v);
int st_gguf_writer_set_u64(st_gguf_writer *w, const char *key, uint64_t v);
int st_gguf_writer_set_i64(st_gguf_writer *w, const char *key, int64_t v);
int st_gguf_writer_set_f32(st_gguf_writer *w, const char *key, float v);
int st_gguf_writer_set_f64(st_gguf_writer *w, const char *key, double v);
int st_gguf_writer_set_bool(st_gguf_writer *w, const char *key, bool v);
int st_gguf_writer_set_str(st_gguf_writer *w, const char *key, const char *v);
/* Numeric/bool array: `data` holds n packed host values of elem_type's C type (uint8_t
 * per bool). The data is copied. */
int st_gguf_writer_set_arr(st_gguf_writer *w, const char *key, st_gguf_type elem_type,
                           const void *data, uint64_t n);
/* String array: n NUL-terminated strings, copied. */
int st_gguf_writer_set_arr_str(st_gguf_writer *w, const char *key, const char *const *strs,
                               uint64_t n);

/* Declares the next tensor: name (unique), GGUF type id, 1..4 dims with ne[0] innermost
 * (ne[0] a multiple of the type's block size). Fails on bad shape/type or a duplicate. */
int st_gguf_writer_add_tensor(st_gguf_writer *w, const char *name, uint32_t type,
                              uint32_t n_dims, const int64_t *ne);
/* Data bytes of declared tensor i (by declaration order); 0 if out of range. */
uint64_t st_gguf_writer_tensor_nbytes(const st_gguf_writer *w, int64_t i);

/* Creates/truncates `path` and writes the header. No KV or tensor may be added after. */
int st_gguf_writer_begin(st_gguf_writer *w, const char *path);
/* Appends n bytes of tensor data (the tensors' bytes concatenated in declaration order;
 * chunks may split or span tensors). Fails when more bytes than declared are given. */
int st_gguf_writer_write(st_gguf_writer *w, const void *data, size_t n);
/* Writes the whole next tensor, which must be named `name` and not yet partly written. */
int st_gguf_writer_write_tensor(st_gguf_writer *w, const char *name, const void *data);
/* Checks that every declared byte was written, flushes and closes the file. */
int st_gguf_writer_finish(st_gguf_writer *w);

#ifdef __cplusplus
}
#endif
#endif
