/* SPDX-License-Identifier: Apache-2.0 */
/* How an ISA-specific CPU module (strata-cpu-avx2, strata-cpu-avx512, strata-cpu-vsx ...) is
 * assembled from the shared framework in backends/cpu: the module describes itself and its
 * kernel table, and its exported st_backend_entry forwards to st_cpu_backend_entry.
 *
 *     static const st_cpu_module_desc desc = { "cpu", "0.1", "Host CPU (AVX2)", "x86-64-v3",
 *                                              "x86-64-v3 (avx2,fma,f16c)", my_check, my_init };
 *     ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *h, uint32_t ma, uint32_t mi,
 *                                                 const st_backend_api **out) {
 *         return st_cpu_backend_entry(&desc, h, ma, mi, out);
 *     }
 *
 * CMake: include backends/cpu/CMakeLists.txt and call
 *     st_cpu_add_module(<target> SOURCES <isa sources> OPTIONS <compile flags>)
 * which compiles the framework with the same flags and links st_modcommon and st_quant.
 * Not part of the module ABI. */
#ifndef STRATA_CPU_BACKEND_H
#define STRATA_CPU_BACKEND_H

#include <stddef.h>

#include "cpu/cpu_kernels.h"
#include "strata/backend.h"

typedef struct st_cpu_module_desc {
    const char *module_name; /* short name reported in the table: "cpu" */
    const char *version;     /* module version string */
    const char *device_name; /* "Host CPU (AVX2)" */
    const char *arch;        /* device arch string: "x86-64-v3", "x86-64-v4", "power9" */
    const char *build_archs; /* what the kernels were compiled for, for the probe report */
    /* Nonzero when the running CPU can execute this module's kernels; otherwise writes a
     * human-readable reason (e.g. "CPU lacks avx512bw") into reason[n]. Must not itself use
     * instructions the CPU may lack. */
    int (*cpu_check)(char *reason, size_t n);
    /* Fill the kernel table; called at most once per entry, only after cpu_check passed. */
    void (*kernels_init)(st_cpu_kernels *k);
} st_cpu_module_desc;

/* The body of a CPU module's st_backend_entry. `desc` must have static storage. Returns ST_ABI
 * (with *out set to a readable table) when the host's ABI major differs, else ST_OK. */
st_status st_cpu_backend_entry(const st_cpu_module_desc *desc, const st_host_api *host, uint32_t abi_major,
                               uint32_t abi_minor, const st_backend_api **out);

#endif
