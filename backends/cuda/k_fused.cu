/* SPDX-License-Identifier: Apache-2.0 */
/* Fused ops (ABI 1.1).
 * ATTN_PREP: one warp per (token, head) row, four rows per block, all of one token: Q and K
 * heads are normalized over head_dim (when their weight is given) and rotated, with the pair
 * angles of the token computed once per block; Q heads go to q_out, K heads to their cache
 * cell, V heads straight to theirs (F32/F16/BF16, or Q8_0 with one 32-element block per lane
 * column: the lanes' j-th elements form block j).
 * MOE_GATE_UP / MOE_DOWN: the decode sizes run on the fused GEMV kernels (k_gemv.cu); larger
 * ones on MOE_MATMUL's tiles into the caller's scratch, then a SwiGLU or weighted sum that skips
 * non-resident experts, as the op's contract says. */
#include "cuda/cuda_gemv.cuh"
#include "cuda/cuda_rope.cuh"

#define ST_AP_WARPS 4
#define ST_AP_MAX_HD 256

struct st_ap_params {
    st_view q, k, v, q_out;
    const float *qw, *kw;   /* norm weights or NULL */
    char *kc, *vc;          /* caches */
    int kct, vct;
    int64_t kc_nb1, kc_nb2, vc_nb1, vc_nb2, n_cells;
    const int32_t *cells, *pos;
    int64_t n, H, Hk, D, Dv;
    float eps;
    st_rope_freq f;
};

/* Stores v[j] (element lane + 32 j, below dim) into a cache row of type ct; Q8_0 rows have
 * dim % 32 == 0, so block j is the lanes' j-th elements. */
template <int NJ>
__device__ __forceinline__ void st_ap_store_cache(char *row, int ct, const float (&v)[NJ], int64_t dim, int lane) {
    const int nj = (int)((dim + 31) / 32);
    if (ct != ST_TYPE_Q8_0) {
#pragma unroll
        for (int j = 0; j < NJ; j++)
            if (j < nj && lane + 32 * j < dim) st_st(row, ct, lane + 32 * j, v[j]);
        return;
    }
#pragma unroll
    for (int j = 0; j < NJ; j++) {
        if (j >= nj) break;
        const float amax = st_warp_max(fabsf(v[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        uint8_t *blk = (uint8_t *)row + j * 34;
        const float q = fminf(127.0f, fmaxf(-127.0f, roundf(v[j] * id)));
        blk[2 + lane] = (uint8_t)(int8_t)(int)q;
        /* d as one 16-bit store (2-byte aligned rows, checked on the host) */
        if (lane == 0) st_st(blk, ST_TYPE_F16, 0, d);
    }
}

/* Loads elements lane + 32 j (below dim, else 0) of an activation row. */
template <int NJ>
__device__ __forceinline__ void st_ap_load(const char *row, int type, int64_t dim, int lane, float (&v)[NJ]) {
#pragma unroll
    for (int j = 0; j < NJ; j++) {
        const int64_t d = lane + 32 * j;
        v[j] = d < dim ? st_ld(row, type, d) : 0.0f;
    }
}

__global__ void __launch_bounds__(ST_AP_WARPS * ST_WARP) k_attn_prep(st_ap_params p) {
    __shared__ float cs[ST_AP_MAX_HD / 2], sn[ST_AP_MAX_HD / 2];
    __shared__ float buf[ST_AP_WARPS][ST_AP_MAX_HD];
    st_pdl_begin();
    constexpr int NJ = ST_AP_MAX_HD / ST_WARP;
    const int64_t t = blockIdx.x;
    const int warp = threadIdx.x / ST_WARP, lane = threadIdx.x % ST_WARP;
    const int64_t row = (int64_t)blockIdx.y * ST_AP_WARPS + warp; /* q heads, then k heads, then v heads */
    const int kind = row < p.H ? 0 : row < p.H + p.Hk ? 1 : row < p.H + 2 * p.Hk ? 2 : 3;
    const int half = p.f.n_rot / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) st_rope_cs(p.f, p.pos[t], i, &cs[i], &sn[i]);
    /* a cell named by a later token too is left to that token (KV_WRITE's rule) */
    const int32_t cell = p.cells[t];
    int later = 0;
    for (int64_t t2 = t + 1 + threadIdx.x; t2 < p.n; t2 += blockDim.x) later |= p.cells[t2] == cell;
    const bool write_kv = !__syncthreads_or(later) && cell >= 0 && cell < p.n_cells;
    float v[NJ];
    int64_t h = 0;
    if (kind <= 1) { /* Q or K head: load, normalize, stage for the rotation */
        h = kind == 0 ? row : row - p.H;
        const float *nw = kind == 0 ? p.qw : p.kw;
        if (kind == 0) st_ap_load<NJ>(st_row(p.q, t * p.H + h), p.q.type, p.D, lane, v);
        else st_ap_load<NJ>(st_row(p.k, t * p.Hk + h), p.k.type, p.D, lane, v);
        if (nw) {
            float ss = 0.0f;
#pragma unroll
            for (int j = 0; j < NJ; j++) ss += v[j] * v[j];
            const float sc = rsqrtf(st_warp_sum(ss) / (float)p.D + p.eps);
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int64_t d = lane + 32 * j;
                if (d < p.D) v[j] = v[j] * sc * nw[d];
            }
        }
#pragma unroll
        for (int j = 0; j < NJ; j++)
            if (lane + 32 * j < p.D) buf[warp][lane + 32 * j] = v[j];
    }
    __syncthreads(); /* the angle table and every warp's staged row */
    if (kind == 2) { /* V head: straight into its cell */
        const int64_t g = row - p.H - p.Hk;
        if (!write_kv) return;
        st_ap_load<NJ>(st_row(p.v, t * p.Hk + g), p.v.type, p.Dv, lane, v);
        st_ap_store_cache<NJ>(p.vc + cell * p.vc_nb2 + g * p.vc_nb1, p.vct, v, p.Dv, lane);
        return;
    }
    if (kind == 3) return;
#pragma unroll
    for (int j = 0; j < NJ; j++) {
        const int d = lane + 32 * j;
        if (d >= p.f.n_rot) continue;
        int i, d0, d1;
        if (p.f.neox) {
            i = d < half ? d : d - half;
            d0 = i;
            d1 = i + half;
        } else {
            i = d / 2;
            d0 = 2 * i;
            d1 = 2 * i + 1;
        }
        const float x0 = buf[warp][d0], x1 = buf[warp][d1];
        v[j] = d == d0 ? x0 * cs[i] - x1 * sn[i] : x0 * sn[i] + x1 * cs[i];
    }
    if (kind == 0) {
        char *dst = st_row(p.q_out, t * p.H + h);
#pragma unroll
        for (int j = 0; j < NJ; j++)
            if (lane + 32 * j < p.D) st_st(dst, p.q_out.type, lane + 32 * j, v[j]);
    } else if (write_kv) {
        st_ap_store_cache<NJ>(p.kc + cell * p.kc_nb2 + h * p.kc_nb1, p.kct, v, p.D, lane);
    }
}

static st_status check_norm(const st_tensor &w, const char *name, int64_t D) {
    if (!w.data) return ST_OK;
    if (w.type != ST_TYPE_F32 || w.ne[0] != D || w.nb[0] != 4)
        return st_mod_fail(ST_INVALID, "cuda attn_prep: %s norm weight must be F32 [%lld]", name, (long long)D);
    return ST_OK;
}

extern "C" st_status st_cuda_attn_prep(st_stream *s, const st_attn_prep_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda attn_prep: NULL argument");
    ST_TRY(st_check_act(a->q, "attn_prep", "q"));
    ST_TRY(st_check_act(a->k, "attn_prep", "k"));
    ST_TRY(st_check_act(a->v, "attn_prep", "v"));
    ST_TRY(st_check_act(a->q_out, "attn_prep", "q_out"));
    const int64_t D = a->q.ne[0], H = a->q.ne[1], n = a->q.ne[2] * a->q.ne[3], Hk = a->k.ne[1], Dv = a->v.ne[0];
    if (a->k.ne[0] != D || a->k.ne[2] * a->k.ne[3] != n || a->v.ne[1] != Hk || a->v.ne[2] * a->v.ne[3] != n)
        return st_mod_fail(ST_INVALID, "cuda attn_prep: q, k and v shapes do not match");
    if (a->q_out.ne[0] != D || a->q_out.ne[1] != H || a->q_out.ne[2] * a->q_out.ne[3] != n)
        return st_mod_fail(ST_INVALID, "cuda attn_prep: q_out must have q's shape");
    if (D > ST_AP_MAX_HD || Dv > ST_AP_MAX_HD)
        return st_mod_fail(ST_UNSUPPORTED, "cuda attn_prep: head dims %lld/%lld > %d", (long long)D, (long long)Dv,
                           ST_AP_MAX_HD);
    ST_TRY(check_norm(a->q_norm, "q", D));
    ST_TRY(check_norm(a->k_norm, "k", D));
    ST_TRY(st_check_kv_cache(a->k_cache, D, Hk, "attn_prep", "k"));
    ST_TRY(st_check_kv_cache(a->v_cache, Dv, Hk, "attn_prep", "v"));
    st_ap_params p;
    ST_TRY(st_rope_freq_of(&a->rope, D, "attn_prep", &p.f));
    if (!n || !H) return ST_OK;
    if (!a->cells || !a->rope.pos) return st_mod_fail(ST_INVALID, "cuda attn_prep: NULL cells or positions");
    if (n > 0x7fffffff) return st_mod_fail(ST_UNSUPPORTED, "cuda attn_prep: %lld tokens", (long long)n);
    p.q = st_view_of(a->q);
    p.k = st_view_of(a->k);
    p.v = st_view_of(a->v);
    p.q_out = st_view_of(a->q_out);
    p.qw = (const float *)a->q_norm.data;
    p.kw = (const float *)a->k_norm.data;
    p.kc = (char *)a->k_cache.data;
    p.vc = (char *)a->v_cache.data;
    p.kct = (int)a->k_cache.type;
    p.vct = (int)a->v_cache.type;
    p.kc_nb1 = a->k_cache.nb[1];
    p.kc_nb2 = a->k_cache.nb[2];
    p.vc_nb1 = a->v_cache.nb[1];
    p.vc_nb2 = a->v_cache.nb[2];
    p.n_cells = a->k_cache.ne[2] < a->v_cache.ne[2] ? a->k_cache.ne[2] : a->v_cache.ne[2];
    p.cells = a->cells;
    p.pos = a->rope.pos;
    p.n = n;
    p.H = H;
    p.Hk = Hk;
    p.D = D;
    p.Dv = Dv;
    p.eps = a->eps;
    ST_TRY(st_cuda_use(s->dev));
    dim3 grid((unsigned)n, st_blocks(H + 2 * Hk, ST_AP_WARPS));
    st_launch(s, k_attn_prep, grid, dim3(ST_AP_WARPS * ST_WARP), 0, p);
    return st_cuda_launched(s, "attn_prep");
}

/* ---- MoE fallbacks for sizes past the decode kernels --------------------------------- */
/* out[a] = silu(out[a]) * up[a] for assignments of resident experts. */
__global__ void k_swiglu_resident(st_view out, st_view up, int64_t F, const int32_t *slot_table, const int32_t *expert) {
    const int64_t a = blockIdx.y;
    if (slot_table[expert[a]] < 0) return;
    char *o = st_row(out, a);
    const char *u = st_row(up, a);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < F; i += (int64_t)gridDim.x * blockDim.x) {
        const float g = st_ld(o, out.type, i);
        st_st(o, out.type, i, g / (1.0f + expf(-g)) * st_ld(u, up.type, i));
    }
}

/* out[t] = (acc ? out[t] : 0) + sum_j w[t k + j] rows[t k + j] over resident choices, j ascending. */
__global__ void k_down_sum(st_view rows, st_view out, int64_t M, int k, const int32_t *slot_table, const int32_t *ids,
                           const float *w, int acc) {
    const int64_t t = blockIdx.y;
    char *o = st_row(out, t);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < M; i += (int64_t)gridDim.x * blockDim.x) {
        float v = acc ? st_ld(o, out.type, i) : 0.0f;
        for (int j = 0; j < k; j++) {
            const int64_t r = t * k + j;
            if (slot_table[ids[r]] < 0) continue;
            v += w[r] * st_ld(st_row(rows, r), rows.type, i);
        }
        st_st(o, out.type, i, v);
    }
}

static unsigned st_cols_grid(int64_t cols) {
    const int64_t b = (cols + 255) / 256;
    return (unsigned)(b < 32 ? b : 32);
}

static st_status check_scratch(const st_tensor &t, int64_t cols, int64_t rows, const char *op) {
    if (!t.data)
        return st_mod_fail(ST_INVALID, "cuda %s: %lld assignments need the scratch tensor", op, (long long)rows);
    ST_TRY(st_check_act(t, op, "scratch"));
    if (t.ne[0] != cols || st_nrows(t) < rows)
        return st_mod_fail(ST_INVALID, "cuda %s: scratch must be [%lld][%lld]", op, (long long)rows, (long long)cols);
    return ST_OK;
}

extern "C" st_status st_cuda_moe_gate_up(st_stream *s, const st_moe_gate_up_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda moe_gate_up: NULL argument");
    if (a->w_up.type != a->w_gate.type || memcmp(a->w_up.ne, a->w_gate.ne, sizeof a->w_up.ne))
        return st_mod_fail(ST_INVALID, "cuda moe_gate_up: w_gate and w_up differ in type or shape");
    ST_TRY(st_check_act(a->out, "moe_gate_up", "out"));
    const int64_t F = a->w_gate.ne[1], A = a->n_assign;
    if (a->out.ne[0] != F || st_nrows(a->out) != A)
        return st_mod_fail(ST_INVALID, "cuda moe_gate_up: out must be [%lld][%lld]", (long long)A, (long long)F);
    if (A <= 0) return ST_OK;
    ST_TRY(st_cuda_use(s->dev));
    st_status st = ST_OK;
    if (st_moe_gateup_gemv_fast(s, a, &st)) return st;
    ST_TRY(check_scratch(a->scratch, F, A, "moe_gate_up"));
    st_moe_matmul_args m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    m.n_assign = a->n_assign;
    m.x = a->x;
    m.slot_table = a->slot_table;
    m.expert = a->expert;
    m.x_row = a->x_row;
    m.w = a->w_gate;
    m.out = a->out;
    ST_TRY(st_cuda_moe_matmul(s, &m));
    m.w = a->w_up;
    m.out = a->scratch;
    m.out.ne[1] = A;
    m.out.ne[2] = m.out.ne[3] = 1;
    ST_TRY(st_cuda_moe_matmul(s, &m));
    dim3 grid(st_cols_grid(F), (unsigned)A);
    k_swiglu_resident<<<grid, 256, 0, s->s>>>(st_view_of(a->out), st_view_of(m.out), F, a->slot_table, a->expert);
    return st_cuda_launched(s, "moe_gate_up");
}

extern "C" st_status st_cuda_moe_down(st_stream *s, const st_moe_down_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda moe_down: NULL argument");
    ST_TRY(st_check_act(a->out, "moe_down", "out"));
    ST_TRY(st_check_act(a->x, "moe_down", "x"));
    if (a->k < 1) return st_mod_fail(ST_INVALID, "cuda moe_down: k = %d", a->k);
    const int64_t M = a->w.ne[1], n = st_nrows(a->out), A = n * a->k;
    if (a->out.ne[0] != M)
        return st_mod_fail(ST_INVALID, "cuda moe_down: out rows have %lld columns, expert rows %lld",
                           (long long)a->out.ne[0], (long long)M);
    if (st_nrows(a->x) != A)
        return st_mod_fail(ST_INVALID, "cuda moe_down: x has %lld rows for %lld tokens x %d", (long long)st_nrows(a->x),
                           (long long)n, a->k);
    if (n <= 0) return ST_OK;
    if (!a->slot_table || !a->ids || !a->weights) return st_mod_fail(ST_INVALID, "cuda moe_down: NULL tables");
    ST_TRY(st_cuda_use(s->dev));
    st_status st = ST_OK;
    if (st_moe_down_gemv_fast(s, a, &st)) return st;
    ST_TRY(check_scratch(a->scratch, M, A, "moe_down"));
    /* the tiles write scratch row r = x row r (the stream's identity table), in chunks of it */
    const int64_t per = (int64_t)(ST_CUDA_IDENT_N / a->k);
    for (int64_t t0 = 0; t0 < n; t0 += per) {
        const int64_t nt = n - t0 < per ? n - t0 : per, r0 = t0 * a->k, na = nt * a->k;
        st_moe_matmul_args m;
        memset(&m, 0, sizeof m);
        m.size = sizeof m;
        m.n_assign = (int32_t)na;
        m.w = a->w;
        m.x = a->x;
        m.x.data = (char *)a->x.data + r0 * a->x.nb[1];
        m.x.ne[1] = na;
        m.x.ne[2] = m.x.ne[3] = 1;
        m.out = a->scratch;
        m.out.data = (char *)a->scratch.data + r0 * a->scratch.nb[1];
        m.out.ne[1] = na;
        m.out.ne[2] = m.out.ne[3] = 1;
        m.slot_table = a->slot_table;
        m.expert = a->ids + r0;
        m.x_row = s->ident;
        ST_TRY(st_cuda_moe_matmul(s, &m));
    }
    st_tensor rows = a->scratch;
    rows.ne[1] = A;
    rows.ne[2] = rows.ne[3] = 1;
    dim3 grid(st_cols_grid(M), (unsigned)n);
    k_down_sum<<<grid, 256, 0, s->s>>>(st_view_of(rows), st_view_of(a->out), M, a->k, a->slot_table, a->ids,
                                       a->weights, a->accumulate);
    return st_cuda_launched(s, "moe_down");
}
