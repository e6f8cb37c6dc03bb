/* SPDX-License-Identifier: Apache-2.0 */
/* The model on one device: weights placed there (uploaded, or used in place from the mapped
 * file when the device has ST_CAP_UNIFIED), a KV cache, work buffers, and the forward recipe
 * of every supported family, run ONLY through the backend's op table so every backend
 * serves it. Activations are F32.
 *
 * A forward takes a batch of (token, position, sequence) and computes logits for the rows
 * the batch selects; the logits stay on the device until read (all of them, or the
 * device-side argmax / top-k). Not thread-safe: one caller at a time per st_model. */
#ifndef STRATA_MODEL_H
#define STRATA_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "experts/expert_cache.h"
#include "experts/expert_profile.h"
#include "kv/kv.h"
#include "strata/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_model_params {
    uint32_t kv_type;    /* ST_TYPE_F16 (default), ST_TYPE_F32 or ST_TYPE_Q8_0 */
    int32_t n_ctx;       /* positions per sequence (0 = min(training context, 4096)) */
    int32_t n_seq;       /* sequences the KV cache holds (default 1) */
    int32_t n_batch;     /* most tokens in one forward (default 512) */
    int32_t n_out_max;   /* most logit rows in one forward (0 = n_seq) */
    int32_t topk_max;    /* largest k for st_model_topk (default 256) */
    int32_t no_in_place; /* nonzero: copy weights even when the device can read host memory */
    /* Routed experts (model_experts.c). expert_slots = -1 (default): every expert is uploaded
     * to the device and computed there. N >= 0: the ffn_*_exps tensors stay in the mapped
     * file; the device holds N expert slots shared by every layer (a cache run by
     * expert_policy), hits are computed on the device through its slot table, and misses by
     * cpu_api's module on the file's tensors while the device works; results meet in
     * MOE_COMBINE. Decode graphs are not captured then (each step routes on the host). */
    int64_t expert_slots;
    int32_t expert_policy;       /* st_expert_policy (default ST_EXPERT_LFRU) */
    int32_t expert_max_inserts;  /* admissions per forward, 0 = no cap */
    const st_expert_profile *expert_profile; /* ranked (layer, expert) seeding the slots, or NULL;
                                                borrowed for st_model_load only */
    const st_backend_api *cpu_api; /* module computing misses (required when expert_slots >= 0);
                                      its device must have ST_CAP_UNIFIED (reads the file in place) */
    st_device *cpu_dev;          /* opened by the caller, closed after st_model_free */
    uint32_t cpu_index;          /* cpu_dev's index in cpu_api's module (for op_supported) */
    int32_t expert_pin;          /* nonzero: register the file's expert tensors with the device
                                    (pinned, for asynchronous uploads) when it can */
    int32_t expert_stage_slots;  /* device slots (besides expert_slots) for staging: in a step with
                                    many rows per missed expert (a prefill) such experts are copied
                                    there and computed on the device instead of the CPU; 0 = none */
    int32_t expert_stage_rows;   /* rows a missed expert needs to be staged: 0 = from measured copy
                                    and CPU times, -1 = never, N = at least N */
    /* Optional: told, before each group of device allocations, which memory-plan consumer they
     * belong to ("weights", "expert_cache", "expert_table", "kv", "work", "logits"; NULL when the
     * load ends), so that an allocator carving from a plan (st_plan_api_consumer) charges each
     * buffer to its own block. NULL (default): not told. */
    void (*alloc_consumer)(st_device *dev, const char *consumer);
    /* Optional: called during st_model_load (never later) after each weight upload with the
     * bytes uploaded so far (the progress line, core/progress); progress_user is passed back.
     * NULL (default): not called. */
    void (*progress)(void *user, uint64_t bytes_uploaded);
    void *progress_user;
} st_model_params;

/* Fills the defaults above. */
void st_model_params_default(st_model_params *p);

/* One batch for st_model_forward. Arrays are host memory, borrowed for the call. */
typedef struct st_batch {
    int32_t n;              /* tokens, 1..n_batch */
    const int32_t *token;   /* [n] token ids */
    const int32_t *pos;     /* [n] positions; a sequence's positions must follow its cache */
    const int32_t *seq;     /* [n] sequence ids (NULL = all 0) */
    const int8_t *logits;   /* [n] nonzero = compute this row's logits (NULL = last only) */
} st_batch;

typedef struct st_model st_model;

/* Places `desc`'s weights on device `dev` (index `dev_index` of `api`'s module, already
 * opened by the caller, who closes it after st_model_free), creates a stream, the KV cache
 * and work buffers. Checks first that the module has every op the recipe needs for the
 * model's weight types. Returns NULL with a message in err (naming the op/type, tensor or
 * allocation and the backend's error text). `desc` and its st_gguf must outlive the model. */
st_model *st_model_load(const st_model_desc *desc, const st_backend_api *api, st_device *dev,
                        uint32_t dev_index, const st_model_params *p, char *err, size_t errlen);
/* One device's share of a model split by layers. */
typedef struct st_model_stage {
    const st_backend_api *api; /* the module's table (or a plan-bound copy of it) */
    st_device *dev;            /* opened by the caller, closed after st_model_free */
    uint32_t index;            /* the device's index in its module */
    int32_t n_layers;          /* contiguous layers here, after the previous stage's */
    int32_t offload;           /* split models: nonzero = this device caches its layers' experts in
                                  expert_slots slots, misses on the params' cpu_api module; 0 = every
                                  expert of its layers resident (a single stage follows the params) */
    int64_t expert_slots;
} st_model_stage;

/* Loads `desc` split by layers over stages[0..n): stage 0 holds the token embedding and the
 * first n_layers layers, the last stage the output; each holds its layers' weights, KV cache
 * and work buffers on its device. A forward runs the stages in order and moves the hidden
 * state once per boundary (a peer copy within one memory domain, else through host memory);
 * its tokens are those of a single-device run. Stages with no layers are skipped. Each stage
 * of a split may cache its own layers' experts (st_model_stage.offload; the params' cpu_api
 * computes every stage's misses). The result is used like any st_model; NULL with err naming
 * the stage's device on failure. */
st_model *st_model_load_split(const st_model_desc *desc, const st_model_stage *stages, int32_t n_stages,
                              const st_model_params *p, char *err, size_t errlen);

/* Whether st's module has every op (and weight type) that layers [l0, l0 + st->n_layers) need, with
 * the embedding when `first` and the output when `last`, before anything is allocated: 0, or -1
 * with err naming the module, its ABI, the op and what needs it. */
int st_model_check_stage(const st_model_desc *desc, const st_model_stage *st, int32_t l0, int first, int last,
                         uint32_t kv_type, char *err, size_t errlen);

/* One stage of a loaded model, for reports. */
typedef struct st_model_stage_info {
    char device[32];           /* "sim1" */
    char name[64];             /* the device's name */
    int32_t layer_first, n_layers;
    uint64_t bytes;            /* device bytes the stage allocated (weights, KV, work, logits) */
    double busy_s;             /* seconds its steps took since load (0 when not split) */
    uint64_t xfer_bytes;       /* hidden-state bytes it received from the previous stage */
    int peer;                  /* receives by peer copy (else through host memory) */
    int lost;                  /* its device reported itself lost (ST_DEVICE_LOST): every later call fails */
} st_model_stage_info;
/* Stages of the model (1 when not split), and stage i's facts (0, or -1 out of range). */
int32_t st_model_n_stages(const st_model *m);
int st_model_stage_get(const st_model *m, int32_t i, st_model_stage_info *out);
/* The KV caches of every stage: forget positions >= n_pos of `seq`, or everything. */
void st_model_seq_truncate(st_model *m, int32_t seq, int32_t n_pos);
void st_model_kv_clear(st_model *m);
/* Bytes one position occupies in the KV caches of every stage (every layer's K and V). */
uint64_t st_model_kv_bytes_per_pos(const st_model *m);

/* Releases everything the model allocated on the device and the handle. NULL is ok. */
void st_model_free(st_model *m);

/* The description, resolved parameters, KV cache (owned by the model; the first stage's of a
 * split model: change positions through st_model_seq_truncate) and device facts. */
const st_model_desc *st_model_desc_of(const st_model *m);
const st_model_params *st_model_params_of(const st_model *m);
st_kv *st_model_kv(st_model *m);
/* Nonzero when the weights are read in place from the mapped file (no copy). */
int st_model_weights_in_place(const st_model *m);
/* Bytes of weights copied to the device (0 when in place). */
uint64_t st_model_weight_bytes_uploaded(const st_model *m);

/* Runs one forward over `b`: writes the batch's K/V into the cache and computes the logits of
 * the selected rows. Returns 0, or -1 with a message in err (the op, layer and backend text,
 * or why the batch was refused: too many tokens, KV cache full, a position gap). */
int st_model_forward(st_model *m, const st_batch *b, char *err, size_t errlen);
/* Rows of logits the last forward produced. */
int32_t st_model_n_out(const st_model *m);
/* Copies the last forward's logits [n_out][n_vocab] (F32) to dst. 0 or -1 with err. */
int st_model_logits(st_model *m, float *dst, char *err, size_t errlen);
/* Copies the last forward's final hidden states, after the output norm, of its first n batch
 * rows ([n][n_embd] F32; every row, output or not) to dst: the input of embedding pooling.
 * 0 or -1 with err. */
int st_model_hidden(st_model *m, int32_t n, float *dst, char *err, size_t errlen);
/* Device-side argmax of each logits row: ids[n_out]. 0 or -1 with err. */
int st_model_argmax(st_model *m, int32_t *ids, char *err, size_t errlen);
/* Device-side top-k of each row (k <= topk_max): ids/vals [n_out][k], descending. */
int st_model_topk(st_model *m, int32_t k, int32_t *ids, float *vals, char *err, size_t errlen);

/* Convenience: evaluates tokens[0..n) of `seq` at positions pos0.. in chunks of n_batch.
 * With all_logits, writes [n][n_vocab] logits into out (needs n_out_max >= n_batch);
 * otherwise the last token's logits stay on the device (read them with st_model_logits /
 * st_model_argmax / st_model_topk) and `out` may be NULL. 0 or -1 with err. */
int st_model_eval(st_model *m, int32_t seq, const int32_t *tokens, int32_t n, int32_t pos0,
                  int all_logits, float *out, char *err, size_t errlen);

/* Expert-use counting (off by default): when on, every forward reads the router's choices
 * back (one sync per MoE layer) and counts them. counts is [n_layer][n_expert], owned by the
 * model, NULL for dense models. */
void st_model_count_experts(st_model *m, int on);
const uint64_t *st_model_expert_counts(const st_model *m);
void st_model_expert_counts_reset(st_model *m);
/* Routing statistics (core/experts/expert_stats.h): when s is not NULL, every forward reads the
 * router's choices back like the counting above and feeds them to s, token after token; NULL
 * detaches. s is borrowed and must outlive its use. No effect on a dense model. */
struct st_route_stats;
void st_model_route_stats(st_model *m, struct st_route_stats *s);

/* Routed-expert placement and statistics of a model loaded with expert_slots >= 0. */
typedef struct st_model_expert_info {
    int64_t slots;            /* device slots; -1 when every expert is resident (no cache) */
    int64_t experts_total;    /* routed experts of every layer */
    uint64_t slot_bytes;      /* device bytes of one slot (gate + up + down strides) */
    uint64_t arena_bytes;     /* device bytes of the three slot arenas */
    st_expert_stats stats;    /* cache counters summed over layers since load / reset */
    uint64_t forwards;        /* forwards since load / reset */
    uint64_t tokens;          /* tokens of those forwards */
    uint64_t cpu_assign;      /* (token, expert) pairs computed by the CPU module */
    double cpu_s;             /* wall seconds spent in the CPU module's expert ops */
    double route_s;           /* wall seconds waiting for the router's choices (the sync) */
    uint64_t pinned_bytes;    /* bytes of the file's expert tensors registered with the device */
    int64_t stage_slots;      /* staging slots */
    uint64_t stage_experts;   /* experts copied to staging slots */
    uint64_t stage_assign;    /* (token, expert) pairs computed from staging slots */
    uint64_t resident_calls;  /* layer calls of one token that ran on the device with no sync (a
                                 fixed placement's fully resident layers) */
    double upload_s;          /* measured seconds of one expert's copy (staging only) */
    const char *pin_note;     /* why pinning stopped ("" when it did not), borrowed */
} st_model_expert_info;

/* Device bytes of one expert slot of `d` (the gate, up and down strides: each the largest
 * per-expert size of that matrix over layers, rounded to 256), 0 for dense models. */
uint64_t st_model_expert_slot_bytes(const st_model_desc *d);
/* Device bytes an expert cache adds to the model's buffers besides the slots and the slot
 * table, for steps of n_batch tokens (the hits-first expert ids, token rows and row map, and the
 * staging table). */
uint64_t st_model_expert_io_bytes(const st_hparams *hp, int64_t n_batch);

/* Fills *out (a split model's caches summed over its stages); returns 0, or -1 when the model
 * runs every expert on its devices (out->slots = -1, counters 0). */
int st_model_expert_info_get(const st_model *m, st_model_expert_info *out);
/* The expert cache of a hybrid model (borrowed; NULL otherwise), e.g. for its metrics. */
const st_expert_cache *st_model_expert_cache(const st_model *m);
/* Clears the cache counters, the timers and the recorded trace (the residents stay). */
void st_model_expert_stats_reset(st_model *m);
/* Recording of the routing trace (off by default; hybrid models only): every (layer, expert)
 * access in order, up to about a million accesses after the last reset, so
 * st_model_expert_belady can say what the best policy would have hit on that window. */
void st_model_expert_trace(st_model *m, int on);
/* Belady's optimum for the model's slot count on the recorded trace, into *out. 0, or -1 with
 * err (no trace recorded, not hybrid, out of memory). */
int st_model_expert_belady(const st_model *m, st_expert_stats *out, char *err, size_t errlen);
/* Per-request windows of the trace. Absolute position of the next routed (token, expert) lookup:
 * lookups since load, traced or not, never reset; 0 for models without a cache. */
uint64_t st_model_expert_trace_pos(const st_model *m);
/* Drops the recorded lookups before position `pos` (no window older than it is needed); the
 * trace no longer starts at the reset, so st_model_expert_belady refuses afterwards. */
void st_model_expert_trace_trim(st_model *m, uint64_t pos);
/* Belady's optimum for the model's slot count on lookups [from, to), starting from the residents
 * of `resident` (a copy of the cache's slot table taken at `from`; NULL = empty). 0, or -1 with
 * err (tracing off, or the window not recorded in full: trimmed, or past the trace's cap). */
int st_model_expert_belady_window(const st_model *m, uint64_t from, uint64_t to, const int32_t *resident,
                                  st_expert_stats *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
