/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated devices through the module ABI, loaded by the registry like any module:
 * exact memory accounting, OOM text, fault injection (fail_alloc, fail_op, fail_copy,
 * lose_after, hang_op), copy bandwidth, peer copies inside one memory domain, double frees,
 * leaks at close, the host's memory-pressure retry, device-address checks of ops and copies, and configuration errors. argv[1]: strata-sim.so. */
#include <stdlib.h>
#include <time.h>

#include "backend/backend_registry.h"
#include "sim/sim_config.h"
#include "../backend/test_util.h"

static const char *g_sim_path;
static st_backend_registry *g_reg;

/* Load the sim with `config` as STRATA_SIM; returns its table or NULL. */
static const st_backend_api *load_sim(const char *config) {
    if (config) setenv("STRATA_SIM", config, 1);
    else unsetenv("STRATA_SIM");
    st_backend_options opt = {0};
    opt.search_path = g_sim_path;
    opt.skip_exe_dir = 1;
    g_reg = st_backend_registry_open(&opt);
    const st_backend_module *m = st_backend_registry_module(g_reg, 0);
    if (!m || !m->api) {
        if (config) printf("note: sim not usable with '%s': %s\n", config, m ? m->reason : "no module");
        return NULL;
    }
    return m->api;
}

static void unload_sim(void) {
    st_backend_registry_close(g_reg);
    g_reg = NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static st_tensor f32_rows(void *data, int64_t k, int64_t n) {
    st_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.type = ST_TYPE_F32;
    t.ne[0] = k;
    t.ne[1] = n;
    t.ne[2] = t.ne[3] = 1;
    t.nb[0] = 4;
    t.nb[1] = 4 * k;
    t.nb[2] = t.nb[3] = 4 * k * n;
    return t;
}

/* out = x * s on device memory `d` (16 floats) through the ops table. */
static st_status run_scale(const st_backend_api *api, st_stream *s, void *d, float factor) {
    st_binary_args a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.s = factor;
    a.a = f32_rows(d, 16, 1);
    a.out = f32_rows(d, 16, 1);
    return api->ops->scale(s, &a);
}

static uint64_t free_of(const st_backend_api *api, st_device *d) {
    uint64_t fr = 0, tot = 0;
    CHECK(api->mem_info(d, &fr, &tot) == ST_OK);
    return fr;
}

static void test_accounting(void) {
    const st_backend_api *api = load_sim("mem=1MiB");
    CHECK(api != NULL);
    if (!api) return;
    const uint64_t cap = 1u << 20;
    st_device *d = NULL;
    CHECK(api->device_open(0, &d) == ST_OK);
    CHECK(free_of(api, d) == cap);
    void *a = NULL, *b = NULL, *c = NULL, *e = NULL;
    CHECK(api->mem_alloc(d, 100000, &a) == ST_OK);
    CHECK(free_of(api, d) == cap - 100000);
    CHECK(api->mem_alloc(d, 300001, &b) == ST_OK);
    CHECK(api->mem_alloc(d, 7, &c) == ST_OK);
    CHECK(free_of(api, d) == cap - 400008);
    st_device_props p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    CHECK(api->device_props(0, &p) == ST_OK);
    CHECK(p.mem_total == cap && p.mem_free == cap - 400008 && p.mem_used_self == 400008);
    CHECK(api->mem_free(d, b) == ST_OK);
    CHECK(free_of(api, d) == cap - 100007);
    /* exactly the rest fits; one byte more does not */
    CHECK(api->mem_alloc(d, cap - 100007, &e) == ST_OK);
    CHECK(free_of(api, d) == 0);
    void *x = NULL;
    CHECK(api->mem_alloc(d, 1, &x) == ST_OOM);
    CHECK(x == NULL);
    CHECK_HAS(api->last_error(), "out of memory");
    CHECK_HAS(api->last_error(), "SIM0");
    CHECK(free_of(api, d) == 0);
    CHECK(api->mem_free(d, e) == ST_OK);
    CHECK(api->mem_alloc(d, 2u << 20, &x) == ST_OOM);
    CHECK_HAS(api->last_error(), "alloc 2.0 MiB on SIM0: out of memory (free 0.9 MiB of 1.0 MiB)");
    CHECK(api->mem_free(d, a) == ST_OK);
    CHECK(api->mem_free(d, c) == ST_OK);
    CHECK(free_of(api, d) == cap);
    /* double free and a pointer the device never gave out are refused, accounting unchanged */
    CHECK(api->mem_free(d, a) == ST_INVALID);
    CHECK_HAS(api->last_error(), "not a live allocation");
    int local;
    CHECK(api->mem_free(d, &local) == ST_INVALID);
    CHECK(free_of(api, d) == cap);
    /* many allocations, freed in another order: back to exactly zero used */
    void *many[200];
    uint64_t sum = 0;
    for (int i = 0; i < 200; i++) {
        CHECK(api->mem_alloc(d, 100 + 37 * (uint64_t)i, &many[i]) == ST_OK);
        sum += 100 + 37 * (uint64_t)i;
    }
    CHECK(free_of(api, d) == cap - sum);
    for (int i = 0; i < 200; i += 2) CHECK(api->mem_free(d, many[i]) == ST_OK);
    for (int i = 1; i < 200; i += 2) CHECK(api->mem_free(d, many[i]) == ST_OK);
    CHECK(free_of(api, d) == cap);
    /* a leak is reported at close (and released) */
    CHECK(api->mem_alloc(d, 4096, &a) == ST_OK);
    CHECK(api->device_close(d) == ST_INVALID);
    CHECK_HAS(api->last_error(), "1 buffers (4096 bytes) still allocated");
    /* reopen: fresh device, full capacity */
    CHECK(api->device_open(0, &d) == ST_OK);
    CHECK(free_of(api, d) == cap);
    CHECK(api->device_close(d) == ST_OK);
    unload_sim();
}

static void test_fail_alloc(void) {
    const st_backend_api *api = load_sim("devices=2,mem=1MiB,dev1.fail_alloc=3");
    if (!api) {
        CHECK(0);
        return;
    }
    st_device *d0 = NULL, *d1 = NULL;
    CHECK(api->device_open(0, &d0) == ST_OK);
    CHECK(api->device_open(1, &d1) == ST_OK);
    void *p[5] = {0};
    CHECK(api->mem_alloc(d1, 1000, &p[0]) == ST_OK);
    CHECK(api->mem_alloc(d1, 1000, &p[1]) == ST_OK);
    CHECK(api->mem_alloc(d1, 1000, &p[2]) == ST_OOM);
    CHECK_HAS(api->last_error(), "injected failure of allocation #3 (fail_alloc=3)");
    CHECK(p[2] == NULL);
    CHECK(free_of(api, d1) == (1u << 20) - 2000);
    CHECK(api->mem_alloc(d1, 1000, &p[3]) == ST_OK); /* only the 3rd call fails */
    /* device 0 has no fault plan */
    void *q[4];
    for (int i = 0; i < 4; i++) CHECK(api->mem_alloc(d0, 1000, &q[i]) == ST_OK);
    for (int i = 0; i < 4; i++) CHECK(api->mem_free(d0, q[i]) == ST_OK);
    /* a pointer of device 0 is not device 1's */
    CHECK(api->mem_alloc(d0, 64, &q[0]) == ST_OK);
    CHECK(api->mem_free(d1, q[0]) == ST_INVALID);
    CHECK(api->mem_free(d0, q[0]) == ST_OK);
    CHECK(api->mem_free(d1, p[0]) == ST_OK);
    CHECK(api->mem_free(d1, p[1]) == ST_OK);
    CHECK(api->mem_free(d1, p[3]) == ST_OK);
    CHECK(api->device_close(d0) == ST_OK);
    CHECK(api->device_close(d1) == ST_OK);
    unload_sim();
}

static void test_fail_op_and_compute(void) {
    const st_backend_api *api = load_sim("mem=1MiB,fail_op=2");
    if (!api) {
        CHECK(0);
        return;
    }
    st_device *d = NULL;
    st_stream *s = NULL;
    CHECK(api->device_open(0, &d) == ST_OK);
    CHECK(api->stream_create(d, &s) == ST_OK);
    float h[16], out[16];
    for (int i = 0; i < 16; i++) h[i] = (float)i - 3.5f;
    void *buf = NULL;
    CHECK(api->mem_alloc(d, sizeof h, &buf) == ST_OK);
    CHECK(api->copy_h2d(s, buf, h, sizeof h) == ST_OK);
    CHECK(run_scale(api, s, buf, 2.0f) == ST_OK);
    CHECK(run_scale(api, s, buf, 10.0f) == ST_INTERNAL);
    CHECK_HAS(api->last_error(), "injected failure: op #2 (scale) on SIM0 (fail_op=2)");
    CHECK(run_scale(api, s, buf, 3.0f) == ST_OK);
    CHECK(api->copy_d2h(s, out, buf, sizeof out) == ST_OK);
    CHECK(api->stream_sync(s) == ST_OK);
    int ok = 1;
    for (int i = 0; i < 16; i++) ok &= out[i] == h[i] * 6.0f; /* the failed op changed nothing */
    CHECK(ok);
    /* the reference's own refusals come back with its text */
    st_binary_args bad;
    memset(&bad, 0, sizeof bad);
    bad.size = sizeof bad;
    bad.s = 1.0f;
    bad.a = f32_rows(buf, 16, 1);
    bad.out = f32_rows(NULL, 16, 1);
    CHECK(api->ops->scale(s, &bad) == ST_INVALID);
    CHECK_HAS(api->last_error(), "scale on SIM0: ");
    CHECK(api->op_supported(0, ST_OP_MATMUL, ST_TYPE_Q4_K));
    CHECK(api->op_supported(0, ST_OP_SCALE, ST_TYPE_F32));
    CHECK(!api->op_supported(1, ST_OP_SCALE, ST_TYPE_F32)); /* no device 1 */
    CHECK(api->mem_free(d, buf) == ST_OK);
    CHECK(api->stream_destroy(s) == ST_OK);
    CHECK(api->device_close(d) == ST_OK);
    unload_sim();
}

/* async_errors: the failed op returns OK and its failure comes back from stream_sync. */
static void test_async_errors(void) {
    const st_backend_api *api = load_sim("mem=1MiB,fail_op=2,async_errors=1");
    if (!api) {
        CHECK(0);
        return;
    }
    st_device *d = NULL;
    st_stream *s = NULL;
    CHECK(api->device_open(0, &d) == ST_OK);
    CHECK(api->stream_create(d, &s) == ST_OK);
    float h[16], out[16];
    for (int i = 0; i < 16; i++) h[i] = (float)i;
    void *buf = NULL;
    CHECK(api->mem_alloc(d, sizeof h, &buf) == ST_OK);
    CHECK(api->copy_h2d(s, buf, h, sizeof h) == ST_OK);
    CHECK(run_scale(api, s, buf, 2.0f) == ST_OK);
    CHECK(run_scale(api, s, buf, 5.0f) == ST_OK); /* fails, but only later */
    CHECK(run_scale(api, s, buf, 3.0f) == ST_OK);
    CHECK(api->stream_sync(s) == ST_INTERNAL);
    CHECK_HAS(api->last_error(), "asynchronous failure of op #2 (scale) on SIM0");
    CHECK(api->stream_sync(s) == ST_OK); /* reported once */
    CHECK(api->copy_d2h(s, out, buf, sizeof out) == ST_OK);
    CHECK(out[4] == 24.0f); /* op 2 did not run */
    CHECK(api->mem_free(d, buf) == ST_OK);
    CHECK(api->stream_destroy(s) == ST_OK);
    CHECK(api->device_close(d) == ST_OK);
    unload_sim();
}

static void test_lose_after(void) {
    const st_backend_api *api = load_sim("mem=1MiB,lose_after=3");
    if (!api) {
        CHECK(0);
        return;
    }
    st_device *d = NULL;
    st_stream *s = NULL;
    CHECK(api->device_open(0, &d) == ST_OK);
    CHECK(api->stream_create(d, &s) == ST_OK);
    void *buf = NULL, *more = NULL;
    float h[16] = {0};
    CHECK(api->mem_alloc(d, sizeof h, &buf) == ST_OK);
    CHECK(api->copy_h2d(s, buf, h, sizeof h) == ST_OK);
    for (int i = 0; i < 3; i++) CHECK(run_scale(api, s, buf, 1.0f) == ST_OK);
    CHECK(run_scale(api, s, buf, 1.0f) == ST_DEVICE_LOST);
    CHECK_HAS(api->last_error(), "device lost");
    /* every call afterwards */
    CHECK(run_scale(api, s, buf, 1.0f) == ST_DEVICE_LOST);
    CHECK(api->mem_alloc(d, 16, &more) == ST_DEVICE_LOST);
    CHECK(api->copy_h2d(s, buf, h, sizeof h) == ST_DEVICE_LOST);
    CHECK(api->copy_d2h(s, h, buf, sizeof h) == ST_DEVICE_LOST);
    CHECK(api->memset_d(s, buf, 0, sizeof h) == ST_DEVICE_LOST);
    CHECK(api->stream_sync(s) == ST_DEVICE_LOST);
    uint64_t fr, tot;
    CHECK(api->mem_info(d, &fr, &tot) == ST_DEVICE_LOST);
    st_stream *s2 = NULL;
    CHECK(api->stream_create(d, &s2) == ST_DEVICE_LOST);
    /* freeing still releases memory (returns LOST), so closing leaks nothing */
    CHECK(api->mem_free(d, buf) == ST_DEVICE_LOST);
    CHECK(api->stream_destroy(s) == ST_OK);
    CHECK(api->device_close(d) == ST_OK);
    unload_sim();
}

static void test_hang_op(void) {
    const st_backend_api *api = load_sim("mem=1MiB,hang_op=2,hang_ms=300");
    if (!api) {
        CHECK(0);
        return;
    }
    st_device *d = NULL;
    st_stream *s = NULL;
    CHECK(api->device_open(0, &d) == ST_OK);
    CHECK(api->stream_create(d, &s) == ST_OK);
    void *buf = NULL;
    float h[16], out[16];
    for (int i = 0; i < 16; i++) h[i] = (float)i;
    CHECK(api->mem_alloc(d, sizeof h, &buf) == ST_OK);
    CHECK(api->copy_h2d(s, buf, h, sizeof h) == ST_OK);
    double t0 = now_ms();
    CHECK(run_scale(api, s, buf, 2.0f) == ST_OK);
    double t1 = now_ms();
    CHECK(run_scale(api, s, buf, 2.0f) == ST_OK);
    double t2 = now_ms();
    CHECK(run_scale(api, s, buf, 2.0f) == ST_OK);
    double t3 = now_ms();
    printf("hang_op: op1 %.1f ms, op2 %.1f ms, op3 %.1f ms\n", t1 - t0, t2 - t1, t3 - t2);
    CHECK(t2 - t1 >= 299.0);
    CHECK(t1 - t0 < 250.0 && t3 - t2 < 250.0);
    CHECK(api->copy_d2h(s, out, buf, sizeof out) == ST_OK);
    CHECK(out[5] == 40.0f); /* the hung op still computed */
    CHECK(api->mem_free(d, buf) == ST_OK);
    CHECK(api->stream_destroy(s) == ST_OK);
    CHECK(api->device_close(d) == ST_OK);
    unload_sim();
}

static void test_bandwidth_and_copies(void) {
    const st_backend_api *api = load_sim("devices=3,mem=16MiB,bw=100MB/s,dev2.domain=1,fail_copy=5");
    if (!api) {
        CHECK(0);
        return;
    }
    st_device *d[3];
    st_stream *s[3];
    for (uint32_t i = 0; i < 3; i++) {
        CHECK(api->device_open(i, &d[i]) == ST_OK);
        CHECK(api->stream_create(d[i], &s[i]) == ST_OK);
    }
    const uint64_t n = 4000000; /* 4 MB at 100 MB/s: 40 ms */
    unsigned char *h = malloc(n), *back = malloc(n);
    for (uint64_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 7 + 1);
    void *b0 = NULL, *b1 = NULL, *b2 = NULL;
    CHECK(api->mem_alloc(d[0], n, &b0) == ST_OK);
    CHECK(api->mem_alloc(d[1], n, &b1) == ST_OK);
    CHECK(api->mem_alloc(d[2], n, &b2) == ST_OK);
    double t0 = now_ms();
    CHECK(api->copy_h2d(s[0], b0, h, n) == ST_OK); /* copy #1 on SIM0 */
    double t1 = now_ms();
    printf("copy_h2d of 4 MB at 100 MB/s: %.1f ms\n", t1 - t0);
    CHECK(t1 - t0 >= 39.0);
    /* peer copy inside the domain works and moves the bytes */
    CHECK(api->copy_peer(s[1], b1, d[0], b0, n) == ST_OK);
    CHECK(api->copy_d2h(s[1], back, b1, n) == ST_OK);
    CHECK(memcmp(back, h, n) == 0);
    /* across domains it is refused */
    CHECK(api->copy_peer(s[2], b2, d[0], b0, n) == ST_INVALID);
    CHECK_HAS(api->last_error(), "different memory domains");
    st_device_props p0, p1, p2;
    memset(&p0, 0, sizeof p0);
    p0.size = p1.size = p2.size = sizeof p0;
    CHECK(api->device_props(0, &p0) == ST_OK);
    CHECK(api->device_props(1, &p1) == ST_OK);
    CHECK(api->device_props(2, &p2) == ST_OK);
    CHECK(p0.domain == p1.domain && p0.domain != p2.domain);
    CHECK(memcmp(p0.uuid, p1.uuid, 16) != 0);
    CHECK(p0.caps & ST_CAP_PEER);
    CHECK(!(p0.caps & ST_CAP_UNIFIED));
    CHECK(p0.mem_bw_gbs > 0.0999 && p0.mem_bw_gbs < 0.1001);
    /* fail_copy=5: copies #2..#4 on SIM0 succeed, #5 fails with ST_IO */
    for (int i = 0; i < 3; i++) CHECK(api->copy_d2d(s[0], b0, b0, 16) == ST_OK);
    CHECK(api->copy_d2d(s[0], b0, b0, 16) == ST_IO);
    CHECK_HAS(api->last_error(), "injected failure of copy #5");
    CHECK(api->copy_d2d(s[0], b0, b0, 16) == ST_OK);
    CHECK(api->mem_free(d[0], b0) == ST_OK);
    CHECK(api->mem_free(d[1], b1) == ST_OK);
    CHECK(api->mem_free(d[2], b2) == ST_OK);
    for (int i = 0; i < 3; i++) {
        CHECK(api->stream_destroy(s[i]) == ST_OK);
        CHECK(api->device_close(d[i]) == ST_OK);
    }
    free(h);
    free(back);
    unload_sim();
}

/* The host's memory-pressure handler: frees the buffer it was given, asks for a retry. */
typedef struct {
    const st_backend_api *api;
    st_device *dev;
    void *victim;
    int calls;
    uint32_t device;
    uint64_t bytes;
    char module[64];
} pressure_ctx;

static int on_pressure(void *user, const st_backend_module *m, uint32_t device, uint64_t bytes) {
    pressure_ctx *c = user;
    c->calls++;
    c->device = device;
    c->bytes = bytes;
    snprintf(c->module, sizeof c->module, "%s", m ? m->name : "?");
    if (!c->victim) return 0;
    c->api->mem_free(c->dev, c->victim);
    c->victim = NULL;
    return 1;
}

static void test_memory_pressure(void) {
    const st_backend_api *api = load_sim("devices=2,mem=1MiB");
    if (!api) {
        CHECK(0);
        return;
    }
    pressure_ctx c;
    memset(&c, 0, sizeof c);
    c.api = api;
    st_backend_set_memory_pressure(on_pressure, &c);
    CHECK(api->device_open(1, &c.dev) == ST_OK);
    void *a = NULL, *b = NULL;
    CHECK(api->mem_alloc(c.dev, 600 << 10, &a) == ST_OK);
    c.victim = a;
    CHECK(api->mem_alloc(c.dev, 600 << 10, &b) == ST_OK); /* the host made room */
    CHECK(c.calls == 1 && c.device == 1 && c.bytes == 600u << 10);
    CHECK_STR(c.module, "sim");
    CHECK(free_of(api, c.dev) == (1u << 20) - (600u << 10));
    void *x = NULL;
    CHECK(api->mem_alloc(c.dev, 600 << 10, &x) == ST_OOM); /* nothing left to free */
    CHECK(c.calls == 2);
    st_backend_set_memory_pressure(NULL, NULL);
    CHECK(api->mem_free(c.dev, b) == ST_OK);
    CHECK(api->device_close(c.dev) == ST_OK);
    unload_sim();
}

/* Ops and copies accept only device addresses of their own device, within an allocation. */
static void test_device_addresses(void) {
    const st_backend_api *api = load_sim("devices=2,mem=1MiB");
    if (!api) {
        CHECK(0);
        return;
    }
    st_device *d = NULL, *d1 = NULL;
    st_stream *s = NULL;
    CHECK(api->device_open(0, &d) == ST_OK);
    CHECK(api->device_open(1, &d1) == ST_OK);
    CHECK(api->stream_create(d, &s) == ST_OK);
    float host[32] = {0};
    void *buf = NULL, *other = NULL;
    CHECK(api->mem_alloc(d, 16 * sizeof(float), &buf) == ST_OK);
    CHECK(api->mem_alloc(d1, 16 * sizeof(float), &other) == ST_OK);
    /* a host pointer handed to an op */
    CHECK(run_scale(api, s, host, 2.0f) == ST_INVALID);
    CHECK_HAS(api->last_error(), "scale: a: ");
    CHECK_HAS(api->last_error(), "is not device memory of SIM0");
    /* another device's memory */
    CHECK(run_scale(api, s, other, 2.0f) == ST_INVALID);
    /* a view whose rows run past the allocation */
    st_binary_args a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.s = 1.0f;
    a.a = f32_rows(buf, 16, 2);
    a.out = f32_rows(buf, 16, 1);
    CHECK(api->ops->scale(s, &a) == ST_INVALID);
    CHECK_HAS(api->last_error(), "not inside one allocation of SIM0");
    /* copies: overrun, wrong direction, memset past the end */
    CHECK(api->copy_h2d(s, buf, host, 16 * sizeof(float)) == ST_OK);
    CHECK(api->copy_h2d(s, buf, host, 17 * sizeof(float)) == ST_INVALID);
    CHECK(api->copy_d2h(s, host, host + 16, 4) == ST_INVALID);
    CHECK_HAS(api->last_error(), "copy_d2h: src");
    CHECK(api->copy_d2d(s, buf, other, 4) == ST_INVALID);
    CHECK(api->memset_d(s, (char *)buf + 60, 0, 8) == ST_INVALID);
    CHECK(api->memset_d(s, (char *)buf + 60, 0, 4) == ST_OK);
    /* a freed buffer is no longer device memory */
    CHECK(api->mem_free(d, buf) == ST_OK);
    CHECK(run_scale(api, s, buf, 2.0f) == ST_INVALID);
    CHECK(api->mem_free(d1, other) == ST_OK);
    CHECK(api->stream_destroy(s) == ST_OK);
    CHECK(api->device_close(d) == ST_OK);
    CHECK(api->device_close(d1) == ST_OK);
    unload_sim();

    /* check_ptrs=0 turns the check off (ops then run on whatever memory they are given) */
    api = load_sim("mem=1MiB,check_ptrs=0");
    if (!api) {
        CHECK(0);
        return;
    }
    CHECK(api->device_open(0, &d) == ST_OK);
    CHECK(api->stream_create(d, &s) == ST_OK);
    for (int i = 0; i < 16; i++) host[i] = (float)i;
    CHECK(run_scale(api, s, host, 2.0f) == ST_OK);
    CHECK(host[3] == 6.0f);
    CHECK(api->stream_destroy(s) == ST_OK);
    CHECK(api->device_close(d) == ST_OK);
    unload_sim();
}

static void test_probe_reasons(void) {
    st_probe_report r;
    const st_backend_api *api = load_sim("devices=4,mem=2GiB,dev3.mem=512MiB");
    if (api) {
        memset(&r, 0, sizeof r);
        r.size = sizeof r;
        CHECK(api->probe(&r) == ST_OK);
        CHECK(r.n_devices == 4);
        st_device_props p;
        memset(&p, 0, sizeof p);
        p.size = sizeof p;
        CHECK(api->device_props(3, &p) == ST_OK && p.mem_total == 512ull << 20 && p.mem_free == 512ull << 20);
        CHECK(api->device_props(0, &p) == ST_OK && p.mem_total == 2ull << 30);
        CHECK(api->device_props(4, &p) == ST_INVALID);
        /* a caller with an older, smaller props struct gets only what fits */
        st_device_props sp;
        memset(&sp, 0xee, sizeof sp);
        sp.size = 8;
        CHECK(api->device_props(0, &sp) == ST_OK && sp.size == 8 && sp.usable == 1);
        CHECK((unsigned char)sp.name[0] == 0xee);
    } else {
        CHECK(0);
    }
    unload_sim();
    /* configuration errors come back from probe, and the registry reports them */
    api = load_sim("devices=2,mem=2GB/s");
    CHECK(api == NULL);
    const st_backend_module *m = st_backend_registry_module(g_reg, 0);
    CHECK(m && m->stage == ST_STAGE_ABI);
    if (m) CHECK_HAS(m->reason, "INVALID: STRATA_SIM: 'mem=2GB/s': expected a size");
    unload_sim();
}

static void test_parser(void) {
    st_sim_config c;
    char err[512];
    CHECK(st_sim_config_parse("devices=4,mem=2GiB,bw=25GB/s,fail_alloc=3,fail_op=10,hang_op=12,hang_ms=60000,"
                              "lose_after=100,dev1.mem=512MiB",
                              &c, err, sizeof err) == 0);
    CHECK(c.n_devices == 4);
    CHECK(c.dev[0].mem == 2ull << 30 && c.dev[1].mem == 512ull << 20 && c.dev[3].mem == 2ull << 30);
    CHECK(c.dev[2].bw == 25e9);
    CHECK(c.dev[1].fail_alloc == 3 && c.dev[1].fail_op == 10 && c.dev[1].hang_op == 12);
    CHECK(c.dev[0].hang_ms == 60000 && c.dev[0].lose_after == 100);
    /* a per-device override wins wherever it is written */
    CHECK(st_sim_config_parse("dev0.mem=1MiB, mem=4MiB, devices=2", &c, err, sizeof err) == 0);
    CHECK(c.dev[0].mem == 1u << 20 && c.dev[1].mem == 4u << 20);
    CHECK(st_sim_config_parse("devices=1", &c, err, sizeof err) == 0);
    CHECK(c.dev[0].mem == 1u << 30 && c.dev[0].hang_ms == 60000 && c.dev[0].bw == 0 && c.dev[0].check_ptrs == 1);
    uint64_t v;
    CHECK(st_sim_parse_size("12345", &v) == 0 && v == 12345);
    CHECK(st_sim_parse_size("1.5GiB", &v) == 0 && v == 1610612736ull);
    CHECK(st_sim_parse_size("1000KB", &v) == 0 && v == 1000000);
    CHECK(st_sim_parse_size("64kib", &v) == 0 && v == 65536);
    CHECK(st_sim_parse_size("12XB", &v) == -1);
    CHECK(st_sim_parse_size("", &v) == -1);
    CHECK(st_sim_parse_size("-5MiB", &v) == -1);
    CHECK(st_sim_parse_size("0.5B", &v) == -1);

    struct {
        const char *text, *want;
    } bad[] = {
        {"devices=0", "expected a device count 1..64"},
        {"devices=65", "expected a device count 1..64"},
        {"mem=0", "expected a size above 0"},
        {"mem=lots", "'mem=lots': expected a size"},
        {"bw=25GB", "expected a rate like 25GB/s"},
        {"fail_op=-1", "'fail_op=-1': expected a whole number"},
        {"devices=2,dev2.mem=1MiB", "device 2 does not exist (devices=2)"},
        {"dev0.devices=3", "applies to the whole configuration"},
        {"frobnicate=1", "unknown key 'frobnicate'"},
        {"mem", "'mem' is not key=value"},
        {"mem=", "'mem=' is not key=value"},
        {"unusable=2", "(0 or 1)"},
        {"check_ptrs=yes", "(0 or 1)"},
        {"async_errors=2", "(0 or 1)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK(st_sim_config_parse(bad[i].text, &c, err, sizeof err) == -1);
        CHECK_HAS(err, bad[i].want);
        CHECK_HAS(err, "STRATA_SIM");
    }
    CHECK(st_sim_config_parse(NULL, &c, err, sizeof err) == -1);
    CHECK_STR(err, "STRATA_SIM is not set");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <strata-sim.so>\n", argv[0]);
        return 2;
    }
    g_sim_path = argv[1];
    test_parser();
    test_accounting();
    test_fail_alloc();
    test_fail_op_and_compute();
    test_async_errors();
    test_lose_after();
    test_hang_op();
    test_bandwidth_and_copies();
    test_device_addresses();
    test_memory_pressure();
    test_probe_reasons();
    TEST_DONE();
}
