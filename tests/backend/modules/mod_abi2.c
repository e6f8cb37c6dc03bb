/* SPDX-License-Identifier: Apache-2.0 */
/* Test module: speaks ABI major 2, so it refuses the host's major 1 and says so. */
#include <string.h>

#include "strata/backend.h"

static st_backend_api g_api;

ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor,
                                            const st_backend_api **out) {
    (void)host;
    (void)abi_minor;
    memset(&g_api, 0, sizeof g_api);
    g_api.size = sizeof g_api;
    g_api.abi_major = 2;
    g_api.abi_minor = 0;
    g_api.name = "abi2";
    g_api.version = "9.9";
    *out = &g_api;
    return abi_major == 2 ? ST_OK : ST_ABI;
}
