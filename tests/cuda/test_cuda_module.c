/* SPDX-License-Identifier: Apache-2.0 */
/* strata-cuda as a module, on any machine: only the entry symbol is visible, the ABI answer
 * is right, and the probe reports a truthful status (without a driver: ST_NO_DRIVER with the
 * library named). Prints one line per check; exit 1 on any failure. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "strata/backend.h"

static int g_fail;
#define CHECK(cond, ...)                      \
    do {                                      \
        printf((cond) ? "PASS " : "FAIL ");   \
        printf(__VA_ARGS__);                  \
        printf("\n");                         \
        if (!(cond)) g_fail++;                \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "dlopen %s%s%s", argv[1], lib ? "" : ": ", lib ? "" : dlerror());
    if (!lib) return 1;
    st_backend_entry_fn entry = (st_backend_entry_fn)dlsym(lib, ST_BACKEND_ENTRY_SYMBOL);
    CHECK(entry != NULL, "exports %s", ST_BACKEND_ENTRY_SYMBOL);
    const char *hidden[] = {"st_cuda_matmul", "st_mod_fail", "cudaMalloc", "cudaGetErrorString", "st_cuda_probe"};
    for (int i = 0; i < 5; i++) CHECK(dlsym(lib, hidden[i]) == NULL, "%s is not exported", hidden[i]);
    if (!entry) return 1;
    st_host_api host = {.size = sizeof host, .abi_major = ST_ABI_MAJOR, .abi_minor = ST_ABI_MINOR};
    const st_backend_api *api = NULL;
    st_status st = entry(&host, ST_ABI_MAJOR + 1, 0, &api);
    CHECK(st == ST_ABI && api && api->abi_major == ST_ABI_MAJOR && strcmp(api->name, "cuda") == 0,
          "ABI major %u refused with ST_ABI, table still readable", ST_ABI_MAJOR + 1);
    st = entry(&host, ST_ABI_MAJOR, ST_ABI_MINOR, &api);
    CHECK(st == ST_OK && api && api->size == sizeof(st_backend_api), "entry with matching ABI");
    if (st != ST_OK || !api) return 1;
    CHECK(api->last_error() != NULL, "last_error is never NULL");
    /* every op of ABI 1.2 has a CUDA kernel (ATTENTION_EX, SWIGLU_OAI and ROUTER_GROUPS included):
     * no slot is NULL, and the table is as large as this header's */
    int all_ops = 1;
    const st_backend_ops *o = api->ops;
    void *const *slots = (void *const *)&o->get_rows;
    for (int i = 0; i < ST_OP_COUNT; i++) all_ops &= slots[i] != NULL;
    CHECK(o && o->size == sizeof(st_backend_ops) && all_ops, "the %d op slots of ABI 1.%d present", ST_OP_COUNT,
          ST_ABI_MINOR);
    CHECK(api->graph_begin && api->graph_end && api->graph_launch && api->graph_destroy && api->copy_peer &&
              api->host_register, "graph, peer and host_register slots present");

    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    st_probe_report rep = {.size = sizeof rep};
    st = api->probe(&rep);
    printf("probe: status %d, %u devices, build %s, reason \"%s\"\n", (int)st, rep.n_devices, rep.build_archs, rep.reason);
    CHECK(st == (st_status)rep.status, "probe return equals report status");
    CHECK(strncmp(rep.build_archs, "sm_", 3) == 0 && strstr(rep.build_archs, "compute_"),
          "build_archs lists SASS and PTX targets");
    if (!drv) {
        CHECK(st == ST_NO_DRIVER && strcmp(rep.reason, "no NVIDIA driver (libcuda.so.1 not found)") == 0 &&
                  rep.n_devices == 0,
              "no libcuda.so.1 here: ST_NO_DRIVER with the library named");
        CHECK(strcmp(api->last_error(), rep.reason) == 0, "last_error carries the probe reason");
    } else {
        CHECK(st == ST_OK || st == ST_NO_DEVICE || st == ST_ARCH || st == ST_NO_DRIVER, "probe status is a probe status");
        CHECK(st == ST_OK || rep.reason[0], "a failed probe gives a reason");
        for (uint32_t i = 0; i < rep.n_devices; i++) {
            st_device_props p = {.size = sizeof p};
            st_status ps = api->device_props(i, &p);
            CHECK(ps == ST_OK && p.name[0] && strcmp(p.vendor, "nvidia") == 0 && strncmp(p.arch, "sm_", 3) == 0 &&
                      p.mem_total > 0 && p.n_cores > 0 && (p.usable || p.reason[0]),
                  "device %u: %s %s usable=%u %s", i, p.name, p.arch, p.usable, p.reason);
        }
    }
    CHECK(api->op_supported(999, ST_OP_MATMUL, ST_TYPE_Q4_K) == 0, "op_supported on a missing device is 0");
    st_device *d = NULL;
    st = api->device_open(999, &d);
    CHECK(st != ST_OK && d == NULL && api->last_error()[0], "device_open(999) refused: %s", api->last_error());
    api->shutdown();
    if (drv) dlclose(drv);
    dlclose(lib);
    printf("%s\n", g_fail ? "FAILED" : "all passed");
    return g_fail ? 1 : 0;
}
