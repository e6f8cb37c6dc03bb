/* SPDX-License-Identifier: Apache-2.0 */
/* Selection ops on the device: ROUTER (softmax/sigmoid gating, optional selection bias,
 * top-k, renormalize, scale), ARGMAX and TOPK. Order: larger value first, equal values by
 * lower index; NaN counts as -inf. One block per row. */
#include "cuda/cuda_common.cuh"

#define ST_SEL_THREADS 256

/* (v, i) comes before (w, j): larger value first, NaN after every number, lower index on ties. */
__device__ __forceinline__ bool st_before(float v, int i, float w, int j) {
    const bool nv = v != v, nw = w != w;
    if (nv != nw) return nw;
    if (!nv && v != w) return v > w;
    return i < j;
}

/* Warp-wide best (v, i) over the lanes' candidates; result in every lane. */
__device__ __forceinline__ void st_warp_best(float &v, int &i) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float w = __shfl_xor_sync(0xffffffffu, v, o);
        const int j = __shfl_xor_sync(0xffffffffu, i, o);
        if (st_before(w, j, v, i)) {
            v = w;
            i = j;
        }
    }
}

/* Block-wide best (v, i) over the threads' candidates; result in every thread. */
__device__ __forceinline__ void st_block_best(float &v, int &i, float *sv, int *si) {
    st_warp_best(v, i);
    const int warp = threadIdx.x / ST_WARP, lane = threadIdx.x % ST_WARP, nw = blockDim.x / ST_WARP;
    __syncthreads();
    if (lane == 0) {
        sv[warp] = v;
        si[warp] = i;
    }
    __syncthreads();
    v = lane < nw ? sv[lane] : NAN;
    i = lane < nw ? si[lane] : 0x7fffffff;
    st_warp_best(v, i);
}

/* ---- TOPK / ARGMAX ------------------------------------------------------------------------ */
/* k passes; pass j picks the best element strictly after pick j-1 in the order. */
__global__ void k_topk(st_view x, int64_t V, int k, int32_t *ids, float *values) {
    __shared__ float sv[32];
    __shared__ int si[32];
    const char *row = st_row(x, blockIdx.x);
    float pv = INFINITY;
    int pi = -1;
    for (int j = 0; j < k; j++) {
        float bv = NAN;
        int bi = 0x7fffffff;
        for (int64_t e = threadIdx.x; e < V; e += blockDim.x) {
            const float v = ((const float *)row)[e];
            if (st_before(pv, pi, v, (int)e) && st_before(v, (int)e, bv, bi)) {
                bv = v;
                bi = (int)e;
            }
        }
        st_block_best(bv, bi, sv, si);
        if (threadIdx.x == 0) {
            ids[(int64_t)blockIdx.x * k + j] = bi;
            if (values) values[(int64_t)blockIdx.x * k + j] = ((const float *)row)[bi];
        }
        pv = bv;
        pi = bi;
    }
}

/* ARGMAX of long rows in two passes: block (slice, row) finds its slice's best (v, i) into the
 * workspace, then one warp per row picks the best slice in the same order. */
#define ST_AM_SLICES 64
__global__ void k_argmax_part(st_view x, int64_t V, float *pv, int *pi) {
    __shared__ float sv[32];
    __shared__ int si[32];
    const int64_t r = blockIdx.y;
    const float *row = (const float *)st_row(x, r);
    const int64_t per = (V + gridDim.x - 1) / gridDim.x, e0 = blockIdx.x * per, e1 = e0 + per < V ? e0 + per : V;
    float bv = NAN;
    int bi = 0x7fffffff;
    for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
        const float v = row[e];
        if (st_before(v, (int)e, bv, bi)) {
            bv = v;
            bi = (int)e;
        }
    }
    st_block_best(bv, bi, sv, si);
    if (threadIdx.x == 0) {
        pv[r * gridDim.x + blockIdx.x] = bv;
        pi[r * gridDim.x + blockIdx.x] = bi;
    }
}

__global__ void k_argmax_final(const float *pv, const int *pi, int slices, st_view x, int32_t *ids,
                               float *values) {
    const int64_t r = blockIdx.x;
    const int lane = threadIdx.x;
    float bv = NAN;
    int bi = 0x7fffffff;
    for (int j = lane; j < slices; j += ST_WARP)
        if (st_before(pv[r * slices + j], pi[r * slices + j], bv, bi)) {
            bv = pv[r * slices + j];
            bi = pi[r * slices + j];
        }
    st_warp_best(bv, bi);
    if (lane == 0) {
        ids[r] = bi;
        if (values) values[r] = ((const float *)st_row(x, r))[bi];
    }
}

/* TOPK of long rows (a vocabulary) in two passes instead of k passes over the row: block
 * (slice, row) sorts its slice of at most ST_TK_SLICE elements in shared memory and keeps its
 * first k, then one block per row sorts the slices' candidates and keeps the first k. Both
 * sorts are bitonic networks in the order of st_before (larger value, NaN last, lower index on
 * ties), a total order, so the result is k_topk's exactly; padding (NaN, INT_MAX) sorts last. */
#define ST_TK_SLICE 4096
#define ST_TK_MERGE_MAX 16384 /* candidates the second pass sorts (128 KiB of shared memory) */
#define ST_TK_THREADS 1024

/* Sorts the n (a power of two) pairs (v, id) in shared memory by st_before; every thread of
 * the block calls it, and it ends with a barrier. */
__device__ void st_bitonic_sort(float *v, int *id, int n) {
    for (int size = 2; size <= n; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            __syncthreads();
            for (int t = threadIdx.x; t < n / 2; t += blockDim.x) {
                const int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
                const bool up = (lo & size) == 0; /* this run in st_before order, else reversed */
                const bool swap = up ? st_before(v[hi], id[hi], v[lo], id[lo]) : st_before(v[lo], id[lo], v[hi], id[hi]);
                if (swap) {
                    const float tv = v[lo];
                    const int ti = id[lo];
                    v[lo] = v[hi];
                    id[lo] = id[hi];
                    v[hi] = tv;
                    id[hi] = ti;
                }
            }
        }
    __syncthreads();
}

/* Pass 1: block (slice, row) -> the slice's first k pairs at cv/ci[(row * slices + slice) * k]. */
__global__ void __launch_bounds__(ST_TK_THREADS) k_topk_slices(st_view x, int64_t V, int k, int slice_len, int p2,
                                                               float *cv, int *ci) {
    __shared__ float sv[ST_TK_SLICE];
    __shared__ int si[ST_TK_SLICE];
    const int64_t r = blockIdx.y, e0 = (int64_t)blockIdx.x * slice_len;
    const float *row = (const float *)st_row(x, r);
    for (int j = threadIdx.x; j < p2; j += blockDim.x) {
        const int64_t e = e0 + j;
        const bool in = j < slice_len && e < V;
        sv[j] = in ? row[e] : NAN;
        si[j] = in ? (int)e : 0x7fffffff;
    }
    st_bitonic_sort(sv, si, p2);
    const int64_t o = (r * gridDim.x + blockIdx.x) * k;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
        cv[o + j] = j < p2 ? sv[j] : NAN;
        ci[o + j] = j < p2 ? si[j] : 0x7fffffff;
    }
}

/* Pass 2: block per row sorts its nc candidates (padded to p2) and writes the first k. */
__global__ void __launch_bounds__(ST_TK_THREADS) k_topk_merge(const float *cv, const int *ci, int nc, int k, int p2,
                                                              int32_t *ids, float *values) {
    extern __shared__ float sm[];
    float *sv = sm;
    int *si = (int *)(sm + p2);
    const int64_t r = blockIdx.x;
    for (int j = threadIdx.x; j < p2; j += blockDim.x) {
        sv[j] = j < nc ? cv[r * nc + j] : NAN;
        si[j] = j < nc ? ci[r * nc + j] : 0x7fffffff;
    }
    st_bitonic_sort(sv, si, p2);
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
        ids[r * k + j] = si[j];
        if (values) values[r * k + j] = sv[j];
    }
}

static int st_pow2_at_least(int64_t n) {
    int p = 1;
    while (p < n) p <<= 1;
    return p;
}

/* The two-pass TOPK when the row is long and the candidates fit; *ran says whether it ran. */
static st_status st_topk_sliced(st_stream *s, const st_topk_args *a, int k, int64_t V, int64_t n, const char *op,
                                bool *ran) {
    *ran = false;
    const int64_t slices = (V + ST_TK_SLICE - 1) / ST_TK_SLICE, nc = slices * k;
    if (k < 2 || V < 16384 || n > 65535 || slices > 65535 || nc > ST_TK_MERGE_MAX ||
        (uint64_t)(n * nc) * 8 > s->ws_bytes)
        return ST_OK;
    const int slice_len = (int)((V + slices - 1) / slices), p1 = st_pow2_at_least(slice_len);
    const int p2 = st_pow2_at_least(nc);
    const size_t smem = (size_t)p2 * 8;
    if (smem > 48 * 1024) {
        if (smem > s->dev->smem_optin) return ST_OK;
        ST_TRY(st_cuda_status(cudaFuncSetAttribute(k_topk_merge, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                              "topk: cudaFuncSetAttribute", s->dev));
    }
    float *cv = (float *)s->ws;
    int *ci = (int *)(cv + n * nc);
    k_topk_slices<<<dim3((unsigned)slices, (unsigned)n), ST_TK_THREADS, 0, s->s>>>(st_view_of(a->x), V, k, slice_len, p1,
                                                                                 cv, ci);
    ST_TRY(st_cuda_launched(s, op));
    k_topk_merge<<<(unsigned)n, ST_TK_THREADS, smem, s->s>>>(cv, ci, (int)nc, k, p2, a->ids, a->values);
    *ran = true;
    return st_cuda_launched(s, op);
}

static st_status topk_launch(st_stream *s, const st_topk_args *a, int k, const char *op) {
    if (!a->x.data || a->x.type != ST_TYPE_F32 || a->x.nb[0] != 4)
        return st_mod_fail(ST_UNSUPPORTED, "cuda %s: x must be contiguous F32", op);
    const int64_t V = a->x.ne[0], n = st_nrows(a->x);
    if (k < 1 || k > V) return st_mod_fail(ST_INVALID, "cuda %s: k = %d with %lld values per row", op, k, (long long)V);
    if (V > 0x7ffffffe) return st_mod_fail(ST_UNSUPPORTED, "cuda %s: row of %lld", op, (long long)V);
    if (!a->ids) return st_mod_fail(ST_INVALID, "cuda %s: NULL ids", op);
    if (!n) return ST_OK;
    if (n > 0x7fffffff) return st_mod_fail(ST_UNSUPPORTED, "cuda %s: %lld rows", op, (long long)n);
    ST_TRY(st_cuda_use(s->dev));
    if (k == 1 && V >= 16384 && n <= 65535 && (uint64_t)n * ST_AM_SLICES * 8 <= s->ws_bytes) {
        float *pv = (float *)s->ws;
        int *pi = (int *)(pv + n * ST_AM_SLICES);
        k_argmax_part<<<dim3(ST_AM_SLICES, (unsigned)n), 256, 0, s->s>>>(st_view_of(a->x), V, pv, pi);
        ST_TRY(st_cuda_launched(s, op));
        k_argmax_final<<<(unsigned)n, ST_WARP, 0, s->s>>>(pv, pi, ST_AM_SLICES, st_view_of(a->x), a->ids,
                                                          a->values);
        return st_cuda_launched(s, op);
    }
    bool sliced = false;
    ST_TRY(st_topk_sliced(s, a, k, V, n, op, &sliced));
    if (sliced) return ST_OK;
    const int threads = V >= 16384 ? 1024 : ST_SEL_THREADS;
    k_topk<<<(unsigned)n, threads, 0, s->s>>>(st_view_of(a->x), V, k, a->ids, a->values);
    return st_cuda_launched(s, op);
}

extern "C" st_status st_cuda_argmax(st_stream *s, const st_topk_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda argmax: NULL argument");
    return topk_launch(s, a, 1, "argmax");
}

extern "C" st_status st_cuda_topk(st_stream *s, const st_topk_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda topk: NULL argument");
    return topk_launch(s, a, a->k, "topk");
}

/* ---- ROUTER, ROUTER_GROUPS ------------------------------------------------------------------ */
#define ST_ROUTER_MAX_GROUPS 64

/* ROUTER_GROUPS: every selection score outside the g_used groups (of E / n_group contiguous
 * experts) whose two largest scores have the largest sum becomes -inf, as core/ref decides
 * (groups ranked like experts: larger sum first, NaN last, lower index on ties). */
__device__ void st_keep_best_groups(float *score, int E, int n_group, int g_used) {
    __shared__ float gsum[ST_ROUTER_MAX_GROUPS];
    __shared__ unsigned char kept[ST_ROUTER_MAX_GROUPS];
    const int per = E / n_group;
    if ((int)threadIdx.x < n_group) {
        float m1 = -INFINITY, m2 = -INFINITY;
        for (int e = threadIdx.x * per; e < ((int)threadIdx.x + 1) * per; e++) {
            const float v = score[e];
            if (v > m1) {
                m2 = m1;
                m1 = v;
            } else if (v > m2) {
                m2 = v;
            }
        }
        gsum[threadIdx.x] = per > 1 ? m1 + m2 : m1;
        kept[threadIdx.x] = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int j = 0; j < g_used; j++) {
            int best = -1;
            for (int g = 0; g < n_group; g++)
                if (!kept[g] && (best < 0 || st_before(gsum[g], g, gsum[best], best))) best = g;
            kept[best] = 1;
        }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x)
        if (!kept[e / per]) score[e] = -INFINITY;
    __syncthreads();
}

/* Dynamic shared memory: prob[E], score[E]. ids are written in selection order (descending
 * score = prob + bias), as core/ref does; weights are the unbiased probabilities. n_group > 1:
 * only the experts of the best g_used groups compete (ROUTER_GROUPS). */
__global__ void k_router(st_view logits, int E, int gating, const float *bias, int k, int normalize, float wscale,
                         int32_t *ids, float *weights, int n_group, int g_used) {
    extern __shared__ float sh[];
    __shared__ float sv[32];
    __shared__ int si[32];
    __shared__ float red[32];
    float *prob = sh, *score = sh + E;
    const int64_t t = blockIdx.x;
    const float *lr = (const float *)st_row(logits, t);
    if (gating == ST_ROUTER_SOFTMAX) {
        float mx = -INFINITY;
        int ii = 0;
        for (int e = threadIdx.x; e < E; e += blockDim.x) mx = fmaxf(mx, lr[e]); /* fmaxf skips NaN */
        st_block_best(mx, ii, sv, si);
        float sum = 0.0f;
        for (int e = threadIdx.x; e < E; e += blockDim.x) {
            const float p = expf(lr[e] - mx);
            prob[e] = p;
            sum += p;
        }
        sum = st_block_sum(sum, red);
        for (int e = threadIdx.x; e < E; e += blockDim.x) prob[e] /= sum;
    } else {
        for (int e = threadIdx.x; e < E; e += blockDim.x) prob[e] = 1.0f / (1.0f + expf(-lr[e]));
    }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) score[e] = bias ? prob[e] + bias[e] : prob[e];
    __syncthreads();
    if (n_group > 1) st_keep_best_groups(score, E, n_group, g_used);
    float pv = INFINITY;
    int pi = -1;
    for (int j = 0; j < k; j++) {
        float bv = NAN;
        int bi = 0x7fffffff;
        for (int e = threadIdx.x; e < E; e += blockDim.x) {
            const float v = score[e];
            if (st_before(pv, pi, v, e) && st_before(v, e, bv, bi)) {
                bv = v;
                bi = e;
            }
        }
        st_block_best(bv, bi, sv, si);
        if (threadIdx.x == 0) ids[t * k + j] = bi;
        pv = bv;
        pi = bi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t *id = ids + t * k;
        float *w = weights + t * k;
        float sum = 0.0f;
        for (int j = 0; j < k; j++) {
            w[j] = prob[id[j]];
            sum += w[j];
        }
        const float f = (normalize && sum > 0.0f ? 1.0f / sum : 1.0f) * wscale;
        for (int j = 0; j < k; j++) w[j] *= f;
    }
}

/* Warp per token for up to 256 experts and k <= 32 (decode and most MoE shapes): each lane
 * keeps PER = ceil(E/32) scores in registers and its best untaken one; a pick is one warp
 * reduction, after which only the winning lane looks for its next best. Picks the same experts
 * in the same order as k_router (the ranking is a strict order), with the same arithmetic. */
#define ST_ROUTER_WARP_MAX 256
/* The best of a lane's PER scores (expert lane + 32 q) not marked in `taken`: value v, id i
 * (INT_MAX when none is left) and its probability p. */
template <int PER>
__device__ __forceinline__ void st_lane_best(const float (&score)[PER], const float (&prob)[PER], unsigned taken,
                                             int lane, float &v, int &i, float &p) {
    v = NAN;
    i = 0x7fffffff;
    p = 0.0f;
#pragma unroll
    for (int q = 0; q < PER; q++)
        if (!(taken >> q & 1u) && st_before(score[q], lane + q * ST_WARP, v, i)) {
            v = score[q];
            i = lane + q * ST_WARP;
            p = prob[q];
        }
}

template <int PER>
__global__ void k_router_warp(st_view logits, int64_t n, int E, int gating, const float *bias, int k, int normalize,
                              float wscale, int32_t *ids, float *weights) {
    st_pdl_begin();
    const int64_t t = (int64_t)blockIdx.x * (blockDim.x / ST_WARP) + threadIdx.x / ST_WARP;
    const int lane = threadIdx.x % ST_WARP;
    if (t >= n) return;
    const float *lr = (const float *)st_row(logits, t);
    float prob[PER], score[PER];
#pragma unroll
    for (int j = 0; j < PER; j++) {
        const int e = lane + j * ST_WARP;
        prob[j] = e < E ? lr[e] : -INFINITY;
    }
    if (gating == ST_ROUTER_SOFTMAX) {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < PER; j++) mx = fmaxf(mx, prob[j]);
        mx = st_warp_max(mx);
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < PER; j++) {
            const int e = lane + j * ST_WARP;
            prob[j] = e < E ? expf(prob[j] - mx) : 0.0f;
            sum += prob[j];
        }
        sum = st_warp_sum(sum);
#pragma unroll
        for (int j = 0; j < PER; j++) prob[j] /= sum;
    } else {
#pragma unroll
        for (int j = 0; j < PER; j++) {
            const int e = lane + j * ST_WARP;
            prob[j] = e < E ? 1.0f / (1.0f + expf(-prob[j])) : 0.0f;
        }
    }
    unsigned taken = 0; /* bit j: this lane's element j is out (picked, or past E) */
#pragma unroll
    for (int j = 0; j < PER; j++) {
        const int e = lane + j * ST_WARP;
        score[j] = e < E ? (bias ? prob[j] + bias[e] : prob[j]) : NAN;
        if (e >= E) taken |= 1u << j;
    }
    /* this lane's best untaken element: value, expert id (INT_MAX: none), probability */
    float lv, lp;
    int li;
    st_lane_best<PER>(score, prob, taken, lane, lv, li, lp);
    float myw = 0.0f;
    int myid = 0;
    for (int j = 0; j < k; j++) {
        float bv = lv, bp = lp;
        int bi = li;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float w = __shfl_xor_sync(0xffffffffu, bv, o);
            const int jj = __shfl_xor_sync(0xffffffffu, bi, o);
            const float wp = __shfl_xor_sync(0xffffffffu, bp, o);
            if (st_before(w, jj, bv, bi)) {
                bv = w;
                bi = jj;
                bp = wp;
            }
        }
        if (lane == j) {
            myid = bi;
            myw = bp;
        }
        if (bi == li) { /* this lane's element was picked: its next best */
            taken |= 1u << ((li - lane) / ST_WARP);
            st_lane_best<PER>(score, prob, taken, lane, lv, li, lp);
        }
    }
    /* the same sum, in the same order, as k_router's thread 0 */
    float sum = 0.0f;
    for (int j = 0; j < k; j++) sum += __shfl_sync(0xffffffffu, myw, j);
    if (lane < k) {
        const float f = (normalize && sum > 0.0f ? 1.0f / sum : 1.0f) * wscale;
        ids[t * k + lane] = myid;
        weights[t * k + lane] = myw * f;
    }
}

/* The ROUTER arguments' checks, shared with ROUTER_GROUPS. */
static st_status st_router_check(const st_router_args *a, const char *op) {
    if (!a->logits.data || a->logits.type != ST_TYPE_F32 || a->logits.nb[0] != 4)
        return st_mod_fail(ST_UNSUPPORTED, "cuda %s: logits must be contiguous F32", op);
    if (a->gating != ST_ROUTER_SOFTMAX && a->gating != ST_ROUTER_SIGMOID)
        return st_mod_fail(ST_INVALID, "cuda %s: gating %u", op, a->gating);
    const int64_t E = a->logits.ne[0], n = st_nrows(a->logits);
    if (a->k < 1 || a->k > E) return st_mod_fail(ST_INVALID, "cuda %s: k = %d of %lld experts", op, a->k, (long long)E);
    if (E > 8192) return st_mod_fail(ST_UNSUPPORTED, "cuda %s: %lld experts (max 8192)", op, (long long)E);
    if (!a->ids || !a->weights) return st_mod_fail(ST_INVALID, "cuda %s: NULL outputs", op);
    if (n > 0x7fffffff) return st_mod_fail(ST_UNSUPPORTED, "cuda %s: %lld rows", op, (long long)n);
    return ST_OK;
}

/* The block-per-token router (any E up to 8192; groups when n_group > 1). */
static st_status st_router_block(st_stream *s, const st_router_args *a, int n_group, int g_used, const char *op) {
    const int64_t E = a->logits.ne[0], n = st_nrows(a->logits);
    const size_t smem = (size_t)E * 2 * sizeof(float);
    if (smem > 48 * 1024)
        ST_TRY(st_cuda_status(cudaFuncSetAttribute(k_router, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                              "router: cudaFuncSetAttribute", s->dev));
    k_router<<<(unsigned)n, ST_SEL_THREADS, smem, s->s>>>(st_view_of(a->logits), (int)E, (int)a->gating, a->bias, a->k,
                                                          a->normalize, a->weight_scale, a->ids, a->weights, n_group,
                                                          g_used);
    return st_cuda_launched(s, op);
}

extern "C" st_status st_cuda_router(st_stream *s, const st_router_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda router: NULL argument");
    ST_TRY(st_router_check(a, "router"));
    const int64_t E = a->logits.ne[0], n = st_nrows(a->logits);
    if (!n) return ST_OK;
    ST_TRY(st_cuda_use(s->dev));
    if (E <= ST_ROUTER_WARP_MAX && a->k <= ST_WARP) {
        const dim3 grid(st_blocks(n, 4)), block(4 * ST_WARP);
        const st_view lv = st_view_of(a->logits);
        void (*kern)(st_view, int64_t, int, int, const float *, int, int, float, int32_t *, float *) =
            E <= 64 ? k_router_warp<2> : E <= 128 ? k_router_warp<4> : k_router_warp<8>;
        st_launch(s, kern, grid, block, 0, lv, n, (int)E, (int)a->gating, a->bias, a->k, a->normalize, a->weight_scale,
                  a->ids, a->weights);
        /* ids and weights are written: keep the 8-bit rows unless one of them overlaps */
        st_cuda_q8_keep_unless(s, a->ids, (uint64_t)n * a->k * 4);
        if (s->q8_keep) st_cuda_q8_keep_unless(s, a->weights, (uint64_t)n * a->k * 4);
        return st_cuda_launched(s, "router");
    }
    return st_router_block(s, a, 1, 1, "router");
}

extern "C" st_status st_cuda_router_groups(st_stream *s, const st_router_groups_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda router_groups: NULL argument");
    const st_router_args *b = &a->base;
    ST_TRY(st_router_check(b, "router_groups"));
    const int64_t E = b->logits.ne[0], n = st_nrows(b->logits);
    if (a->n_group < 1 || a->n_group > ST_ROUTER_MAX_GROUPS || E % a->n_group || a->n_group_used < 1 ||
        a->n_group_used > a->n_group || (int64_t)a->n_group_used * (E / a->n_group) < b->k)
        return st_mod_fail(ST_INVALID, "cuda router_groups: %d groups (%d used, at most %d) of %lld experts for k = %d",
                           a->n_group, a->n_group_used, ST_ROUTER_MAX_GROUPS, (long long)E, b->k);
    if (!n) return ST_OK;
    ST_TRY(st_cuda_use(s->dev));
    return st_router_block(s, b, a->n_group, a->n_group_used, "router_groups");
}
