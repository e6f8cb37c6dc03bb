/* SPDX-License-Identifier: Apache-2.0 */
/* STRATA_SIM configuration of the simulated devices: parsed from text such as
 * "devices=4,mem=2GiB,bw=25GB/s,fail_alloc=3,dev1.mem=512MiB". docs/backends.md has the
 * syntax. Pure parsing: no allocation, no globals. */
#ifndef STRATA_SIM_CONFIG_H
#define STRATA_SIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define ST_SIM_MAX_DEVICES 64

/* Settings of one simulated device; counters are 1-based, 0 = off. */
typedef struct st_sim_dev_config {
    uint64_t mem;        /* capacity in bytes */
    double bw;           /* host<->device and peer copy bandwidth, bytes/s; 0 = instant */
    uint64_t fail_alloc; /* the Nth allocation call fails with ST_OOM */
    uint64_t fail_op;    /* the Kth op fails with ST_INTERNAL */
    uint64_t fail_copy;  /* the Kth copy fails with ST_IO */
    uint64_t hang_op;    /* the Kth op returns only after hang_ms */
    uint64_t hang_ms;    /* delay of a hung op */
    uint64_t lose_after; /* after N ops the device is lost: every later call ST_DEVICE_LOST */
    uint32_t domain;     /* memory domain group; peer copies only within one group */
    uint32_t unusable;   /* nonzero: probe reports the device unusable */
    uint32_t check_ptrs; /* nonzero (default): ops and copies refuse non-device addresses */
    uint32_t async_errors; /* nonzero: fail_op's failure surfaces at the next stream_sync */
} st_sim_dev_config;

typedef struct st_sim_config {
    uint32_t n_devices;
    uint64_t pinned;     /* capacity of pinned host memory (host_alloc), 0 = unlimited */
    uint64_t hash;       /* of the text: seeds device UUIDs and the domain id */
    st_sim_dev_config dev[ST_SIM_MAX_DEVICES];
} st_sim_config;

/* Parse `text` into *out. Returns 0, or -1 with a message in err that names the offending
 * item ("STRATA_SIM: 'mem=2GB/s': expected a size like 512MiB"). */
int st_sim_config_parse(const char *text, st_sim_config *out, char *err, size_t errlen);

/* Parse a size with an optional unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB); returns 0 or -1. */
int st_sim_parse_size(const char *s, uint64_t *out);

#endif
