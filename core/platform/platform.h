/* SPDX-License-Identifier: Apache-2.0 */
/* Platform shim: the only place that names OS facilities (dl, threads, mmap, clocks,
 * memory info, crash handlers). Each function documents ownership and errors. */
#ifndef STRATA_PLATFORM_H
#define STRATA_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Monotonic clock in nanoseconds. Never fails. */
uint64_t st_now_ns(void);
/* Nonzero when f is a terminal (progress lines redraw in place there). */
int st_is_terminal(FILE *f);

#endif
