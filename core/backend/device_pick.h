/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing one device of a registry by the user's words (the CLI's --backend/--device, the
 * library's strata_model_options): a module and an index, an index into the registry's list,
 * or by default the usable device with the most memory that is not the CPU or a simulated
 * one, else the CPU. */
#ifndef STRATA_BACKEND_DEVICE_PICK_H
#define STRATA_BACKEND_DEVICE_PICK_H

#include <stddef.h>

#include "backend/backend_registry.h"

/* backend: a module's file-name backend or table name ("cpu", "cuda"), or NULL; index: that
 * module's device index, or without a backend an index into the registry's device list; -1 =
 * not given. Returns the device, or NULL with the reason in err ("no usable device of backend
 * 'cuda' (see `strata backends`)"). */
const st_backend_device *st_backend_pick(const st_backend_registry *reg, const char *backend, long index, char *err,
                                         size_t errlen);

#endif
