/* SPDX-License-Identifier: Apache-2.0 */
/* Row-wise and element-wise ops: RMS_NORM (fused residual add), ADD, SCALE, CONVERT,
 * MUL_ROWS, SWIGLU, SWIGLU_OAI. Tensors are strided views of up to 4 dims with a contiguous dim 0;
 * outputs may alias inputs where the header allows it (each element is read before it is
 * written by the same thread). */
#include "cuda/cuda_gemv.cuh"

#define ST_EW_THREADS 256

static unsigned ew_grid(int64_t total) {
    int64_t b = (total + ST_EW_THREADS - 1) / ST_EW_THREADS;
    return (unsigned)(b > 65535ll * 16 ? 65535ll * 16 : (b < 1 ? 1 : b));
}

enum { ST_EW_ADD = 0, ST_EW_SCALE = 1, ST_EW_CONVERT = 2, ST_EW_MUL_ROWS = 3, ST_EW_SWIGLU = 4, ST_EW_SWIGLU_OAI = 5 };

/* One generic element-wise kernel: out[r][e] = f(a[r][e], b ...); s and s2 are the op's
 * constants (SCALE: s; SWIGLU_OAI: alpha, limit). */
__global__ void k_elementwise(int kind, st_view a, st_view b, st_view out, int64_t rows, int64_t K, float s, float s2,
                              int b_bcast, int sigm) {
    const int64_t total = rows * K;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = idx / K, e = idx % K;
        const float x = st_ld(st_row(a, r), a.type, e);
        float y;
        switch (kind) {
        case ST_EW_ADD: y = x + st_ld(st_row(b, b_bcast ? 0 : r), b.type, e); break;
        case ST_EW_SCALE: y = x * s; break;
        case ST_EW_MUL_ROWS: {
            /* b holds one F32 per row of a, read in flattened order */
            float f = ((const float *)(st_row(b, r / b.ne0)))[r % b.ne0];
            if (sigm) f = 1.0f / (1.0f + expf(-f));
            y = x * f;
            break;
        }
        case ST_EW_SWIGLU: {
            const float u = st_ld(st_row(b, r), b.type, e);
            y = x / (1.0f + expf(-x)) * u;
            break;
        }
        case ST_EW_SWIGLU_OAI: { /* x = min(gate, limit), u = clamp(up, -limit, limit) */
            const float g = fminf(x, s2), u = fminf(fmaxf(st_ld(st_row(b, r), b.type, e), -s2), s2);
            y = g / (1.0f + expf(-s * g)) * (u + 1.0f);
            break;
        }
        default: y = x; break;
        }
        st_st(st_row(out, r), out.type, e, y);
    }
}

static st_status ew_launch(st_stream *s, const char *op, int kind, const st_tensor &a, const st_tensor *b,
                           const st_tensor &out, float sc, int b_bcast, int sigm, float sc2 = 0.0f) {
    const int64_t K = a.ne[0], rows = st_nrows(a);
    if (!K || !rows) return ST_OK;
    ST_TRY(st_cuda_use(s->dev));
    const st_view bv = b ? st_view_of(*b) : st_view_of(a);
    k_elementwise<<<ew_grid(K * rows), ST_EW_THREADS, 0, s->s>>>(kind, st_view_of(a), bv, st_view_of(out), rows, K,
                                                                  sc, sc2, b_bcast, sigm);
    return st_cuda_launched(s, op);
}

static st_status check_ao(const st_binary_args *a, const char *op) {
    ST_TRY(st_check_act(a->a, op, "a"));
    ST_TRY(st_check_act(a->out, op, "out"));
    if (!st_same_shape(a->a, a->out)) return st_mod_fail(ST_INVALID, "cuda %s: a and out shapes differ", op);
    return ST_OK;
}

extern "C" st_status st_cuda_add(st_stream *s, const st_binary_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda add: NULL argument");
    ST_TRY(check_ao(a, "add"));
    ST_TRY(st_check_act(a->b, "add", "b"));
    const int bcast = st_nrows(a->b) == 1 && st_nrows(a->a) != 1;
    if (a->b.ne[0] != a->a.ne[0] || (!bcast && st_nrows(a->b) != st_nrows(a->a)))
        return st_mod_fail(ST_INVALID, "cuda add: b is [%lld][%lld], a is [%lld][%lld]", (long long)st_nrows(a->b),
                           (long long)a->b.ne[0], (long long)st_nrows(a->a), (long long)a->a.ne[0]);
    return ew_launch(s, "add", ST_EW_ADD, a->a, &a->b, a->out, 0.0f, bcast, 0);
}

extern "C" st_status st_cuda_scale(st_stream *s, const st_binary_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda scale: NULL argument");
    ST_TRY(check_ao(a, "scale"));
    return ew_launch(s, "scale", ST_EW_SCALE, a->a, NULL, a->out, a->s, 0, 0);
}

extern "C" st_status st_cuda_convert(st_stream *s, const st_binary_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda convert: NULL argument");
    ST_TRY(check_ao(a, "convert"));
    return ew_launch(s, "convert", ST_EW_CONVERT, a->a, NULL, a->out, 0.0f, 0, 0);
}

extern "C" st_status st_cuda_mul_rows(st_stream *s, const st_binary_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda mul_rows: NULL argument");
    ST_TRY(check_ao(a, "mul_rows"));
    const int64_t n = st_nrows(a->a);
    if (!a->b.data || a->b.type != ST_TYPE_F32)
        return st_mod_fail(ST_INVALID, "cuda mul_rows: b must be an F32 vector of %lld", (long long)n);
    if (a->b.nb[0] != 4 || a->b.ne[0] * st_nrows(a->b) != n)
        return st_mod_fail(ST_INVALID, "cuda mul_rows: b has %lld elements (dim 0 contiguous), a has %lld rows",
                           (long long)(a->b.ne[0] * st_nrows(a->b)), (long long)n);
    return ew_launch(s, "mul_rows", ST_EW_MUL_ROWS, a->a, &a->b, a->out, 0.0f, 0, a->sigmoid);
}

extern "C" st_status st_cuda_swiglu(st_stream *s, const st_swiglu_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda swiglu: NULL argument");
    ST_TRY(st_check_act(a->gate, "swiglu", "gate"));
    ST_TRY(st_check_act(a->up, "swiglu", "up"));
    ST_TRY(st_check_act(a->out, "swiglu", "out"));
    if (!st_same_shape(a->gate, a->up) || !st_same_shape(a->gate, a->out))
        return st_mod_fail(ST_INVALID, "cuda swiglu: gate, up and out shapes differ");
    return ew_launch(s, "swiglu", ST_EW_SWIGLU, a->gate, &a->up, a->out, 0.0f, 0, 0);
}

extern "C" st_status st_cuda_swiglu_oai(st_stream *s, const st_swiglu_oai_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda swiglu_oai: NULL argument");
    ST_TRY(st_check_act(a->gate, "swiglu_oai", "gate"));
    ST_TRY(st_check_act(a->up, "swiglu_oai", "up"));
    ST_TRY(st_check_act(a->out, "swiglu_oai", "out"));
    if (!st_same_shape(a->gate, a->up) || !st_same_shape(a->gate, a->out))
        return st_mod_fail(ST_INVALID, "cuda swiglu_oai: gate, up and out shapes differ");
    if (!(a->limit > 0.0f)) return st_mod_fail(ST_INVALID, "cuda swiglu_oai: limit %g must be positive", (double)a->limit);
    return ew_launch(s, "swiglu_oai", ST_EW_SWIGLU_OAI, a->gate, &a->up, a->out, a->alpha, 0, 0, a->limit);
}

/* ---- RMS norm ---------------------------------------------------------------------------- */
/* Block per row. h = x (+ residual) is kept in shared memory when cache != 0 (K floats), so
 * outputs may alias any input; else h is re-read from sum_out or recomputed. */
__global__ void k_rms_norm(st_view x, st_view res, int has_res, st_view sum, int has_sum, const char *w,
                           int wtype, st_view out, int64_t K, float eps, int cache) {
    extern __shared__ float hs[];
    __shared__ float red[32];
    const int64_t r = blockIdx.x;
    const char *xr = st_row(x, r);
    const char *rr = has_res ? st_row(res, r) : NULL;
    char *sr = has_sum ? st_row(sum, r) : NULL;
    char *orow = st_row(out, r);
    float ss = 0.0f;
    for (int64_t e = threadIdx.x; e < K; e += blockDim.x) {
        float h = st_ld(xr, x.type, e);
        if (rr) h += st_ld(rr, res.type, e);
        if (cache) hs[e] = h;
        if (sr) st_st(sr, sum.type, e, h);
        ss += h * h;
    }
    ss = st_block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / (float)K + eps);
    for (int64_t e = threadIdx.x; e < K; e += blockDim.x) {
        float h;
        if (cache) h = hs[e];
        else if (sr) h = st_ld(sr, sum.type, e);
        else {
            h = st_ld(xr, x.type, e);
            if (rr) h += st_ld(rr, res.type, e);
        }
        float y = h * inv;
        if (w) y *= st_ld(w, wtype, e);
        st_st(orow, out.type, e, y);
    }
}

/* F32 rows held in registers (V float4 per thread): one read of x and residual, one block
 * sum, one write of sum_out and out. Outputs may alias inputs (every read precedes the
 * barrier inside the block sum). */
template <int V>
__global__ void k_rms_norm_f32(st_view x, st_view res, int has_res, st_view sum, int has_sum, const float *w,
                               st_view out, int64_t K, float eps, int8_t *q8, float *d8, int kind) {
    __shared__ float red[32];
    st_pdl_begin();
    const int64_t r = blockIdx.x;
    const float4 *xr = (const float4 *)st_row(x, r);
    const float4 *rr = has_res ? (const float4 *)st_row(res, r) : NULL;
    const int K4 = (int)(K / 4);
    float4 h[V];
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < V; j++) {
        const int e = threadIdx.x + j * blockDim.x;
        h[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (e < K4) {
            h[j] = xr[e];
            if (rr) {
                const float4 b = rr[e];
                h[j].x += b.x; h[j].y += b.y; h[j].z += b.z; h[j].w += b.w;
            }
            ss += h[j].x * h[j].x + h[j].y * h[j].y + h[j].z * h[j].z + h[j].w * h[j].w;
        }
    }
    ss = st_block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / (float)K + eps);
    float4 *sr = has_sum ? (float4 *)st_row(sum, r) : NULL, *orow = (float4 *)st_row(out, r);
#pragma unroll
    for (int j = 0; j < V; j++) {
        const int e = threadIdx.x + j * blockDim.x;
        if (e >= K4) continue;
        if (sr) sr[e] = h[j];
        float4 y = make_float4(h[j].x * inv, h[j].y * inv, h[j].z * inv, h[j].w * inv);
        if (w) {
            const float4 g = ((const float4 *)w)[e];
            y.x *= g.x; y.y *= g.y; y.z *= g.z; y.w *= g.w;
        }
        orow[e] = y;
        h[j] = y;
    }
    if (!q8) return;
    /* the 8-bit form the next GEMV reads (form `kind`, cuda_gemv.cuh): a block of 32 is 8
     * neighbouring lanes; a block of 256 is two whole warps (K % 256 == 0, so lanes past K4
     * drop out in whole warps), met through shared memory */
    __shared__ float wmax[4 * 1024 / ST_WARP]; /* max of each warp's 128 elements */
    if (kind == ST_Q8_256) {
#pragma unroll
        for (int j = 0; j < V; j++) {
            const int e = threadIdx.x + j * blockDim.x;
            if (e >= K4) continue;
            const float a = st_warp_max(fmaxf(fmaxf(fabsf(h[j].x), fabsf(h[j].y)), fmaxf(fabsf(h[j].z), fabsf(h[j].w))));
            if ((threadIdx.x & (ST_WARP - 1)) == 0) wmax[e / ST_WARP] = a;
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < V; j++) {
        const int e = threadIdx.x + j * blockDim.x;
        if (e >= K4) continue;
        float amax;
        if (kind == ST_Q8_256) {
            amax = fmaxf(wmax[(e / 64) * 2], wmax[(e / 64) * 2 + 1]);
        } else { /* K % 32 == 0: lanes past K4 drop out in whole groups of 8 */
            amax = fmaxf(fmaxf(fabsf(h[j].x), fabsf(h[j].y)), fmaxf(fabsf(h[j].z), fabsf(h[j].w)));
#pragma unroll
            for (int o = 1; o < 8; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(__activemask(), amax, o));
        }
        float dd, id;
        st_q8_scales(amax, kind, &dd, &id);
        const uint32_t packed = (uint32_t)(uint8_t)(int8_t)st_q8_one(h[j].x, id) |
                                (uint32_t)(uint8_t)(int8_t)st_q8_one(h[j].y, id) << 8 |
                                (uint32_t)(uint8_t)(int8_t)st_q8_one(h[j].z, id) << 16 |
                                (uint32_t)(uint8_t)(int8_t)st_q8_one(h[j].w, id) << 24;
        ((uint32_t *)(q8 + r * K))[e] = packed;
        if ((threadIdx.x & 7) == 0) d8[r * (K / 32) + e / 8] = dd;
    }
}

static bool st_f32_rows16(const st_tensor &t) {
    return t.type == ST_TYPE_F32 && (uintptr_t)t.data % 16 == 0 && t.nb[1] % 16 == 0 && t.nb[2] % 16 == 0 &&
           t.nb[3] % 16 == 0;
}

extern "C" st_status st_cuda_rms_norm(st_stream *s, const st_rms_norm_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda rms_norm: NULL argument");
    ST_TRY(st_check_act(a->x, "rms_norm", "x"));
    ST_TRY(st_check_act(a->out, "rms_norm", "out"));
    const int has_res = a->residual.data != NULL, has_sum = a->sum_out.data != NULL;
    if (has_res) ST_TRY(st_check_act(a->residual, "rms_norm", "residual"));
    if (has_sum) ST_TRY(st_check_act(a->sum_out, "rms_norm", "sum_out"));
    const int64_t K = a->x.ne[0], rows = st_nrows(a->x);
    if (!st_same_shape(a->x, a->out) || (has_res && !st_same_shape(a->x, a->residual)) ||
        (has_sum && !st_same_shape(a->x, a->sum_out)))
        return st_mod_fail(ST_INVALID, "cuda rms_norm: x, residual, sum_out and out shapes differ");
    if (a->weight.data) {
        ST_TRY(st_check_act(a->weight, "rms_norm", "weight"));
        if (a->weight.ne[0] != K) return st_mod_fail(ST_INVALID, "cuda rms_norm: weight must have %lld elements", (long long)K);
    }
    if (!(a->eps >= 0.0f)) return st_mod_fail(ST_INVALID, "cuda rms_norm: eps %g", (double)a->eps);
    if (!K || !rows) return ST_OK;
    if (rows > 0x7fffffff) return st_mod_fail(ST_UNSUPPORTED, "cuda rms_norm: %lld rows", (long long)rows);
    ST_TRY(st_cuda_use(s->dev));
    if (K % 4 == 0 && K <= 4 * 4 * 1024 && st_f32_rows16(a->x) && st_f32_rows16(a->out) &&
        (!has_res || st_f32_rows16(a->residual)) && (!has_sum || st_f32_rows16(a->sum_out)) &&
        (!a->weight.data || (a->weight.type == ST_TYPE_F32 && (uintptr_t)a->weight.data % 16 == 0))) {
        const int64_t K4 = K / 4;
        const int V = K4 <= 1024 ? 1 : K4 <= 2048 ? 2 : 4;
        int threads = (int)((K4 + V - 1) / V);
        threads = (threads + ST_WARP - 1) / ST_WARP * ST_WARP;
        const st_view xv = st_view_of(a->x), rv = st_view_of(has_res ? a->residual : a->x),
                      sv = st_view_of(has_sum ? a->sum_out : a->x), ov = st_view_of(a->out);
        const float *w = (const float *)a->weight.data;
        /* decode rows: also leave the 8-bit form of out for the GEMV that reads it next */
        int8_t *q8 = NULL;
        float *d8 = NULL;
        const int kind = s->q8_pref == ST_Q8_256 && K % 256 == 0 ? ST_Q8_256 : ST_Q8_32;
        const bool q8_out = rows <= 64 && K % 32 == 0 && st_q8_layout(s, rows, K, &q8, &d8);
        if (!q8_out) q8 = NULL, d8 = NULL;
        void (*kern)(st_view, st_view, int, st_view, int, const float *, st_view, int64_t, float, int8_t *, float *,
                     int) = V == 1 ? k_rms_norm_f32<1> : V == 2 ? k_rms_norm_f32<2> : k_rms_norm_f32<4>;
        st_launch(s, kern, dim3((unsigned)rows), dim3(threads), 0, xv, rv, has_res, sv, has_sum, w, ov, K, a->eps, q8, d8,
                  kind);
        if (q8_out) {
            st_q8_mark(s, a->out, rows, K, kind);
            s->q8_keep = 1;
        }
        return st_cuda_launched(s, "rms_norm");
    }
    size_t smem = (size_t)K * sizeof(float);
    int cache = smem <= s->dev->smem_optin;
    if (!cache) smem = 0;
    if (smem > 48 * 1024)
        ST_TRY(st_cuda_status(cudaFuncSetAttribute(k_rms_norm, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                              "rms_norm: cudaFuncSetAttribute", s->dev));
    const int threads = K >= 4096 ? 1024 : (K >= 1024 ? 256 : 128);
    k_rms_norm<<<(unsigned)rows, threads, smem, s->s>>>(
        st_view_of(a->x), st_view_of(has_res ? a->residual : a->x), has_res, st_view_of(has_sum ? a->sum_out : a->x),
        has_sum, (const char *)a->weight.data, (int)a->weight.type, st_view_of(a->out), K, a->eps, cache);
    return st_cuda_launched(s, "rms_norm");
}
