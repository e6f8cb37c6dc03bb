/* SPDX-License-Identifier: Apache-2.0 */
/* Device helpers shared by the kernel files: activation loads/stores for F32/F16/BF16,
 * strided row views, warp reductions, and host-side argument checks that return statuses. */
#ifndef STRATA_CUDA_COMMON_CUH
#define STRATA_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.h"
#include "quant/quant.h"

#define ST_WARP 32

/* ---- programmatic dependent launch (sm_90+) --------------------------------------------
 * A kernel launched through st_launch may be scheduled while the kernel before it on the
 * stream still runs (once every block of that one has started). Such a kernel must call
 * st_pdl_begin() before its first global memory access, read or write: it waits there until
 * the kernel before it has completed and its writes are visible, then lets the next kernel be
 * scheduled early in turn. Results are those of plain launches; what overlaps is the launch
 * latency and block scheduling between the many small dependent kernels of a decode step
 * (also inside captured graphs, as programmatic edges). Before sm_90, or with
 * STRATA_CUDA_PDL=0, st_launch is a plain launch and st_pdl_begin() does nothing. */
__device__ __forceinline__ void st_pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Whether kernels on d launch with the programmatic-serialization attribute. */
static inline bool st_pdl_on(const st_device *d) {
    static int env = -1;
    if (env < 0) {
        const char *e = getenv("STRATA_CUDA_PDL");
        env = e && !strcmp(e, "0") ? 0 : 1;
    }
    return env && d->cc_major >= 9;
}

/* Fills attribute *at for a launch on s when PDL is on; returns how many it filled (0 or 1). */
static inline unsigned st_pdl_attr(const st_stream *s, cudaLaunchAttribute *at) {
    if (!st_pdl_on(s->dev)) return 0;
    at->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at->val.programmaticStreamSerializationAllowed = 1;
    return 1;
}

/* k<<<grid, block, smem, s>>>(args...), with the PDL attribute where st_pdl_on (and plain when
 * the launch with it is refused); k must begin with st_pdl_begin(). A launch error is left for
 * st_cuda_launched (cudaGetLastError). */
template <typename... KA, typename... A>
static inline void st_launch(const st_stream *s, void (*k)(KA...), dim3 grid, dim3 block, size_t smem, A... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s->s;
    cudaLaunchAttribute at[1];
    cfg.numAttrs = st_pdl_attr(s, at);
    cfg.attrs = cfg.numAttrs ? at : NULL;
    if (cudaLaunchKernelEx(&cfg, k, args...) != cudaSuccess && cfg.numAttrs) {
        (void)cudaGetLastError(); /* refused with the attribute: the plain launch decides */
        cfg.numAttrs = 0;
        cfg.attrs = NULL;
        (void)cudaLaunchKernelEx(&cfg, k, args...);
    }
}

/* A strided [ne3][ne2][ne1][ne0] view flattened to rows of ne0 elements. */
struct st_view {
    char *p;
    int type;
    int64_t ne0, ne1, ne2, ne3;
    int64_t nb1, nb2, nb3;
};

static inline st_view st_view_of(const st_tensor &t) {
    st_view v;
    v.p = (char *)t.data;
    v.type = (int)t.type;
    v.ne0 = t.ne[0]; v.ne1 = t.ne[1]; v.ne2 = t.ne[2]; v.ne3 = t.ne[3];
    v.nb1 = t.nb[1]; v.nb2 = t.nb[2]; v.nb3 = t.nb[3];
    return v;
}

static inline int64_t st_nrows(const st_tensor &t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

__device__ __forceinline__ char *st_row(const st_view &v, int64_t r) {
    int64_t i1 = r % v.ne1;
    r /= v.ne1;
    int64_t i2 = r % v.ne2, i3 = r / v.ne2;
    return v.p + i1 * v.nb1 + i2 * v.nb2 + i3 * v.nb3;
}

__host__ __device__ __forceinline__ float st_h2f(uint16_t h) {
    __half_raw r;
    r.x = h;
    return __half2float(__half(r));
}
__host__ __device__ __forceinline__ float st_b2f(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element i of an activation row of type F32/F16/BF16. */
__device__ __forceinline__ float st_ld(const void *p, int type, int64_t i) {
    if (type == ST_TYPE_F32) return ((const float *)p)[i];
    if (type == ST_TYPE_F16) return st_h2f(((const uint16_t *)p)[i]);
    return st_b2f(((const uint16_t *)p)[i]);
}

__device__ __forceinline__ void st_st(void *p, int type, int64_t i, float v) {
    if (type == ST_TYPE_F32) ((float *)p)[i] = v;
    else if (type == ST_TYPE_F16) ((__half *)p)[i] = __float2half_rn(v);
    else ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
}

__device__ __forceinline__ float st_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float st_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over a block of blockDim.x (multiple of 32, <= 1024); every thread gets the result. */
__device__ __forceinline__ float st_block_sum(float v, float *sh /* [32] */) {
    v = st_warp_sum(v);
    int w = threadIdx.x / ST_WARP, l = threadIdx.x % ST_WARP, nw = blockDim.x / ST_WARP;
    __syncthreads();
    if (l == 0) sh[w] = v;
    __syncthreads();
    v = l < nw ? sh[l] : 0.0f;
    return st_warp_sum(v);
}

/* Name of a type id for error texts (host side). */
static inline const char *st_cuda_type_name(uint32_t t) {
    switch (t) {
    case ST_TYPE_F32: return "F32"; case ST_TYPE_F16: return "F16"; case ST_TYPE_BF16: return "BF16";
    case ST_TYPE_Q4_0: return "Q4_0"; case ST_TYPE_Q4_1: return "Q4_1"; case ST_TYPE_Q5_0: return "Q5_0";
    case ST_TYPE_Q5_1: return "Q5_1"; case ST_TYPE_Q8_0: return "Q8_0"; case ST_TYPE_Q8_1: return "Q8_1";
    case ST_TYPE_Q2_K: return "Q2_K"; case ST_TYPE_Q3_K: return "Q3_K"; case ST_TYPE_Q4_K: return "Q4_K";
    case ST_TYPE_Q5_K: return "Q5_K"; case ST_TYPE_Q6_K: return "Q6_K"; case ST_TYPE_Q8_K: return "Q8_K";
    case ST_TYPE_IQ4_NL: return "IQ4_NL"; case ST_TYPE_IQ4_XS: return "IQ4_XS"; case ST_TYPE_I8: return "I8";
    case ST_TYPE_I16: return "I16"; case ST_TYPE_I32: return "I32"; case ST_TYPE_MXFP4: return "MXFP4";
    default: return "?";
    }
}

/* ---- host-side checks ------------------------------------------------------------------ */
static inline int st_is_act(uint32_t t) { return t == ST_TYPE_F32 || t == ST_TYPE_F16 || t == ST_TYPE_BF16; }
static inline int64_t st_act_size(uint32_t t) { return t == ST_TYPE_F32 ? 4 : 2; }

/* An activation tensor: F32/F16/BF16, non-NULL, contiguous innermost dimension. */
static inline st_status st_check_act(const st_tensor &t, const char *op, const char *name) {
    if (!t.data) return st_mod_fail(ST_INVALID, "cuda %s: %s has no data", op, name);
    if (!st_is_act(t.type))
        return st_mod_fail(ST_UNSUPPORTED, "cuda %s: %s has type %s (F32/F16/BF16 only)", op, name,
                           st_cuda_type_name(t.type));
    if (t.nb[0] != st_act_size(t.type))
        return st_mod_fail(ST_UNSUPPORTED, "cuda %s: %s is not contiguous in dim 0", op, name);
    for (int i = 0; i < 4; i++)
        if (t.ne[i] < 0) return st_mod_fail(ST_INVALID, "cuda %s: %s has ne[%d] < 0", op, name, i);
    return ST_OK;
}

/* A paged K or V cache that KV_WRITE or ATTN_PREP writes rows of hd elements for nkv heads
 * into: F32/F16/BF16 contiguous in dim 0, or Q8_0 with hd % 32 == 0 and 2-byte aligned rows. */
static inline st_status st_check_kv_cache(const st_tensor &c, int64_t hd, int64_t nkv, const char *op,
                                          const char *name) {
    if (!c.data) return st_mod_fail(ST_INVALID, "cuda %s: %s cache has no data", op, name);
    if (c.ne[0] != hd || c.ne[1] != nkv)
        return st_mod_fail(ST_INVALID, "cuda %s: %s is [%lld][%lld], cache rows are [%lld][%lld]", op, name,
                           (long long)nkv, (long long)hd, (long long)c.ne[1], (long long)c.ne[0]);
    if (c.type == ST_TYPE_Q8_0) {
        if (hd % 32) return st_mod_fail(ST_INVALID, "cuda %s: Q8_0 cache needs head_dim %% 32 == 0 (%lld)", op, (long long)hd);
        if (((uintptr_t)c.data | (uintptr_t)c.nb[1] | (uintptr_t)c.nb[2]) & 1)
            return st_mod_fail(ST_UNSUPPORTED, "cuda %s: Q8_0 cache rows must be 2-byte aligned", op);
        return ST_OK;
    }
    if (!st_is_act(c.type))
        return st_mod_fail(ST_UNSUPPORTED, "cuda %s: cache type %s (F32/F16/BF16/Q8_0)", op, st_cuda_type_name(c.type));
    if (c.nb[0] != st_act_size(c.type))
        return st_mod_fail(ST_UNSUPPORTED, "cuda %s: cache not contiguous in dim 0", op);
    return ST_OK;
}

static inline int st_same_shape(const st_tensor &a, const st_tensor &b) {
    return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

/* d += A.B for one m16n8k16 step, F16 inputs, F32 sums. */
__device__ __forceinline__ void st_mma16816(float *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    (void)d; (void)a0; (void)a1; (void)a2; (void)a3; (void)b0; (void)b1;
#endif
}

/* r[0..3] = the four 8x8 F16 matrices of shared memory whose rows lanes 0-7, 8-15, 16-23,
 * 24-31 address (ldmatrix; `trans` transposes each, for the B operand of a row-major matrix). */
__device__ __forceinline__ void st_ldsm4(uint32_t *r, const __half *p, bool trans = false) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
#else
    (void)p; (void)trans;
    r[0] = r[1] = r[2] = r[3] = 0;
#endif
}

/* One 16-byte copy to shared memory that does not wait (zeros when !ok; src is then not read). */
__device__ __forceinline__ void st_cp16(uint4 *dst, const void *src, bool ok) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0) : "memory");
#endif
}
__device__ __forceinline__ void st_cp_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/* Waits until at most one committed group of this thread's copies is still in flight. */
__device__ __forceinline__ void st_cp_wait1() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
#endif
}

/* Waits until every committed group of this thread's copies has landed. */
__device__ __forceinline__ void st_cp_wait0() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

static inline unsigned st_blocks(int64_t n, int per) { return (unsigned)((n + per - 1) / per); }

#define ST_TRY(x)                         \
    do {                                  \
        st_status st_try_ = (x);          \
        if (st_try_ != ST_OK) return st_try_; \
    } while (0)

#endif
