/* SPDX-License-Identifier: Apache-2.0 */
/* Allocation from the plan: per device, one device allocation per planned consumer, made
 * through the backend right after planning; every later buffer is carved from its consumer's
 * block. A request beyond a consumer's budget, or for a consumer the plan does not know, is
 * refused as a bug naming the consumer ("plan: consumer 'kv' on SIM0 asked 12.0 MiB beyond
 * its 256.0 MiB"); a backend failure while creating the blocks names the consumer too. Not
 * thread-safe: one owner per arena. */
#ifndef STRATA_PLAN_ARENA_H
#define STRATA_PLAN_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "backend/dev.h"
#include "plan/plan.h"
#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_plan_arena st_plan_arena;

/* Allocates the blocks of every allocated consumer of device `d` of `plan` (which must be ok)
 * on `dev` through `api`. The arena copies what it needs from the plan; `api` and `dev` must
 * outlive it. Returns the arena (caller owns it: st_plan_arena_free), or NULL with *status
 * (OOM, INVALID, or the backend's status) and a message in err naming the consumer, its size,
 * the device and the backend's text. */
st_plan_arena *st_plan_arena_create(const st_plan *plan, int32_t d, const st_backend_api *api, st_device *dev,
                                    st_status *status, char *err, size_t errlen);
/* Carves `bytes` (rounded up to ST_PLAN_ALIGN) from `consumer`'s block into *out (a device
 * address owned by the arena). INTERNAL with a message naming the consumer when it would
 * exceed its budget or the consumer is unknown: both are bugs of the caller's sizing. */
st_status st_plan_arena_alloc(st_plan_arena *a, const char *consumer, uint64_t bytes, void **out, char *err,
                              size_t errlen);
/* Forgets every buffer carved from `consumer` (its block stays allocated). INVALID when unknown. */
st_status st_plan_arena_reset(st_plan_arena *a, const char *consumer);
/* Bytes carved so far from `consumer` (0 when unknown), and its budget. */
uint64_t st_plan_arena_used(const st_plan_arena *a, const char *consumer);
uint64_t st_plan_arena_budget(const st_plan_arena *a, const char *consumer);
/* Base device address of a consumer's block, or NULL. */
void *st_plan_arena_base(const st_plan_arena *a, const char *consumer);
/* Bytes the arena holds on its device (the sum of its blocks). */
uint64_t st_plan_arena_bytes(const st_plan_arena *a);
/* Nonzero when `ptr` lies inside one of the arena's blocks. */
int st_plan_arena_owns(const st_plan_arena *a, const void *ptr);
/* Releases every block and the arena. Returns the first failing mem_free status (text
 * through st_dev_error), OK otherwise; NULL is ok. */
st_status st_plan_arena_free(st_plan_arena *a);

/* An allocator for code that allocates through a backend table (core/model, core/kv) without
 * naming its consumers yet: *out becomes a copy of `real` whose mem_alloc carves buffers for
 * device `dev` from the arena's consumers in the order given (the first with room), whose
 * mem_free ignores carved buffers, and whose last_error explains a refusal ("plan: no room for
 * 12.0 MiB on SIM0 in consumers weights, kv, work (... a bug: the plan sized them too small)").
 * The total is enforced exactly; attribution to consumers is first-fit until callers name them.
 * One binding per device, up to ST_PLAN_MAX_DEVICES process-wide; `out` is caller storage that
 * must outlive every use. 0, or -1 with err (INVALID arguments, no binding slot left). */
int st_plan_api_bind(st_plan_arena *a, const st_backend_api *real, st_device *dev, const char *const *consumers,
                     int n_consumers, st_backend_api *out, char *err, size_t errlen);
/* Names the consumer that the bound mem_alloc of `dev` carves from until the next call: only
 * that block, and a request beyond it is refused naming it (INTERNAL, text through the bound
 * last_error). NULL or "" goes back to the first-fit chain. Does nothing when `dev` is not
 * bound. Its signature fits st_model_params.alloc_consumer. */
void st_plan_api_consumer(st_device *dev, const char *consumer);
/* Removes the binding of `dev` (after everything allocated through it is released). */
void st_plan_api_unbind(st_device *dev);

/* The arenas of every device of a plan: the allocator interface the model layer adopts. */
typedef struct st_plan_arenas st_plan_arenas;
/* Creates one arena per device of `plan`; apis[i]/devs[i] serve device i. On failure frees
 * what it made and returns NULL with *status and err as st_plan_arena_create. */
st_plan_arenas *st_plan_arenas_create(const st_plan *plan, const st_backend_api *const *apis,
                                      st_device *const *devs, st_status *status, char *err, size_t errlen);
/* st_plan_arena_alloc on device `d`'s arena (INVALID when d is out of range). */
st_status st_plan_arena_alloc_on(st_plan_arenas *as, int32_t d, const char *consumer, uint64_t bytes, void **out,
                                 char *err, size_t errlen);
/* The arena of device d, or NULL. */
st_plan_arena *st_plan_arenas_get(st_plan_arenas *as, int32_t d);
/* Frees every arena; returns the first failure's status. NULL is ok. */
st_status st_plan_arenas_free(st_plan_arenas *as);

#ifdef __cplusplus
}
#endif
#endif
