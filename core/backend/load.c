/* SPDX-License-Identifier: Apache-2.0 */
/* Taking one module file through the stages: dlopen, entry symbol, ABI and table checks,
 * probe, device properties. Every failure is recorded on the module; none is fatal. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/registry_internal.h"
#include "platform/platform.h"

/* Size of the module table that ABI 1.0 defines: every slot up to and including shutdown. */
#define ST_API_V1_0_SIZE (offsetof(st_backend_api, shutdown) + sizeof(void (*)(void)))
/* Smallest ops table we accept (a table may end early: the missing ops are absent). */
#define ST_OPS_MIN_SIZE (offsetof(st_backend_ops, get_rows))

static void set_reason(st_backend_module *m, st_backend_stage stage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(st_backend_module *m, st_backend_stage stage, const char *fmt, ...) {
    m->stage = stage;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->reason, sizeof m->reason, fmt, ap);
    va_end(ap);
}

static void copy_bounded(char *dst, size_t dlen, const char *src, size_t slen) {
    size_t n = src ? strnlen(src, slen) : 0;
    if (n >= dlen) n = dlen - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = 0;
}

static const char *module_error(const st_backend_module *m, const st_backend_api *api) {
    (void)m;
    if (!api || api->size < offsetof(st_backend_api, last_error) + sizeof api->last_error || !api->last_error)
        return "";
    const char *e = api->last_error();
    return e ? e : "";
}

/* Nonzero when a table of ABI minor `have` must fill a required slot that minor `added` added. */
static int minor_has(uint32_t have, uint32_t added) { return have >= added; }

/* The first slot the table's ABI minor requires that is NULL (ST_BACKEND_API_SLOTS), or NULL. */
static const char *missing_slot(const st_backend_api *a) {
    if (!a->name) return "name";
#define ST_REQ_FN_(slot, ret, params, req, minor) \
    if ((req) && minor_has(a->abi_minor, minor) && !a->slot) return #slot;
#define ST_REQ_PTR_(slot, type, req, minor) \
    if ((req) && minor_has(a->abi_minor, minor) && !a->slot) return #slot;
    ST_BACKEND_API_SLOTS(ST_REQ_FN_, ST_REQ_PTR_)
#undef ST_REQ_FN_
#undef ST_REQ_PTR_
    return NULL;
}

void st_backend_module_unload(st_backend_module *m) {
    if (!m->dl) return;
    if (m->api && m->api->shutdown) m->api->shutdown();
    char err[256];
    if (st_dl_close(m->dl, err, sizeof err) != 0) st_backend_log(ST_LOG_WARN, m->backend, "dlclose: %s", err);
    m->dl = NULL;
    m->api = NULL;
}

static void read_devices(st_backend_module *m, const st_backend_api *api) {
    uint32_t n = m->probe.n_devices;
    if (n > ST_BACKEND_MAX_DEVICES) n = ST_BACKEND_MAX_DEVICES;
    if (!n) return;
    m->devices = calloc(n, sizeof *m->devices);
    if (!m->devices) return;
    m->n_devices = n;
    for (uint32_t i = 0; i < n; i++) {
        st_backend_device_entry *d = &m->devices[i];
        d->index = i;
        st_device_props p;
        memset(&p, 0, sizeof p);
        p.size = sizeof p;
        st_status s = api->device_props(i, &p);
        if (s != ST_OK) {
            snprintf(d->note, sizeof d->note, "device_props failed: %s: %s", st_backend_status_name(s),
                     module_error(m, api));
            continue;
        }
        /* Keep what the module wrote but never trust its strings to be terminated. */
        p.size = sizeof p;
        p.name[sizeof p.name - 1] = 0;
        p.vendor[sizeof p.vendor - 1] = 0;
        p.arch[sizeof p.arch - 1] = 0;
        p.reason[sizeof p.reason - 1] = 0;
        d->props = p;
        d->props_ok = 1;
        if (!p.usable) snprintf(d->note, sizeof d->note, "unusable: %s", p.reason[0] ? p.reason : "(module gave no reason)");
    }
}

void st_backend_module_load(st_backend_registry *reg, st_backend_module *m, int need_score) {
    (void)reg;
    uint64_t t0 = st_now_ns();
    char err[ST_BACKEND_TEXT_MAX];
    m->dl = st_dl_open(m->path, err, sizeof err);
    if (!m->dl) {
        set_reason(m, ST_STAGE_FOUND, "dlopen failed: %s", err);
        return;
    }
    m->stage = ST_STAGE_LOADED;
    void *score_sym = st_dl_sym(m->dl, ST_BACKEND_SCORE_SYMBOL);
    if (score_sym) {
        st_backend_score_fn score = (st_backend_score_fn)score_sym;
        m->has_score = 1;
        m->score = score();
    }
    if (need_score && !m->has_score) {
        set_reason(m, ST_STAGE_LOADED, "not used: unknown cpu variant '%s' and the module exports no %s", m->variant,
                   ST_BACKEND_SCORE_SYMBOL);
        st_backend_module_unload(m);
        return;
    }
    void *entry_sym = st_dl_sym(m->dl, ST_BACKEND_ENTRY_SYMBOL);
    if (!entry_sym) {
        set_reason(m, ST_STAGE_LOADED, "no %s symbol (not a Strata backend module?)", ST_BACKEND_ENTRY_SYMBOL);
        st_backend_module_unload(m);
        return;
    }
    if (m->has_score && m->score <= 0) {
        set_reason(m, ST_STAGE_LOADED, "not used: st_backend_score() returned %d (cannot run on this machine)", m->score);
        st_backend_module_unload(m);
        return;
    }
    st_backend_entry_fn entry = (st_backend_entry_fn)entry_sym;
    const char *cfg = st_backend_config_for(m->backend);
    if (cfg) m->config = strdup(cfg);
    st_backend_host_fill(&m->host, m, m->config);
    const st_backend_api *api = NULL;
    st_status s = entry(&m->host, ST_ABI_MAJOR, ST_ABI_MINOR, &api);
    m->stage = ST_STAGE_ENTRY;
    /* The table's fixed header (size, abi_major, abi_minor) is readable when size covers it. */
    int header_ok = api && api->size >= offsetof(st_backend_api, reserved);
    if (header_ok) {
        m->abi_major = api->abi_major;
        m->abi_minor = api->abi_minor;
        if (api->size >= offsetof(st_backend_api, name) + sizeof api->name && api->name)
            copy_bounded(m->name, sizeof m->name, api->name, ST_NAME_MAX);
        if (api->size >= offsetof(st_backend_api, version) + sizeof api->version && api->version)
            copy_bounded(m->version, sizeof m->version, api->version, ST_NAME_MAX);
    }
    if (header_ok && api->abi_major != ST_ABI_MAJOR) {
        set_reason(m, ST_STAGE_ENTRY, "ABI %u, host speaks %u", api->abi_major, ST_ABI_MAJOR);
        st_backend_module_unload(m);
        return;
    }
    if (s == ST_ABI) {
        set_reason(m, ST_STAGE_ENTRY, "module refused host ABI %u.%u%s%s", ST_ABI_MAJOR, ST_ABI_MINOR,
                   header_ok ? ": " : " and gave no table", module_error(m, header_ok ? api : NULL));
        st_backend_module_unload(m);
        return;
    }
    if (s != ST_OK) {
        const char *e = module_error(m, header_ok ? api : NULL);
        set_reason(m, ST_STAGE_ENTRY, "%s returned %s%s%s", ST_BACKEND_ENTRY_SYMBOL, st_backend_status_name(s),
                   *e ? ": " : "", e);
        st_backend_module_unload(m);
        return;
    }
    if (!api) {
        set_reason(m, ST_STAGE_ENTRY, "%s returned OK but no table", ST_BACKEND_ENTRY_SYMBOL);
        st_backend_module_unload(m);
        return;
    }
    if (api->size < ST_API_V1_0_SIZE) {
        set_reason(m, ST_STAGE_ENTRY, "table of %u bytes is smaller than ABI %u.0 requires (%zu bytes)", api->size,
                   ST_ABI_MAJOR, (size_t)ST_API_V1_0_SIZE);
        st_backend_module_unload(m);
        return;
    }
    const char *miss = missing_slot(api);
    if (miss) {
        set_reason(m, ST_STAGE_ENTRY, "table lacks the required slot '%s'", miss);
        st_backend_module_unload(m);
        return;
    }
    if (api->ops->size < ST_OPS_MIN_SIZE) {
        set_reason(m, ST_STAGE_ENTRY, "ops table of %u bytes is smaller than its header", api->ops->size);
        st_backend_module_unload(m);
        return;
    }
    m->api = api;
    m->stage = ST_STAGE_ABI;

    memset(&m->probe, 0, sizeof m->probe);
    m->probe.size = sizeof m->probe;
    s = api->probe(&m->probe);
    m->probe.size = sizeof m->probe;
    m->probe.reason[sizeof m->probe.reason - 1] = 0;
    m->probe.build_archs[sizeof m->probe.build_archs - 1] = 0;
    m->probe.status = (uint32_t)s;
    if (s != ST_OK && m->probe.n_devices == 0) {
        const char *why = m->probe.reason[0] ? m->probe.reason : module_error(m, api);
        set_reason(m, ST_STAGE_ABI, "probe: %s%s%s", st_backend_status_name(s), *why ? ": " : "", why);
        m->load_ms = (st_now_ns() - t0) / 1e6;
        st_backend_module_unload(m);
        return;
    }
    m->stage = ST_STAGE_PROBE;
    read_devices(m, api);
    uint32_t n_usable = 0;
    for (uint32_t i = 0; i < m->n_devices; i++) n_usable += m->devices[i].props_ok && m->devices[i].props.usable;
    m->load_ms = (st_now_ns() - t0) / 1e6;
    if (s != ST_OK || n_usable == 0) {
        const char *why = m->probe.reason[0] ? m->probe.reason : module_error(m, api);
        if (s == ST_OK) why = "probe said OK but no device is usable";
        set_reason(m, ST_STAGE_PROBE, "%s%s%s (%u device%s found, none usable)", st_backend_status_name(s),
                   *why ? ": " : "", why, m->probe.n_devices, m->probe.n_devices == 1 ? "" : "s");
        if (s != ST_OK)
            for (uint32_t i = 0; i < m->n_devices; i++)
                if (m->devices[i].props.usable) {
                    m->devices[i].props.usable = 0;
                    snprintf(m->devices[i].note, sizeof m->devices[i].note, "unusable: probe returned %s",
                             st_backend_status_name(s));
                }
        st_backend_module_unload(m);
        return;
    }
    m->stage = ST_STAGE_DEVICES;
    m->reason[0] = 0;
}
