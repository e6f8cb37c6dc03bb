/* SPDX-License-Identifier: Apache-2.0 */
/* Writes GGUF files with the streaming writer and reads them back: every metadata type,
 * arrays of every element type, typed-getter conversions, alignment, tensor infos and data
 * bytes; versions 2 and 3; the writer's own error paths (duplicates, bad shapes, too much or
 * too little data, disk full). */
#include <math.h>

#include "gguf_test.h"
#include "quant/quant.h"
#include "strata/backend.h"

typedef struct tdesc {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    int64_t ne[4];
    uint64_t expect_bytes; /* from the format's block sizes */
} tdesc;

static const tdesc TENSORS[] = {
    {"token_embd.weight", ST_TYPE_F32, 2, {8, 5, 1, 1}, 8 * 5 * 4},
    {"blk.0.attn_q.weight", ST_TYPE_F16, 2, {6, 3, 1, 1}, 6 * 3 * 2},
    {"blk.0.ffn_up.weight", ST_TYPE_Q4_0, 2, {64, 3, 1, 1}, 2 * 18 * 3},
    {"blk.0.ffn_down.weight", ST_TYPE_Q8_0, 3, {32, 2, 2, 1}, 34 * 2 * 2},
    {"blk.0.ffn_up_exps.weight", ST_TYPE_Q4_K, 3, {256, 2, 3, 1}, 144 * 2 * 3},
    {"blk.0.ffn_gate_exps.weight", ST_TYPE_Q6_K, 4, {256, 1, 2, 2}, 210 * 4},
    {"blk.0.bias", ST_TYPE_BF16, 1, {7, 1, 1, 1}, 14},
    {"ids", ST_TYPE_I32, 1, {3, 1, 1, 1}, 12},
    {"small", ST_TYPE_I8, 1, {1, 1, 1, 1}, 1},
    {"mxfp4", 39 /* MXFP4: a format type core/quant does not compute */, 2, {64, 2, 1, 1}, 68},
    {"iq2", 16 /* IQ2_XXS */, 1, {256, 1, 1, 1}, 66},
};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])

static uint8_t data_byte(size_t tensor, uint64_t k)
{
    return (uint8_t)(tensor * 131 + k * 7 + (k >> 8));
}

static const char *const STRS[] = {"", "a", "héllo wörld", "<0x0A>", "tab\there"};

static int write_model(const char *path, uint32_t version, uint32_t alignment, size_t chunk)
{
    st_gguf_writer *w = st_gguf_writer_new();
    int r = 0;
    if (version)
        r |= st_gguf_writer_set_version(w, version);
    if (alignment)
        r |= st_gguf_writer_set_alignment(w, alignment);
    r |= st_gguf_writer_set_str(w, "general.architecture", "llama");
    r |= st_gguf_writer_set_u8(w, "t.u8", 200);
    r |= st_gguf_writer_set_i8(w, "t.i8", -100);
    r |= st_gguf_writer_set_u16(w, "t.u16", 60000);
    r |= st_gguf_writer_set_i16(w, "t.i16", -30000);
    r |= st_gguf_writer_set_u32(w, "t.u32", 4000000000u);
    r |= st_gguf_writer_set_i32(w, "t.i32", -2000000000);
    r |= st_gguf_writer_set_u64(w, "t.u64", 0x1234567890abcdefull);
    r |= st_gguf_writer_set_i64(w, "t.i64", -0x123456789abcll);
    r |= st_gguf_writer_set_f32(w, "t.f32", 1e-5f);
    r |= st_gguf_writer_set_f64(w, "t.f64", 3.141592653589793);
    r |= st_gguf_writer_set_bool(w, "t.bool", true);
    r |= st_gguf_writer_set_str(w, "t.str", "héllo\nworld");
    r |= st_gguf_writer_set_str(w, "t.empty", "");
    r |= st_gguf_writer_set_u32(w, "t.replaced", 1);
    r |= st_gguf_writer_set_u32(w, "t.replaced", 2); /* replaces, keeps position */
    uint8_t au8[] = {1, 2, 255};
    int8_t ai8[] = {-1, 0, 127};
    uint16_t au16[] = {1, 65535};
    int16_t ai16[] = {-32768, 5};
    uint32_t au32[] = {7, 8, 9, 4294967295u};
    int32_t ai32[] = {-5, 0, 5};
    uint64_t au64[] = {1ull << 40};
    int64_t ai64[] = {-(1ll << 40), 3};
    float af32[] = {0.5f, -1.25f, 1e30f};
    double af64[] = {1e-300, 2.5};
    uint8_t abool[] = {1, 0, 7};
    r |= st_gguf_writer_set_arr(w, "a.u8", ST_GGUF_TYPE_U8, au8, 3);
    r |= st_gguf_writer_set_arr(w, "a.i8", ST_GGUF_TYPE_I8, ai8, 3);
    r |= st_gguf_writer_set_arr(w, "a.u16", ST_GGUF_TYPE_U16, au16, 2);
    r |= st_gguf_writer_set_arr(w, "a.i16", ST_GGUF_TYPE_I16, ai16, 2);
    r |= st_gguf_writer_set_arr(w, "a.u32", ST_GGUF_TYPE_U32, au32, 4);
    r |= st_gguf_writer_set_arr(w, "a.i32", ST_GGUF_TYPE_I32, ai32, 3);
    r |= st_gguf_writer_set_arr(w, "a.u64", ST_GGUF_TYPE_U64, au64, 1);
    r |= st_gguf_writer_set_arr(w, "a.i64", ST_GGUF_TYPE_I64, ai64, 2);
    r |= st_gguf_writer_set_arr(w, "a.f32", ST_GGUF_TYPE_F32, af32, 3);
    r |= st_gguf_writer_set_arr(w, "a.f64", ST_GGUF_TYPE_F64, af64, 2);
    r |= st_gguf_writer_set_arr(w, "a.bool", ST_GGUF_TYPE_BOOL, abool, 3);
    r |= st_gguf_writer_set_arr(w, "a.empty", ST_GGUF_TYPE_I32, NULL, 0);
    r |= st_gguf_writer_set_arr_str(w, "a.str", STRS, 5);
    for (size_t i = 0; i < N_TENSORS; i++)
        r |= st_gguf_writer_add_tensor(w, TENSORS[i].name, TENSORS[i].type, TENSORS[i].n_dims,
                                       TENSORS[i].ne);
    for (size_t i = 0; i < N_TENSORS; i++)
        CHECK(st_gguf_writer_tensor_nbytes(w, (int64_t)i) == TENSORS[i].expect_bytes);
    r |= st_gguf_writer_begin(w, path);
    /* the tensors' bytes concatenated, fed in chunks that split and span tensors */
    size_t total = 0;
    for (size_t i = 0; i < N_TENSORS; i++)
        total += TENSORS[i].expect_bytes;
    uint8_t *all = malloc(total);
    size_t o = 0;
    for (size_t i = 0; i < N_TENSORS; i++)
        for (uint64_t k = 0; k < TENSORS[i].expect_bytes; k++)
            all[o++] = data_byte(i, k);
    if (chunk == 0) {
        o = 0;
        for (size_t i = 0; i < N_TENSORS; i++) {
            r |= st_gguf_writer_write_tensor(w, TENSORS[i].name, all + o);
            o += TENSORS[i].expect_bytes;
        }
    } else {
        for (o = 0; o < total; o += chunk)
            r |= st_gguf_writer_write(w, all + o, o + chunk < total ? chunk : total - o);
    }
    r |= st_gguf_writer_finish(w);
    if (r)
        fprintf(stderr, "writer: %s\n", st_gguf_writer_error(w));
    st_gguf_writer_free(w);
    free(all);
    return r ? -1 : 0;
}

static void check_model(const char *path, uint32_t version, uint32_t alignment)
{
    char err[512];
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    if (!g)
        return;
    CHECK(st_gguf_version(g) == version);
    CHECK(st_gguf_alignment(g) == alignment);
    CHECK(st_gguf_shard_count(g) == 1);
    int64_t nkv = st_gguf_kv_count(g);
    CHECK(nkv == 28 + (alignment != 32));
    CHECK(strcmp(st_gguf_kv_key(g, alignment != 32), "general.architecture") == 0);
    if (alignment != 32)
        CHECK(strcmp(st_gguf_kv_key(g, 0), "general.alignment") == 0);
    CHECK(st_gguf_kv_key(g, nkv) == NULL && st_gguf_kv_key(g, -1) == NULL);

    /* exact values through st_gguf_kv_get */
    st_gguf_value v;
    CHECK(st_gguf_kv_get(g, st_gguf_kv_find(g, "t.u8"), &v) == 0 && v.type == ST_GGUF_TYPE_U8 &&
          v.v.u64 == 200);
    CHECK(st_gguf_kv_get(g, st_gguf_kv_find(g, "t.i8"), &v) == 0 && v.type == ST_GGUF_TYPE_I8 &&
          v.v.i64 == -100);
    CHECK(st_gguf_kv_get(g, st_gguf_kv_find(g, "t.u16"), &v) == 0 && v.v.u64 == 60000);
    CHECK(st_gguf_kv_get(g, st_gguf_kv_find(g, "t.i16"), &v) == 0 && v.v.i64 == -30000);
    CHECK(st_gguf_kv_get(g, st_gguf_kv_find(g, "t.u64"), &v) == 0 &&
          v.v.u64 == 0x1234567890abcdefull);
    CHECK(st_gguf_kv_get(g, st_gguf_kv_find(g, "t.i64"), &v) == 0 && v.v.i64 == -0x123456789abcll);
    CHECK(st_gguf_kv_get(g, st_gguf_kv_find(g, "missing"), &v) == ST_GGUF_ABSENT);
    CHECK(st_gguf_kv_find(g, "t.replaced") == 14 + (alignment != 32));

    /* typed getters and their conversions */
    uint32_t u32 = 0;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    float f32 = 0;
    double f64 = 0;
    bool b = false;
    const char *s = NULL;
    size_t slen = 0;
    CHECK(st_gguf_get_u32(g, "t.u32", &u32) == 0 && u32 == 4000000000u);
    CHECK(st_gguf_get_u32(g, "t.u8", &u32) == 0 && u32 == 200);           /* widening */
    CHECK(st_gguf_get_i32(g, "t.u16", &i32) == 0 && i32 == 60000);        /* unsigned -> signed */
    CHECK(st_gguf_get_i32(g, "t.u32", &i32) == ST_GGUF_WRONG_TYPE);       /* does not fit */
    CHECK(st_gguf_get_u32(g, "t.i8", &u32) == ST_GGUF_WRONG_TYPE);        /* negative */
    CHECK(st_gguf_get_u32(g, "t.u64", &u32) == ST_GGUF_WRONG_TYPE);       /* too big */
    CHECK(st_gguf_get_u64(g, "t.u64", &u64) == 0 && u64 == 0x1234567890abcdefull);
    CHECK(st_gguf_get_i64(g, "t.i32", &i64) == 0 && i64 == -2000000000);
    CHECK(st_gguf_get_i32(g, "t.i32", &i32) == 0 && i32 == -2000000000);
    CHECK(st_gguf_get_u32(g, "t.str", &u32) == ST_GGUF_WRONG_TYPE);
    CHECK(st_gguf_get_u32(g, "t.f32", &u32) == ST_GGUF_WRONG_TYPE);
    CHECK(st_gguf_get_u32(g, "nope", &u32) == ST_GGUF_ABSENT);
    CHECK(st_gguf_get_u32(g, "t.replaced", &u32) == 0 && u32 == 2);
    CHECK(st_gguf_get_f32(g, "t.f32", &f32) == 0 && f32 == 1e-5f);
    CHECK(st_gguf_get_f64(g, "t.f64", &f64) == 0 && f64 == 3.141592653589793);
    CHECK(st_gguf_get_f32(g, "t.f64", &f32) == 0 && f32 == (float)3.141592653589793);
    CHECK(st_gguf_get_f32(g, "t.u8", &f32) == ST_GGUF_WRONG_TYPE);
    CHECK(st_gguf_get_bool(g, "t.bool", &b) == 0 && b);
    CHECK(st_gguf_get_bool(g, "t.u8", &b) == ST_GGUF_WRONG_TYPE);
    CHECK(st_gguf_get_str(g, "t.str", &s, &slen) == 0 && strcmp(s, "héllo\nworld") == 0 &&
          slen == strlen("héllo\nworld"));
    CHECK(st_gguf_get_str(g, "t.empty", &s, &slen) == 0 && s[0] == 0 && slen == 0);
    CHECK(st_gguf_get_str(g, "t.u8", &s, NULL) == ST_GGUF_WRONG_TYPE);
    CHECK(st_gguf_get_str(g, "general.architecture", &s, NULL) == 0 && strcmp(s, "llama") == 0);

    /* defaults */
    CHECK(st_gguf_get_u32_or(g, "absent", 77, &u32) == 0 && u32 == 77);
    CHECK(st_gguf_get_u32_or(g, "t.u8", 77, &u32) == 0 && u32 == 200);
    CHECK(st_gguf_get_u32_or(g, "t.str", 77, &u32) == ST_GGUF_WRONG_TYPE && u32 == 77);
    CHECK(st_gguf_get_i32_or(g, "absent", -3, &i32) == 0 && i32 == -3);
    CHECK(st_gguf_get_u64_or(g, "absent", 9, &u64) == 0 && u64 == 9);
    CHECK(st_gguf_get_f32_or(g, "absent", 0.25f, &f32) == 0 && f32 == 0.25f);
    CHECK(st_gguf_get_f32_or(g, "t.f32", 0.25f, &f32) == 0 && f32 == 1e-5f);
    CHECK(st_gguf_get_bool_or(g, "absent", true, &b) == 0 && b);

    /* arrays */
    st_gguf_type et;
    uint64_t len;
    CHECK(st_gguf_get_arr(g, "a.u8", &et, &len) == 0 && et == ST_GGUF_TYPE_U8 && len == 3);
    CHECK(st_gguf_get_arr(g, "t.u8", &et, &len) == ST_GGUF_WRONG_TYPE);
    CHECK(st_gguf_get_arr(g, "a.empty", &et, &len) == 0 && et == ST_GGUF_TYPE_I32 && len == 0);
    CHECK(st_gguf_arr_i64(g, "a.u8", 2, &i64) == 0 && i64 == 255);
    CHECK(st_gguf_arr_i64(g, "a.u8", 3, &i64) == ST_GGUF_ABSENT);
    CHECK(st_gguf_arr_i64(g, "a.i8", 0, &i64) == 0 && i64 == -1);
    CHECK(st_gguf_arr_i64(g, "a.u16", 1, &i64) == 0 && i64 == 65535);
    CHECK(st_gguf_arr_i64(g, "a.i16", 0, &i64) == 0 && i64 == -32768);
    CHECK(st_gguf_arr_i64(g, "a.u32", 3, &i64) == 0 && i64 == 4294967295ll);
    CHECK(st_gguf_arr_i64(g, "a.i32", 0, &i64) == 0 && i64 == -5);
    CHECK(st_gguf_arr_i64(g, "a.u64", 0, &i64) == 0 && i64 == 1ll << 40);
    CHECK(st_gguf_arr_i64(g, "a.i64", 0, &i64) == 0 && i64 == -(1ll << 40));
    CHECK(st_gguf_arr_f32(g, "a.f32", 2, &f32) == 0 && f32 == 1e30f);
    CHECK(st_gguf_arr_f32(g, "a.f64", 1, &f32) == 0 && f32 == 2.5f);
    CHECK(st_gguf_arr_f32(g, "a.i32", 0, &f32) == ST_GGUF_WRONG_TYPE);
    CHECK(st_gguf_arr_get(g, st_gguf_kv_find(g, "a.bool"), 2, &v) == 0 &&
          v.type == ST_GGUF_TYPE_BOOL && v.v.u64 == 1);
    CHECK(st_gguf_arr_get(g, st_gguf_kv_find(g, "a.f64"), 0, &v) == 0 && v.v.f64 == 1e-300);
    CHECK(st_gguf_arr_get(g, st_gguf_kv_find(g, "t.u8"), 0, &v) == ST_GGUF_WRONG_TYPE);
    int32_t ci[4];
    float cf[3];
    CHECK(st_gguf_arr_copy_i32(g, "a.i32", ci, 3) == 0 && ci[0] == -5 && ci[1] == 0 && ci[2] == 5);
    CHECK(st_gguf_arr_copy_i32(g, "a.u8", ci, 3) == 0 && ci[2] == 255);
    CHECK(st_gguf_arr_copy_i32(g, "a.i32", ci, 4) == ST_GGUF_WRONG_TYPE); /* length */
    CHECK(st_gguf_arr_copy_i32(g, "a.u32", ci, 4) == ST_GGUF_WRONG_TYPE); /* 2^32-1 too big */
    CHECK(st_gguf_arr_copy_f32(g, "a.f32", cf, 3) == 0 && cf[0] == 0.5f && cf[1] == -1.25f);
    const uint8_t *raw = st_gguf_arr_data(g, st_gguf_kv_find(g, "a.u16"));
    CHECK(raw && raw[0] == 1 && raw[1] == 0 && raw[2] == 0xff && raw[3] == 0xff);
    CHECK(st_gguf_arr_data(g, st_gguf_kv_find(g, "a.str")) == NULL);
    CHECK(st_gguf_get_arr(g, "a.str", &et, &len) == 0 && et == ST_GGUF_TYPE_STRING && len == 5);
    for (uint64_t j = 0; j < 5; j++) {
        size_t l = 99;
        const char *e = st_gguf_arr_str(g, "a.str", j, &l);
        CHECK_MSG(e && strcmp(e, STRS[j]) == 0 && l == strlen(STRS[j]), "item %d", (int)j);
    }
    CHECK(st_gguf_arr_str(g, "a.str", 5, NULL) == NULL);
    CHECK(st_gguf_arr_str(g, "a.u8", 0, NULL) == NULL);

    /* tensors */
    CHECK(st_gguf_tensor_count(g) == (int64_t)N_TENSORS);
    const st_gguf_shard *sh = st_gguf_shard_at(g, 0);
    CHECK(sh && sh->data_offset % alignment == 0 && st_gguf_shard_at(g, 1) == NULL);
    uint64_t prev_end = 0;
    for (size_t i = 0; i < N_TENSORS; i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, (int64_t)i);
        const tdesc *d = &TENSORS[i];
        CHECK(t && strcmp(t->name, d->name) == 0);
        if (!t)
            continue;
        CHECK(st_gguf_tensor_find(g, d->name) == t && st_gguf_tensor_index(g, d->name) == (int64_t)i);
        CHECK(t->type == d->type && t->n_dims == d->n_dims);
        for (int k = 0; k < 4; k++)
            CHECK(t->ne[k] == d->ne[k]);
        CHECK_MSG(t->nbytes == d->expect_bytes, "%s: %llu", t->name, (unsigned long long)t->nbytes);
        CHECK(t->offset % alignment == 0 && t->offset >= sh->data_offset && t->offset >= prev_end);
        CHECK((const uint8_t *)t->data == (const uint8_t *)sh->base + t->offset);
        CHECK(t->shard == 0);
        prev_end = t->offset + t->nbytes;
        const uint8_t *p = t->data;
        uint64_t bad = 0;
        for (uint64_t k = 0; k < t->nbytes; k++)
            bad += p[k] != data_byte(i, k);
        CHECK_MSG(bad == 0, "%s: %llu bytes differ", t->name, (unsigned long long)bad);
        CHECK(st_gguf_advise(g, t, 0, t->nbytes, 3 /* ST_MAP_WILLNEED */) == 0);
    }
    CHECK(prev_end <= sh->size);
    CHECK(st_gguf_tensor_find(g, "nope") == NULL && st_gguf_tensor_index(g, "nope") == -1);
    CHECK(st_gguf_tensor_at(g, (int64_t)N_TENSORS) == NULL);
    st_gguf_close(g);
}

static void check_writer_errors(const char *dir)
{
    char *path = test_path(dir, "writer_err.gguf");
    int64_t ne[2] = {33, 2};
    st_gguf_writer *w = st_gguf_writer_new();
    CHECK(st_gguf_writer_add_tensor(w, "x", ST_TYPE_Q4_0, 2, ne) == -1); /* 33 % 32 */
    CHECK(strstr(st_gguf_writer_error(w), "block size") != NULL);
    CHECK(st_gguf_writer_set_u32(w, "k", 1) == -1); /* sticky error */
    st_gguf_writer_free(w);

    w = st_gguf_writer_new();
    ne[0] = 32;
    CHECK(st_gguf_writer_add_tensor(w, "x", ST_TYPE_F32, 2, ne) == 0);
    CHECK(st_gguf_writer_add_tensor(w, "x", ST_TYPE_F32, 2, ne) == -1);
    CHECK(strstr(st_gguf_writer_error(w), "duplicate") != NULL);
    st_gguf_writer_free(w);

    int64_t bad[2] = {4, 0};
    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_add_tensor(w, "z", ST_TYPE_F32, 2, bad) == -1);
    st_gguf_writer_free(w);
    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_add_tensor(w, "z", ST_TYPE_F32, 5, bad) == -1);
    st_gguf_writer_free(w);
    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_add_tensor(w, "z", 99 /* not a GGUF type */, 1, ne) == -1);
    st_gguf_writer_free(w);
    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_set_alignment(w, 48) == -1);
    st_gguf_writer_free(w);
    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_set_version(w, 1) == -1);
    st_gguf_writer_free(w);

    /* too much data, wrong tensor name, missing data: errors, and the partial file is removed */
    static const float buf[64];
    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_add_tensor(w, "a", ST_TYPE_F32, 1, ne) == 0);
    CHECK(st_gguf_writer_begin(w, path) == 0);
    CHECK(st_gguf_writer_add_tensor(w, "b", ST_TYPE_F32, 1, ne) == -1); /* after begin */
    st_gguf_writer_free(w);
    FILE *f = fopen(path, "rb");
    CHECK(f == NULL); /* removed: never finished */
    if (f)
        fclose(f);

    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_add_tensor(w, "a", ST_TYPE_F32, 1, ne) == 0);
    CHECK(st_gguf_writer_begin(w, path) == 0);
    CHECK(st_gguf_writer_write_tensor(w, "b", buf) == -1);
    CHECK(strstr(st_gguf_writer_error(w), "'a'") != NULL);
    st_gguf_writer_free(w);

    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_add_tensor(w, "a", ST_TYPE_F32, 1, ne) == 0);
    CHECK(st_gguf_writer_begin(w, path) == 0);
    CHECK(st_gguf_writer_write(w, buf, 32 * 4 + 1) == -1);
    CHECK(strstr(st_gguf_writer_error(w), "past the last") != NULL);
    st_gguf_writer_free(w);

    w = st_gguf_writer_new();
    CHECK(st_gguf_writer_add_tensor(w, "a", ST_TYPE_F32, 1, ne) == 0);
    CHECK(st_gguf_writer_begin(w, path) == 0);
    CHECK(st_gguf_writer_write(w, buf, 10) == 0);
    CHECK(st_gguf_writer_finish(w) == -1);
    CHECK(strstr(st_gguf_writer_error(w), "10 of 128 bytes") != NULL);
    st_gguf_writer_free(w);

    /* disk full: /dev/full fails every write with ENOSPC */
    f = fopen("/dev/full", "wb");
    if (f) {
        fclose(f);
        w = st_gguf_writer_new();
        int64_t big[2] = {1024, 1024};
        CHECK(st_gguf_writer_add_tensor(w, "a", ST_TYPE_F32, 2, big) == 0);
        float *zero = calloc(1024 * 1024, sizeof(float));
        int r = st_gguf_writer_begin(w, "/dev/full");
        if (r == 0)
            r = st_gguf_writer_write(w, zero, 1024 * 1024 * sizeof(float));
        if (r == 0)
            r = st_gguf_writer_finish(w);
        CHECK(r == -1);
        CHECK_MSG(strstr(st_gguf_writer_error(w), "No space") != NULL, "%s",
                  st_gguf_writer_error(w));
        st_gguf_writer_free(w); /* must not remove /dev/full */
        free(zero);
        struct stat st;
        CHECK(stat("/dev/full", &st) == 0);
    } else {
        printf("note: /dev/full absent, disk-full check not run\n");
    }
    free(path);
}

int main(int argc, char **argv)
{
    const char *dir = test_dir(argc, argv);
    char *p3 = test_path(dir, "roundtrip_v3.gguf");
    char *p2 = test_path(dir, "roundtrip_v2.gguf");
    char *pa = test_path(dir, "roundtrip_a64.gguf");
    char *pc = test_path(dir, "roundtrip_chunks.gguf");

    CHECK(write_model(p3, 0, 0, 0) == 0);
    check_model(p3, 3, 32);
    CHECK(write_model(p2, 2, 0, 0) == 0);
    check_model(p2, 2, 32);
    CHECK(write_model(pa, 3, 64, 0) == 0);
    check_model(pa, 3, 64);
    for (size_t chunk = 1; chunk <= 97; chunk += 48) {
        CHECK(write_model(pc, 3, 0, chunk) == 0);
        check_model(pc, 3, 32);
    }
    /* the three files with equal content but different chunking are byte-identical */
    size_t n1, n2;
    uint8_t *b1 = test_read_file(p3, &n1), *b2 = test_read_file(pc, &n2);
    CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0);
    /* v2 and v3 differ only in the version field */
    uint8_t *bv2 = test_read_file(p2, &n2);
    CHECK(bv2 && n1 == n2 && bv2[4] == 2 && b1[4] == 3 && memcmp(b1 + 5, bv2 + 5, n1 - 5) == 0);
    free(b1);
    free(b2);
    free(bv2);

    check_writer_errors(dir);
    free(p3);
    free(p2);
    free(pa);
    free(pc);
    return test_result("gguf.roundtrip");
}
