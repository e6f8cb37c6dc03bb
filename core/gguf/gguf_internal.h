/* SPDX-License-Identifier: Apache-2.0 */
/* Internal layout of an open GGUF model, shared by the reader's files (parse, split, getters).
 * Not part of the public API. */
#ifndef STRATA_GGUF_INTERNAL_H
#define STRATA_GGUF_INTERNAL_H

#include "gguf/gguf.h"
#include "platform/mapfile.h"

/* Bump allocator for names and strings: freed all at once with the handle. */
typedef struct st_gguf_arena_chunk {
    struct st_gguf_arena_chunk *next;
    size_t used, cap;
    /* bytes follow */
} st_gguf_arena_chunk;

typedef struct st_gguf_arena {
    st_gguf_arena_chunk *head;
} st_gguf_arena;

/* Returns n bytes (8-aligned) owned by the arena, or NULL when out of memory. */
void *st_gguf_arena_alloc(st_gguf_arena *a, size_t n);
/* Copies n bytes and appends a NUL; NULL when out of memory. */
char *st_gguf_arena_strdup(st_gguf_arena *a, const void *s, size_t n);
/* Frees every chunk. */
void st_gguf_arena_free(st_gguf_arena *a);

/* One metadata pair. */
typedef struct st_gguf_kv {
    const char *key;     /* arena, NUL-terminated */
    uint64_t file_off;   /* offset of the pair in its shard */
    st_gguf_value val;   /* scalars and strings complete; arrays: type + length */
    const uint8_t *raw;  /* numeric arrays: element bytes in the mapping (little-endian) */
    const char **strs;   /* string arrays: n pointers into the arena (NUL-terminated) */
    uint64_t *lens;      /* string arrays: n lengths */
} st_gguf_kv;

/* Open-addressing index from a name to an item number. */
typedef struct st_gguf_index {
    int64_t *slots; /* item number + 1; 0 = empty */
    uint64_t mask;
} st_gguf_index;

/* One parsed file. */
typedef struct st_gguf_file {
    st_mapfile map;
    char *path;
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    int64_t n_kv;
    st_gguf_kv *kv;
    st_gguf_index kv_index;
    int64_t n_tensors;
    st_gguf_tensor *tensors; /* shard field left 0; the model's table copies them */
} st_gguf_file;

struct st_gguf {
    uint32_t n_shards;
    st_gguf_file *files;  /* [n_shards] */
    st_gguf_shard *shards; /* [n_shards] public view */
    int64_t n_tensors;
    st_gguf_tensor *tensors; /* all shards, file order */
    st_gguf_index tensor_index;
    st_gguf_arena arena;
};

/* Parses and validates one mapped file into f (which owns f->map on success and failure:
 * the caller closes it with st_gguf_file_free). Returns 0 or -1 with a message in err. */
int st_gguf_file_parse(st_gguf_file *f, st_gguf_arena *arena, char *err, size_t errlen);
/* Frees a file's tables and mapping (not the arena). */
void st_gguf_file_free(st_gguf_file *f);

/* Builds an index over n names (get(i) gives name i). Returns -1 when out of memory; on a
 * duplicate, returns -2 and sets *dup_a < *dup_b to the two items. */
int st_gguf_index_build(st_gguf_index *ix, int64_t n, const char *(*get)(const void *, int64_t),
                        const void *ctx, int64_t *dup_a, int64_t *dup_b);
/* Item number of `name`, or -1. */
int64_t st_gguf_index_find(const st_gguf_index *ix, const char *name,
                           const char *(*get)(const void *, int64_t), const void *ctx);
void st_gguf_index_free(st_gguf_index *ix);

/* Key lookup in one file's metadata (-1 if absent). */
int64_t st_gguf_file_kv_find(const st_gguf_file *f, const char *key);

/* Value conversions shared by the getters. */
int st_gguf_value_to_i64(const st_gguf_value *v, int64_t *out);
int st_gguf_value_to_u64(const st_gguf_value *v, uint64_t *out);
int st_gguf_value_to_f64(const st_gguf_value *v, double *out);

/* Decodes one little-endian scalar of type t at p. */
void st_gguf_decode_scalar(uint32_t t, const void *p, st_gguf_value *v);

/* Elements per block and bytes per block of a tensor type; -1 for ids the format lacks. */
int st_gguf_type_block(uint32_t type, uint32_t *block, uint32_t *bytes);

/* Size in bytes of one scalar of type t (0 for STRING, ARRAY and unknown ids). */
size_t st_gguf_type_size(uint32_t t);

#endif
