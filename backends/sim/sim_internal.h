/* Simulated devices: shared state of the sim module's files. Not part of the ABI. */
#ifndef STRATA_SIM_INTERNAL_H
#define STRATA_SIM_INTERNAL_H

#include <pthread.h>

#include "common/hostdev.h"
#include "sim/sim_config.h"

/* One opened simulated device. Memory is host memory counted against `mem`. */
struct st_device {
    uint32_t index;
    char name[16];               /* "SIM0" */
    st_sim_dev_config cfg;
    st_hostmem mem;              /* exact byte accounting against cfg.mem */
    pthread_mutex_t mu;          /* guards the counters, `lost` and the live-pointer set */
    uint64_t n_ops, n_copies;    /* ops and copies run since device_open */
    int lost;                    /* set once lose_after ops have run */
    void **live;                 /* open-addressing set of live allocations */
    uint64_t live_cap, live_n;
};

/* Count one op on the stream's device and apply the fault plan (lost, fail_op, hang_op).
 * Returns ST_OK when the op may run, else the injected status with an error text. */
st_status st_sim_op_enter(st_stream *s, uint32_t op);
/* The sim's ops table: core/ref's ops behind st_sim_op_enter. Static storage. */
const st_backend_ops *st_sim_ops(void);
/* Nonzero when the reference implements `op` for `wtype` (what every sim device supports). */
int st_sim_ref_supported(uint32_t op, uint32_t wtype);

#endif
