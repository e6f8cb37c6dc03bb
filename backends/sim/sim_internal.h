/* SPDX-License-Identifier: Apache-2.0 */
/* Simulated devices: shared state of the sim module's files. Not part of the ABI. */
#ifndef STRATA_SIM_INTERNAL_H
#define STRATA_SIM_INTERNAL_H

#include <pthread.h>

#include "common/hostdev.h"
#include "sim/sim_config.h"

/* Live allocations of a device, sorted by base address. */
typedef struct st_sim_range {
    uintptr_t base;
    uint64_t bytes;
} st_sim_range;
typedef struct st_sim_ranges {
    st_sim_range *v;
    uint64_t n, cap;
} st_sim_ranges;

/* Record [base, base + bytes). Returns 0, or -1 when out of host memory. */
int st_sim_ranges_insert(st_sim_ranges *r, const void *base, uint64_t bytes);
/* Forget the range starting exactly at `base`. Returns 0, or -1 when there is none. */
int st_sim_ranges_remove(st_sim_ranges *r, const void *base);
/* Nonzero when `first` and `last` (inclusive) lie inside one live range. */
int st_sim_ranges_contains(const st_sim_ranges *r, const void *first, const void *last);
/* Release the array (not the allocations it describes). */
void st_sim_ranges_free(st_sim_ranges *r);

/* One opened simulated device. Memory is host memory counted against `mem`. */
struct st_device {
    uint32_t index;
    char name[16];               /* "SIM0" */
    st_sim_dev_config cfg;
    st_hostmem mem;              /* exact byte accounting against cfg.mem */
    pthread_mutex_t mu;          /* guards the counters, `lost` and `live` */
    uint64_t n_ops, n_copies;    /* ops and copies run since device_open */
    int lost;                    /* set once lose_after ops have run */
    st_sim_ranges live;          /* live allocations */
    st_status pending;           /* async_errors: failure waiting for the next stream_sync */
    char pending_text[256];
};

/* async_errors: the failure an earlier op left for stream_sync/event_record, once (ST_OK when
 * none); sets the error text. */
st_status st_sim_take_pending(st_device *d);

/* ST_OK when [first, last] lies inside one live allocation of `d` (or check_ptrs is off),
 * else ST_INVALID with a text naming `what` (e.g. "matmul: w") and the device. */
st_status st_sim_check_ptr(st_device *d, const char *what, const void *first, const void *last);

/* Count one op on the stream's device and apply the fault plan (lost, fail_op, hang_op).
 * Returns ST_OK when the op may run, else the injected status with an error text. *skip is
 * set when the op must not run but returns OK (its failure was deferred: async_errors). */
st_status st_sim_op_enter(st_stream *s, uint32_t op, int *skip);
/* The sim's ops table: core/ref's ops behind st_sim_op_enter. Static storage. */
const st_backend_ops *st_sim_ops(void);
/* Nonzero when the reference implements `op` for `wtype` (what every sim device supports). */
int st_sim_ref_supported(uint32_t op, uint32_t wtype);

#endif
