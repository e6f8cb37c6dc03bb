/* SPDX-License-Identifier: Apache-2.0 */
/* ROPE (normal/NeoX, YaRN) and KV_WRITE into the paged F32/F16/Q8_0 cache. */
#include "cuda/cuda_rope.cuh"

struct st_rope_params {
    st_view x, out;      /* rows are (token, head) pairs: ne1 = n_head, ne2 = n */
    const int32_t *pos;
    int64_t n_head, hd, n;
    st_rope_freq f;
};

/* One thread per (token, head, pair); pairs past n_rot/2 copy the unrotated dims. */
__global__ void k_rope(st_rope_params p) {
    const int64_t half = (p.hd + 1) / 2;
    const int64_t total = p.n * p.n_head * half;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = idx % half, row = idx / half; /* row = t * n_head + h */
        const int64_t t = row / p.n_head;
        const char *xr = st_row(p.x, row);
        char *orow = st_row(p.out, row);
        if (i < p.f.n_rot / 2) {
            const int64_t i0 = p.f.neox ? i : 2 * i, i1 = p.f.neox ? i + p.f.n_rot / 2 : 2 * i + 1;
            const float x0 = st_ld(xr, p.x.type, i0), x1 = st_ld(xr, p.x.type, i1);
            float c, s;
            st_rope_cs(p.f, p.pos[t], i, &c, &s);
            st_st(orow, p.out.type, i0, x0 * c - x1 * s);
            st_st(orow, p.out.type, i1, x0 * s + x1 * c);
        } else {
            /* unrotated dims n_rot .. hd-1, two per thread */
            const int64_t d0 = p.f.n_rot + 2 * (i - p.f.n_rot / 2);
            for (int64_t d = d0; d < d0 + 2 && d < p.hd; d++) st_st(orow, p.out.type, d, st_ld(xr, p.x.type, d));
        }
    }
}

/* YaRN correction dims: the rotary pair where `n_rot_b` full rotations fit in n_ctx_orig. */
static double corr_dim(int n_dims, int n_ctx_orig, double n_rot_b, double base) {
    return n_dims * log(n_ctx_orig / (n_rot_b * 2.0 * 3.14159265358979323846)) / (2.0 * log(base));
}

st_status st_rope_freq_of(const st_rope_args *a, int64_t hd, const char *op, st_rope_freq *f) {
    if (a->mode != ST_ROPE_NORMAL && a->mode != ST_ROPE_NEOX)
        return st_mod_fail(ST_INVALID, "cuda %s: rope mode %u", op, a->mode);
    if (a->n_rot < 0 || a->n_rot > hd || (a->n_rot & 1))
        return st_mod_fail(ST_INVALID, "cuda %s: n_rot %d with head_dim %lld", op, a->n_rot, (long long)hd);
    if (!(a->freq_base > 0.0f) || !(a->freq_scale > 0.0f))
        return st_mod_fail(ST_INVALID, "cuda %s: freq_base %g and freq_scale %g must be positive", op,
                           (double)a->freq_base, (double)a->freq_scale);
    f->n_rot = a->n_rot;
    f->neox = a->mode == ST_ROPE_NEOX;
    f->freq_base = a->freq_base;
    f->freq_scale = a->freq_scale;
    f->ext_factor = a->ext_factor;
    f->attn_factor = a->attn_factor;
    f->corr_lo = 0.0f;
    f->corr_hi = 0.0f;
    if (a->ext_factor != 0.0f) {
        if (a->n_ctx_orig <= 0) return st_mod_fail(ST_INVALID, "cuda %s: YaRN needs n_ctx_orig > 0", op);
        const double lo = floor(corr_dim(a->n_rot, a->n_ctx_orig, a->beta_fast, a->freq_base));
        const double hi = ceil(corr_dim(a->n_rot, a->n_ctx_orig, a->beta_slow, a->freq_base));
        f->corr_lo = (float)fmax(0.0, lo);
        f->corr_hi = (float)fmin((double)(a->n_rot - 1), hi);
    }
    return ST_OK;
}

extern "C" st_status st_cuda_rope(st_stream *s, const st_rope_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda rope: NULL argument");
    ST_TRY(st_check_act(a->x, "rope", "x"));
    ST_TRY(st_check_act(a->out, "rope", "out"));
    if (!st_same_shape(a->x, a->out)) return st_mod_fail(ST_INVALID, "cuda rope: x and out shapes differ");
    const int64_t hd = a->x.ne[0], nh = a->x.ne[1], n = a->x.ne[2] * a->x.ne[3];
    st_rope_params p;
    ST_TRY(st_rope_freq_of(a, hd, "rope", &p.f));
    if (!hd || !nh || !n) return ST_OK;
    if (!a->pos) return st_mod_fail(ST_INVALID, "cuda rope: NULL positions");
    p.x = st_view_of(a->x);
    p.out = st_view_of(a->out);
    p.pos = a->pos;
    p.n_head = nh;
    p.hd = hd;
    p.n = n;
    ST_TRY(st_cuda_use(s->dev));
    const int64_t total = n * nh * ((hd + 1) / 2);
    int64_t blocks = (total + 255) / 256;
    if (blocks > 65535 * 16) blocks = 65535 * 16;
    k_rope<<<(unsigned)blocks, 256, 0, s->s>>>(p);
    return st_cuda_launched(s, "rope");
}

/* ---- KV write ---------------------------------------------------------------------------- */
/* Block per token. A cell named by a later token too is left to that token (the later token
 * wins, as in core/ref). Plain caches: threads over (head, dim); Q8_0: a thread per 32-element
 * block with d = max|x| / 127 and q = round-half-away(x / d) clamped to +-127. */
__global__ void k_kv_write(st_view src, char *cache, int ctype, int64_t c_nb1, int64_t c_nb2, const int32_t *cells,
                           int64_t n_cells, int64_t n_kv, int64_t hd, int64_t n) {
    const int64_t t = blockIdx.x;
    const int32_t c = cells[t];
    int later = 0;
    for (int64_t t2 = t + 1 + threadIdx.x; t2 < n; t2 += blockDim.x) later |= cells[t2] == c;
    if (__syncthreads_or(later) || c < 0 || c >= n_cells) return;
    if (ctype != ST_TYPE_Q8_0) {
        for (int64_t idx = threadIdx.x; idx < n_kv * hd; idx += blockDim.x) {
            const int64_t d = idx % hd, h = idx / hd;
            st_st(cache + c * c_nb2 + h * c_nb1, ctype, d, st_ld(st_row(src, t * n_kv + h), src.type, d));
        }
        return;
    }
    /* one thread per 32-element block: a plain serial loop, the same arithmetic as core/quant */
    const int64_t nblk = hd / 32;
    for (int64_t w = threadIdx.x; w < n_kv * nblk; w += blockDim.x) {
        const int64_t b = w % nblk, h = w / nblk;
        const char *xr = st_row(src, t * n_kv + h);
        float amax = 0.0f;
        for (int l = 0; l < 32; l++) amax = fmaxf(amax, fabsf(st_ld(xr, src.type, b * 32 + l)));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint8_t *blk = (uint8_t *)(cache + c * c_nb2 + h * c_nb1) + b * 34;
        for (int l = 0; l < 32; l++) {
            const float q = fminf(127.0f, fmaxf(-127.0f, roundf(st_ld(xr, src.type, b * 32 + l) * id)));
            blk[2 + l] = (uint8_t)(int8_t)(int)q;
        }
        /* d as one 16-bit store (blk is 2-byte aligned, checked on the host), the same path as
         * F16 outputs. Two byte stores of the converted half lost the low byte on sm_90. */
        st_st(blk, ST_TYPE_F16, 0, d);
    }
}

static st_status kv_one(st_stream *s, const st_tensor &src, const st_tensor &cache, const int32_t *cells,
                        const char *name) {
    ST_TRY(st_check_act(src, "kv_write", name));
    const int64_t hd = src.ne[0], nkv = src.ne[1], n = src.ne[2] * src.ne[3];
    ST_TRY(st_check_kv_cache(cache, hd, nkv, "kv_write", name));
    if (!hd || !nkv || !n) return ST_OK;
    if (n > 0x7fffffff) return st_mod_fail(ST_UNSUPPORTED, "cuda kv_write: %lld tokens", (long long)n);
    k_kv_write<<<(unsigned)n, 256, 0, s->s>>>(st_view_of(src), (char *)cache.data, (int)cache.type, cache.nb[1],
                                              cache.nb[2], cells, cache.ne[2], nkv, hd, n);
    return st_cuda_launched(s, "kv_write");
}

extern "C" st_status st_cuda_kv_write(st_stream *s, const st_kv_write_args *a) {
    if (!s || !a) return st_mod_fail(ST_INVALID, "cuda kv_write: NULL argument");
    const int with_v = a->v.data != NULL || a->v_cache.data != NULL;
    if (with_v && a->k.ne[2] * a->k.ne[3] != a->v.ne[2] * a->v.ne[3])
        return st_mod_fail(ST_INVALID, "cuda kv_write: k and v token counts differ");
    if (a->k.ne[2] * a->k.ne[3] > 0 && !a->cells) return st_mod_fail(ST_INVALID, "cuda kv_write: NULL cells");
    ST_TRY(st_cuda_use(s->dev));
    ST_TRY(kv_one(s, a->k, a->k_cache, a->cells, "k"));
    return with_v ? kv_one(s, a->v, a->v_cache, a->cells, "v") : ST_OK;
}
