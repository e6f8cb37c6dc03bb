/* SPDX-License-Identifier: Apache-2.0 */
/* Probe of the CUDA module: the driver API loaded with dlopen (no context is created; free
 * memory comes from NVML when present), compute capability checked against the compiled
 * architecture list, per-device properties. Errors are statuses with a reason text. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "cuda/cuda_internal.h"
#include "quant/quant.h"

/* Driver entry points used by the probe; resolved with dlsym so libcuda is optional. */
typedef struct st_cu_driver {
    void *lib;
    CUresult (*init)(unsigned int);
    CUresult (*driver_version)(int *);
    CUresult (*device_count)(int *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_name)(char *, int, CUdevice);
    CUresult (*device_uuid)(CUuuid *, CUdevice);
    CUresult (*device_total_mem)(size_t *, CUdevice);
    CUresult (*device_attr)(int *, CUdevice_attribute, CUdevice);
    CUresult (*can_access_peer)(int *, CUdevice, CUdevice);
    CUresult (*error_string)(CUresult, const char **);
} st_cu_driver;

/* NVML, for free memory without a context. Types mirrored from NVML's public API. */
typedef struct { unsigned long long total, free, used; } st_nvml_memory;
typedef struct st_nvml {
    void *lib;
    int (*init)(void);
    int (*shutdown)(void);
    int (*by_uuid)(const char *, void **);
    int (*mem_info)(void *, st_nvml_memory *);
} st_nvml;

static pthread_mutex_t g_probe_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_probed;
static st_probe_report g_report;
static uint32_t g_n_dev;
static st_device_props g_props[ST_CUDA_MAX_DEVICES];

static const char *cu_err(const st_cu_driver *d, CUresult r) {
    const char *s = NULL;
    if (d->error_string && d->error_string(r, &s) == CUDA_SUCCESS && s) return s;
    return "unknown driver error";
}

static int load_driver(st_cu_driver *d, char *why, size_t n) {
    memset(d, 0, sizeof *d);
    d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d->lib) {
        snprintf(why, n, "no NVIDIA driver (libcuda.so.1 not found)");
        return 0;
    }
#define ST_SYM(field, name)                                                     \
    do {                                                                        \
        *(void **)&d->field = dlsym(d->lib, name);                              \
        if (!d->field) {                                                        \
            snprintf(why, n, "NVIDIA driver library lacks %s (driver too old)", name); \
            return 0;                                                           \
        }                                                                       \
    } while (0)
    ST_SYM(init, "cuInit");
    ST_SYM(driver_version, "cuDriverGetVersion");
    ST_SYM(device_count, "cuDeviceGetCount");
    ST_SYM(device_get, "cuDeviceGet");
    ST_SYM(device_name, "cuDeviceGetName");
    ST_SYM(device_uuid, "cuDeviceGetUuid_v2");
    ST_SYM(device_total_mem, "cuDeviceTotalMem_v2");
    ST_SYM(device_attr, "cuDeviceGetAttribute");
    ST_SYM(can_access_peer, "cuDeviceCanAccessPeer");
    ST_SYM(error_string, "cuGetErrorString");
#undef ST_SYM
    return 1;
}

static void load_nvml(st_nvml *m) {
    memset(m, 0, sizeof *m);
    m->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!m->lib) return;
    *(void **)&m->init = dlsym(m->lib, "nvmlInit_v2");
    *(void **)&m->shutdown = dlsym(m->lib, "nvmlShutdown");
    *(void **)&m->by_uuid = dlsym(m->lib, "nvmlDeviceGetHandleByUUID");
    *(void **)&m->mem_info = dlsym(m->lib, "nvmlDeviceGetMemoryInfo");
    if (!m->init || !m->shutdown || !m->by_uuid || !m->mem_info || m->init() != 0) {
        dlclose(m->lib);
        memset(m, 0, sizeof *m);
    }
}

/* The compiled SASS list (ST_CUDA_ARCHS, "75,80,...") as numbers; returns the count. */
static int compiled_archs(int *out, int cap) {
    const char *p = ST_CUDA_ARCHS;
    int n = 0;
    while (*p && n < cap) {
        out[n++] = (int)strtol(p, (char **)&p, 10);
        while (*p == ',' || *p == ' ') p++;
    }
    return n;
}

/* Decide whether device cc (major, minor) can run this module; fills reason when not, or
 * when it runs only through PTX JIT. */
static int arch_usable(int major, int minor, char *reason, size_t n) {
    int archs[32];
    int na = compiled_archs(archs, 32);
    int cc = major * 10 + minor, lo = 1000, hi = 0;
    for (int i = 0; i < na; i++) {
        if (archs[i] < lo) lo = archs[i];
        if (archs[i] > hi) hi = archs[i];
        /* SASS runs on devices of the same major with an equal or higher minor. */
        if (archs[i] / 10 == major && archs[i] % 10 <= minor) return 1;
    }
    if (cc >= ST_CUDA_PTX_ARCH) {
        snprintf(reason, n,
                 "built for sm_%d..sm_%d, device is sm_%d: runs through JIT of compute_%d PTX "
                 "(first launches compile)", lo, hi, cc, ST_CUDA_PTX_ARCH);
        return 1;
    }
    snprintf(reason, n, "built for sm_%d..sm_%d, device is sm_%d", lo, hi, cc);
    return 0;
}

static void fill_uuid_text(const uint8_t u[16], char *buf, size_t n) {
    snprintf(buf, n,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

static int find_root(int *parent, int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
}

static void probe_locked(void) {
    st_cu_driver d;
    char why[ST_REASON_MAX];
    memset(&g_report, 0, sizeof g_report);
    g_report.size = sizeof g_report;
    {
        int archs[32], na = compiled_archs(archs, 32);
        size_t o = 0;
        for (int i = 0; i < na && o < sizeof g_report.build_archs; i++)
            o += (size_t)snprintf(g_report.build_archs + o, sizeof g_report.build_archs - o,
                                  "sm_%d,", archs[i]);
        if (o < sizeof g_report.build_archs)
            snprintf(g_report.build_archs + o, sizeof g_report.build_archs - o, "compute_%d",
                     ST_CUDA_PTX_ARCH);
    }
    g_n_dev = 0;
    if (!load_driver(&d, why, sizeof why)) {
        g_report.status = ST_NO_DRIVER;
        snprintf(g_report.reason, sizeof g_report.reason, "%s", why);
        if (d.lib) dlclose(d.lib);
        return;
    }
    CUresult r = d.init(0);
    if (r != CUDA_SUCCESS) {
        g_report.status = r == CUDA_ERROR_NO_DEVICE ? ST_NO_DEVICE : ST_NO_DRIVER;
        snprintf(g_report.reason, sizeof g_report.reason, "cuInit failed: %s", cu_err(&d, r));
        return; /* keep the library loaded: the runtime would load it again anyway */
    }
    int ver = 0, need = (CUDART_VERSION / 1000) * 1000;
    d.driver_version(&ver);
    if (ver < need) {
        g_report.status = ST_NO_DRIVER;
        snprintf(g_report.reason, sizeof g_report.reason,
                 "NVIDIA driver too old: it supports CUDA %d.%d, this module needs CUDA %d.%d "
                 "or newer", ver / 1000, (ver % 1000) / 10, need / 1000, (need % 1000) / 10);
        return;
    }
    int count = 0;
    r = d.device_count(&count);
    if (r != CUDA_SUCCESS || count <= 0) {
        g_report.status = ST_NO_DEVICE;
        snprintf(g_report.reason, sizeof g_report.reason, "no CUDA device (%s)",
                 r != CUDA_SUCCESS ? cu_err(&d, r) : "driver reports 0 devices");
        return;
    }
    if (count > ST_CUDA_MAX_DEVICES) count = ST_CUDA_MAX_DEVICES;
    st_nvml nv;
    load_nvml(&nv);
    int n_usable = 0, parent[ST_CUDA_MAX_DEVICES];
    CUdevice devs[ST_CUDA_MAX_DEVICES];
    for (int i = 0; i < count; i++) {
        st_device_props *p = &g_props[i];
        memset(p, 0, sizeof *p);
        p->size = sizeof *p;
        parent[i] = i;
        if (d.device_get(&devs[i], i) != CUDA_SUCCESS) {
            snprintf(p->reason, sizeof p->reason, "cuDeviceGet(%d) failed", i);
            continue;
        }
        CUdevice dv = devs[i];
        d.device_name(p->name, sizeof p->name, dv);
        snprintf(p->vendor, sizeof p->vendor, "nvidia");
        CUuuid u;
        if (d.device_uuid(&u, dv) == CUDA_SUCCESS) memcpy(p->uuid, u.bytes, 16);
        size_t total = 0;
        d.device_total_mem(&total, dv);
        p->mem_total = total;
        p->max_alloc = total;
        int v = 0, major = 0, minor = 0, clock_khz = 0, bus_bits = 0;
        d.device_attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dv);
        d.device_attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dv);
        p->compute_major = (uint32_t)major;
        p->compute_minor = (uint32_t)minor;
        snprintf(p->arch, sizeof p->arch, "sm_%d%d", major, minor);
        d.device_attr(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dv);
        p->n_cores = (uint32_t)v;
        if (d.device_attr(&clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dv) == CUDA_SUCCESS &&
            d.device_attr(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dv) == CUDA_SUCCESS)
            p->mem_bw_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
        p->caps = ST_CAP_F16 | ST_CAP_GRAPHS | ST_CAP_ASYNC;
        if (major >= 8) p->caps |= ST_CAP_BF16;
        v = 0;
        d.device_attr(&v, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dv);
        if (v) p->caps |= ST_CAP_HOST_REGISTER;
        p->mem_used_self = st_cuda_used_bytes((uint32_t)i);
        if (nv.lib) {
            char ut[48];
            void *h = NULL;
            st_nvml_memory mi;
            fill_uuid_text(p->uuid, ut, sizeof ut);
            if (nv.by_uuid(ut, &h) == 0 && nv.mem_info(h, &mi) == 0) p->mem_free = mi.free;
        }
        p->usable = (uint32_t)arch_usable(major, minor, p->reason, sizeof p->reason);
        if (!p->usable) continue;
        n_usable++;
    }
    /* Devices that can reach each other both ways share one memory domain. */
    for (int i = 0; i < count; i++)
        for (int j = i + 1; j < count; j++) {
            int ij = 0, ji = 0;
            if (d.can_access_peer(&ij, devs[i], devs[j]) == CUDA_SUCCESS &&
                d.can_access_peer(&ji, devs[j], devs[i]) == CUDA_SUCCESS && ij && ji) {
                int a = find_root(parent, i), b = find_root(parent, j);
                parent[b > a ? b : a] = b > a ? a : b;
                g_props[i].caps |= ST_CAP_PEER;
                g_props[j].caps |= ST_CAP_PEER;
            }
        }
    /* Domain ids: "CUDA" tag, the process id and the group's first ordinal, so devices of
     * different groups (and of other modules) never compare equal. */
    for (int i = 0; i < count; i++)
        g_props[i].domain = (0x43554441ull << 32) ^ ((uint64_t)getpid() << 8) ^ (uint64_t)find_root(parent, i);
    if (nv.lib) {
        nv.shutdown();
        dlclose(nv.lib);
    }
    g_n_dev = (uint32_t)count;
    g_report.n_devices = (uint32_t)count;
    if (n_usable > 0) {
        g_report.status = ST_OK;
    } else {
        g_report.status = ST_ARCH;
        snprintf(g_report.reason, sizeof g_report.reason, "no device this module can run on: %.200s",
                 g_props[0].reason);
    }
}

st_status st_cuda_probe(st_probe_report *out) {
    if (!out) return st_mod_fail(ST_INVALID, "cuda probe: NULL report");
    pthread_mutex_lock(&g_probe_mu);
    probe_locked();
    g_probed = 1;
    uint32_t n = out->size && out->size < sizeof g_report ? out->size : (uint32_t)sizeof g_report;
    memcpy(out, &g_report, n);
    out->size = n;
    st_status st = (st_status)g_report.status;
    pthread_mutex_unlock(&g_probe_mu);
    if (st != ST_OK) st_mod_fail(st, "%s", g_report.reason);
    return st;
}

static void ensure_probed(void) {
    pthread_mutex_lock(&g_probe_mu);
    if (!g_probed) {
        probe_locked();
        g_probed = 1;
    }
    pthread_mutex_unlock(&g_probe_mu);
}

st_status st_cuda_device_props(uint32_t index, st_device_props *out) {
    if (!out) return st_mod_fail(ST_INVALID, "cuda device_props: NULL output");
    ensure_probed();
    pthread_mutex_lock(&g_probe_mu);
    uint32_t n_dev = g_n_dev;
    st_device_props p;
    if (index < n_dev) p = g_props[index];
    pthread_mutex_unlock(&g_probe_mu);
    if (index >= n_dev) return st_mod_fail(ST_INVALID, "cuda device_props: device %u of %u", index, n_dev);
    p.mem_used_self = st_cuda_used_bytes(index);
    uint32_t n = out->size && out->size < sizeof p ? out->size : (uint32_t)sizeof p;
    memcpy(out, &p, n);
    out->size = n;
    return ST_OK;
}

uint64_t st_cuda_domain_of(uint32_t index) {
    ensure_probed();
    pthread_mutex_lock(&g_probe_mu);
    uint64_t d = index < g_n_dev ? g_props[index].domain : 0;
    pthread_mutex_unlock(&g_probe_mu);
    return d;
}

void st_cuda_probe_reset(void) {
    pthread_mutex_lock(&g_probe_mu);
    g_probed = 0;
    g_n_dev = 0;
    pthread_mutex_unlock(&g_probe_mu);
}

static int is_weight_type(uint32_t t) {
    switch (t) {
    case ST_TYPE_F32: case ST_TYPE_F16: case ST_TYPE_BF16: case ST_TYPE_Q4_0: case ST_TYPE_Q4_1:
    case ST_TYPE_Q5_0: case ST_TYPE_Q5_1: case ST_TYPE_Q8_0: case ST_TYPE_Q2_K: case ST_TYPE_Q3_K:
    case ST_TYPE_Q4_K: case ST_TYPE_Q5_K: case ST_TYPE_Q6_K: case ST_TYPE_IQ4_NL:
    case ST_TYPE_IQ4_XS: case ST_TYPE_MXFP4:
        return 1;
    default:
        return 0;
    }
}

static int is_act_type(uint32_t t) {
    return t == ST_TYPE_F32 || t == ST_TYPE_F16 || t == ST_TYPE_BF16;
}

int st_cuda_op_supported(uint32_t index, uint32_t op, uint32_t wtype) {
    ensure_probed();
    pthread_mutex_lock(&g_probe_mu);
    int usable = index < g_n_dev && g_props[index].usable;
    pthread_mutex_unlock(&g_probe_mu);
    if (!usable) return 0;
    switch (op) {
    case ST_OP_GET_ROWS: case ST_OP_MATMUL: case ST_OP_MOE_MATMUL: case ST_OP_MOE_GATE_UP: case ST_OP_MOE_DOWN:
        return is_weight_type(wtype);
    case ST_OP_KV_WRITE: case ST_OP_ATTENTION: case ST_OP_ATTN_PREP: case ST_OP_ATTENTION_EX: /* activation or cache type */
        return is_act_type(wtype) || wtype == ST_TYPE_Q8_0;
    case ST_OP_ROUTER: case ST_OP_ROUTER_GROUPS: case ST_OP_ARGMAX: case ST_OP_TOPK:
        return wtype == ST_TYPE_F32;
    case ST_OP_RMS_NORM: case ST_OP_ROPE: case ST_OP_SWIGLU: case ST_OP_SWIGLU_OAI: case ST_OP_MOE_COMBINE:
    case ST_OP_ADD: case ST_OP_SCALE: case ST_OP_CONVERT: case ST_OP_MUL_ROWS:
        return is_act_type(wtype);
    default:
        return 0;
    }
}
