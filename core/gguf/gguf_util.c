/* SPDX-License-Identifier: Apache-2.0 */
/* Small containers of the GGUF reader: a bump arena for strings and a name index. */
#include "gguf/gguf_internal.h"

#include <stdlib.h>
#include <string.h>

#define ST_GGUF_ARENA_CHUNK (256u * 1024u)

void *st_gguf_arena_alloc(st_gguf_arena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (n == 0)
        n = 8;
    st_gguf_arena_chunk *h = a->head;
    if (!h || h->cap - h->used < n) {
        size_t cap = n > ST_GGUF_ARENA_CHUNK / 4 ? n : ST_GGUF_ARENA_CHUNK;
        if (cap > SIZE_MAX - sizeof(st_gguf_arena_chunk) - 8)
            return NULL;
        st_gguf_arena_chunk *c = malloc(sizeof *c + 8 + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        if (h && n > ST_GGUF_ARENA_CHUNK / 4) {
            /* big item: keep the current chunk on top for small ones */
            c->next = h->next;
            h->next = c;
        } else {
            c->next = h;
            a->head = c;
        }
        h = c;
    }
    /* the chunk header is followed by 8 bytes of slack so the payload starts 8-aligned */
    uintptr_t base = ((uintptr_t)(h + 1) + 7) & ~(uintptr_t)7;
    void *p = (void *)(base + h->used);
    h->used += n;
    return p;
}

char *st_gguf_arena_strdup(st_gguf_arena *a, const void *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *p = st_gguf_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void st_gguf_arena_free(st_gguf_arena *a)
{
    st_gguf_arena_chunk *c = a->head;
    while (c) {
        st_gguf_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

int st_gguf_index_build(st_gguf_index *ix, int64_t n, const char *(*get)(const void *, int64_t),
                        const void *ctx, int64_t *dup_a, int64_t *dup_b)
{
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2)
        cap <<= 1;
    ix->slots = calloc((size_t)cap, sizeof *ix->slots);
    if (!ix->slots)
        return -1;
    ix->mask = cap - 1;
    for (int64_t i = 0; i < n; i++) {
        const char *name = get(ctx, i);
        uint64_t h = hash_str(name) & ix->mask;
        while (ix->slots[h]) {
            int64_t j = ix->slots[h] - 1;
            if (strcmp(get(ctx, j), name) == 0) {
                *dup_a = j;
                *dup_b = i;
                return -2;
            }
            h = (h + 1) & ix->mask;
        }
        ix->slots[h] = i + 1;
    }
    return 0;
}

int64_t st_gguf_index_find(const st_gguf_index *ix, const char *name,
                           const char *(*get)(const void *, int64_t), const void *ctx)
{
    if (!ix->slots || !name)
        return -1;
    uint64_t h = hash_str(name) & ix->mask;
    while (ix->slots[h]) {
        int64_t j = ix->slots[h] - 1;
        if (strcmp(get(ctx, j), name) == 0)
            return j;
        h = (h + 1) & ix->mask;
    }
    return -1;
}

void st_gguf_index_free(st_gguf_index *ix)
{
    free(ix->slots);
    ix->slots = NULL;
    ix->mask = 0;
}
