/* SPDX-License-Identifier: Apache-2.0 */
/* Scalar reference implementation of every op of the module ABI (include/strata/backend.h):
 * the oracle that conformance tests compare backends against. Precision over speed: values
 * are loaded to double, accumulated in double and rounded once on store.
 *
 * Conventions for every st_ref_<op> function:
 *  - takes exactly the ABI's st_*_args; tensor.data and every pointer field are HOST
 *    addresses, borrowed for the call; strides (nb) are honoured for activation types;
 *    rows of block-quantized tensors are contiguous within a row.
 *  - activations may be F32, F16 or BF16 on load and store, unless noted.
 *  - returns ST_OK, or ST_INVALID (bad shapes, null pointers, indices out of range) /
 *    ST_UNSUPPORTED (a type the op does not take) / ST_OOM (scratch allocation failed) with
 *    a text in a per-thread buffer read by st_ref_last_error(). Indices are validated before
 *    anything is written, so a refused call leaves its outputs untouched. */
#ifndef STRATA_REF_H
#define STRATA_REF_H

#include <stdint.h>

#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Embedding gather: out[i][:] = dequant(w[ids[i]][:]). */
st_status st_ref_get_rows(const st_get_rows_args *a);
/* h = x (+ residual); sum_out <- h when set; out = h / sqrt(mean(h^2) + eps) (* weight).
 * Outputs may alias inputs row for row. */
st_status st_ref_rms_norm(const st_rms_norm_args *a);
/* out[i][m] = sum_k w[m][k] * x[i][k], any weight type, accumulated in double. */
st_status st_ref_matmul(const st_matmul_args *a);
/* Rotary embedding, normal (adjacent pairs) or NeoX (halves), with YaRN when ext_factor != 0.
 * Dims past n_rot are copied. out may alias x. */
st_status st_ref_rope(const st_rope_args *a);
/* Writes K/V rows into cells[t] of F32/F16/BF16/Q8_0 caches (Q8_0: head_dim multiple of 32).
 * A cell named twice gets the later token. v/v_cache may both have data == NULL (K only). */
st_status st_ref_kv_write(const st_kv_write_args *a);
/* Attention over the paged cache; head h reads kv head h / (n_head / n_kv_head); softmax in
 * double over kv_len[i] positions (plus the additive mask); a token with no visible position
 * (kv_len 0, or every score -inf) gets a zero output row. */
st_status st_ref_attention(const st_attention_args *a);
/* out = silu(gate) * up. */
st_status st_ref_swiglu(const st_swiglu_args *a);
/* Softmax or sigmoid of the logits; selection by probability + bias (bias only for
 * selection), top-k by descending selection score (lower expert index first on ties; ids are
 * written in that order); weights are the unbiased probabilities, renormalized to sum 1 when
 * `normalize`, then times weight_scale. */
st_status st_ref_router(const st_router_args *a);
/* out[a][:] = scale[a] * W[slot_table[expert[a]]] . x[x_row[a]]; negative slot: untouched. */
st_status st_ref_moe_matmul(const st_moe_matmul_args *a);
/* out[t][:] = (accumulate ? out[t][:] : 0) + sum_j weights[t][j] * rows[row_of[t][j]][:]. */
st_status st_ref_moe_combine(const st_moe_combine_args *a);
/* out = a + b, b with the same rows or one row broadcast. */
st_status st_ref_add(const st_binary_args *a);
/* out = a * s. */
st_status st_ref_scale(const st_binary_args *a);
/* out = a with type conversion (round to nearest even). */
st_status st_ref_convert(const st_binary_args *a);
/* out[i][:] = a[i][:] * f(b[i]), f = sigmoid when a->sigmoid, else identity; b has n
 * elements in any layout (read in flattened order). */
st_status st_ref_mul_rows(const st_binary_args *a);
/* ids[i] = index of the largest x[i][:] (lower index on ties, NaN never wins unless the row is
 * all NaN: then 0); values[i] = that value when values != NULL. */
st_status st_ref_argmax(const st_topk_args *a);
/* Top-k per row sorted descending (ties: lower index first; NaN sorts last). */
st_status st_ref_topk(const st_topk_args *a);

/* Fused ops (ABI 1.1), each the composition of the unfused reference ops it replaces (see
 * backend.h): ATTN_PREP = RMS_NORM x2 + ROPE x2 + KV_WRITE; MOE_GATE_UP = MOE_MATMUL x2 +
 * SWIGLU; MOE_DOWN = MOE_MATMUL + MOE_COMBINE. Outputs are written only after every check. */
st_status st_ref_attn_prep(const st_attn_prep_args *a);
st_status st_ref_moe_gate_up(const st_moe_gate_up_args *a);
st_status st_ref_moe_down(const st_moe_down_args *a);
/* ABI 1.2 */
st_status st_ref_attention_ex(const st_attention_ex_args *a);
st_status st_ref_swiglu_oai(const st_swiglu_oai_args *a);
st_status st_ref_router_groups(const st_router_groups_args *a);

/* The ops above as a backend ops table (stream arguments ignored); static storage. */
const st_backend_ops *st_ref_ops_table(void);
/* Nonzero when the reference runs `op` with `type`: the weight type for GET_ROWS, MATMUL,
 * MOE_MATMUL, MOE_GATE_UP and MOE_DOWN, the cache type for KV_WRITE, ATTENTION and ATTN_PREP, else the activation type. */
int st_ref_op_supported(uint32_t op, uint32_t type);
/* Text of the last failure of a st_ref_* call on this thread; never NULL (may be ""). */
const char *st_ref_last_error(void);

/* Contiguous tensor views over caller-owned memory (nb from the type's row size). For an
 * unknown type or a row length that is not a multiple of the block size, nb are 0 and every
 * op refuses the view. */
st_tensor st_ref_tensor_2d(void *data, uint32_t type, int64_t cols, int64_t rows);
st_tensor st_ref_tensor_3d(void *data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2);
st_tensor st_ref_tensor_4d(void *data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);

#ifdef __cplusplus
}
#endif
#endif
