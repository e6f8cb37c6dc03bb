/* SPDX-License-Identifier: Apache-2.0 */
/* The one door to a device: see dev.h. */
#include "backend/dev.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_registry.h"
#include "platform/platform.h"

/* ---- errors ---------------------------------------------------------------------------- */

static _Thread_local char t_err[768];

const char *st_dev_error(void) { return t_err; }

st_status st_dev_fail(st_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_err, sizeof t_err, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- presence: a slot exists when the module's minor, the table's size and the pointer say so */

static int slot_present(const void *table, uint32_t table_size, uint32_t abi_minor, size_t off, uint32_t minor) {
    if (abi_minor < minor || table_size < off + sizeof(void *)) return 0;
    void *p;
    memcpy(&p, (const char *)table + off, sizeof p);
    return p != NULL;
}

#define API_SLOT(d, slot, minor) \
    slot_present((d)->api, (d)->api->size, (d)->api->abi_minor, offsetof(st_backend_api, slot), minor)

int st_dev_has_op(const st_dev *d, uint32_t op) {
#define ST_OP_OFF_(ID, slot, A, minor) offsetof(st_backend_ops, slot),
    static const size_t offs[ST_OP_COUNT] = {ST_BACKEND_OP_SLOTS(ST_OP_OFF_)};
#undef ST_OP_OFF_
    if (!d || !d->api || !d->api->ops || op >= ST_OP_COUNT) return 0;
    return slot_present(d->api->ops, d->api->ops->size, d->api->abi_minor, offs[op], st_op_minor(op));
}

int st_dev_supports(const st_dev *d, uint32_t op, uint32_t type) {
    return st_dev_has_op(d, op) && d->api->op_supported(d->index, op, type);
}

int st_dev_has_graphs(const st_dev *d) {
    return API_SLOT(d, graph_begin, 0) && API_SLOT(d, graph_end, 0) && API_SLOT(d, graph_launch, 0) &&
           API_SLOT(d, graph_destroy, 0);
}
int st_dev_has_host_alloc(const st_dev *d) { return API_SLOT(d, host_alloc, 0) && API_SLOT(d, host_free, 0); }
int st_dev_has_host_register(const st_dev *d) {
    return API_SLOT(d, host_register, 0) && API_SLOT(d, host_unregister, 0);
}
int st_dev_has_peer(const st_dev *d) { return API_SLOT(d, copy_peer, 0); }
int st_dev_can_peer(const st_dev *dst, const st_dev *src) {
    return dst->api == src->api && st_dev_has_peer(dst) && dst->props.size && src->props.size &&
           dst->props.domain == src->props.domain && (dst->props.caps & ST_CAP_PEER);
}

/* ---- faults ------------------------------------------------------------------------------ */

typedef struct fault_spec {
    int set;
    char dev[ST_DEV_NAME_MAX], slot[32];
    uint64_t n;
    int lose;
} fault_spec;

static fault_spec g_fault;
static pthread_once_t g_fault_once = PTHREAD_ONCE_INIT;

static int fault_parse(const char *spec, fault_spec *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!spec || !*spec) return 0;
    char buf[128], *save = NULL;
    snprintf(buf, sizeof buf, "%s", spec);
    char *dev = strtok_r(buf, ":", &save), *slot = strtok_r(NULL, ":", &save), *n = strtok_r(NULL, ":", &save);
    char *mode = strtok_r(NULL, ":", &save), *end = NULL;
    unsigned long long v = n ? strtoull(n, &end, 10) : 0;
    if (!dev || !slot || !n || *end || v == 0 || (mode && strcmp(mode, "lost"))) {
        snprintf(err, errlen, "fault spec '%s': expected DEVICE:SLOT:N[:lost] (N >= 1)", spec);
        return -1;
    }
    snprintf(out->dev, sizeof out->dev, "%s", dev);
    snprintf(out->slot, sizeof out->slot, "%s", slot);
    out->n = v;
    out->lose = mode != NULL;
    out->set = 1;
    return 0;
}

static void fault_from_env(void) {
    char err[256];
    if (fault_parse(getenv("STRATA_DEV_FAULT"), &g_fault, err, sizeof err))
        fprintf(stderr, "strata: STRATA_DEV_FAULT ignored: %s\n", err);
}

int st_dev_fault_set(const char *spec, char *err, size_t errlen) {
    pthread_once(&g_fault_once, fault_from_env);
    fault_spec f;
    if (fault_parse(spec, &f, err, errlen)) return -1;
    g_fault = f;
    return 0;
}

/* ST_OK, or the injected failure of this call. */
static st_status fault_check(st_dev *d, const char *slot) {
    pthread_once(&g_fault_once, fault_from_env);
    const fault_spec *f = &g_fault;
    if (!f->set || (strcmp(f->dev, "*") && strcmp(f->dev, d->name)) || (strcmp(f->slot, "*") && strcmp(f->slot, slot)))
        return ST_OK;
    if (++d->fault_calls < f->n) return ST_OK;
    if (f->lose) {
        d->lost = 1;
        return st_dev_fail(ST_DEVICE_LOST, "%s on %s failed: device lost (injected fault after %llu calls)", slot,
                           d->name, (unsigned long long)f->n);
    }
    if (d->fault_calls > f->n) return ST_OK;
    return st_dev_fail(ST_INTERNAL, "%s on %s failed: injected fault (call %llu)", slot, d->name,
                       (unsigned long long)f->n);
}

/* ---- the gate every call passes and the end every failure takes -------------------------- */

static st_status gate(st_dev *d, const char *slot, const char *what, int present) {
    d->n_calls++;
    const char *w = what ? what : "", *sep = what ? ": " : "";
    if (d->lost)
        return st_dev_fail(ST_DEVICE_LOST, "%s%s%s on %s failed: the device was lost earlier in the run", w, sep, slot,
                           d->name);
    if (!present)
        return st_dev_fail(ST_UNSUPPORTED, "%s%s%s on %s: module '%s' (ABI %u.%u) has no %s slot", w, sep, slot, d->name,
                           d->api->name, d->api->abi_major, d->api->abi_minor, slot);
    st_status f = fault_check(d, slot);
    if (f != ST_OK) {
        if (what) {
            char tmp[sizeof t_err];
            snprintf(tmp, sizeof tmp, "%s", t_err);
            st_dev_fail(f, "%s: %s", what, tmp);
        }
        return f;
    }
    return ST_OK;
}

static st_status done(st_dev *d, const char *slot, const char *what, st_status s) {
    if (s == ST_OK) return s;
    if (s == ST_DEVICE_LOST) d->lost = 1;
    const char *t = d->api->last_error();
    if (!t || !*t) t = st_backend_status_name((uint32_t)s);
    return st_dev_fail(s, "%s%s%s on %s failed: %s", what ? what : "", what ? ": " : "", slot, d->name, t);
}

/* A call of function slot `slot` with arguments `args`, present when the table has it. */
#define CALL(d, slot, what, args)                                              \
    do {                                                                       \
        st_status g_ = gate(d, #slot, what, API_SLOT(d, slot, 0));             \
        if (g_ != ST_OK) return g_;                                            \
        return done(d, #slot, what, (d)->api->slot args);                      \
    } while (0)

/* ---- devices ------------------------------------------------------------------------------ */

st_status st_dev_wrap(st_dev *d, const st_backend_api *api, st_device *handle, uint32_t index, int read_props) {
    memset(d, 0, sizeof *d);
    d->api = api;
    d->handle = handle;
    d->index = index;
    snprintf(d->name, sizeof d->name, "%.20s%u", api->name ? api->name : "dev", index);
    if (!read_props) return ST_OK;
    d->props.size = sizeof d->props;
    st_status s = api->device_props(index, &d->props);
    if (s != ST_OK) {
        d->props.size = 0;
        return done(d, "device_props", NULL, s);
    }
    d->props.name[sizeof d->props.name - 1] = 0;
    return ST_OK;
}

st_status st_dev_open(st_dev *d, const st_backend_api *api, uint32_t index) {
    st_status s = st_dev_wrap(d, api, NULL, index, 1);
    if (s != ST_OK) return s;
    s = gate(d, "device_open", NULL, API_SLOT(d, device_open, 0));
    if (s == ST_OK) s = done(d, "device_open", NULL, api->device_open(index, &d->handle));
    if (s != ST_OK) {
        d->handle = NULL;
        return s;
    }
    d->owned = 1;
    return ST_OK;
}

st_status st_dev_close(st_dev *d) {
    st_status s = ST_OK;
    if (d->owned && d->handle) s = done(d, "device_close", NULL, d->api->device_close(d->handle));
    memset(d, 0, sizeof *d);
    return s;
}

/* ---- memory ---------------------------------------------------------------------------------- */

st_status st_dev_mem_info(st_dev *d, uint64_t *fr, uint64_t *tot) { CALL(d, mem_info, NULL, (d->handle, fr, tot)); }
st_status st_dev_alloc(st_dev *d, uint64_t bytes, void **out) { CALL(d, mem_alloc, NULL, (d->handle, bytes, out)); }
/* Frees go through even on a lost device: the module releases its host-side bookkeeping. */
st_status st_dev_free(st_dev *d, void *ptr) { return done(d, "mem_free", NULL, d->api->mem_free(d->handle, ptr)); }
st_status st_dev_host_alloc(st_dev *d, uint64_t bytes, void **out) {
    CALL(d, host_alloc, NULL, (d->handle, bytes, out));
}
st_status st_dev_host_free(st_dev *d, void *ptr) {
    if (!API_SLOT(d, host_free, 0)) return gate(d, "host_free", NULL, 0);
    return done(d, "host_free", NULL, d->api->host_free(d->handle, ptr));
}
st_status st_dev_host_register(st_dev *d, void *ptr, uint64_t bytes) {
    CALL(d, host_register, NULL, (d->handle, ptr, bytes));
}
st_status st_dev_host_unregister(st_dev *d, void *ptr) {
    if (!API_SLOT(d, host_unregister, 0)) return gate(d, "host_unregister", NULL, 0);
    return done(d, "host_unregister", NULL, d->api->host_unregister(d->handle, ptr));
}
st_status st_dev_h2d(st_dev *d, st_stream *s, void *dst, const void *src, uint64_t bytes) {
    CALL(d, copy_h2d, NULL, (s, dst, src, bytes));
}
st_status st_dev_d2h(st_dev *d, st_stream *s, void *dst, const void *src, uint64_t bytes) {
    CALL(d, copy_d2h, NULL, (s, dst, src, bytes));
}
st_status st_dev_d2d(st_dev *d, st_stream *s, void *dst, const void *src, uint64_t bytes) {
    CALL(d, copy_d2d, NULL, (s, dst, src, bytes));
}
st_status st_dev_peer(st_dev *d, st_stream *s, void *dst, st_dev *src_dev, const void *src, uint64_t bytes) {
    if (src_dev->lost) return gate(src_dev, "copy_peer", NULL, 1);
    CALL(d, copy_peer, NULL, (s, dst, src_dev->handle, src, bytes));
}
st_status st_dev_memset(st_dev *d, st_stream *s, void *dst, int value, uint64_t bytes) {
    CALL(d, memset_d, NULL, (s, dst, value, bytes));
}

/* ---- streams, events, graphs ------------------------------------------------------------------ */

st_status st_dev_stream_create(st_dev *d, st_stream **out) { CALL(d, stream_create, NULL, (d->handle, out)); }
st_status st_dev_stream_destroy(st_dev *d, st_stream *s) {
    return done(d, "stream_destroy", NULL, d->api->stream_destroy(s));
}
st_status st_dev_sync(st_dev *d, st_stream *s) { CALL(d, stream_sync, NULL, (s)); }
st_status st_dev_event_create(st_dev *d, st_event **out) { CALL(d, event_create, NULL, (d->handle, out)); }
st_status st_dev_event_destroy(st_dev *d, st_event *e) {
    return done(d, "event_destroy", NULL, d->api->event_destroy(e));
}
st_status st_dev_event_record(st_dev *d, st_event *e, st_stream *s) { CALL(d, event_record, NULL, (e, s)); }
st_status st_dev_event_wait(st_dev *d, st_stream *s, st_event *e) { CALL(d, event_wait, NULL, (s, e)); }
st_status st_dev_event_sync(st_dev *d, st_event *e) { CALL(d, event_sync, NULL, (e)); }
st_status st_dev_graph_begin(st_dev *d, st_stream *s) { CALL(d, graph_begin, NULL, (s)); }
st_status st_dev_graph_end(st_dev *d, st_stream *s, st_graph **out) { CALL(d, graph_end, NULL, (s, out)); }
st_status st_dev_graph_launch(st_dev *d, st_graph *g, st_stream *s) { CALL(d, graph_launch, NULL, (g, s)); }
st_status st_dev_graph_destroy(st_dev *d, st_graph *g) {
    if (!API_SLOT(d, graph_destroy, 0)) return gate(d, "graph_destroy", NULL, 0);
    return done(d, "graph_destroy", NULL, d->api->graph_destroy(g));
}

/* ---- profile ------------------------------------------------------------------------------------ */

#define PROF_MAX 256
typedef struct prof_entry {
    char dev[ST_DEV_NAME_MAX];
    const char *op, *what;
    double s;
    uint64_t n;
} prof_entry;

static prof_entry g_prof[PROF_MAX];
static int g_prof_n;
static pthread_mutex_t g_prof_mu = PTHREAD_MUTEX_INITIALIZER;

int st_dev_profile_on(void) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("STRATA_PROFILE");
        on = e && *e && strcmp(e, "0");
    }
    return on;
}

static void prof_add(const st_dev *d, const char *op, const char *what, double s) {
    if (!what) what = "";
    pthread_mutex_lock(&g_prof_mu);
    int i = 0;
    while (i < g_prof_n && (strcmp(g_prof[i].dev, d->name) || strcmp(g_prof[i].op, op) || strcmp(g_prof[i].what, what)))
        i++;
    if (i == g_prof_n && g_prof_n < PROF_MAX) {
        snprintf(g_prof[i].dev, sizeof g_prof[i].dev, "%s", d->name);
        g_prof[i].op = op;
        g_prof[i].what = what;
        g_prof_n++;
    }
    if (i < g_prof_n) {
        g_prof[i].s += s;
        g_prof[i].n++;
    }
    pthread_mutex_unlock(&g_prof_mu);
}

static int prof_cmp(const void *a, const void *b) {
    double x = ((const prof_entry *)a)->s, y = ((const prof_entry *)b)->s;
    return x < y ? 1 : x > y ? -1 : 0;
}

void st_dev_profile_report(FILE *f) {
    pthread_mutex_lock(&g_prof_mu);
    double tot = 0;
    for (int i = 0; i < g_prof_n; i++) tot += g_prof[i].s;
    qsort(g_prof, (size_t)g_prof_n, sizeof g_prof[0], prof_cmp);
    if (g_prof_n) fprintf(f, "op profile (synchronized per op): %.3f s in all\n", tot);
    for (int i = 0; i < g_prof_n; i++)
        fprintf(f, "  %-8s %-12s %-20s %9.3f ms %5.1f%% %8llu calls %8.1f us/call\n", g_prof[i].dev, g_prof[i].op,
                g_prof[i].what, g_prof[i].s * 1e3, tot > 0 ? 100 * g_prof[i].s / tot : 0,
                (unsigned long long)g_prof[i].n, g_prof[i].s * 1e6 / (double)(g_prof[i].n ? g_prof[i].n : 1));
    g_prof_n = 0;
    pthread_mutex_unlock(&g_prof_mu);
}

/* ---- ops ----------------------------------------------------------------------------------------- */

/* Profile on: the stream drains before the op (so the op's time is its own); returns the start. */
static uint64_t op_begin(st_dev *d, st_stream *s) {
    if (!st_dev_profile_on()) return 0;
    d->api->stream_sync(s);
    return st_now_ns();
}

static st_status op_end(st_dev *d, st_stream *s, const char *op, const char *what, st_status r, uint64_t t0) {
    if (t0 && r == ST_OK) {
        r = d->api->stream_sync(s);
        prof_add(d, op, what, (double)(st_now_ns() - t0) / 1e9);
    }
    return done(d, op, what, r);
}

#define ST_DEV_OP_DEF_(ID, slot, A, minor)                                                \
    st_status st_dev_##slot(st_dev *d, st_stream *s, const A *a, const char *what) {      \
        st_status g_ = gate(d, #slot, what, st_dev_has_op(d, ST_OP_##ID));                \
        if (g_ != ST_OK) return g_;                                                       \
        uint64_t t0_ = op_begin(d, s);                                                    \
        return op_end(d, s, #slot, what, d->api->ops->slot(s, a), t0_);                   \
    }
ST_BACKEND_OP_SLOTS(ST_DEV_OP_DEF_)
#undef ST_DEV_OP_DEF_

/* The op ids and the slot list agree (the slot list is in op-id order). */
#define ST_DEV_OP_CHECK_(ID, slot, A, minor)                                                           \
    _Static_assert(offsetof(st_backend_ops, slot) == offsetof(st_backend_ops, get_rows) + ST_OP_##ID * sizeof(void *), \
                   "op slot " #slot " out of op-id order");
ST_BACKEND_OP_SLOTS(ST_DEV_OP_CHECK_)
#undef ST_DEV_OP_CHECK_
