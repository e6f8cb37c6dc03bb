/* SPDX-License-Identifier: Apache-2.0 */
/* Private state of st_model shared by the loader and the forward recipe. */
#ifndef STRATA_MODEL_INTERNAL_H
#define STRATA_MODEL_INTERNAL_H

#include "backend/dev.h"
#include "model/model.h"

/* Device tensors of one layer, by role (data == NULL when absent). */
typedef struct st_layer_w {
    st_tensor t[ST_T_ROLE_COUNT];
    /* Q, K and V weights placed back to back in one allocation, as one [Mq+Mk+Mv][K] weight
     * (data == NULL when they are not: in place, or types or row lengths differ); t[Q/K/V]
     * are views into it. */
    st_tensor qkv;
    /* by weight role: the value of its per-tensor ".scale" ([1], read at load), by which the
     * product W . x is multiplied; 1 when the file has none */
    float scale[ST_T_ROLE_COUNT];
} st_layer_w;

/* Allocation granularity the memory plan assumes for every model buffer (ST_PLAN_ALIGN):
 * buffers the model places together are carved at offsets rounded to it, so the totals the
 * plan computes per buffer stay exact. */
#define ST_MODEL_ALIGN 256u
static inline uint64_t st_model_round(uint64_t bytes) {
    if (bytes == 0) bytes = 64;
    return (bytes + ST_MODEL_ALIGN - 1) / ST_MODEL_ALIGN * ST_MODEL_ALIGN;
}

/* Work buffers sized for n_batch tokens and n_out_max logit rows. */
typedef struct st_work {
    int32_t *inp;      /* device: tok[n] pos[n] seq[n] kvlen[n] cell[n] out[n_out] */
    int32_t *inp_host; /* host mirror of inp */
    float *x;          /* [n][E] residual stream */
    float *cur;        /* [n][E] normed input of a block */
    float *tmp;        /* [n][E] block output */
    /* q, k and v are carved from one allocation (q first), so a fused QKV matmul can write its
     * [n][(n_head + 2 n_head_kv) head_dim] rows over all three; on that path ATTN_PREP writes the
     * rotated Q into att and attention writes its output into q. */
    float *q;          /* [n][n_head*head_dim] */
    float *k;          /* [n][n_head_kv*head_dim] */
    float *v;          /* [n][n_head_kv*head_dim] */
    float *att;        /* [n][n_head*head_dim] */
    float *fg;         /* [n][F] F = max(n_ff, n_ff_shexp) */
    float *fu;         /* [n][F] */
    /* experts */
    float *rlog;       /* [n][n_expert] router logits */
    int32_t *rids;     /* [n][k] chosen experts */
    float *rw;         /* [n][k] their weights */
    int32_t *xrow;     /* [n*k] a / k: the activation row of assignment a */
    int32_t *ident;    /* [n*k] a: identity rows, also row_of [n][k] for MOE_COMBINE */
    int32_t *slots;    /* [n_expert] identity slot table (every expert resident) */
    float *eg;         /* [n*k][n_ff_exp] */
    float *eu;         /* [n*k][n_ff_exp] */
    float *ed;         /* [n*k][E] */
    float *eb;         /* [n*k][max(n_ff_exp, E)] expert bias rows (gpt-oss), else NULL */
    float *sg;         /* [n] shared-expert gate logits */
    /* multi-head latent attention: per-head matrices run as a grouped matmul over heads */
    int32_t *hid;      /* [n*H] a % H: the head of row a */
    int32_t *hrow;     /* [n*H] identity rows */
    int32_t *hslots;   /* [H] identity slot table */
    /* output */
    float *sel;        /* [n_out][E] selected rows */
    float *logits;     /* [n_out][n_vocab] */
    int32_t *oid;      /* [n_out][topk_max] */
    float *oval;       /* [n_out][topk_max] */
} st_work;

typedef struct st_model_hx st_model_hx; /* hybrid expert state (model_experts.c) */

struct st_model {
    const st_model_desc *desc;
    st_hparams hp;
    st_model_params p;
    st_dev dev;              /* the one door to the device (its props read at load) */
    st_stream *stream;
    int in_place;
    uint64_t bytes_uploaded;
    /* weights */
    st_tensor tok_embd, output_norm, output;
    st_layer_w *layers;   /* [n_layer] */
    /* device buffers owned by the model */
    void **bufs;
    int32_t n_bufs, cap_bufs;
    st_kv *kv;
    st_work w;
    int32_t n_out;        /* rows of the last forward */
    /* expert counting */
    int count_experts;       /* read the router's choices back: counts_on or route_stats */
    int counts_on;
    struct st_route_stats *route_stats; /* borrowed; NULL = none */
    uint64_t *expert_counts; /* [n_layer][n_expert] */
    int32_t *rids_host;      /* [n][k] */
    int32_t *seq_len0;       /* [n_seq] lengths before the batch (rollback) */
    int32_t *seq_len_run;    /* [n_seq] lengths while checking a batch */
    int hybrid;              /* expert_slots >= 0 on a MoE model: experts stay in the file */
    st_model_hx *hx;         /* its state; NULL when every expert is resident */
    /* fused ops the device offers (ABI 1.1), checked at load for the model's types */
    int fused_attn;          /* ATTN_PREP for the KV cache type */
    int fused_moe;           /* MOE_GATE_UP and MOE_DOWN for every layer's expert types */
    /* layer split (model_split.c): this model holds layers [l0, l1) on its device; a split
       model is a chain of such stages from the head, each owning the next */
    int32_t l0, l1;
    int first, last;         /* holds the token embedding / the output norm, output and logits */
    st_model *next;          /* the next stage (owned), NULL on the last */
    int counts_shared;       /* expert_counts is the head's */
    float *xfer;             /* host [2][n_batch][n_embd]: x and tmp from the previous stage, or NULL */
    int xfer_pinned;         /* xfer came from st_dev_host_alloc */
    int xfer_peer;           /* the previous stage's device shares a memory domain: peer copies */
    double busy_s;           /* seconds this stage's steps took (split models sync each stage) */
    uint64_t xfer_bytes;     /* hidden-state bytes received from the previous stage */
    uint64_t bytes_alloc;    /* device bytes of st_model_alloc's buffers (the KV cache aside) */
};

/* Loads one stage: layers [l0, l0 + st->n_layers) on st's device, with the token embedding when
 * `first` and the output when `last` (model_load.c). NULL with err. */
st_model *st_model_load_stage(const st_model_desc *desc, const st_model_stage *st, int32_t l0, int first, int last,
                              const st_model_params *p, char *err, size_t errlen);
/* Releases the stage's split state (its staging buffer). */
void st_model_split_free(st_model *m);
/* The last stage of a split model (m itself when not split). */
st_model *st_model_tail(st_model *m);
/* Moves the hidden state (x and tmp, [n][n_embd] each) of stage `from` (its ops enqueued) to the
 * next stage: a peer copy when the two share a memory domain, else through host memory. */
int st_model_pass_hidden(st_model *from, int64_t n, char *err, size_t errlen);

/* Contiguous view of device memory: [ne1][ne0] (ne2 = ne3 = 1) of `type`. */
st_tensor st_model_view2(void *data, uint32_t type, int64_t ne0, int64_t ne1);
/* Contiguous view [ne2][ne1][ne0]. */
st_tensor st_model_view3(void *data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2);

/* Allocates `bytes` of device memory owned by the model (freed by st_model_free).
 * Returns 0, or -1 with err naming `what`. */
int st_model_alloc(st_model *m, uint64_t bytes, void **out, const char *what, char *err, size_t errlen);
/* Names the memory-plan consumer of the device allocations that follow (params.alloc_consumer;
 * nothing when it is not set). */
void st_model_consumer(st_model *m, const char *consumer);

/* Nonzero when layer l has per-expert weight scales (ffn_*_exps.scale). */
int st_model_layer_has_expert_scales(const st_model *m, int l);

/* Creates the KV cache and the work buffers (model_buffers.c). 0 or -1 with err. */
int st_model_buffers_create(st_model *m, char *err, size_t errlen);

/* Hybrid experts (model_experts.c). create: after the non-expert weights are placed, allocates
 * the slot arenas, the device slot table, the miss rows, host staging and the CPU module's
 * stream, and seeds the cache from the profile. 0 or -1 with err. */
int st_model_experts_create(st_model *m, char *err, size_t errlen);
/* Releases the host side (device buffers are the model's); call after the stream synced. */
void st_model_experts_free(st_model *m);
/* Start of a forward of n tokens (ages the policy, resets the insert budget). */
void st_model_experts_step(st_model *m, int64_t n);
/* The router's choices ids [n][k] of layer il, read back: counted and fed to the routing
 * statistics when those are on. */
void st_model_note_routing(st_model *m, int il, const int32_t *ids, int64_t n);
/* 1 when layer il of an n-token step may skip the host (fixed placement, every expert of the
 * layer resident, one token, nothing recording the routing); then st_model_experts_resident_ffn
 * computes its experts on the device from the router's output into w.ed ([A][E], the router's
 * order, combined through w.ident), with no sync. 0 or -1 with err. */
int st_model_experts_resident(const st_model *m, int il, int64_t n);
int st_model_experts_resident_ffn(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen);
/* After the router of layer il: reads its choices and cur (one sync), routes them through the
 * cache, launches the hits on the device and the admissions' uploads. 0 or -1 with err. */
int st_model_experts_launch(st_model *m, int il, int64_t n, const char *layer_txt, char *err, size_t errlen);
/* Computes the misses with the CPU module and uploads their rows behind the hits' rows, and the
 * row map MOE_COMBINE reads: *rows ([*n_rows][n_embd]) and *row_of ([n][k]) are what to combine.
 * 0 or -1 with err. */
int st_model_experts_finish(st_model *m, int il, int64_t n, float **rows, int64_t *n_rows, int32_t **row_of,
                            const char *layer_txt, char *err, size_t errlen);
/* After the layer's combine is enqueued: copies the layer's admitted experts from the file into
 * their slots and refreshes the device table, on a second stream when the device has events
 * (the compute stream waits for them before its next hits). 0 or -1 with err. */
int st_model_experts_admit(st_model *m, int il, char *err, size_t errlen);

#endif
