/* SPDX-License-Identifier: Apache-2.0 */
/* The sampler chain: penalties -> top-k -> top-p -> min-p -> temperature -> draw. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sample.h"

typedef struct cand {
    int32_t id;
    float logit;
} cand;

struct st_sampler {
    st_sampler_params p;
    int32_t n_vocab;
    st_rng rng;
    /* history window (ring when penalty_last_n > 0, growing when -1) */
    int32_t *hist;
    int64_t hist_cap, hist_len, hist_head;
    int32_t *counts; /* [n_vocab] occurrences inside the window */
    int32_t n_distinct;
    /* scratch */
    cand *c;          /* [n_vocab] */
    int32_t *idx_of;  /* [n_vocab] candidate index or -1 */
    /* constraint and biases */
    st_sampler_constraint con;
    int has_con;
    uint8_t *allowed;  /* [n_vocab] when has_con */
    int32_t *bias_id;
    float *bias_val;
    int32_t n_bias;
    uint64_t masked, scanned;
    int32_t lp_top;           /* -1 off */
    st_token_logprobs last;
};

void st_sampler_params_default(st_sampler_params *p) {
    memset(p, 0, sizeof *p);
    p->temp = 0.8f;
    p->top_k = 40;
    p->top_p = 0.95f;
    p->min_p = 0.05f;
    p->repeat_penalty = 1.0f;
    p->penalty_last_n = 64;
    p->presence_penalty = 0.0f;
    p->frequency_penalty = 0.0f;
    p->seed = 0;
}

static int penalties_active(const st_sampler_params *p) {
    return p->penalty_last_n != 0 &&
           (p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f);
}

st_sampler *st_sampler_new(const st_sampler_params *p, int32_t n_vocab) {
    if (!p || n_vocab <= 0) return NULL;
    st_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->p = *p;
    s->n_vocab = n_vocab;
    s->hist_cap = p->penalty_last_n > 0 ? p->penalty_last_n : 256;
    s->hist = malloc((size_t)s->hist_cap * sizeof *s->hist);
    s->counts = calloc((size_t)n_vocab, sizeof *s->counts);
    s->c = malloc((size_t)n_vocab * sizeof *s->c);
    s->idx_of = malloc((size_t)n_vocab * sizeof *s->idx_of);
    if (!s->hist || !s->counts || !s->c || !s->idx_of) {
        st_sampler_free(s);
        return NULL;
    }
    for (int32_t i = 0; i < n_vocab; i++) s->idx_of[i] = -1;
    s->lp_top = -1;
    st_rng_seed(&s->rng, p->seed);
    return s;
}

void st_sampler_free(st_sampler *s) {
    if (!s) return;
    if (s->has_con && s->con.free_user) s->con.free_user(s->con.user);
    free(s->allowed);
    free(s->bias_id);
    free(s->bias_val);
    free(s->hist);
    free(s->counts);
    free(s->c);
    free(s->idx_of);
    free(s);
}

void st_sampler_reset(st_sampler *s) {
    memset(s->counts, 0, (size_t)s->n_vocab * sizeof *s->counts);
    s->hist_len = s->hist_head = 0;
    s->n_distinct = 0;
    st_rng_seed(&s->rng, s->p.seed);
}

void st_sampler_accept(st_sampler *s, int32_t tok) {
    if (tok < 0 || tok >= s->n_vocab || s->p.penalty_last_n == 0) return;
    if (s->p.penalty_last_n > 0) {
        if (s->hist_len == s->hist_cap) { /* drop the oldest */
            int32_t old = s->hist[s->hist_head];
            if (--s->counts[old] == 0) s->n_distinct--;
            s->hist[s->hist_head] = tok;
            s->hist_head = (s->hist_head + 1) % s->hist_cap;
        } else {
            s->hist[(s->hist_head + s->hist_len) % s->hist_cap] = tok;
            s->hist_len++;
        }
    } else {
        if (s->hist_len == s->hist_cap) {
            int32_t *n = realloc(s->hist, (size_t)s->hist_cap * 2 * sizeof *n);
            if (!n) return; /* history stays as it was: penalties see fewer tokens */
            s->hist = n;
            s->hist_cap *= 2;
        }
        s->hist[s->hist_len++] = tok;
    }
    if (s->counts[tok]++ == 0) s->n_distinct++;
}

void st_sampler_set_constraint(st_sampler *s, const st_sampler_constraint *c) {
    if (s->has_con && s->con.free_user) s->con.free_user(s->con.user);
    s->has_con = c != NULL;
    if (c) s->con = *c;
}

int st_sampler_set_bias(st_sampler *s, const int32_t *ids, const float *bias, int32_t n) {
    free(s->bias_id);
    free(s->bias_val);
    s->bias_id = n > 0 ? malloc(sizeof *ids * (size_t)n) : NULL;
    s->bias_val = n > 0 ? malloc(sizeof *bias * (size_t)n) : NULL;
    s->n_bias = 0;
    if (n > 0 && (!s->bias_id || !s->bias_val)) return -1;
    for (int32_t i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < s->n_vocab) {
            s->bias_id[s->n_bias] = ids[i];
            s->bias_val[s->n_bias++] = bias[i];
        }
    return 0;
}

uint64_t st_sampler_masked_steps(const st_sampler *s) { return s->masked; }

const char *st_sampler_error(const st_sampler *s) {
    const char *e = s->has_con && s->con.error ? s->con.error(s->con.user) : NULL;
    return e ? e : "no token is allowed";
}

void st_sampler_set_logprobs(st_sampler *s, int32_t n_top) {
    s->lp_top = n_top < 0 ? -1 : n_top > ST_LOGPROBS_MAX ? ST_LOGPROBS_MAX : n_top;
}

void st_sampler_last_logprobs(const st_sampler *s, st_token_logprobs *out) { *out = s->last; }

static float biased(const st_sampler *s, const float *logits, int32_t i) {
    float l = logits[i];
    for (int32_t k = 0; k < s->n_bias; k++)
        if (s->bias_id[k] == i) l += s->bias_val[k];
    return l;
}

/* log-softmax of the biased logits: the chosen token's value and the n best. */
static void record_logprobs(st_sampler *s, const float *logits, int32_t t) {
    st_token_logprobs *r = &s->last;
    memset(r, 0, sizeof *r);
    if (s->lp_top < 0 || t < 0) return;
    double mx = -INFINITY, sum = 0.0;
    for (int32_t i = 0; i < s->n_vocab; i++) {
        float l = s->n_bias ? biased(s, logits, i) : logits[i];
        if (l > mx) mx = l;
    }
    for (int32_t i = 0; i < s->n_vocab; i++) sum += exp((double)(s->n_bias ? biased(s, logits, i) : logits[i]) - mx);
    double lse = mx + log(sum);
    r->valid = 1;
    r->logprob = (float)((s->n_bias ? biased(s, logits, t) : logits[t]) - lse);
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_vocab && s->lp_top > 0; i++) { /* insertion into the n best */
        float l = logits[i];
        if (n == s->lp_top && l <= r->top_lp[n - 1]) continue;
        int32_t j = n < s->lp_top ? n++ : n - 1;
        while (j > 0 && r->top_lp[j - 1] < l) {
            r->top_lp[j] = r->top_lp[j - 1];
            r->top_id[j] = r->top_id[j - 1];
            j--;
        }
        r->top_lp[j] = l;
        r->top_id[j] = i;
    }
    for (int32_t k = 0; k < n; k++) r->top_lp[k] = (float)((s->n_bias ? biased(s, logits, r->top_id[k]) : r->top_lp[k]) - lse);
    r->n_top = n;
}
uint64_t st_sampler_scanned_steps(const st_sampler *s) { return s->scanned; }

int st_sampler_is_greedy(const st_sampler *s) {
    if (s->has_con || s->n_bias || s->lp_top >= 0) return 0;
    return s->p.temp <= 0.0f && (!penalties_active(&s->p) || s->n_distinct == 0);
}

int32_t st_sampler_candidates_needed(const st_sampler *s) {
    const st_sampler_params *p = &s->p;
    if (s->has_con || s->n_bias) return 0;
    int32_t pen = 0;
    if (penalties_active(p) && s->n_distinct > 0) {
        /* only penalties that never raise a logit keep the top-N set exact */
        if (p->repeat_penalty < 1.0f || p->presence_penalty < 0.0f || p->frequency_penalty < 0.0f)
            return 0;
        pen = s->n_distinct;
    }
    int32_t base;
    if (p->temp <= 0.0f) base = 1;
    else if (p->top_k > 0) base = p->top_k;
    else return 0;
    int64_t n = (int64_t)base + pen;
    return n >= s->n_vocab ? 0 : (int32_t)n;
}

/* a ranks before b: larger logit, then smaller id */
static int better(const cand *a, const cand *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cmp_cand(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    if (better(a, b)) return -1;
    if (better(b, a)) return 1;
    return 0;
}

static void apply_penalties(st_sampler *s, cand *c, int32_t n) {
    const st_sampler_params *p = &s->p;
    if (!penalties_active(p) || s->n_distinct == 0) return;
    for (int32_t i = 0; i < n; i++) s->idx_of[c[i].id] = i;
    int64_t len = s->hist_len;
    for (int64_t h = 0; h < len; h++) {
        int32_t tok = p->penalty_last_n > 0 ? s->hist[(s->hist_head + h) % s->hist_cap] : s->hist[h];
        int32_t i = s->idx_of[tok];
        if (i < 0) continue;
        s->idx_of[tok] = -1; /* each distinct token once */
        float l = c[i].logit;
        l = l > 0.0f ? l / p->repeat_penalty : l * p->repeat_penalty;
        l -= (float)s->counts[tok] * p->frequency_penalty + p->presence_penalty;
        c[i].logit = l;
    }
    for (int32_t i = 0; i < n; i++) s->idx_of[c[i].id] = -1;
}

/* heap of the k best (worst on top) */
static void sift_down(cand *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && better(&h[w], &h[l])) w = l;
        if (r < n && better(&h[w], &h[r])) w = r;
        if (w == i) return;
        cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* Keeps the k best of c[0..n) in c[0..k), sorted best first. */
static int32_t keep_top_k(cand *c, int32_t n, int32_t k) {
    if (k <= 0 || k >= n) {
        qsort(c, (size_t)n, sizeof *c, cmp_cand);
        return n;
    }
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_down(c, k, i);
    for (int32_t i = k; i < n; i++) {
        if (better(&c[i], &c[0])) {
            c[0] = c[i];
            sift_down(c, k, 0);
        }
    }
    qsort(c, (size_t)k, sizeof *c, cmp_cand);
    return k;
}

static int32_t run_chain(st_sampler *s, cand *c, int32_t n) {
    const st_sampler_params *p = &s->p;
    if (n <= 0) return -1;
    apply_penalties(s, c, n);
    if (p->temp <= 0.0f) {
        int32_t b = 0;
        for (int32_t i = 1; i < n; i++)
            if (better(&c[i], &c[b])) b = i;
        return c[b].id;
    }
    n = keep_top_k(c, n, p->top_k); /* sorted best first from here on */
    if (p->top_p < 1.0f && n > 1) {
        double mx = c[0].logit, sum = 0.0;
        for (int32_t i = 0; i < n; i++) sum += exp((double)c[i].logit - mx);
        double cum = 0.0;
        int32_t keep = n;
        for (int32_t i = 0; i < n; i++) {
            cum += exp((double)c[i].logit - mx) / sum;
            if (cum >= (double)p->top_p) {
                keep = i + 1;
                break;
            }
        }
        n = keep;
    }
    if (p->min_p > 0.0f && n > 1) {
        double thr = (double)c[0].logit + log((double)p->min_p);
        int32_t keep = 1;
        while (keep < n && (double)c[keep].logit >= thr) keep++;
        n = keep;
    }
    /* temperature and the draw */
    double mx = c[0].logit / (double)p->temp, sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += exp((double)c[i].logit / p->temp - mx);
    double r = st_rng_uniform(&s->rng) * sum, cum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        cum += exp((double)c[i].logit / p->temp - mx);
        if (r < cum) return c[i].id;
    }
    return c[n - 1].id;
}

static void load(st_sampler *s, const float *logits) {
    for (int32_t i = 0; i < s->n_vocab; i++) {
        s->c[i].id = i;
        s->c[i].logit = logits[i];
    }
    for (int32_t k = 0; k < s->n_bias; k++) s->c[s->bias_id[k]].logit += s->bias_val[k];
}

/* The drawn token was refused. With top-k on, the chain only ever sees the k best allowed
 * tokens: look for them among the best 4k candidates one check each, and draw
 * from them (the same set the full mask would give); only when fewer than k are there is the
 * whole vocabulary masked. */
#define ST_SAMPLER_SCAN 1024
static int32_t sample_scanned(st_sampler *s, const float *logits, int *done) {
    *done = 0;
    int32_t k = s->p.temp <= 0.0f ? 1 : s->p.top_k;
    if (k <= 0 || k > ST_SAMPLER_SCAN / 4 || s->n_vocab <= 4 * k) return -1;
    load(s, logits);
    apply_penalties(s, s->c, s->n_vocab);
    int32_t n = keep_top_k(s->c, s->n_vocab, 4 * k), m = 0; /* few allowed among 4k: mask instead */
    for (int32_t i = 0; i < n && m < k; i++)
        if (s->con.token_ok(s->con.user, s->c[i].id)) s->c[m++] = s->c[i];
    if (m < k) return -1;
    *done = 1;
    s->scanned++;
    /* penalties are applied already: run the rest of the chain without them */
    st_sampler_params keep = s->p;
    s->p.penalty_last_n = 0;
    int32_t t = run_chain(s, s->c, m);
    s->p = keep;
    return t;
}

/* The drawn token was refused: draw again among the allowed ones only. */
static int32_t sample_masked(st_sampler *s, const float *logits) {
    int done;
    int32_t t = sample_scanned(s, logits, &done);
    if (done) return t;
    if (!s->allowed && !(s->allowed = malloc((size_t)s->n_vocab))) return -1;
    s->masked++;
    if (s->con.mask(s->con.user, s->allowed) <= 0) return -1;
    load(s, logits);
    int32_t m = 0;
    for (int32_t i = 0; i < s->n_vocab; i++)
        if (s->allowed[i]) s->c[m++] = s->c[i];
    return run_chain(s, s->c, m);
}

int32_t st_sampler_sample(st_sampler *s, const float *logits) {
    load(s, logits);
    int32_t t = run_chain(s, s->c, s->n_vocab);
    if (s->has_con && t >= 0 && !s->con.token_ok(s->con.user, t)) t = sample_masked(s, logits);
    if (s->has_con && t >= 0 && s->con.accept) s->con.accept(s->con.user, t);
    if (s->lp_top >= 0) record_logprobs(s, logits, t);
    return t;
}

int32_t st_sampler_sample_cand(st_sampler *s, const int32_t *ids, const float *logits, int32_t n) {
    int32_t m = 0;
    for (int32_t i = 0; i < n && m < s->n_vocab; i++) {
        if (ids[i] < 0 || ids[i] >= s->n_vocab) continue;
        s->c[m].id = ids[i];
        s->c[m].logit = logits[i];
        m++;
    }
    return run_chain(s, s->c, m);
}
