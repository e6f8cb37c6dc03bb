/* SPDX-License-Identifier: Apache-2.0 */
/* Device choice by name and index: see device_pick.h. */
#include "backend/device_pick.h"

#include <stdio.h>
#include <string.h>

static int is_default_candidate(const st_backend_device *d) {
    const char *v = d->props->vendor;
    return strcmp(v, "cpu") && strcmp(v, "sim");
}

static const st_backend_device *pick_named(const st_backend_registry *reg, const char *backend, long index, char *err,
                                           size_t errlen) {
    const uint32_t n = st_backend_registry_n_devices(reg);
    for (uint32_t i = 0; i < n; i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (strcmp(d->module->backend, backend) && strcmp(d->module->api->name, backend)) continue;
        if (index >= 0 && d->index != (uint32_t)index) continue;
        return d;
    }
    snprintf(err, errlen, "no usable device of backend '%s'%s (see `strata backends`)", backend,
             index >= 0 ? " with that index" : "");
    return NULL;
}

static const st_backend_device *pick_default(const st_backend_registry *reg, char *err, size_t errlen) {
    const uint32_t n = st_backend_registry_n_devices(reg);
    const st_backend_device *pick = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (is_default_candidate(d) && (!pick || d->props->mem_total > pick->props->mem_total)) pick = d;
    }
    for (uint32_t i = 0; i < n && !pick; i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (!strcmp(d->props->vendor, "cpu")) pick = d;
    }
    if (!pick)
        snprintf(err, errlen, "no usable device: no GPU and no CPU module loaded (see `strata backends`; "
                              "--backend ref runs the slow scalar reference)");
    return pick;
}

const st_backend_device *st_backend_pick(const st_backend_registry *reg, const char *backend, long index, char *err,
                                         size_t errlen) {
    if (backend) return pick_named(reg, backend, index, err, errlen);
    if (index < 0) return pick_default(reg, err, errlen);
    const uint32_t n = st_backend_registry_n_devices(reg);
    if ((uint32_t)index >= n) {
        snprintf(err, errlen, "--device %ld: only %u usable device(s) (see `strata backends`)", index, n);
        return NULL;
    }
    return st_backend_registry_device(reg, (uint32_t)index);
}
