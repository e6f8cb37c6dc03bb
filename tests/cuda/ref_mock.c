/* SPDX-License-Identifier: Apache-2.0 */
/* A host-memory stand-in for the module, whose ops are core/ref itself: running the op tests
 * against it checks the harness (every comparison must come out exact) without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "cuda_harness.h"
#include "ref/ref.h"

static st_status m_alloc(st_device *d, uint64_t b, void **out) {
    (void)d;
    *out = b > (1ull << 40) ? NULL : calloc(1, b);
    return *out ? ST_OK : ST_OOM;
}
static st_status m_free(st_device *d, void *p) {
    (void)d;
    free(p);
    return ST_OK;
}
static st_status m_copy(st_stream *s, void *dst, const void *src, uint64_t b) {
    (void)s;
    memcpy(dst, src, b);
    return ST_OK;
}
static st_status m_sync(st_stream *s) {
    (void)s;
    return ST_OK;
}
static const char *m_err(void) { return st_ref_last_error(); }

const st_backend_api *tc_ref_mock_api(void) {
    static st_backend_api api;
    api.size = sizeof api;
    api.name = "ref-mock";
    api.mem_alloc = m_alloc;
    api.mem_free = m_free;
    api.copy_h2d = m_copy;
    api.copy_d2h = m_copy;
    api.copy_d2d = m_copy;
    api.stream_sync = m_sync;
    api.last_error = m_err;
    api.ops = st_ref_ops_table();
    return &api;
}
