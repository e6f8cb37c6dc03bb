/* SPDX-License-Identifier: Apache-2.0 */
/* The shared conformance cases (core/conformance) on device 0 of strata-cuda, loaded from
 * argv[1] directly (no registry). Exit 0 all passed, 1 failures, 77 no usable GPU. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "conformance/conformance.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    st_backend_entry_fn entry = lib ? (st_backend_entry_fn)dlsym(lib, ST_BACKEND_ENTRY_SYMBOL) : NULL;
    const st_backend_api *api = NULL;
    st_host_api host = {.size = sizeof host, .abi_major = ST_ABI_MAJOR, .abi_minor = ST_ABI_MINOR};
    if (!entry || entry(&host, ST_ABI_MAJOR, ST_ABI_MINOR, &api) != ST_OK) {
        printf("FAIL loading %s\n", argv[1]);
        return 1;
    }
    st_probe_report rep = {.size = sizeof rep};
    if (api->probe(&rep) != ST_OK) {
        printf("SKIP no usable CUDA device: %s\n", rep.reason);
        return 77;
    }
    st_conf_options opt = {.seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1, .filter = argc > 3 ? argv[3] : NULL};
    st_conf_result res = {0};
    st_status s = st_conf_run(api, 0, &opt, &res);
    printf("conformance on CUDA0: %d passed, %d failed, %d not claimed (harness status %d)\n", res.passed,
           res.failed, res.skipped, (int)s);
    api->shutdown();
    return res.failed || s != ST_OK ? 1 : 0;
}
