/* Portable x8 group kernels (cpu_kernels.h): the repack of 8 weight rows into one interleaved
 * group and the group dot with the numerics every ISA version keeps. They are the oracle of the
 * SIMD versions and what an ISA without its own repack can reuse. */
#include <math.h>
#include <string.h>

#include "cpu/cpu_half.h"
#include "cpu/cpu_kernels.h"
#include "quant/quant.h"

/* ------------------------------------------------------------------ Q4_0 x8 */

/* Bytes of one 32-value block of an x8 group: 8 scales and 8 x 16 bytes of nibbles. */
#define X8_Q4_0_BLOCK (8 * sizeof(st_block_q4_0))

/* Value i (0..31, unsigned 0..15) of a Q4_0 block: the low nibbles are values 0..15. */
static inline int q4_0_value(const st_block_q4_0 *b, int i) {
    return i < 16 ? b->qs[i] & 0xf : b->qs[i - 16] >> 4;
}

void st_cpu_repack8_q4_0(int64_t k, const void *w, size_t ws, void *dst) {
    uint8_t *out = dst;
    for (int64_t b = 0; b < k / ST_QK4_0; b++, out += X8_Q4_0_BLOCK) {
        for (int r = 0; r < 8; r++) {
            const st_block_q4_0 *src = (const st_block_q4_0 *)((const char *)w + (size_t)r * ws) + b;
            memcpy(out + 2 * r, &src->d, 2);
            for (int t = 0; t < 4; t++)
                for (int e = 0; e < 4; e++)
                    out[16 + 32 * t + 4 * r + e] =
                        (uint8_t)(q4_0_value(src, 8 * t + e) | (q4_0_value(src, 8 * t + 4 + e) << 4));
        }
    }
}

/* Exact integer dot of row r of an x8 Q4_0 block with a Q8_0 block (values - 8). */
static int q4_0x8_isum(const uint8_t *blk, int r, const st_block_q8_0 *x) {
    int s = 0;
    for (int t = 0; t < 4; t++)
        for (int e = 0; e < 4; e++) {
            uint8_t v = blk[16 + 32 * t + 4 * r + e];
            s += ((v & 0xf) - 8) * x->qs[8 * t + e] + ((v >> 4) - 8) * x->qs[8 * t + 4 + e];
        }
    return s;
}

void st_cpu_dot8_q4_0(int64_t k, const void *wp, int64_t ng, const void *x, size_t xs, int nr, float *s, size_t ss) {
    const int64_t nb = k / ST_QK4_0;
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *grp = (const uint8_t *)wp + (size_t)g * (size_t)nb * X8_Q4_0_BLOCK;
        for (int r = 0; r < 8; r++)
            for (int j = 0; j < nr; j++) {
                const st_block_q8_0 *xb = (const st_block_q8_0 *)((const char *)x + (size_t)j * xs);
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = grp + (size_t)b * X8_Q4_0_BLOCK;
                    uint16_t dh;
                    memcpy(&dh, blk + 2 * r, 2);
                    float d = st_cpu_h2f(dh) * st_cpu_h2f(xb[b].d);
                    acc = fmaf((float)q4_0x8_isum(blk, r, &xb[b]), d, acc);
                }
                s[(size_t)(8 * g + r) * ss + (size_t)j] = acc;
            }
    }
}
