/* SPDX-License-Identifier: Apache-2.0 */
/* Row-wise ops on the CPU: RMS_NORM (with residual), SWIGLU, ADD, SCALE, CONVERT, MUL_ROWS and
 * MOE_COMBINE. Rows are split over threads; every row is computed in f32 from f32-converted
 * inputs into a per-thread scratch and stored once, so outputs may alias inputs. */
#include <math.h>
#include <stdlib.h>

#include "cpu/cpu_internal.h"

typedef void (*row_fn)(const void *args, int64_t r, float *scratch);

typedef struct row_job {
    row_fn fn;
    const void *args;
    int64_t n;
    size_t per_thread; /* floats of scratch per thread */
    float *scratch;
} row_job;

static void row_task(void *vctx, int ith, int nth) {
    row_job *j = vctx;
    int64_t r0, r1;
    st_cpu_split(j->n, ith, nth, &r0, &r1);
    float *sc = j->scratch + (size_t)ith * j->per_thread;
    for (int64_t r = r0; r < r1; r++) j->fn(j->args, r, sc);
}

/* Run fn over n rows of k elements with `bufs` scratch rows of k floats per thread. */
static st_status run_rows(st_stream *st, const char *op, row_fn fn, const void *args, int64_t n, int64_t k,
                          int bufs) {
    if (n == 0) return ST_OK;
    st_device *d = st->dev;
    int nth = st_cpu_nth(d, n * k, 32768);
    if (nth > n) nth = (int)n;
    size_t per = (size_t)bufs * (size_t)(k + 16);
    float *sc = malloc((size_t)nth * per * sizeof(float) + 64);
    if (!sc) return st_mod_fail(ST_OOM, "cpu %s: scratch of %zu floats", op, (size_t)nth * per);
    row_job j = {fn, args, n, per, sc};
    st_cpu_pool_run(d->pool, row_task, &j, nth);
    free(sc);
    return ST_OK;
}

/* ---------------------------------------------------------------- RMS_NORM */

static void rms_row(const void *va, int64_t r, float *h) {
    const st_rms_norm_args *a = va;
    int64_t K = a->x.ne[0];
    st_cpu_load_to(a->x.type, st_cpu_row(&a->x, r), h, K);
    if (a->residual.data) {
        float *t = h + K + 16;
        const float *res = st_cpu_load(a->residual.type, st_cpu_row(&a->residual, r), t, K);
        for (int64_t i = 0; i < K; i++) h[i] += res[i];
    }
    if (a->sum_out.data) st_cpu_store(a->sum_out.type, h, st_cpu_row(&a->sum_out, r), K);
    float ss = st_cpu_k.sumsq_f32(h, K);
    float inv = 1.0f / sqrtf(ss / (float)K + a->eps);
    st_cpu_k.scale_f32(h, inv, K);
    if (a->weight.data) {
        const float *w = a->weight.data;
        for (int64_t i = 0; i < K; i++) h[i] *= w[i];
    }
    st_cpu_store(a->out.type, h, st_cpu_row(&a->out, r), K);
}

st_status st_cpu_rms_norm(st_stream *st, const st_rms_norm_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu rms_norm: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_act("rms_norm", "x", &a->x)) != ST_OK) return s;
    if ((s = st_cpu_check_act("rms_norm", "out", &a->out)) != ST_OK) return s;
    int64_t n = st_cpu_nrows(&a->x), K = a->x.ne[0];
    if ((s = st_cpu_check_shape("rms_norm", "out", &a->out, n, K)) != ST_OK) return s;
    if (a->residual.data) {
        if ((s = st_cpu_check_act("rms_norm", "residual", &a->residual)) != ST_OK) return s;
        if ((s = st_cpu_check_shape("rms_norm", "residual", &a->residual, n, K)) != ST_OK) return s;
    }
    if (a->sum_out.data) {
        if ((s = st_cpu_check_act("rms_norm", "sum_out", &a->sum_out)) != ST_OK) return s;
        if ((s = st_cpu_check_shape("rms_norm", "sum_out", &a->sum_out, n, K)) != ST_OK) return s;
    }
    if (a->weight.data) {
        if (a->weight.type != ST_TYPE_F32 || a->weight.ne[0] != K)
            return st_mod_fail(ST_INVALID, "cpu rms_norm: weight must be F32 [%lld]", (long long)K);
    }
    if (K == 0) return ST_OK;
    return run_rows(st, "rms_norm", rms_row, a, n, K, 2);
}

/* ---------------------------------------------------------------- SWIGLU */

static void swiglu_row(const void *va, int64_t r, float *g) {
    const st_swiglu_args *a = va;
    int64_t F = a->gate.ne[0];
    float *u = g + F + 16;
    st_cpu_load_to(a->gate.type, st_cpu_row(&a->gate, r), g, F);
    const float *up = st_cpu_load(a->up.type, st_cpu_row(&a->up, r), u, F);
    st_cpu_k.silu_mul_f32(g, up, F);
    st_cpu_store(a->out.type, g, st_cpu_row(&a->out, r), F);
}

st_status st_cpu_swiglu(st_stream *st, const st_swiglu_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu swiglu: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_act("swiglu", "gate", &a->gate)) != ST_OK) return s;
    if ((s = st_cpu_check_act("swiglu", "up", &a->up)) != ST_OK) return s;
    if ((s = st_cpu_check_act("swiglu", "out", &a->out)) != ST_OK) return s;
    int64_t n = st_cpu_nrows(&a->gate), F = a->gate.ne[0];
    if ((s = st_cpu_check_shape("swiglu", "up", &a->up, n, F)) != ST_OK) return s;
    if ((s = st_cpu_check_shape("swiglu", "out", &a->out, n, F)) != ST_OK) return s;
    return run_rows(st, "swiglu", swiglu_row, a, n, F, 2);
}

/* ---------------------------------------------------------------- ADD / SCALE / CONVERT / MUL_ROWS */

static void add_row(const void *va, int64_t r, float *x) {
    const st_binary_args *a = va;
    int64_t K = a->a.ne[0];
    st_cpu_load_to(a->a.type, st_cpu_row(&a->a, r), x, K);
    int64_t rb = st_cpu_nrows(&a->b) == 1 ? 0 : r;
    const float *b = st_cpu_load(a->b.type, st_cpu_row(&a->b, rb), x + K + 16, K);
    for (int64_t i = 0; i < K; i++) x[i] += b[i];
    st_cpu_store(a->out.type, x, st_cpu_row(&a->out, r), K);
}

static void scale_row(const void *va, int64_t r, float *x) {
    const st_binary_args *a = va;
    int64_t K = a->a.ne[0];
    st_cpu_load_to(a->a.type, st_cpu_row(&a->a, r), x, K);
    st_cpu_k.scale_f32(x, a->s, K);
    st_cpu_store(a->out.type, x, st_cpu_row(&a->out, r), K);
}

static void convert_row(const void *va, int64_t r, float *x) {
    const st_binary_args *a = va;
    int64_t K = a->a.ne[0];
    const void *src = st_cpu_row(&a->a, r);
    void *dst = st_cpu_row(&a->out, r);
    if (a->a.type == a->out.type) {
        if (src != dst) memmove(dst, src, (size_t)K * (a->a.type == ST_TYPE_F32 ? 4u : 2u));
        return;
    }
    st_cpu_load_to(a->a.type, src, x, K);
    st_cpu_store(a->out.type, x, dst, K);
}

static void mul_rows_row(const void *va, int64_t r, float *x) {
    const st_binary_args *a = va;
    int64_t K = a->a.ne[0];
    /* element r of b in flattened order, any activation type and strides */
    int64_t br = r / a->b.ne[0], bc = r % a->b.ne[0];
    const char *bp = st_cpu_row(&a->b, br) + bc * a->b.nb[0];
    float f = a->b.type == ST_TYPE_F32 ? *(const float *)bp
              : a->b.type == ST_TYPE_F16 ? st_cpu_h2f(*(const uint16_t *)bp)
                                         : st_cpu_bf2f(*(const uint16_t *)bp);
    if (a->sigmoid) f = 1.0f / (1.0f + expf(-f));
    st_cpu_load_to(a->a.type, st_cpu_row(&a->a, r), x, K);
    st_cpu_k.scale_f32(x, f, K);
    st_cpu_store(a->out.type, x, st_cpu_row(&a->out, r), K);
}

static st_status check_unary(const char *op, const st_binary_args *a, int64_t *n, int64_t *K) {
    st_status s;
    if ((s = st_cpu_check_act(op, "a", &a->a)) != ST_OK) return s;
    if ((s = st_cpu_check_act(op, "out", &a->out)) != ST_OK) return s;
    *n = st_cpu_nrows(&a->a);
    *K = a->a.ne[0];
    return st_cpu_check_shape(op, "out", &a->out, *n, *K);
}

st_status st_cpu_add(st_stream *st, const st_binary_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu add: NULL stream or args");
    int64_t n, K;
    st_status s;
    if ((s = check_unary("add", a, &n, &K)) != ST_OK) return s;
    if ((s = st_cpu_check_act("add", "b", &a->b)) != ST_OK) return s;
    int64_t nb = st_cpu_nrows(&a->b);
    if (a->b.ne[0] != K || (nb != n && nb != 1))
        return st_mod_fail(ST_INVALID, "cpu add: b is [%lld][%lld]; expected [%lld or 1][%lld]", (long long)nb,
                           (long long)a->b.ne[0], (long long)n, (long long)K);
    return run_rows(st, "add", add_row, a, n, K, 2);
}

st_status st_cpu_scale(st_stream *st, const st_binary_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu scale: NULL stream or args");
    int64_t n, K;
    st_status s;
    if ((s = check_unary("scale", a, &n, &K)) != ST_OK) return s;
    return run_rows(st, "scale", scale_row, a, n, K, 1);
}

st_status st_cpu_convert(st_stream *st, const st_binary_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu convert: NULL stream or args");
    int64_t n, K;
    st_status s;
    if ((s = check_unary("convert", a, &n, &K)) != ST_OK) return s;
    return run_rows(st, "convert", convert_row, a, n, K, 1);
}

st_status st_cpu_mul_rows(st_stream *st, const st_binary_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu mul_rows: NULL stream or args");
    int64_t n, K;
    st_status s;
    if ((s = check_unary("mul_rows", a, &n, &K)) != ST_OK) return s;
    if ((s = st_cpu_check_act("mul_rows", "b", &a->b)) != ST_OK) return s;
    if (a->b.ne[0] * st_cpu_nrows(&a->b) != n)
        return st_mod_fail(ST_INVALID, "cpu mul_rows: b has %lld elements for %lld rows",
                           (long long)(a->b.ne[0] * st_cpu_nrows(&a->b)), (long long)n);
    return run_rows(st, "mul_rows", mul_rows_row, a, n, K, 1);
}

/* ---------------------------------------------------------------- MOE_COMBINE */

static void combine_row(const void *va, int64_t t, float *acc) {
    const st_moe_combine_args *a = va;
    int64_t M = a->out.ne[0];
    float *tmp = acc + M + 16;
    void *dst = st_cpu_row(&a->out, t);
    if (a->accumulate) st_cpu_load_to(a->out.type, dst, acc, M);
    else memset(acc, 0, (size_t)M * sizeof(float));
    for (int32_t j = 0; j < a->k; j++) {
        int32_t r = a->row_of[t * a->k + j];
        if (r < 0) continue;
        const float *row = st_cpu_load(a->rows.type, st_cpu_row(&a->rows, r), tmp, M);
        st_cpu_k.axpy_f32(acc, a->weights[t * a->k + j], row, M);
    }
    st_cpu_store(a->out.type, acc, dst, M);
}

st_status st_cpu_moe_combine(st_stream *st, const st_moe_combine_args *a) {
    if (!st || !a) return st_mod_fail(ST_INVALID, "cpu moe_combine: NULL stream or args");
    st_status s;
    if ((s = st_cpu_check_act("moe_combine", "rows", &a->rows)) != ST_OK) return s;
    if ((s = st_cpu_check_act("moe_combine", "out", &a->out)) != ST_OK) return s;
    int64_t n = st_cpu_nrows(&a->out), M = a->out.ne[0], nr = st_cpu_nrows(&a->rows);
    if (a->rows.ne[0] != M)
        return st_mod_fail(ST_INVALID, "cpu moe_combine: rows have %lld elements, out %lld", (long long)a->rows.ne[0],
                           (long long)M);
    if (a->k < 0) return st_mod_fail(ST_INVALID, "cpu moe_combine: k = %d", a->k);
    if (n > 0 && a->k > 0 && (!a->row_of || !a->weights))
        return st_mod_fail(ST_INVALID, "cpu moe_combine: row_of and weights are required");
    for (int64_t i = 0; i < n * a->k; i++)
        if (a->row_of[i] >= nr)
            return st_mod_fail(ST_INVALID, "cpu moe_combine: row_of[%lld] = %d outside [0, %lld)", (long long)i,
                               a->row_of[i], (long long)nr);
    return run_rows(st, "moe_combine", combine_row, a, n, M, 2);
}
