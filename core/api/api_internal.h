/* SPDX-License-Identifier: Apache-2.0 */
/* What the handles of include/strata/strata.h hold, and the helpers the API's files share. */
#ifndef STRATA_API_INTERNAL_H
#define STRATA_API_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "backend/backend_registry.h"
#include "engine/engine.h"
#include "engine/engine_offload.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "strata/strata.h"
#include "tokenizer/tokenizer.h"

/* The chat template of a model (api_chat.c): the GGUF's Jinja template when this build has the
 * engine for it, else a built-in family. Opaque here. */
typedef struct st_api_chat st_api_chat;

struct strata_model {
    st_gguf *g;
    st_model_desc *d;
    st_tokenizer *tok;
    st_backend_registry *reg;     /* NULL for the scalar reference ("ref") */
    const st_backend_device *pick;
    const st_backend_api *api;
    uint32_t index;
    st_device *dev;
    st_offload off;               /* the memory plan and its blocks (zero without a registry) */
    st_model *m;
    st_engine *e;                 /* one engine serves every context, n_parallel slots */
    int32_t n_parallel;
    st_api_chat *chat;
    char device_text[160];
    /* the engine is single-threaded: whoever holds mu may submit and step (api_context.c) */
    pthread_mutex_t mu;
    uint64_t next_id;
    strata_context *contexts;     /* every live context, for routing events by request id */
    char failed[256];             /* a step failed: the device may be in any state (under mu) */
};

/* A DONE event's facts, as the context keeps them. */
typedef struct st_api_done {
    int finished;
    int32_t finish, n_prompt, n_reused, n_gen;
    double prefill_ms, decode_ms;
    char msg[256];
} st_api_done;

struct strata_context {
    strata_model *model;
    strata_context *next;         /* in model->contexts, under model->mu */
    uint64_t id;                  /* the running request (0 = none), under model->mu */
    atomic_int cancel;            /* strata_cancel: any thread */
    int cancel_sent;
    /* tokens the steps produced for this context and it has not delivered yet, under model->mu */
    int32_t *pending;
    size_t n_pending, cap_pending;
    int oom;
    st_api_done done;
    st_detok *detok;
};

/* Records the failure for strata_last_error and returns s. printf-style. */
strata_status st_api_fail(strata_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clears the calling thread's error text. */
void st_api_ok(void);
/* Nonzero when a caller's versioned struct is too small to hold the first version's fields. */
int st_api_size_bad(uint32_t size, size_t min);

/* api_chat.c: the model's template, made at open (NULL when out of memory). */
st_api_chat *st_api_chat_new(const st_gguf *g, const st_tokenizer *tok);
void st_api_chat_free(st_api_chat *c);
int st_api_chat_has_template(const st_api_chat *c);

#endif
