/* SPDX-License-Identifier: Apache-2.0 */
/* ATTENTION over the paged cell table. A block of 4 warps handles one (token, head) and a
 * range of positions with an online softmax per warp, merged in shared memory. For decode
 * (few tokens x heads) the positions are split across blocks (flash-decoding): each split
 * writes (max, sum, acc) partials into the stream's workspace and a second kernel merges them.
 * Works for any n; positions past kv_len[i] and fully masked rows contribute nothing (a row
 * with no visible position yields zeros). ATTENTION_EX (gpt-oss) runs here too: a sliding window
 * moves each row's first position, and a per-head sink logit joins the softmax's sum. */
#include "cuda/cuda_attention.cuh"

__device__ __forceinline__ float st_cache_ld(const char *row, int type, int64_t d) {
    if (type == ST_TYPE_Q8_0) {
        const uint8_t *b = (const uint8_t *)row + (d / 32) * 34;
        return st_h2f((uint16_t)(b[0] | (b[1] << 8))) * (float)(int8_t)b[2 + d % 32];
    }
    return st_ld(row, type, d);
}

__global__ void __launch_bounds__(ST_ATT_WARPS * ST_WARP) k_attention(st_att_params p) {
    __shared__ float sm_m[ST_ATT_WARPS], sm_l[ST_ATT_WARPS];
    __shared__ float sm_acc[ST_ATT_WARPS][ST_ATT_MAX_HD];
    const int64_t h = blockIdx.x % p.n_head, i = blockIdx.x / p.n_head;
    const int split = blockIdx.y;
    const int warp = threadIdx.x / ST_WARP, lane = threadIdx.x % ST_WARP;
    const int64_t kvh = h / (p.n_head / p.n_kv);
    float qv[ST_ATT_PER_LANE], acc[ST_ATT_PER_LANE];
    const st_att_row rw = st_att_row_setup(p, i, h, lane, qv, acc);
    const int lo = p.window > 0 && rw.L > p.window ? rw.L - p.window : 0;
    const int p0 = max(split * p.chunk, lo);
    const int p1 = min(rw.L, split * p.chunk + p.chunk);
    const int32_t *cells = rw.cells;
    const float *mrow = rw.mrow;
    const int64_t dv = p.dv;
    float m = -INFINITY, l = 0.0f;
    for (int pos = p0 + warp; pos < p1; pos += ST_ATT_WARPS) {
        const int64_t c = cells[pos];
        if (c < 0 || c >= p.n_cells) continue;
        const char *kr = p.k + c * p.k_nb2 + kvh * p.k_nb1;
        float dot = 0.0f;
#pragma unroll
        for (int j = 0; j < ST_ATT_PER_LANE; j++) {
            const int64_t d = lane + j * ST_WARP;
            if (d < p.hd) dot += qv[j] * st_cache_ld(kr, p.kt, d);
        }
        dot = st_warp_sum(dot);
        float sc = dot * p.scale;
        if (mrow) sc += mrow[pos];
        if (sc == -INFINITY || sc != sc) continue;
        const float mn = fmaxf(m, sc);
        const float corr = expf(m - mn), e = expf(sc - mn);
        l = l * corr + e;
        m = mn;
        const char *vr = p.v + c * p.v_nb2 + kvh * p.v_nb1;
#pragma unroll
        for (int j = 0; j < ST_ATT_PER_LANE; j++) {
            const int64_t d = lane + j * ST_WARP;
            if (d < dv) acc[j] = acc[j] * corr + e * st_cache_ld(vr, p.vt, d);
        }
    }
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int j = 0; j < ST_ATT_PER_LANE; j++) {
        const int64_t d = lane + j * ST_WARP;
        if (d < dv) sm_acc[warp][d] = acc[j];
    }
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < ST_ATT_WARPS; w++) M = fmaxf(M, sm_m[w]);
    float Ls = 0.0f, f[ST_ATT_WARPS];
    for (int w = 0; w < ST_ATT_WARPS; w++) {
        f[w] = sm_l[w] > 0.0f ? expf(sm_m[w] - M) : 0.0f;
        Ls += sm_l[w] * f[w];
    }
    if (p.n_split > 1) {
        float *part = p.part + ((i * p.n_head + h) * p.n_split + split) * (dv + 2);
        if (threadIdx.x == 0) {
            part[0] = M;
            part[1] = Ls;
        }
        for (int64_t d = threadIdx.x; d < dv; d += blockDim.x) {
            float a = 0.0f;
            for (int w = 0; w < ST_ATT_WARPS; w++) a += sm_acc[w][d] * f[w];
            part[2 + d] = a;
        }
        return;
    }
    char *orow = st_row(p.out, i * p.n_head + h);
    const float fs = st_att_sink(p, h, M, Ls);
    const float inv = Ls > 0.0f ? fs / Ls : 0.0f;
    for (int64_t d = threadIdx.x; d < dv; d += blockDim.x) {
        float a = 0.0f;
        for (int w = 0; w < ST_ATT_WARPS; w++) a += sm_acc[w][d] * f[w];
        st_st(orow, p.out.type, d, a * inv);
    }
}

/* Merge the splits of one (token, head): the splits' factors exp(m_s - M) are computed once
 * into shared memory (up to ST_ATT_MERGE_MAX splits), then thread d sums its column. */
#define ST_ATT_MERGE_MAX 1024
__global__ void k_attention_merge(st_att_params p) {
    __shared__ float sf[ST_ATT_MERGE_MAX];
    __shared__ float red[32];
    const int64_t h = blockIdx.x % p.n_head, i = blockIdx.x / p.n_head;
    const int64_t w = p.dv + 2;
    const float *part = p.part + (i * p.n_head + h) * p.n_split * w;
    char *orow = st_row(p.out, i * p.n_head + h);
    if (p.n_split <= ST_ATT_MERGE_MAX) {
        float mx = -INFINITY;
        for (int s = threadIdx.x; s < p.n_split; s += blockDim.x)
            if (part[s * w + 1] > 0.0f) mx = fmaxf(mx, part[s * w]);
        mx = st_warp_max(mx);
        if (threadIdx.x % ST_WARP == 0) red[threadIdx.x / ST_WARP] = mx;
        __syncthreads();
        float M = -INFINITY;
        for (int k = 0; k < (int)(blockDim.x / ST_WARP); k++) M = fmaxf(M, red[k]);
        __syncthreads();
        float ls = 0.0f;
        for (int s = threadIdx.x; s < p.n_split; s += blockDim.x) {
            const float l = part[s * w + 1];
            const float f = l > 0.0f ? expf(part[s * w] - M) : 0.0f;
            sf[s] = f;
            ls += l * f;
        }
        float Ls = st_block_sum(ls, red);
        const float fs = st_att_sink(p, h, M, Ls);
        const float inv = Ls > 0.0f ? fs / Ls : 0.0f;
        for (int64_t d = threadIdx.x; d < p.dv; d += blockDim.x) {
            float a = 0.0f;
            for (int s = 0; s < p.n_split; s++)
                if (sf[s] != 0.0f) a += part[s * w + 2 + d] * sf[s];
            st_st(orow, p.out.type, d, a * inv);
        }
        return;
    }
    float M = -INFINITY, Ls = 0.0f;
    for (int s = 0; s < p.n_split; s++) M = fmaxf(M, part[s * w]);
    for (int s = 0; s < p.n_split; s++) {
        const float l = part[s * w + 1];
        if (l > 0.0f) Ls += l * expf(part[s * w] - M);
    }
    const float fs = st_att_sink(p, h, M, Ls);
    const float inv = Ls > 0.0f ? fs / Ls : 0.0f;
    for (int64_t d = threadIdx.x; d < p.dv; d += blockDim.x) {
        float a = 0.0f;
        for (int s = 0; s < p.n_split; s++) {
            const float l = part[s * w + 1];
            if (l > 0.0f) a += part[s * w + 2 + d] * expf(part[s * w] - M);
        }
        st_st(orow, p.out.type, d, a * inv);
    }
}

st_status st_cuda_attention_merge(st_stream *s, const st_att_params &p) {
    k_attention_merge<<<(unsigned)(p.n * p.n_head), 128, 0, s->s>>>(p);
    return st_cuda_launched(s, "attention");
}

static st_status check_cache(const st_tensor &c, const char *name, int64_t hd, int64_t nkv, int64_t n_cells) {
    if (!c.data) return st_mod_fail(ST_INVALID, "cuda attention: %s cache has no data", name);
    if (c.type != ST_TYPE_F32 && c.type != ST_TYPE_F16 && c.type != ST_TYPE_BF16 && c.type != ST_TYPE_Q8_0)
        return st_mod_fail(ST_UNSUPPORTED, "cuda attention: %s cache type %s", name, st_cuda_type_name(c.type));
    if (c.type == ST_TYPE_Q8_0 && hd % 32)
        return st_mod_fail(ST_INVALID, "cuda attention: Q8_0 cache needs head_dim %% 32 == 0");
    if (c.ne[0] != hd || c.ne[1] != nkv || c.ne[2] != n_cells)
        return st_mod_fail(ST_INVALID, "cuda attention: %s cache is [%lld][%lld][%lld], expected [%lld][%lld][%lld]",
                           name, (long long)c.ne[2], (long long)c.ne[1], (long long)c.ne[0], (long long)n_cells,
                           (long long)nkv, (long long)hd);
    if (c.type != ST_TYPE_Q8_0 && c.nb[0] != st_act_size(c.type))
        return st_mod_fail(ST_UNSUPPORTED, "cuda attention: %s cache not contiguous in dim 0", name);
    return ST_OK;
}

/* ATTENTION, and ATTENTION_EX with a window or sinks (those take the general kernel only). */
static st_status st_attention_run(st_stream *s, const st_attention_args *a, int window, const float *sinks) {
    ST_TRY(st_check_act(a->q, "attention", "q"));
    ST_TRY(st_check_act(a->out, "attention", "out"));
    const int64_t hd = a->q.ne[0], nh = a->q.ne[1], n = a->q.ne[2] * a->q.ne[3], nkv = a->k_cache.ne[1];
    const int64_t dv = a->v_cache.ne[0];
    if (a->out.ne[0] != dv || a->out.ne[1] != nh || a->out.ne[2] * a->out.ne[3] != n)
        return st_mod_fail(ST_INVALID, "cuda attention: out must be [%lld][%lld][%lld]", (long long)n, (long long)nh,
                           (long long)dv);
    if (hd > ST_ATT_MAX_HD || dv > ST_ATT_MAX_HD)
        return st_mod_fail(ST_UNSUPPORTED, "cuda attention: head dims %lld/%lld > %d", (long long)hd, (long long)dv,
                           ST_ATT_MAX_HD);
    if (nkv <= 0 || nh % nkv)
        return st_mod_fail(ST_INVALID, "cuda attention: %lld heads over %lld kv heads", (long long)nh, (long long)nkv);
    ST_TRY(check_cache(a->k_cache, "k", hd, nkv, a->k_cache.ne[2]));
    ST_TRY(check_cache(a->v_cache, "v", dv, nkv, a->k_cache.ne[2]));
    if (!hd || !nh || !n) return ST_OK;
    if (a->max_pos <= 0) return st_mod_fail(ST_INVALID, "cuda attention: max_pos %d", a->max_pos);
    if (!a->seq || !a->kv_len || !a->cell_table) return st_mod_fail(ST_INVALID, "cuda attention: NULL table");
    if (n * nh > 0x7fffffff) return st_mod_fail(ST_UNSUPPORTED, "cuda attention: too many rows");
    st_att_params p;
    p.q = st_view_of(a->q);
    p.out = st_view_of(a->out);
    p.k = (const char *)a->k_cache.data;
    p.v = (const char *)a->v_cache.data;
    p.kt = (int)a->k_cache.type;
    p.vt = (int)a->v_cache.type;
    p.k_nb1 = a->k_cache.nb[1];
    p.k_nb2 = a->k_cache.nb[2];
    p.v_nb1 = a->v_cache.nb[1];
    p.v_nb2 = a->v_cache.nb[2];
    p.n_cells = a->k_cache.ne[2] < a->v_cache.ne[2] ? a->k_cache.ne[2] : a->v_cache.ne[2];
    p.seq = a->seq;
    p.kv_len = a->kv_len;
    p.cell_table = a->cell_table;
    p.mask = a->mask;
    p.n = n;
    p.n_head = nh;
    p.n_kv = nkv;
    p.hd = hd;
    p.dv = dv;
    p.max_pos = a->max_pos;
    p.scale = a->scale;
    p.part = (float *)s->ws;
    p.window = window;
    p.sinks = sinks;
    const bool ex = window > 0 || sinks;
    /* Split the sequence when (tokens x heads) alone cannot fill the device. Each warp walks
     * its positions one after another (a chain of dependent loads per position), so the chunks
     * are short: ST_ATT_DECODE_CHUNK positions per block. kv_len is only known on the device,
     * so the split covers max_pos; blocks past kv_len exit at once. */
    int n_split = 1;
    const int64_t rows = n * nh, target = 4ll * (s->dev->n_sm > 0 ? s->dev->n_sm : 32);
    if (rows < target && a->max_pos >= 2 * ST_ATT_DECODE_CHUNK) {
        int64_t want = (a->max_pos + ST_ATT_DECODE_CHUNK - 1) / ST_ATT_DECODE_CHUNK;
        const int64_t by_ws = (int64_t)(s->ws_bytes / sizeof(float)) / (rows * (dv + 2));
        if (want > by_ws) want = by_ws;
        if (want > 65535) want = 65535;
        if (want > 1) n_split = (int)want;
    }
    p.n_split = n_split;
    p.chunk = (a->max_pos + n_split - 1) / n_split;
    ST_TRY(st_cuda_use(s->dev));
    /* decode-sized batches: the cluster kernel when the device and shapes allow (one launch,
     * no workspace, the split follows kv_len on the device). Up to 64 tokens always: a batched
     * decode's tokens are of different sequences, which the flash-attention tiles (one
     * sequence's K/V per 64 query tokens) would take one row at a time. */
    if (!ex && (rows < target || n <= 64)) {
        bool dec = false;
        ST_TRY(st_cuda_attention_dec(s, p, &dec));
        if (dec) return ST_OK;
    }
    if (n_split == 1 && !ex) {
        bool ran = false;
        const st_status st = st_cuda_attention_tc(s, p, &ran);
        if (ran || st != ST_OK) return st;
    }
    if (n_split > 1 && !ex) {
        bool gqa = false;
        ST_TRY(st_cuda_attention_gqa(s, p, &gqa));
        if (gqa) return ST_OK;
    }
    k_attention<<<dim3((unsigned)rows, (unsigned)n_split), ST_ATT_WARPS * ST_WARP, 0, s->s>>>(p);
    if (n_split > 1) {
        ST_TRY(st_cuda_launched(s, "attention"));
        k_attention_merge<<<(unsigned)rows, 128, 0, s->s>>>(p);
    }
    return st_cuda_launched(s, "attention");
}

extern "C" st_status st_cuda_attention(st_stream *s, const st_attention_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda attention: NULL argument");
    return st_attention_run(s, a, 0, NULL);
}

extern "C" st_status st_cuda_attention_ex(st_stream *s, const st_attention_ex_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda attention_ex: NULL argument");
    if (a->window < 0) return st_mod_fail(ST_INVALID, "cuda attention_ex: window %d is negative", a->window);
    return st_attention_run(s, &a->base, a->window, a->sinks);
}
