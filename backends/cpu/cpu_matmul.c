/* SPDX-License-Identifier: Apache-2.0 */
/* MATMUL, MOE_MATMUL and GET_ROWS on the CPU. Activations are converted to the weight type's
 * dot partner once; threads then take chunks of output rows (M), and each weight row is read
 * once and dotted with up to ST_CPU_MAX_NR activation rows per call (decode/verify); for more
 * rows (prefill) a block of weight rows is kept hot in cache while all activation rows pass.
 * A row's result never depends on the batch: the kernels keep one summation order per row. */
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu/cpu_internal.h"

#define ST_MM_RB 16 /* weight rows per cache block when n > ST_CPU_MAX_NR */

/* ---------------------------------------------------------------- activation quantization */

typedef struct quant_job {
    const st_cpu_weight_kernels *wk;
    const st_tensor *x;
    const int32_t *rows; /* source row of each output row, or NULL for identity */
    int64_t n, K;
    size_t xrow;
    char *qx;     /* [n][xrow] */
    float *tmp;   /* [nth][K] */
} quant_job;

static void quant_task(void *vctx, int ith, int nth) {
    quant_job *j = vctx;
    int64_t r0, r1;
    st_cpu_split(j->n, ith, nth, &r0, &r1);
    float *tmp = j->tmp + (size_t)ith * (size_t)j->K;
    for (int64_t r = r0; r < r1; r++) {
        const void *src = st_cpu_row(j->x, j->rows ? j->rows[r] : r);
        char *dst = j->qx + (size_t)r * j->xrow;
        if (!j->wk->from_float) { /* float partner */
            st_cpu_load_to(j->x->type, src, (float *)dst, j->K);
        } else {
            const float *f = st_cpu_load(j->x->type, src, tmp, j->K);
            j->wk->from_float(f, dst, j->K);
        }
    }
}

/* Fill qx with the partner-format rows; returns the buffer (caller frees) or NULL on OOM. */
static char *quantize_rows(st_device *d, const st_cpu_weight_kernels *wk, const st_tensor *x, const int32_t *rows,
                           int64_t n, int64_t K, size_t xrow) {
    int nth = st_cpu_nth(d, n * K, 16384);
    size_t qbytes = (size_t)n * xrow;
    size_t tbytes = (size_t)nth * (size_t)K * sizeof(float);
    char *buf = malloc(qbytes + tbytes + 64);
    if (!buf) return NULL;
    quant_job j = {wk, x, rows, n, K, xrow, buf, (float *)(buf + ((qbytes + 63) & ~(size_t)63))};
    st_cpu_pool_run(d->pool, quant_task, &j, nth);
    return buf;
}

/* MOE_MATMUL's activation rows, one per sorted assignment: each distinct source row of x is
 * quantized once (decode's gate and up matmuls give all k experts of a token the same row) and
 * copied to the assignments that use it. Returns the buffer (caller frees) or NULL on OOM. */
static char *quantize_moe_rows(st_device *d, const st_cpu_weight_kernels *wk, const st_tensor *x, int64_t n_x,
                               const int32_t *src_rows, int64_t n, int64_t K, size_t xrow) {
    int32_t *slot = malloc((size_t)(n_x + n) * sizeof *slot);
    if (!slot) return NULL;
    int32_t *uniq = slot + n_x; /* source row of each distinct row */
    for (int64_t r = 0; r < n_x; r++) slot[r] = -1;
    int64_t n_u = 0;
    for (int64_t p = 0; p < n; p++)
        if (slot[src_rows[p]] < 0) {
            slot[src_rows[p]] = (int32_t)n_u;
            uniq[n_u++] = src_rows[p];
        }
    if (n_u == n) { /* every assignment has its own row */
        free(slot);
        return quantize_rows(d, wk, x, src_rows, n, K, xrow);
    }
    char *qu = quantize_rows(d, wk, x, uniq, n_u, K, xrow);
    char *qx = qu ? malloc((size_t)n * xrow + 64) : NULL;
    if (qx)
        for (int64_t p = 0; p < n; p++) memcpy(qx + (size_t)p * xrow, qu + (size_t)slot[src_rows[p]] * xrow, xrow);
    free(qu);
    free(slot);
    return qx;
}

/* ---------------------------------------------------------------- shared row-block kernel */

typedef struct mm_block {
    const st_cpu_weight_kernels *wk;
    const char *w;      /* weight row 0 of this matrix (x8 groups when packed) */
    int packed;         /* w is the repacked copy: rows are read 8 at a time with dot8 */
    size_t gstride;     /* bytes of one x8 group when packed */
    int64_t wstride;    /* bytes between weight rows */
    const char *qx;     /* n activation rows in the partner format */
    size_t xrow;
    int64_t n, K;
    uint32_t otype;       /* F32/F16/BF16 */
    char *const *orow;    /* [n] output row of each activation row */
    const float *oscale;  /* [n] scale of each activation row, or NULL */
} mm_block;

static inline void mm_store(const mm_block *b, int64_t i0, int nr, int64_t m, const float *s) {
    for (int j = 0; j < nr; j++) {
        float v = b->oscale ? b->oscale[i0 + j] * s[j] : s[j];
        st_cpu_store1(b->otype, b->orow[i0 + j], m, v);
    }
}

/* Bytes ahead of the current weight row that decode prefetches: streams of weight rows cross
 * page boundaries every few rows, where hardware prefetchers stop. */
#define ST_MM_PREFETCH_BYTES 4096

static inline void prefetch_rows(const char *p, int64_t bytes) {
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 0);
}

/* Weight rows per vec_dot_rows call (results buffered, then stored). */
#define ST_MM_SUB 32

/* Output rows [m0, m1) (multiples of 8) of every activation row, from x8 groups: a block of
 * ST_MM_SUB weight rows stays in cache while the activation rows pass in groups of 8. */
static void mm_rows_x8(const mm_block *b, int64_t m0, int64_t m1) {
    float s[ST_CPU_MAX_NR * ST_MM_SUB];
    for (int64_t mb = m0; mb < m1; mb += ST_MM_SUB) {
        int64_t me = mb + ST_MM_SUB < m1 ? mb + ST_MM_SUB : m1;
        for (int64_t i0 = 0; i0 < b->n; i0 += ST_CPU_MAX_NR) {
            int nr = (int)(b->n - i0 < ST_CPU_MAX_NR ? b->n - i0 : ST_CPU_MAX_NR);
            b->wk->dot8(b->K, b->w + (size_t)(mb / 8) * b->gstride, (me - mb) / 8, b->qx + (size_t)i0 * b->xrow, b->xrow, nr, s,
                        (size_t)nr);
            for (int64_t m = mb; m < me; m++) mm_store(b, i0, nr, m, s + (m - mb) * nr);
        }
    }
}

/* Output rows [m0, m1) of every activation row. */
static void mm_rows(const mm_block *b, int64_t m0, int64_t m1) {
    float s[ST_CPU_MAX_NR * ST_MM_SUB];
    if (b->packed) {
        mm_rows_x8(b, m0, m1);
        return;
    }
    st_cpu_vec_dot_fn vd = b->wk->vec_dot;
    st_cpu_vec_dot_rows_fn vr = b->wk->vec_dot_rows;
    if (b->n <= ST_CPU_MAX_NR) {
        const char *end = b->w + m1 * b->wstride;
        const char *pf = b->w + m0 * b->wstride;
        prefetch_rows(pf, ST_MM_PREFETCH_BYTES < end - pf ? ST_MM_PREFETCH_BYTES : end - pf);
        pf += ST_MM_PREFETCH_BYTES;
        if (vr) { /* the kernel keeps prefetching ahead of the rows it reads */
            for (int64_t m = m0; m < m1; m += ST_MM_SUB) {
                int64_t mr = m1 - m < ST_MM_SUB ? m1 - m : ST_MM_SUB;
                vr(b->K, b->w + m * b->wstride, (size_t)b->wstride, mr, b->qx, b->xrow, (int)b->n, s, (size_t)b->n);
                for (int64_t i = 0; i < mr; i++) mm_store(b, 0, (int)b->n, m + i, s + i * b->n);
            }
            return;
        }
        for (int64_t m = m0; m < m1; m++) {
            /* keep the prefetch point ST_MM_PREFETCH_BYTES ahead of the next row */
            const char *want = b->w + (m + 1) * b->wstride + ST_MM_PREFETCH_BYTES;
            if (want > end) want = end;
            if (pf < want) {
                prefetch_rows(pf, want - pf);
                pf = want;
            }
            vd(b->K, b->w + m * b->wstride, b->qx, b->xrow, (int)b->n, s);
            mm_store(b, 0, (int)b->n, m, s);
        }
        return;
    }
    for (int64_t mb = m0; mb < m1; mb += ST_MM_RB) {
        int64_t me = mb + ST_MM_RB < m1 ? mb + ST_MM_RB : m1;
        for (int64_t i0 = 0; i0 < b->n; i0 += ST_CPU_MAX_NR) {
            int nr = (int)(b->n - i0 < ST_CPU_MAX_NR ? b->n - i0 : ST_CPU_MAX_NR);
            const char *xs = b->qx + (size_t)i0 * b->xrow;
            if (vr) {
                vr(b->K, b->w + mb * b->wstride, (size_t)b->wstride, me - mb, xs, b->xrow, nr, s, (size_t)nr);
                for (int64_t m = mb; m < me; m++) mm_store(b, i0, nr, m, s + (m - mb) * nr);
                continue;
            }
            for (int64_t m = mb; m < me; m++) {
                vd(b->K, b->w + m * b->wstride, xs, b->xrow, nr, s);
                mm_store(b, i0, nr, m, s);
            }
        }
    }
}

static int64_t pick_chunk(int64_t M, int64_t groups, int nth, int64_t n, int packed) {
    int64_t c = (M * groups + (int64_t)nth * 8 - 1) / ((int64_t)nth * 8);
    if (n > ST_CPU_MAX_NR) c = (c + ST_MM_RB - 1) / ST_MM_RB * ST_MM_RB;
    if (packed) c = (c + 7) / 8 * 8; /* whole x8 groups (M is a multiple of 8) */
    if (c < 4) c = 4;
    if (c > M) c = M;
    return c;
}

/* ---------------------------------------------------------------- MATMUL */

typedef struct mm_job {
    mm_block b;
    int64_t M, chunk;
    atomic_llong next;
} mm_job;

static void mm_task(void *vctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    mm_job *j = vctx;
    for (;;) {
        int64_t m0 = atomic_fetch_add(&j->next, 1) * j->chunk;
        if (m0 >= j->M) break;
        mm_rows(&j->b, m0, m0 + j->chunk < j->M ? m0 + j->chunk : j->M);
    }
}

st_status st_cpu_matmul(st_stream *st, const st_matmul_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu matmul: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_weight("matmul", "w", &a->w)) != ST_OK) return s;
    if ((s = st_cpu_check_act("matmul", "x", &a->x)) != ST_OK) return s;
    if ((s = st_cpu_check_act("matmul", "out", &a->out)) != ST_OK) return s;
    int64_t K = a->w.ne[0], M = a->w.ne[1], n = st_cpu_nrows(&a->x);
    if (a->w.ne[2] != 1 || a->w.ne[3] != 1) return st_mod_fail(ST_INVALID, "cpu matmul: w must be 2-D");
    if ((s = st_cpu_check_shape("matmul", "x", &a->x, n, K)) != ST_OK) return s;
    if ((s = st_cpu_check_shape("matmul", "out", &a->out, n, M)) != ST_OK) return s;
    const st_cpu_weight_kernels *wk = &st_cpu_k.wt[a->w.type];
    if (!wk->vec_dot) return st_mod_fail(ST_UNSUPPORTED, "cpu matmul: weight type %s", st_type_name(a->w.type));
    if (n == 0 || M == 0) return ST_OK;
    st_device *d = st->dev;
    size_t xrow = st_row_size(wk->vec_type, K);
    if (K > 0 && xrow == 0)
        return st_mod_fail(ST_INVALID, "cpu matmul: K = %lld does not fit the %s activation blocks", (long long)K,
                           st_type_name(wk->vec_type));
    char *qx = quantize_rows(d, wk, &a->x, NULL, n, K, xrow);
    if (!qx) return st_mod_fail(ST_OOM, "cpu matmul: activation buffer of %zu bytes", (size_t)n * xrow);
    char **orow = malloc((size_t)n * sizeof *orow);
    if (!orow) {
        free(qx);
        return st_mod_fail(ST_OOM, "cpu matmul: %lld row pointers", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) orow[i] = st_cpu_row(&a->out, i);
    const void *wp = st_cpu_repacked(d, &a->w);
    mm_job j;
    j.b = (mm_block){wk,  wp ? wp : a->w.data, wp != NULL, st_cpu_x8_group_bytes(a->w.type, K), a->w.nb[1],
                     qx,  xrow, n, K, a->out.type, orow, NULL};
    j.M = M;
    int nth = st_cpu_nth(d, M * (n < 8 ? n : 8) * K, 32768);
    j.chunk = pick_chunk(M, 1, nth, n, wp != NULL);
    atomic_init(&j.next, 0);
    st_cpu_pool_run(d->pool, mm_task, &j, nth);
    free(orow);
    free(qx);
    return ST_OK;
}

/* ---------------------------------------------------------------- MOE_MATMUL */

typedef struct moe_group {
    int64_t slot, p0, cnt; /* expert slot, first sorted assignment, assignments */
} moe_group;

typedef struct moe_job {
    const st_moe_matmul_args *a;
    const char *w; /* [n_slots][M][K] weights: a->w's, or their repacked copy */
    int packed;
    size_t gstride, mstride; /* x8 group and matrix bytes (the copy's), or 0 and nb[2] */
    const st_cpu_weight_kernels *wk;
    const char *qx; /* [n_active][xrow] in sorted order */
    size_t xrow;
    char *const *orow;    /* [n_active] output row per sorted assignment */
    const float *oscale;  /* [n_active] scale per sorted assignment, or NULL */
    const moe_group *groups;
    int64_t n_groups, M, K, chunk, per_group;
    float *scale_by_assign;
    atomic_llong next;
} moe_job;

static void moe_task(void *vctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    moe_job *j = vctx;
    const st_moe_matmul_args *a = j->a;
    for (;;) {
        int64_t t = atomic_fetch_add(&j->next, 1);
        if (t >= j->n_groups * j->per_group) break;
        const moe_group *g = &j->groups[t / j->per_group];
        int64_t m0 = (t % j->per_group) * j->chunk;
        int64_t m1 = m0 + j->chunk < j->M ? m0 + j->chunk : j->M;
        mm_block b = {j->wk, j->w + g->slot * j->mstride, j->packed, j->gstride, a->w.nb[1],
                      j->qx + (size_t)g->p0 * j->xrow, j->xrow, g->cnt, j->K, a->out.type, j->orow + g->p0,
                      j->oscale ? j->oscale + g->p0 : NULL};
        mm_rows(&b, m0, m1);
    }
}

st_status st_cpu_moe_matmul(st_stream *st, const st_moe_matmul_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu moe_matmul: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_weight("moe_matmul", "w", &a->w)) != ST_OK) return s;
    if ((s = st_cpu_check_act("moe_matmul", "x", &a->x)) != ST_OK) return s;
    if ((s = st_cpu_check_act("moe_matmul", "out", &a->out)) != ST_OK) return s;
    int64_t K = a->w.ne[0], M = a->w.ne[1], n_slots = a->w.ne[2], n_x = st_cpu_nrows(&a->x);
    int64_t na = a->n_assign;
    if (na < 0) return st_mod_fail(ST_INVALID, "cpu moe_matmul: n_assign = %lld", (long long)na);
    if (a->w.ne[3] != 1) return st_mod_fail(ST_INVALID, "cpu moe_matmul: w must be 3-D");
    if ((s = st_cpu_check_shape("moe_matmul", "x", &a->x, n_x, K)) != ST_OK) return s;
    if (a->out.ne[0] != M || st_cpu_nrows(&a->out) < na)
        return st_mod_fail(ST_INVALID, "cpu moe_matmul: out is [%lld][%lld]; expected [%lld][%lld]",
                           (long long)st_cpu_nrows(&a->out), (long long)a->out.ne[0], (long long)na, (long long)M);
    const st_cpu_weight_kernels *wk = &st_cpu_k.wt[a->w.type];
    if (!wk->vec_dot) return st_mod_fail(ST_UNSUPPORTED, "cpu moe_matmul: weight type %s", st_type_name(a->w.type));
    if (na == 0 || M == 0) return ST_OK;
    if (!a->slot_table || !a->expert || !a->x_row)
        return st_mod_fail(ST_INVALID, "cpu moe_matmul: slot_table, expert and x_row are required");
    /* validate and bucket assignments by slot (stable: ascending assignment id per slot) */
    int64_t *count = calloc((size_t)n_slots + 1, sizeof *count);
    int32_t *slot_of = malloc((size_t)na * sizeof *slot_of);
    int32_t *src_rows = malloc((size_t)na * sizeof *src_rows);
    char **orow = malloc((size_t)na * sizeof *orow);
    float *oscale = malloc((size_t)na * sizeof *oscale);
    moe_group *groups = malloc((size_t)(n_slots < na ? n_slots : na) * sizeof *groups + sizeof *groups);
    if (!count || !slot_of || !src_rows || !groups || !orow || !oscale) {
        s = st_mod_fail(ST_OOM, "cpu moe_matmul: index buffers for %lld assignments", (long long)na);
        goto done;
    }
    for (int64_t i = 0; i < na; i++) {
        int32_t e = a->expert[i];
        if (e < 0) {
            s = st_mod_fail(ST_INVALID, "cpu moe_matmul: expert[%lld] = %d", (long long)i, e);
            goto done;
        }
        int32_t sl = a->slot_table[e];
        slot_of[i] = sl;
        if (sl < 0) continue;
        if (sl >= n_slots) {
            s = st_mod_fail(ST_INVALID, "cpu moe_matmul: expert %d maps to slot %d of %lld", e, sl, (long long)n_slots);
            goto done;
        }
        if (a->x_row[i] < 0 || a->x_row[i] >= n_x) {
            s = st_mod_fail(ST_INVALID, "cpu moe_matmul: x_row[%lld] = %d outside [0, %lld)", (long long)i, a->x_row[i],
                            (long long)n_x);
            goto done;
        }
        count[sl + 1]++;
    }
    for (int64_t sl = 0; sl < n_slots; sl++) count[sl + 1] += count[sl];
    int64_t n_active = count[n_slots], n_groups = 0;
    if (n_active == 0) goto done;
    for (int64_t sl = 0; sl < n_slots; sl++)
        if (count[sl + 1] > count[sl]) groups[n_groups++] = (moe_group){sl, count[sl], count[sl + 1] - count[sl]};
    for (int64_t i = 0; i < na; i++) {
        if (slot_of[i] < 0) continue;
        int64_t p = count[slot_of[i]]++;
        src_rows[p] = a->x_row[i];
        orow[p] = st_cpu_row(&a->out, i);
        oscale[p] = a->scale ? a->scale[i] : 1.0f;
    }
    size_t xrow = st_row_size(wk->vec_type, K);
    if (K > 0 && xrow == 0) {
        s = st_mod_fail(ST_INVALID, "cpu moe_matmul: K = %lld does not fit the %s activation blocks", (long long)K,
                        st_type_name(wk->vec_type));
        goto done;
    }
    st_device *d = st->dev;
    char *qx = quantize_moe_rows(d, wk, &a->x, n_x, src_rows, n_active, K, xrow);
    if (!qx) {
        s = st_mod_fail(ST_OOM, "cpu moe_matmul: activation buffer of %zu bytes", (size_t)n_active * xrow);
        goto done;
    }
    moe_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    const void *wp = st_cpu_repacked(d, &a->w);
    j.w = wp ? wp : a->w.data;
    j.packed = wp != NULL;
    j.gstride = wp ? st_cpu_x8_group_bytes(a->w.type, K) : 0;
    j.mstride = wp ? j.gstride * (size_t)(M / 8) : (size_t)a->w.nb[2];
    j.wk = wk;
    j.qx = qx;
    j.xrow = xrow;
    j.orow = orow;
    j.oscale = a->scale ? oscale : NULL;
    j.groups = groups;
    j.n_groups = n_groups;
    j.M = M;
    j.K = K;
    int nth = st_cpu_nth(d, M * n_groups * K, 32768);
    j.chunk = pick_chunk(M, n_groups, nth, n_active / n_groups, j.packed);
    j.per_group = (M + j.chunk - 1) / j.chunk;
    atomic_init(&j.next, 0);
    st_cpu_pool_run(d->pool, moe_task, &j, nth);
    free(qx);
done:
    free(count);
    free(slot_of);
    free(src_rows);
    free(orow);
    free(oscale);
    free(groups);
    return s;
}

/* ---------------------------------------------------------------- GET_ROWS */

typedef struct gr_job {
    const st_get_rows_args *a;
    st_cpu_to_float_fn to_float;
    int64_t n, K;
    float *tmp; /* [nth][K] */
} gr_job;

static void gr_task(void *vctx, int ith, int nth) {
    gr_job *j = vctx;
    int64_t r0, r1;
    st_cpu_split(j->n, ith, nth, &r0, &r1);
    float *tmp = j->tmp + (size_t)ith * (size_t)j->K;
    for (int64_t r = r0; r < r1; r++) {
        const char *src = (const char *)j->a->w.data + (int64_t)j->a->ids[r] * j->a->w.nb[1];
        void *dst = st_cpu_row(&j->a->out, r);
        if (j->a->out.type == ST_TYPE_F32) {
            j->to_float(src, dst, j->K);
        } else {
            j->to_float(src, tmp, j->K);
            st_cpu_store(j->a->out.type, tmp, dst, j->K);
        }
    }
}

st_status st_cpu_get_rows(st_stream *st, const st_get_rows_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu get_rows: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_weight("get_rows", "w", &a->w)) != ST_OK) return s;
    if ((s = st_cpu_check_act("get_rows", "out", &a->out)) != ST_OK) return s;
    int64_t K = a->w.ne[0], n_rows = st_cpu_nrows(&a->w), n = st_cpu_nrows(&a->out);
    if (a->w.ne[2] != 1 || a->w.ne[3] != 1) return st_mod_fail(ST_INVALID, "cpu get_rows: w must be 2-D");
    if ((s = st_cpu_check_shape("get_rows", "out", &a->out, n, K)) != ST_OK) return s;
    st_cpu_to_float_fn tf = st_cpu_k.wt[a->w.type].to_float;
    if (!tf) return st_mod_fail(ST_UNSUPPORTED, "cpu get_rows: weight type %s", st_type_name(a->w.type));
    if (n == 0) return ST_OK;
    if (!a->ids) return st_mod_fail(ST_INVALID, "cpu get_rows: ids is NULL");
    for (int64_t i = 0; i < n; i++)
        if (a->ids[i] < 0 || a->ids[i] >= n_rows)
            return st_mod_fail(ST_INVALID, "cpu get_rows: ids[%lld] = %d outside [0, %lld)", (long long)i, a->ids[i],
                               (long long)n_rows);
    st_device *d = st->dev;
    int nth = st_cpu_nth(d, n * K, 65536);
    float *tmp = malloc((size_t)nth * (size_t)K * sizeof(float) + 4);
    if (!tmp) return st_mod_fail(ST_OOM, "cpu get_rows: scratch of %lld floats", (long long)K);
    gr_job j = {a, tf, n, K, tmp};
    st_cpu_pool_run(d->pool, gr_task, &j, nth);
    free(tmp);
    return ST_OK;
}
