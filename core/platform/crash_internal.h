/* SPDX-License-Identifier: Apache-2.0 */
/* What the crash handlers of each OS share (crash_log.c): async-signal-safe writers and the
 * report's path. */
#ifndef STRATA_CRASH_INTERNAL_H
#define STRATA_CRASH_INTERNAL_H

#include <stddef.h>

extern char st_crash_dir[512]; /* set by st_crash_install */
/* Writes s / a number (base 10 or 16, "0x" before hex) to fd with write(2) only. */
void st_crash_put(int fd, const char *s);
void st_crash_put_num(int fd, unsigned long long v, int base);
/* <dir>/strata-crash-<pid>.txt into path[cap] without stdio; its length, or 0 when it does not fit. */
size_t st_crash_report_path(char *path, size_t cap, unsigned long long pid);

#endif
