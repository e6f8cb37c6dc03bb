/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance: every op a backend device claims, for every weight format and a set of
 * shapes chosen to break kernels, run with fresh random inputs and poisoned outputs and
 * compared against core/ref with normalized error thresholds. The bar every backend,
 * ours or a fork's, must pass (`strata conformance`). */
#ifndef STRATA_CONFORMANCE_H
#define STRATA_CONFORMANCE_H

#include <stdint.h>
#include <stdio.h>

#include "strata/backend.h"

typedef struct st_conf_options {
    const char *filter; /* run only cases whose op name contains this text; NULL = all */
    uint64_t seed;      /* random inputs; 0 = from the clock */
    int verbose;        /* print passing cases too (failures are always printed) */
    int quick;          /* fewer and smaller shapes (emulators, sanitizer builds) */
    FILE *out;          /* where case lines go; NULL = stdout */
} st_conf_options;

typedef struct st_conf_result {
    int passed;
    int failed;
    int skipped; /* cases the device does not claim (op slot NULL or format unsupported) */
} st_conf_result;

/* Run conformance on device `index` of the module `api` (already probed). Opens and closes
 * the device itself. Adds to *res. Returns ST_OK when the harness ran (failures are
 * counted, not returned), or the status of a device/memory call that stopped it, with
 * a message printed. */
st_status st_conf_run(const st_backend_api *api, uint32_t index, const st_conf_options *opt,
                      st_conf_result *res);

#endif
