/* SPDX-License-Identifier: Apache-2.0 */
/* Run under qemu-ppc64le: the POWER feature detection (AT_HWCAP/AT_HWCAP2) and the vsx variant
 * choice on the emulated CPU. argv[1]: "1" when the CPU model is POWER9 or newer, "0" for
 * POWER8. Built with the cross compiler by ppc_variant.cmake. */
#include <stdlib.h>

#include "backend/variant.h"
#include "test_util.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int want_p9 = atoi(argv[1]);
    st_cpu_features f;
    st_cpu_features_detect(&f);
    printf("arch %u flags 0x%x\n", f.arch, f.flags);
    CHECK(f.arch == ST_CPU_ARCH_PPC64);
    CHECK(f.flags & ST_CPUF_PPC_VSX);
    CHECK(!(f.flags & ST_CPUF_AVX2));
    char why[160];
    int r = st_cpu_variant_check("vsx", &f, why, sizeof why);
    CHECK(r == want_p9);
    if (!want_p9) CHECK_STR(why, "CPU lacks POWER9 (ISA 3.0)");
    CHECK(st_cpu_variant_check("avx2", &f, why, sizeof why) == 0);
    const char *v[] = {"avx512", "avx2", "vsx", ""};
    st_variant_choice c[4];
    st_cpu_variants_choose(v, 4, &f, c);
    CHECK(c[0].action == ST_VARIANT_NO_CPU && c[1].action == ST_VARIANT_NO_CPU);
    CHECK(c[2].action == (want_p9 ? ST_VARIANT_LOAD : ST_VARIANT_NO_CPU));
    CHECK(c[3].action == (want_p9 ? ST_VARIANT_NOT_BEST : ST_VARIANT_LOAD));
    TEST_DONE();
}
