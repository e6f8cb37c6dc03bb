/* SPDX-License-Identifier: Apache-2.0 */
/* The engine: slots with continuous batching over one st_model. Each step runs ONE forward
 * over every active slot: decode tokens first, then prefill chunks up to the token budget,
 * so concurrent requests decode together. A new request goes to the free slot whose cached
 * tokens share the longest prefix with its prompt; only the rest is computed.
 * Single-threaded: the caller (the engine process's loop) owns it. */
#ifndef STRATA_ENGINE_H
#define STRATA_ENGINE_H

#include <stdint.h>

#include "model/model.h"
#include "sample/sample.h"

/* Exit statuses of the engine process that the front recognizes (anything else is reported
 * as a plain exit code): the watchdog saw no progress, or a forward failed on the device. */
#define ST_ENGINE_EXIT_DEVICE 74
#define ST_ENGINE_EXIT_STALL 75
/* The engine could not start and starting it again will fail the same way (the model's
 * contents, the memory plan, no usable device): the front does not restart it in a loop. */
#define ST_ENGINE_EXIT_START 78

typedef struct st_engine_config {
    int32_t n_slots;      /* concurrent requests (<= the model's n_seq) */
    int32_t n_budget;     /* most tokens in one step (<= the model's n_batch) */
    int32_t queue_max;    /* requests waiting for a slot before submit refuses */
    const char *where;    /* device name for the stage text of crash and stall reports (may be NULL) */
    const struct st_gvocab *gvocab; /* the vocabulary for grammar-constrained requests (NULL: refused) */
    double max_step_s;    /* > 0: prefill chunks shrink so that a step takes about this long at most
                             (measured seconds per token); keeps steps well inside the watchdog's
                             stall timeout on slow devices. 0 = the full budget every step */
} st_engine_config;

typedef struct st_gen_request {
    uint64_t id;             /* caller's id, echoed in events */
    const int32_t *prompt;   /* [n_prompt] token ids, copied by submit */
    int32_t n_prompt;
    int32_t max_tokens;      /* > 0 */
    int32_t ignore_eos;      /* nonzero: end-of-generation tokens do not end it (sent as tokens) */
    st_sampler_params sp;
    const char *grammar;     /* GBNF the output must follow, or NULL (copied by submit) */
    const int32_t *bias_ids; /* [n_bias] logit biases (copied by submit) */
    const float *bias_vals;
    int32_t n_bias;
    int32_t want_logprobs;   /* nonzero: each token's log probability is sent (event lp) */
    int32_t top_logprobs;    /* with it, this many alternatives (0..20) */
    int32_t pooling;         /* ST_POOL_*: an embedding of the prompt instead of generated text */
} st_gen_request;

/* Embedding requests: the prompt's final hidden states (after the output norm) pooled into one
 * vector, sent with the DONE event; nothing is generated. */
enum { ST_POOL_NONE = 0, ST_POOL_MEAN = 1, ST_POOL_CLS = 2, ST_POOL_LAST = 3 };

/* Expert statistics of one request on a hybrid model (an expert cache): the cache's counters
 * from the request's admission to its end. Requests running together share steps, so these are
 * the whole engine's lookups in the steps of the request's lifetime (its own and its
 * neighbours'); max_slots says whether it ran alone (1). */
typedef struct st_engine_experts {
    int32_t valid;        /* nonzero for a request that ran on a model with an expert cache */
    int32_t belady_valid; /* nonzero when belady_hits is known (its lookups were all traced) */
    int32_t max_slots;    /* most requests in one step of the lifetime */
    int32_t reserved;
    uint64_t steps;       /* forwards in the lifetime */
    uint64_t hits, misses;/* (token, expert) lookups served from a device slot / not */
    uint64_t belady_hits; /* Belady's optimum on the same lookups, same slots, same residents at
                             admission: no policy could have hit more */
    uint64_t bytes_device, bytes_host, bytes_upload; /* per tier, as st_expert_stats counts them */
    double cpu_ms;        /* wall time of the CPU module computing misses (the CPU pipe) */
    uint64_t streamed;    /* missed experts copied to staging slots and computed on the device
                             (the copy pipe) */
    double route_ms;      /* wall time waiting for the routers' choices to reach the host */
} st_engine_experts;

/* One line for a request's log: "experts: hit 93.1% (belady 97.4%) of 12288 lookups in 14 steps,
 * 1.2 GiB dev / 310.0 MiB host / 0 B upload, cpu 41 ms, 120 streamed, router sync 3 ms" (plus ", steps shared with up to N other requests" when
 * others ran beside it); "" when !x->valid. Returns the bytes written (truncated at len). */
size_t st_engine_experts_format(const st_engine_experts *x, char *buf, size_t len);

enum { ST_EV_TOKEN = 1, ST_EV_DONE = 2 };
enum { ST_FINISH_STOP = 0, ST_FINISH_LENGTH = 1, ST_FINISH_CANCEL = 2, ST_FINISH_ERROR = 3 };

#define ST_ENGINE_MAX_STAGES 16 /* devices of a split model whose time a request reports */

typedef struct st_engine_event {
    int32_t kind;       /* ST_EV_TOKEN or ST_EV_DONE */
    uint64_t id;
    int32_t token;      /* TOKEN: the new token (an end-of-generation token is not sent) */
    int32_t finish;     /* DONE: ST_FINISH_* */
    int32_t n_prompt;   /* DONE: prompt tokens, of which n_reused came from the prefix cache */
    int32_t n_reused;
    int32_t n_gen;      /* DONE: generated tokens */
    double prefill_ms;  /* DONE: time from admission to the first token */
    double decode_ms;   /* DONE: time from the first token to the end */
    char msg[256];      /* DONE with ERROR: what failed */
    st_engine_experts experts; /* DONE: the request's expert statistics (valid = 0 when none) */
    st_token_logprobs lp;      /* TOKEN: its log probabilities when the request asked (lp.valid) */
    char devices[160];         /* DONE, model split over devices: the time each device's stage spent in
                                  the steps the request took part in ("sim0 12.1 ms, sim1 4.0 ms"), else "" */
    int32_t n_embd;            /* DONE of an embedding request: the pooled vector's size ... */
    const float *embd;         /* ... and the vector (not normalized), valid during the emit call */
} st_engine_event;

typedef void (*st_engine_emit_fn)(void *user, const st_engine_event *ev);

typedef struct st_engine st_engine;

/* Engine over `m` (borrowed; must outlive it). eog[n_eog] are the end-of-generation ids.
 * NULL with a message in err when the configuration does not fit the model. */
st_engine *st_engine_new(st_model *m, const st_engine_config *cfg, const int32_t *eog, int32_t n_eog,
                         char *err, size_t errlen);
void st_engine_free(st_engine *e);

/* Queue a request (prompt copied). -1 with err when the queue is full (err starts with
 * "queue full"), the prompt is empty or longer than the context ("context_length_exceeded"). */
int st_engine_submit(st_engine *e, const st_gen_request *r, char *err, size_t errlen);
/* Cancel a queued or running request; a DONE event with ST_FINISH_CANCEL follows at the next
 * step. Unknown ids are ignored. */
void st_engine_cancel(st_engine *e, uint64_t id);
/* Nonzero while any request is queued or running. */
int st_engine_busy(const st_engine *e);
/* One step: admit queued requests to free slots, run one forward over every active slot,
 * sample, and emit events. Returns 0, or -1 when the forward failed (every running request
 * then got a DONE event with ST_FINISH_ERROR and the message, also in err). */
int st_engine_step(st_engine *e, st_engine_emit_fn emit, void *user, char *err, size_t errlen);

/* Statistics since creation. */
#define ST_ENGINE_HIST 9 /* decode-only steps by rows: index k for k rows, the last for more */
typedef struct st_engine_stats {
    uint64_t steps, tokens_prefill, tokens_decode, tokens_reused, requests_done;
    uint64_t max_slots_in_step; /* most slots that shared one forward */
    int32_t slots_busy, queue_len;
    double forward_s, sample_s; /* wall time in st_model_forward, and reading/sampling the logits */
    uint64_t decode_steps[ST_ENGINE_HIST]; /* steps that only decoded, by the number of rows */
    double decode_step_s[ST_ENGINE_HIST];  /* their wall time (forward + sampling) */
} st_engine_stats;
void st_engine_get_stats(const st_engine *e, st_engine_stats *out);

/* What one slot does now (for the server's /slots). */
typedef struct st_engine_slot {
    uint64_t id;          /* the request it runs (0 when idle) */
    int32_t active;       /* nonzero while it runs a request */
    int32_t n_prompt;     /* the request's prompt tokens */
    int32_t n_done;       /* prompt tokens in the cache so far (reused ones included) */
    int32_t n_gen;        /* tokens generated so far */
    int32_t max_tokens;   /* the request's limit */
    int32_t n_cached;     /* tokens whose K/V the slot's sequence holds (kept for reuse when idle) */
} st_engine_slot;
/* Fills out[0 .. min(max, slots)) and returns the number of slots. */
int32_t st_engine_get_slots(const st_engine *e, st_engine_slot *out, int32_t max);

#endif
