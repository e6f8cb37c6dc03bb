/* SPDX-License-Identifier: Apache-2.0 */
/* Per-type dequantizers for the kernel table's to_float slots: thin wrappers over the
 * reference st_dequantize_row of core/quant (GET_ROWS is not performance-critical). */
#include "cpu/cpu_quant_util.h"

#define ST_DQ(name, type)                                                \
    static void name(const void *w, float *y, int64_t k) {              \
        (void)st_dequantize_row(type, w, y, k);                          \
    }
ST_DQ(dq_f32, ST_TYPE_F32)
ST_DQ(dq_f16, ST_TYPE_F16)
ST_DQ(dq_bf16, ST_TYPE_BF16)
ST_DQ(dq_q4_0, ST_TYPE_Q4_0)
ST_DQ(dq_q4_1, ST_TYPE_Q4_1)
ST_DQ(dq_q5_0, ST_TYPE_Q5_0)
ST_DQ(dq_q5_1, ST_TYPE_Q5_1)
ST_DQ(dq_q8_0, ST_TYPE_Q8_0)
ST_DQ(dq_q2_k, ST_TYPE_Q2_K)
ST_DQ(dq_q3_k, ST_TYPE_Q3_K)
ST_DQ(dq_q4_k, ST_TYPE_Q4_K)
ST_DQ(dq_q5_k, ST_TYPE_Q5_K)
ST_DQ(dq_q6_k, ST_TYPE_Q6_K)
ST_DQ(dq_iq4_nl, ST_TYPE_IQ4_NL)
ST_DQ(dq_iq4_xs, ST_TYPE_IQ4_XS)
ST_DQ(dq_mxfp4, ST_TYPE_MXFP4)

st_cpu_to_float_fn st_cpu_dequant_fn(uint32_t type) {
    switch (type) {
    case ST_TYPE_F32: return dq_f32;
    case ST_TYPE_F16: return dq_f16;
    case ST_TYPE_BF16: return dq_bf16;
    case ST_TYPE_Q4_0: return dq_q4_0;
    case ST_TYPE_Q4_1: return dq_q4_1;
    case ST_TYPE_Q5_0: return dq_q5_0;
    case ST_TYPE_Q5_1: return dq_q5_1;
    case ST_TYPE_Q8_0: return dq_q8_0;
    case ST_TYPE_Q2_K: return dq_q2_k;
    case ST_TYPE_Q3_K: return dq_q3_k;
    case ST_TYPE_Q4_K: return dq_q4_k;
    case ST_TYPE_Q5_K: return dq_q5_k;
    case ST_TYPE_Q6_K: return dq_q6_k;
    case ST_TYPE_IQ4_NL: return dq_iq4_nl;
    case ST_TYPE_IQ4_XS: return dq_iq4_xs;
    case ST_TYPE_MXFP4: return dq_mxfp4;
    default: return 0;
    }
}
