/* SPDX-License-Identifier: Apache-2.0 */
/* The framed protocol between the server's front process and its engine child over a
 * socketpair. Both ends are the same executable, so payloads are plain structs.
 * Frame: uint32 type, uint32 payload bytes, payload. */
#ifndef STRATA_PROTO_H
#define STRATA_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

enum {
    ST_MSG_READY = 1,      /* engine -> front: st_msg_ready */
    ST_MSG_SUBMIT = 2,     /* front -> engine: st_msg_submit + int32 tokens[n_prompt] */
    ST_MSG_CANCEL = 3,     /* front -> engine: uint64 id */
    ST_MSG_EVENT = 4,      /* engine -> front: st_engine_event (+ float embd[n_embd] for an embedding) */
    ST_MSG_REFUSED = 5,    /* engine -> front: st_msg_refused (submit not queued) */
    ST_MSG_STATS_REQ = 6,  /* front -> engine: nothing */
    ST_MSG_STATS = 7,      /* engine -> front: st_msg_stats */
    ST_MSG_PROGRESS = 8    /* engine -> front: uint64 steps (heartbeat while busy) */
};

#define ST_MSG_MAX (64u << 20) /* largest payload accepted */

typedef struct st_msg_ready {
    int32_t n_ctx, n_slots, n_vocab, n_embd;
    char device[128];
    char model[128];
} st_msg_ready;

typedef struct st_msg_submit {
    uint64_t id;
    int32_t max_tokens;
    int32_t n_prompt;
    int32_t ignore_eos;
    st_sampler_params sp;
    int32_t n_grammar; /* GBNF bytes after the tokens (no NUL) */
    int32_t n_bias;    /* then int32 ids[n_bias] and float biases[n_bias] */
    int32_t want_logprobs; /* st_gen_request's */
    int32_t top_logprobs;
    int32_t pooling;       /* ST_POOL_*: an embedding request */
    int32_t reserved;
} st_msg_submit;

/* A SUBMIT payload's request (server/proto_submit.c): r points into p (the grammar copied to
 * a NUL-terminated buffer that lives until the next call). -1 when the sizes do not add up. */
int st_msg_submit_unpack(void *p, size_t len, st_gen_request *r);
/* The bytes after st_msg_submit for tokens, grammar and biases (malloc'ed; *n their size). */
void *st_msg_submit_pack(const int32_t *prompt, int32_t n, const char *grammar, const int32_t *bias_ids,
                         const float *bias_vals, int32_t n_bias, size_t *out_n);

typedef struct st_msg_refused {
    uint64_t id;
    char msg[256];
} st_msg_refused;

#define ST_MSG_SLOTS 256 /* the most slots an engine runs (--parallel) */
typedef struct st_msg_stats {
    st_engine_stats engine;
    int64_t kv_cells_free, kv_cells_total;
    int32_t n_slots, reserved;            /* slot[0 .. n_slots): what each slot does (/slots) */
    st_engine_slot slot[ST_MSG_SLOTS];
} st_msg_stats;

/* Write one frame (payload may be split in two parts, b may be NULL). Returns 0, or -1 when
 * the peer is gone (errno set). Safe for concurrent writers only under the caller's lock. */
int st_msg_send(int fd, uint32_t type, const void *a, size_t na, const void *b, size_t nb);
/* Read one frame; *payload is malloc'ed (caller frees). Returns 0, or -1 at EOF/error or for
 * a frame larger than ST_MSG_MAX. */
int st_msg_recv(int fd, uint32_t *type, void **payload, size_t *len);

#endif
