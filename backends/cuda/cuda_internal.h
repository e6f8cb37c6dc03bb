/* SPDX-License-Identifier: Apache-2.0 */
/* Internal declarations of the CUDA module shared by the C glue and the .cu kernel files.
 * Not part of the ABI. Every function returns st_status and sets the per-thread error text
 * (common/module_util.h) on failure; none of them ends the process. */
#ifndef STRATA_CUDA_INTERNAL_H
#define STRATA_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif
#include "common/module_util.h" /* C header without its own extern "C" guard */

#define ST_CUDA_MAX_DEVICES 64
/* Per-stream device allocation made at stream_create: the workspace (split attention partials,
 * q8 activations, the expert sort) and, in its last ST_CUDA_IDENT_N int32, the table
 * 0, 1, 2, ... that ops use as an identity row map. */
#define ST_CUDA_WORKSPACE_BYTES (4u << 20)
#define ST_CUDA_IDENT_N 16384u

/* One tracked allocation (device buffer or pinned host buffer). */
typedef struct st_cuda_alloc {
    void *ptr;
    uint64_t bytes;
} st_cuda_alloc;

/* A growable ptr -> size table; guarded by the owning device's mutex. */
typedef struct st_cuda_alloc_table {
    st_cuda_alloc *items;
    uint32_t n, cap;
} st_cuda_alloc_table;

struct st_device {
    uint32_t index;        /* CUDA device ordinal */
    char name[16];         /* "CUDA0" */
    int cc_major, cc_minor;
    int n_sm;
    size_t smem_optin;     /* largest dynamic shared memory per block (opt-in) */
    uint64_t domain;
    int no_tc;             /* STRATA_CUDA_NO_TC set: GEMM tiles stay on FP32 cores */
    pthread_mutex_t mu;
    st_cuda_alloc_table dev_bufs;  /* mem_alloc */
    st_cuda_alloc_table host_bufs; /* host_alloc */
    st_cuda_alloc_table host_regs; /* host_register */
    struct st_stream *streams;     /* list of live streams */
    struct st_event *events;
    struct st_graph *graphs;
};

struct st_stream {
    st_device *dev;
    cudaStream_t s;
    void *ws;              /* device workspace of ws_bytes (the allocation less the identity table) */
    uint64_t ws_bytes;
    const int32_t *ident;  /* [ST_CUDA_IDENT_N] identity table, inside the same allocation */
    const char *last_op;   /* name of the last op launched, for async error reports */
    /* 8-bit activations left in ws by the decode GEMV, reusable by the next GEMV on the same
     * rows (q, k, v projections; router, expert gate and up) while nothing else ran on the
     * stream: every launch, copy, memset, event wait and graph call clears q8_valid unless the
     * GEMV that produced or reused them sets q8_keep just before its launch check. */
    const void *q8_src;
    uint32_t q8_type;
    int64_t q8_nb1, q8_rows, q8_K;
    int q8_valid, q8_keep;
    int q8_kind;           /* ST_Q8_* form the workspace rows are in */
    int q8_pref;           /* form the last quantizing GEMV wanted: what RMS_NORM writes ahead */
    struct st_stream *next;
};

struct st_event {
    st_device *dev;
    cudaEvent_t e;
    struct st_event *next;
};

struct st_graph {
    st_device *dev;
    cudaGraph_t g;
    cudaGraphExec_t x;
    struct st_graph *next;
};

/* Map a CUDA runtime error to a status and set the error text "<what> on <dev>: <error>".
 * cudaSuccess returns ST_OK and leaves the text alone. `dev` may be NULL. */
st_status st_cuda_status(cudaError_t e, const char *what, const st_device *dev);
/* Check a kernel launch of op `op` on stream `s` (cudaGetLastError); records s->last_op. */
st_status st_cuda_launched(st_stream *s, const char *op);
/* Marks the next launch check as keeping the stream's quantized activations when the op writes
 * only [p, p + bytes) and that does not overlap their source rows (ops that write nothing
 * the GEMV reads, such as ROUTER's ids and weights). */
void st_cuda_q8_keep_unless(st_stream *s, const void *p, uint64_t bytes);
/* Make `dev` current on the calling thread. */
st_status st_cuda_use(const st_device *dev);
/* Bytes this process holds on device `index` through mem_alloc. */
uint64_t st_cuda_used_bytes(uint32_t index);
/* Format a byte count as "2.1 GiB" / "512.0 MiB" / "12 B" into buf. Returns buf. */
const char *st_cuda_fmt_bytes(char *buf, size_t n, uint64_t bytes);

/* Probe and device properties (cuda_probe.c), through the driver API loaded with dlopen. */
st_status st_cuda_probe(st_probe_report *out);
st_status st_cuda_device_props(uint32_t index, st_device_props *out);
int st_cuda_op_supported(uint32_t index, uint32_t op, uint32_t wtype);
/* Memory domain of device `index` computed at probe time (0 when unknown). */
uint64_t st_cuda_domain_of(uint32_t index);
/* Forget probe state (shutdown). */
void st_cuda_probe_reset(void);

/* Ops (k_*.cu): each validates its arguments, launches on s->s and returns a status. */
st_status st_cuda_get_rows(st_stream *s, const st_get_rows_args *a);
st_status st_cuda_rms_norm(st_stream *s, const st_rms_norm_args *a);
st_status st_cuda_matmul(st_stream *s, const st_matmul_args *a);
st_status st_cuda_rope(st_stream *s, const st_rope_args *a);
st_status st_cuda_kv_write(st_stream *s, const st_kv_write_args *a);
st_status st_cuda_attention(st_stream *s, const st_attention_args *a);
st_status st_cuda_swiglu(st_stream *s, const st_swiglu_args *a);
st_status st_cuda_router(st_stream *s, const st_router_args *a);
st_status st_cuda_moe_matmul(st_stream *s, const st_moe_matmul_args *a);
st_status st_cuda_moe_combine(st_stream *s, const st_moe_combine_args *a);
st_status st_cuda_add(st_stream *s, const st_binary_args *a);
st_status st_cuda_scale(st_stream *s, const st_binary_args *a);
st_status st_cuda_convert(st_stream *s, const st_binary_args *a);
st_status st_cuda_mul_rows(st_stream *s, const st_binary_args *a);
st_status st_cuda_argmax(st_stream *s, const st_topk_args *a);
st_status st_cuda_topk(st_stream *s, const st_topk_args *a);
st_status st_cuda_attn_prep(st_stream *s, const st_attn_prep_args *a);
st_status st_cuda_moe_gate_up(st_stream *s, const st_moe_gate_up_args *a);
st_status st_cuda_moe_down(st_stream *s, const st_moe_down_args *a);
st_status st_cuda_attention_ex(st_stream *s, const st_attention_ex_args *a);
st_status st_cuda_swiglu_oai(st_stream *s, const st_swiglu_oai_args *a);
st_status st_cuda_router_groups(st_stream *s, const st_router_groups_args *a);

#ifdef __cplusplus
}
#endif
#endif
