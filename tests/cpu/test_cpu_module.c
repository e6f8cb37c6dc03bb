/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU module against the scalar oracle (core/ref): loads a built module file (argv[1]) with
 * a worker count (argv[2]), checks identity/probe, then runs every op on random inputs and
 * compares with st_ref_* under normalized error thresholds. Also checks batch invariance (row i
 * of a batched MATMUL / MOE_MATMUL equals the single-row result bit for bit), equality across
 * thread counts, argument validation and that op_supported matches what runs.
 * Exit 0 = pass, 1 = failures, 77 = this CPU cannot run the module (skip). */
#include <dirent.h>
#include <unistd.h>

#include "cpu_test_util.h"
#include "ref/ref.h"
#include "st_check.h"

static const st_backend_api *api;
static st_device *dev;
static st_stream *stream;
static st_device *dev_alt; /* a second open with another thread count */
static st_stream *stream_alt;

static const uint32_t k_wtypes[] = {ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0,   ST_TYPE_Q4_1,
                                    ST_TYPE_Q5_0, ST_TYPE_Q5_1, ST_TYPE_Q8_0, ST_TYPE_Q2_K,   ST_TYPE_Q3_K,
                                    ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_NL, ST_TYPE_IQ4_XS};
#define N_WTYPES (sizeof k_wtypes / sizeof k_wtypes[0])
/* Types the x86 modules repack into x8 groups (matrices with a multiple of 8 rows). */
static const uint32_t k_x8types[] = {ST_TYPE_Q4_0, ST_TYPE_Q5_0, ST_TYPE_Q8_0,  ST_TYPE_Q4_K,
                                     ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_XS};
#define N_X8TYPES (sizeof k_x8types / sizeof k_x8types[0])
static const uint32_t k_acts[] = {ST_TYPE_F32, ST_TYPE_F16, ST_TYPE_BF16};

static int is_float_type(uint32_t t) { return t == ST_TYPE_F32 || t == ST_TYPE_F16 || t == ST_TYPE_BF16; }

/* K that fits the type's block and exercises tails: float types get an odd K. */
static int64_t pick_k(uint32_t t) {
    int bs = st_type_get(t)->block_size;
    return bs == 1 ? 77 : bs == 32 ? 288 : 512;
}

/* Random weight matrix [rows][K] of type t (quantized by the reference quantizer). */
static void *make_weights(uint32_t t, int64_t rows, int64_t K) {
    size_t rs = st_row_size(t, K);
    uint8_t *w = malloc(rs * (size_t)rows);
    float *f = malloc(sizeof(float) * (size_t)K);
    for (int64_t r = 0; r < rows; r++) {
        ct_fill(f, K, 1.0f);
        ST_CHECK(st_quantize_row(t, f, w + rs * (size_t)r, K) == 0);
    }
    free(f);
    return w;
}

static void *make_act(uint32_t t, int64_t n, float scale) {
    float *f = malloc(sizeof(float) * (size_t)n);
    ct_fill(f, n, scale);
    void *x = malloc(ct_act_size(t) * (size_t)n + 16);
    ct_to_act(t, f, x, n);
    free(f);
    return x;
}

static double tol_for(uint32_t wt) { return is_float_type(wt) ? 1e-9 : 3e-4; }

/* ---------------------------------------------------------------- identity */

static int test_identity(void) {
    ST_CHECK(api->size >= sizeof(st_backend_api));
    ST_CHECK(strcmp(api->name, "cpu") == 0);
    st_probe_report rep = {.size = sizeof rep};
    st_status s = api->probe(&rep);
    ST_CHECK(rep.n_devices == 1);
    st_device_props p = {.size = sizeof p};
    ST_CHECK(api->device_props(0, &p) == ST_OK);
    if (s != ST_OK) {
        ST_CHECK(!p.usable && p.reason[0]);
        ST_CHECK(api->device_open(0, &dev) == ST_ARCH);
        printf("module unusable on this CPU: %s\n", p.reason);
        return 0;
    }
    ST_CHECK(p.usable);
    ST_CHECK(strncmp(p.name, "Host CPU (", 10) == 0);
    ST_CHECK(strcmp(p.vendor, "cpu") == 0);
    ST_CHECK(strcmp(p.arch, "x86-64-v3") == 0 || strcmp(p.arch, "x86-64-v4") == 0);
    ST_CHECK(p.mem_total > (64ull << 20) && p.mem_free > 0 && p.mem_free <= p.mem_total);
    ST_CHECK(p.n_cores >= 1 && p.n_cores == (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
    ST_CHECK(p.caps & ST_CAP_UNIFIED);
    ST_CHECK(rep.build_archs[0] != 0);
    ST_CHECK(api->device_props(1, &p) == ST_INVALID);
    ST_CHECK(api->last_error()[0] != 0);
    return 1;
}

/* ---------------------------------------------------------------- op_supported */

static void test_op_supported(void) {
    for (size_t i = 0; i < N_WTYPES; i++) {
        ST_CHECK(api->op_supported(0, ST_OP_MATMUL, k_wtypes[i]));
        ST_CHECK(api->op_supported(0, ST_OP_MOE_MATMUL, k_wtypes[i]));
        ST_CHECK(api->op_supported(0, ST_OP_GET_ROWS, k_wtypes[i]));
    }
    ST_CHECK(!api->op_supported(0, ST_OP_MATMUL, ST_TYPE_Q8_K));
    ST_CHECK(!api->op_supported(0, ST_OP_MATMUL, ST_TYPE_I32));
    ST_CHECK(!api->op_supported(1, ST_OP_MATMUL, ST_TYPE_F32));
    ST_CHECK(!api->op_supported(0, ST_OP_COUNT, ST_TYPE_F32));
    for (uint32_t op = 0; op < ST_OP_COUNT; op++)
        for (uint32_t t = 0; t < ST_TYPE_COUNT; t++)
            if (api->op_supported(0, op, t))
                ST_CHECK_MSG(st_ref_op_supported(op, t), "op %u type %s claimed but the oracle has none", op,
                             st_type_name(t));
    /* an unsupported weight type is refused, not run */
    float x[256], out[4];
    uint8_t w[4 * 292];
    memset(w, 0, sizeof w);
    ct_fill(x, 256, 1.0f);
    st_matmul_args a = {.size = sizeof a};
    a.w = ct_tensor(w, ST_TYPE_Q8_K, 256, 4, 1);
    a.x = ct_tensor(x, ST_TYPE_F32, 256, 1, 1);
    a.out = ct_tensor(out, ST_TYPE_F32, 4, 1, 1);
    ST_CHECK(api->ops->matmul(stream, &a) == ST_UNSUPPORTED);
}

/* ---------------------------------------------------------------- MATMUL */

static void matmul_case(uint32_t wt, uint32_t xt, uint32_t ot, int64_t M, int64_t n, int strided) {
    int64_t K = pick_k(wt);
    void *w = make_weights(wt, M, K);
    size_t xrow = ct_act_size(xt) * (size_t)K + (strided ? 40 : 0);
    uint8_t *x = malloc(xrow * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        void *r = make_act(xt, K, 2.0f);
        memcpy(x + xrow * (size_t)i, r, ct_act_size(xt) * (size_t)K);
        free(r);
    }
    size_t osz = ct_act_size(ot);
    uint8_t *out = malloc(osz * (size_t)(M * n));
    memset(out, 0xff, osz * (size_t)(M * n));
    float *ref = malloc(sizeof(float) * (size_t)(M * n)), *got = malloc(sizeof(float) * (size_t)(M * n));
    st_matmul_args a = {.size = sizeof a};
    a.w = ct_tensor(w, wt, K, M, 1);
    a.x = ct_tensor(x, xt, K, n, 1);
    a.x.nb[1] = (int64_t)xrow;
    a.x.nb[2] = a.x.nb[3] = (int64_t)xrow * n;
    a.out = ct_tensor(out, ot, M, n, 1);
    ST_CHECK(api->ops->matmul(stream, &a) == ST_OK);
    st_matmul_args r = a;
    r.out = ct_tensor(ref, ST_TYPE_F32, M, n, 1);
    ST_CHECK(st_ref_matmul(&r) == ST_OK);
    ct_from_act(ot, out, got, M * n);
    double e = ct_nmse(got, ref, M * n);
    double tol = tol_for(wt) + (ot != ST_TYPE_F32 ? 3e-5 : 0);
    ST_CHECK_MSG(e < tol, "matmul %s x %s -> %s M=%lld K=%lld n=%lld: nmse %.3g (tol %.3g)", st_type_name(wt),
                 st_type_name(xt), st_type_name(ot), (long long)M, (long long)K, (long long)n, e, tol);
    /* batch invariance: every row alone gives the same bits */
    uint8_t *one = malloc(osz * (size_t)M);
    for (int64_t i = 0; i < n; i++) {
        st_matmul_args b = a;
        b.x.data = x + xrow * (size_t)i;
        b.x.ne[1] = 1;
        b.out = ct_tensor(one, ot, M, 1, 1);
        ST_CHECK(api->ops->matmul(stream, &b) == ST_OK);
        ST_CHECK_MSG(memcmp(one, out + osz * (size_t)(M * i), osz * (size_t)M) == 0,
                     "matmul %s: row %lld of %lld differs from the single-row result", st_type_name(wt), (long long)i,
                     (long long)n);
    }
    /* another thread count gives the same bits */
    if (dev_alt) {
        uint8_t *out2 = malloc(osz * (size_t)(M * n));
        st_matmul_args c = a;
        c.out.data = out2;
        ST_CHECK(api->ops->matmul(stream_alt, &c) == ST_OK);
        ST_CHECK_MSG(memcmp(out2, out, osz * (size_t)(M * n)) == 0, "matmul %s: thread counts disagree",
                     st_type_name(wt));
        free(out2);
    }
    free(one);
    free(w);
    free(x);
    free(out);
    free(ref);
    free(got);
}

static void test_matmul(void) {
    static const int64_t ns[] = {1, 2, 5, 8, 9, 21};
    for (size_t i = 0; i < N_WTYPES; i++) {
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
            matmul_case(k_wtypes[i], k_acts[j % 3], ST_TYPE_F32, 37, ns[j], 0);
        matmul_case(k_wtypes[i], ST_TYPE_F32, ST_TYPE_F16, 19, 3, 1);
        matmul_case(k_wtypes[i], ST_TYPE_BF16, ST_TYPE_BF16, 64, 12, 1);
    }
    /* a large-ish prefill shape to cross chunk boundaries with several threads */
    matmul_case(ST_TYPE_Q4_K, ST_TYPE_F32, ST_TYPE_F32, 300, 40, 0);
    /* rows a multiple of 8: the repacked (x8 group) path, decode and prefill sizes */
    for (int64_t n = 1; n <= 21; n += 4)
        for (size_t i = 0; i < N_X8TYPES; i++) matmul_case(k_x8types[i], ST_TYPE_F32, ST_TYPE_F32, 96, n, 0);
    matmul_case(ST_TYPE_Q8_0, ST_TYPE_F32, ST_TYPE_F32, 300, 40, 0);
    /* shape errors are refused with a text */
    float x[64], o[8];
    uint8_t w[8 * 34];
    memset(w, 0, sizeof w);
    st_matmul_args a = {.size = sizeof a};
    a.w = ct_tensor(w, ST_TYPE_Q8_0, 32, 8, 1);
    a.x = ct_tensor(x, ST_TYPE_F32, 64, 1, 1);
    a.out = ct_tensor(o, ST_TYPE_F32, 8, 1, 1);
    ST_CHECK(api->ops->matmul(stream, &a) == ST_INVALID);
    ST_CHECK(strstr(api->last_error(), "matmul") != NULL);
    a.x = ct_tensor(x, ST_TYPE_I32, 32, 1, 1);
    ST_CHECK(api->ops->matmul(stream, &a) == ST_INVALID);
    /* an empty batch is fine and writes nothing */
    a.x = ct_tensor(x, ST_TYPE_F32, 32, 0, 1);
    a.out = ct_tensor(o, ST_TYPE_F32, 8, 0, 1);
    o[0] = 42.0f;
    ST_CHECK(api->ops->matmul(stream, &a) == ST_OK);
    ST_CHECK(o[0] == 42.0f);
}

/* Every type the x86 modules repack (which covers every matrix type of llama-quantize's Q4_K_M
 * and Q5_K_M files: Q4_K, Q5_K, Q6_K, Q5_0, Q8_0) is repacked on first use: the device holds
 * at least the matrix's bytes more afterwards; a type without x8 kernels is not. */
static void test_repacked(void) {
    static const uint32_t in_place[] = {ST_TYPE_Q4_1, ST_TYPE_Q3_K};
    st_device_props p = {.size = sizeof p};
    ST_CHECK(api->device_props(0, &p) == ST_OK);
    if (p.mem_free < (3ull << 30)) { /* the module keeps max(1 GiB, 10%) of RAM free */
        printf("note: repack checks not run: %.1f GiB free\n", (double)p.mem_free / (1 << 30));
        return;
    }
    for (size_t i = 0; i < N_X8TYPES + 2; i++) {
        uint32_t wt = i < N_X8TYPES ? k_x8types[i] : in_place[i - N_X8TYPES];
        int64_t K = pick_k(wt), M = 40; /* a shape no other case uses: a fresh matrix */
        void *w = make_weights(wt, M, K);
        float *x = make_act(ST_TYPE_F32, K, 1.0f), out[40];
        st_matmul_args a = {.size = sizeof a};
        a.w = ct_tensor(w, wt, K, M, 1);
        a.x = ct_tensor(x, ST_TYPE_F32, K, 1, 1);
        a.out = ct_tensor(out, ST_TYPE_F32, M, 1, 1);
        ST_CHECK(api->device_props(0, &p) == ST_OK);
        uint64_t before = p.mem_used_self;
        ST_CHECK(api->ops->matmul(stream, &a) == ST_OK);
        ST_CHECK(api->device_props(0, &p) == ST_OK);
        uint64_t grew = p.mem_used_self - before, src = st_row_size(wt, K) * (uint64_t)M;
        if (i < N_X8TYPES)
            ST_CHECK_MSG(grew >= src, "%s: %llu bytes more after the first matmul, expected a repacked copy of %llu",
                         st_type_name(wt), (unsigned long long)grew, (unsigned long long)src);
        else
            ST_CHECK_MSG(grew == 0, "%s has no x8 kernels but %llu bytes were added", st_type_name(wt),
                         (unsigned long long)grew);
        free(w);
        free(x);
    }
}

/* ---------------------------------------------------------------- MOE_MATMUL */

static void moe_case(uint32_t wt, int64_t n_assign, int64_t n_slots, int64_t n_expert, int64_t M, int64_t n_x) {
    int64_t K = pick_k(wt);
    void *w = make_weights(wt, n_slots * M, K);
    void *x = make_act(ST_TYPE_F32, n_x * K, 2.0f);
    int32_t slot_table[64];
    for (int64_t e = 0; e < n_expert; e++) slot_table[e] = e < n_slots ? (int32_t)(n_slots - 1 - e) : -1;
    int32_t *expert = malloc(sizeof(int32_t) * (size_t)n_assign), *x_row = malloc(sizeof(int32_t) * (size_t)n_assign);
    float *scale = malloc(sizeof(float) * (size_t)n_assign);
    for (int64_t i = 0; i < n_assign; i++) {
        expert[i] = (int32_t)(ct_rand_u32() % n_expert);
        x_row[i] = (int32_t)(ct_rand_u32() % n_x);
        scale[i] = 0.5f + ct_randf() * 0.25f;
    }
    float *out = malloc(sizeof(float) * (size_t)(M * n_assign)), *ref = malloc(sizeof(float) * (size_t)(M * n_assign));
    for (int64_t i = 0; i < M * n_assign; i++) out[i] = ref[i] = 1234.5f; /* poison: skipped rows keep it */
    st_moe_matmul_args a = {.size = sizeof a, .n_assign = (int32_t)n_assign};
    a.w = ct_tensor(w, wt, K, M, n_slots);
    a.x = ct_tensor(x, ST_TYPE_F32, K, n_x, 1);
    a.out = ct_tensor(out, ST_TYPE_F32, M, n_assign, 1);
    a.slot_table = slot_table;
    a.expert = expert;
    a.x_row = x_row;
    a.scale = scale;
    ST_CHECK(api->ops->moe_matmul(stream, &a) == ST_OK);
    st_moe_matmul_args r = a;
    r.out.data = ref;
    ST_CHECK(st_ref_moe_matmul(&r) == ST_OK);
    double e = ct_nmse(out, ref, M * n_assign);
    ST_CHECK_MSG(e < tol_for(wt), "moe_matmul %s n_assign=%lld: nmse %.3g", st_type_name(wt), (long long)n_assign, e);
    for (int64_t i = 0; i < n_assign; i++)
        if (slot_table[expert[i]] < 0) ST_CHECK(out[i * M] == 1234.5f && out[i * M + M - 1] == 1234.5f);
    /* each assignment alone gives the same bits */
    float one[128];
    for (int64_t i = 0; i < n_assign; i++) {
        if (slot_table[expert[i]] < 0) continue;
        st_moe_matmul_args b = a;
        b.n_assign = 1;
        b.expert = expert + i;
        b.x_row = x_row + i;
        b.scale = scale + i;
        b.out = ct_tensor(one, ST_TYPE_F32, M, 1, 1);
        ST_CHECK(api->ops->moe_matmul(stream, &b) == ST_OK);
        ST_CHECK_MSG(memcmp(one, out + i * M, sizeof(float) * (size_t)M) == 0, "moe_matmul %s: assignment %lld differs alone",
                     st_type_name(wt), (long long)i);
    }
    if (dev_alt) {
        float *out2 = malloc(sizeof(float) * (size_t)(M * n_assign));
        memcpy(out2, ref, sizeof(float) * (size_t)(M * n_assign));
        for (int64_t i = 0; i < M * n_assign; i++) out2[i] = 1234.5f;
        st_moe_matmul_args c = a;
        c.out.data = out2;
        ST_CHECK(api->ops->moe_matmul(stream_alt, &c) == ST_OK);
        ST_CHECK(memcmp(out2, out, sizeof(float) * (size_t)(M * n_assign)) == 0);
        free(out2);
    }
    /* every expert elsewhere: nothing computed, nothing written */
    {
        int32_t none[64];
        for (int e = 0; e < 64; e++) none[e] = -1;
        st_moe_matmul_args c = a;
        c.slot_table = none;
        out[0] = 99.0f;
        ST_CHECK(api->ops->moe_matmul(stream, &c) == ST_OK);
        ST_CHECK(out[0] == 99.0f);
    }
    /* a slot outside the weights is refused */
    slot_table[n_expert - 1] = (int32_t)n_slots;
    expert[0] = (int32_t)(n_expert - 1);
    ST_CHECK(api->ops->moe_matmul(stream, &a) == ST_INVALID);
    free(w);
    free(x);
    free(expert);
    free(x_row);
    free(scale);
    free(out);
    free(ref);
}

static void test_moe_matmul(void) {
    for (size_t i = 0; i < N_WTYPES; i++) {
        moe_case(k_wtypes[i], 1, 4, 6, 29, 5);
        moe_case(k_wtypes[i], 8, 4, 6, 29, 5);
        moe_case(k_wtypes[i], 40, 4, 6, 29, 5);
        moe_case(k_wtypes[i], 48, 20, 32, 33, 6);
        moe_case(k_wtypes[i], 160, 8, 8, 64, 40);
    }
    /* the repacked path: one token's 8 experts (decode), then 8 tokens' (a small batch) */
    for (size_t i = 0; i < N_X8TYPES; i++) {
        moe_case(k_x8types[i], 8, 8, 8, 32, 1);
        moe_case(k_x8types[i], 64, 8, 8, 32, 8);
    }
}

/* ---------------------------------------------------------------- GET_ROWS */

static void test_get_rows(void) {
    for (size_t i = 0; i < N_WTYPES; i++) {
        uint32_t wt = k_wtypes[i];
        int64_t K = pick_k(wt), rows = 7, n = 5;
        void *w = make_weights(wt, rows, K);
        int32_t ids[5] = {6, 0, 3, 3, 1};
        for (size_t o = 0; o < 3; o++) {
            uint32_t ot = k_acts[o];
            size_t bytes = ct_act_size(ot) * (size_t)(K * n);
            void *out = malloc(bytes), *ref = malloc(bytes);
            st_get_rows_args a = {.size = sizeof a};
            a.w = ct_tensor(w, wt, K, rows, 1);
            a.ids = ids;
            a.out = ct_tensor(out, ot, K, n, 1);
            ST_CHECK(api->ops->get_rows(stream, &a) == ST_OK);
            a.out.data = ref;
            ST_CHECK(st_ref_get_rows(&a) == ST_OK);
            ST_CHECK_MSG(memcmp(out, ref, bytes) == 0, "get_rows %s -> %s differs", st_type_name(wt), st_type_name(ot));
            free(out);
            free(ref);
        }
        free(w);
    }
    float w[4 * 8], out[8];
    int32_t bad = 4;
    st_get_rows_args a = {.size = sizeof a};
    a.w = ct_tensor(w, ST_TYPE_F32, 8, 4, 1);
    a.ids = &bad;
    a.out = ct_tensor(out, ST_TYPE_F32, 8, 1, 1);
    ST_CHECK(api->ops->get_rows(stream, &a) == ST_INVALID);
}

/* ---------------------------------------------------------------- row-wise ops */

static void compare_act(const char *what, uint32_t t, const void *got, const void *ref, int64_t n, double tol) {
    float *g = malloc(sizeof(float) * (size_t)n), *r = malloc(sizeof(float) * (size_t)n);
    ct_from_act(t, got, g, n);
    ct_from_act(t, ref, r, n);
    double e = ct_nmse(g, r, n);
    if (t != ST_TYPE_F32) tol += t == ST_TYPE_F16 ? 1e-6 : 1e-4; /* one rounding step apart at most */
    ST_CHECK_MSG(e <= tol, "%s (%s): nmse %.3g (tol %.3g)", what, st_type_name(t), e, tol);
    free(g);
    free(r);
}

static void test_rowwise(void) {
    const int64_t n = 6, K = 200;
    for (size_t ti = 0; ti < 3; ti++) {
        uint32_t t = k_acts[ti];
        size_t bytes = ct_act_size(t) * (size_t)(n * K);
        void *x = make_act(t, n * K, 3.0f), *y = make_act(t, n * K, 3.0f), *b1 = make_act(t, K, 1.0f);
        void *o1 = malloc(bytes), *o2 = malloc(bytes), *s1 = malloc(bytes), *s2 = malloc(bytes);
        float wgt[200];
        ct_fill(wgt, K, 1.0f);
        /* RMS norm with residual, sum_out and weight */
        st_rms_norm_args rn = {.size = sizeof rn, .eps = 1e-5f};
        rn.x = ct_tensor(x, t, K, n, 1);
        rn.residual = ct_tensor(y, t, K, n, 1);
        rn.sum_out = ct_tensor(s1, t, K, n, 1);
        rn.weight = ct_tensor(wgt, ST_TYPE_F32, K, 1, 1);
        rn.out = ct_tensor(o1, t, K, n, 1);
        ST_CHECK(api->ops->rms_norm(stream, &rn) == ST_OK);
        rn.sum_out.data = s2;
        rn.out.data = o2;
        ST_CHECK(st_ref_rms_norm(&rn) == ST_OK);
        compare_act("rms_norm", t, o1, o2, n * K, 1e-11);
        compare_act("rms_norm sum_out", t, s1, s2, n * K, 1e-13);
        /* plain RMS norm, in place */
        memcpy(o1, x, bytes);
        memcpy(o2, x, bytes);
        st_rms_norm_args rp = {.size = sizeof rp, .eps = 1e-6f};
        rp.x = rp.out = ct_tensor(o1, t, K, n, 1);
        ST_CHECK(api->ops->rms_norm(stream, &rp) == ST_OK);
        rp.x = rp.out = ct_tensor(o2, t, K, n, 1);
        ST_CHECK(st_ref_rms_norm(&rp) == ST_OK);
        compare_act("rms_norm in place", t, o1, o2, n * K, 1e-11);
        /* SWIGLU */
        st_swiglu_args sw = {.size = sizeof sw};
        sw.gate = ct_tensor(x, t, K, n, 1);
        sw.up = ct_tensor(y, t, K, n, 1);
        sw.out = ct_tensor(o1, t, K, n, 1);
        ST_CHECK(api->ops->swiglu(stream, &sw) == ST_OK);
        sw.out.data = o2;
        ST_CHECK(st_ref_swiglu(&sw) == ST_OK);
        compare_act("swiglu", t, o1, o2, n * K, 1e-11);
        /* ADD (full and broadcast), SCALE, CONVERT, MUL_ROWS */
        st_binary_args ba = {.size = sizeof ba, .s = -0.75f};
        ba.a = ct_tensor(x, t, K, n, 1);
        ba.b = ct_tensor(y, t, K, n, 1);
        ba.out = ct_tensor(o1, t, K, n, 1);
        ST_CHECK(api->ops->add(stream, &ba) == ST_OK);
        ba.out.data = o2;
        ST_CHECK(st_ref_add(&ba) == ST_OK);
        compare_act("add", t, o1, o2, n * K, 1e-13);
        ba.b = ct_tensor(b1, t, K, 1, 1);
        ba.out.data = o1;
        ST_CHECK(api->ops->add(stream, &ba) == ST_OK);
        ba.out.data = o2;
        ST_CHECK(st_ref_add(&ba) == ST_OK);
        compare_act("add broadcast", t, o1, o2, n * K, 1e-13);
        ba.out.data = o1;
        ST_CHECK(api->ops->scale(stream, &ba) == ST_OK);
        ba.out.data = o2;
        ST_CHECK(st_ref_scale(&ba) == ST_OK);
        compare_act("scale", t, o1, o2, n * K, 1e-13);
        for (size_t u = 0; u < 3; u++) {
            uint32_t ot = k_acts[u];
            size_t ob = ct_act_size(ot) * (size_t)(n * K);
            void *c1 = malloc(ob), *c2 = malloc(ob);
            st_binary_args cv = ba;
            cv.out = ct_tensor(c1, ot, K, n, 1);
            ST_CHECK(api->ops->convert(stream, &cv) == ST_OK);
            cv.out.data = c2;
            ST_CHECK(st_ref_convert(&cv) == ST_OK);
            ST_CHECK_MSG(memcmp(c1, c2, ob) == 0, "convert %s -> %s differs", st_type_name(t), st_type_name(ot));
            free(c1);
            free(c2);
        }
        float f[6] = {0.5f, -2.0f, 1.0f, 0.0f, 3.0f, -0.25f};
        for (int sig = 0; sig < 2; sig++) {
            st_binary_args mr = ba;
            mr.b = ct_tensor(f, ST_TYPE_F32, 3, 2, 1);
            mr.sigmoid = sig;
            mr.out.data = o1;
            ST_CHECK(api->ops->mul_rows(stream, &mr) == ST_OK);
            mr.out.data = o2;
            ST_CHECK(st_ref_mul_rows(&mr) == ST_OK);
            compare_act("mul_rows", t, o1, o2, n * K, 1e-12);
        }
        /* MOE_COMBINE: 3 tokens, k = 2, rows of y, with accumulate */
        {
            int32_t row_of[6] = {0, 5, -1, 2, 4, 4};
            float wts[6] = {0.7f, 0.3f, 1.0f, 0.5f, 0.25f, -0.5f};
            memcpy(o1, x, bytes);
            memcpy(o2, x, bytes);
            for (int acc = 0; acc < 2; acc++) {
                st_moe_combine_args mc = {.size = sizeof mc, .k = 2, .accumulate = acc};
                mc.rows = ct_tensor(y, t, K, n, 1);
                mc.out = ct_tensor(o1, t, K, 3, 1);
                mc.row_of = row_of;
                mc.weights = wts;
                ST_CHECK(api->ops->moe_combine(stream, &mc) == ST_OK);
                mc.out.data = o2;
                ST_CHECK(st_ref_moe_combine(&mc) == ST_OK);
                compare_act("moe_combine", t, o1, o2, 3 * K, 1e-12);
            }
        }
        free(x);
        free(y);
        free(b1);
        free(o1);
        free(o2);
        free(s1);
        free(s2);
    }
}

/* ---------------------------------------------------------------- ROPE / KV / ATTENTION */

static void test_rope(void) {
    const int64_t n = 5, nh = 3, hd = 64;
    int32_t pos[5] = {0, 1, 17, 300, 4095};
    for (size_t ti = 0; ti < 3; ti++) {
        uint32_t t = k_acts[ti];
        size_t bytes = ct_act_size(t) * (size_t)(n * nh * hd);
        void *x = make_act(t, n * nh * hd, 1.0f), *o1 = malloc(bytes), *o2 = malloc(bytes);
        for (int mode = 0; mode < 2; mode++)
            for (int yarn = 0; yarn < 2; yarn++) {
                st_rope_args a = {.size = sizeof a, .mode = mode ? ST_ROPE_NEOX : ST_ROPE_NORMAL};
                a.x = ct_tensor(x, t, hd, nh, n);
                a.out = ct_tensor(o1, t, hd, nh, n);
                a.pos = pos;
                a.n_rot = yarn ? 48 : 64;
                a.n_ctx_orig = 4096;
                a.freq_base = 10000.0f;
                a.freq_scale = yarn ? 0.25f : 1.0f;
                a.ext_factor = yarn ? 1.0f : 0.0f;
                a.attn_factor = 1.0f;
                a.beta_fast = 32.0f;
                a.beta_slow = 1.0f;
                ST_CHECK(api->ops->rope(stream, &a) == ST_OK);
                a.out.data = o2;
                ST_CHECK(st_ref_rope(&a) == ST_OK);
                compare_act(yarn ? "rope yarn" : "rope", t, o1, o2, n * nh * hd, 1e-11);
            }
        free(x);
        free(o1);
        free(o2);
    }
}

static void test_kv_attention(void) {
    const int64_t nh = 4, nkv = 2, dk = 64, n_cells = 40, max_pos = 24;
    static const uint32_t caches[] = {ST_TYPE_F32, ST_TYPE_F16, ST_TYPE_BF16, ST_TYPE_Q8_0};
    for (size_t ci = 0; ci < 4; ci++)
        for (int dv_half = 0; dv_half < 2; dv_half++) {
            uint32_t ct = caches[ci];
            int64_t dv = dv_half ? 32 : dk, n = 4;
            size_t kr = st_row_size(ct, dk), vr = st_row_size(ct, dv);
            uint8_t *kc1 = calloc((size_t)(n_cells * nkv), kr), *kc2 = calloc((size_t)(n_cells * nkv), kr);
            uint8_t *vc1 = calloc((size_t)(n_cells * nkv), vr), *vc2 = calloc((size_t)(n_cells * nkv), vr);
            /* fill every cell through KV_WRITE: 10 batches of 4 tokens, one cell named twice */
            for (int64_t b = 0; b < n_cells / 4; b++) {
                void *k = make_act(ST_TYPE_F32, 4 * nkv * dk, 1.0f), *v = make_act(ST_TYPE_F16, 4 * nkv * dv, 1.0f);
                int32_t cells[4] = {(int32_t)(4 * b), (int32_t)(4 * b + 1), (int32_t)(4 * b + 2), (int32_t)(4 * b + 3)};
                if (b == 3) cells[3] = cells[1];
                st_kv_write_args w = {.size = sizeof w};
                w.k = ct_tensor(k, ST_TYPE_F32, dk, nkv, 4);
                w.v = ct_tensor(v, ST_TYPE_F16, dv, nkv, 4);
                w.k_cache = ct_tensor(kc1, ct, dk, nkv, n_cells);
                w.v_cache = ct_tensor(vc1, ct, dv, nkv, n_cells);
                w.cells = cells;
                ST_CHECK(api->ops->kv_write(stream, &w) == ST_OK);
                w.k_cache.data = kc2;
                w.v_cache.data = vc2;
                ST_CHECK(st_ref_kv_write(&w) == ST_OK);
                free(k);
                free(v);
            }
            ST_CHECK_MSG(memcmp(kc1, kc2, (size_t)(n_cells * nkv) * kr) == 0, "kv_write K (%s) differs", st_type_name(ct));
            ST_CHECK_MSG(memcmp(vc1, vc2, (size_t)(n_cells * nkv) * vr) == 0, "kv_write V (%s) differs", st_type_name(ct));
            /* attention: 4 tokens of 2 sequences, varied lengths, a mask, one empty token */
            int32_t table[2 * 24];
            for (int p = 0; p < 2 * max_pos; p++) table[p] = (int32_t)((p * 7 + 3) % n_cells);
            int32_t seq[4] = {0, 1, 1, 0}, kv_len[4] = {24, 1, 13, 0};
            float mask[4 * 24];
            for (int i = 0; i < 4 * 24; i++) mask[i] = (i % 5 == 0) ? -INFINITY : ct_randf() * 0.5f;
            mask[24] = 0.0f; /* token 1's only position stays visible */
            for (size_t qi = 0; qi < 3; qi++) {
                uint32_t qt = k_acts[qi];
                void *q = make_act(qt, n * nh * dk, 1.0f);
                size_t ob = ct_act_size(qt) * (size_t)(n * nh * dv);
                void *o1 = malloc(ob), *o2 = malloc(ob);
                for (int use_mask = 0; use_mask < 2; use_mask++) {
                    st_attention_args a = {.size = sizeof a, .scale = 0.125f};
                    a.q = ct_tensor(q, qt, dk, nh, n);
                    a.k_cache = ct_tensor(kc1, ct, dk, nkv, n_cells);
                    a.v_cache = ct_tensor(vc1, ct, dv, nkv, n_cells);
                    a.out = ct_tensor(o1, qt, dv, nh, n);
                    a.seq = seq;
                    a.kv_len = kv_len;
                    a.cell_table = table;
                    a.max_pos = (int32_t)max_pos;
                    a.mask = use_mask ? mask : NULL;
                    memset(o1, 0x7f, ob);
                    ST_CHECK(api->ops->attention(stream, &a) == ST_OK);
                    a.out.data = o2;
                    ST_CHECK(st_ref_attention(&a) == ST_OK);
                    compare_act("attention", qt, o1, o2, n * nh * dv, 1e-10);
                    /* a kv_len past max_pos, and a cell outside the cache, are refused */
                    int32_t bad_len[4] = {25, 1, 13, 0};
                    st_attention_args e = a;
                    e.kv_len = bad_len;
                    ST_CHECK(api->ops->attention(stream, &e) == ST_INVALID);
                    table[5] = (int32_t)n_cells;
                    ST_CHECK(api->ops->attention(stream, &a) == ST_INVALID);
                    table[5] = (int32_t)((5 * 7 + 3) % n_cells);
                }
                free(q);
                free(o1);
                free(o2);
            }
            free(kc1);
            free(kc2);
            free(vc1);
            free(vc2);
        }
}

/* ---------------------------------------------------------------- ROUTER / ARGMAX / TOPK */

static void test_select(void) {
    const int64_t n = 7, E = 64;
    float *logits = malloc(sizeof(float) * (size_t)(n * E));
    ct_fill(logits, n * E, 4.0f);
    logits[3] = logits[5]; /* a tie */
    float bias[64];
    ct_fill(bias, E, 0.1f);
    for (int gating = 0; gating < 2; gating++)
        for (int use_bias = 0; use_bias < 2; use_bias++)
            for (int norm = 0; norm < 2; norm++) {
                int32_t k = 8, ids1[7 * 8], ids2[7 * 8];
                float w1[7 * 8], w2[7 * 8];
                st_router_args a = {.size = sizeof a, .gating = (uint32_t)gating, .k = k, .normalize = norm};
                a.logits = ct_tensor(logits, ST_TYPE_F32, E, n, 1);
                a.bias = use_bias ? bias : NULL;
                a.weight_scale = 2.5f;
                a.ids = ids1;
                a.weights = w1;
                ST_CHECK(api->ops->router(stream, &a) == ST_OK);
                a.ids = ids2;
                a.weights = w2;
                ST_CHECK(st_ref_router(&a) == ST_OK);
                ST_CHECK_MSG(memcmp(ids1, ids2, sizeof ids1) == 0, "router gating %d bias %d: ids differ", gating,
                             use_bias);
                ST_CHECK(ct_nmse(w1, w2, n * k) < 1e-12);
            }
    /* ARGMAX / TOPK with ties and NaN */
    logits[E + 10] = 100.0f;
    logits[E + 20] = 100.0f;
    logits[2 * E] = NAN;
    for (int64_t i = 0; i < E; i++) logits[3 * E + i] = NAN;
    int32_t a1[7], a2[7];
    float v1[7], v2[7];
    st_topk_args t = {.size = sizeof t, .k = 1};
    t.x = ct_tensor(logits, ST_TYPE_F32, E, n, 1);
    t.ids = a1;
    t.values = v1;
    ST_CHECK(api->ops->argmax(stream, &t) == ST_OK);
    t.ids = a2;
    t.values = v2;
    ST_CHECK(st_ref_argmax(&t) == ST_OK);
    ST_CHECK(memcmp(a1, a2, sizeof a1) == 0);
    ST_CHECK(a1[1] == 10 && a1[3] == 0);
    int32_t k = 9, i1[7 * 9], i2[7 * 9];
    float tv1[7 * 9], tv2[7 * 9];
    t.k = k;
    t.ids = i1;
    t.values = tv1;
    ST_CHECK(api->ops->topk(stream, &t) == ST_OK);
    t.ids = i2;
    t.values = tv2;
    ST_CHECK(st_ref_topk(&t) == ST_OK);
    ST_CHECK(memcmp(i1, i2, sizeof i1) == 0);
    ST_CHECK(i1[9] == 10 && i1[10] == 20);
    free(logits);
}

/* ---------------------------------------------------------------- pinning */

/* 1 when the status file at path says its thread may run on exactly one CPU. */
static int single_cpu(const char *path) {
    char line[512];
    int one = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) one = !strpbrk(line + 18, ",-");
    if (f) fclose(f);
    return one;
}

/* Threads of this process allowed on exactly one CPU (/proc/self/task/N/status). */
static int pinned_threads(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        if (e->d_name[0] != '.') n += single_cpu(path);
    }
    closedir(dir);
    return n;
}

/* STRATA_CPU_PIN=1: every worker of both devices is pinned to one CPU; unset: none is (when
 * this process may use more than one CPU; else nothing is checked). Workers pin themselves when they start, which on a
 * busy machine can come late: wait up to 2 s. */
static void test_pinning(int workers) {
    const char *e = getenv("STRATA_CPU_PIN");
    int want_pinned = e && *e == '1';
    if (single_cpu("/proc/self/status")) return; /* the whole process runs on one CPU */
    int n = pinned_threads();
    for (int i = 0; i < 200 && want_pinned && n < workers; i++) {
        usleep(10000);
        n = pinned_threads();
    }
    if (want_pinned)
        ST_CHECK_MSG(n >= workers, "STRATA_CPU_PIN=1: %d threads pinned, expected the %d workers", n, workers);
    else
        ST_CHECK_MSG(n == 0, "no pinning asked for, yet %d threads are pinned", n);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s <module.so> <threads>\n", argv[0]);
        return 2;
    }
    unsigned threads = (unsigned)atoi(argv[2]);
    ct_module m = {0};
    if (!ct_load(&m, argv[1], threads)) return 1;
    api = m.api;
    if (!test_identity()) return st_check_failures ? 1 : 77;
    ST_CHECK(api->device_open(0, &dev) == ST_OK);
    ST_CHECK(api->stream_create(dev, &stream) == ST_OK);
    /* a second open with another worker count, to compare results across thread counts */
    ct_module m2 = m;
    if (ct_load(&m2, argv[1], threads == 1 ? 3 : 1)) {
        ST_CHECK(api->device_open(0, &dev_alt) == ST_OK);
        ST_CHECK(api->stream_create(dev_alt, &stream_alt) == ST_OK);
    }
    /* device memory is host memory */
    void *p = NULL;
    ST_CHECK(api->mem_alloc(dev, 1 << 20, &p) == ST_OK && p != NULL);
    if (p) memset(p, 1, 1 << 20);
    st_device_props props = {.size = sizeof props};
    ST_CHECK(api->device_props(0, &props) == ST_OK && props.mem_used_self >= (1u << 20));
    ST_CHECK(api->mem_free(dev, p) == ST_OK);
    uint64_t fr = 0, tot = 0;
    ST_CHECK(api->mem_info(dev, &fr, &tot) == ST_OK && tot > 0 && fr <= tot);

    test_op_supported();
    test_matmul();
    test_repacked();
    test_moe_matmul();
    test_get_rows();
    test_rowwise();
    test_rope();
    test_kv_attention();
    test_select();
    test_pinning((int)(threads - 1) + (dev_alt ? (threads == 1 ? 2 : 0) : 0));

    ST_CHECK(api->stream_destroy(stream) == ST_OK);
    ST_CHECK(api->device_close(dev) == ST_OK);
    if (stream_alt) ST_CHECK(api->stream_destroy(stream_alt) == ST_OK);
    /* dev_alt stays open: shutdown must join its workers */
    api->shutdown();
    dlclose(m.dl);
    return st_check_result("test_cpu_module");
}
