/* SPDX-License-Identifier: Apache-2.0 */
/* Small unpacking helpers for block formats shared by the scalar and SIMD kernels
 * (header-only), and the per-type dequantizer lookup. */
#ifndef STRATA_CPU_QUANT_UTIL_H
#define STRATA_CPU_QUANT_UTIL_H

#include <stdint.h>

#include "cpu/cpu_kernels.h"
#include "quant/quant.h"

/* Q4_K / Q5_K: unpack the 12 packed bytes into 8 six-bit scales and 8 six-bit mins. */
static inline void st_cpu_k4_scales(const uint8_t *q, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = q[j] & 63;
        mn[j] = q[j + 4] & 63;
        sc[j + 4] = (uint8_t)((q[j + 8] & 0xf) | ((q[j] >> 6) << 4));
        mn[j + 4] = (uint8_t)((q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4));
    }
}

/* Q3_K: unpack the 12 packed bytes into 16 signed scales (six-bit value - 32). */
static inline void st_cpu_q3k_scales(const uint8_t *q, int8_t sc[16]) {
    for (int i = 0; i < 16; i++) {
        int lo = i < 8 ? (q[i] & 0xf) : (q[i - 8] >> 4);
        int hi = (q[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
        sc[i] = (int8_t)((lo | (hi << 4)) - 32);
    }
}

/* IQ4_XS: six-bit scale (0..63, bias 32 not removed) of 32-element sub-block ib of a block. */
static inline int st_cpu_iq4xs_scale(const st_block_iq4_xs *b, int ib) {
    return ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b->scales_h >> (2 * ib)) & 3) << 4);
}

/* Dequantizer of a weight type (wraps st_dequantize_row); NULL for types without one. */
st_cpu_to_float_fn st_cpu_dequant_fn(uint32_t type);

#endif
