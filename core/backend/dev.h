/* SPDX-License-Identifier: Apache-2.0 */
/* The one door to a device. Every call the core makes to a backend module's device goes
 * through a function of this file, in the spirit of SQLite's sqlite3OsRead: one place that
 *   - checks that the module's table has the slot, against the ABI minor that added it
 *     (ST_BACKEND_API_SLOTS / ST_BACKEND_OP_SLOTS) and the table's size, and that it is not NULL;
 *   - turns a failure into a text that names the op and the device ("matmul on sim1 failed:
 *     device lost"), readable with st_dev_error() on the calling thread;
 *   - remembers a lost device: after ST_DEVICE_LOST every later call fails at once, naming it;
 *   - profiles (STRATA_PROFILE=1: each op synchronized and timed by device, op and role;
 *     st_dev_profile_report prints the totals);
 *   - injects faults (STRATA_DEV_FAULT=DEVICE:SLOT:N[:lost], or st_dev_fault_set): the Nth
 *     call of SLOT ("*" = any) on DEVICE ("sim1", "*" = any) fails with ST_INTERNAL, or with
 *     ST_DEVICE_LOST and every later call too, whatever the module.
 * Module code (backends/) never sees it; the conformance test calls tables directly because
 * it tests the tables themselves. docs/layer-split.md says why the door exists. */
#ifndef STRATA_DEV_H
#define STRATA_DEV_H

#include <stdint.h>
#include <stdio.h>

#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ST_DEV_NAME_MAX 32

typedef struct st_dev {
    const st_backend_api *api;
    st_device *handle;            /* the opened device */
    uint32_t index;               /* the module's device index */
    int owned;                    /* st_dev_open opened it: st_dev_close closes it */
    int lost;                     /* a call reported ST_DEVICE_LOST: every later call fails */
    char name[ST_DEV_NAME_MAX];   /* "sim1": module name and index */
    st_device_props props;        /* size 0 when not read (st_dev_wrap) */
    uint64_t n_calls;             /* calls through the door (the fault counter) */
    uint64_t fault_calls;         /* calls matching the fault spec so far */
} st_dev;

/* Wraps an already opened handle (the caller keeps it: st_dev_close does not close it), named
 * "<module name><index>". With read_props, reads the device's properties (an error names the
 * device). Never fails without read_props. */
st_status st_dev_wrap(st_dev *d, const st_backend_api *api, st_device *handle, uint32_t index, int read_props);
/* Reads the properties and opens device `index` of `api`'s module. */
st_status st_dev_open(st_dev *d, const st_backend_api *api, uint32_t index);
/* Closes a device st_dev_open opened (nothing for a wrapped one); zeroes *d. */
st_status st_dev_close(st_dev *d);

/* The text of the calling thread's last failed door call ("" when none). */
const char *st_dev_error(void);
/* Sets the calling thread's door error (printf style); returns `s`. For callers that refuse
 * before reaching the module and want the same channel. */
st_status st_dev_fail(st_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- presence ---------------------------------------------------------------------- */
/* Nonzero when the module's ops table has op `op`: its ABI minor covers the minor that added
 * the op, the table's size covers the slot, and the slot is not NULL. */
int st_dev_has_op(const st_dev *d, uint32_t op);
/* st_dev_has_op and the module says the device runs it with `type`. */
int st_dev_supports(const st_dev *d, uint32_t op, uint32_t type);
/* Optional table slots, by group. */
int st_dev_has_graphs(const st_dev *d);
int st_dev_has_host_alloc(const st_dev *d);
int st_dev_has_host_register(const st_dev *d);
int st_dev_has_peer(const st_dev *d);
/* Same module and same memory domain, and the module has peer copies. */
int st_dev_can_peer(const st_dev *dst, const st_dev *src);

/* ---- devices and memory ------------------------------------------------------------- */
st_status st_dev_mem_info(st_dev *d, uint64_t *free_bytes, uint64_t *total_bytes);
st_status st_dev_alloc(st_dev *d, uint64_t bytes, void **out);
st_status st_dev_free(st_dev *d, void *ptr);
st_status st_dev_host_alloc(st_dev *d, uint64_t bytes, void **out);
st_status st_dev_host_free(st_dev *d, void *ptr);
st_status st_dev_host_register(st_dev *d, void *ptr, uint64_t bytes);
st_status st_dev_host_unregister(st_dev *d, void *ptr);
st_status st_dev_h2d(st_dev *d, st_stream *s, void *dst, const void *src, uint64_t bytes);
st_status st_dev_d2h(st_dev *d, st_stream *s, void *dst, const void *src, uint64_t bytes);
st_status st_dev_d2d(st_dev *d, st_stream *s, void *dst, const void *src, uint64_t bytes);
/* Copy from `src_dev` (same module and domain, st_dev_can_peer) into d's memory, on d's stream. */
st_status st_dev_peer(st_dev *d, st_stream *s, void *dst, st_dev *src_dev, const void *src, uint64_t bytes);
st_status st_dev_memset(st_dev *d, st_stream *s, void *dst, int value, uint64_t bytes);

/* ---- streams, events, graphs --------------------------------------------------------- */
st_status st_dev_stream_create(st_dev *d, st_stream **out);
st_status st_dev_stream_destroy(st_dev *d, st_stream *s);
st_status st_dev_sync(st_dev *d, st_stream *s);
st_status st_dev_event_create(st_dev *d, st_event **out);
st_status st_dev_event_destroy(st_dev *d, st_event *e);
st_status st_dev_event_record(st_dev *d, st_event *e, st_stream *s);
st_status st_dev_event_wait(st_dev *d, st_stream *s, st_event *e);
st_status st_dev_event_sync(st_dev *d, st_event *e);
st_status st_dev_graph_begin(st_dev *d, st_stream *s);
st_status st_dev_graph_end(st_dev *d, st_stream *s, st_graph **out);
st_status st_dev_graph_launch(st_dev *d, st_graph *g, st_stream *s);
st_status st_dev_graph_destroy(st_dev *d, st_graph *g);

/* ---- ops: st_dev_<slot>(d, s, args, what), one per line of ST_BACKEND_OP_SLOTS ---------
 * `what` names the role for the profile and the error ("attn_output"; NULL = none). The
 * caller sets args->size. UNSUPPORTED with a text naming op and device when the slot is
 * absent. */
#define ST_DEV_OP_DECL_(ID, slot, A, minor) st_status st_dev_##slot(st_dev *d, st_stream *s, const A *a, const char *what);
ST_BACKEND_OP_SLOTS(ST_DEV_OP_DECL_)
#undef ST_DEV_OP_DECL_

/* ---- profile and faults ---------------------------------------------------------------- */
/* Nonzero when STRATA_PROFILE asks for the op profile (read once). */
int st_dev_profile_on(void);
/* Prints the profile's totals by device, op and role (nothing when it is off or empty), then
 * clears them. */
void st_dev_profile_report(FILE *f);
/* Replaces the fault spec ("DEVICE:SLOT:N[:lost]"; NULL or "" = none). 0, or -1 with err. */
int st_dev_fault_set(const char *spec, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
