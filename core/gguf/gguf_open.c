/* SPDX-License-Identifier: Apache-2.0 */
/* Opening a GGUF model: one file, or every shard of a split model, mapped read-only;
 * the merged tensor table and its name index. */
#include "gguf/gguf_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *tensor_name(const void *ctx, int64_t i)
{
    return ((const st_gguf_tensor *)ctx)[i].name;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static int open_file(st_gguf_file *f, const char *path, st_gguf_arena *arena, char *err,
                     size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->map.fd = -1;
    f->path = dup_str(path);
    if (!f->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (st_mapfile_open(&f->map, path, err, errlen))
        return -1;
    return st_gguf_file_parse(f, arena, err, errlen);
}

/* Integer value of `key` in one file: 1 found, 0 absent, -1 wrong type. */
static int file_u64(const st_gguf_file *f, const char *key, uint64_t *out)
{
    int64_t i = st_gguf_file_kv_find(f, key);
    if (i < 0)
        return 0;
    return st_gguf_value_to_u64(&f->kv[i].val, out) == ST_GGUF_OK ? 1 : -1;
}

/* Finds the other shards' paths from the first's name pattern "-%05u-of-%05u.gguf". */
static int shard_prefix(const char *path, uint64_t no, uint64_t count, size_t *prefix_len)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "-%05" PRIu64 "-of-%05" PRIu64 ".gguf", no + 1, count);
    size_t n = strlen(path), s = strlen(suffix);
    if (n < s || strcmp(path + n - s, suffix) != 0)
        return -1;
    *prefix_len = n - s;
    return 0;
}

static int open_split(st_gguf *g, const char *path, st_gguf_file *first, char *err, size_t errlen)
{
    uint64_t count = 1, no = 0;
    int rc = file_u64(first, "split.count", &count);
    if (rc < 0) {
        snprintf(err, errlen, "%s: split.count is not a non-negative integer", path);
        return -1;
    }
    if (rc == 0 || count <= 1) {
        g->n_shards = 1;
        g->files = first;
        return 0;
    }
    if (count > 65535) {
        snprintf(err, errlen, "%s: split.count %" PRIu64 " is larger than 65535", path, count);
        return -1;
    }
    if (file_u64(first, "split.no", &no) != 1 || no >= count) {
        snprintf(err, errlen, "%s: split.count is %" PRIu64 " but split.no is missing or not in "
                              "0..%" PRIu64, path, count, count - 1);
        return -1;
    }
    size_t plen;
    if (shard_prefix(path, no, count, &plen)) {
        snprintf(err, errlen, "%s: shard %" PRIu64 " of %" PRIu64 " of a split model, but the "
                              "name does not end in -%05" PRIu64 "-of-%05" PRIu64
                              ".gguf, so the other shards cannot be found",
                 path, no + 1, count, no + 1, count);
        return -1;
    }
    g->files = calloc((size_t)count, sizeof *g->files);
    if (!g->files) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (uint64_t i = 0; i < count; i++)
        g->files[i].map.fd = -1;
    g->n_shards = (uint32_t)count;
    g->files[no] = *first;
    memset(first, 0, sizeof *first);
    first->map.fd = -1;
    char *name = malloc(plen + 64);
    if (!name) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (uint64_t i = 0; i < count; i++) {
        st_gguf_file *f = &g->files[i];
        if (i != no) {
            memcpy(name, path, plen);
            snprintf(name + plen, 64, "-%05" PRIu64 "-of-%05" PRIu64 ".gguf", i + 1, count);
            if (open_file(f, name, &g->arena, err, errlen)) {
                size_t el = strlen(err);
                snprintf(err + el, errlen - el, " (shard %" PRIu64 " of %" PRIu64 " named by %s)",
                         i + 1, count, path);
                free(name);
                return -1;
            }
        }
        uint64_t fno = UINT64_MAX, fcount = count;
        if (file_u64(f, "split.no", &fno) != 1 || fno != i ||
            file_u64(f, "split.count", &fcount) < 0 || fcount != count) {
            snprintf(err, errlen, "%s: expected shard %" PRIu64 " of %" PRIu64 " (split.no %"
                                  PRIu64 ") but split.no is %s%" PRIu64 " and split.count %"
                                  PRIu64, f->path, i + 1, count, i,
                     fno == UINT64_MAX ? "missing/" : "", fno == UINT64_MAX ? 0 : fno, fcount);
            free(name);
            return -1;
        }
    }
    free(name);
    return 0;
}

static int merge_tensors(st_gguf *g, char *err, size_t errlen)
{
    uint64_t total = 0;
    for (uint32_t s = 0; s < g->n_shards; s++)
        total += (uint64_t)g->files[s].n_tensors;
    uint64_t want;
    int rc = file_u64(&g->files[0], "split.tensors.count", &want);
    if (g->n_shards > 1 && rc != 0 && (rc < 0 || want != total)) {
        snprintf(err, errlen, "%s: split.tensors.count is %s%" PRIu64 " but the %u shards hold "
                              "%" PRIu64 " tensors", g->files[0].path, rc < 0 ? "invalid: " : "",
                 rc < 0 ? 0 : want, g->n_shards, total);
        return -1;
    }
    g->n_tensors = (int64_t)total;
    g->tensors = calloc(total ? (size_t)total : 1, sizeof *g->tensors);
    g->shards = calloc(g->n_shards, sizeof *g->shards);
    if (!g->tensors || !g->shards) {
        snprintf(err, errlen, "%s: out of memory", g->files[0].path);
        return -1;
    }
    int64_t k = 0;
    for (uint32_t s = 0; s < g->n_shards; s++) {
        const st_gguf_file *f = &g->files[s];
        for (int64_t i = 0; i < f->n_tensors; i++) {
            g->tensors[k] = f->tensors[i];
            g->tensors[k].shard = s;
            k++;
        }
        g->shards[s].path = f->path;
        g->shards[s].base = f->map.base;
        g->shards[s].size = f->map.size;
        g->shards[s].data_offset = f->data_offset;
        g->shards[s].fd = f->map.fd;
    }
    int64_t a, b;
    int r = st_gguf_index_build(&g->tensor_index, g->n_tensors, tensor_name, g->tensors, &a, &b);
    if (r == -1) {
        snprintf(err, errlen, "%s: out of memory", g->files[0].path);
        return -1;
    }
    if (r == -2) {
        snprintf(err, errlen, "duplicate tensor name '%s' in %s and %s", g->tensors[a].name,
                 g->files[g->tensors[a].shard].path, g->files[g->tensors[b].shard].path);
        return -1;
    }
    return 0;
}

st_gguf *st_gguf_open(const char *path, char *err, size_t errlen)
{
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = 0;
    if (!path) {
        snprintf(err, errlen, "no path given");
        return NULL;
    }
    st_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    st_gguf_file first;
    if (open_file(&first, path, &g->arena, err, errlen)) {
        st_gguf_file_free(&first);
        st_gguf_close(g);
        return NULL;
    }
    st_gguf_file *heap = malloc(sizeof *heap);
    if (!heap) {
        snprintf(err, errlen, "%s: out of memory", path);
        st_gguf_file_free(&first);
        st_gguf_close(g);
        return NULL;
    }
    *heap = first;
    if (open_split(g, path, heap, err, errlen)) {
        st_gguf_file_free(heap);
        free(heap);
        st_gguf_close(g);
        return NULL;
    }
    if (g->files != heap)
        free(heap); /* moved into g->files */
    if (merge_tensors(g, err, errlen)) {
        st_gguf_close(g);
        return NULL;
    }
    return g;
}

void st_gguf_close(st_gguf *g)
{
    if (!g)
        return;
    for (uint32_t s = 0; s < g->n_shards; s++)
        st_gguf_file_free(&g->files[s]);
    free(g->files);
    free(g->shards);
    free(g->tensors);
    st_gguf_index_free(&g->tensor_index);
    st_gguf_arena_free(&g->arena);
    free(g);
}

uint32_t st_gguf_version(const st_gguf *g)
{
    return g->files[0].version;
}

uint32_t st_gguf_alignment(const st_gguf *g)
{
    return g->files[0].alignment;
}

uint32_t st_gguf_shard_count(const st_gguf *g)
{
    return g->n_shards;
}

const st_gguf_shard *st_gguf_shard_at(const st_gguf *g, uint32_t i)
{
    return i < g->n_shards ? &g->shards[i] : NULL;
}

int64_t st_gguf_tensor_count(const st_gguf *g)
{
    return g->n_tensors;
}

const st_gguf_tensor *st_gguf_tensor_at(const st_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

int64_t st_gguf_tensor_index(const st_gguf *g, const char *name)
{
    return st_gguf_index_find(&g->tensor_index, name, tensor_name, g->tensors);
}

const st_gguf_tensor *st_gguf_tensor_find(const st_gguf *g, const char *name)
{
    int64_t i = st_gguf_tensor_index(g, name);
    return i < 0 ? NULL : &g->tensors[i];
}

int st_gguf_advise(const st_gguf *g, const st_gguf_tensor *t, uint64_t off, uint64_t len,
                   int advice)
{
    if (!t || t->shard >= g->n_shards || off >= t->nbytes)
        return -1;
    if (len > t->nbytes - off)
        len = t->nbytes - off;
    return st_mapfile_advise(&g->files[t->shard].map, t->offset + off, len, advice);
}
