/* SPDX-License-Identifier: Apache-2.0 */
/* The registry's private layout, shared by search.c, load.c and registry.c. Not public. */
#ifndef STRATA_BACKEND_REGISTRY_INTERNAL_H
#define STRATA_BACKEND_REGISTRY_INTERNAL_H

#include "backend/backend_registry.h"

struct st_backend_registry {
    st_backend_search_step *steps;
    uint32_t n_steps, cap_steps;
    st_backend_module **mods; /* candidates in search order; each allocated once (stable) */
    uint32_t n_mods, cap_mods;
    st_backend_device *devs;
    uint32_t n_devs;
    uint32_t *load_order; /* indices into mods, in the order they were loaded */
    uint32_t n_loaded;
    st_cpu_features cpu;
};

/* printf into a fixed buffer, truncating silently (texts are reports, not data). */
void st_backend_text(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Run the search order and append steps and candidate modules (stage FOUND; duplicates and
 * shadowed files already carry their reason). Returns 0, or -1 when out of memory. */
int st_backend_search_run(st_backend_registry *reg, const st_backend_options *opt);
/* Take module `m` as far as it goes (load, entry, ABI, probe, device props). Leaves it loaded
 * when it reached ST_STAGE_DEVICES, else unloaded, with stage and reason set. With
 * `need_score` the module is used only when it exports st_backend_score and that is > 0. */
void st_backend_module_load(st_backend_registry *reg, st_backend_module *m, int need_score);
/* Shut down and dlclose a loaded module; keeps everything recorded about it. */
void st_backend_module_unload(st_backend_module *m);

#endif
