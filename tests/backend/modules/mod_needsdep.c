/* SPDX-License-Identifier: Apache-2.0 */
/* Test module: depends on a shared library that is absent at load time. */
#include <stddef.h>

#include "strata/backend.h"

int st_test_absent_dep_value(void);

ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor,
                                            const st_backend_api **out) {
    (void)host;
    (void)abi_major;
    (void)abi_minor;
    *out = NULL;
    return st_test_absent_dep_value() == 7 ? ST_INTERNAL : ST_INVALID;
}
