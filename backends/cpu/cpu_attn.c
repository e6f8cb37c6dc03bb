/* SPDX-License-Identifier: Apache-2.0 */
/* ROPE, KV_WRITE and ATTENTION on the CPU. Attention reads each K/V row of the paged cache
 * once for every query head of its GQA group, in blocks with an online softmax, and splits long
 * contexts over threads (see the ATTENTION section). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu/cpu_internal.h"

/* ---------------------------------------------------------------- ROPE */

typedef struct rope_job {
    const st_rope_args *a;
    int64_t n, n_head, hd;
    float corr0, corr1; /* YaRN correction dims */
    float *scratch;     /* [nth][2 * (hd + 16)] */
} rope_job;

static float yarn_ramp(float low, float high, int i0) {
    float y = ((float)(i0 / 2) - low) / fmaxf(0.001f, high - low);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

/* cos/sin of every rotated pair of position p into cs[2 * (n_rot/2)]; angles in double (they
 * reach thousands of radians at long context). */
static void rope_cache(const rope_job *j, double p, float *cs) {
    const st_rope_args *a = j->a;
    int n_rot = a->n_rot;
    double mscale = a->attn_factor;
    if (a->ext_factor != 0.0f) mscale *= 1.0 + 0.1 * log(1.0 / (double)a->freq_scale);
    for (int i = 0; i < n_rot / 2; i++) {
        double theta_extrap = p * pow((double)a->freq_base, -2.0 * i / n_rot);
        double theta = (double)a->freq_scale * theta_extrap;
        if (a->ext_factor != 0.0f) {
            double mix = (double)yarn_ramp(j->corr0, j->corr1, 2 * i) * (double)a->ext_factor;
            theta = theta * (1.0 - mix) + theta_extrap * mix;
        }
        cs[2 * i] = (float)(cos(theta) * mscale);
        cs[2 * i + 1] = (float)(sin(theta) * mscale);
    }
}

static void rope_task(void *vctx, int ith, int nth) {
    rope_job *j = vctx;
    const st_rope_args *a = j->a;
    int64_t t0, t1, hd = j->hd;
    st_cpu_split(j->n, ith, nth, &t0, &t1);
    float *cs = j->scratch + (size_t)ith * 2 * (size_t)(hd + 16), *v = cs + hd + 16;
    int n_rot = a->n_rot, half = n_rot / 2;
    for (int64_t t = t0; t < t1; t++) {
        rope_cache(j, (double)a->pos[t], cs);
        for (int64_t h = 0; h < j->n_head; h++) {
            int64_t r = t * j->n_head + h;
            st_cpu_load_to(a->x.type, st_cpu_row(&a->x, r), v, hd);
            if (a->mode == ST_ROPE_NEOX) {
                for (int i = 0; i < half; i++) {
                    float c = cs[2 * i], s = cs[2 * i + 1], x0 = v[i], x1 = v[i + half];
                    v[i] = x0 * c - x1 * s;
                    v[i + half] = x0 * s + x1 * c;
                }
            } else {
                for (int i = 0; i < n_rot; i += 2) {
                    float c = cs[i], s = cs[i + 1], x0 = v[i], x1 = v[i + 1];
                    v[i] = x0 * c - x1 * s;
                    v[i + 1] = x0 * s + x1 * c;
                }
            }
            st_cpu_store(a->out.type, v, st_cpu_row(&a->out, r), hd);
        }
    }
}

st_status st_cpu_rope(st_stream *st, const st_rope_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu rope: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_act("rope", "x", &a->x)) != ST_OK) return s;
    if ((s = st_cpu_check_act("rope", "out", &a->out)) != ST_OK) return s;
    int64_t hd = a->x.ne[0], n_head = a->x.ne[1], n = a->x.ne[2] * a->x.ne[3];
    if (a->out.ne[0] != hd || a->out.ne[1] != n_head || a->out.ne[2] * a->out.ne[3] != n)
        return st_mod_fail(ST_INVALID, "cpu rope: out shape differs from x");
    if (a->mode != ST_ROPE_NORMAL && a->mode != ST_ROPE_NEOX)
        return st_mod_fail(ST_INVALID, "cpu rope: mode %u", a->mode);
    if (a->n_rot < 0 || a->n_rot % 2 || a->n_rot > hd)
        return st_mod_fail(ST_INVALID, "cpu rope: n_rot = %d with head_dim %lld", a->n_rot, (long long)hd);
    if (n > 0 && !a->pos) return st_mod_fail(ST_INVALID, "cpu rope: pos is NULL");
    if (n == 0 || hd == 0 || n_head == 0) return ST_OK;
    if (!(a->freq_base > 0.0f) || !(a->freq_scale > 0.0f))
        return st_mod_fail(ST_INVALID, "cpu rope: freq_base %g and freq_scale %g must be positive", (double)a->freq_base,
                           (double)a->freq_scale);
    if (a->ext_factor != 0.0f && a->n_ctx_orig <= 0)
        return st_mod_fail(ST_INVALID, "cpu rope: YaRN needs n_ctx_orig > 0");
    rope_job j = {a, n, n_head, hd, 0.0f, 0.0f, NULL};
    if (a->ext_factor != 0.0f && a->n_rot > 0) {
        float lo = floorf(yarn_corr_dim(a->n_rot, a->n_ctx_orig, a->beta_fast, a->freq_base));
        float hi = ceilf(yarn_corr_dim(a->n_rot, a->n_ctx_orig, a->beta_slow, a->freq_base));
        j.corr0 = fmaxf(0.0f, lo);
        j.corr1 = fminf((float)(a->n_rot - 1), hi);
    }
    st_device *d = st->dev;
    int nth = st_cpu_nth(d, n * n_head * hd, 8192);
    if (nth > n) nth = (int)n;
    j.scratch = malloc((size_t)nth * 2 * (size_t)(hd + 16) * sizeof(float));
    if (!j.scratch) return st_mod_fail(ST_OOM, "cpu rope: scratch");
    st_cpu_pool_run(d->pool, rope_task, &j, nth);
    free(j.scratch);
    return ST_OK;
}

/* ---------------------------------------------------------------- KV_WRITE */

static int is_cache_type(uint32_t t) {
    return t == ST_TYPE_F32 || t == ST_TYPE_F16 || t == ST_TYPE_BF16 || t == ST_TYPE_Q8_0;
}

/* A cache is [n_cells][n_kv][d] with contiguous rows of d elements (Q8_0: d/32 blocks). */
static st_status check_cache(const char *op, const char *name, const st_tensor *c, int64_t n_kv, int64_t d) {
    if (!is_cache_type(c->type))
        return st_mod_fail(ST_UNSUPPORTED, "cpu %s: %s has type %s; expected F32, F16, BF16 or Q8_0", op, name,
                           st_type_name(c->type));
    if (!c->data) return st_mod_fail(ST_INVALID, "cpu %s: %s has no data", op, name);
    if (c->ne[0] != d || c->ne[1] != n_kv || c->ne[3] != 1)
        return st_mod_fail(ST_INVALID, "cpu %s: %s is [%lld][%lld][%lld]; expected [..][%lld][%lld]", op, name,
                           (long long)c->ne[2], (long long)c->ne[1], (long long)c->ne[0], (long long)n_kv, (long long)d);
    if (c->type == ST_TYPE_Q8_0) {
        if (d % ST_QK8_0)
            return st_mod_fail(ST_INVALID, "cpu %s: Q8_0 %s needs rows of a multiple of 32 (got %lld)", op, name,
                               (long long)d);
    } else if (d > 1 && c->nb[0] != (c->type == ST_TYPE_F32 ? 4 : 2)) {
        return st_mod_fail(ST_INVALID, "cpu %s: %s rows must be contiguous", op, name);
    }
    return ST_OK;
}

/* Write one f32 row into a cache row of type F32/F16/BF16/Q8_0. */
static void cache_store(uint32_t type, const float *src, void *dst, int64_t d) {
    if (type == ST_TYPE_Q8_0) (void)st_quantize_row(ST_TYPE_Q8_0, src, dst, d);
    else st_cpu_store(type, src, dst, d);
}

/* Address of cache row (cell, head). */
static char *cache_row(const st_tensor *c, int64_t cell, int64_t head) {
    return (char *)c->data + cell * c->nb[2] + head * c->nb[1];
}

static st_status check_kv_src(const char *name, const st_tensor *src, const char *cname, const st_tensor *cache) {
    st_status s;
    if ((s = st_cpu_check_act("kv_write", name, src)) != ST_OK) return s;
    if (src->ne[3] != 1) return st_mod_fail(ST_INVALID, "cpu kv_write: %s must be 3-D", name);
    return check_cache("kv_write", cname, cache, src->ne[1], src->ne[0]);
}

st_status st_cpu_kv_write(st_stream *st, const st_kv_write_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu kv_write: NULL stream or args");
    st_status s;
    if ((s = check_kv_src("k", &a->k, "k_cache", &a->k_cache)) != ST_OK) return s;
    int with_v = a->v.data != NULL || a->v_cache.data != NULL;
    int64_t n = a->k.ne[2], n_cells = a->k_cache.ne[2];
    if (with_v) {
        if ((s = check_kv_src("v", &a->v, "v_cache", &a->v_cache)) != ST_OK) return s;
        if (a->v.ne[2] != n || a->v_cache.ne[2] != n_cells)
            return st_mod_fail(ST_INVALID, "cpu kv_write: k and v disagree on tokens or cells");
    }
    if (n > 0 && !a->cells) return st_mod_fail(ST_INVALID, "cpu kv_write: cells is NULL");
    for (int64_t i = 0; i < n; i++)
        if (a->cells[i] < 0 || a->cells[i] >= n_cells)
            return st_mod_fail(ST_INVALID, "cpu kv_write: cells[%lld] = %d outside [0, %lld)", (long long)i,
                               a->cells[i], (long long)n_cells);
    int64_t width = a->k.ne[0] > a->v.ne[0] ? a->k.ne[0] : a->v.ne[0];
    float *tmp = malloc((size_t)(width + 16) * sizeof(float));
    if (!tmp) return st_mod_fail(ST_OOM, "cpu kv_write: scratch");
    for (int pass = 0; pass < (with_v ? 2 : 1); pass++) {
        const st_tensor *src = pass ? &a->v : &a->k, *dst = pass ? &a->v_cache : &a->k_cache;
        for (int64_t i = 0; i < n; i++)
            for (int64_t h = 0; h < src->ne[1]; h++) {
                st_cpu_load_to(src->type, st_cpu_row(src, i * src->ne[1] + h), tmp, src->ne[0]);
                cache_store(dst->type, tmp, cache_row(dst, a->cells[i], h), src->ne[0]);
            }
    }
    free(tmp);
    return ST_OK;
}

/* ---------------------------------------------------------------- ATTENTION */

/* Attention runs as tasks of (token, kv head, chunk of ST_ATTN_CHUNK positions). A task walks
 * its chunk in blocks of ST_ATTN_BLOCK positions with an online softmax: scores of every query
 * head of the GQA group against the block's K rows (one kernel call), the running max and sum
 * per head, then the block's V rows weighted into the head outputs (one kernel call). A context
 * longer than one chunk is split into several tasks (so decode of one token uses every thread);
 * the task that finishes a (token, kv head) last merges the chunks' partial results in chunk
 * order. The chunk grid depends only on the position, so a token's result does not depend on
 * the batch or on the thread count. */
#define ST_ATTN_BLOCK 64
#define ST_ATTN_CHUNK 256

typedef struct attn_task_def {
    int32_t t, kvh, c, nch; /* token, kv head, chunk, chunks of this token */
} attn_task_def;

typedef struct attn_job {
    const st_attention_args *a;
    int64_t n_head, n_kv, dk, dv, g;
    int64_t ldq, ldo, dmax; /* padded q / out row lengths, widest cache row */
    size_t krow, vrow;      /* bytes of one cached K / V row */
    size_t per_thread;      /* floats of scratch per thread */
    float *scratch;
    const attn_task_def *tasks;
    int64_t n_tasks;
    const int64_t *part_off; /* [n] first partial slot of a split token (kv head 0, chunk 0) */
    float *part;             /* partial slots of [g] max, [g] sum, [g][dv] weighted V sum */
    size_t part_stride;      /* floats per partial slot */
    atomic_int *pending;     /* [n][n_kv] chunks still running of a split (token, kv head) */
    atomic_llong next;
} attn_job;

/* The block's rows of one kv head as kernel operands: F16/F32 cache rows in place, other
 * types (BF16, Q8_0) converted into cv ([n][d] f32). Sets *base, *stride, *cl. */
static uint32_t attn_rows(const st_tensor *c, int64_t kvh, const int32_t *cells, int n, int64_t d, float *cv,
                          const void **base, int64_t *stride, const int32_t **cl) {
    if (c->type == ST_TYPE_F16 || c->type == ST_TYPE_F32) {
        *base = (const char *)c->data + kvh * c->nb[1];
        *stride = c->nb[2];
        *cl = cells;
        return c->type;
    }
    for (int i = 0; i < n; i++) {
        const void *src = cache_row(c, cells[i], kvh);
        if (c->type == ST_TYPE_Q8_0) st_cpu_k.wt[ST_TYPE_Q8_0].to_float(src, cv + (int64_t)i * d, d);
        else st_cpu_load_to(c->type, src, cv + (int64_t)i * d, d);
    }
    *base = cv;
    *stride = d * (int64_t)sizeof(float);
    *cl = NULL;
    return ST_TYPE_F32;
}

/* Store o[h] / l[h] of every head into the output rows of (t, kvh); a head whose positions were
 * all masked (l = 0) gets a zero row. */
static void attn_store(const attn_job *j, int64_t t, int64_t kvh, float *o, const float *l) {
    const st_attention_args *a = j->a;
    for (int64_t h = 0; h < j->g; h++) {
        float *oh = o + h * j->ldo;
        if (l[h] > 0.0f) st_cpu_k.scale_f32(oh, 1.0f / l[h], j->dv);
        else memset(oh, 0, (size_t)j->dv * sizeof(float));
        st_cpu_store(a->out.type, oh, st_cpu_row(&a->out, t * j->n_head + kvh * j->g + h), j->dv);
    }
}

/* Merge the nch partial results of (t, kvh) in chunk order and store them. */
static void attn_merge(const attn_job *j, int64_t t, int64_t kvh, int nch, float *o, float *l) {
    int64_t g = j->g, dv = j->dv;
    const float *p0 = j->part + (size_t)(j->part_off[t] + kvh * nch) * j->part_stride;
    for (int64_t h = 0; h < g; h++) {
        float mx = -INFINITY;
        for (int c = 0; c < nch; c++) {
            float mc = p0[(size_t)c * j->part_stride + h];
            mx = mc > mx ? mc : mx;
        }
        float *oh = o + h * j->ldo;
        memset(oh, 0, (size_t)dv * sizeof(float));
        l[h] = 0.0f;
        if (!(mx > -INFINITY)) continue;
        for (int c = 0; c < nch; c++) {
            const float *pc = p0 + (size_t)c * j->part_stride;
            if (!(pc[h] > -INFINITY)) continue;
            float f = expf(pc[h] - mx);
            l[h] += f * pc[g + h];
            st_cpu_k.axpy_f32(oh, f, pc + 2 * g + h * dv, dv);
        }
    }
    attn_store(j, t, kvh, o, l);
}

/* Prefetch the K and V rows of positions [p0, p1) of one kv head: cached rows are scattered over
 * the cells (and strided by the other heads), where hardware prefetchers do not follow. */
static void attn_prefetch(const attn_job *j, const int32_t *cells, int64_t kvh, int64_t p0, int64_t p1) {
    const st_attention_args *a = j->a;
    for (int64_t p = p0; p < p1; p++) {
        const char *k = cache_row(&a->k_cache, cells[p], kvh), *v = cache_row(&a->v_cache, cells[p], kvh);
        for (size_t o = 0; o < j->krow; o += 64) __builtin_prefetch(k + o, 0, 3);
        for (size_t o = 0; o < j->vrow; o += 64) __builtin_prefetch(v + o, 0, 3);
    }
}

static void attn_chunk(attn_job *j, const attn_task_def *td, float *sc) {
    const st_attention_args *a = j->a;
    int64_t g = j->g, dk = j->dk, dv = j->dv, t = td->t, kvh = td->kvh;
    float *q = sc;                      /* [g][ldq] */
    float *o = q + g * j->ldq;          /* [g][ldo] */
    float *s = o + g * j->ldo;          /* [g][ST_ATTN_BLOCK] */
    float *m = s + g * ST_ATTN_BLOCK;   /* [g] */
    float *l = m + g;                   /* [g] */
    float *cv = l + g + 16;             /* [ST_ATTN_BLOCK][dmax] */
    int64_t len = a->kv_len[t], p0 = (int64_t)td->c * ST_ATTN_CHUNK;
    int64_t p1 = p0 + ST_ATTN_CHUNK < len ? p0 + ST_ATTN_CHUNK : len;
    const int32_t *cells = a->cell_table + (int64_t)a->seq[t] * a->max_pos;
    const float *mask = a->mask ? a->mask + t * a->max_pos : NULL;
    for (int64_t h = 0; h < g; h++) {
        float *qh = q + h * j->ldq;
        st_cpu_load_to(a->q.type, st_cpu_row(&a->q, t * j->n_head + kvh * g + h), qh, dk);
        st_cpu_k.scale_f32(qh, a->scale, dk);
        m[h] = -INFINITY;
        l[h] = 0.0f;
    }
    memset(o, 0, (size_t)(g * j->ldo) * sizeof(float));
    attn_prefetch(j, cells, kvh, p0, p0 + ST_ATTN_BLOCK < p1 ? p0 + ST_ATTN_BLOCK : p1);
    for (int64_t b0 = p0; b0 < p1; b0 += ST_ATTN_BLOCK) {
        int nb = (int)(p1 - b0 < ST_ATTN_BLOCK ? p1 - b0 : ST_ATTN_BLOCK);
        int64_t n0 = b0 + ST_ATTN_BLOCK, n1 = n0 + ST_ATTN_BLOCK < p1 ? n0 + ST_ATTN_BLOCK : p1;
        if (n0 < n1) attn_prefetch(j, cells, kvh, n0, n1); /* the next block, while this one computes */
        const void *base;
        int64_t stride;
        const int32_t *cl;
        uint32_t rt = attn_rows(&a->k_cache, kvh, cells + b0, nb, dk, cv, &base, &stride, &cl);
        st_cpu_k.attn_scores(rt, base, stride, cl, nb, dk, q, j->ldq, (int)g, s, ST_ATTN_BLOCK);
        for (int64_t h = 0; h < g; h++) {
            float *sh = s + h * ST_ATTN_BLOCK;
            if (mask)
                for (int i = 0; i < nb; i++) sh[i] += mask[b0 + i];
            float bm = st_cpu_k.max_f32(sh, nb);
            if (!(bm > -INFINITY)) { /* every position of the block masked for this head */
                memset(sh, 0, (size_t)nb * sizeof(float));
                continue;
            }
            if (bm > m[h]) {
                if (m[h] > -INFINITY) {
                    float corr = expf(m[h] - bm);
                    l[h] *= corr;
                    st_cpu_k.scale_f32(o + h * j->ldo, corr, dv);
                }
                m[h] = bm;
            }
            l[h] += st_cpu_k.exp_sum_f32(sh, m[h], nb);
        }
        rt = attn_rows(&a->v_cache, kvh, cells + b0, nb, dv, cv, &base, &stride, &cl);
        st_cpu_k.attn_accum(rt, base, stride, cl, nb, dv, s, ST_ATTN_BLOCK, (int)g, o, j->ldo);
    }
    if (td->nch == 1) {
        attn_store(j, t, kvh, o, l);
        return;
    }
    float *slot = j->part + (size_t)(j->part_off[t] + kvh * td->nch + td->c) * j->part_stride;
    memcpy(slot, m, (size_t)g * sizeof(float));
    memcpy(slot + g, l, (size_t)g * sizeof(float));
    for (int64_t h = 0; h < g; h++) memcpy(slot + 2 * g + h * dv, o + h * j->ldo, (size_t)dv * sizeof(float));
    /* the last chunk of this (token, kv head) to finish merges them all */
    if (atomic_fetch_sub(&j->pending[t * j->n_kv + kvh], 1) == 1) attn_merge(j, t, kvh, td->nch, o, l);
}

static void attn_task(void *vctx, int ith, int nth) {
    (void)nth;
    attn_job *j = vctx;
    float *sc = j->scratch + (size_t)ith * j->per_thread;
    for (;;) {
        int64_t w = atomic_fetch_add(&j->next, 1);
        if (w >= j->n_tasks) break;
        attn_chunk(j, &j->tasks[w], sc);
    }
}

st_status st_cpu_attention(st_stream *st, const st_attention_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu attention: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_act("attention", "q", &a->q)) != ST_OK) return s;
    if ((s = st_cpu_check_act("attention", "out", &a->out)) != ST_OK) return s;
    int64_t dk = a->q.ne[0], n_head = a->q.ne[1], n = a->q.ne[2];
    int64_t n_kv = a->k_cache.ne[1], dv = a->v_cache.ne[0];
    if (a->q.ne[3] != 1) return st_mod_fail(ST_INVALID, "cpu attention: q must be [n][n_head][head_dim]");
    if ((s = check_cache("attention", "k_cache", &a->k_cache, n_kv, dk)) != ST_OK) return s;
    if ((s = check_cache("attention", "v_cache", &a->v_cache, n_kv, dv)) != ST_OK) return s;
    if (a->out.ne[0] != dv || a->out.ne[1] != n_head || a->out.ne[2] != n || a->out.ne[3] != 1)
        return st_mod_fail(ST_INVALID, "cpu attention: out must be [%lld][%lld][%lld]", (long long)n, (long long)n_head,
                           (long long)dv);
    if (n_kv <= 0 || n_head % n_kv)
        return st_mod_fail(ST_INVALID, "cpu attention: %lld query heads over %lld kv heads", (long long)n_head,
                           (long long)n_kv);
    int64_t n_cells = a->k_cache.ne[2];
    if (a->v_cache.ne[2] != n_cells)
        return st_mod_fail(ST_INVALID, "cpu attention: k_cache and v_cache differ in cells");
    if (n == 0) return ST_OK;
    if (!a->seq || !a->kv_len || !a->cell_table || a->max_pos < 0)
        return st_mod_fail(ST_INVALID, "cpu attention: seq, kv_len and cell_table are required");
    for (int64_t t = 0; t < n; t++) {
        int32_t len = a->kv_len[t];
        if (len < 0 || len > a->max_pos || a->seq[t] < 0)
            return st_mod_fail(ST_INVALID, "cpu attention: token %lld has kv_len %d (max_pos %d), seq %d", (long long)t,
                               len, a->max_pos, a->seq[t]);
        const int32_t *cells = a->cell_table + (int64_t)a->seq[t] * a->max_pos;
        for (int32_t p = 0; p < len; p++)
            if (cells[p] < 0 || cells[p] >= n_cells)
                return st_mod_fail(ST_INVALID, "cpu attention: token %lld position %d maps to cell %d of %lld",
                                   (long long)t, p, cells[p], (long long)n_cells);
    }
    int64_t g = n_head / n_kv;
    /* tasks: every (token, kv head, chunk); split tokens get partial slots */
    int64_t n_tasks = 0, n_part = 0, work = 0;
    for (int64_t t = 0; t < n; t++) {
        int64_t len = a->kv_len[t], nch = len > 0 ? (len + ST_ATTN_CHUNK - 1) / ST_ATTN_CHUNK : 1;
        n_tasks += nch * n_kv;
        if (nch > 1) n_part += nch * n_kv;
        work += len * (dk + dv) * g * n_kv;
    }
    attn_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.n_head = n_head;
    j.n_kv = n_kv;
    j.dk = dk;
    j.dv = dv;
    j.g = g;
    j.ldq = (dk + 15) & ~(int64_t)15;
    j.ldo = (dv + 15) & ~(int64_t)15;
    j.dmax = dk > dv ? dk : dv;
    j.krow = st_row_size(a->k_cache.type, dk);
    j.vrow = st_row_size(a->v_cache.type, dv);
    int conv = a->k_cache.type != ST_TYPE_F16 && a->k_cache.type != ST_TYPE_F32;
    conv |= a->v_cache.type != ST_TYPE_F16 && a->v_cache.type != ST_TYPE_F32;
    j.per_thread = (size_t)g * (size_t)(j.ldq + j.ldo + ST_ATTN_BLOCK + 2) + 32 +
                   (conv ? (size_t)ST_ATTN_BLOCK * (size_t)j.dmax : 0);
    j.per_thread = (j.per_thread + 15) & ~(size_t)15;
    j.part_stride = (size_t)g * (size_t)(dv + 2);
    j.n_tasks = n_tasks;
    st_device *d = st->dev;
    int nth = st_cpu_nth(d, work, 16384);
    if (nth > n_tasks) nth = (int)n_tasks;
    size_t sc_bytes = (size_t)nth * j.per_thread * sizeof(float);
    size_t task_bytes = (size_t)n_tasks * sizeof(attn_task_def);
    size_t off_bytes = (size_t)n * sizeof(int64_t);
    size_t pend_bytes = n_part ? (size_t)(n * n_kv) * sizeof(atomic_int) : 0;
    size_t part_bytes = (size_t)n_part * j.part_stride * sizeof(float);
    char *buf = malloc(sc_bytes + task_bytes + off_bytes + pend_bytes + part_bytes + 64);
    if (!buf) return st_mod_fail(ST_OOM, "cpu attention: scratch of %zu bytes", sc_bytes + part_bytes);
    j.scratch = (float *)buf;
    attn_task_def *tasks = (attn_task_def *)(buf + sc_bytes);
    int64_t *part_off = (int64_t *)(buf + sc_bytes + task_bytes);
    atomic_int *pending = (atomic_int *)(buf + sc_bytes + task_bytes + off_bytes);
    j.part = (float *)((char *)pending + pend_bytes);
    int64_t w = 0, po = 0;
    for (int64_t t = 0; t < n; t++) {
        int64_t len = a->kv_len[t], nch = len > 0 ? (len + ST_ATTN_CHUNK - 1) / ST_ATTN_CHUNK : 1;
        part_off[t] = po;
        if (nch > 1) po += nch * n_kv;
        for (int64_t h = 0; h < n_kv; h++) {
            if (n_part) atomic_init(&pending[t * n_kv + h], (int)nch);
            for (int64_t c = 0; c < nch; c++) tasks[w++] = (attn_task_def){(int32_t)t, (int32_t)h, (int32_t)c, (int32_t)nch};
        }
    }
    j.tasks = tasks;
    j.part_off = part_off;
    j.pending = pending;
    atomic_init(&j.next, 0);
    st_cpu_pool_run(d->pool, attn_task, &j, nth);
    free(buf);
    return ST_OK;
}
