/* SPDX-License-Identifier: Apache-2.0 */
/* Memory, copies, streams and events for devices whose memory is host memory (the CPU
 * modules and the simulated devices). Streams run work synchronously on the caller's
 * thread, so every op has completed when its call returns. Not part of the ABI. */
#ifndef STRATA_HOSTDEV_H
#define STRATA_HOSTDEV_H

#include <pthread.h>

#include "strata/backend.h"

/* Byte accounting for one device's memory. capacity 0 = unlimited. */
typedef struct st_hostmem {
    pthread_mutex_t mu;
    uint64_t capacity; /* bytes the device may hand out; 0 = no limit */
    uint64_t used;     /* bytes currently allocated */
    uint64_t peak;     /* largest `used` seen */
    uint64_t n_allocs; /* successful allocations so far */
    /* Called before each allocation with the mutex held; a non-OK status (with an error text
     * set through st_mod_fail) fails the allocation. May be NULL. */
    st_status (*before_alloc)(void *user, uint64_t bytes, uint64_t n_th_call);
    void *user;
    uint64_t n_calls; /* allocation calls so far, failed ones included */
} st_hostmem;

/* Initialise accounting with a capacity (0 = unlimited). Never fails. */
void st_hostmem_init(st_hostmem *m, uint64_t capacity);
/* Allocate 64-byte-aligned host memory counted against `m`; the caller owns *out until
 * st_hostmem_free. ST_OOM with a text naming `dev_name`, the size and the free bytes. */
st_status st_hostmem_alloc(st_hostmem *m, const char *dev_name, uint64_t bytes, void **out);
/* Free memory from st_hostmem_alloc of the same `m`; NULL is accepted. */
st_status st_hostmem_free(st_hostmem *m, void *ptr);
/* Free bytes (capacity - used, or available host RAM when unlimited). */
uint64_t st_hostmem_free_bytes(st_hostmem *m);

/* The stream of a host-like device: work runs at once on the calling thread. */
struct st_stream {
    st_device *dev;
};
struct st_event {
    int recorded;
};

/* Fill the copy, stream and event slots of `api` with synchronous host implementations
 * (memcpy, trivial events). Memory allocation and ops stay the module's own. */
void st_hostdev_fill_api(st_backend_api *api);

#endif
