/* SPDX-License-Identifier: Apache-2.0 */
/* The engine's watchdog: when work is pending and the progress counter has not moved for
 * the stall timeout, it writes a stall report (stage, memory, page faults, what each device
 * was last asked to do) to <dir>/strata-stall-<pid>.txt and stderr, then ends the process
 * with exit code 75 so the supervisor restarts it. */
#ifndef STRATA_WATCHDOG_H
#define STRATA_WATCHDOG_H

#include <stdint.h>

typedef struct st_watchdog st_watchdog;

/* Start the watchdog thread. `describe` (may be NULL) appends device lines to the report; it
 * must not block. NULL when the thread cannot start. */
st_watchdog *st_watchdog_start(double stall_seconds, const char *dir, void (*describe)(void *user, int fd),
                               void *user);
/* Mark progress (a step or layer finished). Lock-free. */
void st_watchdog_progress(st_watchdog *w);
/* Tell the watchdog whether work is pending (only then can it stall). */
void st_watchdog_busy(st_watchdog *w, int busy);
/* Stop and join the thread. NULL is ok. */
void st_watchdog_stop(st_watchdog *w);

#endif
