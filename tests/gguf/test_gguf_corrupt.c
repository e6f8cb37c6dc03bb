/* SPDX-License-Identifier: Apache-2.0 */
/* Corrupt files: a small valid file is generated, then broken in many ways. Every truncation,
 * every large-value corruption of a count, length, type or offset field, and a set of crafted
 * defects must give an error that names the problem; arbitrary bit flips and random
 * mutations must never crash or read outside the mapping (run under ASan too). */
#include <sys/mman.h>
#include <unistd.h>

#include "gguf_test.h"
#include "strata/backend.h"

enum kind { KEYLEN, VTYPE, STRLEN, ETYPE, ALEN, TNAMELEN, NDIMS, NE, TTYPE, TOFF, COUNT };

typedef struct field {
    uint64_t off;
    int width; /* 4 or 8 */
    enum kind kind;
    int item; /* KV or tensor number */
} field;

static field g_fields[256];
static int g_nfields;
static uint64_t g_data_offset;

static const char *g_dir;
static char *g_path; /* scratch file for mutated copies */
static int g_memfd = -1; /* in-memory file behind g_path when the system has memfd */

static uint64_t rd(const uint8_t *b, uint64_t off, int width)
{
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; i--)
        v = (v << 8) | b[off + (uint64_t)i];
    return v;
}

static void wr(uint8_t *b, uint64_t off, int width, uint64_t v)
{
    for (int i = 0; i < width; i++)
        b[off + (uint64_t)i] = (uint8_t)(v >> (8 * i));
}

static void rec(uint64_t off, int width, enum kind k, int item)
{
    g_fields[g_nfields++] = (field){off, width, k, item};
}

/* Records where every structural field of the (valid, known-shape) file lies. */
static void walk(const uint8_t *b)
{
    g_nfields = 0;
    rec(8, 8, COUNT, 0);
    rec(16, 8, COUNT, 1);
    uint64_t nt = rd(b, 8, 8), nkv = rd(b, 16, 8), o = 24;
    for (uint64_t i = 0; i < nkv; i++) {
        rec(o, 8, KEYLEN, (int)i);
        o += 8 + rd(b, o, 8);
        rec(o, 4, VTYPE, (int)i);
        uint32_t t = (uint32_t)rd(b, o, 4);
        o += 4;
        if (t == ST_GGUF_TYPE_STRING) {
            rec(o, 8, STRLEN, (int)i);
            o += 8 + rd(b, o, 8);
        } else if (t == ST_GGUF_TYPE_ARRAY) {
            uint32_t et = (uint32_t)rd(b, o, 4);
            rec(o, 4, ETYPE, (int)i);
            rec(o + 4, 8, ALEN, (int)i);
            uint64_t n = rd(b, o + 4, 8);
            o += 12;
            for (uint64_t j = 0; j < n; j++) {
                if (et == ST_GGUF_TYPE_STRING) {
                    rec(o, 8, STRLEN, (int)i);
                    o += 8 + rd(b, o, 8);
                } else {
                    o += et == ST_GGUF_TYPE_F32 ? 4 : 1;
                }
            }
        } else {
            o += 4; /* the sample's scalars are all 4 bytes */
        }
    }
    for (uint64_t i = 0; i < nt; i++) {
        rec(o, 8, TNAMELEN, (int)i);
        o += 8 + rd(b, o, 8);
        rec(o, 4, NDIMS, (int)i);
        uint32_t nd = (uint32_t)rd(b, o, 4);
        o += 4;
        for (uint32_t d = 0; d < nd; d++, o += 8)
            rec(o, 8, NE, (int)i);
        rec(o, 4, TTYPE, (int)i);
        rec(o + 4, 8, TOFF, (int)i);
        o += 12;
    }
    g_data_offset = (o + 31) / 32 * 32;
}

/* The valid sample: the last tensor's size is a multiple of the alignment, so the file ends
 * exactly where its data ends and every truncation removes needed bytes. */
static uint8_t *make_sample(size_t *size)
{
    char *p = test_path(g_dir, "corrupt_base.gguf");
    st_gguf_writer *w = st_gguf_writer_new();
    static const char *const toks[] = {"<s>", "</s>", "hello"};
    static const float scores[] = {0.f, -1.f, -2.5f, 3.f};
    st_gguf_writer_set_str(w, "general.architecture", "llama");
    st_gguf_writer_set_u32(w, "llama.block_count", 1);
    st_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
    st_gguf_writer_set_arr(w, "tokenizer.ggml.scores", ST_GGUF_TYPE_F32, scores, 4);
    st_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.f);
    int64_t ne_a[2] = {8, 2}, ne_q[1] = {32}, ne_b[1] = {8};
    st_gguf_writer_add_tensor(w, "a.weight", ST_TYPE_F32, 2, ne_a);  /* 64 bytes */
    st_gguf_writer_add_tensor(w, "q.weight", ST_TYPE_Q8_0, 1, ne_q); /* 34 bytes + 30 pad */
    st_gguf_writer_add_tensor(w, "b.weight", ST_TYPE_F32, 1, ne_b);  /* 32 bytes */
    st_gguf_writer_begin(w, p);
    uint8_t buf[64];
    for (int i = 0; i < 64; i++)
        buf[i] = (uint8_t)(i * 5 + 1);
    st_gguf_writer_write_tensor(w, "a.weight", buf);
    st_gguf_writer_write_tensor(w, "q.weight", buf);
    st_gguf_writer_write_tensor(w, "b.weight", buf);
    if (st_gguf_writer_finish(w))
        fprintf(stderr, "writer: %s\n", st_gguf_writer_error(w));
    st_gguf_writer_free(w);
    uint8_t *b = test_read_file(p, size);
    free(p);
    return b;
}

/* Writes b[0..n) to the scratch path and opens it. Returns 1 if it opened (and was fully
 * touched), 0 on an error (message in err). */
static int try_open(const uint8_t *b, size_t n, char *err, size_t errlen)
{
    if (g_memfd >= 0) {
        if (ftruncate(g_memfd, 0) != 0 || pwrite(g_memfd, b, n, 0) != (ssize_t)n) {
            fprintf(stderr, "cannot write the in-memory file\n");
            exit(1);
        }
    } else if (test_write_file(g_path, b, n)) {
        fprintf(stderr, "cannot write %s\n", g_path);
        exit(1);
    }
    err[0] = 0;
    st_gguf *g = st_gguf_open(g_path, err, errlen);
    if (!g) {
        CHECK_MSG(err[0] != 0, "error without a message");
        CHECK_MSG(strstr(err, g_path) != NULL, "error does not name the file: %s", err);
        return 0;
    }
    volatile uint64_t sum = test_touch_all(g);
    (void)sum;
    st_gguf_close(g);
    return 1;
}

static void expect(const uint8_t *b, size_t n, const char *needle, const char *what)
{
    char err[1024];
    int ok = try_open(b, n, err, sizeof err);
    CHECK_MSG(!ok, "%s: file opened but should not", what);
    if (!ok) {
        CHECK_MSG(strstr(err, needle) != NULL, "%s: error '%s' lacks '%s'", what, err, needle);
        printf("%-34s -> %s\n", what, err + strlen(g_path) + 2);
    }
}

static const field *find_field(enum kind k, int item, int nth)
{
    for (int i = 0; i < g_nfields; i++)
        if (g_fields[i].kind == k && g_fields[i].item == item && nth-- == 0)
            return &g_fields[i];
    return NULL;
}

static void crafted(const uint8_t *base, size_t n)
{
    uint8_t *b = malloc(n + 64);
#define RESET() memcpy(b, base, n)
    RESET();
    expect(b, 0, "too short", "empty file");
    b[0] = 'X';
    expect(b, n, "not a GGUF file", "bad magic");
    RESET();
    wr(b, 4, 4, 1);
    expect(b, n, "version 1", "version 1");
    wr(b, 4, 4, 4);
    expect(b, n, "version 4", "version 4");
    wr(b, 4, 4, 0x03000000u);
    expect(b, n, "big-endian", "big-endian file");
    RESET();
    wr(b, 8, 8, UINT64_MAX);
    expect(b, n, "tensor count", "huge tensor count");
    RESET();
    wr(b, 16, 8, 1ull << 40);
    expect(b, n, "metadata count", "huge metadata count");

    const field *f = find_field(VTYPE, 1, 0);
    RESET();
    wr(b, f->off, 4, 13);
    expect(b, n, "unknown value type 13", "unknown value type");
    f = find_field(ETYPE, 2, 0);
    RESET();
    wr(b, f->off, 4, 77);
    expect(b, n, "array element type 77", "unknown array element type");
    f = find_field(STRLEN, 0, 0);
    RESET();
    wr(b, f->off, 8, n);
    expect(b, n, "runs past the end of the file", "string length past end");
    f = find_field(STRLEN, 2, 1);
    RESET();
    wr(b, f->off, 8, 1ull << 62);
    expect(b, n, "item 1 of 3", "array string length past end");
    f = find_field(ALEN, 3, 0);
    RESET();
    wr(b, f->off, 8, 1ull << 61);
    expect(b, n, "runs past the end", "array length past end");
    /* duplicate key: "llama.rope.freq_base" and "general.architecture" have equal lengths */
    f = find_field(KEYLEN, 4, 0);
    RESET();
    CHECK(rd(b, f->off, 8) == 20);
    memcpy(b + f->off + 8, "general.architecture", 20);
    expect(b, n, "duplicate key 'general.architecture'", "duplicate key");
    f = find_field(NDIMS, 0, 0);
    RESET();
    wr(b, f->off, 4, 5);
    expect(b, n, "n_dims 5", "n_dims 5");
    wr(b, f->off, 4, 0);
    expect(b, n, "n_dims 0", "n_dims 0");
    f = find_field(NE, 0, 1);
    RESET();
    wr(b, f->off, 8, 0);
    expect(b, n, "is zero", "zero dimension");
    wr(b, f->off, 8, (uint64_t)-3);
    expect(b, n, "negative", "negative dimension");
    RESET();
    wr(b, find_field(NE, 0, 0)->off, 8, 1ull << 40);
    wr(b, f->off, 8, 1ull << 40);
    expect(b, n, "overflows", "element count overflow");
    f = find_field(NE, 1, 0);
    RESET();
    wr(b, f->off, 8, 16);
    expect(b, n, "block size 32", "Q8_0 row not whole blocks");
    f = find_field(TTYPE, 2, 0);
    RESET();
    wr(b, f->off, 4, 99);
    expect(b, n, "tensor type 99", "unknown tensor type");
    wr(b, f->off, 4, 4); /* an id the format retired */
    expect(b, n, "tensor type 4", "retired tensor type");
    f = find_field(TOFF, 2, 0);
    RESET();
    wr(b, f->off, 8, rd(b, f->off, 8) + 4);
    expect(b, n, "not a multiple of the alignment 32", "misaligned tensor");
    wr(b, f->off, 8, 0); /* b.weight onto a.weight */
    expect(b, n, "overlaps", "overlapping tensors");
    wr(b, f->off, 8, 4096);
    expect(b, n, "past end of file", "tensor past end of file");
    wr(b, f->off, 8, UINT64_MAX - 31);
    expect(b, n, "b.weight", "tensor offset overflow");
    /* duplicate tensor name: "b.weight" -> "a.weight" */
    f = find_field(TNAMELEN, 2, 0);
    RESET();
    b[f->off + 8] = 'a';
    expect(b, n, "duplicate tensor name 'a.weight'", "duplicate tensor name");
    b[f->off + 8] = 0;
    expect(b, n, "NUL", "NUL in tensor name");
    /* general.alignment that is not a power of two: "llama.block_count" (u32) becomes
     * "general.alignment", of the same length, so the layout is kept */
    RESET();
    f = find_field(KEYLEN, 1, 0);
    CHECK(rd(b, f->off, 8) == strlen("general.alignment"));
    memcpy(b + f->off + 8, "general.alignment", 17);
    f = find_field(VTYPE, 1, 0);
    wr(b, f->off + 4, 4, 48);
    expect(b, n, "general.alignment", "alignment 48");
    wr(b, f->off + 4, 4, 0);
    expect(b, n, "general.alignment", "alignment 0");
    wr(b, f->off + 4, 4, 64); /* valid, but the data section moves past the tensors' bytes */
    expect(b, n, "past end of file", "alignment 64 with 32-aligned data");
    (void)f;
    free(b);
#undef RESET
}

int main(int argc, char **argv)
{
    g_dir = test_dir(argc, argv);
    g_path = test_path(g_dir, "corrupt_case.gguf");
    size_t n;
    uint8_t *base = make_sample(&n);
    CHECK(base != NULL);
    if (!base)
        return test_result("gguf.corrupt");
    walk(base);
    /* mutated copies go to an in-memory file (opened by its /proc path) when possible */
    g_memfd = memfd_create("corrupt_case.gguf", MFD_CLOEXEC);
    if (g_memfd >= 0) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", g_memfd);
        if (access(p, R_OK) == 0) {
            free(g_path);
            g_path = malloc(strlen(p) + 1);
            strcpy(g_path, p);
        } else {
            close(g_memfd);
            g_memfd = -1;
        }
    }
    CHECK(g_data_offset + 64 + 64 + 32 == n);
    char err[1024];
    CHECK_MSG(try_open(base, n, err, sizeof err) == 1, "the valid sample does not open: %s", err);

    /* 1. every truncation fails */
    int opened = 0;
    for (size_t len = 0; len < n; len++)
        opened += try_open(base, len, err, sizeof err);
    CHECK_MSG(opened == 0, "%d truncated files opened", opened);
    printf("truncations: %zu tried, all refused\n", n);

    /* 2. large values in every count/length/offset/type field fail */
    uint8_t *b = malloc(n);
    int tried = 0;
    for (int i = 0; i < g_nfields; i++) {
        const field *f = &g_fields[i];
        int lo = f->width == 8 ? 32 : 8, hi = f->width * 8;
        for (int bit = lo; bit < hi; bit++) {
            memcpy(b, base, n);
            b[f->off + (uint64_t)bit / 8] ^= (uint8_t)(1u << (bit % 8));
            int ok = try_open(b, n, err, sizeof err);
            CHECK_MSG(!ok, "field kind %d at 0x%llx, bit %d: opened", f->kind,
                      (unsigned long long)f->off, bit);
            tried++;
        }
    }
    printf("high-bit flips in %d fields: %d tried, all refused\n", g_nfields, tried);

    /* 3. every single-bit flip in the header and the first data bytes: no crash */
    int refused = 0;
    tried = 0;
    for (uint64_t off = 0; off < g_data_offset + 16 && off < n; off++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(b, base, n);
            b[off] ^= (uint8_t)(1u << bit);
            refused += !try_open(b, n, err, sizeof err);
            tried++;
        }
    }
    printf("single-bit flips: %d tried, %d refused, the rest opened and read fully\n", tried,
           refused);
    CHECK(refused > 0);

    /* 4. random multi-byte mutations, with truncation or extension: no crash */
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    uint8_t *m = malloc(n + 256);
    refused = 0;
    for (int it = 0; it < 4000; it++) {
        memcpy(m, base, n);
        memset(m + n, 0, 256);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int edits = 1 + (int)(seed >> 60);
        for (int e = 0; e < edits; e++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t pos = (seed >> 33) % n;
            m[pos] = (uint8_t)(seed >> 13);
            if ((seed >> 7) % 4 == 0 && pos + 8 <= n) /* a whole field of 0xff or a small value */
                wr(m, pos, 8, (seed >> 9) % 2 ? UINT64_MAX : (seed >> 20) % 4096);
        }
        size_t len = n;
        if ((seed >> 3) % 3 == 0)
            len = (size_t)((seed >> 23) % (n + 256));
        refused += !try_open(m, len, err, sizeof err);
    }
    printf("random mutations: 4000 tried, %d refused\n", refused);
    free(m);
    free(b);

    /* 5. crafted defects with the expected message */
    crafted(base, n);

    /* files that are not GGUF at all */
    st_gguf *g = st_gguf_open("/nonexistent/x.gguf", err, sizeof err);
    CHECK(!g && strstr(err, "cannot open") && strstr(err, "/nonexistent/x.gguf"));
    g = st_gguf_open(g_dir, err, sizeof err);
    CHECK(!g && strstr(err, "not a regular file"));
    g = st_gguf_open("/nonexistent/y.gguf", NULL, 0); /* no error buffer: still no crash */
    CHECK(g == NULL);
    st_gguf_close(g);

    free(base);
    free(g_path);
    if (g_memfd >= 0)
        close(g_memfd);
    return test_result("gguf.corrupt");
}
