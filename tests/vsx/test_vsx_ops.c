/* SPDX-License-Identifier: Apache-2.0 */
/* strata-cpu-vsx, loaded as the host loads it (dlopen + st_backend_entry), against core/ref:
 *  - identity and probe: name "cpu", device "Host CPU (POWER9 VSX)", arch "power9", usable;
 *    with --expect-unusable (run under a POWER8 CPU model) the probe must refuse with a reason
 *    and no device may open;
 *  - every op of the module through the conformance harness (random inputs, poisoned outputs,
 *    normalized error thresholds against st_ref), which must pass with no failure;
 *  - MATMUL / MOE_MATMUL of every weight format with VSX kernels against st_ref_matmul /
 *    st_ref_moe_matmul, plus the properties the engine relies on: a row's result is the same
 *    bits whatever the batch size and the thread count, and MOE_MATMUL leaves the rows of
 *    non-resident experts untouched.
 * Usage: test_vsx_ops MODULE.so [--quick] [--threads N] [--filter OPS] [--no-conformance | --conformance-only]
 *        test_vsx_ops MODULE.so --expect-unusable
 * (--filter picks conformance groups by op name, as `strata conformance` does; the two --no-/-only
 * switches split the run so ctest can run the parts in parallel.) Exit 0 only when all passed. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance/conformance.h"
#include "quant/quant.h"
#include "ref/ref.h"
#include "strata/backend.h"

static int g_fail, g_checks;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        g_checks++;                                        \
        if (!(cond)) {                                     \
            g_fail++;                                      \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);    \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
        }                                                  \
    } while (0)

static void host_log(void *user, int level, const char *module, const char *msg) {
    (void)user;
    if (level >= ST_LOG_INFO) printf("  [%s] %s\n", module, msg);
}

static uint64_t host_now(void *user) {
    (void)user;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static st_backend_entry_fn g_entry;

/* (Re)enter the module asking for `threads` workers; later device_open calls use them. */
static const st_backend_api *enter(unsigned threads) {
    static st_host_api host;
    memset(&host, 0, sizeof host);
    host.size = sizeof host;
    host.abi_major = ST_ABI_MAJOR;
    host.abi_minor = ST_ABI_MINOR;
    host.n_threads = threads;
    host.log = host_log;
    host.now_ns = host_now;
    const st_backend_api *api = NULL;
    st_status s = g_entry(&host, ST_ABI_MAJOR, ST_ABI_MINOR, &api);
    CHECK(s == ST_OK && api, "st_backend_entry: status %d", (int)s);
    return s == ST_OK ? api : NULL;
}

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static float rnd_val(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static void *xcalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        printf("out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- device buffers ---------------------------------------------------------------------- */

typedef struct {
    const st_backend_api *api;
    st_device *dev;
    st_stream *s;
} dev_ctx;

static void *dev_upload(dev_ctx *c, const void *h, size_t n) {
    void *d = NULL;
    if (c->api->mem_alloc(c->dev, n, &d) != ST_OK) return NULL;
    if (h && c->api->copy_h2d(c->s, d, h, n) != ST_OK) return NULL;
    return d;
}

static void dev_download(dev_ctx *c, void *h, const void *d, size_t n) {
    CHECK(c->api->copy_d2h(c->s, h, d, n) == ST_OK && c->api->stream_sync(c->s) == ST_OK, "copy_d2h: %s",
          c->api->last_error());
}

/* Per-row normalized squared error, the largest over rows (F32 outputs). */
static double row_nmse(const float *got, const float *ref, int64_t rows, int64_t cols) {
    double worst = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        double e = 0, m = 0;
        for (int64_t i = 0; i < cols; i++) {
            double d = (double)got[r * cols + i] - ref[r * cols + i];
            e += d * d;
            m += (double)ref[r * cols + i] * ref[r * cols + i];
        }
        double v = isnan(e) ? INFINITY : e / (m > 1e-30 ? m : 1e-30);
        if (v > worst) worst = v;
    }
    return worst;
}

/* Error the 8-bit activation rounding of a quantized format's dot products may add. */
static double matmul_limit(uint32_t w) {
    return w == ST_TYPE_F32 || w == ST_TYPE_F16 || w == ST_TYPE_BF16 ? 1e-10 : 5e-4;
}

/* ---- MATMUL: against st_ref, batch-size and thread-count invariance ------------------------- */

static void matmul_checks(dev_ctx *c1, dev_ctx *cn, uint32_t wt) {
    const char *tn = st_type_name(wt);
    int64_t bs = st_type_get(wt)->block_size;
    const int64_t M = 37, n = 11, K = bs == 1 ? 300 : bs * (bs == 32 ? 9 : 2);
    size_t wrow = st_row_size(wt, K);
    float *wf = xcalloc(sizeof(float) * (size_t)(M * K)), *x = xcalloc(sizeof(float) * (size_t)(n * K));
    char *wq = xcalloc(wrow * (size_t)M);
    for (int64_t i = 0; i < M * K; i++) wf[i] = rnd_val();
    for (int64_t i = 0; i < n * K; i++) x[i] = rnd_val() * (float)(1 + i / K);
    for (int64_t m = 0; m < M; m++) st_quantize_row(wt, wf + m * K, wq + (size_t)m * wrow, K);
    float *ref = xcalloc(sizeof(float) * (size_t)(n * M)), *got = xcalloc(sizeof(float) * (size_t)(n * M));
    float *one = xcalloc(sizeof(float) * (size_t)M), *g1 = xcalloc(sizeof(float) * (size_t)(n * M));

    st_matmul_args h = {.size = sizeof h};
    h.w = st_ref_tensor_2d(wq, wt, K, M);
    h.x = st_ref_tensor_2d(x, ST_TYPE_F32, K, n);
    h.out = st_ref_tensor_2d(ref, ST_TYPE_F32, M, n);
    CHECK(st_ref_matmul(&h) == ST_OK, "st_ref_matmul %s: %s", tn, st_ref_last_error());

    dev_ctx *cs[2] = {cn, c1};
    for (int t = 0; t < 2; t++) {
        dev_ctx *c = cs[t];
        st_matmul_args d = h;
        d.w.data = dev_upload(c, wq, wrow * (size_t)M);
        d.x.data = dev_upload(c, x, sizeof(float) * (size_t)(n * K));
        d.out.data = dev_upload(c, NULL, sizeof(float) * (size_t)(n * M));
        CHECK(d.w.data && d.x.data && d.out.data, "%s: device alloc: %s", tn, c->api->last_error());
        if (!d.w.data || !d.x.data || !d.out.data) break;
        c->api->memset_d(c->s, d.out.data, 0xff, sizeof(float) * (size_t)(n * M));
        st_status s = c->api->ops->matmul(c->s, &d);
        CHECK(s == ST_OK, "matmul %s: %s", tn, c->api->last_error());
        dev_download(c, t == 0 ? got : g1, d.out.data, sizeof(float) * (size_t)(n * M));
        if (t == 0) {
            /* each row alone must give the same bits as inside the batch */
            int differ = 0;
            for (int64_t r = 0; r < n; r++) {
                st_matmul_args d1 = d;
                d1.x.data = (char *)d.x.data + r * d.x.nb[1];
                d1.x.ne[1] = 1;
                d1.out.ne[1] = 1;
                d1.out.data = dev_upload(c, NULL, sizeof(float) * (size_t)M);
                CHECK(c->api->ops->matmul(c->s, &d1) == ST_OK, "matmul %s n=1: %s", tn, c->api->last_error());
                dev_download(c, one, d1.out.data, sizeof(float) * (size_t)M);
                differ += memcmp(one, got + r * M, sizeof(float) * (size_t)M) != 0;
                c->api->mem_free(c->dev, d1.out.data);
            }
            CHECK(differ == 0, "matmul %s: %d of %lld rows change bits between n=1 and n=%lld", tn, differ,
                  (long long)n, (long long)n);
        }
        c->api->mem_free(c->dev, d.w.data);
        c->api->mem_free(c->dev, d.x.data);
        c->api->mem_free(c->dev, d.out.data);
    }
    double err = row_nmse(got, ref, n, M);
    CHECK(err <= matmul_limit(wt), "matmul %s n=%lld M=%lld K=%lld: error %.3g > %.3g", tn, (long long)n,
          (long long)M, (long long)K, err, matmul_limit(wt));
    CHECK(memcmp(got, g1, sizeof(float) * (size_t)(n * M)) == 0, "matmul %s: 1 thread and many threads differ", tn);
    printf("  matmul     %-7s n=%lld M=%lld K=%-4lld error %.2e (limit %.0e)\n", tn, (long long)n, (long long)M,
           (long long)K, err, matmul_limit(wt));
    free(wf), free(x), free(wq), free(ref), free(got), free(one), free(g1);
}

/* ---- MOE_MATMUL: slots, skipped experts, per-assignment scale ---------------------------------- */

static void moe_checks(dev_ctx *c, uint32_t wt) {
    const char *tn = st_type_name(wt);
    int64_t bs = st_type_get(wt)->block_size;
    enum { N_SLOTS = 3, N_EXPERT = 5, N_X = 4, N_ASSIGN = 9 };
    const int64_t M = 21, K = bs == 1 ? 96 : bs * (bs == 32 ? 4 : 1);
    size_t wrow = st_row_size(wt, K), wslot = wrow * (size_t)M;
    char *wq = xcalloc(wslot * N_SLOTS);
    float *tmp = xcalloc(sizeof(float) * (size_t)K), *x = xcalloc(sizeof(float) * (size_t)(N_X * K));
    for (int64_t r = 0; r < N_SLOTS * M; r++) {
        for (int64_t i = 0; i < K; i++) tmp[i] = rnd_val();
        st_quantize_row(wt, tmp, wq + (size_t)r * wrow, K);
    }
    for (int64_t i = 0; i < N_X * K; i++) x[i] = rnd_val();
    const int32_t slot_table[N_EXPERT] = {2, -1, 0, 1, -1};
    const int32_t expert[N_ASSIGN] = {0, 1, 2, 3, 4, 0, 3, 2, 1};
    const int32_t x_row[N_ASSIGN] = {0, 0, 1, 1, 2, 2, 3, 3, 3};
    const float scale[N_ASSIGN] = {1.0f, 2.0f, 0.5f, -1.5f, 1.0f, 0.25f, 3.0f, 1.0f, 1.0f};
    size_t out_bytes = sizeof(float) * (size_t)(N_ASSIGN * M);
    float *ref = xcalloc(out_bytes), *got = xcalloc(out_bytes);
    memset(ref, 0xff, out_bytes);

    st_moe_matmul_args h = {.size = sizeof h, .n_assign = N_ASSIGN};
    h.w = st_ref_tensor_3d(wq, wt, K, M, N_SLOTS);
    h.x = st_ref_tensor_2d(x, ST_TYPE_F32, K, N_X);
    h.out = st_ref_tensor_2d(ref, ST_TYPE_F32, M, N_ASSIGN);
    h.slot_table = slot_table;
    h.expert = expert;
    h.x_row = x_row;
    h.scale = scale;
    CHECK(st_ref_moe_matmul(&h) == ST_OK, "st_ref_moe_matmul %s: %s", tn, st_ref_last_error());

    st_moe_matmul_args d = h;
    d.w.data = dev_upload(c, wq, wslot * N_SLOTS);
    d.x.data = dev_upload(c, x, sizeof(float) * (size_t)(N_X * K));
    d.out.data = dev_upload(c, NULL, out_bytes);
    d.slot_table = dev_upload(c, slot_table, sizeof slot_table);
    d.expert = dev_upload(c, expert, sizeof expert);
    d.x_row = dev_upload(c, x_row, sizeof x_row);
    d.scale = dev_upload(c, scale, sizeof scale);
    CHECK(d.w.data && d.x.data && d.out.data && d.slot_table && d.expert && d.x_row && d.scale,
          "moe %s: device alloc", tn);
    c->api->memset_d(c->s, d.out.data, 0xff, out_bytes);
    CHECK(c->api->ops->moe_matmul(c->s, &d) == ST_OK, "moe_matmul %s: %s", tn, c->api->last_error());
    dev_download(c, got, d.out.data, out_bytes);
    int touched = 0;
    for (int a = 0; a < N_ASSIGN; a++) {
        if (slot_table[expert[a]] >= 0) continue;
        for (int64_t i = 0; i < M; i++) {
            uint32_t u;
            memcpy(&u, &got[a * M + i], 4);
            touched += u != 0xffffffffu;
            got[a * M + i] = ref[a * M + i] = 0.0f; /* leave them out of the error */
        }
    }
    CHECK(touched == 0, "moe_matmul %s: %d elements of skipped assignments were written", tn, touched);
    double err = row_nmse(got, ref, N_ASSIGN, M);
    CHECK(err <= matmul_limit(wt), "moe_matmul %s: error %.3g > %.3g", tn, err, matmul_limit(wt));
    printf("  moe_matmul %-7s assign=%d M=%lld K=%-4lld error %.2e\n", tn, N_ASSIGN, (long long)M, (long long)K, err);
    void *bufs[] = {d.w.data, d.x.data, d.out.data, (void *)d.slot_table, (void *)d.expert, (void *)d.x_row,
                    (void *)d.scale};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) c->api->mem_free(c->dev, bufs[i]);
    free(wq), free(tmp), free(x), free(ref), free(got);
}

static int open_ctx(const st_backend_api *api, dev_ctx *c) {
    c->api = api;
    st_status s = api->device_open(0, &c->dev);
    CHECK(s == ST_OK, "device_open: %s", api->last_error());
    if (s != ST_OK) return 0;
    s = api->stream_create(c->dev, &c->s);
    CHECK(s == ST_OK, "stream_create: %s", api->last_error());
    return s == ST_OK;
}

static void close_ctx(dev_ctx *c) {
    if (c->s) c->api->stream_destroy(c->s);
    if (c->dev) CHECK(c->api->device_close(c->dev) == ST_OK, "device_close: %s", c->api->last_error());
}

static const uint32_t k_vsx_types[] = {ST_TYPE_F32,  ST_TYPE_F16,  ST_TYPE_BF16, ST_TYPE_Q4_0, ST_TYPE_Q4_1,
                                       ST_TYPE_Q5_0, ST_TYPE_Q5_1, ST_TYPE_Q8_0, ST_TYPE_IQ4_NL, ST_TYPE_Q2_K,
                                       ST_TYPE_Q3_K, ST_TYPE_Q4_K, ST_TYPE_Q5_K, ST_TYPE_Q6_K, ST_TYPE_IQ4_XS};
#define N_VSX_TYPES (sizeof k_vsx_types / sizeof k_vsx_types[0])

static int expect_unusable(const st_backend_api *api) {
    st_probe_report rep = {.size = sizeof rep};
    st_status s = api->probe(&rep);
    printf("probe: status %d, reason \"%s\", built for \"%s\"\n", (int)s, rep.reason, rep.build_archs);
    CHECK(s == ST_ARCH && rep.status == ST_ARCH, "probe on a pre-POWER9 CPU: status %d, want ST_ARCH", (int)s);
    CHECK(strstr(rep.reason, "ISA 3.00") != NULL, "probe reason should name the missing ISA 3.00: \"%s\"", rep.reason);
    st_device_props p = {.size = sizeof p};
    CHECK(api->device_props(0, &p) == ST_OK, "device_props: %s", api->last_error());
    CHECK(p.usable == 0 && p.reason[0], "device usable=%u reason \"%s\"", p.usable, p.reason);
    st_device *dev = NULL;
    CHECK(api->device_open(0, &dev) == ST_ARCH && !dev, "device_open on a pre-POWER9 CPU must fail with ST_ARCH");
    printf("device_open: %s\n", api->last_error());
    return 0;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    const char *filter = NULL;
    int unusable = 0, quick = 0, skip_conf = 0, skip_vsx = 0;
    unsigned threads = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--expect-unusable")) unusable = 1;
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-conformance")) skip_conf = 1;
        else if (!strcmp(argv[i], "--conformance-only")) skip_vsx = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else path = argv[i];
    }
    if (!path) {
        fprintf(stderr,
                "usage: %s MODULE.so [--quick] [--threads N] [--filter OPS] [--no-conformance | --conformance-only]\n"
                "       %s MODULE.so --expect-unusable\n",
                argv[0], argv[0]);
        return 2;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("FAIL: dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    void *sym = dlsym(lib, ST_BACKEND_ENTRY_SYMBOL);
    CHECK(sym != NULL, "no %s in %s", ST_BACKEND_ENTRY_SYMBOL, path);
    if (!sym) return 1;
    memcpy(&g_entry, &sym, sizeof g_entry);
    const st_backend_api *api = enter(threads);
    if (!api) return 1;
    CHECK(!strcmp(api->name, "cpu") && api->abi_major == ST_ABI_MAJOR, "module name %s abi %u", api->name,
          api->abi_major);
    if (unusable) {
        expect_unusable(api);
    } else {
        st_probe_report rep = {.size = sizeof rep};
        st_status s = api->probe(&rep);
        CHECK(s == ST_OK && rep.n_devices == 1, "probe: status %d (%s), %u devices", (int)s, rep.reason, rep.n_devices);
        CHECK(strstr(rep.build_archs, "power9") != NULL, "build archs \"%s\"", rep.build_archs);
        st_device_props p = {.size = sizeof p};
        CHECK(api->device_props(0, &p) == ST_OK, "device_props: %s", api->last_error());
        CHECK(p.usable == 1 && !strcmp(p.name, "Host CPU (POWER9 VSX)") && !strcmp(p.arch, "power9") &&
                  !strcmp(p.vendor, "cpu"),
              "device: usable %u name \"%s\" arch \"%s\" vendor \"%s\" (%s)", p.usable, p.name, p.arch, p.vendor,
              p.reason);
        printf("device: %s, arch %s, %u cores\n", p.name, p.arch, p.n_cores);
        static const uint32_t wops[] = {ST_OP_GET_ROWS, ST_OP_MATMUL, ST_OP_MOE_MATMUL};
        for (size_t t = 0; t < N_VSX_TYPES; t++)
            for (size_t o = 0; o < 3; o++)
                CHECK(api->op_supported(0, wops[o], k_vsx_types[t]), "op %u not supported for %s", wops[o],
                      st_type_name(k_vsx_types[t]));

        /* every op through the shared conformance bar */
        if (!skip_conf) {
            st_conf_options opt = {.seed = 20261202, .quick = quick, .filter = filter};
            st_conf_result res = {0, 0, 0};
            s = st_conf_run(api, 0, &opt, &res);
            CHECK(s == ST_OK, "conformance run stopped: status %d", (int)s);
            printf("conformance%s%s: %d passed, %d failed, %d skipped\n", filter ? " " : "", filter ? filter : "",
                   res.passed, res.failed, res.skipped);
            CHECK(res.failed == 0, "%d conformance cases failed", res.failed);
            CHECK(res.passed >= 1, "no conformance case ran");
        }

        /* VSX formats: reference, batch invariance, thread-count determinism */
        dev_ctx cn = {0}, c1 = {0};
        if (!skip_vsx && open_ctx(api, &cn)) {
            const st_backend_api *api1 = enter(1);
            if (api1 && open_ctx(api1, &c1)) {
                for (size_t t = 0; t < N_VSX_TYPES; t++) matmul_checks(&c1, &cn, k_vsx_types[t]);
                for (size_t t = 0; t < N_VSX_TYPES; t++) moe_checks(&cn, k_vsx_types[t]);
            }
            close_ctx(&c1);
        }
        close_ctx(&cn);
    }
    if (api->shutdown) api->shutdown();
    printf("%s: %d checks, %d failed\n", g_fail ? "FAIL" : "PASS", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
