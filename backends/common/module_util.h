/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers every backend module links statically (hidden): the host's services, per-thread
 * error text, logging. Not part of the ABI. */
#ifndef STRATA_MODULE_UTIL_H
#define STRATA_MODULE_UTIL_H

#include <stdarg.h>

#include "strata/backend.h"

/* Copy what the module needs of the host's table (the host keeps `host` alive anyway).
 * Returns ST_ABI with an error text when the host's ABI major differs, else ST_OK. */
st_status st_mod_init(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor, const char *module);

/* Record printf-style text as this thread's last error and return `status`. */
st_status st_mod_fail(st_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* This thread's last error text; "" when none. Static thread-local storage. */
const char *st_mod_last_error(void);
/* Forget this thread's last error. */
void st_mod_clear_error(void);

/* Log through the host (silently dropped when the host gave no log callback). */
void st_mod_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Worker threads the host asked for (0 = module decides). */
unsigned st_mod_threads(void);
/* The host's configuration string for this module, or NULL. Borrowed. */
const char *st_mod_config(void);
/* Monotonic nanoseconds from the host's clock. */
uint64_t st_mod_now_ns(void);

#endif
