/* SPDX-License-Identifier: Apache-2.0 */
/* Host services handed to modules: log, clock, worker threads, configuration strings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/backend_registry.h"
#include "platform/platform.h"

static unsigned g_threads;
static int g_log_level = -1; /* -1: not yet read from STRATA_LOG */

void st_backend_set_threads(unsigned n) { g_threads = n; }
unsigned st_backend_threads(void) { return g_threads; }

static int level_from_env(void) {
    const char *e = getenv("STRATA_LOG");
    if (!e || !*e) return ST_LOG_WARN;
    if (!strcasecmp(e, "debug")) return ST_LOG_DEBUG;
    if (!strcasecmp(e, "info")) return ST_LOG_INFO;
    if (!strcasecmp(e, "warn") || !strcasecmp(e, "warning")) return ST_LOG_WARN;
    if (!strcasecmp(e, "error")) return ST_LOG_ERROR;
    fprintf(stderr, "strata: warning: STRATA_LOG=%s is not one of debug|info|warn|error; using warn\n", e);
    return ST_LOG_WARN;
}

void st_backend_log_set_level(int level) { g_log_level = level; }

int st_backend_log_level(void) {
    if (g_log_level < 0) g_log_level = level_from_env();
    return g_log_level;
}

static void log_line(int level, const char *module, const char *msg) {
    if (level < st_backend_log_level()) return;
    static const char *names[] = {"debug", "info", "warning", "error"};
    const char *ln = level >= 0 && level <= 3 ? names[level] : "log";
    fprintf(stderr, "strata[%s] %s: %s\n", module && *module ? module : "host", ln, msg ? msg : "");
}

void st_backend_log(int level, const char *module, const char *fmt, ...) {
    if (level < st_backend_log_level()) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_line(level, module, buf);
}

static void host_log(void *user, int level, const char *module, const char *msg) {
    (void)user;
    log_line(level, module, msg);
}

static uint64_t host_now_ns(void *user) {
    (void)user;
    return st_now_ns();
}

static st_backend_pressure_fn g_pressure;
static void *g_pressure_user;

void st_backend_set_memory_pressure(st_backend_pressure_fn fn, void *user) {
    g_pressure_user = user;
    g_pressure = fn;
}

static int host_memory_pressure(void *user, uint32_t device, uint64_t bytes) {
    st_backend_pressure_fn fn = g_pressure;
    return fn ? fn(g_pressure_user, (const st_backend_module *)user, device, bytes) : 0;
}

const char *st_backend_config_for(const char *name) {
    if (name && !strcmp(name, "sim")) return getenv("STRATA_SIM");
    return NULL;
}

void st_backend_host_fill(st_host_api *host, const st_backend_module *module, const char *config) {
    memset(host, 0, sizeof *host);
    host->size = sizeof *host;
    host->abi_major = ST_ABI_MAJOR;
    host->abi_minor = ST_ABI_MINOR;
    host->n_threads = g_threads;
    host->log = host_log;
    host->now_ns = host_now_ns;
    host->memory_pressure = host_memory_pressure;
    host->user = (void *)module;
    host->config = config;
}
