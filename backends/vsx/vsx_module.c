/* SPDX-License-Identifier: Apache-2.0 */
/* strata-cpu-vsx: the CPU backend for POWER9 (ppc64le, ISA 3.00 with VSX). The shared CPU
 * framework (backends/cpu) runs every op; this file describes the module and checks, before
 * any VSX kernel can run, that the CPU has what the kernels were compiled for.
 *
 * This file and the framework are compiled for the ppc64le baseline (POWER8); only the kernel
 * files use -mcpu=power9, so the check itself runs on any ppc64le CPU. */
#include <stdio.h>
#include <sys/auxv.h>

#include "cpu/cpu_backend.h"
#include "vsx/kernels_vsx_init.h"

/* Bits of AT_HWCAP / AT_HWCAP2 (Linux uapi asm/cputable.h); defined here as well so the check
 * does not depend on a libc that spells them. */
#define ST_PPC_FEATURE_HAS_ALTIVEC 0x10000000ul
#define ST_PPC_FEATURE_HAS_VSX 0x00000080ul
#define ST_PPC_FEATURE2_ARCH_3_00 0x00800000ul

/* Nonzero when this CPU runs ISA 3.00 (POWER9) VSX code; otherwise a reason in reason[n]. */
static int vsx_cpu_check(char *reason, size_t n) {
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (!(hw & ST_PPC_FEATURE_HAS_ALTIVEC) || !(hw & ST_PPC_FEATURE_HAS_VSX)) {
        snprintf(reason, n, "CPU lacks VSX (AT_HWCAP 0x%lx); the module is built for power9", hw);
        return 0;
    }
    if (!(hw2 & ST_PPC_FEATURE2_ARCH_3_00)) {
        snprintf(reason, n,
                 "CPU lacks ISA 3.00 (AT_HWCAP2 0x%lx has no PPC_FEATURE2_ARCH_3_00): POWER8 or older; "
                 "the module is built for power9",
                 hw2);
        return 0;
    }
    return 1;
}

static const st_cpu_module_desc g_vsx_desc = {
    .module_name = "cpu",
    .version = "0.1.0",
    .device_name = "Host CPU (POWER9 VSX)",
    .arch = "power9",
    .build_archs = "power9 (ppc64le, ISA 3.00, vsx)",
    .cpu_check = vsx_cpu_check,
    .kernels_init = st_vsx_kernels_init,
};

/* The module's only export: the shared CPU framework's entry with the VSX description. */
ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor,
                                            const st_backend_api **out) {
    return st_cpu_backend_entry(&g_vsx_desc, host, abi_major, abi_minor, out);
}
