/* SPDX-License-Identifier: Apache-2.0 */
/* Crash reports and the current-stage marker. The handlers for SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE and SIGABRT write the signal, the faulting address, the current stage, a backtrace
 * and the last log lines to stderr and to <dir>/strata-crash-<pid>.txt using only
 * async-signal-safe calls, then let the signal take its default course. */
#ifndef STRATA_CRASH_H
#define STRATA_CRASH_H

/* Install the handlers; `dir` is copied. Returns 0, or -1 when sigaction failed. */
int st_crash_install(const char *dir);
/* Record what the process is doing now ("step 12: forward, 3 slots, 40 tokens"); printf-style,
 * truncated to 255 bytes. Cheap; call it from the thread doing the work. */
void st_crash_set_stage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The current stage text (static storage). */
const char *st_crash_stage(void);
/* Remember a log line for the reports (the last 16 are kept). */
void st_crash_log_line(const char *line);
/* Write the last log lines, one per line, to fd (async-signal-safe). */
void st_crash_write_log(int fd);

#endif
