/* SPDX-License-Identifier: Apache-2.0 */
/* Live allocations of one simulated device as a sorted array of [base, base + bytes): catches
 * double frees, foreign pointers, and host pointers handed to device ops. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

/* Index of the last range whose base <= p, or -1. */
static int64_t find_floor(const st_sim_ranges *r, uintptr_t p) {
    int64_t lo = 0, hi = (int64_t)r->n - 1, ans = -1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].base <= p) {
            ans = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return ans;
}

int st_sim_ranges_insert(st_sim_ranges *r, const void *base, uint64_t bytes) {
    if (r->n == r->cap) {
        uint64_t cap = r->cap ? r->cap * 2 : 64;
        st_sim_range *v = realloc(r->v, cap * sizeof *v);
        if (!v) return -1;
        r->v = v;
        r->cap = cap;
    }
    uintptr_t b = (uintptr_t)base;
    uint64_t at = (uint64_t)(find_floor(r, b) + 1);
    memmove(&r->v[at + 1], &r->v[at], (r->n - at) * sizeof *r->v);
    r->v[at].base = b;
    r->v[at].bytes = bytes;
    r->n++;
    return 0;
}

int st_sim_ranges_remove(st_sim_ranges *r, const void *base) {
    int64_t i = find_floor(r, (uintptr_t)base);
    if (i < 0 || r->v[i].base != (uintptr_t)base) return -1;
    memmove(&r->v[i], &r->v[i + 1], (r->n - (uint64_t)i - 1) * sizeof *r->v);
    r->n--;
    return 0;
}

int st_sim_ranges_contains(const st_sim_ranges *r, const void *first, const void *last) {
    uintptr_t a = (uintptr_t)first, b = (uintptr_t)last;
    if (b < a) return 0;
    int64_t i = find_floor(r, a);
    if (i < 0) return 0;
    const st_sim_range *x = &r->v[i];
    return a - x->base < x->bytes && b - x->base < x->bytes;
}

void st_sim_ranges_free(st_sim_ranges *r) {
    free(r->v);
    memset(r, 0, sizeof *r);
}
