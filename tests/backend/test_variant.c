/* SPDX-License-Identifier: Apache-2.0 */
/* CPU variant choice with fake CPUs, module file names, feature detection against
 * /proc/cpuinfo, and the loader's explanation of dlopen errors. */
#include <stdlib.h>

#include "backend/variant.h"
#include "platform/dl.h"
#include "test_util.h"

#define X86_AVX2                                                                                     \
    (ST_CPUF_AVX | ST_CPUF_AVX2 | ST_CPUF_FMA | ST_CPUF_F16C | ST_CPUF_BMI1 | ST_CPUF_BMI2 | ST_CPUF_LZCNT | \
     ST_CPUF_POPCNT | ST_CPUF_OS_YMM)
#define X86_AVX512                                                                                 \
    (X86_AVX2 | ST_CPUF_AVX512F | ST_CPUF_AVX512BW | ST_CPUF_AVX512VL | ST_CPUF_AVX512DQ | ST_CPUF_AVX512CD | \
     ST_CPUF_AVX512VNNI | ST_CPUF_OS_ZMM)
#define PPC_P9 (ST_CPUF_PPC_VSX | ST_CPUF_PPC_ARCH_2_07 | ST_CPUF_PPC_ARCH_3_00)

static const char *k_all[] = {"avx2", "avx512", "vsx", ""};

static void choose(uint32_t arch, uint32_t flags, st_variant_choice *out) {
    st_cpu_features f = {arch, flags};
    st_cpu_variants_choose(k_all, 4, &f, out);
}

static void test_names(void) {
    char b[64], v[64];
    CHECK(st_module_name_parse("strata-cpu-avx2.so", b, sizeof b, v, sizeof v) == 1);
    CHECK_STR(b, "cpu");
    CHECK_STR(v, "avx2");
    CHECK(st_module_name_parse("/usr/lib/strata/backends/strata-sim.so", b, sizeof b, v, sizeof v) == 1);
    CHECK_STR(b, "sim");
    CHECK_STR(v, "");
    CHECK(st_module_name_parse("strata-cuda.so", b, sizeof b, v, sizeof v) == 1);
    CHECK_STR(b, "cuda");
    CHECK(st_module_name_parse("strata-cpu-vsx.so", b, sizeof b, v, sizeof v) == 1);
    CHECK_STR(b, "cpu");
    CHECK_STR(v, "vsx");
    CHECK(st_module_name_parse("strata-cuda-12-sm70.so", b, sizeof b, v, sizeof v) == 1);
    CHECK_STR(b, "cuda");
    CHECK_STR(v, "12-sm70");
    CHECK(st_module_name_parse("libfoo.so.1", b, sizeof b, v, sizeof v) == 0);
    CHECK_STR(b, "libfoo");
}

static void test_choice(void) {
    st_variant_choice c[4];
    /* AVX2 machine: avx2 wins, avx512 never loaded, vsx never loaded, generic skipped */
    choose(ST_CPU_ARCH_X86_64, X86_AVX2, c);
    CHECK(c[0].action == ST_VARIANT_LOAD);
    CHECK(c[1].action == ST_VARIANT_NO_CPU);
    CHECK_STR(c[1].reason, "not loaded: CPU lacks AVX-512F");
    CHECK(c[2].action == ST_VARIANT_NO_CPU);
    CHECK_HAS(c[2].reason, "not loaded: CPU lacks VSX");
    CHECK_HAS(c[2].reason, "POWER");
    CHECK(c[3].action == ST_VARIANT_NOT_BEST);
    CHECK_STR(c[3].reason, "skipped: avx2 variant preferred");

    /* AVX-512 machine */
    choose(ST_CPU_ARCH_X86_64, X86_AVX512, c);
    CHECK(c[0].action == ST_VARIANT_NOT_BEST);
    CHECK_STR(c[0].reason, "skipped: avx512 variant preferred");
    CHECK(c[1].action == ST_VARIANT_LOAD);
    CHECK(c[3].action == ST_VARIANT_NOT_BEST);

    /* CPUID has AVX-512 but the OS does not save ZMM/opmask state: avx512 must not run */
    choose(ST_CPU_ARCH_X86_64, X86_AVX512 & ~ST_CPUF_OS_ZMM, c);
    CHECK(c[1].action == ST_VARIANT_NO_CPU);
    CHECK_STR(c[1].reason, "not loaded: CPU lacks OS support for ZMM/opmask state");
    CHECK(c[0].action == ST_VARIANT_LOAD);

    /* one AVX-512 subset missing */
    choose(ST_CPU_ARCH_X86_64, X86_AVX512 & ~ST_CPUF_AVX512BW, c);
    CHECK_STR(c[1].reason, "not loaded: CPU lacks AVX-512BW");

    /* AVX2 without the OS's YMM state (XGETBV): neither AVX variant, generic loads */
    choose(ST_CPU_ARCH_X86_64, X86_AVX2 & ~ST_CPUF_OS_YMM, c);
    CHECK(c[0].action == ST_VARIANT_NO_CPU);
    CHECK_STR(c[0].reason, "not loaded: CPU lacks OS support for YMM state");
    CHECK(c[3].action == ST_VARIANT_LOAD);

    /* AVX-512 without VNNI (Skylake-SP): the avx512 variant is built with VNNI, so avx2 runs */
    choose(ST_CPU_ARCH_X86_64, X86_AVX512 & ~ST_CPUF_AVX512VNNI, c);
    CHECK_STR(c[1].reason, "not loaded: CPU lacks AVX-512 VNNI");
    CHECK(c[0].action == ST_VARIANT_LOAD);

    /* AVX2 without BMI2 (some virtual machines hide it): the x86-64-v3 build must not run */
    choose(ST_CPU_ARCH_X86_64, X86_AVX2 & ~ST_CPUF_BMI2, c);
    CHECK_STR(c[0].reason, "not loaded: CPU lacks BMI2");
    CHECK(c[3].action == ST_VARIANT_LOAD);

    /* AVX2 without F16C (some early parts): avx2 variant refused */
    choose(ST_CPU_ARCH_X86_64, X86_AVX2 & ~ST_CPUF_F16C, c);
    CHECK_STR(c[0].reason, "not loaded: CPU lacks F16C");

    /* POWER9 */
    choose(ST_CPU_ARCH_PPC64, PPC_P9, c);
    CHECK(c[2].action == ST_VARIANT_LOAD);
    CHECK(c[0].action == ST_VARIANT_NO_CPU);
    CHECK_HAS(c[0].reason, "not loaded: CPU lacks AVX");
    CHECK(c[1].action == ST_VARIANT_NO_CPU);
    CHECK_STR(c[3].reason, "skipped: vsx variant preferred");

    /* POWER8: VSX present but not ISA 3.0 */
    choose(ST_CPU_ARCH_PPC64, ST_CPUF_PPC_VSX | ST_CPUF_PPC_ARCH_2_07, c);
    CHECK(c[2].action == ST_VARIANT_NO_CPU);
    CHECK_STR(c[2].reason, "not loaded: CPU lacks POWER9 (ISA 3.0)");
    CHECK(c[3].action == ST_VARIANT_LOAD);

    /* x86 feature bits on a POWER CPU never make an x86 variant runnable */
    choose(ST_CPU_ARCH_PPC64, X86_AVX512, c);
    CHECK(c[0].action == ST_VARIANT_NO_CPU && c[1].action == ST_VARIANT_NO_CPU);

    /* unknown variants: their score decides; they never block a known one */
    const char *v2[] = {"neon", "avx2", "power10"};
    st_variant_choice c2[3];
    st_cpu_features f = {ST_CPU_ARCH_X86_64, X86_AVX2};
    st_cpu_variants_choose(v2, 3, &f, c2);
    CHECK(c2[0].action == ST_VARIANT_ASK_SCORE);
    CHECK(c2[1].action == ST_VARIANT_LOAD);
    CHECK(c2[2].action == ST_VARIANT_ASK_SCORE);
    CHECK(st_cpu_variant_check("neon", &f, NULL, 0) == -1);
    CHECK(st_cpu_variant_rank("avx512") > st_cpu_variant_rank("avx2"));
    CHECK(st_cpu_variant_rank("avx2") > st_cpu_variant_rank(""));

    /* nothing runnable at all */
    const char *v3[] = {"avx512"};
    st_cpu_features none = {ST_CPU_ARCH_OTHER, 0};
    st_cpu_variants_choose(v3, 1, &none, c2);
    CHECK(c2[0].action == ST_VARIANT_NO_CPU);
}

/* The detected features agree with what the kernel lists in /proc/cpuinfo. */
static void test_detect(void) {
    st_cpu_features f;
    st_cpu_features_detect(&f);
#if defined(__x86_64__)
    CHECK(f.arch == ST_CPU_ARCH_X86_64);
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp) return;
    char line[8192];
    while (fgets(line, sizeof line, fp))
        if (!strncmp(line, "flags", 5)) {
            int avx2 = strstr(line, " avx2") != NULL, avx512f = strstr(line, " avx512f") != NULL;
            CHECK(avx2 == !!(f.flags & ST_CPUF_AVX2));
            CHECK(avx512f == !!(f.flags & ST_CPUF_AVX512F));
            CHECK((strstr(line, " fma") != NULL) == !!(f.flags & ST_CPUF_FMA));
            CHECK((strstr(line, " bmi2") != NULL) == !!(f.flags & ST_CPUF_BMI2));
            CHECK((strstr(line, " popcnt") != NULL) == !!(f.flags & ST_CPUF_POPCNT));
            CHECK((strstr(line, " avx512cd") != NULL) == !!(f.flags & ST_CPUF_AVX512CD));
            CHECK((strstr(line, " avx512_vnni") != NULL) == !!(f.flags & ST_CPUF_AVX512VNNI));
            printf("cpuinfo: avx2=%d avx512f=%d; detected flags 0x%x\n", avx2, avx512f, f.flags);
            break;
        }
    fclose(fp);
#elif defined(__powerpc64__)
    CHECK(f.arch == ST_CPU_ARCH_PPC64);
#endif
    CHECK(st_cpu_feature_by_name("avx512f") == ST_CPUF_AVX512F);
    CHECK(st_cpu_feature_by_name("nonsense") == 0);
}

static void test_dl_explain(void) {
    char out[512];
    st_dl_explain("/x/strata-cuda.so", "libcuda.so.1: cannot open shared object file: No such file or directory", out,
                  sizeof out);
    CHECK_HAS(out, "needs libcuda.so.1, not found");
    st_dl_explain("/x/strata-cuda.so", "/x/strata-cuda.so: cannot open shared object file: No such file or directory",
                  out, sizeof out);
    CHECK(strncmp(out, "needs", 5) != 0);
    CHECK_HAS(out, "No such file");
    st_dl_explain("/x/strata-g.so", "/x/strata-g.so: invalid ELF header", out, sizeof out);
    CHECK_STR(out, "/x/strata-g.so: invalid ELF header");
    char err[256];
    CHECK(st_dl_open("/nonexistent/strata-x.so", err, sizeof err) == NULL);
    CHECK_HAS(err, "No such file");
    char dir[4096];
    CHECK(st_exe_dir(dir, sizeof dir) == 0);
    CHECK(dir[0] == '/');
}

int main(void) {
    test_names();
    test_choice();
    test_detect();
    test_dl_explain();
    TEST_DONE();
}
