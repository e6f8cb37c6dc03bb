/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing a backend for the model tests: "ref" (scalar reference on host memory, no module)
 * or a module by name through the registry ("cpu", "sim"). */
#ifndef STRATA_TEST_BACKEND_PICK_H
#define STRATA_TEST_BACKEND_PICK_H

#include "strata/backend.h"

typedef struct mt_backend {
    const st_backend_api *api;
    uint32_t index;
    void *reg;       /* st_backend_registry or NULL */
    st_device *dev;  /* opened once and shared by every model of a test (closed on release) */
} mt_backend;

/* 0 when found; -1 (message printed) when the backend has no usable device here. */
int mt_backend_pick(mt_backend *b, const char *name);
void mt_backend_release(mt_backend *b);

#endif
