/* SPDX-License-Identifier: Apache-2.0 */
/* Reference KV write and attention over the paged cache. Cache tensors are
 * [n_cells][n_kv_head][head_dim] of F32/F16/BF16 (element strides honoured) or Q8_0 (each
 * (cell, head) row holds head_dim/32 contiguous blocks). */
#include <math.h>
#include <stdlib.h>

#include "quant/quant.h"
#include "ref/ref_internal.h"

#define CHECK(expr)                      \
    do {                                 \
        st_status st_s_ = (expr);        \
        if (st_s_ != ST_OK) return st_s_; \
    } while (0)

static int cache_type_ok(uint32_t t) { return st_ref_is_act(t) || t == ST_TYPE_Q8_0; }

static st_status check_cache(const char *op, const char *name, const st_tensor *c) {
    CHECK(st_ref_check(op, name, c, 0));
    if (!cache_type_ok(c->type))
        return st_ref_fail(ST_UNSUPPORTED, "%s: %s type %s is not F32/F16/BF16/Q8_0", op, name, st_type_name(c->type));
    if (c->ne[3] != 1) return st_ref_fail(ST_INVALID, "%s: %s must be [n_cells][n_kv_head][head_dim]", op, name);
    return ST_OK;
}

/* Write one row of n values into the cache row at p. */
static void cache_store(const st_tensor *c, uint8_t *p, const float *v, int64_t n) {
    if (c->type == ST_TYPE_Q8_0) {
        st_quantize_row(ST_TYPE_Q8_0, v, p, n);
    } else {
        for (int64_t i = 0; i < n; i++) st_ref_store(c->type, p + i * c->nb[0], v[i]);
    }
}

/* Checks one K or V pair (source rows and their cache) of kv_write. */
static st_status check_kv_pair(const char *src_name, const st_tensor *src, const char *cache_name,
                               const st_tensor *cache) {
    const char *op = "kv_write";
    CHECK(st_ref_check(op, src_name, src, 1));
    CHECK(check_cache(op, cache_name, cache));
    if (src->ne[0] != cache->ne[0] || src->ne[1] != cache->ne[1] || src->ne[3] != 1)
        return st_ref_fail(ST_INVALID, "kv_write: %s is [%lld][%lld][%lld], %s rows are [%lld][%lld]", src_name,
                           (long long)src->ne[2], (long long)src->ne[1], (long long)src->ne[0], cache_name,
                           (long long)cache->ne[1], (long long)cache->ne[0]);
    return ST_OK;
}

st_status st_ref_kv_write(const st_kv_write_args *a) {
    const char *op = "kv_write";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(check_kv_pair("k", &a->k, "k_cache", &a->k_cache));
    int with_v = a->v.data != NULL || a->v_cache.data != NULL;
    if (with_v) {
        CHECK(check_kv_pair("v", &a->v, "v_cache", &a->v_cache));
        if (a->v.ne[2] != a->k.ne[2] || a->v_cache.ne[2] != a->k_cache.ne[2])
            return st_ref_fail(ST_INVALID, "kv_write: k and v disagree on tokens or cells");
    }
    int64_t n = a->k.ne[2], n_cells = a->k_cache.ne[2];
    if (n > 0 && a->cells == NULL) return st_ref_fail(ST_INVALID, "kv_write: cells is NULL");
    for (int64_t t = 0; t < n; t++)
        if (a->cells[t] < 0 || a->cells[t] >= n_cells)
            return st_ref_fail(ST_INVALID, "kv_write: cells[%lld] = %d outside [0, %lld)", (long long)t, a->cells[t],
                               (long long)n_cells);
    int64_t width = a->k.ne[0] > a->v.ne[0] ? a->k.ne[0] : a->v.ne[0];
    float *buf = st_ref_alloc(op, (size_t)width, sizeof(float));
    if (buf == NULL) return ST_OOM;
    for (int pass = 0; pass < (with_v ? 2 : 1); pass++) {
        const st_tensor *src = pass == 0 ? &a->k : &a->v;
        const st_tensor *dst = pass == 0 ? &a->k_cache : &a->v_cache;
        for (int64_t t = 0; t < n; t++)
            for (int64_t h = 0; h < src->ne[1]; h++) {
                st_ref_load_row(src, st_ref_elem_ptr(src, 0, h, t, 0), buf, src->ne[0]);
                cache_store(dst, (uint8_t *)dst->data + a->cells[t] * dst->nb[2] + h * dst->nb[1], buf, src->ne[0]);
            }
    }
    free(buf);
    return ST_OK;
}

/* Attention of token i, head h over positions lo..L-1 (kv_len L, sliding window lo), with an
 * optional sink logit in the softmax; acc[dv] receives the output. */
typedef struct attend_ctx {
    const st_attention_args *a;
    const float *sinks;
    int32_t window;
    double *q, *krow, *vrow, *score;
} attend_ctx;

static void attend(const attend_ctx *c, int64_t i, int64_t h, int64_t kvh, int64_t dk, int64_t dv, double *acc) {
    const st_attention_args *a = c->a;
    const int32_t *cells = a->cell_table + (int64_t)a->seq[i] * a->max_pos;
    const int32_t L = a->kv_len[i];
    const int32_t lo = c->window > 0 && L > c->window ? L - c->window : 0;
    const float *mask = a->mask ? a->mask + i * (int64_t)a->max_pos : NULL;
    double *q = c->q, *score = c->score;
    st_ref_load_row_d(&a->q, st_ref_elem_ptr(&a->q, 0, h, i, 0), q, dk);
    double mx = c->sinks ? (double)c->sinks[h] : -INFINITY;
    for (int32_t p = lo; p < L; p++) {
        const uint8_t *kp = (const uint8_t *)a->k_cache.data + cells[p] * a->k_cache.nb[2] + kvh * a->k_cache.nb[1];
        st_ref_load_row_d(&a->k_cache, kp, c->krow, dk);
        double s = 0;
        for (int64_t d = 0; d < dk; d++) s += q[d] * c->krow[d];
        s *= (double)a->scale;
        if (mask) s += (double)mask[p];
        score[p] = s;
        if (s > mx) mx = s;
    }
    for (int64_t d = 0; d < dv; d++) acc[d] = 0;
    if (mx == -INFINITY) return;
    double sum = c->sinks ? exp((double)c->sinks[h] - mx) : 0.0; /* the sink: weight, no value */
    for (int32_t p = lo; p < L; p++) {
        double w = score[p] == -INFINITY ? 0.0 : exp(score[p] - mx);
        sum += w;
        if (w == 0.0) continue;
        const uint8_t *vp = (const uint8_t *)a->v_cache.data + cells[p] * a->v_cache.nb[2] + kvh * a->v_cache.nb[1];
        st_ref_load_row_d(&a->v_cache, vp, c->vrow, dv);
        for (int64_t d = 0; d < dv; d++) acc[d] += w * c->vrow[d];
    }
    for (int64_t d = 0; d < dv; d++) acc[d] /= sum;
}

static st_status attention_common(const st_attention_args *a, const float *sinks, int32_t window);

st_status st_ref_attention(const st_attention_args *a) {
    CHECK(st_ref_check_args("attention", a, a ? a->size : 0, sizeof *a));
    return attention_common(a, NULL, 0);
}

st_status st_ref_attention_ex(const st_attention_ex_args *a) {
    CHECK(st_ref_check_args("attention_ex", a, a ? a->size : 0, sizeof *a));
    if (a->window < 0) return st_ref_fail(ST_INVALID, "attention_ex: window %d is negative", a->window);
    return attention_common(&a->base, a->sinks, a->window);
}

static st_status attention_common(const st_attention_args *a, const float *sinks, int32_t window) {
    const char *op = "attention";
    CHECK(st_ref_check(op, "q", &a->q, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    CHECK(check_cache(op, "k_cache", &a->k_cache));
    CHECK(check_cache(op, "v_cache", &a->v_cache));
    int64_t dk = a->q.ne[0], n_head = a->q.ne[1], n = a->q.ne[2];
    int64_t dv = a->v_cache.ne[0], n_kv = a->k_cache.ne[1], n_cells = a->k_cache.ne[2];
    if (a->q.ne[3] != 1 || a->k_cache.ne[0] != dk)
        return st_ref_fail(ST_INVALID, "attention: q is [%lld][%lld][%lld], k_cache rows have %lld", (long long)n,
                           (long long)n_head, (long long)dk, (long long)a->k_cache.ne[0]);
    if (a->v_cache.ne[1] != n_kv || a->v_cache.ne[2] != n_cells)
        return st_ref_fail(ST_INVALID, "attention: k_cache and v_cache disagree on heads or cells");
    if (a->out.ne[0] != dv || a->out.ne[1] != n_head || a->out.ne[2] != n || a->out.ne[3] != 1)
        return st_ref_fail(ST_INVALID, "attention: out must be [%lld][%lld][%lld]", (long long)n, (long long)n_head,
                           (long long)dv);
    if (n_kv < 1 || n_head % n_kv != 0)
        return st_ref_fail(ST_INVALID, "attention: n_head %lld is not a multiple of n_kv_head %lld", (long long)n_head,
                           (long long)n_kv);
    if (n > 0 && (a->seq == NULL || a->kv_len == NULL || a->cell_table == NULL))
        return st_ref_fail(ST_INVALID, "attention: seq, kv_len and cell_table are required");
    if (a->max_pos < 0) return st_ref_fail(ST_INVALID, "attention: max_pos %d is negative", a->max_pos);
    for (int64_t i = 0; i < n; i++) {
        if (a->seq[i] < 0) return st_ref_fail(ST_INVALID, "attention: seq[%lld] = %d", (long long)i, a->seq[i]);
        if (a->kv_len[i] < 0 || a->kv_len[i] > a->max_pos)
            return st_ref_fail(ST_INVALID, "attention: kv_len[%lld] = %d outside [0, %d]", (long long)i, a->kv_len[i],
                               a->max_pos);
        const int32_t *cells = a->cell_table + (int64_t)a->seq[i] * a->max_pos;
        for (int32_t p = 0; p < a->kv_len[i]; p++)
            if (cells[p] < 0 || cells[p] >= n_cells)
                return st_ref_fail(ST_INVALID, "attention: token %lld position %d maps to cell %d outside [0, %lld)",
                                   (long long)i, p, cells[p], (long long)n_cells);
    }
    int64_t group = n_head / n_kv;
    size_t need = (size_t)dk + (size_t)dv * 2 + (size_t)a->max_pos + 1;
    double *q = st_ref_alloc(op, need, sizeof(double));
    if (q == NULL) return ST_OOM;
    double *acc = q + dk, *vrow = acc + dv, *score = vrow + dv;
    double *krow = vrow; /* reused: K rows are consumed before V rows are read */
    double *kbuf = NULL;
    if (dk > dv) {
        kbuf = st_ref_alloc(op, (size_t)dk, sizeof(double));
        if (kbuf == NULL) {
            free(q);
            return ST_OOM;
        }
        krow = kbuf;
    }
    attend_ctx c = {a, sinks, window, q, krow, vrow, score};
    for (int64_t i = 0; i < n; i++)
        for (int64_t h = 0; h < n_head; h++) {
            attend(&c, i, h, h / group, dk, dv, acc);
            st_ref_store_row(&a->out, st_ref_elem_ptr(&a->out, 0, h, i, 0), acc, dv);
        }
    free(kbuf);
    free(q);
    return ST_OK;
}
