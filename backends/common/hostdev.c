/* SPDX-License-Identifier: Apache-2.0 */
#include "common/hostdev.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/module_util.h"
#include "platform/aligned.h"

#define ST_HOSTMEM_ALIGN 64u
#define ST_HOSTMEM_HDR 64u /* header before each block: holds its size, keeps alignment */

void st_hostmem_init(st_hostmem *m, uint64_t capacity) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->capacity = capacity;
}

static uint64_t host_avail_bytes(void) {
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

uint64_t st_hostmem_free_bytes(st_hostmem *m) {
    pthread_mutex_lock(&m->mu);
    uint64_t f = m->capacity ? m->capacity - m->used : host_avail_bytes();
    pthread_mutex_unlock(&m->mu);
    return f;
}

st_status st_hostmem_alloc(st_hostmem *m, const char *dev_name, uint64_t bytes, void **out) {
    *out = NULL;
    if (bytes == 0) return st_mod_fail(ST_INVALID, "%s: allocation of 0 bytes", dev_name);
    pthread_mutex_lock(&m->mu);
    uint64_t nth = ++m->n_calls;
    if (m->before_alloc) {
        st_status s = m->before_alloc(m->user, bytes, nth);
        if (s != ST_OK) {
            pthread_mutex_unlock(&m->mu);
            return s;
        }
    }
    if (m->capacity && bytes > m->capacity - m->used) {
        uint64_t fr = m->capacity - m->used;
        pthread_mutex_unlock(&m->mu);
        return st_mod_fail(ST_OOM, "alloc %.1f MiB on %s: out of memory (free %.1f MiB of %.1f MiB)",
                           bytes / 1048576.0, dev_name, fr / 1048576.0, m->capacity / 1048576.0);
    }
    void *p = NULL;
    if (bytes > UINT64_MAX - ST_HOSTMEM_HDR || !(p = st_aligned_alloc(ST_HOSTMEM_ALIGN, bytes + ST_HOSTMEM_HDR))) {
        pthread_mutex_unlock(&m->mu);
        return st_mod_fail(ST_OOM, "alloc %.1f MiB on %s: host allocation failed", bytes / 1048576.0, dev_name);
    }
    memcpy(p, &bytes, sizeof bytes);
    m->used += bytes;
    if (m->used > m->peak) m->peak = m->used;
    m->n_allocs++;
    pthread_mutex_unlock(&m->mu);
    *out = (char *)p + ST_HOSTMEM_HDR;
    return ST_OK;
}

st_status st_hostmem_free(st_hostmem *m, void *ptr) {
    if (!ptr) return ST_OK;
    char *base = (char *)ptr - ST_HOSTMEM_HDR;
    uint64_t bytes;
    memcpy(&bytes, base, sizeof bytes);
    pthread_mutex_lock(&m->mu);
    m->used -= bytes < m->used ? bytes : m->used;
    pthread_mutex_unlock(&m->mu);
    st_aligned_free(base);
    return ST_OK;
}

static st_status hd_copy(st_stream *s, void *dst, const void *src, uint64_t bytes) {
    (void)s;
    if (bytes && (!dst || !src)) return st_mod_fail(ST_INVALID, "copy of %llu bytes with a NULL pointer", (unsigned long long)bytes);
    if (bytes) memmove(dst, src, bytes);
    return ST_OK;
}

static st_status hd_copy_peer(st_stream *s, void *dst, st_device *src_dev, const void *src, uint64_t bytes) {
    (void)src_dev;
    return hd_copy(s, dst, src, bytes);
}

static st_status hd_memset(st_stream *s, void *dst, int value, uint64_t bytes) {
    (void)s;
    if (bytes && !dst) return st_mod_fail(ST_INVALID, "memset with a NULL pointer");
    if (bytes) memset(dst, value, bytes);
    return ST_OK;
}

static st_status hd_stream_create(st_device *dev, st_stream **out) {
    st_stream *s = calloc(1, sizeof *s);
    if (!s) return st_mod_fail(ST_OOM, "stream: out of host memory");
    s->dev = dev;
    *out = s;
    return ST_OK;
}

static st_status hd_stream_destroy(st_stream *s) {
    free(s);
    return ST_OK;
}

static st_status hd_stream_sync(st_stream *s) {
    (void)s;
    return ST_OK;
}

static st_status hd_event_create(st_device *dev, st_event **out) {
    (void)dev;
    st_event *e = calloc(1, sizeof *e);
    if (!e) return st_mod_fail(ST_OOM, "event: out of host memory");
    *out = e;
    return ST_OK;
}

static st_status hd_event_destroy(st_event *e) {
    free(e);
    return ST_OK;
}

static st_status hd_event_record(st_event *e, st_stream *s) {
    (void)s;
    e->recorded = 1;
    return ST_OK;
}

static st_status hd_event_wait(st_stream *s, st_event *e) {
    (void)s;
    (void)e;
    return ST_OK;
}

static st_status hd_event_sync(st_event *e) {
    (void)e;
    return ST_OK;
}

void st_hostdev_fill_api(st_backend_api *api) {
    api->copy_h2d = hd_copy;
    api->copy_d2h = hd_copy;
    api->copy_d2d = hd_copy;
    api->copy_peer = hd_copy_peer;
    api->memset_d = hd_memset;
    api->stream_create = hd_stream_create;
    api->stream_destroy = hd_stream_destroy;
    api->stream_sync = hd_stream_sync;
    api->event_create = hd_event_create;
    api->event_destroy = hd_event_destroy;
    api->event_record = hd_event_record;
    api->event_wait = hd_event_wait;
    api->event_sync = hd_event_sync;
}
