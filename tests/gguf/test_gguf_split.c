/* SPDX-License-Identifier: Apache-2.0 */
/* Split models: three shards written with the split keys; opening any of them opens all,
 * with metadata from the first and one tensor table. Broken sets (a missing shard, wrong
 * split.no, wrong split.tensors.count, a name repeated across shards, a name that does not
 * follow the pattern) give errors that say which file and what. */
#include "gguf_test.h"
#include "strata/backend.h"

typedef struct shard_spec {
    int no;                   /* split.no to write (-1: omit) */
    int count;                /* split.count */
    int tensors_count;        /* split.tensors.count (-1: omit) */
    uint32_t alignment;
    const char *names[3];     /* tensors of this shard (NULL-terminated) */
} shard_spec;

static uint8_t fill(const char *name, uint64_t k)
{
    return (uint8_t)(name[0] * 31 + k * 13);
}

static int write_shard(const char *path, const shard_spec *s, int first)
{
    st_gguf_writer *w = st_gguf_writer_new();
    if (s->alignment)
        st_gguf_writer_set_alignment(w, s->alignment);
    if (first) {
        st_gguf_writer_set_str(w, "general.architecture", "llama");
        st_gguf_writer_set_u32(w, "llama.block_count", 2);
    }
    if (s->no >= 0)
        st_gguf_writer_set_u16(w, "split.no", (uint16_t)s->no);
    st_gguf_writer_set_u16(w, "split.count", (uint16_t)s->count);
    if (s->tensors_count >= 0)
        st_gguf_writer_set_i32(w, "split.tensors.count", s->tensors_count);
    for (int i = 0; s->names[i]; i++) {
        int64_t ne[2] = {16 + 16 * i, 3};
        st_gguf_writer_add_tensor(w, s->names[i], ST_TYPE_F32, 2, ne);
    }
    st_gguf_writer_begin(w, path);
    for (int i = 0; s->names[i]; i++) {
        uint64_t n = st_gguf_writer_tensor_nbytes(w, i);
        uint8_t *buf = malloc(n);
        for (uint64_t k = 0; k < n; k++)
            buf[k] = fill(s->names[i], k);
        st_gguf_writer_write_tensor(w, s->names[i], buf);
        free(buf);
    }
    int r = st_gguf_writer_finish(w);
    if (r)
        fprintf(stderr, "%s: %s\n", path, st_gguf_writer_error(w));
    st_gguf_writer_free(w);
    return r;
}

/* Writes prefix-0000K-of-0000N.gguf for each spec; returns the first shard's path. */
static char *write_set(const char *dir, const char *prefix, const shard_spec *specs, int n)
{
    char name[128];
    char *first = NULL;
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s-%05d-of-%05d.gguf", prefix, i + 1, n);
        char *p = test_path(dir, name);
        CHECK(write_shard(p, &specs[i], i == 0) == 0);
        if (i == 0)
            first = p;
        else
            free(p);
    }
    return first;
}

static void expect_error(const char *path, const char *needle)
{
    char err[1024];
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    CHECK_MSG(g == NULL, "%s opened but should not", path);
    CHECK_MSG(g != NULL || strstr(err, needle) != NULL, "error '%s' lacks '%s'", err, needle);
    if (g == NULL)
        printf("expected error: %s\n", err);
    st_gguf_close(g);
}

static void check_good(const char *path, const char *dir)
{
    char err[1024];
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    if (!g)
        return;
    CHECK(st_gguf_shard_count(g) == 3);
    const char *arch = NULL;
    CHECK(st_gguf_get_str(g, "general.architecture", &arch, NULL) == 0 &&
          strcmp(arch, "llama") == 0);
    uint32_t no = 99;
    CHECK(st_gguf_get_u32(g, "split.no", &no) == 0 && no == 0); /* metadata of shard 1 */
    CHECK(st_gguf_tensor_count(g) == 5);
    static const char *order[] = {"a", "b", "c", "d", "e"};
    static const uint32_t shard_of[] = {0, 0, 1, 2, 2};
    for (int i = 0; i < 5; i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        CHECK(t && strcmp(t->name, order[i]) == 0 && t->shard == shard_of[i]);
        if (!t)
            continue;
        CHECK(st_gguf_tensor_find(g, order[i]) == t);
        const st_gguf_shard *sh = st_gguf_shard_at(g, t->shard);
        CHECK(sh && (const uint8_t *)t->data == (const uint8_t *)sh->base + t->offset);
        CHECK(sh && t->offset + t->nbytes <= sh->size && t->offset >= sh->data_offset);
        CHECK(sh && strstr(sh->path, dir) == sh->path);
        const uint8_t *p = t->data;
        int bad = 0;
        for (uint64_t k = 0; k < t->nbytes; k++)
            bad += p[k] != fill(t->name, k);
        CHECK_MSG(bad == 0, "tensor %s: %d bytes differ", t->name, bad);
    }
    const st_gguf_tensor *c = st_gguf_tensor_find(g, "c");
    CHECK(c && c->offset % 64 == 0); /* shard 2 uses alignment 64 */
    st_gguf_close(g);
}

int main(int argc, char **argv)
{
    const char *dir = test_dir(argc, argv);
    shard_spec good[3] = {
        {0, 3, 5, 0, {"a", "b", NULL}},
        {1, 3, 5, 64, {"c", NULL}},
        {2, 3, 5, 0, {"d", "e", NULL}},
    };
    char *first = write_set(dir, "good", good, 3);
    check_good(first, dir);
    /* opening a later shard opens the whole set */
    char *second = test_path(dir, "good-00002-of-00003.gguf");
    check_good(second, dir);
    free(second);
    free(first);

    /* a missing shard */
    first = write_set(dir, "missing", good, 3);
    char *third = test_path(dir, "missing-00003-of-00003.gguf");
    remove(third);
    expect_error(first, "missing-00003-of-00003.gguf");
    free(third);
    free(first);

    /* shard 2 claims to be shard 3 */
    shard_spec badno[3] = {good[0], good[1], good[2]};
    badno[1].no = 2;
    first = write_set(dir, "badno", badno, 3);
    expect_error(first, "badno-00002-of-00003.gguf: expected shard 2 of 3");
    free(first);

    /* split.tensors.count disagrees with the shards */
    shard_spec badcount[3] = {good[0], good[1], good[2]};
    badcount[0].tensors_count = 6;
    first = write_set(dir, "badcount", badcount, 3);
    expect_error(first, "split.tensors.count");
    free(first);

    /* the same tensor name in two shards */
    shard_spec dup[3] = {good[0], good[1], good[2]};
    dup[2].names[1] = "a";
    first = write_set(dir, "dup", dup, 3);
    expect_error(first, "duplicate tensor name 'a'");
    free(first);

    /* split keys present but the name does not follow the pattern */
    char *odd = test_path(dir, "renamed.gguf");
    CHECK(write_shard(odd, &good[0], 1) == 0);
    expect_error(odd, "cannot be found");
    free(odd);

    /* split.count 1 is a plain single file */
    shard_spec one = {0, 1, 2, 0, {"a", "b", NULL}};
    char *single = test_path(dir, "single.gguf");
    CHECK(write_shard(single, &one, 1) == 0);
    char err[512];
    st_gguf *g = st_gguf_open(single, err, sizeof err);
    CHECK_MSG(g && st_gguf_shard_count(g) == 1 && st_gguf_tensor_count(g) == 2, "%s",
              g ? "wrong counts" : err);
    st_gguf_close(g);
    free(single);
    return test_result("gguf.split");
}
