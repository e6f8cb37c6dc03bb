/* SPDX-License-Identifier: Apache-2.0 */
/* Contexts and generation. Every context of a model submits to the model's one engine; the
 * engine is single-threaded, so whoever holds model->mu submits and runs steps. A thread that
 * waits for its own tokens runs the next step itself when none are there: each step advances
 * every context's request at once (continuous batching), and its tokens are queued on their
 * contexts; each thread delivers its own tokens to its callback without the lock. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "sample/sample.h"

#define V1_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

STRATA_API void strata_generate_options_init(strata_generate_options *o) {
    if (!o) return;
    st_sampler_params sp;
    st_sampler_params_default(&sp);
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->max_tokens = 128;
    o->temperature = sp.temp;
    o->top_k = sp.top_k;
    o->top_p = sp.top_p;
    o->min_p = sp.min_p;
    o->repeat_penalty = sp.repeat_penalty;
    o->repeat_last_n = sp.penalty_last_n;
    o->presence_penalty = sp.presence_penalty;
    o->frequency_penalty = sp.frequency_penalty;
    o->seed = sp.seed;
}

STRATA_API strata_status strata_context_new(strata_model *m, strata_context **out) {
    if (!m || !out) return st_api_fail(STRATA_ERR_INVALID, "strata_context_new: NULL argument");
    strata_context *c = calloc(1, sizeof *c);
    if (c) c->detok = st_detok_new(m->tok, 0);
    if (!c || !c->detok) {
        free(c);
        *out = NULL;
        return st_api_fail(STRATA_ERR_NO_MEMORY, "out of memory");
    }
    c->model = m;
    atomic_init(&c->cancel, 0);
    pthread_mutex_lock(&m->mu);
    c->next = m->contexts;
    m->contexts = c;
    pthread_mutex_unlock(&m->mu);
    *out = c;
    st_api_ok();
    return STRATA_OK;
}

STRATA_API void strata_context_free(strata_context *c) {
    if (!c) return;
    strata_model *m = c->model;
    pthread_mutex_lock(&m->mu);
    for (strata_context **p = &m->contexts; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    pthread_mutex_unlock(&m->mu);
    st_detok_free(c->detok);
    free(c->pending);
    free(c);
}

STRATA_API void strata_cancel(strata_context *c) {
    if (c) atomic_store(&c->cancel, 1);
}

/* The engine's events, under model->mu: each goes to the context whose request it is. */
static void on_event(void *user, const st_engine_event *ev) {
    strata_model *m = user;
    strata_context *c = m->contexts;
    while (c && c->id != ev->id) c = c->next;
    if (!c) return;
    if (ev->kind == ST_EV_TOKEN) {
        if (c->n_pending == c->cap_pending) {
            size_t cap = c->cap_pending ? c->cap_pending * 2 : 64;
            int32_t *p = realloc(c->pending, cap * sizeof *p);
            if (!p) {
                c->oom = 1; /* the token is lost: the request is cancelled and the call fails */
                st_engine_cancel(m->e, c->id);
                return;
            }
            c->pending = p;
            c->cap_pending = cap;
        }
        c->pending[c->n_pending++] = ev->token;
    } else if (ev->kind == ST_EV_DONE) {
        st_api_done *d = &c->done;
        d->finished = 1;
        d->finish = ev->finish;
        d->n_prompt = ev->n_prompt;
        d->n_reused = ev->n_reused;
        d->n_gen = ev->n_gen;
        d->prefill_ms = ev->prefill_ms;
        d->decode_ms = ev->decode_ms;
        snprintf(d->msg, sizeof d->msg, "%s", ev->msg);
    }
}

static void fill_request(const strata_generate_options *o, uint64_t id, const int32_t *prompt, size_t n,
                         st_gen_request *r) {
    memset(r, 0, sizeof *r);
    r->id = id;
    r->prompt = prompt;
    r->n_prompt = (int32_t)n;
    r->max_tokens = o->max_tokens;
    r->ignore_eos = o->ignore_eos;
    r->sp.temp = o->temperature;
    r->sp.top_k = o->top_k;
    r->sp.top_p = o->top_p;
    r->sp.min_p = o->min_p;
    r->sp.repeat_penalty = o->repeat_penalty;
    r->sp.penalty_last_n = o->repeat_last_n;
    r->sp.presence_penalty = o->presence_penalty;
    r->sp.frequency_penalty = o->frequency_penalty;
    r->sp.seed = o->seed;
}

/* Queues the request of c, under model->mu. */
static strata_status submit(strata_context *c, const int32_t *prompt, size_t n, const strata_generate_options *o) {
    strata_model *m = c->model;
    char err[256];
    if (c->id) return st_api_fail(STRATA_ERR_INVALID, "strata_generate: this context is already generating");
    if (m->failed[0])
        return st_api_fail(STRATA_ERR_DEVICE, "the device failed in an earlier step (%s): open the model again", m->failed);
    if (n > (size_t)INT32_MAX) return st_api_fail(STRATA_ERR_CONTEXT, "prompt of %zu tokens", n);
    st_gen_request r;
    fill_request(o, ++m->next_id, prompt, n, &r);
    c->id = r.id;
    if (st_engine_submit(m->e, &r, err, sizeof err)) {
        c->id = 0;
        return st_api_fail(STRATA_ERR_CONTEXT, "%s", err);
    }
    memset(&c->done, 0, sizeof c->done);
    c->n_pending = 0;
    c->oom = 0;
    c->cancel_sent = 0;
    atomic_store(&c->cancel, 0);
    return STRATA_OK;
}

/* One step of the engine for every context, under model->mu, after passing on the cancels. */
static void step(strata_model *m) {
    char err[512];
    for (strata_context *x = m->contexts; x; x = x->next)
        if (x->id && !x->cancel_sent && atomic_load(&x->cancel)) {
            st_engine_cancel(m->e, x->id);
            x->cancel_sent = 1;
        }
    if (st_engine_step(m->e, on_event, m, err, sizeof err)) /* every running request got its DONE */
        snprintf(m->failed, sizeof m->failed, "%.255s", err);
}

/* Passes tokens to the callback, without the lock; a nonzero answer cancels. */
static void deliver(strata_context *c, const strata_generate_options *o, const int32_t *tok, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const char *text = "";
        size_t len = 0;
        if (st_detok_push(c->detok, tok[i], &text, &len)) text = "", len = 0;
        if (o->on_token && o->on_token(o->user, tok[i], text, len)) atomic_store(&c->cancel, 1);
    }
}

/* Runs steps until c's request is done, delivering its tokens as they come. Called with the
 * lock held, returns with it held. */
static void run_until_done(strata_context *c, const strata_generate_options *o) {
    strata_model *m = c->model;
    for (;;) {
        if (c->n_pending || c->done.finished) {
            int32_t *tok = c->pending;
            size_t n = c->n_pending;
            int finished = c->done.finished;
            c->pending = NULL;
            c->n_pending = c->cap_pending = 0;
            pthread_mutex_unlock(&m->mu);
            deliver(c, o, tok, n);
            free(tok);
            pthread_mutex_lock(&m->mu);
            if (finished) return;
            continue;
        }
        if (!st_engine_busy(m->e)) { /* cannot happen: a request ends with its DONE event */
            c->done.finished = 1;
            c->done.finish = STRATA_FINISH_ERROR;
            snprintf(c->done.msg, sizeof c->done.msg, "the engine lost the request");
            return;
        }
        step(m);
    }
}

static strata_status read_generate_options(const strata_generate_options *in, strata_generate_options *o) {
    strata_generate_options_init(o);
    if (!in) return STRATA_OK;
    if (st_api_size_bad(in->size, V1_END(strata_generate_options, user)))
        return st_api_fail(STRATA_ERR_INVALID, "strata_generate_options.size is %u: call strata_generate_options_init",
                           in->size);
    memcpy(o, in, in->size < sizeof *o ? in->size : sizeof *o);
    if (o->max_tokens <= 0) return st_api_fail(STRATA_ERR_INVALID, "strata_generate_options.max_tokens must be > 0");
    return STRATA_OK;
}

static strata_status finish(strata_context *c, const strata_generate_options *o, strata_generate_result *res) {
    const char *text;
    size_t len;
    if (st_detok_flush(c->detok, &text, &len) == 0 && len && o->on_token) o->on_token(o->user, -1, text, len);
    const st_api_done *d = &c->done;
    if (res && res->size >= V1_END(strata_generate_result, decode_ms)) {
        strata_generate_result r = {.size = res->size < sizeof r ? res->size : (uint32_t)sizeof r,
                                    .finish = d->finish, .n_prompt = d->n_prompt, .n_reused = d->n_reused,
                                    .n_generated = d->n_gen, .prefill_ms = d->prefill_ms, .decode_ms = d->decode_ms};
        memcpy(res, &r, r.size);
    }
    if (c->oom) return st_api_fail(STRATA_ERR_NO_MEMORY, "out of memory queueing tokens");
    if (d->finish == ST_FINISH_ERROR) return st_api_fail(STRATA_ERR_DEVICE, "%s", d->msg);
    st_api_ok();
    return STRATA_OK;
}

STRATA_API strata_status strata_generate(strata_context *c, const int32_t *prompt, size_t n_prompt,
                                         const strata_generate_options *options, strata_generate_result *result) {
    strata_generate_options o;
    strata_status s;
    if (!c || (!prompt && n_prompt)) return st_api_fail(STRATA_ERR_INVALID, "strata_generate: NULL argument");
    if (result && st_api_size_bad(result->size, V1_END(strata_generate_result, decode_ms)))
        return st_api_fail(STRATA_ERR_INVALID, "strata_generate_result.size is %u: set it to sizeof(strata_generate_result)",
                           result->size);
    if ((s = read_generate_options(options, &o))) return s;
    strata_model *m = c->model;
    st_detok_reset(c->detok);
    pthread_mutex_lock(&m->mu);
    if ((s = submit(c, prompt, n_prompt, &o))) {
        pthread_mutex_unlock(&m->mu);
        return s;
    }
    run_until_done(c, &o);
    c->id = 0;
    pthread_mutex_unlock(&m->mu);
    return finish(c, &o, result);
}

STRATA_API strata_status strata_generate_text(strata_context *c, const char *prompt,
                                              const strata_generate_options *o, strata_generate_result *result) {
    if (!c || !prompt) return st_api_fail(STRATA_ERR_INVALID, "strata_generate_text: NULL argument");
    const st_tokenizer *tok = c->model->tok;
    int32_t *ids = NULL;
    int64_t n = st_tokenizer_encode_alloc(tok, prompt, strlen(prompt), true, true, &ids);
    if (n < 0) return st_api_fail(STRATA_ERR_NO_MEMORY, "tokenizing the prompt: out of memory, or it is too long");
    int32_t bos = st_tokenizer_bos(tok) >= 0 ? st_tokenizer_bos(tok) : 0;
    strata_status s = n ? strata_generate(c, ids, (size_t)n, o, result) : strata_generate(c, &bos, 1, o, result);
    free(ids);
    return s;
}
