/* SPDX-License-Identifier: Apache-2.0 */
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_experts.h"
#include "engine/engine_sampling.h"
#include "platform/crash.h"
#include "platform/platform.h"

typedef struct slot {
    int active;
    int cancel;
    uint64_t id;
    int32_t *cached; /* [n_ctx] tokens whose K/V the cache holds for this slot's sequence */
    int32_t n_cached;
    int32_t *prompt; /* owned copy */
    int32_t n_prompt;
    int32_t n_done;  /* prompt tokens in the cache (reused ones included) */
    int32_t n_reused;
    int32_t last_token;
    int32_t n_gen, max_tokens;
    int32_t ignore_eos;
    st_sampler *smp;
    uint64_t t_admit, t_first;
    int32_t row; /* logits row this step, -1 when none */
    int32_t pooling; /* ST_POOL_*: an embedding request */
    float *pool;     /* [n_embd] its pooled hidden state so far */
    st_expert_window xw; /* expert statistics since admission (hybrid models) */
    double dev_s[ST_ENGINE_MAX_STAGES]; /* split models: each stage's time in this request's steps */
} slot;

typedef struct queued {
    st_gen_request r; /* prompt owned */
    int cancel;
    st_sampler *smp;  /* made at submit: its grammar and biases are checked there */
} queued;

struct st_engine {
    st_model *m;
    st_engine_config cfg;
    int32_t n_ctx, n_vocab;
    int32_t *eog;
    int32_t n_eog;
    slot *slots;
    queued *queue;
    int32_t n_queue;
    /* batch scratch */
    int32_t *tok, *pos, *seq, *row_slot, *ids;
    int8_t *want;
    float *logits;
    float *hidden;    /* [n_budget][n_embd] final hidden states of a step with embedding requests */
    int32_t n_embd;
    double s_per_tok; /* forward seconds per token of recent prefill steps (0 = not measured yet) */
    int traced;       /* the engine turned the model's expert trace on (per-request Belady) */
    st_engine_stats st;
    double busy_last[ST_ENGINE_MAX_STAGES]; /* each stage's busy seconds at the last step's end */
};

static void put_err(char *err, size_t n, const char *msg) {
    if (err && n) snprintf(err, n, "%s", msg);
}

st_engine *st_engine_new(st_model *m, const st_engine_config *cfg, const int32_t *eog, int32_t n_eog, char *err,
                         size_t errlen) {
    const st_model_params *mp = st_model_params_of(m);
    const st_model_desc *d = st_model_desc_of(m);
    if (cfg->n_slots < 1 || cfg->n_slots > mp->n_seq) {
        if (err) snprintf(err, errlen, "engine: %d slots, the model holds %d sequences", cfg->n_slots, mp->n_seq);
        return NULL;
    }
    if (mp->n_out_max < cfg->n_slots) {
        if (err) snprintf(err, errlen, "engine: the model computes %d logit rows per forward, %d slots need %d",
                          mp->n_out_max, cfg->n_slots, cfg->n_slots);
        return NULL;
    }
    st_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->m = m;
    e->cfg = *cfg;
    if (e->cfg.n_budget <= 0 || e->cfg.n_budget > mp->n_batch) e->cfg.n_budget = mp->n_batch;
    if (e->cfg.n_budget < cfg->n_slots) e->cfg.n_budget = cfg->n_slots;
    if (e->cfg.queue_max <= 0) e->cfg.queue_max = 64;
    e->n_ctx = mp->n_ctx;
    e->n_vocab = d->hp.n_vocab;
    e->n_embd = (int32_t)d->hp.n_embd;
    e->n_eog = n_eog;
    e->eog = calloc((size_t)(n_eog > 0 ? n_eog : 1), sizeof(int32_t));
    if (n_eog > 0 && e->eog) memcpy(e->eog, eog, sizeof(int32_t) * (size_t)n_eog);
    e->slots = calloc((size_t)cfg->n_slots, sizeof(slot));
    e->queue = calloc((size_t)e->cfg.queue_max, sizeof(queued));
    size_t nb = (size_t)e->cfg.n_budget;
    e->tok = calloc(nb, sizeof(int32_t));
    e->pos = calloc(nb, sizeof(int32_t));
    e->seq = calloc(nb, sizeof(int32_t));
    e->row_slot = calloc(nb, sizeof(int32_t));
    e->ids = calloc(nb, sizeof(int32_t));
    e->want = calloc(nb, 1);
    int ok = e->eog && e->slots && e->queue && e->tok && e->pos && e->seq && e->row_slot && e->ids && e->want;
    for (int32_t i = 0; ok && i < cfg->n_slots; i++) {
        e->slots[i].cached = calloc((size_t)e->n_ctx, sizeof(int32_t));
        ok = e->slots[i].cached != NULL && st_expert_window_init(&e->slots[i].xw, m) == 0;
    }
    if (!ok) {
        put_err(err, errlen, "engine: out of host memory");
        st_engine_free(e);
        return NULL;
    }
    /* a hybrid model's routing trace, kept from the oldest running request's admission on, gives
     * each request its Belady comparison */
    if (st_model_expert_cache(m)) {
        st_model_expert_trace(m, 1);
        st_model_expert_trace_trim(m, st_model_expert_trace_pos(m));
        e->traced = 1;
    }
    return e;
}

static void slot_release(slot *s) {
    free(s->prompt);
    s->prompt = NULL;
    free(s->pool);
    s->pool = NULL;
    s->pooling = ST_POOL_NONE;
    st_sampler_free(s->smp);
    s->smp = NULL;
    s->active = 0;
    s->cancel = 0;
}

void st_engine_free(st_engine *e) {
    if (!e) return;
    for (int32_t i = 0; e->slots && i < e->cfg.n_slots; i++) {
        slot_release(&e->slots[i]);
        free(e->slots[i].cached);
        st_expert_window_free(&e->slots[i].xw);
    }
    if (e->traced) st_model_expert_trace(e->m, 0);
    for (int32_t i = 0; i < e->n_queue; i++) {
        free((void *)e->queue[i].r.prompt);
        st_sampler_free(e->queue[i].smp);
    }
    free(e->slots);
    free(e->queue);
    free(e->eog);
    free(e->tok);
    free(e->pos);
    free(e->seq);
    free(e->row_slot);
    free(e->ids);
    free(e->want);
    free(e->logits);
    free(e->hidden);
    free(e);
}

int st_engine_submit(st_engine *e, const st_gen_request *r, char *err, size_t errlen) {
    if (r->n_prompt < 1) {
        put_err(err, errlen, "invalid_request: the prompt is empty");
        return -1;
    }
    if (r->n_prompt >= e->n_ctx) {
        if (err)
            snprintf(err, errlen, "context_length_exceeded: the prompt has %d tokens, the context holds %d",
                     r->n_prompt, e->n_ctx);
        return -1;
    }
    /* a token the model has no embedding row for would fail the forward on the device and end
     * the engine for everyone: one request's input is refused here instead */
    for (int32_t i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= e->n_vocab) {
            if (err)
                snprintf(err, errlen, "invalid_token: prompt token %d (at %d) is outside the model's vocabulary (%d tokens)",
                         r->prompt[i], i, e->n_vocab);
            return -1;
        }
    if (e->n_queue >= e->cfg.queue_max) {
        if (err) snprintf(err, errlen, "queue full: %d requests are waiting", e->n_queue);
        return -1;
    }
    queued *q = &e->queue[e->n_queue];
    q->r = *r;
    q->smp = st_engine_sampler_for(r, e->n_vocab, e->cfg.gvocab, err, errlen);
    if (!q->smp) return -1;
    int32_t *p = malloc(sizeof(int32_t) * (size_t)r->n_prompt);
    if (!p) {
        st_sampler_free(q->smp);
        put_err(err, errlen, "engine: out of host memory");
        return -1;
    }
    memcpy(p, r->prompt, sizeof(int32_t) * (size_t)r->n_prompt);
    q->r.prompt = p;
    q->cancel = 0;
    if (q->r.max_tokens <= 0) q->r.max_tokens = 1;
    e->n_queue++;
    return 0;
}

void st_engine_cancel(st_engine *e, uint64_t id) {
    for (int32_t i = 0; i < e->n_queue; i++)
        if (e->queue[i].r.id == id) e->queue[i].cancel = 1;
    for (int32_t i = 0; i < e->cfg.n_slots; i++)
        if (e->slots[i].active && e->slots[i].id == id) e->slots[i].cancel = 1;
}

int st_engine_busy(const st_engine *e) {
    if (e->n_queue) return 1;
    for (int32_t i = 0; i < e->cfg.n_slots; i++)
        if (e->slots[i].active) return 1;
    return 0;
}

/* A split model: each stage's time in the step just run, charged to every active request. */
static void charge_stages(st_engine *e) {
    st_model_stage_info si;
    if (st_model_n_stages(e->m) < 2) return;
    for (int32_t k = 0; k < ST_ENGINE_MAX_STAGES && st_model_stage_get(e->m, k, &si) == 0; k++) {
        const double d = si.busy_s - e->busy_last[k];
        e->busy_last[k] = si.busy_s;
        for (int32_t i = 0; i < e->cfg.n_slots; i++)
            if (e->slots[i].active) e->slots[i].dev_s[k] += d;
    }
}

/* "sim0 12.1 ms, sim1 4.0 ms" of a request, "" when the model is on one device. */
static void stage_times(const st_engine *e, const slot *s, char *buf, size_t len) {
    st_model_stage_info si;
    size_t at = 0;
    buf[0] = 0;
    for (int32_t k = 0; st_model_n_stages(e->m) > 1 && k < ST_ENGINE_MAX_STAGES && at < len &&
                        st_model_stage_get(e->m, k, &si) == 0; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s %.1f ms", k ? ", " : "", si.device, s->dev_s[k] * 1e3);
}

static void emit_done(st_engine *e, slot *s, int finish, const char *msg, st_engine_emit_fn emit, void *user) {
    st_engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = ST_EV_DONE;
    ev.id = s->id;
    ev.finish = finish;
    ev.n_prompt = s->n_prompt;
    ev.n_reused = s->n_reused;
    ev.n_gen = s->n_gen;
    uint64_t now = st_now_ns();
    uint64_t first = s->t_first ? s->t_first : now;
    ev.prefill_ms = (double)(first - s->t_admit) / 1e6;
    ev.decode_ms = (double)(now - first) / 1e6;
    if (msg) snprintf(ev.msg, sizeof ev.msg, "%s", msg);
    if (s->pooling && finish == ST_FINISH_STOP) {
        ev.n_embd = e->n_embd;
        ev.embd = s->pool;
    }
    st_expert_window_close(&s->xw, e->m, &ev.experts);
    stage_times(e, s, ev.devices, sizeof ev.devices);
    emit(user, &ev);
    e->st.requests_done++;
    slot_release(s);
}

/* The free slot whose cache shares the longest prefix with the prompt (ties: lowest index). */
static int32_t pick_slot(st_engine *e, const int32_t *prompt, int32_t n, int32_t *lcp_out) {
    int32_t best = -1, best_lcp = -1;
    for (int32_t i = 0; i < e->cfg.n_slots; i++) {
        slot *s = &e->slots[i];
        if (s->active) continue;
        int32_t l = 0;
        while (l < s->n_cached && l < n && s->cached[l] == prompt[l]) l++;
        if (l > best_lcp) {
            best = i;
            best_lcp = l;
        }
    }
    *lcp_out = best_lcp;
    return best;
}

static void admit(st_engine *e, st_engine_emit_fn emit, void *user) {
    int32_t w = 0;
    for (int32_t i = 0; i < e->n_queue; i++) {
        queued *q = &e->queue[i];
        if (q->cancel) {
            slot tmp;
            memset(&tmp, 0, sizeof tmp);
            tmp.id = q->r.id;
            tmp.n_prompt = q->r.n_prompt;
            tmp.prompt = (int32_t *)q->r.prompt;
            tmp.smp = q->smp;
            tmp.t_admit = st_now_ns();
            emit_done(e, &tmp, ST_FINISH_CANCEL, NULL, emit, user);
            continue;
        }
        int32_t lcp;
        int32_t si = pick_slot(e, q->r.prompt, q->r.n_prompt, &lcp);
        if (si < 0) {
            e->queue[w++] = *q;
            continue;
        }
        slot *s = &e->slots[si];
        int32_t reuse = lcp < q->r.n_prompt - 1 ? lcp : q->r.n_prompt - 1;
        if (reuse < 0 || q->r.pooling == ST_POOL_MEAN || q->r.pooling == ST_POOL_CLS) reuse = 0; /* pooled rows are computed */
        float *pool = q->r.pooling ? calloc((size_t)e->n_embd, sizeof *pool) : NULL;
        if (q->r.pooling && !pool) {
            e->queue[w++] = *q; /* no memory now: it waits */
            continue;
        }
        st_model_seq_truncate(e->m, si, reuse);
        s->n_cached = reuse;
        s->active = 1;
        s->cancel = 0;
        s->id = q->r.id;
        s->prompt = (int32_t *)q->r.prompt;
        s->n_prompt = q->r.n_prompt;
        s->n_done = reuse;
        s->n_reused = reuse;
        s->n_gen = 0;
        s->max_tokens = q->r.max_tokens;
        s->ignore_eos = q->r.ignore_eos;
        s->smp = q->smp; /* made at submit (grammar, biases) */
        s->pooling = q->r.pooling;
        s->pool = pool;
        s->t_admit = st_now_ns();
        s->t_first = 0;
        memset(s->dev_s, 0, sizeof s->dev_s);
        st_expert_window_open(&s->xw, e->m);
        e->st.tokens_reused += (uint64_t)reuse;
    }
    e->n_queue = w;
}

static int is_eog(const st_engine *e, int32_t t) {
    for (int32_t i = 0; i < e->n_eog; i++)
        if (e->eog[i] == t) return 1;
    return 0;
}

/* Drops the expert trace before the oldest running request's admission (all of it when none runs). */
static void trim_trace(st_engine *e) {
    if (!e->traced) return;
    uint64_t keep = st_model_expert_trace_pos(e->m);
    for (int32_t i = 0; i < e->cfg.n_slots; i++)
        if (e->slots[i].active && e->slots[i].xw.open && e->slots[i].xw.pos < keep) keep = e->slots[i].xw.pos;
    st_model_expert_trace_trim(e->m, keep);
}

/* Embedding requests in this step's batch of n rows: their rows' hidden states pooled; those
 * whose prompt is complete end with their vector. */
static int pool_step(st_engine *e, int32_t n, st_engine_emit_fn emit, void *user, char *err, size_t errlen) {
    int any = 0;
    for (int32_t j = 0; j < n && !any; j++) any = e->slots[e->seq[j]].pooling != ST_POOL_NONE;
    if (!any) return 0;
    const int64_t E = e->n_embd;
    if (!e->hidden && !(e->hidden = malloc(sizeof(float) * (size_t)E * (size_t)e->cfg.n_budget))) {
        snprintf(err, errlen, "engine: out of host memory for hidden states");
        return -1;
    }
    if (st_model_hidden(e->m, n, e->hidden, err, errlen)) return -1;
    for (int32_t j = 0; j < n; j++) { /* row j: token at position pos[j] of the prompt */
        slot *s = &e->slots[e->seq[j]];
        const float *h = e->hidden + (size_t)j * (size_t)E; /* [E] */
        int take = s->pooling == ST_POOL_MEAN || (s->pooling == ST_POOL_CLS && e->pos[j] == 0) ||
                   (s->pooling == ST_POOL_LAST && e->pos[j] == s->n_prompt - 1);
        for (int64_t i = 0; take && i < E; i++) s->pool[i] += h[i];
    }
    for (int32_t i = 0; i < e->cfg.n_slots; i++) {
        slot *s = &e->slots[i];
        if (!s->active || !s->pooling || s->n_done < s->n_prompt) continue;
        if (s->pooling == ST_POOL_MEAN)
            for (int64_t k = 0; k < E; k++) s->pool[k] /= (float)s->n_prompt; /* pool = mean of the rows */
        s->t_first = st_now_ns();
        emit_done(e, s, ST_FINISH_STOP, NULL, emit, user);
    }
    return 0;
}

int st_engine_step(st_engine *e, st_engine_emit_fn emit, void *user, char *err, size_t errlen) {
    /* cancellations of running requests end before the forward */
    for (int32_t i = 0; i < e->cfg.n_slots; i++)
        if (e->slots[i].active && e->slots[i].cancel) emit_done(e, &e->slots[i], ST_FINISH_CANCEL, NULL, emit, user);
    trim_trace(e);
    admit(e, emit, user);
    int32_t n = 0, n_rows = 0, n_slots_in = 0;
    /* decode tokens first */
    for (int32_t i = 0; i < e->cfg.n_slots; i++) {
        slot *s = &e->slots[i];
        s->row = -1;
        if (!s->active || s->n_done < s->n_prompt) continue;
        if (s->n_cached >= e->n_ctx) {
            emit_done(e, s, ST_FINISH_LENGTH, NULL, emit, user);
            continue;
        }
        e->tok[n] = s->last_token;
        e->pos[n] = s->n_cached;
        e->seq[n] = i;
        e->want[n] = 1;
        s->row = n_rows;
        e->row_slot[n_rows++] = i;
        n++;
        n_slots_in++;
    }
    int32_t n_dec = n;
    /* then prefill chunks up to the budget (smaller when steps would get too long) */
    int32_t budget = e->cfg.n_budget;
    if (e->cfg.max_step_s > 0) {
        /* unmeasured: a 16-token probe; then what fits, at least 16 prompt tokens a step */
        double fit = e->s_per_tok > 0 ? e->cfg.max_step_s / e->s_per_tok : (double)(n + 16);
        if (fit < (double)budget) budget = fit < (double)(n + 16) ? n + 16 : (int32_t)fit;
        if (budget > e->cfg.n_budget) budget = e->cfg.n_budget;
    }
    for (int32_t i = 0; i < e->cfg.n_slots && n < budget; i++) {
        slot *s = &e->slots[i];
        if (!s->active || s->n_done >= s->n_prompt) continue;
        int32_t chunk = s->n_prompt - s->n_done;
        if (chunk > budget - n) chunk = budget - n;
        for (int32_t j = 0; j < chunk; j++) {
            e->tok[n] = s->prompt[s->n_done + j];
            e->pos[n] = s->n_cached + j;
            e->seq[n] = i;
            e->want[n] = 0;
            n++;
        }
        if (s->n_done + chunk == s->n_prompt && !s->pooling) { /* an embedding samples nothing */
            e->want[n - 1] = 1;
            s->row = n_rows;
            e->row_slot[n_rows++] = i;
        }
        n_slots_in++;
    }
    if (n == 0) return 0;
    st_batch b = {.n = n, .token = e->tok, .pos = e->pos, .seq = e->seq, .logits = e->want};
    char ferr[256];
    int decode_only = n == n_rows;
    /* what a crash or stall report will say this process was doing */
    char slots_txt[96] = "";
    for (int32_t i = 0, l = 0; i < e->cfg.n_slots && l < (int32_t)sizeof slots_txt - 24; i++)
        if (e->slots[i].active)
            l += snprintf(slots_txt + l, sizeof slots_txt - (size_t)l, "%s%d (request %llu)", l ? ", " : "", i,
                          (unsigned long long)e->slots[i].id);
    st_crash_set_stage("step %llu: forward of %d tokens (%d decode, %d prefill) on %s; slots %s",
                       (unsigned long long)e->st.steps + 1, n, n_dec, n - n_dec,
                       e->cfg.where ? e->cfg.where : "the device", slots_txt);
    uint64_t t0 = st_now_ns();
    if (st_model_forward(e->m, &b, ferr, sizeof ferr) != 0) {
        put_err(err, errlen, ferr);
        for (int32_t i = 0; i < e->cfg.n_slots; i++) {
            slot *s = &e->slots[i];
            if (!s->active) continue;
            st_model_seq_truncate(e->m, i, 0);
            s->n_cached = 0;
            emit_done(e, s, ST_FINISH_ERROR, ferr, emit, user);
        }
        return -1;
    }
    uint64_t t1 = st_now_ns();
    e->st.forward_s += (double)(t1 - t0) / 1e9;
    if (n >= 16) { /* a prefill-sized step: how long a token takes (moving average) */
        double spt = (double)(t1 - t0) / 1e9 / n;
        e->s_per_tok = e->s_per_tok > 0 ? 0.7 * e->s_per_tok + 0.3 * spt : spt;
    }
    e->st.steps++;
    if ((uint64_t)n_slots_in > e->st.max_slots_in_step) e->st.max_slots_in_step = (uint64_t)n_slots_in;
    int32_t n_active = 0; /* requests whose lifetime this step is in */
    for (int32_t i = 0; i < e->cfg.n_slots; i++) n_active += e->slots[i].active;
    for (int32_t i = 0; i < e->cfg.n_slots; i++)
        if (e->slots[i].active) st_expert_window_step(&e->slots[i].xw, n_active);
    /* the cache now holds every token of the batch */
    for (int32_t j = 0; j < n; j++) {
        slot *s = &e->slots[e->seq[j]];
        if (s->n_cached < e->n_ctx) s->cached[s->n_cached] = e->tok[j];
        s->n_cached++;
        if (s->n_done < s->n_prompt) {
            s->n_done++;
            e->st.tokens_prefill++;
        } else {
            e->st.tokens_decode++;
        }
    }
    if (pool_step(e, n, emit, user, ferr, sizeof ferr)) goto fail;
    if (n_rows == 0) return 0;
    /* sample every row: device argmax when every row is greedy, else host sampling */
    int all_greedy = 1;
    for (int32_t r = 0; r < n_rows; r++) all_greedy &= st_sampler_is_greedy(e->slots[e->row_slot[r]].smp);
    if (all_greedy) {
        if (st_model_argmax(e->m, e->ids, ferr, sizeof ferr) != 0) goto fail;
    } else {
        if (!e->logits) e->logits = malloc(sizeof(float) * (size_t)e->n_vocab * (size_t)e->cfg.n_budget);
        if (!e->logits) {
            snprintf(ferr, sizeof ferr, "engine: out of host memory for logits");
            goto fail;
        }
        if (st_model_logits(e->m, e->logits, ferr, sizeof ferr) != 0) goto fail;
        for (int32_t r = 0; r < n_rows; r++)
            e->ids[r] = st_sampler_sample(e->slots[e->row_slot[r]].smp, e->logits + (size_t)r * (size_t)e->n_vocab);
    }
    uint64_t t2 = st_now_ns();
    e->st.sample_s += (double)(t2 - t1) / 1e9;
    charge_stages(e);
    if (decode_only) {
        int k = n_rows < ST_ENGINE_HIST - 1 ? n_rows : ST_ENGINE_HIST - 1;
        e->st.decode_steps[k]++;
        e->st.decode_step_s[k] += (double)(t2 - t0) / 1e9;
    }
    for (int32_t r = 0; r < n_rows; r++) {
        slot *s = &e->slots[e->row_slot[r]];
        int32_t t = e->ids[r];
        if (!s->t_first) s->t_first = st_now_ns();
        if (t < 0) { /* a constraint allowed nothing (a grammar past its bounds, or a dead end) */
            char why[200];
            snprintf(why, sizeof why, "grammar: %s", st_sampler_error(s->smp));
            emit_done(e, s, ST_FINISH_ERROR, why, emit, user);
            continue;
        }
        st_sampler_accept(s->smp, t);
        if (!s->ignore_eos && is_eog(e, t)) {
            emit_done(e, s, ST_FINISH_STOP, NULL, emit, user);
            continue;
        }
        st_engine_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = ST_EV_TOKEN;
        ev.id = s->id;
        ev.token = t;
        st_sampler_last_logprobs(s->smp, &ev.lp);
        emit(user, &ev);
        s->n_gen++;
        s->last_token = t;
        if (s->n_gen >= s->max_tokens) emit_done(e, s, ST_FINISH_LENGTH, NULL, emit, user);
    }
    return 0;
fail:
    put_err(err, errlen, ferr);
    for (int32_t i = 0; i < e->cfg.n_slots; i++)
        if (e->slots[i].active) emit_done(e, &e->slots[i], ST_FINISH_ERROR, ferr, emit, user);
    return -1;
}

void st_engine_get_stats(const st_engine *e, st_engine_stats *out) {
    *out = e->st;
    out->queue_len = e->n_queue;
    out->slots_busy = 0;
    for (int32_t i = 0; i < e->cfg.n_slots; i++) out->slots_busy += e->slots[i].active;
}

int32_t st_engine_get_slots(const st_engine *e, st_engine_slot *out, int32_t max) {
    for (int32_t i = 0; i < e->cfg.n_slots && i < max; i++) {
        const slot *s = &e->slots[i];
        st_engine_slot o = {s->active ? s->id : 0, s->active, s->n_prompt, s->n_done, s->n_gen, s->max_tokens, s->n_cached};
        out[i] = o;
    }
    return e->cfg.n_slots;
}
