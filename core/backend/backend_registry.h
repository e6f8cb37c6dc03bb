/* SPDX-License-Identifier: Apache-2.0 */
/* The backend registry: finds module files (search order, each step reported), chooses CPU
 * variants before loading, loads and probes every module on its own (a broken module is
 * reported and never takes the others down), and lists the usable devices, one module per
 * device when two serve the same device. See docs/backends.md. */
#ifndef STRATA_BACKEND_REGISTRY_H
#define STRATA_BACKEND_REGISTRY_H

#include <stdarg.h>
#include <stdint.h>

#include "platform/cpu_features.h"
#include "platform/dl.h"
#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ST_BACKEND_PATH_MAX 4096
#define ST_BACKEND_TEXT_MAX 512
#define ST_BACKEND_MAX_DEVICES 256 /* devices per module the registry looks at */

/* How far a candidate module got. Numbers are ordered: a later stage passed every earlier one. */
typedef enum st_backend_stage {
    ST_STAGE_FOUND = 0,   /* file found; not (or not successfully) dlopen'ed */
    ST_STAGE_LOADED = 1,  /* dlopen worked; no usable entry symbol */
    ST_STAGE_ENTRY = 2,   /* st_backend_entry ran; it failed or its table was refused */
    ST_STAGE_ABI = 3,     /* ABI and table accepted; probe failed */
    ST_STAGE_PROBE = 4,   /* probe ran; no usable device */
    ST_STAGE_DEVICES = 5  /* at least one usable device */
} st_backend_stage;

/* One step of the search order, as it happened. */
typedef struct st_backend_search_step {
    char what[64];                    /* "STRATA_BACKEND_PATH", "executable-relative" */
    char path[ST_BACKEND_PATH_MAX];   /* directory or file looked at ("" when not set) */
    char result[ST_BACKEND_TEXT_MAX]; /* "3 module files", "not set", "no such directory" */
    uint32_t n_found;                 /* candidate files this step contributed */
} st_backend_search_step;

/* One device as a module reported it. */
typedef struct st_backend_device_entry {
    uint32_t index;                 /* the module's device index */
    st_device_props props;          /* copy of device_props(); zeroed when that call failed */
    int props_ok;                   /* nonzero when device_props returned OK */
    int chosen;                     /* nonzero when this device is in the registry's device list */
    char note[ST_BACKEND_TEXT_MAX]; /* why unusable or not chosen, or why chosen over another */
} st_backend_device_entry;

/* One candidate module file and everything learned about it. Owned by the registry. */
typedef struct st_backend_module {
    char path[ST_BACKEND_PATH_MAX];  /* as found */
    char file[256];                  /* file name */
    char backend[64];                /* from the file name: strata-cpu-avx2.so -> "cpu" */
    char variant[64];                /* from the file name: "avx2"; "" when none */
    uint32_t step;                   /* index of the search step that found it */
    st_backend_stage stage;          /* how far it got */
    int usable;                      /* nonzero when at least one of its devices is chosen */
    char reason[ST_BACKEND_TEXT_MAX];/* why it stopped at `stage` ("" when usable) */
    char name[ST_NAME_MAX];          /* the table's name (once stage >= ENTRY) */
    char version[ST_NAME_MAX];       /* the table's version string */
    uint32_t abi_major, abi_minor;   /* the table's ABI (once the entry gave a table) */
    int has_score;                   /* module exports st_backend_score */
    int score;                       /* its value when has_score */
    double load_ms;                  /* time from dlopen to the end of probing */
    st_probe_report probe;           /* valid when stage >= PROBE */
    uint32_t n_devices;              /* entries in `devices` */
    st_backend_device_entry *devices;
    /* Live while the module stays loaded (usable modules only; NULL otherwise). */
    const st_backend_api *api;
    /* private to the registry */
    st_dl *dl;
    st_host_api host;
    char *config;
} st_backend_module;

/* A usable device in the registry's flat list. */
typedef struct st_backend_device {
    st_backend_module *module;    /* the module that serves it (loaded) */
    uint32_t index;               /* the module's device index, for api->device_open */
    const st_device_props *props; /* points into module->devices */
} st_backend_device;

typedef struct st_backend_registry st_backend_registry;

/* Options for st_backend_registry_open; a zeroed struct means the defaults. */
typedef struct st_backend_options {
    const char *search_path;     /* ':'-separated dirs/files used instead of $STRATA_BACKEND_PATH */
    int ignore_env_path;         /* nonzero: do not read $STRATA_BACKEND_PATH */
    int skip_exe_dir;            /* nonzero: skip <exe dir>/../lib/strata/backends */
    const st_cpu_features *cpu;  /* CPU features for variant choice; NULL = detect */
} st_backend_options;

/* Search, choose, load and probe every module. Always returns a registry (owned by the
 * caller, released with st_backend_registry_close) unless out of memory, then NULL. Problems
 * with modules are recorded per module, never returned as failure. */
st_backend_registry *st_backend_registry_open(const st_backend_options *opt);
/* Shut down every loaded module (its shutdown(), then dlclose), in reverse load order, and
 * free the registry. NULL is accepted. Device handles opened through it must be closed first. */
void st_backend_registry_close(st_backend_registry *reg);

/* Search steps in the order they ran. Pointers stay valid until close. */
uint32_t st_backend_registry_n_steps(const st_backend_registry *reg);
const st_backend_search_step *st_backend_registry_step(const st_backend_registry *reg, uint32_t i);
/* Every candidate module file, in search order (loaded or not). NULL when i is out of range. */
uint32_t st_backend_registry_n_modules(const st_backend_registry *reg);
const st_backend_module *st_backend_registry_module(const st_backend_registry *reg, uint32_t i);
/* The first usable module whose backend (file-name) or table name equals `name`, or NULL. */
const st_backend_module *st_backend_registry_find(const st_backend_registry *reg, const char *name);
/* Usable devices, one entry per physical device, in search order. NULL when out of range. */
uint32_t st_backend_registry_n_devices(const st_backend_registry *reg);
const st_backend_device *st_backend_registry_device(const st_backend_registry *reg, uint32_t i);
/* CPU features the variant choice used (after STRATA_CPU_DISABLE). */
const st_cpu_features *st_backend_registry_cpu(const st_backend_registry *reg);

/* Printable stage name: "found", "loaded", "entry", "abi", "probe", "devices". */
const char *st_backend_stage_name(st_backend_stage stage);
/* Printable st_status name: "OK", "NO_DEVICE", ...; "UNKNOWN" for other numbers. */
const char *st_backend_status_name(uint32_t status);

/* ---- host services handed to modules (core/backend/host.c) ---- */

/* Worker threads offered to modules loaded afterwards (the CLI's --threads); 0 = module decides. */
void st_backend_set_threads(unsigned n);
unsigned st_backend_threads(void);
/* Host log: lines at or above the level go to stderr as "strata[<module>] <level>: msg".
 * The level starts from $STRATA_LOG (debug|info|warn|error; default warn). */
void st_backend_log_set_level(int level);
int st_backend_log_level(void);
void st_backend_log(int level, const char *module, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Handler for a module's memory_pressure call: the module could not allocate `bytes` on its
 * device `device`; free something and return nonzero to make it retry once, else 0. Called on
 * the allocating thread. */
typedef int (*st_backend_pressure_fn)(void *user, const st_backend_module *module, uint32_t device, uint64_t bytes);
/* Install (or with NULL remove) the process-wide memory-pressure handler. Takes effect at once
 * for every loaded module; `user` is borrowed. */
void st_backend_set_memory_pressure(st_backend_pressure_fn fn, void *user);
/* Module configuration string for backend `name` (sim: $STRATA_SIM), or NULL. Borrowed from
 * the environment; copy it. */
const char *st_backend_config_for(const char *name);
/* Fill the host table offered to `module` with `config` (borrowed: must outlive the module);
 * memory_pressure calls are routed to the handler of st_backend_set_memory_pressure with
 * `module`. Never fails. */
void st_backend_host_fill(st_host_api *host, const st_backend_module *module, const char *config);

#ifdef __cplusplus
}
#endif
#endif
