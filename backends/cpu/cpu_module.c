/* SPDX-License-Identifier: Apache-2.0 */
/* The shared body of every CPU module: entry, probe, device properties, device lifetime
 * (thread pool), memory and the op table. The ISA module supplies names, a CPU check and the
 * kernel table through st_cpu_module_desc (cpu_backend.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu/cpu_internal.h"
#include "cpu/cpu_topo.h"

st_cpu_kernels st_cpu_k;
const st_cpu_module_desc *st_cpu_desc;

#define ST_CPU_MAX_OPEN 16

static pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;
static st_device *g_open[ST_CPU_MAX_OPEN]; /* opened devices, joined at shutdown */
static int g_kernels_ready;

static uint64_t phys_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

/* MemAvailable from /proc/meminfo, else free pages. */
static uint64_t avail_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                fclose(f);
                return (uint64_t)kb * 1024u;
            }
        }
        fclose(f);
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int cpu_usable(char *reason, size_t n) {
    reason[0] = 0;
    return st_cpu_desc->cpu_check ? st_cpu_desc->cpu_check(reason, n) : 1;
}

static void copy_str(char *dst, size_t n, const char *src) {
    snprintf(dst, n, "%s", src ? src : "");
}

static st_status cpu_probe(st_probe_report *out) {
    if (!out || out->size < offsetof(st_probe_report, n_devices) + sizeof out->n_devices)
        return st_mod_fail(ST_INVALID, "cpu: probe report too small");
    char reason[ST_REASON_MAX];
    int ok = cpu_usable(reason, sizeof reason);
    out->status = ok ? ST_OK : ST_ARCH;
    copy_str(out->reason, sizeof out->reason, ok ? "" : reason);
    copy_str(out->build_archs, sizeof out->build_archs, st_cpu_desc->build_archs);
    out->n_devices = 1;
    if (!ok) return st_mod_fail(ST_ARCH, "cpu: %s", reason);
    return ST_OK;
}

static st_status cpu_device_props(uint32_t index, st_device_props *out) {
    if (index != 0) return st_mod_fail(ST_INVALID, "cpu: no device %u (there is one)", index);
    if (!out || out->size < offsetof(st_device_props, caps) + sizeof out->caps)
        return st_mod_fail(ST_INVALID, "cpu: device props struct too small");
    uint32_t size = out->size;
    st_device_props p;
    memset(&p, 0, sizeof p);
    p.size = size;
    char reason[ST_REASON_MAX];
    p.usable = (uint32_t)cpu_usable(reason, sizeof reason);
    copy_str(p.name, sizeof p.name, st_cpu_desc->device_name);
    copy_str(p.vendor, sizeof p.vendor, "cpu");
    copy_str(p.arch, sizeof p.arch, st_cpu_desc->arch);
    copy_str(p.reason, sizeof p.reason, p.usable ? "" : reason);
    memcpy(p.uuid, "strata-host-cpu", 16); /* one host CPU per process: a fixed identity */
    p.domain = 0;                          /* host memory */
    p.mem_total = phys_bytes();
    p.mem_free = avail_bytes();
    p.mem_used_self = 0;
    pthread_mutex_lock(&g_open_mu);
    for (int i = 0; i < ST_CPU_MAX_OPEN; i++)
        if (g_open[i]) {
            pthread_mutex_lock(&g_open[i]->mem.mu);
            p.mem_used_self += g_open[i]->mem.used;
            pthread_mutex_unlock(&g_open[i]->mem.mu);
        }
    pthread_mutex_unlock(&g_open_mu);
    p.max_alloc = p.mem_total;
    p.caps = ST_CAP_UNIFIED | ST_CAP_F16 | ST_CAP_BF16;
    p.n_cores = (uint32_t)online_cores();
    size_t n = size < sizeof p ? size : sizeof p;
    memcpy(out, &p, n);
    return ST_OK;
}

static int is_act_type(uint32_t t) { return t == ST_TYPE_F32 || t == ST_TYPE_F16 || t == ST_TYPE_BF16; }

static int cpu_op_supported(uint32_t index, uint32_t op, uint32_t wtype) {
    if (index != 0 || !g_kernels_ready || wtype >= ST_TYPE_COUNT) return 0;
    switch (op) {
    case ST_OP_GET_ROWS: return st_cpu_k.wt[wtype].to_float != NULL;
    case ST_OP_MATMUL:
    case ST_OP_MOE_MATMUL: return st_cpu_k.wt[wtype].vec_dot != NULL && st_type_get(st_cpu_k.wt[wtype].vec_type);
    case ST_OP_KV_WRITE:
    case ST_OP_ATTENTION_EX:
    case ST_OP_ATTENTION: return is_act_type(wtype) || wtype == ST_TYPE_Q8_0;
    case ST_OP_ROUTER:
    case ST_OP_ROUTER_GROUPS:
    case ST_OP_ARGMAX:
    case ST_OP_TOPK: return wtype == ST_TYPE_F32;
    case ST_OP_RMS_NORM:
    case ST_OP_ROPE:
    case ST_OP_SWIGLU:
    case ST_OP_SWIGLU_OAI:
    case ST_OP_MOE_COMBINE:
    case ST_OP_ADD:
    case ST_OP_SCALE:
    case ST_OP_CONVERT:
    case ST_OP_MUL_ROWS: return is_act_type(wtype);
    default: return 0;
    }
}

/* STRATA_CPU_PIN=1: the CPUs to pin the pool's threads to ([n] in st_cpu_pin_order's order,
 * wrapping when there are more threads than CPUs; caller frees), else NULL (no pinning). */
static int *pin_plan(int n) {
    const char *e = getenv("STRATA_CPU_PIN");
    if (!e || *e != '1') return NULL;
    int *order = malloc(sizeof *order * 4096), *plan = malloc(sizeof *plan * (size_t)n);
    int m = order && plan ? st_cpu_pin_order(order, 4096) : 0;
    if (m <= 0) {
        st_mod_log(ST_LOG_WARN, "cpu: STRATA_CPU_PIN=1 but the CPUs of this process are unknown: not pinned");
        free(order);
        free(plan);
        return NULL;
    }
    for (int i = 0; i < n; i++) plan[i] = order[i % m];
    st_mod_log(ST_LOG_INFO, "cpu: %d workers pinned (first CPUs %d %d %d ...; %d NUMA node(s), repacked weights %s)",
               n - 1, n > 1 ? plan[1] : -1, n > 2 ? plan[2] : -1, n > 3 ? plan[3] : -1, st_cpu_numa_nodes(),
               st_cpu_numa_nodes() > 1 ? "interleaved over the nodes" : "on the one node");
    free(order);
    return plan;
}

static st_status cpu_device_open(uint32_t index, st_device **out) {
    *out = NULL;
    if (index != 0) return st_mod_fail(ST_INVALID, "cpu: no device %u (there is one)", index);
    char reason[ST_REASON_MAX];
    if (!cpu_usable(reason, sizeof reason)) return st_mod_fail(ST_ARCH, "cpu: %s", reason);
    st_device *d = calloc(1, sizeof *d);
    if (!d) return st_mod_fail(ST_OOM, "cpu: device: out of host memory");
    st_hostmem_init(&d->mem, 0);
    unsigned nt = st_mod_threads();
    d->n_threads = nt ? (int)nt : online_cores();
    if (d->n_threads > 1024) d->n_threads = 1024;
    int *pin = pin_plan(d->n_threads);
    st_status s = st_cpu_pool_create(d->n_threads, pin, &d->pool);
    free(pin);
    if (s != ST_OK) {
        free(d);
        return s;
    }
    if ((s = st_cpu_repack_create(&d->repack)) != ST_OK) {
        st_cpu_pool_destroy(d->pool);
        free(d);
        return s;
    }
    pthread_mutex_lock(&g_open_mu);
    int slot = -1;
    for (int i = 0; i < ST_CPU_MAX_OPEN; i++)
        if (!g_open[i]) {
            slot = i;
            break;
        }
    if (slot >= 0) g_open[slot] = d;
    pthread_mutex_unlock(&g_open_mu);
    if (slot < 0) {
        st_cpu_pool_destroy(d->pool);
        st_cpu_repack_destroy(d->repack, &d->mem);
        free(d);
        return st_mod_fail(ST_INVALID, "cpu: more than %d opens of the host CPU device", ST_CPU_MAX_OPEN);
    }
    st_mod_log(ST_LOG_INFO, "%s: %d threads, kernels %s", st_cpu_desc->device_name, d->n_threads, st_cpu_k.isa);
    *out = d;
    return ST_OK;
}

static void device_release(st_device *d) {
    st_cpu_pool_destroy(d->pool);
    st_cpu_repack_destroy(d->repack, &d->mem);
    pthread_mutex_destroy(&d->mem.mu);
    free(d);
}

static st_status cpu_device_close(st_device *d) {
    if (!d) return st_mod_fail(ST_INVALID, "cpu: close of a NULL device");
    int found = 0;
    pthread_mutex_lock(&g_open_mu);
    for (int i = 0; i < ST_CPU_MAX_OPEN; i++)
        if (g_open[i] == d) {
            g_open[i] = NULL;
            found = 1;
        }
    pthread_mutex_unlock(&g_open_mu);
    if (!found) return st_mod_fail(ST_INVALID, "cpu: close of a device that is not open");
    device_release(d);
    return ST_OK;
}

static st_status cpu_mem_info(st_device *d, uint64_t *free_bytes, uint64_t *total_bytes) {
    (void)d;
    if (free_bytes) *free_bytes = avail_bytes();
    if (total_bytes) *total_bytes = phys_bytes();
    return ST_OK;
}

static st_status cpu_mem_alloc(st_device *d, uint64_t bytes, void **out) {
    return st_hostmem_alloc(&d->mem, st_cpu_desc->device_name, bytes, out);
}

static st_status cpu_mem_free(st_device *d, void *ptr) { return st_hostmem_free(&d->mem, ptr); }

static void cpu_shutdown(void) {
    pthread_mutex_lock(&g_open_mu);
    for (int i = 0; i < ST_CPU_MAX_OPEN; i++)
        if (g_open[i]) {
            device_release(g_open[i]);
            g_open[i] = NULL;
        }
    pthread_mutex_unlock(&g_open_mu);
}

static const st_backend_ops g_ops = {
    .size = sizeof(st_backend_ops),
    .get_rows = st_cpu_get_rows,
    .rms_norm = st_cpu_rms_norm,
    .matmul = st_cpu_matmul,
    .rope = st_cpu_rope,
    .kv_write = st_cpu_kv_write,
    .attention = st_cpu_attention,
    .swiglu = st_cpu_swiglu,
    .router = st_cpu_router,
    .moe_matmul = st_cpu_moe_matmul,
    .moe_combine = st_cpu_moe_combine,
    .add = st_cpu_add,
    .scale = st_cpu_scale,
    .convert = st_cpu_convert,
    .mul_rows = st_cpu_mul_rows,
    .argmax = st_cpu_argmax,
    .topk = st_cpu_topk,
    .attention_ex = st_cpu_attention_ex,
    .swiglu_oai = st_cpu_swiglu_oai,
    .router_groups = st_cpu_router_groups,
};

static st_backend_api g_api;

st_status st_cpu_backend_entry(const st_cpu_module_desc *desc, const st_host_api *host, uint32_t abi_major,
                               uint32_t abi_minor, const st_backend_api **out) {
    st_cpu_desc = desc;
    memset(&g_api, 0, sizeof g_api);
    g_api.size = sizeof g_api;
    g_api.abi_major = ST_ABI_MAJOR;
    g_api.abi_minor = ST_ABI_MINOR;
    g_api.name = desc->module_name;
    g_api.version = desc->version;
    if (out) *out = &g_api;
    st_status s = st_mod_init(host, abi_major, abi_minor, desc->module_name);
    if (s != ST_OK) return s;
    if (!out) return st_mod_fail(ST_INVALID, "cpu: entry called without an output slot");
    char reason[ST_REASON_MAX];
    if (!g_kernels_ready) {
        st_cpu_kernels_scalar(&st_cpu_k);
        if (cpu_usable(reason, sizeof reason) && desc->kernels_init) desc->kernels_init(&st_cpu_k);
        g_kernels_ready = 1;
    }
    g_api.probe = cpu_probe;
    g_api.device_props = cpu_device_props;
    g_api.op_supported = cpu_op_supported;
    g_api.last_error = st_mod_last_error;
    g_api.device_open = cpu_device_open;
    g_api.device_close = cpu_device_close;
    g_api.mem_info = cpu_mem_info;
    g_api.mem_alloc = cpu_mem_alloc;
    g_api.mem_free = cpu_mem_free;
    st_hostdev_fill_api(&g_api);
    g_api.ops = &g_ops;
    g_api.shutdown = cpu_shutdown;
    return ST_OK;
}
