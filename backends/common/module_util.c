/* SPDX-License-Identifier: Apache-2.0 */
#include "common/module_util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static _Thread_local char g_err[512];
static st_host_api g_host;
static const char *g_module = "module";

st_status st_mod_init(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor, const char *module) {
    g_module = module;
    (void)abi_minor;
    if (abi_major != ST_ABI_MAJOR)
        return st_mod_fail(ST_ABI, "module %s speaks ABI %u, host speaks %u", module, ST_ABI_MAJOR, abi_major);
    memset(&g_host, 0, sizeof g_host);
    if (host) {
        size_t n = host->size < sizeof g_host ? host->size : sizeof g_host;
        memcpy(&g_host, host, n);
        g_host.size = (uint32_t)n;
    }
    return ST_OK;
}

st_status st_mod_fail(st_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    return status;
}

const char *st_mod_last_error(void) { return g_err; }
void st_mod_clear_error(void) { g_err[0] = 0; }

void st_mod_log(int level, const char *fmt, ...) {
    if (!ST_HAS_FIELD(&g_host, st_host_api, log) || !g_host.log) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g_host.log(g_host.user, level, g_module, buf);
}

unsigned st_mod_threads(void) {
    return ST_HAS_FIELD(&g_host, st_host_api, n_threads) ? g_host.n_threads : 0;
}

const char *st_mod_config(void) {
    return ST_HAS_FIELD(&g_host, st_host_api, config) ? g_host.config : NULL;
}

uint64_t st_mod_now_ns(void) {
    if (ST_HAS_FIELD(&g_host, st_host_api, now_ns) && g_host.now_ns) return g_host.now_ns(g_host.user);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
