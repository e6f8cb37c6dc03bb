/* ROPE, KV_WRITE and ATTENTION on the CPU. Attention runs one task per (token, kv head): each
 * K/V row of the paged cache is converted to f32 once and used by every query head of the
 * group (GQA); softmax in f32 with the max subtracted. */
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

typedef struct attn_job {
    const st_attention_args *a;
    int64_t n, n_head, n_kv, dk, dv, group, max_len;
    int64_t ldq, ldo;  /* padded row lengths of the per-thread q and out rows */
    size_t per_thread; /* floats of scratch per thread */
    float *scratch;
    atomic_llong next;
} attn_job;

/* A cache row as f32: a pointer to the row itself (F32) or to tmp. */
static const float *cache_load(const st_tensor *c, int64_t cell, int64_t head, float *tmp, int64_t d) {
    const void *src = cache_row(c, cell, head);
    if (c->type == ST_TYPE_Q8_0) {
        st_cpu_k.wt[ST_TYPE_Q8_0].to_float(src, tmp, d);
        return tmp;
    }
    return st_cpu_load(c->type, src, tmp, d);
}

static void attn_one(attn_job *j, int64_t t, int64_t kvh, float *sc) {
    const st_attention_args *a = j->a;
    int64_t dk = j->dk, dv = j->dv, g = j->group, len = a->kv_len[t];
    float *q = sc;                  /* [g][ldq] */
    float *o = q + g * j->ldq;      /* [g][ldo] */
    float *kv = o + g * j->ldo;     /* [max(dk, dv)] */
    float *p = kv + j->ldq + j->ldo; /* [g][max_len] */
    const int32_t *cells = a->cell_table + (int64_t)a->seq[t] * a->max_pos;
    const float *mask = a->mask ? a->mask + t * a->max_pos : NULL;
    for (int64_t h = 0; h < g; h++)
        st_cpu_load_to(a->q.type, st_cpu_row(&a->q, t * j->n_head + kvh * g + h), q + h * j->ldq, dk);
    for (int64_t pos = 0; pos < len; pos++) {
        const float *k = cache_load(&a->k_cache, cells[pos], kvh, kv, dk);
        float mv = mask ? mask[pos] : 0.0f;
        for (int64_t h = 0; h < g; h++) p[h * j->max_len + pos] = st_cpu_k.dot_f32(q + h * j->ldq, k, dk) * a->scale + mv;
    }
    for (int64_t h = 0; h < g; h++) {
        float *ph = p + h * j->max_len;
        memset(o + h * j->ldo, 0, (size_t)dv * sizeof(float));
        if (len == 0) continue;
        float m = st_cpu_k.max_f32(ph, len);
        if (!(m > -INFINITY)) { /* every position masked: a zero row */
            memset(ph, 0, (size_t)len * sizeof(float));
            continue;
        }
        float sum = st_cpu_k.exp_sum_f32(ph, m, len);
        st_cpu_k.scale_f32(ph, 1.0f / sum, len);
    }
    for (int64_t pos = 0; pos < len; pos++) {
        int any = 0;
        for (int64_t h = 0; h < g; h++) any |= p[h * j->max_len + pos] != 0.0f;
        if (!any) continue;
        const float *v = cache_load(&a->v_cache, cells[pos], kvh, kv, dv);
        for (int64_t h = 0; h < g; h++) {
            float w = p[h * j->max_len + pos];
            if (w != 0.0f) st_cpu_k.axpy_f32(o + h * j->ldo, w, v, dv);
        }
    }
    for (int64_t h = 0; h < g; h++)
        st_cpu_store(a->out.type, o + h * j->ldo, st_cpu_row(&a->out, t * j->n_head + kvh * g + h), dv);
}

static void attn_task(void *vctx, int ith, int nth) {
    (void)nth;
    attn_job *j = vctx;
    float *sc = j->scratch + (size_t)ith * j->per_thread;
    for (;;) {
        int64_t w = atomic_fetch_add(&j->next, 1);
        if (w >= j->n * j->n_kv) break;
        attn_one(j, w / j->n_kv, w % j->n_kv, sc);
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
    int64_t n_cells = a->k_cache.ne[2], max_len = 1;
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
        if (len > max_len) max_len = len;
    }
    attn_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.n = n;
    j.n_head = n_head;
    j.n_kv = n_kv;
    j.dk = dk;
    j.dv = dv;
    j.group = n_head / n_kv;
    j.max_len = max_len;
    j.ldq = (dk + 15) & ~(int64_t)15;
    j.ldo = (dv + 15) & ~(int64_t)15;
    j.per_thread = (size_t)(j.group + 1) * (size_t)(j.ldq + j.ldo) + (size_t)j.group * (size_t)max_len + 16;
    st_device *d = st->dev;
    int nth = st_cpu_nth(d, n * n_kv * max_len * (dk + dv) * j.group, 16384);
    if (nth > n * n_kv) nth = (int)(n * n_kv);
    j.scratch = malloc((size_t)nth * j.per_thread * sizeof(float));
    if (!j.scratch) return st_mod_fail(ST_OOM, "cpu attention: scratch of %zu floats", (size_t)nth * j.per_thread);
    atomic_init(&j.next, 0);
    st_cpu_pool_run(d->pool, attn_task, &j, nth);
    free(j.scratch);
    return ST_OK;
}
