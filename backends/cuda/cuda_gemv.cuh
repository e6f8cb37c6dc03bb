/* SPDX-License-Identifier: Apache-2.0 */
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

/* The two forms of 8-bit activations, chosen by the weight format exactly as the CPU module
 * chooses its activation blocks (backends/cpu/kernels_scalar.c), so both modules multiply the
 * same integers and their decode logits differ by float summation order only:
 * - ST_Q8_32 (Q4_0, Q8_0: the CPU's Q8_0 blocks): per 32 elements amax, id = 127/amax,
 *   q = rint(x*id), d = amax/127 rounded to F16;
 * - ST_Q8_256 (K-quants: the CPU's Q8_K blocks): amax over 256 elements, the same q and d
 *   kept in F32 (stored once per 32 elements, the 8 copies equal).
 * Rounding is to nearest even on both sides (lrintf / __float2int_rn). */
enum { ST_Q8_32 = 0, ST_Q8_256 = 1 };
static inline int st_q8_kind_of(uint32_t weight_type) {
    return weight_type == ST_TYPE_Q4_K || weight_type == ST_TYPE_Q5_K || weight_type == ST_TYPE_Q6_K ? ST_Q8_256
                                                                                                       : ST_Q8_32;
}

/* Where the q8 activations of n_x rows of K live in the stream workspace (q [n_x][K] int8, d
 * [n_x][K/32] scales, one per 32 elements in either form); false when they do not fit. */
bool st_q8_layout(st_stream *s, int64_t n_x, int64_t K, int8_t **q, float **d);
/* Records that the workspace holds the q8 form `kind` of x's first n_x rows, so the next GEMV
 * on the stream reuses it; the producing op must also set s->q8_keep before its launch check. */
void st_q8_mark(st_stream *s, const st_tensor &x, int64_t n_x, int64_t K, int kind);

/* The scale and inverse scale of a block with max |x| = amax in form `kind`, with the CPU
 * module's arithmetic (IEEE division, F16 rounding of the 32-element form's scale). */
__device__ __forceinline__ void st_q8_scales(float amax, int kind, float *d, float *id) {
    if (kind == ST_Q8_32) {
        const float dd = __fdiv_rn(amax, 127.0f);
        *id = dd != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
        *d = __half2float(__float2half_rn(dd));
    } else {
        *id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
        *d = amax != 0.0f ? __fdiv_rn(amax, 127.0f) : 0.0f;
    }
}
/* One element: rint(x * id), clamped to +-127 (a no-op for |x| <= amax). */
__device__ __forceinline__ int st_q8_one(float x, float id) {
    const int q = __float2int_rn(__fmul_rn(x, id));
    return q > 127 ? 127 : q < -127 ? -127 : q;
}

/* Bytes the q8 rows of n_x rows of K take at the start of the workspace (st_q8_layout). */
uint64_t st_q8_bytes(int64_t n_x, int64_t K);

/* The expert assignments of one call sorted by slot (k_moe.cu), in the stream workspace: per
 * slot counts and fill positions, the assignment list grouped by slot, and the tiles (slot,
 * first list index, count) of at most bn assignments each. */
struct st_moe_sorted {
    int *cnt, *fill, *list; /* [n_slots], [n_slots], [n_assign] */
    int3 *tiles;            /* [max_tiles] */
    int *n_tiles;           /* tiles written (device) */
    int max_tiles;
    int bn;                 /* most assignments per tile */
    uint64_t ws_used;       /* workspace bytes up to the end of the arrays */
};
/* Places the sort's arrays in the workspace from byte `off` on for tiles of at most bn
 * assignments; false when they do not fit (or need more than 65535 tiles). */
bool st_moe_sorted_carve(st_stream *s, uint64_t off, int64_t n_slots, int n_assign, int bn, st_moe_sorted *q);
/* Launches the sort of n_assign assignments (expert -> slot through slot_table; those with no
 * slot or an x row outside [0, n_x) are left out) into q's arrays. */
void st_moe_sort_launch(st_stream *s, const int32_t *slot_table, const int32_t *expert, const int32_t *x_row,
                        int64_t n_x, int n_assign, int64_t n_slots, const st_moe_sorted &q);

bool st_gemv_fast(st_stream *s, const st_matmul_args *a, st_status *st);
/* MOE_MATMUL with at most ST_GV_MOE_MAX_ASSIGN assignments (a block row each), or grouped by
 * slot up to the grouped limit. */
bool st_moe_gemv_fast(st_stream *s, const st_moe_matmul_args *a, st_status *st);
/* MOE_GATE_UP, as MOE_MATMUL's: both weights in one pass. */
bool st_moe_gateup_gemv_fast(st_stream *s, const st_moe_gate_up_args *a, st_status *st);
/* MOE_DOWN with at most ST_GV_MOE_MAX_ASSIGN choices in all: one block row per token sums its
 * choices in a fixed order. */
bool st_moe_down_gemv_fast(st_stream *s, const st_moe_down_args *a, st_status *st);

#endif
