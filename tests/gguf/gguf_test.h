/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the GGUF tests: checks that count failures, a scratch directory, whole-file
 * read/write, and a walk that touches every value and tensor byte of an open file. */
#ifndef STRATA_TEST_GGUF_H
#define STRATA_TEST_GGUF_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf/gguf.h"

static int g_failures = 0;

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            g_failures++;                                                          \
        }                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                          \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, "\n");                                                    \
            g_failures++;                                                             \
        }                                                                             \
    } while (0)

static inline int test_result(const char *name)
{
    if (g_failures)
        fprintf(stderr, "%s: %d check(s) failed\n", name, g_failures);
    else
        printf("%s: all checks passed\n", name);
    return g_failures ? 1 : 0;
}

/* Scratch directory: argv[1] if given, else ./gguf_tmp. Created if needed. */
static inline const char *test_dir(int argc, char **argv)
{
    const char *d = argc > 1 ? argv[1] : "gguf_tmp";
    if (mkdir(d, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot create %s: %s\n", d, strerror(errno));
        exit(1);
    }
    return d;
}

static inline char *test_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Whole file into a malloc'd buffer; NULL on error. */
static inline uint8_t *test_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

static inline int test_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Reads every metadata value, array element and tensor byte; returns a checksum so the
 * reads cannot be optimized away. Any read outside the mapping crashes (or trips ASan). */
static inline uint64_t test_touch_all(const st_gguf *g)
{
    uint64_t sum = 0;
    for (int64_t i = 0; i < st_gguf_kv_count(g); i++) {
        st_gguf_value v;
        sum += strlen(st_gguf_kv_key(g, i));
        if (st_gguf_kv_get(g, i, &v) != ST_GGUF_OK)
            continue;
        if (v.type == ST_GGUF_TYPE_STRING)
            sum += strlen(v.v.str.ptr) + v.v.str.len;
        if (v.type != ST_GGUF_TYPE_ARRAY)
            continue;
        for (uint64_t j = 0; j < v.v.arr.len; j++) {
            st_gguf_value e;
            if (st_gguf_arr_get(g, i, j, &e) != ST_GGUF_OK)
                break;
            sum += e.type == ST_GGUF_TYPE_STRING ? strlen(e.v.str.ptr) : e.v.u64;
        }
    }
    for (int64_t i = 0; i < st_gguf_tensor_count(g); i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        const uint8_t *p = t->data;
        sum += strlen(t->name);
        for (uint64_t k = 0; k < t->nbytes; k++)
            sum += p[k];
        CHECK(st_gguf_tensor_find(g, t->name) == t);
    }
    return sum;
}

#endif
