/* SPDX-License-Identifier: Apache-2.0 */
/* Test module: a well-formed module with one usable "CPU" device, used under several file
 * names (strata-cpu-avx2.so, strata-cpu-avx512.so, ...) to test variant choice. When it is
 * loaded (dlopen runs its constructor) it appends its own path to $STRATA_TEST_MARK, so a test
 * can prove a variant was never opened. -DST_TEST_SCORE=N adds st_backend_score returning N
 * and reports version "2.0" instead of "1.0". */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/backend.h"

__attribute__((constructor)) static void mark_loaded(void) {
    const char *f = getenv("STRATA_TEST_MARK");
    Dl_info info;
    if (!f || !dladdr((void *)mark_loaded, &info) || !info.dli_fname) return;
    FILE *fp = fopen(f, "a");
    if (!fp) return;
    fprintf(fp, "%s\n", info.dli_fname);
    fclose(fp);
}

#ifdef ST_TEST_SCORE
ST_MODULE_EXPORT int st_backend_score(void) { return ST_TEST_SCORE; }
#define VERSION "2.0"
#else
#define VERSION "1.0"
#endif

static uint32_t g_threads; /* host's n_threads, reported as n_cores */

static const char *last_error(void) { return "fake cpu: not implemented"; }
static st_status probe(st_probe_report *r) {
    r->status = ST_OK;
    r->n_devices = 1;
    snprintf(r->build_archs, sizeof r->build_archs, "fake");
    return ST_OK;
}
static st_status props(uint32_t i, st_device_props *p) {
    if (i != 0) return ST_INVALID;
    memset(p, 0, sizeof *p);
    p->size = sizeof *p;
    p->usable = 1;
    snprintf(p->name, sizeof p->name, "Fake CPU");
    snprintf(p->vendor, sizeof p->vendor, "cpu");
    snprintf(p->arch, sizeof p->arch, "fake");
    memcpy(p->uuid, "fake-cpu-uuid-01", 16);
    p->domain = 1;
    p->mem_total = 1u << 20;
    p->mem_free = 1u << 20;
    p->caps = ST_CAP_UNIFIED;
    p->n_cores = g_threads;
    return ST_OK;
}
static int op_supported(uint32_t i, uint32_t op, uint32_t t) {
    (void)i; (void)op; (void)t;
    return 0;
}
static st_status unsup(void) { return ST_UNSUPPORTED; }
static const st_backend_ops g_ops = {.size = sizeof(st_backend_ops)};
static st_backend_api g_api;

ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor,
                                            const st_backend_api **out) {
    (void)abi_minor;
    g_threads = host && host->size >= offsetof(st_host_api, n_threads) + 4 ? host->n_threads : 0;
    memset(&g_api, 0, sizeof g_api);
    g_api.size = sizeof g_api;
    g_api.abi_major = ST_ABI_MAJOR;
    g_api.abi_minor = ST_ABI_MINOR;
    g_api.name = "cpu";
    g_api.version = VERSION;
    g_api.probe = probe;
    g_api.device_props = props;
    g_api.op_supported = op_supported;
    g_api.last_error = last_error;
    /* Every other required slot: a function that answers UNSUPPORTED (never called by the
     * loader tests; the casts only fill the slots). */
    void (*u)(void) = (void (*)(void))unsup;
#define FILL(slot) memcpy(&g_api.slot, &u, sizeof u)
    FILL(device_open); FILL(device_close); FILL(mem_info); FILL(mem_alloc); FILL(mem_free);
    FILL(copy_h2d); FILL(copy_d2h); FILL(copy_d2d); FILL(memset_d); FILL(stream_create);
    FILL(stream_destroy); FILL(stream_sync); FILL(event_create); FILL(event_destroy);
    FILL(event_record); FILL(event_wait); FILL(event_sync);
#undef FILL
    g_api.ops = &g_ops;
    *out = &g_api;
    return abi_major == ST_ABI_MAJOR ? ST_OK : ST_ABI;
}
