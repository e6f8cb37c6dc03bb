/* SPDX-License-Identifier: Apache-2.0 */
/* Errors as values: status names and the calling thread's last failure text; versions. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/api_internal.h"

#define STR2(x) #x
#define STR(x) STR2(x)

static _Thread_local char tl_error[1024];

strata_status st_api_fail(strata_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_error, sizeof tl_error, fmt, ap);
    va_end(ap);
    return s;
}

void st_api_ok(void) { tl_error[0] = 0; }

int st_api_size_bad(uint32_t size, size_t min) { return size < min; }

STRATA_API const char *strata_last_error(void) { return tl_error; }

STRATA_API const char *strata_api_version(void) { return STR(STRATA_API_MAJOR) "." STR(STRATA_API_MINOR); }

STRATA_API const char *strata_version(void) { return STRATA_VERSION_STRING " (commit " STRATA_GIT_COMMIT_STRING ")"; }

STRATA_API const char *strata_status_name(strata_status s) {
    static const char *const names[] = {"OK",     "INVALID", "IO",      "FORMAT",  "NO_DEVICE",
                                        "NO_MEMORY", "DEVICE", "CONTEXT", "BUFFER", "UNSUPPORTED"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "UNKNOWN";
}

STRATA_API void strata_free(void *p) { free(p); }
