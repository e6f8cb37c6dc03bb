/* SPDX-License-Identifier: Apache-2.0 */
/* Fast GEMV for decode: MATMUL with up to 32 activation rows (STRATA_CUDA_GEMV_COLS) in column
 * groups of 8, and the expert ops with up to 64 assignments (a block row each) or up to 512
 * (STRATA_CUDA_GROUPED_MAX) grouped by slot after a device-side sort, so each expert's weights
 * are read once per 8 of its assignments: the batched decode of 9-64 sequences.
 * Quantized weights (Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K, MXFP4): the activations are quantized once per call
 * to 8 bits (one float scale per 32 elements, in the CPU module's block form for the weight
 * format: cuda_gemv.cuh) into the stream workspace, and every
 * weight unit (32 weights) is dotted with integer dp4a. F16/BF16 weights: 16-byte loads dotted
 * with F32 activations. Each block of 128 threads covers ST_GV_ROWS rows per group of `tpr`
 * threads (tpr = 32, 64 or 128 chosen from the row length), so short rows still fill the GPU;
 * partial sums meet through warp shuffles and shared memory (no atomics). Other formats and
 * shapes return false from the entry points and run on the generic kernels. */
#include "cuda/cuda_gvf.cuh"

#define ST_GV_THREADS 128
#define ST_GV_ROWS 2

/* ---- activation quantization ------------------------------------------------------------ */
/* Row r of x [n_x][K] -> q[r*K + k] int8 and d[r*(K/32) + b] in form `kind` (cuda_gemv.cuh).
 * One warp per block of 32, lane = element; a block of 8 warps is one 256-element super-block
 * (ST_Q8_256 needs K % 256 == 0, which every K-quant row has). */
__global__ void __launch_bounds__(8 * ST_WARP) k_q8_act(st_view x, int64_t K, int8_t *q, float *d, int kind) {
    __shared__ float wmax[8];
    st_pdl_begin();
    const int64_t r = blockIdx.y;
    const int warp = threadIdx.x / ST_WARP, lane = threadIdx.x % ST_WARP;
    const int64_t b = (int64_t)blockIdx.x * 8 + warp;
    if (kind == ST_Q8_32 && b * 32 >= K) return;
    const float v = st_ld(st_row(x, r), x.type, b * 32 + lane);
    float amax = st_warp_max(fabsf(v));
    if (kind == ST_Q8_256) {
        if (lane == 0) wmax[warp] = amax;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < 8; i++) amax = fmaxf(amax, wmax[i]);
    }
    float dd, id;
    st_q8_scales(amax, kind, &dd, &id);
    q[r * K + b * 32 + lane] = (int8_t)st_q8_one(v, id);
    if (lane == 0) d[r * (K / 32) + b] = dd;
}

/* ---- the kernel --------------------------------------------------------------------------- */
/* What one launch computes. DENSE: out[c][m] = W[m] . x[c] for the NC activation rows c of
 * column group blockIdx.y. MOE: row a = blockIdx.y of MOE_MATMUL. GATE_UP: row a of
 * MOE_GATE_UP, two weights (W, W2) dotted with the same activations, out = silu(gate) * up.
 * GMOE / GGATE: the same for the (at most NC) assignments of one slot's tile blockIdx.y from the
 * device-side sort (k_moe.cu), so a slot's weights are read once for all of them. DOWN: token
 * t = blockIdx.y of MOE_DOWN, out[t][m] = sum_j wt[j] W_j[m] . x[t k + j]; the (choice, unit)
 * pairs of a row are spread over the row's threads, so every lane works even when a row has
 * few units. */
enum { ST_GV_DENSE = 0, ST_GV_MOE = 1, ST_GV_GATE_UP = 2, ST_GV_DOWN = 3, ST_GV_GMOE = 4, ST_GV_GGATE = 5 };
#define ST_GV_MAX_K 16  /* choices per token the DOWN kernel takes */
#define ST_GV_GROUP_NC 8 /* assignments per tile of the grouped modes, columns per dense group */

template <int MODE> struct st_gv_mode {
    static constexpr bool gate = MODE == ST_GV_GATE_UP || MODE == ST_GV_GGATE;  /* two weights, SwiGLU */
    static constexpr bool grouped = MODE == ST_GV_GMOE || MODE == ST_GV_GGATE;  /* one slot's tile */
    static constexpr int nw = gate ? 2 : 1;                                     /* weights per row */
};

struct st_gv_params {
    const uint8_t *W, *W2;
    int64_t w_nb1, w_nb2, M;
    int units, tpr, n;      /* units per row, threads per row group, activation rows (dense) */
    int cols_x;             /* DENSE / grouped: column group or tile blockIdx.x, row block blockIdx.y
                               (else the reverse) */
    const int8_t *xq;       /* q8 activations [n_x][K] (quantized formats) */
    const float *xd;        /* their scales [n_x][K/32] */
    int64_t K;
    st_view x;              /* F32 activations (plain formats) */
    st_view out;
    /* MOE / GATE_UP: assignment a = blockIdx.y */
    const int32_t *slot_table, *expert, *x_row;
    const float *scale;
    int64_t n_x;            /* rows of x */
    /* GMOE / GGATE: assignments sorted by slot, tiles (slot, first, count) and their number */
    const int *list;
    const int3 *tiles;
    const int *n_tiles;
    /* DOWN: k choices of token t = blockIdx.y, expert ids and weights [n][k] */
    int k, accumulate;
    const int32_t *ids;
    const float *wts;
};

/* The columns of this block (every mode but DOWN): x row xr[c] and output row oa[c] for
 * c < nc, and W (W2) moved to the slot's weights. False when the block has nothing to do
 * (uniform over the block). */
template <int NC, int MODE>
__device__ __forceinline__ bool st_gv_columns(const st_gv_params &p, const uint8_t *&W, const uint8_t *&W2,
                                              int (&xr)[NC], int (&oa)[NC], int &nc) {
    if (MODE == ST_GV_DENSE) {
        const int c0 = (int)(p.cols_x ? blockIdx.x : blockIdx.y) * NC;
        nc = p.n - c0 < NC ? p.n - c0 : NC;
#pragma unroll
        for (int c = 0; c < NC; c++) xr[c] = oa[c] = c0 + (c < nc ? c : 0);
        return nc > 0;
    }
    int32_t slot, first = (int)blockIdx.y;
    nc = 1;
    if (st_gv_mode<MODE>::grouped) {
        const int ti = (int)(p.cols_x ? blockIdx.x : blockIdx.y);
        if (ti >= *p.n_tiles) return false;
        const int3 tile = p.tiles[ti];
        slot = tile.x;
        first = tile.y;
        nc = tile.z < NC ? tile.z : NC;
    } else {
        const int32_t e = p.expert[first], row = p.x_row[first];
        slot = e >= 0 ? p.slot_table[e] : -1;
        if (slot < 0 || row < 0 || row >= p.n_x) return false;
    }
    W += (int64_t)slot * p.w_nb2;
    if (st_gv_mode<MODE>::gate) W2 += (int64_t)slot * p.w_nb2;
#pragma unroll
    for (int c = 0; c < NC; c++) {
        oa[c] = st_gv_mode<MODE>::grouped ? p.list[first + (c < nc ? c : 0)] : first;
        xr[c] = p.x_row[oa[c]];
    }
    return true;
}

/* acc[q][r][c] = this thread's share of W_q[m0 + r] . x[xr[c]] over its units. */
template <typename F, int NW, int NC>
__device__ __forceinline__ void st_gv_rows(const st_gv_params &p, const uint8_t *W, const uint8_t *W2, int64_t m0,
                                           int t, const int (&xr)[NC], int nc, float (&acc)[NW][ST_GV_ROWS][NC]) {
    const uint8_t *wr[NW][ST_GV_ROWS];
#pragma unroll
    for (int r = 0; r < ST_GV_ROWS; r++) {
        const int64_t mr = m0 + r < p.M ? m0 + r : p.M - 1;
        wr[0][r] = W + mr * p.w_nb1;
        if (NW == 2) wr[NW - 1][r] = W2 + mr * p.w_nb1;
    }
#pragma unroll 2
    for (int u = t; u < p.units; u += p.tpr) {
        typename F::wt w[NW][ST_GV_ROWS];
#pragma unroll
        for (int q = 0; q < NW; q++)
#pragma unroll
            for (int r = 0; r < ST_GV_ROWS; r++) F::load(wr[q][r], u, w[q][r]);
#pragma unroll
        for (int c = 0; c < NC; c++) {
            if (c < nc) {
                typename F::xt xv;
                if constexpr (F::qa) {
                    const int64_t qr = (int64_t)xr[c];
                    st_q8row q8{p.xq + qr * p.K, p.xd + qr * (p.K / 32)};
                    F::loadx(q8, u, xv);
                } else {
                    F::loadx((const float *)st_row(p.x, xr[c]), u, xv);
                }
#pragma unroll
                for (int q = 0; q < NW; q++)
#pragma unroll
                    for (int r = 0; r < ST_GV_ROWS; r++) acc[q][r][c] += F::dot(w[q][r], xv, u);
            }
        }
    }
}

/* DOWN: acc[0][r][0] = this thread's share of sum_j wt[j] W_j[m0 + r] . x[a k + j]. */
template <typename F, int NC>
__device__ __forceinline__ void st_gv_down(const st_gv_params &p, int a, int64_t m0, int t,
                                           const uint8_t *const *dw, const float *dwt,
                                           float (&acc)[1][ST_GV_ROWS][NC]) {
    const int total = p.k * p.units;
#pragma unroll 2
    for (int idx = t; idx < total; idx += p.tpr) {
        const int j = idx / p.units, u = idx - j * p.units;
        const uint8_t *Wj = dw[j];
        if (!Wj) continue;
        typename F::wt w[ST_GV_ROWS];
#pragma unroll
        for (int r = 0; r < ST_GV_ROWS; r++) F::load(Wj + (m0 + r < p.M ? m0 + r : p.M - 1) * p.w_nb1, u, w[r]);
        typename F::xt xv;
        const int64_t qr = (int64_t)a * p.k + j;
        if constexpr (F::qa) {
            st_q8row q8{p.xq + qr * p.K, p.xd + qr * (p.K / 32)};
            F::loadx(q8, u, xv);
        } else {
            F::loadx((const float *)st_row(p.x, qr), u, xv);
        }
#pragma unroll
        for (int r = 0; r < ST_GV_ROWS; r++) acc[0][r][0] += dwt[j] * F::dot(w[r], xv, u);
    }
}

/* Stores the finished sums v[q] of (row m, column c) as the mode says. */
template <int NC, int MODE>
__device__ __forceinline__ void st_gv_store(const st_gv_params &p, int64_t m, int c, const int (&oa)[NC],
                                            const float *v) {
    int a = oa[0];
#pragma unroll
    for (int cc = 1; cc < NC; cc++)
        if (cc == c) a = oa[cc];
    char *o = st_row(p.out, a);
    if (st_gv_mode<MODE>::gate) {
        st_st(o, p.out.type, m, v[0] / (1.0f + expf(-v[0])) * v[1]);
    } else if (MODE == ST_GV_DOWN) {
        st_st(o, p.out.type, m, (p.accumulate ? st_ld(o, p.out.type, m) : 0.0f) + v[0]);
    } else if (MODE == ST_GV_DENSE) {
        st_st(o, p.out.type, m, v[0]);
    } else {
        st_st(o, p.out.type, m, p.scale ? v[0] * p.scale[a] : v[0]);
    }
}

template <int T, int NC, int MODE>
__global__ void __launch_bounds__(ST_GV_THREADS) k_gv(st_gv_params p) {
    typedef st_gvf<T> F;
    constexpr int NW = st_gv_mode<MODE>::nw;
    constexpr int NR = ST_GV_ROWS * NC * NW; /* sums per thread */
    __shared__ float red[ST_GV_THREADS / ST_WARP][NR];
    __shared__ const uint8_t *dw[ST_GV_MAX_K]; /* DOWN: slot base of each choice (NULL: skipped) */
    __shared__ float dwt[ST_GV_MAX_K];
    st_pdl_begin();
    const int tpr = p.tpr, t = threadIdx.x % tpr, g = threadIdx.x / tpr;
    const int64_t rb = p.cols_x ? blockIdx.y : blockIdx.x;
    const int64_t m0 = (rb * (ST_GV_THREADS / tpr) + g) * ST_GV_ROWS;
    const uint8_t *W = p.W, *W2 = p.W2;
    int xr[NC], oa[NC], nc = 1;
    float acc[NW][ST_GV_ROWS][NC];
#pragma unroll
    for (int q = 0; q < NW; q++)
#pragma unroll
        for (int r = 0; r < ST_GV_ROWS; r++)
#pragma unroll
            for (int c = 0; c < NC; c++) acc[q][r][c] = 0.0f;
    if (MODE == ST_GV_DOWN) {
        const int a = (int)blockIdx.y;
        if ((int)threadIdx.x < p.k) {
            const int32_t e = p.ids[a * p.k + threadIdx.x];
            const int32_t slot = e >= 0 ? p.slot_table[e] : -1;
            dw[threadIdx.x] = slot >= 0 ? W + (int64_t)slot * p.w_nb2 : NULL;
            dwt[threadIdx.x] = p.wts[a * p.k + threadIdx.x];
        }
        __syncthreads();
#pragma unroll
        for (int c = 0; c < NC; c++) oa[c] = a;
        if constexpr (NW == 1) {
            if (m0 < p.M) st_gv_down<F, NC>(p, a, m0, t, dw, dwt, acc);
        }
    } else {
        if (!st_gv_columns<NC, MODE>(p, W, W2, xr, oa, nc)) return;
        if (m0 < p.M) st_gv_rows<F, NW, NC>(p, W, W2, m0, t, xr, nc, acc);
    }
    const int warp = threadIdx.x / ST_WARP, lane = threadIdx.x % ST_WARP;
#pragma unroll
    for (int q = 0; q < NW; q++)
#pragma unroll
        for (int r = 0; r < ST_GV_ROWS; r++)
#pragma unroll
            for (int c = 0; c < NC; c++) acc[q][r][c] = st_warp_sum(acc[q][r][c]);
    if (tpr > ST_WARP) {
        if (lane == 0) {
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int r = 0; r < ST_GV_ROWS; r++)
#pragma unroll
                    for (int c = 0; c < NC; c++) red[warp][(q * ST_GV_ROWS + r) * NC + c] = acc[q][r][c];
        }
        __syncthreads();
    }
    /* the first warp of each group writes; lane i writes (row, column) entry i = r*NC + c */
    if (t >= ST_WARP) return;
    const int i = lane;
    if (i >= ST_GV_ROWS * NC) return;
    const int r = i / NC, c = i % NC;
    if (c >= nc || m0 + r >= p.M) return;
    float v[NW];
#pragma unroll
    for (int q = 0; q < NW; q++) {
        const int e = (q * ST_GV_ROWS + r) * NC + c;
        v[q] = 0.0f;
        if (tpr > ST_WARP) {
            const int w0 = g * (tpr / ST_WARP);
            for (int k = 0; k < tpr / ST_WARP; k++) v[q] += red[w0 + k][e];
        } else {
            /* every lane holds every sum after the shuffles; take entry e */
#pragma unroll
            for (int qq = 0; qq < NW; qq++)
#pragma unroll
                for (int rr = 0; rr < ST_GV_ROWS; rr++)
#pragma unroll
                    for (int cc = 0; cc < NC; cc++)
                        if ((qq * ST_GV_ROWS + rr) * NC + cc == e) v[q] = acc[qq][rr][cc];
        }
    }
    st_gv_store<NC, MODE>(p, m0 + r, c, oa, v);
}

/* ---- host side -------------------------------------------------------------------------- */
static bool st_gv_format(uint32_t t) {
    switch (t) {
    case ST_TYPE_Q4_0: case ST_TYPE_Q5_0: case ST_TYPE_Q8_0: case ST_TYPE_Q4_K: case ST_TYPE_Q5_K:
    case ST_TYPE_Q6_K: case ST_TYPE_MXFP4: case ST_TYPE_F16: case ST_TYPE_BF16: return true;
    default: return false;
    }
}
static bool st_gv_quantized(uint32_t t) { return t != ST_TYPE_F16 && t != ST_TYPE_BF16; }
static int st_gv_epu(uint32_t t) { return st_gv_quantized(t) ? 32 : 8; }
/* Weight loads need 16-byte alignment (uint4 formats), none (MXFP4: byte and word loads) or
 * 2-byte alignment (the others: a 16-bit scale). */
static bool st_gv_aligned(uint32_t t, uintptr_t addr, int64_t nb1, int64_t nb2) {
    const int64_t al = (t == ST_TYPE_Q4_K || t == ST_TYPE_Q5_K || !st_gv_quantized(t)) ? 16
                       : t == ST_TYPE_MXFP4                                              ? 1
                                                                                         : 2;
    return addr % al == 0 && nb1 % al == 0 && nb2 % al == 0;
}
static int st_gv_tpr(int units) { return units <= 32 ? 32 : units <= 64 ? 64 : 128; }

/* Quantize the n_x rows of x into the stream workspace, or reuse what the previous GEMV on
 * this stream left there for the same rows (see st_stream.q8_valid); false when they do not
 * fit. */
static uint64_t st_q8_qbytes(int64_t n_x, int64_t K) { return ((uint64_t)(n_x * K) + 255) & ~(uint64_t)255; }
uint64_t st_q8_bytes(int64_t n_x, int64_t K) {
    return st_q8_qbytes(n_x, K) + (uint64_t)(n_x * (K / 32)) * sizeof(float);
}
bool st_q8_layout(st_stream *s, int64_t n_x, int64_t K, int8_t **q, float **d) {
    const uint64_t qbytes = st_q8_qbytes(n_x, K);
    if (st_q8_bytes(n_x, K) > s->ws_bytes || n_x > 65535) return false;
    *q = (int8_t *)s->ws;
    *d = (float *)((char *)s->ws + qbytes);
    return true;
}

void st_q8_mark(st_stream *s, const st_tensor &x, int64_t n_x, int64_t K, int kind) {
    s->q8_src = x.data;
    s->q8_kind = kind;
    s->q8_type = x.type;
    s->q8_nb1 = x.nb[1];
    s->q8_rows = n_x;
    s->q8_K = K;
    s->q8_valid = n_x == 1 || x.ne[2] * x.ne[3] == 1;
}

/* Quantize the n_x rows of x into the stream workspace, or reuse what the previous op on this
 * stream left there for the same rows (see st_stream.q8_valid); false when they do not fit. */
static bool st_gv_quantize(st_stream *s, const st_tensor &x, int64_t n_x, int64_t K, int kind, st_gv_params &p) {
    int8_t *q;
    float *d;
    if ((kind == ST_Q8_256 && K % 256) || !st_q8_layout(s, n_x, K, &q, &d)) return false;
    p.xq = q;
    p.xd = d;
    p.n_x = n_x;
    s->q8_pref = kind;
    if (s->q8_valid && s->q8_kind == kind && s->q8_src == x.data && s->q8_type == x.type && s->q8_nb1 == x.nb[1] &&
        s->q8_rows == n_x && s->q8_K == K && (n_x == 1 || (x.ne[2] * x.ne[3] == 1)))
        return true;
    dim3 grid(st_blocks(K / 32, 8), (unsigned)n_x);
    st_launch(s, k_q8_act, grid, dim3(8 * ST_WARP), 0, st_view_of(x), K, q, d, kind);
    st_q8_mark(s, x, n_x, K, kind);
    return true;
}

/* Keeps the quantized rows valid across this GEMV's launch check unless its output overlaps
 * them. */
static void st_gv_keep(st_stream *s, const st_tensor &x, const st_tensor &out) {
    const char *x0 = (const char *)x.data, *x1 = x0 + s->q8_rows * x.nb[1];
    const char *o0 = (const char *)out.data, *o1 = o0 + st_nrows(out) * out.nb[1];
    s->q8_keep = s->q8_valid && (o1 <= x0 || o0 >= x1);
}

template <int T> static void st_gv_launch(const st_gv_params &p, dim3 grid, const st_stream *s, int mode) {
    const dim3 block(ST_GV_THREADS);
    switch (mode) {
    case ST_GV_MOE: st_launch(s, k_gv<T, 1, ST_GV_MOE>, grid, block, 0, p); break;
    case ST_GV_GATE_UP: st_launch(s, k_gv<T, 1, ST_GV_GATE_UP>, grid, block, 0, p); break;
    case ST_GV_DOWN: st_launch(s, k_gv<T, 1, ST_GV_DOWN>, grid, block, 0, p); break;
    case ST_GV_GMOE: st_launch(s, k_gv<T, ST_GV_GROUP_NC, ST_GV_GMOE>, grid, block, 0, p); break;
    case ST_GV_GGATE: st_launch(s, k_gv<T, ST_GV_GROUP_NC, ST_GV_GGATE>, grid, block, 0, p); break;
    default:
        if (p.n == 1) st_launch(s, k_gv<T, 1, ST_GV_DENSE>, grid, block, 0, p);
        else st_launch(s, k_gv<T, ST_GV_GROUP_NC, ST_GV_DENSE>, grid, block, 0, p);
    }
}

static void st_gv_dispatch(uint32_t t, const st_gv_params &p, dim3 grid, const st_stream *s, int mode) {
    switch (t) {
    case ST_TYPE_Q4_0: st_gv_launch<ST_TYPE_Q4_0>(p, grid, s, mode); break;
    case ST_TYPE_Q5_0: st_gv_launch<ST_TYPE_Q5_0>(p, grid, s, mode); break;
    case ST_TYPE_MXFP4: st_gv_launch<ST_TYPE_MXFP4>(p, grid, s, mode); break;
    case ST_TYPE_Q8_0: st_gv_launch<ST_TYPE_Q8_0>(p, grid, s, mode); break;
    case ST_TYPE_Q4_K: st_gv_launch<ST_TYPE_Q4_K>(p, grid, s, mode); break;
    case ST_TYPE_Q5_K: st_gv_launch<ST_TYPE_Q5_K>(p, grid, s, mode); break;
    case ST_TYPE_Q6_K: st_gv_launch<ST_TYPE_Q6_K>(p, grid, s, mode); break;
    case ST_TYPE_F16: st_gv_launch<ST_TYPE_F16>(p, grid, s, mode); break;
    case ST_TYPE_BF16: st_gv_launch<ST_TYPE_BF16>(p, grid, s, mode); break;
    default: break;
    }
}

static bool st_gv_env_off(void) {
    static int off = -1;
    if (off < 0) {
        const char *e = getenv("STRATA_CUDA_NO_FAST_GEMV");
        off = e && *e && strcmp(e, "0") ? 1 : 0;
    }
    return off != 0;
}

/* An integer setting from the environment in [lo, hi], else def. */
static int st_gv_env_int(const char *name, int def, int lo, int hi) {
    const char *e = getenv(name);
    if (!e || !*e) return def;
    const long v = strtol(e, NULL, 10);
    return v < lo ? lo : v > hi ? hi : (int)v;
}
/* Most activation rows MATMUL takes here (column groups of 8, each reading the weights again,
 * mostly from L2); more go to the tensor-core tiles. STRATA_CUDA_GEMV_COLS sets it (8..64). */
static int st_gv_dense_max(void) {
    static int v = -1;
    if (v < 0) v = st_gv_env_int("STRATA_CUDA_GEMV_COLS", 32, 8, 64);
    return v;
}
/* Most assignments the grouped expert GEMV takes (tiles of 8 assignments of one slot); more
 * go to the tensor-core tiles. STRATA_CUDA_GROUPED_MAX sets it (64..4096). */
static int st_gv_grouped_max(void) {
    static int v = -1;
    if (v < 0) v = st_gv_env_int("STRATA_CUDA_GROUPED_MAX", 512, ST_GV_MOE_MAX_ASSIGN, 4096);
    return v;
}

/* The part every entry shares: format, shape and alignment checks, the weight and activation
 * fields of p (slot stride nb2, 0 for a plain matrix) and the q8 activations of n_x rows of x.
 * False when the fast path does not take the call (nothing launched then). */
static bool st_gv_prepare(st_stream *s, const st_tensor &w, int64_t nb2, const st_tensor &x, int64_t n_x,
                          const st_tensor &out, st_gv_params &p) {
    const uint32_t t = w.type;
    const int64_t K = w.ne[0];
    if (st_gv_env_off() || !st_gv_format(t) || K % st_gv_epu(t) || K / st_gv_epu(t) > 0x7fffffff) return false;
    if (!st_gv_aligned(t, (uintptr_t)w.data, w.nb[1], nb2)) return false;
    memset(&p, 0, sizeof p);
    p.W = (const uint8_t *)w.data;
    p.w_nb1 = w.nb[1];
    p.w_nb2 = nb2;
    p.M = w.ne[1];
    p.K = K;
    p.units = (int)(K / st_gv_epu(t));
    p.tpr = st_gv_tpr(p.units);
    p.n = 1;
    p.x = st_view_of(x);
    p.out = st_view_of(out);
    p.n_x = n_x;
    if (st_gv_quantized(t)) return st_gv_quantize(s, x, n_x, K, st_q8_kind_of(t), p);
    return x.type == ST_TYPE_F32 && x.nb[1] % 16 == 0 && (uintptr_t)x.data % 16 == 0 &&
           (x.ne[2] * x.ne[3] == 1 || (x.nb[2] % 16 == 0 && x.nb[3] % 16 == 0));
}

/* Launches mode over `cols` block columns of M rows; keeps the q8 rows of x unless out overlaps.
 * The column groups of a dense call (the tiles of a grouped one) are the fast grid index when
 * the rows allow it, so the groups of one row block (the tiles of one slot) run together and
 * share its weights in L2 (one read from memory). */
static st_status st_gv_run(st_stream *s, uint32_t t, st_gv_params &p, unsigned cols, int mode, const st_tensor &x,
                           const st_tensor &out, const char *op) {
    const int64_t rows_per_block = (int64_t)(ST_GV_THREADS / p.tpr) * ST_GV_ROWS;
    const unsigned row_blocks = st_blocks(p.M, (int)rows_per_block);
    p.cols_x = (mode == ST_GV_DENSE || mode == ST_GV_GMOE || mode == ST_GV_GGATE) && cols > 1 && row_blocks <= 65535;
    dim3 grid = p.cols_x ? dim3(cols, row_blocks) : dim3(row_blocks, cols);
    st_gv_dispatch(t, p, grid, s, mode);
    if (st_gv_quantized(t)) st_gv_keep(s, x, out);
    return st_cuda_launched(s, op);
}

bool st_gemv_fast(st_stream *s, const st_matmul_args *a, st_status *st) {
    const int64_t n = st_nrows(a->x);
    st_gv_params p;
    if (n < 1 || n > st_gv_dense_max() || !st_gv_prepare(s, a->w, 0, a->x, n, a->out, p)) return false;
    p.n = (int)n;
    *st = st_gv_run(s, a->w.type, p, st_blocks(n, ST_GV_GROUP_NC), ST_GV_DENSE, a->x, a->out, "matmul");
    return true;
}

/* Where the grouped modes' sort goes: the workspace past the q8 rows of x. False when the
 * sort's arrays do not fit there. */
static bool st_gv_group_carve(st_stream *s, int64_t n_x, int64_t K, int64_t n_slots, int n_assign, st_moe_sorted *q) {
    const uint64_t off = (st_q8_bytes(n_x, K) + 15) & ~(uint64_t)15;
    return n_slots <= 65535 && st_moe_sorted_carve(s, off, n_slots, n_assign, ST_GV_GROUP_NC, q);
}

/* The expert modes: one block row per assignment (q NULL), or the assignments sorted by slot
 * on the device and one block row per tile of at most ST_GV_GROUP_NC of one slot. */
static st_status st_gv_run_moe(st_stream *s, uint32_t t, st_gv_params &p, const st_moe_sorted *q, int n_assign,
                               int64_t n_slots, bool gate, const st_tensor &x, const st_tensor &out, const char *op) {
    if (!q)
        return st_gv_run(s, t, p, (unsigned)n_assign, gate ? ST_GV_GATE_UP : ST_GV_MOE, x, out, op);
    st_moe_sort_launch(s, p.slot_table, p.expert, p.x_row, p.n_x, n_assign, n_slots, *q);
    p.list = q->list;
    p.tiles = q->tiles;
    p.n_tiles = q->n_tiles;
    return st_gv_run(s, t, p, (unsigned)q->max_tiles, gate ? ST_GV_GGATE : ST_GV_GMOE, x, out, op);
}

bool st_moe_gemv_fast(st_stream *s, const st_moe_matmul_args *a, st_status *st) {
    const int A = a->n_assign;
    const int64_t n_x = st_nrows(a->x), n_slots = a->w.ne[2];
    st_moe_sorted q;
    const bool grouped = A > ST_GV_MOE_MAX_ASSIGN;
    if (A > st_gv_grouped_max() || (grouped && !st_gv_group_carve(s, n_x, a->w.ne[0], n_slots, A, &q))) return false;
    st_gv_params p;
    if (!st_gv_prepare(s, a->w, a->w.nb[2], a->x, n_x, a->out, p)) return false;
    p.slot_table = a->slot_table;
    p.expert = a->expert;
    p.x_row = a->x_row;
    p.scale = a->scale;
    *st = st_gv_run_moe(s, a->w.type, p, grouped ? &q : NULL, A, n_slots, false, a->x, a->out, "moe_matmul");
    return true;
}

bool st_moe_gateup_gemv_fast(st_stream *s, const st_moe_gate_up_args *a, st_status *st) {
    const st_tensor &g = a->w_gate, &u = a->w_up;
    const int A = a->n_assign;
    const int64_t n_x = st_nrows(a->x), n_slots = g.ne[2];
    if (A > st_gv_grouped_max() || u.nb[1] != g.nb[1] || u.nb[2] != g.nb[2] ||
        !st_gv_aligned(u.type, (uintptr_t)u.data, u.nb[1], u.nb[2]))
        return false;
    st_moe_sorted q;
    const bool grouped = A > ST_GV_MOE_MAX_ASSIGN;
    if (grouped && !st_gv_group_carve(s, n_x, g.ne[0], n_slots, A, &q)) return false;
    st_gv_params p;
    if (!st_gv_prepare(s, g, g.nb[2], a->x, n_x, a->out, p)) return false;
    p.W2 = (const uint8_t *)u.data;
    p.slot_table = a->slot_table;
    p.expert = a->expert;
    p.x_row = a->x_row;
    *st = st_gv_run_moe(s, g.type, p, grouped ? &q : NULL, A, n_slots, true, a->x, a->out, "moe_gate_up");
    return true;
}

bool st_moe_down_gemv_fast(st_stream *s, const st_moe_down_args *a, st_status *st) {
    const int64_t n = st_nrows(a->out), A = n * a->k;
    st_gv_params p;
    if (a->k > ST_GV_MAX_K || A > ST_GV_MOE_MAX_ASSIGN || !st_gv_prepare(s, a->w, a->w.nb[2], a->x, A, a->out, p))
        return false;
    p.tpr = st_gv_tpr(a->k * p.units); /* the row's threads share its (choice, unit) pairs */
    p.k = a->k;
    p.accumulate = a->accumulate;
    p.ids = a->ids;
    p.wts = a->weights;
    p.slot_table = a->slot_table;
    *st = st_gv_run(s, a->w.type, p, (unsigned)n, ST_GV_DOWN, a->x, a->out, "moe_down");
    return true;
}
