/* SPDX-License-Identifier: Apache-2.0 */
/* POWER9 VSX kernels of the CPU module strata-cpu-vsx: internal declarations shared by the
 * kernel files of backends/vsx. Every file here is compiled with -mcpu=power9 -mvsx and is only
 * ever called after the module's probe confirmed an ISA 3.00 CPU. Not part of the module ABI. */
#ifndef STRATA_KERNELS_VSX_H
#define STRATA_KERNELS_VSX_H

#include <altivec.h>
#include <string.h>

#include "cpu/cpu_half.h"
#include "cpu/cpu_kernels.h"
#include "quant/quant.h"
#include "vsx/kernels_vsx_init.h"

/* altivec.h defines these as keywords-like macros; the rest of Strata uses C's own meaning. */
#undef bool
#undef vector
#undef pixel
#define st_v4f __vector float
#define st_v4i __vector signed int
#define st_v4u __vector unsigned int
#define st_v8s __vector signed short
#define st_v8u __vector unsigned short
#define st_v16s __vector signed char
#define st_v16u __vector unsigned char

/* Override the slots of the 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL). */
void st_vsx_fill_legacy(st_cpu_kernels *k);
/* Override the slots of the 256-element formats (Q2_K .. Q6_K, IQ4_XS). */
void st_vsx_fill_kquant(st_cpu_kernels *k);

/* Horizontal sum of 4 lanes, in a fixed order (deterministic, independent of batch size). */
static inline float st_vsx_hsum(st_v4f v) { return (v[0] + v[2]) + (v[1] + v[3]); }
static inline int32_t st_vsx_hsum_i(st_v4i v) { return (v[0] + v[2]) + (v[1] + v[3]); }

/* 16 bytes from an address of any alignment. */
static inline st_v16u st_vsx_load_u8(const void *p) { return vec_xl(0, (const unsigned char *)p); }
static inline st_v16s st_vsx_load_s8(const void *p) { return vec_xl(0, (const signed char *)p); }

/* An IEEE half (raw bits) as a float with the ISA 3.00 conversion (xvcvhpsp): exact, like
 * st_cpu_h2f, without its branches. Block scales are converted once per block and row. */
static inline float st_vsx_h2f(uint16_t h) {
    return vec_extract_fp32_from_shorth(vec_splats(h))[0];
}

/* sum of 16 signed bytes x 16 signed bytes, as 4 partial int sums added to acc. */
static inline st_v4i st_vsx_dot_s8s8(st_v16s a, st_v16s b, st_v4i acc) {
    acc = vec_sum4s(vec_mule(a, b), acc);
    return vec_sum4s(vec_mulo(a, b), acc);
}

#endif
