/* SPDX-License-Identifier: Apache-2.0 */
/* The x86 kernel table: scalar slots first (done by the framework), then every slot that has
 * an AVX2 (or, in the AVX-512 build, an AVX-512-compiled) version. */
#include "cpu_avx2/kern_x86.h"

/* Called by the module entry (module_x86.c) once the CPU check passed. */
void st_x86_kernels_init(st_cpu_kernels *k) {
#if defined(__AVX512F__)
    k->isa = "avx512";
#else
    k->isa = "avx2";
#endif
    st_x86_float_kernels(k);
    st_x86_legacy_kernels(k);
    st_x86_kquant_kernels(k);
    st_x86_attn_kernels(k);
    st_x86_x8_kernels(k);
}
