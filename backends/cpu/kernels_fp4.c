/* SPDX-License-Identifier: Apache-2.0 */
/* MXFP4 weights on the CPU: the dot product with Q8_0 activation rows (both have 32-element
 * blocks), integer within a block and one multiply per block by the two scales. Portable C;
 * every ISA table gets it through st_cpu_kernels_scalar. */
#include "cpu/cpu_half.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_quant_util.h"
#include "quant/quant.h"

static float dot_mxfp4(int64_t k, const void *vw, const void *vx) {
    const st_block_mxfp4 *w = vw;
    const st_block_q8_0 *x = vx;
    float sum = 0.0f;
    for (int64_t b = 0; b < k / ST_QK_MXFP4; b++) {
        const float d = st_cpu_h2f(x[b].d) * st_e8m0_half_to_f32(w[b].e);
        int lo = 0, hi = 0;
        for (int j = 0; j < ST_QK_MXFP4 / 2; j++) {
            lo += x[b].qs[j] * st_mxfp4_values[w[b].qs[j] & 0xf];
            hi += x[b].qs[j + ST_QK_MXFP4 / 2] * st_mxfp4_values[w[b].qs[j] >> 4];
        }
        sum += d * (float)(lo + hi);
    }
    return sum;
}

static void vd_mxfp4(int64_t k, const void *w, const void *x, size_t xs, int nr, float *s) {
    for (int j = 0; j < nr; j++) s[j] = dot_mxfp4(k, w, (const char *)x + (size_t)j * xs);
}

void st_cpu_kernels_fp4(st_cpu_kernels *k) {
    st_cpu_weight_kernels *t = &k->wt[ST_TYPE_MXFP4];
    t->vec_type = ST_TYPE_Q8_0;
    t->from_float = k->wt[ST_TYPE_Q8_0].from_float; /* the Q8_0 activation quantizer */
    t->vec_dot = vd_mxfp4;
    t->vec_dot_rows = NULL;
    t->to_float = st_cpu_dequant_fn(ST_TYPE_MXFP4);
}
