/* SPDX-License-Identifier: Apache-2.0 */
/* The scalar reference (core/ref) as a one-device backend on host memory. Not a module: it
 * is linked in, for oracle runs and tests. Its ops are slow (double precision). */
#ifndef STRATA_MODEL_REF_DEVICE_H
#define STRATA_MODEL_REF_DEVICE_H

#include "strata/backend.h"

/* The table (static storage, valid for the whole process). Device 0 claims ST_CAP_UNIFIED
 * when `unified` (weights then used in place), else weights are copied. One configuration
 * at a time: a later call changes what device_props reports. Streams are synchronous. */
const st_backend_api *st_ref_device_api(int unified);

#endif
