/* SPDX-License-Identifier: Apache-2.0 */
/* Backend choice for the model tests. */
#include "backend_pick.h"

#include <stdio.h>
#include <string.h>

#include "backend/backend_registry.h"
#include "model/ref_device.h"

int mt_backend_pick(mt_backend *b, const char *name) {
    memset(b, 0, sizeof *b);
    if (!strcmp(name, "ref")) {
        b->api = st_ref_device_api(1);
        return b->api->device_open(0, &b->dev) == ST_OK ? 0 : -1;
    }
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    st_backend_registry *reg = st_backend_registry_open(&opt);
    if (!reg) return -1;
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (strcmp(d->module->backend, name) && strcmp(d->module->api->name, name)) continue;
        b->api = d->module->api;
        b->index = d->index;
        b->reg = reg;
        if (b->api->device_open(b->index, &b->dev) != ST_OK) {
            fprintf(stderr, "opening %s device %u: %s\n", name, b->index, b->api->last_error());
            b->dev = NULL;
            mt_backend_release(b);
            return -1;
        }
        return 0;
    }
    fprintf(stderr, "no usable device of backend '%s'\n", name);
    st_backend_registry_close(reg);
    return -1;
}

void mt_backend_release(mt_backend *b) {
    if (b->dev) b->api->device_close(b->dev);
    if (b->reg) st_backend_registry_close(b->reg);
    memset(b, 0, sizeof *b);
}
