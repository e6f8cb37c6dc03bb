/* SPDX-License-Identifier: Apache-2.0 */
/* The scalar reference as a device: host memory and core/ref's ops behind a backend table, so
 * the model runs on the oracle without any module (tests, and `--backend ref` for logits
 * that other backends and peers are compared with). */
#include "model/ref_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/aligned.h"
#include "ref/ref.h"

static int g_unified = 1;
static _Thread_local char g_err[256];

struct st_device {
    int dummy;
};
struct st_stream {
    int dummy;
};
struct st_event {
    int dummy;
};
static struct st_device g_dev;

static st_status probe(st_probe_report *out) {
    out->status = ST_OK;
    out->n_devices = 1;
    return ST_OK;
}
static st_status props(uint32_t index, st_device_props *out) {
    if (index != 0) return ST_INVALID;
    uint32_t size = out->size;
    memset(out, 0, size);
    out->size = size;
    out->usable = 1;
    snprintf(out->name, sizeof out->name, "scalar reference (host)");
    snprintf(out->vendor, sizeof out->vendor, "ref");
    out->caps = g_unified ? ST_CAP_UNIFIED : 0;
    out->mem_total = 1ull << 34;
    out->mem_free = 1ull << 34;
    return ST_OK;
}
static int op_supported(uint32_t index, uint32_t op, uint32_t type) {
    return index == 0 && st_ref_op_supported(op, type);
}
static const char *last_error(void) { return g_err[0] ? g_err : st_ref_last_error(); }
static st_status dev_open(uint32_t index, st_device **out) {
    if (index != 0) return ST_INVALID;
    *out = &g_dev;
    return ST_OK;
}
static st_status dev_close(st_device *d) {
    (void)d;
    return ST_OK;
}
static st_status mem_info(st_device *d, uint64_t *f, uint64_t *t) {
    (void)d;
    *f = *t = 1ull << 34;
    return ST_OK;
}
static st_status mem_alloc(st_device *d, uint64_t bytes, void **out) {
    (void)d;
    *out = st_aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!*out) {
        snprintf(g_err, sizeof g_err, "host allocation of %llu bytes failed", (unsigned long long)bytes);
        return ST_OOM;
    }
    return ST_OK;
}
static st_status mem_free(st_device *d, void *p) {
    (void)d;
    st_aligned_free(p);
    return ST_OK;
}
static st_status copy(st_stream *s, void *dst, const void *src, uint64_t n) {
    (void)s;
    memcpy(dst, src, n);
    return ST_OK;
}
static st_status memset_d(st_stream *s, void *dst, int v, uint64_t n) {
    (void)s;
    memset(dst, v, n);
    return ST_OK;
}
static struct st_stream g_stream;
static st_status stream_create(st_device *d, st_stream **out) {
    (void)d;
    *out = &g_stream;
    return ST_OK;
}
static st_status stream_destroy(st_stream *s) {
    (void)s;
    return ST_OK;
}
static st_status stream_sync(st_stream *s) {
    (void)s;
    return ST_OK;
}

static st_backend_api g_api;

const st_backend_api *st_ref_device_api(int unified) {
    g_unified = unified;
    memset(&g_api, 0, sizeof g_api);
    g_api.size = sizeof g_api;
    g_api.abi_major = ST_ABI_MAJOR;
    g_api.abi_minor = ST_ABI_MINOR;
    g_api.name = "ref";
    g_api.version = "test";
    g_api.probe = probe;
    g_api.device_props = props;
    g_api.op_supported = op_supported;
    g_api.last_error = last_error;
    g_api.device_open = dev_open;
    g_api.device_close = dev_close;
    g_api.mem_info = mem_info;
    g_api.mem_alloc = mem_alloc;
    g_api.mem_free = mem_free;
    g_api.copy_h2d = copy;
    g_api.copy_d2h = copy;
    g_api.copy_d2d = copy;
    g_api.memset_d = memset_d;
    g_api.stream_create = stream_create;
    g_api.stream_destroy = stream_destroy;
    g_api.stream_sync = stream_sync;
    g_api.ops = st_ref_ops_table();
    return &g_api;
}
