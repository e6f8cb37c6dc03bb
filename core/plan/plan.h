/* SPDX-License-Identifier: Apache-2.0 */
/* The memory plan: before any device allocation, every consumer on every device is sized
 * from the model's description (core/arch) and the request (slots, context, KV type, step
 * size, verify windows, draft head, extra consumers, reserve); the expert cache gets what is
 * left, in whole expert slots. When the request does not fit, the plan degrades in a fixed
 * order, each step a WARNING note naming the flag that avoids it:
 *   1. shrink the expert cache (down to zero: misses are computed on the CPU)
 *   2. stream KV beyond a resident window (not built yet: reported, then skipped)
 *   3. fewer slots (--parallel)
 *   4. shorter verify windows (--verify-window)
 *   5. refuse, with the table and the smallest changes that would fit.
 * The planner is pure: it reads the description and the numbers it is given, allocates only
 * host memory for its own result, and never touches a device. Allocation from the plan is
 * plan_arena.h. docs/memory.md explains the table. */
#ifndef STRATA_PLAN_H
#define STRATA_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ST_PLAN_MAX_DEVICES 16
#define ST_PLAN_MAX_CONSUMERS 32
#define ST_PLAN_MAX_EXTRA 8
#define ST_PLAN_MAX_NOTES 32
#define ST_PLAN_NAME_MAX 32
#define ST_PLAN_WHY_MAX 192
#define ST_PLAN_NOTE_MAX 320
/* Every buffer carved from a consumer's block starts on this boundary; the plan sizes
 * consumers as sums of buffers rounded up to it. */
#define ST_PLAN_ALIGN 256u

/* What a consumer is. The arena allocates every kind except RUNTIME and RESERVE, which are
 * budgeted but never allocated by Strata. */
typedef enum st_plan_kind {
    ST_PLAN_WEIGHTS = 0,      /* non-expert weights of the device's layers */
    ST_PLAN_KV = 1,           /* KV cache of slots x context for the device's layers + cell table */
    ST_PLAN_WORK = 2,         /* activation and work buffers for the largest step */
    ST_PLAN_LOGITS = 3,       /* logits, selected rows and top-k buffers (last device) */
    ST_PLAN_VERIFY = 4,       /* attention masks of verify windows */
    ST_PLAN_GRAPHS = 5,       /* captured graphs */
    ST_PLAN_DRAFT = 6,        /* draft / MTP head (last device) */
    ST_PLAN_EXTRA = 7,        /* a consumer registered by name */
    ST_PLAN_EXPERT_TABLE = 8, /* device-side (layer, expert) -> slot table */
    ST_PLAN_EXPERT_CACHE = 9, /* expert slots: what is left */
    ST_PLAN_RUNTIME = 10,     /* the runtime's own overhead (context, libraries): not allocated */
    ST_PLAN_RESERVE = 11,     /* the user's reserve (--vram-reserve-mib): not allocated */
    ST_PLAN_KIND_COUNT = 12
} st_plan_kind;

/* A device as the caller measured it. */
typedef struct st_plan_device_in {
    char name[64];             /* "SIM0", "NVIDIA H200" */
    uint64_t mem_total;        /* bytes */
    uint64_t mem_free;         /* bytes free before this process's runtime context */
    uint64_t runtime_overhead; /* the runtime's own bytes, measured after context creation
                                  (sim: 0; CUDA: the context, ~500 MiB) */
    uint64_t vram_budget;      /* 0 = none; else use at most this many bytes (--vram-budget) */
    int32_t unified;           /* nonzero: weights are read in place from host memory */
    int32_t n_layers;          /* layers placed here; 0 on every device = split by the planner */
    double bw_gbs;             /* memory bandwidth for the decode time model (GB/s; module-reported or
                                  measured); 0 = unknown. When every device has one, the planner's
                                  split minimizes the modelled time per token; else it follows room */
} st_plan_device_in;

/* A consumer registered by name before planning (e.g. a 110 MiB buffer of another part). */
typedef struct st_plan_extra {
    char name[ST_PLAN_NAME_MAX];
    int32_t device;            /* device index in the request */
    uint64_t bytes;
    char why[ST_PLAN_WHY_MAX]; /* "" = "registered by name" */
} st_plan_extra;

typedef struct st_plan_request {
    int32_t n_slots;           /* --parallel: concurrent sequences (default 1) */
    int32_t n_ctx;             /* --ctx: positions per slot (0 = min(training context, 4096)) */
    uint32_t kv_type;          /* ST_TYPE_F16 (default 0 means F16), F32 or Q8_0 */
    int32_t n_batch;           /* largest prefill chunk, tokens (default 512) */
    int32_t verify_window;     /* W: draft tokens per slot checked in one forward (0 = none) */
    int32_t topk_max;          /* largest device top-k (default 256, capped at n_vocab) */
    uint64_t draft_head_bytes; /* draft / MTP head weights and buffers (last device) */
    uint64_t graph_bytes;      /* captured graphs, per device */
    uint64_t reserve;          /* --vram-reserve-mib, per device */
    int64_t expert_cache;      /* -1 = auto (what is left), 0 = none, N = N slots per device */
    int32_t experts_resident;  /* nonzero: every expert of a device's layers must be resident there (a layer
                                  split has no expert offload): the split counts them in each layer's cost */
    int32_t n_extra;
    st_plan_extra extra[ST_PLAN_MAX_EXTRA];
} st_plan_request;

/* Fills the defaults above (auto expert cache, 1 slot, F16 KV, n_batch 512). */
void st_plan_request_default(st_plan_request *r);

typedef struct st_plan_consumer {
    char name[ST_PLAN_NAME_MAX]; /* "weights", "kv", "work", ..., or an extra's name */
    st_plan_kind kind;
    uint64_t bytes;
    char why[ST_PLAN_WHY_MAX];
} st_plan_consumer;

typedef struct st_plan_device {
    st_plan_device_in in;      /* as given */
    uint64_t capacity;         /* what the plan may use: min(mem_free, vram_budget) */
    uint64_t planned;          /* sum of every consumer (runtime and reserve included) */
    uint64_t allocated;        /* sum of the consumers the arena allocates */
    int32_t layer_first;       /* layers [layer_first, layer_first + n_layers) live here */
    int32_t n_layers;
    int64_t expert_slots;      /* expert cache slots */
    int64_t expert_slots_max;  /* experts of this device's layers (all resident at this count) */
    double t_token_s;          /* modelled decode seconds per token of its layers (0: bandwidth unknown) */
    int32_t n_consumers;
    st_plan_consumer c[ST_PLAN_MAX_CONSUMERS];
} st_plan_device;

typedef enum st_plan_level { ST_PLAN_INFO = 0, ST_PLAN_WARNING = 1, ST_PLAN_ERROR = 2 } st_plan_level;

typedef struct st_plan_note {
    st_plan_level level;
    char text[ST_PLAN_NOTE_MAX];
} st_plan_note;

typedef struct st_plan {
    int32_t ok;                /* nonzero: the plan fits; zero: refused (see refusal) */
    /* resolved request, after any degrade step */
    int32_t n_slots, n_ctx, n_batch, verify_window, topk_max;
    uint32_t kv_type;
    int32_t n_tok_step;        /* most tokens in one forward: max(n_batch, slots x (1 + W)) */
    int32_t n_out;             /* logit rows per forward: slots x (1 + W) */
    int32_t requested_slots, requested_verify_window;
    uint64_t bytes_expert_slot;/* one expert of one layer (desc->bytes_expert_slice) */
    int32_t split_auto;        /* nonzero: the planner chose the layer split (in proportion to each
                                  device's room for layers after its other consumers) */
    int32_t split_speed;       /* nonzero: the split minimizes the modelled time (every bw_gbs known) */
    int64_t split_considered;  /* placements the time model compared */
    double t_token_s;          /* modelled decode seconds per token over every device and boundary */
    int32_t n_devices;
    st_plan_device dev[ST_PLAN_MAX_DEVICES];
    int32_t n_notes;
    st_plan_note notes[ST_PLAN_MAX_NOTES];
    char refusal[1024];        /* when !ok: why, and the smallest changes that would fit */
} st_plan;

/* Builds the plan for `desc` on `devs[0..n_devs)`. Returns a plan owned by the caller (free
 * with st_plan_free) whose `ok` says whether it fits; NULL only with invalid arguments or out
 * of host memory, with the reason in err. */
st_plan *st_plan_build(const st_model_desc *desc, const st_plan_device_in *devs, int32_t n_devs,
                       const st_plan_request *req, char *err, size_t errlen);
/* Frees a plan. NULL is ok. */
void st_plan_free(st_plan *p);

/* The consumer named `name` on device `d`, or NULL. Borrowed from the plan. */
const st_plan_consumer *st_plan_find(const st_plan *p, int32_t d, const char *name);
/* Nonzero when the arena allocates consumers of this kind (not RUNTIME, not RESERVE). */
int st_plan_kind_allocated(st_plan_kind k);
/* Short printable name of a kind ("weights", "kv", ...). Static storage. */
const char *st_plan_kind_name(st_plan_kind k);

/* Bytes of the work buffers (batch inputs, activations, router, expert rows) for n_tok tokens
 * and n_out logit rows, laid out as core/model allocates them, each rounded to ST_PLAN_ALIGN. */
uint64_t st_plan_work_bytes(const st_hparams *hp, int64_t n_tok, int64_t n_out);
/* Bytes of the output buffers for n_out logit rows and top-k up to topk (same rounding). */
uint64_t st_plan_logits_bytes(const st_hparams *hp, int64_t n_out, int64_t topk);
/* Bytes of the KV cache for layers [l0, l0+n) of `hp`: K and V per layer, each rounded to
 * ST_PLAN_ALIGN, plus the cell table for n_seq x n_ctx. */
uint64_t st_plan_kv_bytes(const st_hparams *hp, uint32_t kv_type, int32_t n_layers, int32_t n_seq,
                          int32_t n_ctx);
/* Device index arrays of an expert cache for a step of n_tok tokens: the hits-first expert ids,
 * their token rows and the row map (3 x n_tok x top-k int32) and the staging table (n_expert
 * int32), each rounded to ST_PLAN_ALIGN, as core/model allocates them with a cache. */
uint64_t st_plan_expert_index_bytes(const st_hparams *hp, int64_t n_tok);
/* Bytes of every routed-expert tensor of layers [l0, l0+n) uploaded whole (each tensor rounded
 * to ST_PLAN_ALIGN, as core/model allocates them when every expert is resident). */
uint64_t st_plan_expert_resident_bytes(const st_model_desc *d, int32_t l0, int32_t n);

/* Writes the table, one block per device (consumer, MiB, why), then the notes, into f-like
 * text: returns the bytes written into buf (truncated at len, always terminated). */
size_t st_plan_format(const st_plan *p, char *buf, size_t len);
/* Writes the plan as Prometheus text lines (strata_plan_bytes{device,consumer,kind},
 * strata_plan_capacity_bytes, strata_plan_expert_slots, strata_plan_ok, ...). Same return. */
size_t st_plan_format_metrics(const st_plan *p, char *buf, size_t len);
/* Writes the plan as one JSON object. Same return. */
size_t st_plan_format_json(const st_plan *p, char *buf, size_t len);

/* Parses a size with an optional unit (B, KiB, MiB, GiB, TiB; KB, MB, GB, TB; a bare number
 * is bytes) into *out. Returns 0, or -1 when it is not one. */
int st_plan_parse_size(const char *s, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
