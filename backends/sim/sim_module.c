/* SPDX-License-Identifier: Apache-2.0 */
/* strata-sim: simulated GPUs for tests. Exact memory capacities (st_hostmem), copy bandwidth
 * by sleeping bytes/bw, and fault injection (failed Nth allocation, failed/hung op K, device
 * lost after N ops), configured by the host's config string ($STRATA_SIM). Ops are core/ref's.
 * Devices of one configuration share a memory domain, so peer copies work between them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/module_util.h"
#include "sim/sim_internal.h"

#define SIM_VERSION "0.1.0"

static st_backend_api g_api;
static st_backend_api g_hd;            /* hostdev's stream/event slots, wrapped below */
static const st_host_api *g_host;      /* the host keeps it alive until shutdown */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static st_sim_config g_cfg;
static int g_cfg_state;                /* 0 = not parsed, 1 = ok, -1 = invalid */
static char g_cfg_err[ST_REASON_MAX];
static st_device *g_open[ST_SIM_MAX_DEVICES];
static st_hostmem g_pinned;

/* ---- configuration -------------------------------------------------------------------- */

static int config_load(void) {
    if (g_cfg_state) return g_cfg_state;
    const char *text = st_mod_config();
    if (!text || !*text) {
        snprintf(g_cfg_err, sizeof g_cfg_err, "STRATA_SIM is not set");
        g_cfg_state = -2;
        return g_cfg_state;
    }
    if (st_sim_config_parse(text, &g_cfg, g_cfg_err, sizeof g_cfg_err) != 0) {
        g_cfg_state = -1;
        return g_cfg_state;
    }
    st_hostmem_init(&g_pinned, g_cfg.pinned);
    g_cfg_state = 1;
    return 1;
}

static uint64_t domain_id(uint32_t group) { return ((g_cfg.hash ^ 0x51D0000000000000ull) << 8) | (uint64_t)(group + 1); }

/* ---- identity and probe --------------------------------------------------------------- */

static st_status sim_probe(st_probe_report *out) {
    if (!out) return st_mod_fail(ST_INVALID, "probe: NULL report");
    uint32_t size = out->size;
    memset(out, 0, size < sizeof *out ? size : sizeof *out);
    out->size = size;
    pthread_mutex_lock(&g_mu);
    int st = config_load();
    pthread_mutex_unlock(&g_mu);
    snprintf(out->build_archs, sizeof out->build_archs, "sim");
    if (st < 0) {
        snprintf(out->reason, sizeof out->reason, "%s", g_cfg_err);
        out->status = st == -2 ? ST_NO_DEVICE : ST_INVALID;
        return st_mod_fail((st_status)out->status, "%s", g_cfg_err);
    }
    out->n_devices = g_cfg.n_devices;
    uint32_t usable = 0;
    for (uint32_t i = 0; i < g_cfg.n_devices; i++) usable += !g_cfg.dev[i].unusable;
    if (!usable) {
        snprintf(out->reason, sizeof out->reason, "all %u simulated devices are marked unusable", g_cfg.n_devices);
        out->status = ST_ARCH;
        return st_mod_fail(ST_ARCH, "%s", out->reason);
    }
    out->status = ST_OK;
    return ST_OK;
}

static st_status sim_device_props(uint32_t index, st_device_props *out) {
    if (!out) return st_mod_fail(ST_INVALID, "device_props: NULL output");
    pthread_mutex_lock(&g_mu);
    int st = config_load();
    if (st < 0 || index >= g_cfg.n_devices) {
        pthread_mutex_unlock(&g_mu);
        return st < 0 ? st_mod_fail(ST_NO_DEVICE, "%s", g_cfg_err)
                      : st_mod_fail(ST_INVALID, "device_props: no simulated device %u", index);
    }
    const st_sim_dev_config *c = &g_cfg.dev[index];
    st_device_props p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.usable = !c->unusable;
    snprintf(p.name, sizeof p.name, "Simulated GPU %u", index);
    snprintf(p.vendor, sizeof p.vendor, "sim");
    snprintf(p.arch, sizeof p.arch, "sim");
    if (c->unusable) snprintf(p.reason, sizeof p.reason, "simulated unusable device (STRATA_SIM dev%u.unusable=1)", index);
    memcpy(p.uuid, "SIM:", 4);
    memcpy(p.uuid + 4, &g_cfg.hash, 8);
    memcpy(p.uuid + 12, &index, 4);
    p.domain = domain_id(c->domain);
    p.mem_total = c->mem;
    p.mem_free = c->mem;
    if (g_open[index]) {
        p.mem_free = st_hostmem_free_bytes(&g_open[index]->mem);
        p.mem_used_self = c->mem - p.mem_free;
    }
    p.max_alloc = c->mem;
    p.caps = ST_CAP_F16 | ST_CAP_BF16 | ST_CAP_PEER;
    p.compute_major = 1;
    p.n_cores = 1;
    p.mem_bw_gbs = c->bw / 1e9;
    pthread_mutex_unlock(&g_mu);
    /* copy only as much as the caller's struct holds */
    uint32_t n = out->size < sizeof p ? out->size : (uint32_t)sizeof p;
    memcpy(out, &p, n);
    out->size = n;
    return ST_OK;
}

static int sim_op_supported(uint32_t index, uint32_t op, uint32_t wtype) {
    pthread_mutex_lock(&g_mu);
    int ok = config_load() > 0 && index < g_cfg.n_devices && !g_cfg.dev[index].unusable;
    pthread_mutex_unlock(&g_mu);
    return ok && op < ST_OP_COUNT && st_sim_ref_supported(op, wtype);
}

/* ---- device addresses ----------------------------------------------------------------- */

st_status st_sim_check_ptr(st_device *d, const char *what, const void *first, const void *last) {
    if (!d->cfg.check_ptrs || !first) return ST_OK;
    pthread_mutex_lock(&d->mu);
    int ok = st_sim_ranges_contains(&d->live, first, last);
    pthread_mutex_unlock(&d->mu);
    if (ok) return ST_OK;
    if (first == last)
        return st_mod_fail(ST_INVALID, "%s: %p is not device memory of %s (a host pointer, another device's, or "
                           "freed)", what, first, d->name);
    return st_mod_fail(ST_INVALID, "%s: [%p, %p] is not inside one allocation of %s (past its end, a host pointer, "
                       "or freed)", what, first, last, d->name);
}

/* ---- devices -------------------------------------------------------------------------- */

static st_status lost_error(st_device *d, const char *what) {
    return st_mod_fail(ST_DEVICE_LOST, "%s on %s: device lost (after %llu ops, lose_after=%llu)", what, d->name,
                       (unsigned long long)d->cfg.lose_after, (unsigned long long)d->cfg.lose_after);
}

static st_status before_alloc(void *user, uint64_t bytes, uint64_t nth) {
    st_device *d = user;
    if (d->cfg.fail_alloc && nth == d->cfg.fail_alloc)
        return st_mod_fail(ST_OOM, "alloc %.1f MiB on %s: injected failure of allocation #%llu (fail_alloc=%llu)",
                           bytes / 1048576.0, d->name, (unsigned long long)nth, (unsigned long long)nth);
    return ST_OK;
}

static st_status sim_device_open(uint32_t index, st_device **out) {
    if (!out) return st_mod_fail(ST_INVALID, "device_open: NULL output");
    *out = NULL;
    pthread_mutex_lock(&g_mu);
    int st = config_load();
    if (st < 0) {
        pthread_mutex_unlock(&g_mu);
        return st_mod_fail(st == -2 ? ST_NO_DEVICE : ST_INVALID, "%s", g_cfg_err);
    }
    if (index >= g_cfg.n_devices || g_cfg.dev[index].unusable) {
        pthread_mutex_unlock(&g_mu);
        return st_mod_fail(ST_INVALID, "device_open: simulated device %u %s", index,
                           index >= g_cfg.n_devices ? "does not exist" : "is marked unusable");
    }
    if (g_open[index]) {
        pthread_mutex_unlock(&g_mu);
        return st_mod_fail(ST_INVALID, "device_open: SIM%u is already open", index);
    }
    st_device *d = calloc(1, sizeof *d);
    if (!d) {
        pthread_mutex_unlock(&g_mu);
        return st_mod_fail(ST_OOM, "device_open: out of host memory");
    }
    d->index = index;
    snprintf(d->name, sizeof d->name, "SIM%u", index);
    d->cfg = g_cfg.dev[index];
    st_hostmem_init(&d->mem, d->cfg.mem);
    d->mem.before_alloc = before_alloc;
    d->mem.user = d;
    pthread_mutex_init(&d->mu, NULL);
    g_open[index] = d;
    pthread_mutex_unlock(&g_mu);
    *out = d;
    return ST_OK;
}

/* Release everything the device still holds; returns the number of leaked buffers. */
static uint64_t device_release(st_device *d, uint64_t *leaked_bytes) {
    uint64_t n = d->live.n;
    *leaked_bytes = d->mem.used;
    for (uint64_t i = 0; i < d->live.n; i++) st_hostmem_free(&d->mem, (void *)d->live.v[i].base);
    st_sim_ranges_free(&d->live);
    return n;
}

static st_status sim_device_close(st_device *d) {
    if (!d) return st_mod_fail(ST_INVALID, "device_close: NULL device");
    pthread_mutex_lock(&g_mu);
    if (d->index >= ST_SIM_MAX_DEVICES || g_open[d->index] != d) {
        pthread_mutex_unlock(&g_mu);
        return st_mod_fail(ST_INVALID, "device_close: not an open simulated device");
    }
    g_open[d->index] = NULL;
    pthread_mutex_unlock(&g_mu);
    uint64_t bytes;
    uint64_t n = device_release(d, &bytes);
    char name[16];
    memcpy(name, d->name, sizeof name);
    pthread_mutex_destroy(&d->mu);
    free(d);
    if (n)
        return st_mod_fail(ST_INVALID, "device_close of %s with %llu buffers (%llu bytes) still allocated; released them",
                           name, (unsigned long long)n, (unsigned long long)bytes);
    return ST_OK;
}

static st_status sim_mem_info(st_device *d, uint64_t *free_bytes, uint64_t *total_bytes) {
    if (!d) return st_mod_fail(ST_INVALID, "mem_info: NULL device");
    pthread_mutex_lock(&d->mu);
    int lost = d->lost;
    pthread_mutex_unlock(&d->mu);
    if (lost) return lost_error(d, "mem_info");
    if (free_bytes) *free_bytes = st_hostmem_free_bytes(&d->mem);
    if (total_bytes) *total_bytes = d->cfg.mem;
    return ST_OK;
}

/* ---- memory --------------------------------------------------------------------------- */

static int host_pressure(st_device *d, uint64_t bytes) {
    if (!g_host || g_host->size < offsetof(st_host_api, memory_pressure) + sizeof g_host->memory_pressure ||
        !g_host->memory_pressure)
        return 0;
    return g_host->memory_pressure(g_host->user, d->index, bytes);
}

static st_status sim_mem_alloc(st_device *d, uint64_t bytes, void **out) {
    if (!d || !out) return st_mod_fail(ST_INVALID, "mem_alloc: NULL argument");
    *out = NULL;
    pthread_mutex_lock(&d->mu);
    if (d->lost) {
        pthread_mutex_unlock(&d->mu);
        return lost_error(d, "mem_alloc");
    }
    pthread_mutex_unlock(&d->mu);
    st_status s;
    int tries = 0;
    for (;;) {
        s = st_hostmem_alloc(&d->mem, d->name, bytes, out);
        /* a real shortage (not an injected one) asks the host once to make room */
        if (s == ST_OOM && tries++ == 0 && bytes <= d->cfg.mem && st_hostmem_free_bytes(&d->mem) < bytes &&
            host_pressure(d, bytes))
            continue;
        break;
    }
    if (s != ST_OK) return s;
    pthread_mutex_lock(&d->mu);
    int rc = st_sim_ranges_insert(&d->live, *out, bytes);
    pthread_mutex_unlock(&d->mu);
    if (rc) {
        st_hostmem_free(&d->mem, *out);
        *out = NULL;
        return st_mod_fail(ST_OOM, "mem_alloc on %s: out of host memory for bookkeeping", d->name);
    }
    return ST_OK;
}

static st_status sim_mem_free(st_device *d, void *ptr) {
    if (!d) return st_mod_fail(ST_INVALID, "mem_free: NULL device");
    if (!ptr) return ST_OK;
    pthread_mutex_lock(&d->mu);
    int rc = st_sim_ranges_remove(&d->live, ptr);
    int lost = d->lost;
    pthread_mutex_unlock(&d->mu);
    if (rc)
        return st_mod_fail(ST_INVALID, "mem_free of %p on %s: not a live allocation of this device (double free or "
                           "another device's pointer)", ptr, d->name);
    st_hostmem_free(&d->mem, ptr);
    /* a lost device still releases the memory, so closing it leaks nothing */
    return lost ? lost_error(d, "mem_free") : ST_OK;
}

static st_status sim_host_alloc(st_device *d, uint64_t bytes, void **out) {
    if (!d || !out) return st_mod_fail(ST_INVALID, "host_alloc: NULL argument");
    return st_hostmem_alloc(&g_pinned, "pinned host memory", bytes, out);
}

static st_status sim_host_free(st_device *d, void *ptr) {
    (void)d;
    return st_hostmem_free(&g_pinned, ptr);
}

/* ---- copies: fault plan, then bandwidth, then the bytes ------------------------------- */

static void sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static st_status copy_enter(st_stream *s, const char *what, uint64_t bytes, double bw) {
    if (!s || !s->dev) return st_mod_fail(ST_INVALID, "%s: NULL stream", what);
    st_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    if (d->lost) {
        pthread_mutex_unlock(&d->mu);
        return lost_error(d, what);
    }
    uint64_t n = ++d->n_copies;
    pthread_mutex_unlock(&d->mu);
    if (d->cfg.fail_copy && n == d->cfg.fail_copy)
        return st_mod_fail(ST_IO, "%s of %llu bytes on %s: injected failure of copy #%llu (fail_copy=%llu)", what,
                           (unsigned long long)bytes, d->name, (unsigned long long)n, (unsigned long long)n);
    if (bw > 0 && bytes) sleep_ns((uint64_t)(bytes / bw * 1e9));
    return ST_OK;
}

static st_status do_copy(const char *what, void *dst, const void *src, uint64_t bytes) {
    if (bytes && (!dst || !src)) return st_mod_fail(ST_INVALID, "%s of %llu bytes with a NULL pointer", what, (unsigned long long)bytes);
    if (bytes) memmove(dst, src, bytes);
    return ST_OK;
}

/* [p, p + bytes) lies inside one allocation of d */
static st_status check_span(st_device *d, const char *what, const void *p, uint64_t bytes) {
    if (!bytes) return ST_OK;
    return st_sim_check_ptr(d, what, p, (const char *)p + bytes - 1);
}

static st_status sim_copy_h2d(st_stream *s, void *dst, const void *src, uint64_t bytes) {
    st_status st = copy_enter(s, "copy_h2d", bytes, s && s->dev ? s->dev->cfg.bw : 0);
    if (st == ST_OK) st = check_span(s->dev, "copy_h2d: dst", dst, bytes);
    return st != ST_OK ? st : do_copy("copy_h2d", dst, src, bytes);
}

static st_status sim_copy_d2h(st_stream *s, void *dst, const void *src, uint64_t bytes) {
    st_status st = copy_enter(s, "copy_d2h", bytes, s && s->dev ? s->dev->cfg.bw : 0);
    if (st == ST_OK) st = check_span(s->dev, "copy_d2h: src", src, bytes);
    return st != ST_OK ? st : do_copy("copy_d2h", dst, src, bytes);
}

static st_status sim_copy_d2d(st_stream *s, void *dst, const void *src, uint64_t bytes) {
    st_status st = copy_enter(s, "copy_d2d", bytes, 0); /* device-internal: not limited by the link */
    if (st == ST_OK) st = check_span(s->dev, "copy_d2d: src", src, bytes);
    if (st == ST_OK) st = check_span(s->dev, "copy_d2d: dst", dst, bytes);
    return st != ST_OK ? st : do_copy("copy_d2d", dst, src, bytes);
}

static st_status sim_copy_peer(st_stream *s, void *dst, st_device *src_dev, const void *src, uint64_t bytes) {
    if (!src_dev || !s || !s->dev) return st_mod_fail(ST_INVALID, "copy_peer: NULL argument");
    if (src_dev->cfg.domain != s->dev->cfg.domain)
        return st_mod_fail(ST_INVALID, "copy_peer %s -> %s: different memory domains (%u and %u)", src_dev->name,
                           s->dev->name, src_dev->cfg.domain, s->dev->cfg.domain);
    pthread_mutex_lock(&src_dev->mu);
    int lost = src_dev->lost;
    pthread_mutex_unlock(&src_dev->mu);
    if (lost) return lost_error(src_dev, "copy_peer");
    double bw = s->dev->cfg.bw;
    if (src_dev->cfg.bw > 0 && (bw == 0 || src_dev->cfg.bw < bw)) bw = src_dev->cfg.bw;
    st_status st = copy_enter(s, "copy_peer", bytes, bw);
    if (st == ST_OK) st = check_span(src_dev, "copy_peer: src", src, bytes);
    if (st == ST_OK) st = check_span(s->dev, "copy_peer: dst", dst, bytes);
    return st != ST_OK ? st : do_copy("copy_peer", dst, src, bytes);
}

static st_status sim_memset(st_stream *s, void *dst, int value, uint64_t bytes) {
    if (!s || !s->dev) return st_mod_fail(ST_INVALID, "memset: NULL stream");
    pthread_mutex_lock(&s->dev->mu);
    int lost = s->dev->lost;
    pthread_mutex_unlock(&s->dev->mu);
    if (lost) return lost_error(s->dev, "memset");
    if (bytes && !dst) return st_mod_fail(ST_INVALID, "memset with a NULL pointer");
    st_status st = check_span(s->dev, "memset: dst", dst, bytes);
    if (st != ST_OK) return st;
    if (bytes) memset(dst, value, bytes);
    return ST_OK;
}

/* ---- streams and events: hostdev's, behind a lost-device check ------------------------ */

static st_status sim_stream_create(st_device *d, st_stream **out) {
    if (!d) return st_mod_fail(ST_INVALID, "stream_create: NULL device");
    pthread_mutex_lock(&d->mu);
    int lost = d->lost;
    pthread_mutex_unlock(&d->mu);
    if (lost) return lost_error(d, "stream_create");
    return g_hd.stream_create(d, out);
}

static st_status sim_stream_sync(st_stream *s) {
    if (!s || !s->dev) return st_mod_fail(ST_INVALID, "stream_sync: NULL stream");
    pthread_mutex_lock(&s->dev->mu);
    int lost = s->dev->lost;
    pthread_mutex_unlock(&s->dev->mu);
    if (lost) return lost_error(s->dev, "stream_sync");
    return st_sim_take_pending(s->dev);
}

static st_status sim_event_record(st_event *e, st_stream *s) {
    st_status st = sim_stream_sync(s);
    return st != ST_OK ? st : g_hd.event_record(e, s);
}

static st_status sim_event_wait(st_stream *s, st_event *e) {
    st_status st = sim_stream_sync(s);
    return st != ST_OK ? st : g_hd.event_wait(s, e);
}

/* ---- shutdown and entry --------------------------------------------------------------- */

static void sim_shutdown(void) {
    pthread_mutex_lock(&g_mu);
    for (uint32_t i = 0; i < ST_SIM_MAX_DEVICES; i++) {
        st_device *d = g_open[i];
        if (!d) continue;
        uint64_t bytes;
        uint64_t n = device_release(d, &bytes);
        if (n) st_mod_log(ST_LOG_WARN, "%s still open at shutdown with %llu buffers; released", d->name, (unsigned long long)n);
        pthread_mutex_destroy(&d->mu);
        free(d);
        g_open[i] = NULL;
    }
    g_cfg_state = 0;
    g_host = NULL;
    pthread_mutex_unlock(&g_mu);
}

ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor,
                                            const st_backend_api **out) {
    if (!out) return ST_INVALID;
    memset(&g_api, 0, sizeof g_api);
    g_api.size = sizeof g_api;
    g_api.abi_major = ST_ABI_MAJOR;
    g_api.abi_minor = ST_ABI_MINOR;
    g_api.name = "sim";
    g_api.version = SIM_VERSION;
    g_api.last_error = st_mod_last_error;
    *out = &g_api;
    st_status s = st_mod_init(host, abi_major, abi_minor, "sim");
    if (s != ST_OK) return s;
    pthread_mutex_lock(&g_mu);
    g_host = host;
    g_cfg_state = 0;
    pthread_mutex_unlock(&g_mu);

    st_hostdev_fill_api(&g_hd);
    g_api.probe = sim_probe;
    g_api.device_props = sim_device_props;
    g_api.op_supported = sim_op_supported;
    g_api.device_open = sim_device_open;
    g_api.device_close = sim_device_close;
    g_api.mem_info = sim_mem_info;
    g_api.mem_alloc = sim_mem_alloc;
    g_api.mem_free = sim_mem_free;
    g_api.host_alloc = sim_host_alloc;
    g_api.host_free = sim_host_free;
    g_api.copy_h2d = sim_copy_h2d;
    g_api.copy_d2h = sim_copy_d2h;
    g_api.copy_d2d = sim_copy_d2d;
    g_api.copy_peer = sim_copy_peer;
    g_api.memset_d = sim_memset;
    g_api.stream_create = sim_stream_create;
    g_api.stream_destroy = g_hd.stream_destroy;
    g_api.stream_sync = sim_stream_sync;
    g_api.event_create = g_hd.event_create;
    g_api.event_destroy = g_hd.event_destroy;
    g_api.event_record = sim_event_record;
    g_api.event_wait = sim_event_wait;
    g_api.event_sync = g_hd.event_sync;
    g_api.ops = st_sim_ops();
    g_api.shutdown = sim_shutdown;
    return ST_OK;
}
