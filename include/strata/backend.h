/* SPDX-License-Identifier: Apache-2.0 */
/* Strata backend module ABI.
 *
 * A backend module is a shared object exporting exactly one required symbol,
 * ST_BACKEND_ENTRY_SYMBOL ("st_backend_entry"), and optionally "st_backend_score".
 * Everything else is hidden (-fvisibility=hidden).
 *
 * Rules (docs/backends.md explains them at length):
 *  - ABI major must match exactly; the minor only grows. The host offers its version and
 *    a table of host services; the module answers with its own table.
 *  - Every struct that crosses the boundary starts with `uint32_t size` and only grows at
 *    the end. A reader checks `size` (ST_HAS_FIELD) before touching a field that a newer
 *    minor added. A NULL optional slot means "not supported".
 *  - Op ids and type ids are numbered explicitly and never renumbered.
 *  - Every call returns st_status; on failure the module keeps a per-thread error text
 *    readable through last_error(). Nothing in a module calls exit/abort or prints and dies.
 *  - probe() has no side effects beyond loading the vendor's driver library.
 *  - Pointers named "device address" belong to the device's memory domain. On CPU-like
 *    devices they are host addresses; the host never dereferences them otherwise.
 *
 * Tensor layout convention: ne[0] is the innermost (contiguous) dimension; nb[i] is the
 * byte stride of dimension i. Shape comments read outermost first: [n][K] means
 * ne[1] = n rows of ne[0] = K elements. For block-quantized types, nb[1] is the byte size
 * of one row and ne[0] must be a multiple of the type's block size.
 */
#ifndef STRATA_BACKEND_H
#define STRATA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ST_ABI_MAJOR 1u
#define ST_ABI_MINOR 2u /* 1: fused ops ATTN_PREP, MOE_GATE_UP, MOE_DOWN appended;
                          2: ATTENTION_EX (sinks, sliding window), SWIGLU_OAI, ROUTER_GROUPS
                             appended */

#define ST_BACKEND_ENTRY_SYMBOL "st_backend_entry"
#define ST_BACKEND_SCORE_SYMBOL "st_backend_score"

#if defined(_WIN32)
#define ST_MODULE_EXPORT __declspec(dllexport)
#else
#define ST_MODULE_EXPORT __attribute__((visibility("default")))
#endif

/* True when a struct of reported `size` contains the whole of `field`. */
#define ST_HAS_FIELD(ptr, type, field) \
    ((ptr)->size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* ---- status codes (numbers are fixed) ---------------------------------------------- */
typedef enum st_status {
    ST_OK = 0,
    ST_NO_DRIVER = 1,   /* the vendor's driver/runtime library is absent or too old */
    ST_NO_DEVICE = 2,   /* the driver works but no device is present */
    ST_ARCH = 3,        /* devices exist, none of an architecture this module was built for */
    ST_ABI = 4,         /* ABI version mismatch */
    ST_OOM = 5,         /* out of memory (device or host) */
    ST_DEVICE_LOST = 6, /* the device stopped answering or was removed */
    ST_TIMEOUT = 7,     /* an operation did not finish in time */
    ST_UNSUPPORTED = 8, /* the op/type/shape is not implemented by this module */
    ST_INVALID = 9,     /* bad arguments */
    ST_IO = 10,         /* file or OS error */
    ST_INTERNAL = 11    /* a bug: report it */
} st_status;

/* ---- data types: numbers are GGUF's tensor type ids (fixed by the file format) ------ */
typedef enum st_type {
    ST_TYPE_F32 = 0,
    ST_TYPE_F16 = 1,
    ST_TYPE_Q4_0 = 2,
    ST_TYPE_Q4_1 = 3,
    ST_TYPE_Q5_0 = 6,
    ST_TYPE_Q5_1 = 7,
    ST_TYPE_Q8_0 = 8,
    ST_TYPE_Q8_1 = 9,
    ST_TYPE_Q2_K = 10,
    ST_TYPE_Q3_K = 11,
    ST_TYPE_Q4_K = 12,
    ST_TYPE_Q5_K = 13,
    ST_TYPE_Q6_K = 14,
    ST_TYPE_Q8_K = 15,
    ST_TYPE_IQ4_NL = 20,
    ST_TYPE_I8 = 24,
    ST_TYPE_I16 = 25,
    ST_TYPE_I32 = 26,
    ST_TYPE_IQ4_XS = 23,
    ST_TYPE_BF16 = 30,
    ST_TYPE_MXFP4 = 39, /* ABI 1.2: 32 E2M1 values and one E8M0 scale per 17-byte block (gpt-oss) */
    ST_TYPE_COUNT = 40 /* upper bound for tables indexed by type; not a type */
} st_type;

/* ---- op ids (fixed numbers; also the bit index in capability masks) ----------------- */
typedef enum st_op_id {
    ST_OP_GET_ROWS = 0,    /* embedding gather */
    ST_OP_RMS_NORM = 1,    /* RMS norm, optionally fused with a residual add */
    ST_OP_MATMUL = 2,      /* quantized weight x batch of activations */
    ST_OP_ROPE = 3,        /* rotary embedding, normal/NeoX, YaRN */
    ST_OP_KV_WRITE = 4,    /* write K/V rows into the paged cache */
    ST_OP_ATTENTION = 5,   /* attention over the paged cache, causal, GQA, optional mask */
    ST_OP_SWIGLU = 6,      /* silu(gate) * up */
    ST_OP_ROUTER = 7,      /* softmax/sigmoid + top-k + renormalize */
    ST_OP_MOE_MATMUL = 8,  /* grouped expert matmul through a slot table */
    ST_OP_MOE_COMBINE = 9, /* weighted sum of expert rows per token */
    ST_OP_ADD = 10,        /* a + b, b may broadcast over rows */
    ST_OP_SCALE = 11,      /* a * s */
    ST_OP_CONVERT = 12,    /* copy with type conversion between F32/F16/BF16 */
    ST_OP_MUL_ROWS = 13,   /* a[i][:] * f(s[i]), f = identity or sigmoid */
    ST_OP_ARGMAX = 14,     /* per-row argmax */
    ST_OP_TOPK = 15,       /* per-row top-k values and indices, sorted descending */
    /* ABI 1.1: fused ops. Optional: a host falls back to the unfused ops when a slot is NULL. */
    ST_OP_ATTN_PREP = 16,  /* per-head Q/K norm + rope of Q and K + K/V cache write */
    ST_OP_MOE_GATE_UP = 17, /* silu(W_gate . x) * (W_up . x) per expert assignment */
    ST_OP_MOE_DOWN = 18,   /* W_down . x per assignment, weighted and summed per token */
    /* ABI 1.2 */
    ST_OP_ATTENTION_EX = 19, /* ATTENTION with per-head sinks and a sliding window (gpt-oss) */
    ST_OP_SWIGLU_OAI = 20, /* clamped SwiGLU: min(g, l) sigmoid(a min(g, l)) (clamp(u, -l, l) + 1) */
    ST_OP_ROUTER_GROUPS = 21, /* ROUTER restricted to the best expert groups (DeepSeek-V3) */
    ST_OP_COUNT = 22       /* number of op ids this header knows; not an op */
} st_op_id;

/* The op slots, in op-id order: X(ID, slot, argument struct, ABI minor that added it). Every op
 * slot is optional: NULL means the module has no kernel for it, and a slot a newer minor added
 * is read only when the module's table reports that minor and a size covering it. The ops
 * table (st_backend_ops), st_op_name, the loader's checks, the host's one door to a device
 * (core/backend/dev.h), the ABI layout test and docs/backends.md's slot list all come from this
 * one list; an op is added by appending a line here (and its id above). */
#define ST_BACKEND_OP_SLOTS(X)                                  \
    X(GET_ROWS, get_rows, st_get_rows_args, 0)                  \
    X(RMS_NORM, rms_norm, st_rms_norm_args, 0)                  \
    X(MATMUL, matmul, st_matmul_args, 0)                        \
    X(ROPE, rope, st_rope_args, 0)                              \
    X(KV_WRITE, kv_write, st_kv_write_args, 0)                  \
    X(ATTENTION, attention, st_attention_args, 0)               \
    X(SWIGLU, swiglu, st_swiglu_args, 0)                        \
    X(ROUTER, router, st_router_args, 0)                        \
    X(MOE_MATMUL, moe_matmul, st_moe_matmul_args, 0)            \
    X(MOE_COMBINE, moe_combine, st_moe_combine_args, 0)         \
    X(ADD, add, st_binary_args, 0)                              \
    X(SCALE, scale, st_binary_args, 0)                          \
    X(CONVERT, convert, st_binary_args, 0)                      \
    X(MUL_ROWS, mul_rows, st_binary_args, 0)                    \
    X(ARGMAX, argmax, st_topk_args, 0)                          \
    X(TOPK, topk, st_topk_args, 0)                              \
    X(ATTN_PREP, attn_prep, st_attn_prep_args, 1)               \
    X(MOE_GATE_UP, moe_gate_up, st_moe_gate_up_args, 1)         \
    X(MOE_DOWN, moe_down, st_moe_down_args, 1)                  \
    X(ATTENTION_EX, attention_ex, st_attention_ex_args, 2)      \
    X(SWIGLU_OAI, swiglu_oai, st_swiglu_oai_args, 2)            \
    X(ROUTER_GROUPS, router_groups, st_router_groups_args, 2)

/* Lower-case name of an op id ("moe_gate_up"), "op" for an unknown id. Static storage. */
static inline const char *st_op_name(uint32_t op) {
#define ST_OP_NAME_(ID, slot, A, minor) #slot,
    static const char *const names[ST_OP_COUNT] = {ST_BACKEND_OP_SLOTS(ST_OP_NAME_)};
#undef ST_OP_NAME_
    return op < ST_OP_COUNT ? names[op] : "op";
}

/* The ABI minor that added op `op` (ST_ABI_MINOR + 1 for an id this header does not know). */
static inline uint32_t st_op_minor(uint32_t op) {
#define ST_OP_MINOR_(ID, slot, A, minor) minor,
    static const unsigned char minors[ST_OP_COUNT] = {ST_BACKEND_OP_SLOTS(ST_OP_MINOR_)};
#undef ST_OP_MINOR_
    return op < ST_OP_COUNT ? minors[op] : ST_ABI_MINOR + 1;
}

/* A strided view of device memory. `data` is a device address; the view does not own it. */
typedef struct st_tensor {
    void *data;    /* device address of element [0][0][0][0] */
    uint32_t type; /* st_type */
    uint32_t reserved;
    int64_t ne[4]; /* elements per dimension, ne[0] innermost; unused dims are 1 */
    int64_t nb[4]; /* byte stride per dimension */
} st_tensor;

/* ---- host services offered to the module ------------------------------------------- */
typedef enum st_log_level { ST_LOG_DEBUG = 0, ST_LOG_INFO = 1, ST_LOG_WARN = 2, ST_LOG_ERROR = 3 } st_log_level;

typedef struct st_host_api {
    uint32_t size;      /* sizeof(st_host_api) as the host compiled it */
    uint32_t abi_major; /* host's ABI major */
    uint32_t abi_minor; /* host's ABI minor */
    uint32_t n_threads; /* worker threads a CPU-like module should use; 0 = its own default */
    /* Log a line (no trailing newline needed). `msg` is borrowed for the call. May be NULL. */
    void (*log)(void *user, int level, const char *module, const char *msg);
    /* Monotonic clock in nanoseconds. Never NULL. */
    uint64_t (*now_ns)(void *user);
    /* Called when the module cannot satisfy an allocation of `bytes` on `device`; the host may
     * free something and return nonzero to ask for a retry. May be NULL. */
    int (*memory_pressure)(void *user, uint32_t device, uint64_t bytes);
    void *user; /* passed back to every callback above */
    /* Module-specific configuration string (e.g. STRATA_SIM syntax for sim); may be NULL. */
    const char *config;
} st_host_api;

/* ---- probe report ------------------------------------------------------------------ */
#define ST_NAME_MAX 64
#define ST_REASON_MAX 256

/* Capability bits in st_device_props.caps */
#define ST_CAP_F16 (1ull << 0)        /* F16 arithmetic */
#define ST_CAP_BF16 (1ull << 1)       /* BF16 arithmetic */
#define ST_CAP_PEER (1ull << 2)       /* peer copies with devices of the same domain */
#define ST_CAP_HOST_REGISTER (1ull << 3)
#define ST_CAP_GRAPHS (1ull << 4)     /* graph capture/replay */
#define ST_CAP_UNIFIED (1ull << 5)    /* device addresses are host addresses */
#define ST_CAP_ASYNC (1ull << 6)      /* ops run asynchronously to the caller */

typedef struct st_device_props {
    uint32_t size;
    uint32_t usable;              /* nonzero when this module can run on the device */
    char name[ST_NAME_MAX];       /* "NVIDIA H200", "Host CPU (AVX2)" */
    char vendor[ST_NAME_MAX / 2]; /* "nvidia", "amd", "cpu", "sim" */
    char arch[ST_NAME_MAX / 2];   /* "sm_90", "gfx1030", "x86-64-v3", "power9" */
    char reason[ST_REASON_MAX];   /* why unusable ("built for sm_75..sm_120, device is sm_61") */
    uint8_t uuid[16];             /* stable device identity */
    uint64_t domain;              /* memory domain id; equal ids allow peer copies */
    uint64_t mem_total;           /* bytes */
    uint64_t mem_free;            /* bytes free at probe time */
    uint64_t mem_used_self;       /* bytes this process holds on the device */
    uint64_t max_alloc;           /* largest single allocation, bytes */
    uint64_t caps;                /* ST_CAP_* */
    uint32_t compute_major;       /* e.g. 9 for sm_90; 0 for CPUs */
    uint32_t compute_minor;
    uint32_t n_cores;             /* SMs, CUs or CPU threads */
    uint32_t reserved;
    double mem_bw_gbs;            /* nominal or measured memory bandwidth, 0 if unknown */
} st_device_props;

typedef struct st_probe_report {
    uint32_t size;
    uint32_t status;              /* st_status: OK when at least one device is usable */
    char reason[ST_REASON_MAX];   /* when status != OK: why ("libcuda.so.1 not found") */
    char build_archs[ST_REASON_MAX]; /* what the module was built for: "sm_75,sm_80,..." */
    uint32_t n_devices;           /* devices found (usable or not) */
} st_probe_report;

/* ---- opaque handles owned by the module --------------------------------------------- */
typedef struct st_device st_device; /* an opened device */
typedef struct st_stream st_stream; /* an ordered queue of work on one device */
typedef struct st_event st_event;   /* a marker recorded on a stream */
typedef struct st_graph st_graph;   /* a captured sequence of ops */

/* ---- op arguments: each starts with `size`; tensors are views, never owned ---------- */

typedef struct st_get_rows_args {
    uint32_t size;
    uint32_t reserved;
    st_tensor w;         /* [n_rows][K] any weight type */
    const int32_t *ids;  /* device address, [n] row ids */
    st_tensor out;       /* [n][K] F32/F16/BF16 */
} st_get_rows_args;

typedef struct st_rms_norm_args {
    uint32_t size;
    float eps;
    st_tensor x;         /* [n][K] F32/F16/BF16 */
    st_tensor residual;  /* [n][K] or data==NULL: when set, h = x + residual */
    st_tensor sum_out;   /* [n][K] or data==NULL: receives h (may alias residual or x) */
    st_tensor weight;    /* [K] F32, or data==NULL for no scale */
    st_tensor out;       /* [n][K]: h / rms(h) * weight; may alias x */
} st_rms_norm_args;

typedef struct st_matmul_args {
    uint32_t size;
    uint32_t reserved;
    st_tensor w;   /* [M][K] weight, any weight type */
    st_tensor x;   /* [n][K] F32/F16/BF16 */
    st_tensor out; /* [n][M] F32/F16/BF16: out[i][m] = sum_k w[m][k] * x[i][k] */
} st_matmul_args;

enum { ST_ROPE_NORMAL = 0, ST_ROPE_NEOX = 2 };

typedef struct st_rope_args {
    uint32_t size;
    uint32_t mode;          /* ST_ROPE_NORMAL (adjacent pairs) or ST_ROPE_NEOX (halves) */
    st_tensor x;            /* [n][n_head][head_dim] F32/F16/BF16 */
    st_tensor out;          /* same shape; may alias x */
    const int32_t *pos;     /* device address, [n] positions */
    int32_t n_rot;          /* rotated dims per head (<= head_dim, even) */
    int32_t n_ctx_orig;     /* YaRN: original training context */
    float freq_base;        /* theta base, e.g. 10000 */
    float freq_scale;       /* 1/scaling factor (1 = none) */
    float ext_factor;       /* YaRN extrapolation mix (0 = off) */
    float attn_factor;      /* YaRN magnitude scale (1 = none) */
    float beta_fast;        /* YaRN ramp, e.g. 32 */
    float beta_slow;        /* YaRN ramp, e.g. 1 */
} st_rope_args;

/* Paged KV cache: k_cache/v_cache are [n_cells][n_kv_head][head_dim] where a cell index is
 * page * page_size + offset; the mapping of sequences to pages lives in the host/scheduler. */
typedef struct st_kv_write_args {
    uint32_t size;
    uint32_t reserved;
    st_tensor k;            /* [n][n_kv_head][head_dim] F32/F16/BF16 */
    st_tensor v;            /* [n][n_kv_head][head_dim] */
    st_tensor k_cache;      /* [n_cells][n_kv_head][head_dim] F32/F16/Q8_0 */
    st_tensor v_cache;      /* same */
    const int32_t *cells;   /* device address, [n] destination cell per token */
} st_kv_write_args;

typedef struct st_attention_args {
    uint32_t size;
    float scale;               /* usually 1/sqrt(head_dim) */
    st_tensor q;               /* [n][n_head][head_dim] F32/F16/BF16 */
    st_tensor k_cache;         /* [n_cells][n_kv_head][head_dim] F32/F16/Q8_0 */
    st_tensor v_cache;         /* same */
    st_tensor out;             /* [n][n_head][head_dim] */
    /* Token i attends to cells cell_table[seq[i]][0 .. kv_len[i]-1] (logical positions 0..). */
    const int32_t *seq;        /* device address, [n] row of cell_table per token */
    const int32_t *kv_len;     /* device address, [n] number of positions visible (causal) */
    const int32_t *cell_table; /* device address, [n_seq][max_pos] cell of each position */
    int32_t max_pos;           /* row stride of cell_table */
    int32_t reserved;
    const float *mask;         /* device address, [n][max_pos] additive mask, or NULL */
} st_attention_args;

typedef struct st_swiglu_args {
    uint32_t size;
    uint32_t reserved;
    st_tensor gate; /* [n][F] */
    st_tensor up;   /* [n][F] */
    st_tensor out;  /* [n][F] silu(gate) * up; may alias either */
} st_swiglu_args;

enum { ST_ROUTER_SOFTMAX = 0, ST_ROUTER_SIGMOID = 1 };

typedef struct st_router_args {
    uint32_t size;
    uint32_t gating;         /* ST_ROUTER_SOFTMAX or ST_ROUTER_SIGMOID */
    st_tensor logits;        /* [n][n_expert] F32 */
    const float *bias;       /* device address, [n_expert] selection bias, or NULL */
    int32_t k;               /* experts per token */
    int32_t normalize;       /* nonzero: selected weights sum to 1 */
    float weight_scale;      /* multiply final weights (1 = none) */
    int32_t reserved;
    int32_t *ids;            /* device address, [n][k] out: expert ids, by weight descending */
    float *weights;          /* device address, [n][k] out */
} st_router_args;

/* out[a][:] = scale[a] * W[slot_table[expert[a]]] . x[x_row[a]]; assignments whose slot is
 * negative are skipped (their out row is left untouched: computed elsewhere). */
typedef struct st_moe_matmul_args {
    uint32_t size;
    int32_t n_assign;
    st_tensor w;                /* [n_slots][M][K] expert slots, any weight type; nb[2] = slot stride */
    st_tensor x;                /* [n_x][K] F32/F16/BF16 */
    st_tensor out;              /* [n_assign][M] */
    const int32_t *slot_table;  /* device address, [n_expert] expert -> slot or -1 */
    const int32_t *expert;      /* device address, [n_assign] */
    const int32_t *x_row;       /* device address, [n_assign] */
    const float *scale;         /* device address, [n_assign] or NULL for 1 */
} st_moe_matmul_args;

/* out[t][:] = (accumulate ? out[t][:] : 0) + sum_j weights[t][j] * rows[row_of[t][j]][:],
 * j ascending; entries with row_of < 0 are skipped. */
typedef struct st_moe_combine_args {
    uint32_t size;
    int32_t k;
    st_tensor rows;          /* [n_rows][M] */
    st_tensor out;           /* [n][M] */
    const int32_t *row_of;   /* device address, [n][k] */
    const float *weights;    /* device address, [n][k] */
    int32_t accumulate;
    int32_t reserved;
} st_moe_combine_args;

typedef struct st_binary_args {
    uint32_t size;
    float s;          /* SCALE: the factor; unused otherwise */
    st_tensor a;      /* [n][K] */
    st_tensor b;      /* ADD: [n][K] or [1][K] (broadcast); MUL_ROWS: [n] F32; else unused */
    st_tensor out;    /* [n][K], any of F32/F16/BF16; may alias a */
    int32_t sigmoid;  /* MUL_ROWS: nonzero applies sigmoid to b */
    int32_t reserved;
} st_binary_args;

typedef struct st_topk_args {
    uint32_t size;
    int32_t k;          /* TOPK: count; ARGMAX: ignored (1) */
    st_tensor x;        /* [n][V] F32 */
    int32_t *ids;       /* device address, [n][k] out (ties: lower index first) */
    float *values;      /* device address, [n][k] out, or NULL (ARGMAX may pass NULL) */
} st_topk_args;

/* ---- fused ops (ABI 1.1) ------------------------------------------------------------ */

/* The attention prologue of one layer for n tokens:
 *   q_out[i][h] = rope(norm(q[i][h]) * q_norm)                 for every query head h
 *   k_cache[cells[i]][g] = rope(norm(k[i][g]) * k_norm)        for every KV head g
 *   v_cache[cells[i]][g] = v[i][g]
 * norm(x) = x / sqrt(mean(x^2) + eps) over head_dim, applied only when that norm weight's data is
 * non-NULL. q, k and v may be strided views into one fused QKV output. Rotation as ROPE with
 * `rope` (its x and out are ignored), KV write as KV_WRITE (a cell named twice gets the later
 * token). The unfused equivalent is RMS_NORM x2, ROPE x2 and KV_WRITE. */
typedef struct st_attn_prep_args {
    uint32_t size;
    float eps;
    st_tensor q;        /* [n][n_head][head_dim] F32/F16/BF16 */
    st_tensor k;        /* [n][n_kv_head][head_dim] */
    st_tensor v;        /* [n][n_kv_head][head_dim_v] */
    st_tensor q_norm;   /* [head_dim] F32, or data == NULL: no Q norm */
    st_tensor k_norm;   /* [head_dim] F32, or data == NULL: no K norm */
    st_tensor q_out;    /* [n][n_head][head_dim]; may alias q */
    st_tensor k_cache;  /* [n_cells][n_kv_head][head_dim] F32/F16/BF16/Q8_0 */
    st_tensor v_cache;  /* [n_cells][n_kv_head][head_dim_v] */
    const int32_t *cells; /* device address, [n] destination cell per token */
    st_rope_args rope;  /* mode, pos, n_rot, frequencies, YaRN; rope.x and rope.out unused */
} st_attn_prep_args;

/* out[a][:] = silu(Wg[s] . x[x_row[a]]) * (Wu[s] . x[x_row[a]]), s = slot_table[expert[a]];
 * assignments whose slot is negative are skipped (out row untouched). The unfused equivalent
 * is MOE_MATMUL x2 and SWIGLU. */
typedef struct st_moe_gate_up_args {
    uint32_t size;
    int32_t n_assign;
    st_tensor w_gate;           /* [n_slots][F][K] any weight type; nb[2] = slot stride */
    st_tensor w_up;             /* same shape and type as w_gate */
    st_tensor x;                /* [n_x][K] F32/F16/BF16 */
    st_tensor out;              /* [n_assign][F] */
    st_tensor scratch;          /* [n_assign][F] F32 the module may overwrite, or data == NULL */
    const int32_t *slot_table;  /* device address, [n_expert] expert -> slot or -1 */
    const int32_t *expert;      /* device address, [n_assign] */
    const int32_t *x_row;       /* device address, [n_assign] */
} st_moe_gate_up_args;

/* out[t][:] = (accumulate ? out[t][:] : 0) + sum_j weights[t*k+j] * (W[s] . x[t*k+j]),
 * s = slot_table[ids[t*k+j]], j ascending; choices whose slot is negative contribute nothing.
 * The unfused equivalent is MOE_MATMUL and MOE_COMBINE. */
typedef struct st_moe_down_args {
    uint32_t size;
    int32_t k;                  /* choices per token */
    st_tensor w;                /* [n_slots][M][K] any weight type; nb[2] = slot stride */
    st_tensor x;                /* [n*k][K] F32/F16/BF16: row t*k+j is choice j of token t */
    st_tensor out;              /* [n][M] */
    st_tensor scratch;          /* [n*k][M] F32 the module may overwrite, or data == NULL */
    const int32_t *slot_table;  /* device address, [n_expert] expert -> slot or -1 */
    const int32_t *ids;         /* device address, [n][k] expert ids */
    const float *weights;       /* device address, [n][k] */
    int32_t accumulate;
    int32_t reserved;
} st_moe_down_args;

/* ABI 1.2. ATTENTION over `base` (its every field as there), except that token i sees only
 * the positions p with kv_len[i] - window <= p < kv_len[i] (window 0: all of them), and each
 * head's softmax has one more term, exp(sinks[h]), that takes weight and adds no value
 * (sinks NULL: none). */
typedef struct st_attention_ex_args {
    uint32_t size;
    int32_t window;             /* sliding window in positions, 0 = none */
    st_attention_args base;
    const float *sinks;         /* device address, [n_head] F32 logits, or NULL */
} st_attention_ex_args;

/* ABI 1.2. gpt-oss's clamped SwiGLU, per element: x = min(gate, limit),
 * y = clamp(up, -limit, limit), out = x sigmoid(alpha x) (y + 1). */
typedef struct st_swiglu_oai_args {
    uint32_t size;
    float alpha;    /* 1.702 for gpt-oss */
    float limit;    /* 7 for gpt-oss */
    uint32_t reserved;
    st_tensor gate; /* [n][F] */
    st_tensor up;   /* [n][F] */
    st_tensor out;  /* [n][F]; may alias either */
} st_swiglu_oai_args;

/* ABI 1.2. ROUTER over `base` (its every field as there), except that the experts, in n_group
 * contiguous groups, compete only within the n_group_used groups whose two largest selection
 * values (gated logit + bias) have the largest sum: the others are never chosen. */
typedef struct st_router_groups_args {
    uint32_t size;
    int32_t n_group;            /* groups (divides n_expert) */
    int32_t n_group_used;       /* groups kept per token, 1..n_group */
    int32_t reserved;
    st_router_args base;
} st_router_groups_args;

/* One slot per op id, in op-id order (ST_BACKEND_OP_SLOTS). NULL = op absent on this module. */
typedef struct st_backend_ops {
    uint32_t size;
    uint32_t reserved;
#define ST_OP_SLOT_FIELD_(ID, slot, A, minor) st_status (*slot)(st_stream *s, const A *a);
    ST_BACKEND_OP_SLOTS(ST_OP_SLOT_FIELD_)
#undef ST_OP_SLOT_FIELD_
} st_backend_ops;

/* ---- the module's table ------------------------------------------------------------ */

/* The slots of st_backend_api after its header (size .. version), in table order:
 *   F(slot, return type, (parameters), required, ABI minor that added it)  a function slot
 *   P(slot, type, required, ABI minor)                                      a pointer slot
 * A required slot is never NULL in a table of that minor or later (the loader refuses the
 * module otherwise); an optional NULL slot means "not supported". The struct below, the
 * loader's check, the host's device door (core/backend/dev.h), the layout test and
 * docs/backends.md's slot list all come from this one list.
 *
 * identity and probe:
 *   probe: fill `out` (caller sets out->size); no side effects beyond loading driver libraries;
 *     OK when at least one device is usable, else the reason's status.
 *   device_props: properties of device `index` < report.n_devices (caller sets out->size).
 *   op_supported: nonzero when device `index` runs `op` with weight type `wtype`
 *     (activation-typed ops pass their activation type).
 *   last_error: thread-local text of the last failure on the calling thread; never NULL.
 * devices:
 *   device_open: *out is owned by the module until device_close; device_close: every buffer,
 *     stream and graph of it must already be released. mem_info: current free/total bytes.
 * memory:
 *   mem_alloc: `bytes` of device memory, a device address owned by the caller until mem_free;
 *     OOM with a text naming the size and free memory on failure.
 *   host_alloc/host_free: pinned host memory usable for async copies (NULL: host uses malloc).
 *   host_register/host_unregister: an existing host range, e.g. a mapped file (NULL: unsupported).
 *   copy_*: ordered on stream `s`; host pointers stay borrowed until the stream syncs.
 *   copy_peer: from a device of this module in the same domain (NULL: no peer access).
 * streams and events: stream_sync waits for all work on `s`; asynchronous failures surface
 *   there with their op named. event_wait: s waits for e.
 * ops: never NULL; NULL slots inside are absent ops (ST_BACKEND_OP_SLOTS).
 * graphs (optional, all NULL when unsupported): capture a stream's work, replay it.
 * shutdown: join every module thread; the host dlcloses afterwards. */
#define ST_BACKEND_API_SLOTS(F, P)                                                                     \
    F(probe, st_status, (st_probe_report * out), 1, 0)                                                 \
    F(device_props, st_status, (uint32_t index, st_device_props * out), 1, 0)                          \
    F(op_supported, int, (uint32_t index, uint32_t op, uint32_t wtype), 1, 0)                          \
    F(last_error, const char *, (void), 1, 0)                                                          \
    F(device_open, st_status, (uint32_t index, st_device * *out), 1, 0)                                \
    F(device_close, st_status, (st_device * dev), 1, 0)                                                \
    F(mem_info, st_status, (st_device * dev, uint64_t * free_bytes, uint64_t * total_bytes), 1, 0)     \
    F(mem_alloc, st_status, (st_device * dev, uint64_t bytes, void **out), 1, 0)                       \
    F(mem_free, st_status, (st_device * dev, void *ptr), 1, 0)                                         \
    F(host_alloc, st_status, (st_device * dev, uint64_t bytes, void **out), 0, 0)                      \
    F(host_free, st_status, (st_device * dev, void *ptr), 0, 0)                                        \
    F(host_register, st_status, (st_device * dev, void *ptr, uint64_t bytes), 0, 0)                    \
    F(host_unregister, st_status, (st_device * dev, void *ptr), 0, 0)                                  \
    F(copy_h2d, st_status, (st_stream * s, void *dst, const void *src, uint64_t bytes), 1, 0)          \
    F(copy_d2h, st_status, (st_stream * s, void *dst, const void *src, uint64_t bytes), 1, 0)          \
    F(copy_d2d, st_status, (st_stream * s, void *dst, const void *src, uint64_t bytes), 1, 0)          \
    F(copy_peer, st_status,                                                                            \
      (st_stream * s, void *dst, st_device *src_dev, const void *src, uint64_t bytes), 0, 0)           \
    F(memset_d, st_status, (st_stream * s, void *dst, int value, uint64_t bytes), 1, 0)                \
    F(stream_create, st_status, (st_device * dev, st_stream * *out), 1, 0)                             \
    F(stream_destroy, st_status, (st_stream * s), 1, 0)                                                \
    F(stream_sync, st_status, (st_stream * s), 1, 0)                                                   \
    F(event_create, st_status, (st_device * dev, st_event * *out), 1, 0)                               \
    F(event_destroy, st_status, (st_event * e), 1, 0)                                                  \
    F(event_record, st_status, (st_event * e, st_stream * s), 1, 0)                                    \
    F(event_wait, st_status, (st_stream * s, st_event * e), 1, 0)                                      \
    F(event_sync, st_status, (st_event * e), 1, 0)                                                     \
    P(ops, const st_backend_ops *, 1, 0)                                                               \
    F(graph_begin, st_status, (st_stream * s), 0, 0)                                                   \
    F(graph_end, st_status, (st_stream * s, st_graph * *out), 0, 0)                                    \
    F(graph_launch, st_status, (st_graph * g, st_stream * s), 0, 0)                                    \
    F(graph_destroy, st_status, (st_graph * g), 0, 0)                                                  \
    F(shutdown, void, (void), 0, 0)

typedef struct st_backend_api {
    uint32_t size;          /* sizeof(st_backend_api) as the module compiled it */
    uint32_t abi_major;     /* module's ABI major (must equal host's) */
    uint32_t abi_minor;     /* module's ABI minor */
    uint32_t reserved;
    const char *name;       /* short name: "cpu", "cuda", "sim"; static storage */
    const char *version;    /* module version string; static storage */
#define ST_API_FN_FIELD_(slot, ret, params, req, minor) ret(*slot) params;
#define ST_API_PTR_FIELD_(slot, type, req, minor) type slot;
    ST_BACKEND_API_SLOTS(ST_API_FN_FIELD_, ST_API_PTR_FIELD_)
#undef ST_API_FN_FIELD_
#undef ST_API_PTR_FIELD_
} st_backend_api;

/* The entry point every module exports. The module copies what it needs of `host` (the
 * host keeps it alive until shutdown). On ABI mismatch returns ST_ABI and still sets
 * *out to a table whose abi_major/minor/name are readable, or NULL. */
typedef st_status (*st_backend_entry_fn)(const st_host_api *host, uint32_t abi_major,
                                         uint32_t abi_minor, const st_backend_api **out);
/* Optional: 0 = cannot run here, higher = better. Must be side-effect free. */
typedef int (*st_backend_score_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* STRATA_BACKEND_H */
