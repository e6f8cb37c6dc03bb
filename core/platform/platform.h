/* SPDX-License-Identifier: Apache-2.0 */
/* Platform shim: the only place that names OS facilities (dl, threads, mmap, clocks,
 * memory info, crash handlers). Each function documents ownership and errors. */
#ifndef STRATA_PLATFORM_H
#define STRATA_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic clock in nanoseconds. Never fails. */
uint64_t st_now_ns(void);

#endif
