/* SPDX-License-Identifier: Apache-2.0 */
/* Prefill ATTENTION on tensor cores (sm_80+, F16 K/V cache, head dim 64 or 128): one block of
 * 4 warps takes 64 query tokens of one head and walks the positions 64 at a time (flash
 * attention). S = Q.K^T and O += P.V run on F16 tensor cores with F32 sums; the softmax is
 * online in F32. K/V rows are gathered through the cell table of the tile's sequence; a token
 * of another sequence in the same tile (mixed batches) is computed by a warp-per-row loop at
 * the end, so any batch is handled.
 * Also the two decode paths that read each K/V row once for all query heads of its KV head:
 * k_attention_gqa (split over the sequence, merged by k_attention_merge) and, on sm_90+,
 * k_attention_dec (tensor cores, merged inside a thread-block cluster; see below). */
#include <cooperative_groups.h>
#include <mma.h>
#include <stdlib.h>

#include "cuda/cuda_attention.cuh"

#define ST_FA_BQ 64
#define ST_FA_BKV 64
#define ST_FA_THREADS 128

template <int HD> struct st_fa_layout {
    static constexpr int ldh = HD + 8, lds = ST_FA_BKV + 4, ldp = ST_FA_BKV + 8, ldo = HD + 4;
    static constexpr size_t q = 0, k = q + (size_t)ST_FA_BQ * ldh * 2, v = k + (size_t)ST_FA_BKV * ldh * 2,
                            s = v + (size_t)ST_FA_BKV * ldh * 2, p = s + (size_t)ST_FA_BQ * lds * 4,
                            o = p + (size_t)ST_FA_BQ * ldp * 2, stats = o + (size_t)ST_FA_BQ * ldo * 4,
                            bytes = stats + (size_t)ST_FA_BQ * 4 * 4 + ST_FA_BKV * 4;
};

/* The block's sequence (that of its first token), each of its ST_FA_BQ rows' visible length
 * (0 past n and for tokens of another sequence, which set s_foreign) and the longest. All
 * threads call; the values are visible to all when it returns. */
__device__ __forceinline__ void st_fa_lengths(const st_att_params &p, int64_t i0, int *sLen, int &s_seq, int &s_foreign,
                                              int &s_max) {
    const int tid = threadIdx.x;
    if (tid == 0) {
        s_max = 0;
        s_foreign = 0;
        s_seq = p.seq[i0];
    }
    __syncthreads();
    if (tid < ST_FA_BQ) {
        const int64_t i = i0 + tid;
        int len = 0;
        if (i < p.n) {
            len = min(p.kv_len[i], p.max_pos);
            if (p.seq[i] != s_seq) {
                len = 0;
                atomicOr(&s_foreign, 1);
            }
        }
        sLen[tid] = len;
        atomicMax(&s_max, len);
    }
    __syncthreads();
}

/* One (token i, head h) by one warp, positions one after another (tokens of another sequence). */
__device__ void st_fa_row_serial(const st_att_params &p, int64_t i, int64_t h) {
    const int lane = threadIdx.x % ST_WARP;
    const int64_t kvh = h / (p.n_head / p.n_kv);
    float qv[ST_ATT_PER_LANE], acc[ST_ATT_PER_LANE];
    const st_att_row rw = st_att_row_setup(p, i, h, lane, qv, acc);
    const int32_t *cells = rw.cells;
    const float *mrow = rw.mrow;
    float m = -INFINITY, l = 0.0f;
    for (int pos = 0; pos < rw.L; pos++) {
        const int64_t c = cells[pos];
        if (c < 0 || c >= p.n_cells) continue;
        const char *kr = p.k + c * p.k_nb2 + kvh * p.k_nb1, *vr = p.v + c * p.v_nb2 + kvh * p.v_nb1;
        float dot = 0.0f;
#pragma unroll
        for (int j = 0; j < ST_ATT_PER_LANE; j++) {
            const int64_t d = lane + j * ST_WARP;
            if (d < p.hd) dot += qv[j] * st_ld(kr, p.kt, d);
        }
        float sc = st_warp_sum(dot) * p.scale;
        if (mrow) sc += mrow[pos];
        if (sc == -INFINITY || sc != sc) continue;
        const float mn = fmaxf(m, sc), corr = expf(m - mn), e = expf(sc - mn);
        l = l * corr + e;
        m = mn;
#pragma unroll
        for (int j = 0; j < ST_ATT_PER_LANE; j++) {
            const int64_t d = lane + j * ST_WARP;
            if (d < p.dv) acc[j] = acc[j] * corr + e * st_ld(vr, p.vt, d);
        }
    }
    char *orow = st_row(p.out, i * p.n_head + h);
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int j = 0; j < ST_ATT_PER_LANE; j++) {
        const int64_t d = lane + j * ST_WARP;
        if (d < p.dv) st_st(orow, p.out.type, d, acc[j] * inv);
    }
}

/* The block's tokens of a sequence other than s_seq, one warp per row (after the tiles). */
__device__ void st_fa_foreign(const st_att_params &p, int64_t i0, int64_t h, int s_seq) {
    for (int r = threadIdx.x / ST_WARP; r < ST_FA_BQ; r += ST_FA_THREADS / ST_WARP) {
        const int64_t i = i0 + r;
        if (i < p.n && p.seq[i] != s_seq) st_fa_row_serial(p, i, h);
    }
}

template <int HD>
__global__ void __launch_bounds__(ST_FA_THREADS) k_attention_fa(st_att_params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    typedef st_fa_layout<HD> Lo;
    extern __shared__ __align__(128) unsigned char smem[];
    __half *sQ = (__half *)(smem + Lo::q), *sK = (__half *)(smem + Lo::k), *sV = (__half *)(smem + Lo::v);
    float *sS = (float *)(smem + Lo::s), *sO = (float *)(smem + Lo::o);
    __half *sP = (__half *)(smem + Lo::p);
    float *sM = (float *)(smem + Lo::stats), *sL = sM + ST_FA_BQ, *sC = sL + ST_FA_BQ;
    int *sLen = (int *)(sC + ST_FA_BQ), *sOk = sLen + ST_FA_BQ;
    __shared__ int s_max, s_foreign, s_seq;
    const int tid = threadIdx.x, warp = tid / ST_WARP, lane = tid % ST_WARP;
    const int64_t h = blockIdx.y, i0 = (int64_t)blockIdx.x * ST_FA_BQ;
    const int64_t kvh = h / (p.n_head / p.n_kv);
    st_fa_lengths(p, i0, sLen, s_seq, s_foreign, s_max);
    if (tid < ST_FA_BQ) {
        sM[tid] = -INFINITY;
        sL[tid] = 0.0f;
    }
    /* Q tile, pre-scaled, as F16; rows past n are zero */
    for (int e = tid; e < ST_FA_BQ * HD; e += ST_FA_THREADS) {
        const int r = e / HD, d = e % HD;
        const int64_t i = i0 + r;
        const float v = i < p.n ? st_ld(st_row(p.q, i * p.n_head + h), p.q.type, d) * p.scale : 0.0f;
        sQ[r * Lo::ldh + d] = __float2half_rn(v);
    }
    for (int e = tid; e < ST_FA_BQ * Lo::ldo; e += ST_FA_THREADS) sO[e] = 0.0f;
    __syncthreads();
    const int Lmax = s_max;
    const int32_t *cells = p.cell_table + (int64_t)s_seq * p.max_pos;
    const float *mask = p.mask;
    const int row0 = warp * 16;
    for (int kb = 0; kb < Lmax; kb += ST_FA_BKV) {
        /* K and V rows of positions kb .. kb+63 (16-byte pieces) */
        constexpr int PIECES = HD / 8;
        for (int e = tid; e < ST_FA_BKV * PIECES; e += ST_FA_THREADS) {
            const int r = e / PIECES, c8 = (e % PIECES) * 8;
            const int pos = kb + r;
            int64_t cell = pos < Lmax ? cells[pos] : -1;
            const bool ok = cell >= 0 && cell < p.n_cells;
            uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
            if (ok) {
                kv = *(const uint4 *)(p.k + cell * p.k_nb2 + kvh * p.k_nb1 + c8 * 2);
                vv = *(const uint4 *)(p.v + cell * p.v_nb2 + kvh * p.v_nb1 + c8 * 2);
            }
            *(uint4 *)&sK[r * Lo::ldh + c8] = kv;
            *(uint4 *)&sV[r * Lo::ldh + c8] = vv;
            if (c8 == 0) sOk[r] = ok;
        }
        __syncthreads();
        /* S = Q.K^T for this warp's 16 rows */
        {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf[ST_FA_BKV / 16];
#pragma unroll
            for (int j = 0; j < ST_FA_BKV / 16; j++) wmma::fill_fragment(sf[j], 0.0f);
#pragma unroll
            for (int k = 0; k < HD; k += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af;
                wmma::load_matrix_sync(af, &sQ[row0 * Lo::ldh + k], Lo::ldh);
#pragma unroll
                for (int j = 0; j < ST_FA_BKV / 16; j++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> bf;
                    wmma::load_matrix_sync(bf, &sK[(16 * j) * Lo::ldh + k], Lo::ldh);
                    wmma::mma_sync(sf[j], af, bf, sf[j]);
                }
            }
#pragma unroll
            for (int j = 0; j < ST_FA_BKV / 16; j++)
                wmma::store_matrix_sync(&sS[row0 * Lo::lds + 16 * j], sf[j], Lo::lds, wmma::mem_row_major);
        }
        __syncwarp();
        /* online softmax: two lanes per row, 32 positions each */
        {
            const int r = row0 + lane / 2, c0 = (lane % 2) * 32;
            const int len = sLen[r];
            const float *mrow = mask && i0 + r < p.n ? mask + (i0 + r) * (int64_t)p.max_pos : NULL;
            float mloc = -INFINITY;
            for (int c = c0; c < c0 + 32; c++) {
                const int pos = kb + c;
                float s = -INFINITY;
                if (pos < len && sOk[c]) {
                    s = sS[r * Lo::lds + c];
                    if (mrow) s += mrow[pos];
                    if (s != s) s = -INFINITY;
                }
                sS[r * Lo::lds + c] = s;
                mloc = fmaxf(mloc, s);
            }
            mloc = fmaxf(mloc, __shfl_xor_sync(0xffffffffu, mloc, 1));
            const float mold = sM[r], mnew = fmaxf(mold, mloc);
            float sum = 0.0f;
            for (int c = c0; c < c0 + 32; c++) {
                const float s = sS[r * Lo::lds + c];
                const float e = s == -INFINITY ? 0.0f : expf(s - mnew);
                sum += e;
                sP[r * Lo::ldp + c] = __float2half_rn(e);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            __syncwarp();
            if (lane % 2 == 0) {
                const float corr = mold == -INFINITY ? (mnew == -INFINITY ? 1.0f : 0.0f) : expf(mold - mnew);
                sC[r] = corr;
                sL[r] = sL[r] * corr + sum;
                sM[r] = mnew;
            }
        }
        __syncwarp();
        /* O = O * corr + P.V */
        for (int e = lane; e < 16 * HD; e += ST_WARP) {
            const int r = row0 + e / HD, d = e % HD;
            sO[r * Lo::ldo + d] *= sC[r];
        }
        __syncwarp();
#pragma unroll
        for (int j = 0; j < HD / 16; j++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> of;
            wmma::load_matrix_sync(of, &sO[row0 * Lo::ldo + 16 * j], Lo::ldo, wmma::mem_row_major);
#pragma unroll
            for (int k = 0; k < ST_FA_BKV; k += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bf;
                wmma::load_matrix_sync(af, &sP[row0 * Lo::ldp + k], Lo::ldp);
                wmma::load_matrix_sync(bf, &sV[k * Lo::ldh + 16 * j], Lo::ldh);
                wmma::mma_sync(of, af, bf, of);
            }
            wmma::store_matrix_sync(&sO[row0 * Lo::ldo + 16 * j], of, Lo::ldo, wmma::mem_row_major);
        }
        __syncthreads(); /* every warp is done with sK/sV before the next positions */
    }
    /* write this tile's rows of the tile's sequence */
    for (int e = tid; e < ST_FA_BQ * HD; e += ST_FA_THREADS) {
        const int r = e / HD, d = e % HD;
        const int64_t i = i0 + r;
        if (i >= p.n || p.seq[i] != s_seq) continue;
        const float l = sL[r];
        st_st(st_row(p.out, i * p.n_head + h), p.out.type, d, l > 0.0f ? sO[r * Lo::ldo + d] / l : 0.0f);
    }
    if (s_foreign) st_fa_foreign(p, i0, h, s_seq);
#else
    (void)p;
#endif
}

/* Launches prefill flash-attention kernel kern over (64-token blocks, heads) with `bytes` of
 * dynamic shared memory, raising its limit once per device (done: that kernel's flags);
 * ST_UNSUPPORTED when the device cannot give that much (the caller then runs another path). */
static st_status st_fa_run(st_stream *s, const st_att_params &p, void (*kern)(st_att_params), size_t bytes, int *done) {
    if (bytes > s->dev->smem_optin) return ST_UNSUPPORTED;
    int &f = done[s->dev->index % ST_CUDA_MAX_DEVICES];
    if (!f) {
        if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            return ST_UNSUPPORTED;
        }
        f = 1;
    }
    dim3 grid(st_blocks(p.n, ST_FA_BQ), (unsigned)p.n_head);
    kern<<<grid, ST_FA_THREADS, bytes, s->s>>>(p);
    return st_cuda_launched(s, "attention");
}

template <int HD> static st_status st_fa_launch(st_stream *s, const st_att_params &p) {
    static int done[ST_CUDA_MAX_DEVICES];
    return st_fa_run(s, p, k_attention_fa<HD>, st_fa_layout<HD>::bytes, done);
}

/* ---- prefill: flash attention with the tiles in registers --------------------------------
 * The same blocks as k_attention_fa (64 query tokens of one head, 4 warps of 16 rows, K/V
 * positions 64 at a time, tokens of another sequence left to st_fa_row_serial), but each warp
 * keeps Q, the scores S, the probabilities P and the output O in mma.sync m16n8k16 fragments:
 * S = Q.K^T, the online softmax on the fragment rows (a quad of lanes shares a row), P reused
 * in registers as the A operand of O += P.V (V through ldmatrix.trans). Only K and V pass
 * through shared memory, two stages: the copies of tile j+1 (cp.async, cells looked up a tile
 * earlier) are in flight while tile j is multiplied. STRATA_CUDA_FA_OLD=1 selects
 * k_attention_fa. */
template <int HD> struct st_fa2_layout {
    static constexpr int ld = HD + 8; /* halves per staged row: 8 rows of an ldmatrix phase in different banks */
    static constexpr int pieces = HD / 8, rstep = ST_FA_THREADS / pieces, rows = ST_FA_BKV / rstep;
    static constexpr size_t kv = (size_t)ST_FA_BKV * ld * 2; /* bytes of one K (or V) stage */
    static constexpr size_t bytes = 4 * kv + 2 * ST_FA_BKV * 4 + ST_FA_BQ * 4;
};

__device__ __forceinline__ uint32_t st_fa2_pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &h, 4);
    return u;
}

template <int HD>
__global__ void __launch_bounds__(ST_FA_THREADS, 3) k_attention_fa2(st_att_params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    typedef st_fa2_layout<HD> Lo;
    constexpr int LD = Lo::ld, NT = ST_FA_BKV / 8, DT = HD / 8;
    extern __shared__ __align__(128) unsigned char smem[];
    __half *sK = (__half *)smem, *sV = (__half *)(smem + 2 * Lo::kv); /* [stage][pos][LD] */
    int *sOk = (int *)(smem + 4 * Lo::kv), *sLen = sOk + 2 * ST_FA_BKV;
    __shared__ int s_max, s_foreign, s_seq;
    const int tid = threadIdx.x, warp = tid / ST_WARP, lane = tid % ST_WARP, g = lane / 4, t = lane % 4;
    const int64_t h = blockIdx.y, i0 = (int64_t)blockIdx.x * ST_FA_BQ;
    const int64_t kvh = h / (p.n_head / p.n_kv);
    st_fa_lengths(p, i0, sLen, s_seq, s_foreign, s_max);
    const int row0 = warp * 16;
    /* Q fragments, pre-scaled F16, straight from memory (rows past n are zero) */
    uint32_t qa[HD / 16][4];
    {
        const int64_t ia = i0 + row0 + g, ib = ia + 8;
        const char *qA = ia < p.n ? st_row(p.q, ia * p.n_head + h) : NULL, *qB = ib < p.n ? st_row(p.q, ib * p.n_head + h) : NULL;
#pragma unroll
        for (int ks = 0; ks < HD / 16; ks++)
#pragma unroll
            for (int f = 0; f < 4; f++) {
                const char *qr = f & 1 ? qB : qA;
                const int d = ks * 16 + (f >> 1) * 8 + 2 * t;
                qa[ks][f] = qr ? st_fa2_pack(st_ld(qr, p.q.type, d) * p.scale, st_ld(qr, p.q.type, d + 1) * p.scale) : 0u;
            }
    }
    const int lenA = sLen[row0 + g], lenB = sLen[row0 + g + 8];
    const float *mA = p.mask && i0 + row0 + g < p.n ? p.mask + (i0 + row0 + g) * (int64_t)p.max_pos : NULL;
    const float *mB = p.mask && i0 + row0 + g + 8 < p.n ? p.mask + (i0 + row0 + g + 8) * (int64_t)p.max_pos : NULL;
    const int Lmax = s_max;
    const int32_t *cells = p.cell_table + (int64_t)s_seq * p.max_pos;
    /* staging: this thread copies 16-byte piece pc of rows rbase + rstep*k of each tile */
    const int pc = (tid % Lo::pieces) * 8, rbase = tid / Lo::pieces;
    int cc[Lo::rows];
    auto cells_at = [&](int kb) {
#pragma unroll
        for (int k = 0; k < Lo::rows; k++) {
            const int pos = kb + rbase + Lo::rstep * k;
            const int c = pos < Lmax ? cells[pos] : -1;
            cc[k] = c >= 0 && c < p.n_cells ? c : -1;
        }
    };
    auto issue = [&](int st) {
#pragma unroll
        for (int k = 0; k < Lo::rows; k++) {
            const int r = rbase + Lo::rstep * k;
            const bool ok = cc[k] >= 0;
            const int64_t c = ok ? cc[k] : 0;
            st_cp16((uint4 *)&sK[(st * ST_FA_BKV + r) * LD + pc], p.k + c * p.k_nb2 + kvh * p.k_nb1 + pc * 2, ok);
            st_cp16((uint4 *)&sV[(st * ST_FA_BKV + r) * LD + pc], p.v + c * p.v_nb2 + kvh * p.v_nb1 + pc * 2, ok);
            if (pc == 0) sOk[st * ST_FA_BKV + r] = ok;
        }
        st_cp_commit();
    };
    float o[DT][4];
#pragma unroll
    for (int j = 0; j < DT; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float mxA = -INFINITY, mxB = -INFINITY, lA = 0.0f, lB = 0.0f; /* l: this lane's share of the row sums */
    if (Lmax > 0) {
        cells_at(0);
        issue(0);
        if (ST_FA_BKV < Lmax) cells_at(ST_FA_BKV);
    }
    for (int kb = 0, it = 0; kb < Lmax; kb += ST_FA_BKV, it++) {
        const int st = it & 1;
        if (kb + ST_FA_BKV < Lmax) {
            issue(st ^ 1);
            if (kb + 2 * ST_FA_BKV < Lmax) cells_at(kb + 2 * ST_FA_BKV);
        } else {
            st_cp_commit(); /* an empty group keeps the count: the wait below leaves only the newest */
        }
        st_cp_wait1();
        __syncthreads();
        const __half *tK = sK + st * ST_FA_BKV * LD, *tV = sV + st * ST_FA_BKV * LD;
        const int *tOk = sOk + st * ST_FA_BKV;
        /* S = Q.K^T: s[j][e] is row g + 8(e/2), position kb + 8j + 2t + e%2 */
        float s[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < HD / 16; ks++)
#pragma unroll
            for (int jp = 0; jp < NT / 2; jp++) {
                uint32_t b[4];
                st_ldsm4(b, &tK[(jp * 16 + (lane % 8) + (lane / 16) * 8) * LD + ks * 16 + ((lane / 8) % 2) * 8]);
                st_mma16816(s[2 * jp], qa[ks][0], qa[ks][1], qa[ks][2], qa[ks][3], b[0], b[1]);
                st_mma16816(s[2 * jp + 1], qa[ks][0], qa[ks][1], qa[ks][2], qa[ks][3], b[2], b[3]);
            }
        /* masking and the online softmax of rows A (g) and B (g + 8) */
        float rmA = -INFINITY, rmB = -INFINITY;
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int c = 8 * j + 2 * t + (e & 1), pos = kb + c;
                const bool rowB = e >= 2;
                float v = s[j][e];
                if (pos >= (rowB ? lenB : lenA) || !tOk[c]) v = -INFINITY;
                else {
                    const float *mr = rowB ? mB : mA;
                    if (mr) v += mr[pos];
                    if (v != v) v = -INFINITY;
                }
                s[j][e] = v;
                if (rowB) rmB = fmaxf(rmB, v);
                else rmA = fmaxf(rmA, v);
            }
        rmA = fmaxf(rmA, __shfl_xor_sync(0xffffffffu, rmA, 1));
        rmA = fmaxf(rmA, __shfl_xor_sync(0xffffffffu, rmA, 2));
        rmB = fmaxf(rmB, __shfl_xor_sync(0xffffffffu, rmB, 1));
        rmB = fmaxf(rmB, __shfl_xor_sync(0xffffffffu, rmB, 2));
        const float nA = fmaxf(mxA, rmA), nB = fmaxf(mxB, rmB);
        const float cA = nA == -INFINITY ? 1.0f : __expf(mxA - nA), cB = nB == -INFINITY ? 1.0f : __expf(mxB - nB);
        mxA = nA;
        mxB = nB;
        lA *= cA;
        lB *= cB;
#pragma unroll
        for (int j = 0; j < DT; j++) {
            o[j][0] *= cA;
            o[j][1] *= cA;
            o[j][2] *= cB;
            o[j][3] *= cB;
        }
#pragma unroll
        for (int j = 0; j < NT; j++) {
            s[j][0] = nA == -INFINITY ? 0.0f : __expf(s[j][0] - nA);
            s[j][1] = nA == -INFINITY ? 0.0f : __expf(s[j][1] - nA);
            s[j][2] = nB == -INFINITY ? 0.0f : __expf(s[j][2] - nB);
            s[j][3] = nB == -INFINITY ? 0.0f : __expf(s[j][3] - nB);
            lA += s[j][0] + s[j][1];
            lB += s[j][2] + s[j][3];
        }
        /* O += P.V: P's A fragment for positions 16kk.. is s[2kk], s[2kk+1] packed to F16 */
#pragma unroll
        for (int kk = 0; kk < ST_FA_BKV / 16; kk++) {
            const uint32_t p0 = st_fa2_pack(s[2 * kk][0], s[2 * kk][1]), p1 = st_fa2_pack(s[2 * kk][2], s[2 * kk][3]),
                           p2 = st_fa2_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                           p3 = st_fa2_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int dp = 0; dp < DT / 2; dp++) {
                uint32_t b[4];
                st_ldsm4(b, &tV[(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LD + dp * 16 + (lane / 16) * 8], true);
                st_mma16816(o[2 * dp], p0, p1, p2, p3, b[0], b[1]);
                st_mma16816(o[2 * dp + 1], p0, p1, p2, p3, b[2], b[3]);
            }
        }
        __syncthreads(); /* every warp is done with this stage before it is refilled */
    }
    lA += __shfl_xor_sync(0xffffffffu, lA, 1);
    lA += __shfl_xor_sync(0xffffffffu, lA, 2);
    lB += __shfl_xor_sync(0xffffffffu, lB, 1);
    lB += __shfl_xor_sync(0xffffffffu, lB, 2);
    const float iA = lA > 0.0f ? 1.0f / lA : 0.0f, iB = lB > 0.0f ? 1.0f / lB : 0.0f;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int64_t i = i0 + row0 + g + 8 * half;
        if (i >= p.n || p.seq[i] != s_seq) continue;
        char *orow = st_row(p.out, i * p.n_head + h);
        const float inv = half ? iB : iA;
#pragma unroll
        for (int j = 0; j < DT; j++) {
            st_st(orow, p.out.type, 8 * j + 2 * t, o[j][2 * half] * inv);
            st_st(orow, p.out.type, 8 * j + 2 * t + 1, o[j][2 * half + 1] * inv);
        }
    }
    if (s_foreign) st_fa_foreign(p, i0, h, s_seq);
#else
    (void)p;
#endif
}

template <int HD> static st_status st_fa2_launch(st_stream *s, const st_att_params &p) {
    static int done[ST_CUDA_MAX_DEVICES];
    return st_fa_run(s, p, k_attention_fa2<HD>, st_fa2_layout<HD>::bytes, done);
}

/* STRATA_CUDA_FA_OLD=1: the shared-memory flash attention instead of the register one. */
static bool st_fa2_disabled(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("STRATA_CUDA_FA_OLD");
        v = e && e[0] == '1';
    }
    return v != 0;
}

/* Runs the tensor-core path when it applies; *ran says whether it did (ST_OK otherwise). */
st_status st_cuda_attention_tc(st_stream *s, const st_att_params &p, bool *ran) {
    *ran = false;
    const st_device *d = s->dev;
    if (d->cc_major < 8 || d->no_tc || p.kt != ST_TYPE_F16 || p.vt != ST_TYPE_F16 || p.hd != p.dv) return ST_OK;
    if (p.hd != 64 && p.hd != 128) return ST_OK;
    if (p.n < 16 || p.n_head > 65535) return ST_OK;
    if (((uintptr_t)p.k | (uintptr_t)p.v) % 16 || p.k_nb1 % 16 || p.k_nb2 % 16 || p.v_nb1 % 16 || p.v_nb2 % 16)
        return ST_OK;
    st_status st = st_fa2_disabled() ? (p.hd == 128 ? st_fa_launch<128>(s, p) : st_fa_launch<64>(s, p))
                                     : (p.hd == 128 ? st_fa2_launch<128>(s, p) : st_fa2_launch<64>(s, p));
    if (st == ST_UNSUPPORTED) return ST_OK; /* not enough shared memory: the general kernel runs */
    *ran = true;
    return st;
}

/* ---- decode: all query heads of a KV head per block ------------------------------------- */
/* Block (token i * n_kv + kv head, split) scores the chunk's positions for the G = n_head /
 * n_kv query heads sharing that KV head, so each K/V row is read once for all of them: two
 * threads per position dot the F16 K row with the G scaled queries (kept in shared memory),
 * a warp per head takes the chunk's max and sum, and thread d accumulates V column d for every
 * head. The (max, sum, acc) partials go to the workspace for k_attention_merge. */
#define ST_GQ_POS 32
#define ST_GQ_THREADS 128
#define ST_GQ_TPP (ST_GQ_THREADS / ST_GQ_POS) /* threads per position in the score phase */
#define ST_GQ_MAXG 16
#define ST_GQ_MAXHD 256

__global__ void __launch_bounds__(ST_GQ_THREADS) k_attention_gqa(st_att_params p) {
    __shared__ float sq[ST_GQ_MAXG][ST_GQ_MAXHD];
    __shared__ float ss[ST_GQ_MAXG][ST_GQ_POS];
    __shared__ int scell[ST_GQ_POS];
    const int G = (int)(p.n_head / p.n_kv), hd = (int)p.hd;
    const int64_t i = blockIdx.x / p.n_kv, kvh = blockIdx.x % p.n_kv;
    const int split = blockIdx.y, tid = threadIdx.x, warp = tid / ST_WARP, lane = tid % ST_WARP;
    int L = p.kv_len[i];
    if (L > p.max_pos) L = p.max_pos;
    const int p0 = split * p.chunk, p1 = min(L, p0 + p.chunk);
    const int32_t *cells = p.cell_table + (int64_t)p.seq[i] * p.max_pos;
    const float *mrow = p.mask ? p.mask + i * (int64_t)p.max_pos : NULL;
    for (int e = tid; e < G * hd; e += ST_GQ_THREADS) {
        const int g = e / hd, d = e % hd;
        sq[g][d] = st_ld(st_row(p.q, i * p.n_head + kvh * G + g), p.q.type, d) * p.scale;
    }
    if (tid < ST_GQ_POS) {
        const int pos = p0 + tid;
        int64_t c = pos < p1 ? cells[pos] : -1;
        scell[tid] = c >= 0 && c < p.n_cells ? (int)c : -1;
    }
    __syncthreads();
    /* scores: ST_GQ_TPP threads per position, each a slice of the row */
    {
        const int t = tid / ST_GQ_TPP, part = tid % ST_GQ_TPP, c = scell[t];
        const int dh = hd / ST_GQ_TPP, d0 = part * dh;
        float acc[ST_GQ_MAXG];
#pragma unroll
        for (int g = 0; g < ST_GQ_MAXG; g++) acc[g] = 0.0f;
        if (c >= 0) {
            const char *kr = p.k + (int64_t)c * p.k_nb2 + kvh * p.k_nb1;
            for (int d = d0; d < d0 + dh; d += 8) {
                const uint4 u = *(const uint4 *)(kr + d * 2);
                const __half2 *h2 = (const __half2 *)&u;
                float kf[8];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float2 f = __half22float2(h2[j]);
                    kf[2 * j] = f.x;
                    kf[2 * j + 1] = f.y;
                }
#pragma unroll
                for (int g = 0; g < ST_GQ_MAXG; g++) {
                    if (g < G) {
#pragma unroll
                        for (int j = 0; j < 8; j++) acc[g] = fmaf(kf[j], sq[g][d + j], acc[g]);
                    }
                }
            }
        }
#pragma unroll
        for (int g = 0; g < ST_GQ_MAXG; g++) {
            float v = acc[g];
#pragma unroll
            for (int o = 1; o < ST_GQ_TPP; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            if (part == 0 && g < G) {
                float s = -INFINITY;
                if (c >= 0) {
                    s = v;
                    if (mrow) s += mrow[p0 + t];
                    if (s != s) s = -INFINITY;
                }
                ss[g][t] = s;
            }
        }
    }
    __syncthreads();
    /* per head: max and sum over the chunk; ss becomes the weights */
    __shared__ float sm_m[ST_GQ_MAXG], sm_l[ST_GQ_MAXG];
    static_assert(ST_GQ_POS == ST_WARP, "one lane per position in the softmax");
    for (int g = warp; g < G; g += ST_GQ_THREADS / ST_WARP) {
        const float a = ss[g][lane];
        const float m = st_warp_max(a);
        const float ea = a == -INFINITY ? 0.0f : expf(a - m);
        const float l = st_warp_sum(ea);
        ss[g][lane] = ea;
        if (lane == 0) {
            sm_m[g] = m;
            sm_l[g] = l;
        }
    }
    __syncthreads();
    /* V: thread d accumulates column d for every head */
    const int npos = p1 > p0 ? p1 - p0 : 0;
    for (int d = tid; d < p.dv; d += ST_GQ_THREADS) {
        float acc[ST_GQ_MAXG];
#pragma unroll
        for (int g = 0; g < ST_GQ_MAXG; g++) acc[g] = 0.0f;
        for (int t = 0; t < npos; t++) {
            const int c = scell[t];
            if (c < 0) continue;
            const float v = __half2float(((const __half *)(p.v + (int64_t)c * p.v_nb2 + kvh * p.v_nb1))[d]);
#pragma unroll
            for (int g = 0; g < ST_GQ_MAXG; g++)
                if (g < G) acc[g] = fmaf(ss[g][t], v, acc[g]);
        }
        for (int g = 0; g < G; g++) {
            float *part = p.part + ((i * p.n_head + kvh * G + g) * p.n_split + split) * (p.dv + 2);
            part[2 + d] = acc[g];
        }
    }
    if (tid < G) {
        float *part = p.part + ((i * p.n_head + kvh * G + tid) * p.n_split + split) * (p.dv + 2);
        part[0] = sm_l[tid] > 0.0f ? sm_m[tid] : -INFINITY;
        part[1] = sm_l[tid];
    }
}

/* Runs the decode path when it applies (F16 caches, G <= 16, head dim <= 256 and a multiple of
 * 32): splits max_pos into chunks of at most ST_GQ_POS positions (as the workspace allows),
 * then merges; *ran says whether it did. */
st_status st_cuda_attention_gqa(st_stream *s, st_att_params p, bool *ran) {
    *ran = false;
    const int64_t G = p.n_head / p.n_kv;
    if (p.kt != ST_TYPE_F16 || p.vt != ST_TYPE_F16 || G > ST_GQ_MAXG || p.hd > ST_GQ_MAXHD || p.hd % 32 ||
        p.dv > ST_GQ_MAXHD)
        return ST_OK;
    if (((uintptr_t)p.k) % 16 || p.k_nb1 % 16 || p.k_nb2 % 16 || p.v_nb1 % 2 || p.v_nb2 % 2) return ST_OK;
    if (p.n * p.n_kv > 0x7fffffff) return ST_OK;
    const int64_t split = (p.max_pos + ST_GQ_POS - 1) / ST_GQ_POS;
    const int64_t by_ws = (int64_t)(s->ws_bytes / sizeof(float)) / (p.n * p.n_head * (p.dv + 2));
    if (split < 2 || split > by_ws || split > 65535) return ST_OK;
    p.n_split = (int)split;
    p.chunk = (int)((p.max_pos + split - 1) / split);
    k_attention_gqa<<<dim3((unsigned)(p.n * p.n_kv), (unsigned)p.n_split), ST_GQ_THREADS, 0, s->s>>>(p);
    ST_TRY(st_cuda_launched(s, "attention"));
    *ran = true;
    return st_cuda_attention_merge(s, p);
}

/* ---- decode on tensor cores, merged inside a thread-block cluster (sm_90+) ---------------- */
/* A cluster of CS blocks takes one (token i, KV head): block r of the cluster scores the r-th
 * 1/CS of the token's visible positions (kv_len is read on the device, so every block has work
 * whatever the context length), 16 positions per warp at a time, for the G <= 8 query heads of
 * the KV head on F16 tensor cores (mma m16n8k16, F32 sums):
 *   S[head][pos] = Q . K^T: A = Q, rows 0-7 its F16 high part and rows 8-15 its F16 low part
 *     (Q - hi), so the scores keep F32 precision; B = K rows as they are in the cache;
 *   O[head][dim] += P . V: A = P (the weights, split high/low the same way), B = V rows as
 *     they are in the cache, paired by position with a byte permute.
 * Each warp copies its tiles' K/V pieces into shared memory two tiles ahead (cp.async), so a
 * block's positions are all in flight at once up to 2 x 8 x 16 of them.
 * The dot products are over dims, so each thread's K row slice may be any 16-byte pieces as
 * long as its Q slice is the same: thread (g = lane/4, t = lane%4) holds 16-byte piece 4j+t
 * of a row for j < HD/32, so each load of a warp reads 64 contiguous bytes of 8 rows.
 * The online softmax is per warp; the block merges its warps in shared memory, then the
 * cluster merges its blocks through distributed shared memory in rank order and writes the
 * output: one kernel, no workspace, deterministic. */
#define ST_DC_WARPS 8
#define ST_DC_THREADS (ST_DC_WARPS * ST_WARP)
#define ST_DC_MAXG 8

/* Two floats as an F16 pair (x0 in the low half) and the pair of what rounding left out. */
__device__ __forceinline__ void st_split_h2(float x0, float x1, uint32_t &hi, uint32_t &lo) {
    const __half2 h = __floats2half2_rn(x0, x1);
    const float2 f = __half22float2(h);
    const __half2 r = __floats2half2_rn(x0 - f.x, x1 - f.y);
    memcpy(&hi, &h, 4);
    memcpy(&lo, &r, 4);
}

__device__ __forceinline__ uint32_t st_u4_word(const uint4 &u, int w) {
    return w == 0 ? u.x : w == 1 ? u.y : w == 2 ? u.z : u.w;
}

/* Cell of position pos of the block's range, or -1 past p1 or outside the cache. */
__device__ __forceinline__ int64_t st_dc_cell(const int32_t *cells, int pos, int p1, int64_t n_cells) {
    if (pos >= p1) return -1;
    const int32_t c = cells[pos];
    return c >= 0 && c < n_cells ? (int64_t)c : -1;
}

/* The cells of a 16-position tile at tb that thread (g, t) copies (K rows tb+g, tb+8+g; V rows
 * tb + 2t, 2t+1, 8+2t, 9+2t) and, for its four score positions (the V rows), the mask value to
 * add: -inf where the position has no valid cell. */
struct st_dc_tile {
    int64_t ck[2], cv[4];
    float madd[4];
};
__device__ __forceinline__ st_dc_tile st_dc_tile_at(const st_att_params &p, const int32_t *cells, const float *mrow,
                                                    int tb, int p1, int g, int t) {
    st_dc_tile x;
    x.ck[0] = st_dc_cell(cells, tb + g, p1, p.n_cells);
    x.ck[1] = st_dc_cell(cells, tb + 8 + g, p1, p.n_cells);
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int pos = tb + (r >> 1) * 8 + 2 * t + (r & 1);
        x.cv[r] = st_dc_cell(cells, pos, p1, p.n_cells);
        const float mk = mrow && pos < p1 ? mrow[pos] : 0.0f;
        x.madd[r] = x.cv[r] >= 0 ? mk : -INFINITY;
    }
    return x;
}

/* Copies a tile's K and V pieces of thread (g, t) into its stage: piece nt*NJ + j is K row nt
 * piece 4j+t, piece 2NJ + r*NC + c8 is V row r piece g + 8c8; [piece][lane] keeps the warp's
 * 16-byte reads of one piece on distinct banks. */
template <int HD>
__device__ __forceinline__ void st_dc_issue(uint4 *stage, const st_att_params &p, int64_t kvh, const st_dc_tile &x,
                                            int lane, int g, int t) {
    constexpr int NJ = HD / 32, NC = HD / 64;
#pragma unroll
    for (int nt = 0; nt < 2; nt++) {
        const int64_t c = x.ck[nt];
        const uint4 *kr = (const uint4 *)(p.k + (c < 0 ? 0 : c) * p.k_nb2 + kvh * p.k_nb1);
#pragma unroll
        for (int j = 0; j < NJ; j++) st_cp16(stage + (nt * NJ + j) * ST_WARP + lane, kr + 4 * j + t, c >= 0);
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int64_t c = x.cv[r];
        const uint4 *vr = (const uint4 *)(p.v + (c < 0 ? 0 : c) * p.v_nb2 + kvh * p.v_nb1);
#pragma unroll
        for (int c8 = 0; c8 < NC; c8++)
            st_cp16(stage + (2 * NJ + r * NC + c8) * ST_WARP + lane, vr + g + 8 * c8, c >= 0);
    }
}

/* Dynamic shared memory of k_attention_dec<HD>: two stages of 16 positions per warp. */
template <int HD> constexpr size_t st_dc_dyn_bytes() {
    return (size_t)ST_DC_WARPS * 2 * (2 * (HD / 32) + 4 * (HD / 64)) * ST_WARP * sizeof(uint4);
}

template <int HD, int CS>
__global__ void __launch_bounds__(ST_DC_THREADS, 1) k_attention_dec(st_att_params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    constexpr int NJ = HD / 32; /* 16-byte K pieces per thread and row */
    constexpr int NC = HD / 64; /* 16-byte V pieces per thread and row */
    constexpr int ND = HD / 8;  /* 8-dim output tiles */
    constexpr int LD = HD + 4;  /* shared row stride: the (g, t) stores hit 32 banks */
    __shared__ float sWacc[ST_DC_WARPS][ST_DC_MAXG][LD];
    __shared__ float sWm[ST_DC_WARPS][ST_DC_MAXG], sWl[ST_DC_WARPS][ST_DC_MAXG], sWf[ST_DC_WARPS][ST_DC_MAXG];
    __shared__ float sC[ST_DC_MAXG][LD];
    __shared__ float sCm[ST_DC_MAXG], sCl[ST_DC_MAXG];
    st_pdl_begin();
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank();
    const int G = (int)(p.n_head / p.n_kv);
    const int64_t i = blockIdx.y / p.n_kv, kvh = blockIdx.y % p.n_kv;
    const int tid = threadIdx.x, warp = tid / ST_WARP, lane = tid % ST_WARP, g = lane >> 2, t = lane & 3;
    int L = p.kv_len[i];
    L = L < 0 ? 0 : L > p.max_pos ? p.max_pos : L;
    const int per = (((L + CS - 1) / CS) + 15) & ~15;
    const int p0 = rank * per, p1 = min(L, p0 + per);
    const int32_t *cells = p.cell_table + (int64_t)p.seq[i] * p.max_pos;
    const float *mrow = p.mask ? p.mask + i * (int64_t)p.max_pos : NULL;

    /* Q of head g, scaled, split high/low: qa[j][w] is the pair of dims 8(4j+t) + 2w */
    uint32_t qh[NJ][4], ql[NJ][4];
    {
        const char *qr = g < G ? st_row(p.q, i * p.n_head + kvh * G + g) : NULL;
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int w = 0; w < 4; w++) {
                const int d = 8 * (4 * j + t) + 2 * w;
                const float x0 = qr ? st_ld(qr, p.q.type, d) * p.scale : 0.0f;
                const float x1 = qr ? st_ld(qr, p.q.type, d + 1) * p.scale : 0.0f;
                st_split_h2(x0, x1, qh[j][w], ql[j][w]);
            }
    }
    float acc[ND][4];
#pragma unroll
    for (int d = 0; d < ND; d++) acc[d][0] = acc[d][1] = acc[d][2] = acc[d][3] = 0.0f;
    float mrun = -INFINITY, lrun = 0.0f; /* head g; lrun: this thread's positions only */

    /* this warp's tiles: tb = p0 + 16 * (warp + 8k), k < T; tile k is copied into stage k % 2
     * two tiles ahead, and the cells of tile k+2 load while tile k is computed */
    extern __shared__ uint4 st_dc_smem[];
    uint4 *stages = st_dc_smem + (size_t)warp * 2 * (2 * NJ + 4 * NC) * ST_WARP;
    constexpr int STAGE = (2 * NJ + 4 * NC) * ST_WARP;
    const int first = p0 + 16 * warp, stride = 16 * ST_DC_WARPS;
    const int T = first < p1 ? (p1 - first + stride - 1) / stride : 0;
    float ma[4], mb[4];
    {
        const st_dc_tile x0 = st_dc_tile_at(p, cells, mrow, first, p1, g, t);
        if (T > 0) st_dc_issue<HD>(stages, p, kvh, x0, lane, g, t);
        st_cp_commit();
        const st_dc_tile x1 = st_dc_tile_at(p, cells, mrow, first + stride, p1, g, t);
        if (T > 1) st_dc_issue<HD>(stages + STAGE, p, kvh, x1, lane, g, t);
        st_cp_commit();
#pragma unroll
        for (int r = 0; r < 4; r++) {
            ma[r] = x0.madd[r];
            mb[r] = x1.madd[r];
        }
    }
    for (int k = 0; k < T; k++) {
        const st_dc_tile xn = st_dc_tile_at(p, cells, mrow, first + (k + 2) * stride, p1, g, t);
        uint4 *stage = stages + (k & 1) * STAGE;
        st_cp_wait1();
        uint4 kk[2][NJ], vv[4][NC];
        const uint4 z4 = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int j = 0; j < NJ; j++) kk[nt][j] = stage[(nt * NJ + j) * ST_WARP + lane];
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c8 = 0; c8 < NC; c8++) vv[r][c8] = stage[(2 * NJ + r * NC + c8) * ST_WARP + lane];
        /* scores: sc[nt] rows g (high) and g+8 (low) of head g, positions tb + 8nt + 2t + {0,1} */
        float sc[2][2][4]; /* [nt][u]: two independent chains per tile of 8 positions */
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int u = 0; u < 2; u++) {
                sc[nt][u][0] = sc[nt][u][1] = sc[nt][u][2] = sc[nt][u][3] = 0.0f;
#pragma unroll
                for (int j = 0; j < NJ; j++)
                    st_mma16816(sc[nt][u], qh[j][2 * u], ql[j][2 * u], qh[j][2 * u + 1], ql[j][2 * u + 1],
                                 st_u4_word(kk[nt][j], 2 * u), st_u4_word(kk[nt][j], 2 * u + 1));
            }
        float s[4];
        bool ok[4];
        float tmax = -INFINITY;
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int nt = r >> 1, e0 = r & 1;
            const float x = (sc[nt][0][e0] + sc[nt][0][2 + e0]) + (sc[nt][1][e0] + sc[nt][1][2 + e0]) + ma[r];
            ok[r] = x == x && x != -INFINITY;
            s[r] = ok[r] ? x : -INFINITY;
            tmax = fmaxf(tmax, s[r]);
        }
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
        const float mnew = fmaxf(mrun, tmax), mref = mnew == -INFINITY ? 0.0f : mnew;
        const float corr = expf(mrun - mref);
        float e[4];
#pragma unroll
        for (int r = 0; r < 4; r++) e[r] = expf(s[r] - mref);
        lrun = lrun * corr + ((e[0] + e[1]) + (e[2] + e[3]));
        mrun = mnew;
#pragma unroll
        for (int d = 0; d < ND; d++) {
            acc[d][0] *= corr;
            acc[d][1] *= corr;
            acc[d][2] *= corr;
            acc[d][3] *= corr;
        }
        /* P as A: rows g / g+8 = high / low weights of head g, k = positions 2t.. and 8+2t.. */
        uint32_t pa0, pa1, pa2, pa3;
        st_split_h2(e[0], e[1], pa0, pa1);
        st_split_h2(e[2], e[3], pa2, pa3);
        /* a position without a score contributes nothing, whatever its V row holds */
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c8 = 0; c8 < NC; c8++)
                if (!ok[r]) vv[r][c8] = z4;
        /* V as B: output tile 8*c8 + h takes half h of piece g + 8*c8 of the rows */
#pragma unroll
        for (int c8 = 0; c8 < NC; c8++)
#pragma unroll
            for (int h = 0; h < 8; h++) {
                const unsigned sel = (h & 1) ? 0x7632u : 0x5410u;
                const uint32_t b0 = __byte_perm(st_u4_word(vv[0][c8], h >> 1), st_u4_word(vv[1][c8], h >> 1), sel);
                const uint32_t b1 = __byte_perm(st_u4_word(vv[2][c8], h >> 1), st_u4_word(vv[3][c8], h >> 1), sel);
                st_mma16816(acc[8 * c8 + h], pa0, pa1, pa2, pa3, b0, b1);
            }
        /* the stage's data is consumed (the mma used it): refill it with tile k+2 */
        if (k + 2 < T) st_dc_issue<HD>(stage, p, kvh, xn, lane, g, t);
        st_cp_commit();
#pragma unroll
        for (int r = 0; r < 4; r++) {
            ma[r] = mb[r];
            mb[r] = xn.madd[r];
        }
    }

    /* the warp's partial: acc[dt][e] (+ low row acc[dt][2+e]) is head g, dim
     * 8(2t + e + 8c) + h for dt = 8c + h; kept at k = (2dt + e) * 4 + t */
    lrun += __shfl_xor_sync(0xffffffffu, lrun, 1);
    lrun += __shfl_xor_sync(0xffffffffu, lrun, 2);
    if (t == 0) {
        sWm[warp][g] = mrun;
        sWl[warp][g] = lrun;
    }
#pragma unroll
    for (int d = 0; d < ND; d++) {
        sWacc[warp][g][(2 * d) * 4 + t] = acc[d][0] + acc[d][2];
        sWacc[warp][g][(2 * d + 1) * 4 + t] = acc[d][1] + acc[d][3];
    }
    __syncthreads();
    if (tid < G) {
        float M = -INFINITY, Ls = 0.0f;
        for (int w = 0; w < ST_DC_WARPS; w++) M = fmaxf(M, sWm[w][tid]);
        for (int w = 0; w < ST_DC_WARPS; w++) {
            const float f = sWm[w][tid] == -INFINITY ? 0.0f : expf(sWm[w][tid] - M);
            sWf[w][tid] = f;
            Ls += sWl[w][tid] * f;
        }
        sCm[tid] = M;
        sCl[tid] = Ls;
    }
    __syncthreads();
    for (int e = tid; e < G * HD; e += ST_DC_THREADS) {
        const int gg = e / HD, k = e % HD;
        float a = 0.0f;
#pragma unroll
        for (int w = 0; w < ST_DC_WARPS; w++) a += sWacc[w][gg][k] * sWf[w][gg];
        sC[gg][k] = a;
    }
    cluster.sync();
    /* block `rank` finishes elements [rank * per_r, (rank + 1) * per_r) of the G x HD output */
    const int per_r = (G * HD + CS - 1) / CS;
    for (int e = rank * per_r + tid; e < min(G * HD, (rank + 1) * per_r); e += ST_DC_THREADS) {
        const int gg = e / HD, k = e % HD;
        float rm[CS], rl[CS], ra[CS];
#pragma unroll
        for (int j = 0; j < CS; j++) {
            rm[j] = *cluster.map_shared_rank(&sCm[gg], j);
            rl[j] = *cluster.map_shared_rank(&sCl[gg], j);
            ra[j] = *cluster.map_shared_rank(&sC[gg][k], j);
        }
        float M = -INFINITY;
#pragma unroll
        for (int j = 0; j < CS; j++) M = fmaxf(M, rm[j]);
        float Ls = 0.0f, a = 0.0f;
#pragma unroll
        for (int j = 0; j < CS; j++) {
            const float f = rm[j] == -INFINITY ? 0.0f : expf(rm[j] - M);
            Ls += rl[j] * f;
            a += ra[j] * f;
        }
        const int tt = k & 3, ee = (k >> 2) & 1, dt = k >> 3;
        const int dim = 8 * (2 * tt + ee + 8 * (dt >> 3)) + (dt & 7);
        st_st(st_row(p.out, i * p.n_head + kvh * G + gg), p.out.type, dim, Ls > 0.0f ? a / Ls : 0.0f);
    }
    cluster.sync(); /* no block leaves while another still reads its shared memory */
#else
    (void)p;
#endif
}

/* Launch state per device and head dim: how many clusters of 16 (non-portable) and of 8
 * blocks can be resident at once, found on the first call; off after a failed launch. */
struct st_dc_state {
    int tried, off, max16, max8, force, no_pdl;
};
static st_dc_state st_dc_states[ST_CUDA_MAX_DEVICES][2];

/* The launch of k_attention_dec<HD, CS>: clusters of CS blocks, plus the PDL attribute when
 * `pdl` and st_pdl_on (at has room for two). */
template <int HD, int CS> static cudaLaunchConfig_t st_dc_config(st_stream *s, const st_att_params &p,
                                                                 cudaLaunchAttribute *at, bool pdl = false) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(CS, (unsigned)(p.n * p.n_kv), 1);
    cfg.blockDim = dim3(ST_DC_THREADS, 1, 1);
    cfg.dynamicSmemBytes = st_dc_dyn_bytes<HD>();
    cfg.stream = s->s;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CS;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1 + (pdl ? st_pdl_attr(s, at + 1) : 0);
    return cfg;
}

/* How many clusters of CS blocks of k_attention_dec<HD, CS> the device holds at once (0: none). */
template <int HD, int CS> static int st_dc_fits(st_stream *s, const st_att_params &p) {
    if (st_dc_dyn_bytes<HD>() + 48 * 1024 > s->dev->smem_optin ||
        cudaFuncSetAttribute(k_attention_dec<HD, CS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)st_dc_dyn_bytes<HD>()) != cudaSuccess ||
        (CS > 8 && cudaFuncSetAttribute(k_attention_dec<HD, CS>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                       cudaSuccess)) {
        (void)cudaGetLastError();
        return 0;
    }
    cudaLaunchAttribute at[1];
    const cudaLaunchConfig_t cfg = st_dc_config<HD, CS>(s, p, at);
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, k_attention_dec<HD, CS>, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

/* Clusters of 16 when all of them are resident at once (fewer positions per block), else 8;
 * STRATA_CUDA_ATT_CLUSTER=8 or 16 forces one size. */
template <int HD> static st_status st_dc_launch(st_stream *s, const st_att_params &p, bool *ran) {
    st_dc_state *st = &st_dc_states[s->dev->index % ST_CUDA_MAX_DEVICES][HD == 128];
    if (!st->tried) {
        st->max16 = st_dc_fits<HD, 16>(s, p);
        st->max8 = st_dc_fits<HD, 8>(s, p);
        const char *env = getenv("STRATA_CUDA_ATT_CLUSTER");
        st->force = env ? atoi(env) : 0;
        st->tried = 1;
    }
    if (st->off || (st->max16 < 1 && st->max8 < 1)) return ST_OK;
    const int64_t clusters = p.n * p.n_kv;
    bool use16 = st->max16 >= 1 && (clusters <= st->max16 || st->max8 < 1);
    if (st->force == 8 && st->max8 >= 1) use16 = false;
    if (st->force == 16 && st->max16 >= 1) use16 = true;
    cudaLaunchAttribute at[2];
    cudaError_t err = cudaErrorUnknown;
    /* with the PDL attribute first where it is on; a driver that refuses it with clusters gets a
     * plain launch */
    for (int pdl = !st->no_pdl && st_pdl_on(s->dev); pdl >= 0 && err != cudaSuccess; pdl--) {
        if (use16) {
            const cudaLaunchConfig_t cfg = st_dc_config<HD, 16>(s, p, at, pdl);
            err = cudaLaunchKernelEx(&cfg, k_attention_dec<HD, 16>, p);
        } else {
            const cudaLaunchConfig_t cfg = st_dc_config<HD, 8>(s, p, at, pdl);
            err = cudaLaunchKernelEx(&cfg, k_attention_dec<HD, 8>, p);
        }
        if (err != cudaSuccess && pdl) {
            (void)cudaGetLastError();
            st->no_pdl = 1;
        }
    }
    if (err != cudaSuccess) { /* not launched: the split kernels run instead from now on */
        (void)cudaGetLastError();
        st->off = 1;
        return ST_OK;
    }
    *ran = true;
    return st_cuda_launched(s, "attention");
}

/* Runs the cluster decode path when it applies (sm_90+, F16 caches with 16-byte aligned rows,
 * head dim 64 or 128 for K and V, at most 8 query heads per KV head, and not switched off by
 * STRATA_CUDA_ATT_OLD=1); *ran says whether it did. */
st_status st_cuda_attention_dec(st_stream *s, const st_att_params &p, bool *ran) {
    *ran = false;
    static int old = -1;
    if (old < 0) {
        const char *e = getenv("STRATA_CUDA_ATT_OLD");
        old = e && *e && strcmp(e, "0") != 0;
    }
    if (old || s->dev->cc_major < 9) return ST_OK;
    if (p.kt != ST_TYPE_F16 || p.vt != ST_TYPE_F16 || p.hd != p.dv || (p.hd != 64 && p.hd != 128)) return ST_OK;
    if (p.n_head / p.n_kv > ST_DC_MAXG || p.n * p.n_kv > 65535) return ST_OK;
    if (((uintptr_t)p.k | (uintptr_t)p.v) % 16 || p.k_nb1 % 16 || p.k_nb2 % 16 || p.v_nb1 % 16 || p.v_nb2 % 16)
        return ST_OK;
    return p.hd == 128 ? st_dc_launch<128>(s, p, ran) : st_dc_launch<64>(s, p, ran);
}
