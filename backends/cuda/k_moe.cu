/* SPDX-License-Identifier: Apache-2.0 */
/* MOE_MATMUL through the device-side slot table, and MOE_COMBINE. Each block owns one expert
 * slot and a range of output rows; it gathers the assignments routed to its slot on the
 * device (no host round trip) and runs them as GEMV passes of 8 or GEMM tiles (tensor-core tiles
 * of 32 assignments; 64 on FP32 cores or with STRATA_CUDA_TILE_OLD=1). */
#include "cuda/cuda_gemv.cuh"
#include "cuda/cuda_hmm.cuh"
#include "cuda/cuda_mm.cuh"

#define ST_MOE_THREADS 256
#define ST_MOE_GEMV_ROWS 32 /* output rows per block in the GEMV variant (4 per warp) */

struct st_moe_params {
    const uint8_t *W;
    int64_t w_nb1, w_nb2, M, K, n_x;
    st_view x, out;
    const int32_t *slot_table, *expert, *x_row;
    const float *scale;
    int32_t n_assign;
};

/* Append this chunk's assignments routed to `slot` to list (count in *cnt). */
__device__ __forceinline__ void st_moe_gather(const st_moe_params &p, int slot, int base, int *list, int *cnt) {
    const int a = base + (int)threadIdx.x;
    if (a < p.n_assign) {
        const int32_t e = p.expert[a];
        const int32_t xr = p.x_row[a];
        if (e >= 0 && xr >= 0 && xr < p.n_x && p.slot_table[e] == slot) list[atomicAdd(cnt, 1)] = a;
    }
}

/* Drop the first `used` entries of list (all threads call). Returns the new count. */
__device__ __forceinline__ int st_moe_shift(int *list, int *cnt, int c, int used) {
    const int rem = c - used;
    const int v = (int)threadIdx.x < rem ? list[used + threadIdx.x] : 0;
    __syncthreads();
    if ((int)threadIdx.x < rem) list[threadIdx.x] = v;
    if (threadIdx.x == 0) *cnt = rem;
    __syncthreads();
    return rem;
}

template <int T>
__global__ void __launch_bounds__(ST_MOE_THREADS) k_moe_gemv(st_moe_params p) {
    __shared__ int list[ST_MOE_THREADS + ST_GEMV_COLS];
    __shared__ int cnt;
    const int slot = blockIdx.y, warp = threadIdx.x / ST_WARP, lane = threadIdx.x % ST_WARP;
    const uint8_t *Ws = p.W + (int64_t)slot * p.w_nb2;
    if (threadIdx.x == 0) cnt = 0;
    __syncthreads();
    for (int base = 0; base < p.n_assign; base += ST_MOE_THREADS) {
        st_moe_gather(p, slot, base, list, &cnt);
        __syncthreads();
        int c = cnt;
        __syncthreads(); /* everyone has read cnt before the next gather adds to it */
        const bool last = base + ST_MOE_THREADS >= p.n_assign;
        while (c >= ST_GEMV_COLS || (last && c > 0)) {
            const int nc = c < ST_GEMV_COLS ? c : ST_GEMV_COLS;
            const char *xr[ST_GEMV_COLS];
#pragma unroll
            for (int i = 0; i < ST_GEMV_COLS; i++) xr[i] = i < nc ? st_row(p.x, p.x_row[list[i]]) : NULL;
            for (int r = 0; r < ST_MOE_GEMV_ROWS / (ST_MOE_THREADS / ST_WARP); r++) {
                const int64_t m = (int64_t)blockIdx.x * ST_MOE_GEMV_ROWS + warp * (ST_MOE_GEMV_ROWS * ST_WARP / ST_MOE_THREADS) + r;
                if (m >= p.M) break;
                float acc[ST_GEMV_COLS];
#pragma unroll
                for (int i = 0; i < ST_GEMV_COLS; i++) acc[i] = 0.0f;
                st_gemv_row<T>(Ws + m * p.w_nb1, p.K, nc, xr, p.x.type, acc);
#pragma unroll
                for (int i = 0; i < ST_GEMV_COLS; i++) {
                    if (i < nc) {
                        const float v = st_warp_sum(acc[i]);
                        if (lane == 0) {
                            const int a = list[i];
                            st_st(st_row(p.out, a), p.out.type, m, p.scale ? v * p.scale[a] : v);
                        }
                    }
                }
            }
            __syncthreads();
            c = st_moe_shift(list, &cnt, c, nc);
        }
    }
}

/* FP32 cores: 64-row tiles of the slot, its assignments 64 at a time. */
template <int T>
__global__ void __launch_bounds__(ST_TILE_THREADS) k_moe_gemm(st_moe_params p) {
    __shared__ st_tile_smem sm;
    __shared__ int list[ST_TILE_THREADS + ST_TILE_N];
    __shared__ const char *xr[ST_TILE_N];
    __shared__ int cnt;
    const int slot = blockIdx.y;
    const int64_t m0 = (int64_t)blockIdx.x * ST_TILE_M;
    const uint8_t *Ws = p.W + (int64_t)slot * p.w_nb2;
    if (threadIdx.x == 0) cnt = 0;
    __syncthreads();
    for (int base = 0; base < p.n_assign; base += ST_TILE_THREADS) {
        st_moe_gather(p, slot, base, list, &cnt);
        __syncthreads();
        int c = cnt;
        __syncthreads(); /* everyone has read cnt before the next gather adds to it */
        const bool last = base + ST_TILE_THREADS >= p.n_assign;
        while (c >= ST_TILE_N || (last && c > 0)) {
            const int nc = c < ST_TILE_N ? c : ST_TILE_N;
            if (threadIdx.x < ST_TILE_N) xr[threadIdx.x] = (int)threadIdx.x < nc ? st_row(p.x, p.x_row[list[threadIdx.x]]) : NULL;
            __syncthreads();
            float acc[4][4];
            st_gemm_tile<T>(Ws, p.w_nb1, p.M, p.K, m0, xr, p.x.type, sm, acc);
            const int tm = (threadIdx.x % 16) * 4, tn = (threadIdx.x / 16) * 4;
            for (int j = 0; j < 4; j++) {
                if (tn + j >= nc) break;
                const int a = list[tn + j];
                const float sc = p.scale ? p.scale[a] : 1.0f;
                char *orow = st_row(p.out, a);
                for (int i = 0; i < 4; i++)
                    if (m0 + tm + i < p.M) st_st(orow, p.out.type, m0 + tm + i, acc[i][j] * sc);
            }
            __syncthreads();
            c = st_moe_shift(list, &cnt, c, nc);
        }
    }
}

/* Tensor cores, step 1 (one block): counting sort of the assignments by slot into the
 * workspace, and the list of (slot, first, count) tiles of at most q.bn assignments, so
 * the GEMM blocks share the work evenly however skewed the routing is (st_moe_sorted in
 * cuda_gemv.cuh; the grouped GEMV of k_gemv.cu uses it too). */
/* Slots whose counters live in shared memory during the sort (16 KiB); more use the workspace.
 * The serial pass of thread 0 then reads shared memory instead of waiting on global loads. */
#define ST_MOE_SORT_SHARED 4096

__global__ void __launch_bounds__(1024) k_moe_sort(st_moe_params p, int n_slots, st_moe_sorted q) {
    __shared__ int sh[ST_MOE_SORT_SHARED]; /* counts, then (in place) fill positions */
    const bool in_sh = n_slots <= ST_MOE_SORT_SHARED;
    for (int i = threadIdx.x; i < n_slots; i += blockDim.x) {
        if (in_sh) sh[i] = 0;
        else q.cnt[i] = 0, q.fill[i] = 0;
    }
    __syncthreads();
    for (int a = threadIdx.x; a < p.n_assign; a += blockDim.x) {
        const int32_t e = p.expert[a], xr = p.x_row[a];
        if (e < 0 || xr < 0 || xr >= p.n_x) continue;
        const int32_t sl = p.slot_table[e];
        if (sl >= 0 && sl < n_slots) {
            if (in_sh) atomicAdd(&sh[sl], 1);
            else atomicAdd(&q.cnt[sl], 1);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int off = 0, t = 0;
        for (int sl = 0; sl < n_slots; sl++) {
            const int c = in_sh ? sh[sl] : q.cnt[sl];
            if (in_sh) sh[sl] = off;
            else q.fill[sl] = off;
            for (int f = 0; f < c && t < q.max_tiles; f += q.bn)
                q.tiles[t++] = make_int3(sl, off + f, c - f < q.bn ? c - f : q.bn);
            off += c;
        }
        *q.n_tiles = t;
    }
    __syncthreads();
    for (int a = threadIdx.x; a < p.n_assign; a += blockDim.x) {
        const int32_t e = p.expert[a], xr = p.x_row[a];
        if (e < 0 || xr < 0 || xr >= p.n_x) continue;
        const int32_t sl = p.slot_table[e];
        if (sl >= 0 && sl < n_slots) q.list[atomicAdd(in_sh ? &sh[sl] : &q.fill[sl], 1)] = a;
    }
}

/* Step 2: block (mx, t) computes rows mx*128.. of tile t's assignments. */
template <int T>
__global__ void __launch_bounds__(ST_HMM_THREADS) k_moe_hgemm(st_moe_params p, st_moe_sorted q) {
    __shared__ st_hmm_smem sm;
    __shared__ st_hmm_cols cols;
    if ((int)blockIdx.y >= *q.n_tiles) return;
    const int3 tile = q.tiles[blockIdx.y];
    const int64_t m0 = (int64_t)blockIdx.x * ST_HMM_BM;
    if (threadIdx.x < ST_HMM_BN) {
        const bool on = (int)threadIdx.x < tile.z;
        const int a = on ? q.list[tile.y + threadIdx.x] : 0;
        cols.x[threadIdx.x] = on ? st_row(p.x, p.x_row[a]) : NULL;
        cols.out[threadIdx.x] = on ? st_row(p.out, a) : NULL;
        cols.scale[threadIdx.x] = on && p.scale ? p.scale[a] : 1.0f;
    }
    __syncthreads();
    st_hmm_tile_pf<T, ST_HMM_PF>(p.W + (int64_t)tile.x * p.w_nb2, p.w_nb1, p.M, 0, p.K, m0, cols, tile.z, p.x.type,
                          p.out.type, false, sm);
}

/* Step 2 on the register-fragment tile (cuda_hmm.cuh): tiles of at most 8*NB assignments. */
template <int T, int NB>
__global__ void __launch_bounds__(ST_HM2_THREADS, st_hm2_minb<T>::v) k_moe_hgemm2(st_moe_params p, st_moe_sorted q) {
    __shared__ st_hm2_smem<NB> sm;
    __shared__ st_hmm_cols cols;
    if ((int)blockIdx.y >= *q.n_tiles) return;
    const int3 tile = q.tiles[blockIdx.y];
    const int64_t m0 = (int64_t)blockIdx.x * ST_HM2_BM;
    if (threadIdx.x < NB * 8) {
        const bool on = (int)threadIdx.x < tile.z;
        const int a = on ? q.list[tile.y + threadIdx.x] : 0;
        cols.x[threadIdx.x] = on ? st_row(p.x, p.x_row[a]) : NULL;
        cols.out[threadIdx.x] = on ? st_row(p.out, a) : NULL;
        cols.scale[threadIdx.x] = on && p.scale ? p.scale[a] : 1.0f;
    }
    __syncthreads();
    st_hm2_tile<T, NB>(p.W + (int64_t)tile.x * p.w_nb2, p.w_nb1, p.M, 0, p.K, m0, cols, tile.z, p.x.type, p.out.type,
                       false, sm);
}

/* Columns per register-fragment tile of MOE_MATMUL. */
#define ST_MOE_HM2_NB 4

bool st_moe_sorted_carve(st_stream *s, uint64_t off, int64_t n_slots, int n_assign, int bn, st_moe_sorted *q) {
    const int64_t max_tiles = n_assign / bn + (n_slots < n_assign ? n_slots : n_assign) + 1;
    const uint64_t ints = (uint64_t)(2 * n_slots + n_assign + 1), need = ints * 4 + 16 + (uint64_t)max_tiles * sizeof(int3);
    off = (off + 15) & ~(uint64_t)15;
    if (off + need > s->ws_bytes || max_tiles > 65535) return false;
    q->ws_used = off + need;
    int *w = (int *)((char *)s->ws + off);
    q->n_tiles = w;
    q->cnt = w + 1;
    q->fill = q->cnt + n_slots;
    q->list = q->fill + n_slots;
    q->tiles = (int3 *)((char *)s->ws + off + ((ints * 4 + 15) & ~(uint64_t)15));
    q->max_tiles = (int)max_tiles;
    q->bn = bn;
    return true;
}

void st_moe_sort_launch(st_stream *s, const int32_t *slot_table, const int32_t *expert, const int32_t *x_row,
                        int64_t n_x, int n_assign, int64_t n_slots, const st_moe_sorted &q) {
    st_moe_params p;
    memset(&p, 0, sizeof p);
    p.slot_table = slot_table;
    p.expert = expert;
    p.x_row = x_row;
    p.n_x = n_x;
    p.n_assign = n_assign;
    k_moe_sort<<<1, 1024, 0, s->s>>>(p, (int)n_slots, q);
}

struct st_moe_launch {
    st_moe_params p;
    cudaStream_t s;
    int64_t n_slots;
    bool tiles, half, frag;
    st_moe_sorted q;
    st_view x16; /* x for the register-fragment tile (an F16 copy when one fits) */
    template <int T> void run() const {
        if (tiles && half && frag) {
            k_moe_sort<<<1, 1024, 0, s>>>(p, (int)n_slots, q);
            dim3 grid(st_blocks(p.M, ST_HM2_BM), (unsigned)q.max_tiles);
            st_moe_params p16 = p;
            p16.x = x16;
            k_moe_hgemm2<T, ST_MOE_HM2_NB><<<grid, ST_HM2_THREADS, 0, s>>>(p16, q);
        } else if (tiles && half) {
            k_moe_sort<<<1, 1024, 0, s>>>(p, (int)n_slots, q);
            dim3 grid(st_blocks(p.M, ST_HMM_BM), (unsigned)q.max_tiles);
            k_moe_hgemm<T><<<grid, ST_HMM_THREADS, 0, s>>>(p, q);
        } else if (tiles) {
            dim3 grid(st_blocks(p.M, ST_TILE_M), (unsigned)n_slots);
            k_moe_gemm<T><<<grid, ST_TILE_THREADS, 0, s>>>(p);
        } else {
            dim3 grid(st_blocks(p.M, ST_MOE_GEMV_ROWS), (unsigned)n_slots);
            k_moe_gemv<T><<<grid, ST_MOE_THREADS, 0, s>>>(p);
        }
    }
};

extern "C" st_status st_cuda_moe_matmul(st_stream *s, const st_moe_matmul_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda moe_matmul: NULL argument");
    const st_tensor &w = a->w;
    const int qk = st_w_qk(w.type);
    if (!w.data) return st_mod_fail(ST_INVALID, "cuda moe_matmul: weight has no data");
    if (!qk) return st_mod_fail(ST_UNSUPPORTED, "cuda moe_matmul: weight type %s", st_cuda_type_name(w.type));
    if (w.ne[0] % qk)
        return st_mod_fail(ST_INVALID, "cuda moe_matmul: row of %lld not a multiple of %d", (long long)w.ne[0], qk);
    ST_TRY(st_check_act(a->x, "moe_matmul", "x"));
    ST_TRY(st_check_act(a->out, "moe_matmul", "out"));
    const int64_t K = w.ne[0], M = w.ne[1], n_slots = w.ne[2];
    if (a->x.ne[0] != K || a->out.ne[0] != M)
        return st_mod_fail(ST_INVALID, "cuda moe_matmul: x row %lld / out row %lld vs weight [%lld][%lld]",
                           (long long)a->x.ne[0], (long long)a->out.ne[0], (long long)M, (long long)K);
    if (a->n_assign < 0 || st_nrows(a->out) < a->n_assign)
        return st_mod_fail(ST_INVALID, "cuda moe_matmul: n_assign %d, out has %lld rows", a->n_assign,
                           (long long)st_nrows(a->out));
    if (a->n_assign == 0 || M == 0 || n_slots == 0) return ST_OK;
    if (!a->slot_table || !a->expert || !a->x_row) return st_mod_fail(ST_INVALID, "cuda moe_matmul: NULL table");
    if (n_slots > 65535) return st_mod_fail(ST_UNSUPPORTED, "cuda moe_matmul: %lld slots (max 65535)", (long long)n_slots);
    ST_TRY(st_cuda_use(s->dev));
    st_moe_launch L;
    L.p = st_moe_params{(const uint8_t *)w.data, w.nb[1], w.nb[2], M, K, st_nrows(a->x),
                        st_view_of(a->x), st_view_of(a->out), a->slot_table, a->expert, a->x_row, a->scale,
                        a->n_assign};
    L.s = s->s;
    L.n_slots = n_slots;
    /* Several assignments per slot on average: tiles (tensor cores when they can run); else
     * GEMV passes of 8. */
    L.frag = st_hm2_ok(w.type, w.data, w.nb[1], w.nb[2]);
    L.half = st_hmm_ok(s->dev, w.type, K, a->x) &&
             st_moe_sorted_carve(s, 0, n_slots, a->n_assign, L.frag ? ST_MOE_HM2_NB * 8 : ST_HMM_BN, &L.q);
    L.tiles = a->n_assign >= (L.half ? 2 : 32) * n_slots;
    /* decode sizes (up to the grouped limit) take the 8-bit GEMV whatever the spread */
    st_status fast_st;
    if (st_moe_gemv_fast(s, a, &fast_st)) return fast_st;
    L.x16 = L.p.x;
    if (L.tiles && L.half && L.frag) L.x16 = st_hm2_x16_view(s, a->x, L.q.ws_used);
#define ST_MOE_CALL(T) (L.run<T>(), st_cuda_launched(s, "moe_matmul"))
    ST_WEIGHT_DISPATCH(w.type, ST_MOE_CALL)
#undef ST_MOE_CALL
    return st_mod_fail(ST_UNSUPPORTED, "cuda moe_matmul: weight type %s", st_cuda_type_name(w.type));
}

/* out[t][:] = (acc ? out[t][:] : 0) + sum_j weights[t][j] * rows[row_of[t][j]][:], j ascending.
 * The first 8 row indices and weights are read into registers up front so their loads overlap. */
__global__ void k_moe_combine(st_view rows, int64_t n_rows, st_view out, int64_t M, const int32_t *row_of,
                              const float *weights, int k, int accumulate) {
    const int64_t t = blockIdx.y;
    const int64_t m = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= M) return;
    constexpr int PRE = 8;
    int32_t ro[PRE];
    float wt[PRE];
#pragma unroll
    for (int j = 0; j < PRE; j++) {
        ro[j] = j < k ? row_of[t * k + j] : -1;
        wt[j] = j < k ? weights[t * k + j] : 0.0f;
    }
    char *orow = st_row(out, t);
    float v[PRE];
#pragma unroll
    for (int j = 0; j < PRE; j++) v[j] = ro[j] >= 0 && ro[j] < n_rows ? st_ld(st_row(rows, ro[j]), rows.type, m) : 0.0f;
    float sum = accumulate ? st_ld(orow, out.type, m) : 0.0f;
#pragma unroll
    for (int j = 0; j < PRE; j++)
        if (ro[j] >= 0 && ro[j] < n_rows) sum += wt[j] * v[j];
    for (int j = PRE; j < k; j++) {
        const int32_t r = row_of[t * k + j];
        if (r < 0 || r >= n_rows) continue;
        sum += weights[t * k + j] * st_ld(st_row(rows, r), rows.type, m);
    }
    st_st(orow, out.type, m, sum);
}

extern "C" st_status st_cuda_moe_combine(st_stream *s, const st_moe_combine_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda moe_combine: NULL argument");
    ST_TRY(st_check_act(a->rows, "moe_combine", "rows"));
    ST_TRY(st_check_act(a->out, "moe_combine", "out"));
    const int64_t M = a->out.ne[0], n = st_nrows(a->out);
    if (a->rows.ne[0] != M)
        return st_mod_fail(ST_INVALID, "cuda moe_combine: rows of %lld vs out rows of %lld",
                           (long long)a->rows.ne[0], (long long)M);
    if (a->k < 0) return st_mod_fail(ST_INVALID, "cuda moe_combine: k = %d", a->k);
    if (!n || !M) return ST_OK;
    if (a->k > 0 && (!a->row_of || !a->weights)) return st_mod_fail(ST_INVALID, "cuda moe_combine: NULL table");
    if (n > 65535) return st_mod_fail(ST_UNSUPPORTED, "cuda moe_combine: %lld tokens (max 65535)", (long long)n);
    ST_TRY(st_cuda_use(s->dev));
    const int threads = n < 16 ? 64 : 256; /* few tokens: more, smaller blocks */
    dim3 grid(st_blocks(M, threads), (unsigned)n);
    k_moe_combine<<<grid, threads, 0, s->s>>>(st_view_of(a->rows), st_nrows(a->rows), st_view_of(a->out), M, a->row_of,
                                          a->weights, a->k, a->accumulate);
    return st_cuda_launched(s, "moe_combine");
}
