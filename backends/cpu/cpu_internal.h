/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the files of the CPU framework: the device, the kernel table in use,
 * tensor checks and row access. Not visible outside backends/cpu. */
#ifndef STRATA_CPU_INTERNAL_H
#define STRATA_CPU_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "common/hostdev.h"
#include "common/module_util.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_half.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_pool.h"
#include "quant/quant.h"

typedef struct st_cpu_repack st_cpu_repack;

struct st_device {
    st_hostmem mem;    /* host memory accounting (no capacity limit) */
    st_cpu_pool *pool; /* workers for the ops */
    int n_threads;
    st_cpu_repack *repack; /* repacked weight copies (cpu_repack.c) */
};


/* The module's kernel table, filled once at entry. */
extern st_cpu_kernels st_cpu_k;
/* The module's description given at entry. */
extern const st_cpu_module_desc *st_cpu_desc;

/* ---- repacked weights (cpu_repack.c) ---- */
st_status st_cpu_repack_create(st_cpu_repack **out);
/* Frees every copy (counted in mem); NULL is accepted. */
void st_cpu_repack_destroy(st_cpu_repack *rp, st_hostmem *mem);
/* The x8-group copy of weight matrix w (same strides as w), made now if it is new and worth
 * it; NULL = compute w in place (type without x8 kernels, rows not a multiple of 8, a strided
 * view, repacking off, or not enough host memory). */
const void *st_cpu_repacked(st_device *d, const st_tensor *w);
/* Bytes of one x8 group of rows of k elements of type t (0 when t has no x8 layout). */
static inline size_t st_cpu_x8_group_bytes(uint32_t t, int64_t k) {
    const st_type_info *ti = st_type_get(t);
    return ti && ti->block_size ? (size_t)(k / ti->block_size) * st_cpu_k.wt[t].x8_block_bytes : 0;
}

/* ---- tensor checks (each returns ST_OK or ST_INVALID with an error text naming op/arg) ---- */

/* Rows of a tensor viewed as 2-D: ne[1] * ne[2] * ne[3]. */
static inline int64_t st_cpu_nrows(const st_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

/* Address of row r of t viewed as [nrows][ne0] (honours nb[1..3]). */
static inline char *st_cpu_row(const st_tensor *t, int64_t r) {
    int64_t i1 = r % t->ne[1], rest = r / t->ne[1];
    int64_t i2 = rest % t->ne[2], i3 = rest / t->ne[2];
    return (char *)t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

/* Checks that `t` is a float activation tensor (F32/F16/BF16) with data, contiguous rows
 * (nb[0] = element size) and non-negative shape. */
st_status st_cpu_check_act(const char *op, const char *name, const st_tensor *t);
/* Checks a weight tensor: known type, data, ne[0] a multiple of the block size, nb[0] the
 * element/block size, rows at least one row long. */
st_status st_cpu_check_weight(const char *op, const char *name, const st_tensor *t);
/* Checks ne[0] == k and rows == n of an activation-like tensor. */
st_status st_cpu_check_shape(const char *op, const char *name, const st_tensor *t, int64_t n, int64_t k);

/* ---- float rows ---- */

/* Load n elements of an F32/F16/BF16 row into f32 (returns src itself for F32 when tmp may be
 * skipped: use the returned pointer). */
static inline const float *st_cpu_load(uint32_t type, const void *src, float *tmp, int64_t n) {
    switch (type) {
    case ST_TYPE_F16: st_cpu_k.f16_to_f32(src, tmp, n); return tmp;
    case ST_TYPE_BF16: st_cpu_k.bf16_to_f32(src, tmp, n); return tmp;
    default: return src;
    }
}

/* Load into dst always (dst may be written). */
static inline void st_cpu_load_to(uint32_t type, const void *src, float *dst, int64_t n) {
    switch (type) {
    case ST_TYPE_F16: st_cpu_k.f16_to_f32(src, dst, n); break;
    case ST_TYPE_BF16: st_cpu_k.bf16_to_f32(src, dst, n); break;
    default:
        if ((const void *)dst != src) memmove(dst, src, (size_t)n * sizeof(float));
    }
}

/* Store n floats into a row of type F32/F16/BF16. */
static inline void st_cpu_store(uint32_t type, const float *src, void *dst, int64_t n) {
    switch (type) {
    case ST_TYPE_F16: st_cpu_k.f32_to_f16(src, dst, n); break;
    case ST_TYPE_BF16: st_cpu_k.f32_to_bf16(src, dst, n); break;
    default:
        if ((const void *)dst != (const void *)src) memmove(dst, src, (size_t)n * sizeof(float));
    }
}

/* Store one float element i of a row of type F32/F16/BF16. */
static inline void st_cpu_store1(uint32_t type, void *row, int64_t i, float v) {
    switch (type) {
    case ST_TYPE_F16: ((uint16_t *)row)[i] = st_cpu_f2h(v); break;
    case ST_TYPE_BF16: ((uint16_t *)row)[i] = st_cpu_f2bf(v); break;
    default: ((float *)row)[i] = v;
    }
}

/* Threads to use for a job of `work` units when each thread should get at least `min_per`. */
static inline int st_cpu_nth(const st_device *d, int64_t work, int64_t min_per) {
    int64_t n = min_per > 0 ? work / min_per : work;
    if (n < 1) n = 1;
    return n < d->n_threads ? (int)n : d->n_threads;
}

/* [start, end) of part ith of nth over count items. */
static inline void st_cpu_split(int64_t count, int ith, int nth, int64_t *start, int64_t *end) {
    *start = count * ith / nth;
    *end = count * (ith + 1) / nth;
}

/* ---- ops (one file per group) ----
 * Each op has the semantics of its comment in strata/backend.h (core/ref is the oracle), checks
 * its arguments before writing anything (ST_INVALID / ST_UNSUPPORTED / ST_OOM with an error
 * text through st_mod_fail), and has finished when it returns (host-memory stream). */
st_status st_cpu_get_rows(st_stream *s, const st_get_rows_args *a);
st_status st_cpu_matmul(st_stream *s, const st_matmul_args *a);
st_status st_cpu_moe_matmul(st_stream *s, const st_moe_matmul_args *a);
st_status st_cpu_rms_norm(st_stream *s, const st_rms_norm_args *a);
st_status st_cpu_swiglu(st_stream *s, const st_swiglu_args *a);
st_status st_cpu_moe_combine(st_stream *s, const st_moe_combine_args *a);
st_status st_cpu_add(st_stream *s, const st_binary_args *a);
st_status st_cpu_scale(st_stream *s, const st_binary_args *a);
st_status st_cpu_convert(st_stream *s, const st_binary_args *a);
st_status st_cpu_mul_rows(st_stream *s, const st_binary_args *a);
st_status st_cpu_rope(st_stream *s, const st_rope_args *a);
st_status st_cpu_kv_write(st_stream *s, const st_kv_write_args *a);
st_status st_cpu_attention(st_stream *s, const st_attention_args *a);
st_status st_cpu_router(st_stream *s, const st_router_args *a);
st_status st_cpu_argmax(st_stream *s, const st_topk_args *a);
st_status st_cpu_topk(st_stream *s, const st_topk_args *a);
/* ABI 1.2 (cpu_oai.c) */
st_status st_cpu_attention_ex(st_stream *s, const st_attention_ex_args *a);
st_status st_cpu_swiglu_oai(st_stream *s, const st_swiglu_oai_args *a);
st_status st_cpu_router_groups(st_stream *s, const st_router_groups_args *a);

#endif
