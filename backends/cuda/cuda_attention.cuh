/* SPDX-License-Identifier: Apache-2.0 */
/* Parameters shared by the attention kernels (k_attention.cu: any cache type, split over the
 * sequence for decode; k_attention_tc.cu: tensor-core prefill). */
#ifndef STRATA_CUDA_ATTENTION_CUH
#define STRATA_CUDA_ATTENTION_CUH

#include "cuda/cuda_common.cuh"

#define ST_ATT_WARPS 4
#define ST_ATT_DECODE_CHUNK 64 /* positions per block when the sequence is split */
#define ST_ATT_MAX_HD 576 /* DeepSeek MLA: 512 latent + 64 rotated dims per K row */
#define ST_ATT_PER_LANE (ST_ATT_MAX_HD / ST_WARP)

struct st_att_params {
    st_view q, out;             /* rows (token, head): ne1 = n_head */
    const char *k, *v;
    int kt, vt;                 /* cache types */
    int64_t k_nb1, k_nb2, v_nb1, v_nb2, n_cells;
    const int32_t *seq, *kv_len, *cell_table;
    const float *mask;
    int64_t n, n_head, n_kv, hd, dv; /* hd: K/Q head dim; dv: V/out head dim */
    int max_pos, n_split, chunk;
    float scale;
    float *part;                /* [n][n_head][n_split][hd + 2] when n_split > 1 */
    int window;                 /* ATTENTION_EX: positions >= kv_len - window only (0: all) */
    const float *sinks;         /* ATTENTION_EX: [n_head] sink logits, or NULL */
};

/* Head h's sink logit (ATTENTION_EX) joins a softmax whose largest score is M and sum Ls:
 * Ls becomes the new sum, and the result is the factor for the values accumulated against M. */
__device__ __forceinline__ float st_att_sink(const st_att_params &p, int64_t h, float M, float &Ls) {
    if (!p.sinks) return 1.0f;
    const float sk = p.sinks[h], M2 = fmaxf(M, sk);
    const float f = Ls > 0.0f ? expf(M - M2) : 0.0f;
    Ls = Ls * f + expf(sk - M2);
    return f;
}

/* A warp's view of one (token i, head h) row: visible positions L (kv_len clamped to
 * max_pos), the sequence's cell table row, the mask row (or NULL), and the query spread over
 * the lanes (element lane + 32j in qv[j]) with acc[] zeroed. */
struct st_att_row {
    int L;
    const int32_t *cells;
    const float *mrow;
};
__device__ __forceinline__ st_att_row st_att_row_setup(const st_att_params &p, int64_t i, int64_t h, int lane,
                                                       float *qv, float *acc) {
    st_att_row r;
    r.L = p.kv_len[i];
    if (r.L > p.max_pos) r.L = p.max_pos;
    r.cells = p.cell_table + (int64_t)p.seq[i] * p.max_pos;
    r.mrow = p.mask ? p.mask + i * (int64_t)p.max_pos : NULL;
    const char *qr = st_row(p.q, i * p.n_head + h);
#pragma unroll
    for (int j = 0; j < ST_ATT_PER_LANE; j++) {
        const int64_t d = lane + j * ST_WARP;
        qv[j] = d < p.hd ? st_ld(qr, p.q.type, d) : 0.0f;
        acc[j] = 0.0f;
    }
    return r;
}

/* The tensor-core prefill path (k_attention_tc.cu): launches it when the shapes, cache types
 * and device allow and sets *ran; otherwise leaves *ran false and returns ST_OK. */
st_status st_cuda_attention_tc(st_stream *s, const st_att_params &p, bool *ran);
/* The decode path (k_attention_tc.cu): every query head of a KV head per block, over chunks of
 * at most 32 positions, then the merge; same contract as above. */
st_status st_cuda_attention_gqa(st_stream *s, st_att_params p, bool *ran);
/* The decode path on sm_90+ (k_attention_tc.cu): a cluster of blocks per (token, KV head),
 * all query heads of the group on tensor cores, merged in the cluster without a workspace;
 * same contract as above. STRATA_CUDA_ATT_OLD=1 switches it off (the split path runs),
 * STRATA_CUDA_ATT_CLUSTER=8 or 16 forces the cluster size. */
st_status st_cuda_attention_dec(st_stream *s, const st_att_params &p, bool *ran);
/* Launches k_attention_merge over p.n_split partials in the workspace (k_attention.cu). */
st_status st_cuda_attention_merge(st_stream *s, const st_att_params &p);

#endif
