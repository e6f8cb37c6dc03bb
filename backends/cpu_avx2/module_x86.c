/* SPDX-License-Identifier: Apache-2.0 */
/* Entry point of the x86 CPU modules: strata-cpu-avx2 (x86-64-v3: AVX2, FMA, F16C, BMI1/2, LZCNT,
 * POPCNT) and,
 * from the same source with ST_CPU_AVX512 defined, strata-cpu-avx512 (x86-64-v4). Compiled
 * without ISA flags, so the CPU check itself runs anywhere and reports instead of faulting. */
#include <stdio.h>
#include <string.h>

#include "cpu/cpu_backend.h"

/* Fills the SIMD slots of the table (kernels_x86.c, compiled with the ISA flags). */
void st_x86_kernels_init(st_cpu_kernels *k);

typedef struct x86_feature {
    const char *name;
    int present;
} x86_feature;

static int x86_check(char *reason, size_t n) {
    __builtin_cpu_init();
    /* __builtin_cpu_supports also checks that the OS saves the wide registers (XGETBV). */
    x86_feature need[] = {
        {"avx2", __builtin_cpu_supports("avx2")},
        {"fma", __builtin_cpu_supports("fma")},
        {"f16c", __builtin_cpu_supports("f16c")},
        {"bmi", __builtin_cpu_supports("bmi")},
        {"bmi2", __builtin_cpu_supports("bmi2")},
        {"lzcnt", __builtin_cpu_supports("lzcnt")},
        {"popcnt", __builtin_cpu_supports("popcnt")},
#ifdef ST_CPU_AVX512
        {"avx512f", __builtin_cpu_supports("avx512f")},
        {"avx512bw", __builtin_cpu_supports("avx512bw")},
        {"avx512vl", __builtin_cpu_supports("avx512vl")},
        {"avx512dq", __builtin_cpu_supports("avx512dq")},
        {"avx512cd", __builtin_cpu_supports("avx512cd")},
#ifdef ST_CPU_AVX512VNNI
        {"avx512vnni", __builtin_cpu_supports("avx512vnni")},
#endif
#endif
    };
    char missing[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (need[i].present) continue;
        int w = snprintf(missing + used, sizeof missing - used, "%s%s", used ? "," : "", need[i].name);
        if (w > 0 && (size_t)w < sizeof missing - used) used += (size_t)w;
    }
    if (!used) return 1;
    snprintf(reason, n, "this CPU lacks %s, which this module's kernels need", missing);
    return 0;
}

static const st_cpu_module_desc g_desc = {
    .module_name = "cpu",
    .version = "0.1.0",
#ifdef ST_CPU_AVX512
    .device_name = "Host CPU (AVX-512)",
    .arch = "x86-64-v4",
#ifdef ST_CPU_AVX512VNNI
    .build_archs = "x86-64-v4 (avx512f,avx512bw,avx512vl,avx512dq,avx512cd,avx512vnni)",
#else
    .build_archs = "x86-64-v4 (avx512f,avx512bw,avx512vl,avx512dq,avx512cd)",
#endif
#else
    .device_name = "Host CPU (AVX2)",
    .arch = "x86-64-v3",
    .build_archs = "x86-64-v3 (avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt)",
#endif
    .cpu_check = x86_check,
    .kernels_init = st_x86_kernels_init,
};

/* The module's only export: hands the host the CPU backend table (see cpu_backend.h). */
ST_MODULE_EXPORT st_status st_backend_entry(const st_host_api *host, uint32_t abi_major, uint32_t abi_minor,
                                            const st_backend_api **out) {
    return st_cpu_backend_entry(&g_desc, host, abi_major, abi_minor, out);
}
