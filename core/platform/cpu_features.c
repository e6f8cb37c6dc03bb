/* SPDX-License-Identifier: Apache-2.0 */
/* CPU feature detection: CPUID + XGETBV on x86-64, auxiliary vector on POWER. Each piece of
 * processor-specific code compiles only for its own processor. See cpu_features.h. */
#include "platform/cpu_features.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__powerpc64__)
#include <sys/auxv.h>
#endif

typedef struct {
    uint32_t bit;
    const char *short_name;
    const char *name;
} feature_name;

static const feature_name k_names[] = {
    {ST_CPUF_AVX, "avx", "AVX"},
    {ST_CPUF_AVX2, "avx2", "AVX2"},
    {ST_CPUF_FMA, "fma", "FMA"},
    {ST_CPUF_F16C, "f16c", "F16C"},
    {ST_CPUF_OS_YMM, "os_ymm", "OS support for YMM state"},
    {ST_CPUF_AVX512F, "avx512f", "AVX-512F"},
    {ST_CPUF_AVX512BW, "avx512bw", "AVX-512BW"},
    {ST_CPUF_AVX512VL, "avx512vl", "AVX-512VL"},
    {ST_CPUF_AVX512DQ, "avx512dq", "AVX-512DQ"},
    {ST_CPUF_OS_ZMM, "os_zmm", "OS support for ZMM/opmask state"},
    {ST_CPUF_BMI1, "bmi1", "BMI1"},
    {ST_CPUF_BMI2, "bmi2", "BMI2"},
    {ST_CPUF_LZCNT, "lzcnt", "LZCNT"},
    {ST_CPUF_POPCNT, "popcnt", "POPCNT"},
    {ST_CPUF_AVX512CD, "avx512cd", "AVX-512CD"},
    {ST_CPUF_AVX512VNNI, "avx512vnni", "AVX-512 VNNI"},
    {ST_CPUF_PPC_VSX, "vsx", "VSX"},
    {ST_CPUF_PPC_ARCH_2_07, "arch_2_07", "POWER8 (ISA 2.07)"},
    {ST_CPUF_PPC_ARCH_3_00, "arch_3_00", "POWER9 (ISA 3.0)"},
    {ST_CPUF_PPC_ARCH_3_1, "arch_3_1", "POWER10 (ISA 3.1)"},
};

const char *st_cpu_feature_name(uint32_t flag) {
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++)
        if (k_names[i].bit == flag) return k_names[i].name;
    return NULL;
}

uint32_t st_cpu_feature_by_name(const char *name) {
    if (!name) return 0;
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++)
        if (!strcasecmp(k_names[i].short_name, name)) return k_names[i].bit;
    return 0;
}

#if defined(__x86_64__)
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect_x86(st_cpu_features *f) {
    unsigned a, b, c, d;
    f->arch = ST_CPU_ARCH_X86_64;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    unsigned max_leaf = a;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000001u) {
        __get_cpuid(0x80000001u, &a, &b, &c, &d);
        if ((c >> 5) & 1) f->flags |= ST_CPUF_LZCNT; /* ABM */
    }
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int osxsave = (c >> 27) & 1;
    if ((c >> 28) & 1) f->flags |= ST_CPUF_AVX;
    if ((c >> 12) & 1) f->flags |= ST_CPUF_FMA;
    if ((c >> 29) & 1) f->flags |= ST_CPUF_F16C;
    if ((c >> 23) & 1) f->flags |= ST_CPUF_POPCNT;
    if (osxsave) {
        uint64_t xcr0 = read_xcr0();
        if ((xcr0 & 0x6) == 0x6) f->flags |= ST_CPUF_OS_YMM;        /* SSE, AVX */
        if ((xcr0 & 0xe6) == 0xe6) f->flags |= ST_CPUF_OS_ZMM;      /* + opmask, ZMM_Hi256, Hi16_ZMM */
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        if ((b >> 3) & 1) f->flags |= ST_CPUF_BMI1;
        if ((b >> 5) & 1) f->flags |= ST_CPUF_AVX2;
        if ((b >> 8) & 1) f->flags |= ST_CPUF_BMI2;
        if ((b >> 28) & 1) f->flags |= ST_CPUF_AVX512CD;
        if ((c >> 11) & 1) f->flags |= ST_CPUF_AVX512VNNI;
        if ((b >> 16) & 1) f->flags |= ST_CPUF_AVX512F;
        if ((b >> 17) & 1) f->flags |= ST_CPUF_AVX512DQ;
        if ((b >> 30) & 1) f->flags |= ST_CPUF_AVX512BW;
        if ((b >> 31) & 1) f->flags |= ST_CPUF_AVX512VL;
    }
}
#endif

#if defined(__powerpc64__)
#ifndef PPC_FEATURE_HAS_VSX
#define PPC_FEATURE_HAS_VSX 0x00000080
#endif
#ifndef PPC_FEATURE2_ARCH_2_07
#define PPC_FEATURE2_ARCH_2_07 0x80000000
#endif
#ifndef PPC_FEATURE2_ARCH_3_00
#define PPC_FEATURE2_ARCH_3_00 0x00800000
#endif
#ifndef PPC_FEATURE2_ARCH_3_1
#define PPC_FEATURE2_ARCH_3_1 0x00040000
#endif
static void detect_ppc(st_cpu_features *f) {
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f->arch = ST_CPU_ARCH_PPC64;
    if (hw & PPC_FEATURE_HAS_VSX) f->flags |= ST_CPUF_PPC_VSX;
    if (hw2 & PPC_FEATURE2_ARCH_2_07) f->flags |= ST_CPUF_PPC_ARCH_2_07;
    if (hw2 & PPC_FEATURE2_ARCH_3_00) f->flags |= ST_CPUF_PPC_ARCH_3_00;
    if (hw2 & PPC_FEATURE2_ARCH_3_1) f->flags |= ST_CPUF_PPC_ARCH_3_1;
}
#endif

void st_cpu_features_detect(st_cpu_features *out) {
    memset(out, 0, sizeof *out);
#if defined(__x86_64__)
    detect_x86(out);
#elif defined(__powerpc64__)
    detect_ppc(out);
#endif
}
