/* SPDX-License-Identifier: Apache-2.0 */
/* Test module: its entry fails (returns ST_NO_DRIVER) with an error text in last_error;
 * built with -DST_TEST_NULL_TABLE it returns OK with no table, with -DST_TEST_SMALL_TABLE a
 * table whose size is too small for ABI 1.0. */
#include <string.h>

#include "strata/backend.h"

static const char *last_error(void) { return "vendor driver refused to initialise (test)"; }
static st_backend_api g_api;

ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor,
                                            const st_backend_api **out) {
    (void)host;
    (void)abi_major;
    (void)abi_minor;
    memset(&g_api, 0, sizeof g_api);
    g_api.size = sizeof g_api;
    g_api.abi_major = ST_ABI_MAJOR;
    g_api.abi_minor = ST_ABI_MINOR;
    g_api.name = "entryfail";
    g_api.version = "1";
    g_api.last_error = last_error;
#if defined(ST_TEST_NULL_TABLE)
    *out = NULL;
    return ST_OK;
#elif defined(ST_TEST_SMALL_TABLE)
    g_api.size = 48;
    *out = &g_api;
    return ST_OK;
#else
    *out = &g_api;
    return ST_NO_DRIVER;
#endif
}
