/* SPDX-License-Identifier: Apache-2.0 */
/* The shared conformance cases (core/conformance) on the CPU module file argv[1], loaded
 * directly (no registry), with argv[2] worker threads. Exit 0 all passed, 1 failures, 77 when
 * this CPU cannot run the module. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "conformance/conformance.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s <module.so> <threads> [seed] [filter]\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    st_backend_entry_fn entry = lib ? (st_backend_entry_fn)dlsym(lib, ST_BACKEND_ENTRY_SYMBOL) : NULL;
    const st_backend_api *api = NULL;
    st_host_api host = {.size = sizeof host, .abi_major = ST_ABI_MAJOR, .abi_minor = ST_ABI_MINOR,
                        .n_threads = (uint32_t)atoi(argv[2])};
    if (!entry || entry(&host, ST_ABI_MAJOR, ST_ABI_MINOR, &api) != ST_OK) {
        printf("FAIL loading %s\n", argv[1]);
        return 1;
    }
    st_probe_report rep = {.size = sizeof rep};
    if (api->probe(&rep) != ST_OK) {
        printf("SKIP this CPU cannot run %s: %s\n", argv[1], rep.reason);
        return 77;
    }
    st_conf_options opt = {.seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1, .filter = argc > 4 ? argv[4] : NULL};
    st_conf_result res = {0};
    st_status s = st_conf_run(api, 0, &opt, &res);
    printf("conformance on %s: %d passed, %d failed, %d not claimed (harness status %d)\n", argv[1], res.passed,
           res.failed, res.skipped, (int)s);
    api->shutdown();
    dlclose(lib);
    return res.failed || s != ST_OK ? 1 : 0;
}
