/* Entry points of the fast decode GEMV (k_gemv.cu), called by the MATMUL and MOE_MATMUL
 * launchers before their generic kernels, and by the fused MoE ops (k_fused.cu). Each returns false (launching nothing) when the
 * call's format, shape or alignment is not covered; otherwise it launches and returns true
 * with the launch status in *st. The quantized formats use the stream workspace for q8
 * activations. */
#ifndef STRATA_CUDA_GEMV_CUH
#define STRATA_CUDA_GEMV_CUH

#include <stdlib.h>

#include "cuda/cuda_common.cuh"

/* Most assignments the MOE_MATMUL fast path takes (one block row per assignment). */
#define ST_GV_MOE_MAX_ASSIGN 64

/* Where the q8 activations of n_x rows of K live in the stream workspace (q [n_x][K] int8, d
 * [n_x][K/32] scales, d = max|x|/127 per block of 32, q = round(x/d)); false when they do not fit. */
bool st_q8_layout(st_stream *s, int64_t n_x, int64_t K, int8_t **q, float **d);
/* Records that the workspace holds the q8 form of x's first n_x rows, so the next GEMV on the
 * stream reuses it; the producing op must also set s->q8_keep before its launch check. */
void st_q8_mark(st_stream *s, const st_tensor &x, int64_t n_x, int64_t K);

bool st_gemv_fast(st_stream *s, const st_matmul_args *a, st_status *st);
bool st_moe_gemv_fast(st_stream *s, const st_moe_matmul_args *a, st_status *st);
/* MOE_GATE_UP with at most ST_GV_MOE_MAX_ASSIGN assignments: both weights in one pass. */
bool st_moe_gateup_gemv_fast(st_stream *s, const st_moe_gate_up_args *a, st_status *st);
/* MOE_DOWN with at most ST_GV_MOE_MAX_ASSIGN choices in all: one block row per token sums its
 * choices in a fixed order. */
bool st_moe_down_gemv_fast(st_stream *s, const st_moe_down_args *a, st_status *st);

#endif
