/* SPDX-License-Identifier: Apache-2.0 */
/* What the host CPU can execute, as the backend loader needs it to pick CPU module variants
 * before loading them: CPUID + XGETBV on x86-64, AT_HWCAP/AT_HWCAP2 on POWER. */
#ifndef STRATA_PLATFORM_CPU_FEATURES_H
#define STRATA_PLATFORM_CPU_FEATURES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum st_cpu_arch {
    ST_CPU_ARCH_OTHER = 0,
    ST_CPU_ARCH_X86_64 = 1,
    ST_CPU_ARCH_PPC64 = 2
} st_cpu_arch;

/* Feature bits. The OS_* bits say the OS saves the register state (XCR0 via XGETBV):
 * without them the instructions fault even when CPUID lists them. */
#define ST_CPUF_AVX (1u << 0)
#define ST_CPUF_AVX2 (1u << 1)
#define ST_CPUF_FMA (1u << 2)
#define ST_CPUF_F16C (1u << 3)
#define ST_CPUF_OS_YMM (1u << 4)      /* XCR0: SSE + AVX state */
#define ST_CPUF_AVX512F (1u << 5)
#define ST_CPUF_AVX512BW (1u << 6)
#define ST_CPUF_AVX512VL (1u << 7)
#define ST_CPUF_AVX512DQ (1u << 8)
#define ST_CPUF_OS_ZMM (1u << 9)      /* XCR0: opmask + ZMM_Hi256 + Hi16_ZMM (and YMM) */
#define ST_CPUF_BMI1 (1u << 10)
#define ST_CPUF_BMI2 (1u << 11)
#define ST_CPUF_LZCNT (1u << 12)
#define ST_CPUF_POPCNT (1u << 13)
#define ST_CPUF_AVX512CD (1u << 14)
#define ST_CPUF_AVX512VNNI (1u << 15)
#define ST_CPUF_PPC_VSX (1u << 16)    /* AT_HWCAP PPC_FEATURE_HAS_VSX */
#define ST_CPUF_PPC_ARCH_2_07 (1u << 17) /* POWER8 */
#define ST_CPUF_PPC_ARCH_3_00 (1u << 18) /* POWER9 */
#define ST_CPUF_PPC_ARCH_3_1 (1u << 19)  /* POWER10 */

typedef struct st_cpu_features {
    uint32_t arch;  /* st_cpu_arch */
    uint32_t flags; /* ST_CPUF_* */
} st_cpu_features;

/* Fill `out` for the running CPU. Never fails: unknown CPUs get arch OTHER and no flags. */
void st_cpu_features_detect(st_cpu_features *out);
/* Printable name of one ST_CPUF_* bit ("AVX-512F", "OS ZMM state", "POWER9 (ISA 3.0)"),
 * or NULL for an unknown bit. Static storage. */
const char *st_cpu_feature_name(uint32_t flag);
/* The bit whose short name is `name` (case-insensitive: "avx2", "avx512f", "os_zmm", "vsx",
 * "arch_3_00", ...), or 0 when unknown. */
uint32_t st_cpu_feature_by_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
