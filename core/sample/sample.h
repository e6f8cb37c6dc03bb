/* SPDX-License-Identifier: Apache-2.0 */
/* Samplers: repetition/presence/frequency penalties, then top-k, top-p, min-p, temperature
 * and a draw from the remaining distribution (the order common in the field), or greedy.
 * Own PRNG (xoshiro256** seeded through splitmix64): identical seed and input give identical
 * output on every machine. Host-side and single-threaded per sampler; no global state. */
#ifndef STRATA_SAMPLE_H
#define STRATA_SAMPLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- PRNG ---------------------------------------------------------------------------- */
typedef struct st_rng {
    uint64_t s[4];
} st_rng;

/* Seeds the generator from one 64-bit value (splitmix64 expands it). Never fails. */
void st_rng_seed(st_rng *r, uint64_t seed);
/* Next 64 random bits (xoshiro256**). */
uint64_t st_rng_next(st_rng *r);
/* Uniform double in [0, 1) with 53 random bits. */
double st_rng_uniform(st_rng *r);
/* Standard normal float (Box-Muller; one draw per call). */
float st_rng_normal(st_rng *r);

/* ---- sampler ------------------------------------------------------------------------- */
typedef struct st_sampler_params {
    float temp;              /* <= 0: greedy (argmax after penalties) */
    int32_t top_k;           /* <= 0: off */
    float top_p;             /* >= 1: off */
    float min_p;             /* <= 0: off */
    float repeat_penalty;    /* 1: off; positive logits divided, negative multiplied */
    int32_t penalty_last_n;  /* tokens of history the penalties look at; 0 off, -1 all */
    float presence_penalty;  /* subtracted once from every token seen in the window */
    float frequency_penalty; /* subtracted per occurrence in the window */
    uint64_t seed;
} st_sampler_params;

/* Defaults: temp 0.8, top_k 40, top_p 0.95, min_p 0.05, no penalties (last_n 64), seed 0. */
void st_sampler_params_default(st_sampler_params *p);

typedef struct st_sampler st_sampler;

/* New sampler for a vocabulary of n_vocab tokens; NULL when out of memory or n_vocab <= 0.
 * The caller owns it and frees it with st_sampler_free. */
st_sampler *st_sampler_new(const st_sampler_params *p, int32_t n_vocab);
void st_sampler_free(st_sampler *s);
/* Forgets the history and reseeds the PRNG with the original seed. */
void st_sampler_reset(st_sampler *s);
/* Adds a token to the history the penalties see (generated tokens; prompt tokens too if
 * the caller wants them penalized). Out-of-range ids are ignored. */
void st_sampler_accept(st_sampler *s, int32_t token);

/* Picks a token from full-vocabulary logits [n_vocab] (not modified). Returns the token id,
 * or -1 when every candidate was removed (cannot happen with finite logits). */
int32_t st_sampler_sample(st_sampler *s, const float *logits);
/* Same over a candidate subset (ids[n], their logits), e.g. a device-side top-k. The result
 * equals st_sampler_sample on the full vocabulary when the subset holds the top
 * st_sampler_candidates_needed() tokens. */
int32_t st_sampler_sample_cand(st_sampler *s, const int32_t *ids, const float *logits, int32_t n);

/* ---- constraints and biases --------------------------------------------------------------
 * A constraint (e.g. a grammar) says which tokens may come next. Sampling draws as usual, then
 * checks the drawn token (the fast path); only when it is refused are all refused tokens masked
 * and the draw repeated on the rest. Drawing from p, refusing, then drawing from p restricted
 * to the allowed set gives exactly p restricted to the allowed set. */
typedef struct st_sampler_constraint {
    int (*token_ok)(void *user, int32_t token);           /* may token come next? */
    int32_t (*mask)(void *user, uint8_t *allowed);        /* allowed[n_vocab]; returns the count */
    void (*accept)(void *user, int32_t token);            /* token was chosen */
    void (*free_user)(void *user);                        /* called by st_sampler_free (may be NULL) */
    void *user;
    const char *(*error)(void *user);                     /* why nothing could be allowed (may be NULL) */
} st_sampler_constraint;

/* Attach a constraint (copied; the sampler owns user from now on). */
void st_sampler_set_constraint(st_sampler *s, const st_sampler_constraint *c);
/* After st_sampler_sample returned -1 under a constraint: why (the constraint's words, or
 * "no token is allowed"). */
const char *st_sampler_error(const st_sampler *s);
/* Logit biases added before sampling (OpenAI logit_bias: -100 bans, +100 all but forces).
 * Out-of-range ids are ignored. 0, or -1 when out of memory. */
int st_sampler_set_bias(st_sampler *s, const int32_t *ids, const float *bias, int32_t n);
/* Times the fast path failed and the full mask was computed (for statistics). */
uint64_t st_sampler_masked_steps(const st_sampler *s);
/* Times the fast path failed and the top-k allowed tokens were found among the best
 * candidates instead (no full mask). */
uint64_t st_sampler_scanned_steps(const st_sampler *s);

/* ---- log probabilities ---------------------------------------------------------------- */
#define ST_LOGPROBS_MAX 20
typedef struct st_token_logprobs {
    int32_t valid;                      /* set for a token sampled with logprobs on */
    float logprob;                      /* of the chosen token */
    int32_t n_top;
    int32_t top_id[ST_LOGPROBS_MAX];    /* the n_top most likely tokens, best first */
    float top_lp[ST_LOGPROBS_MAX];
} st_token_logprobs;

/* After each st_sampler_sample, record the chosen token's log probability and the n_top best
 * (0..20; -1 turns it off): log-softmax of the logits plus biases at temperature 1, before
 * truncation (the model's distribution, as OpenAI reports it). */
void st_sampler_set_logprobs(st_sampler *s, int32_t n_top);
/* The record of the last sample (valid = 0 when off). */
void st_sampler_last_logprobs(const st_sampler *s, st_token_logprobs *out);

/* Nonzero when the sampler is plain argmax of the raw logits (temp <= 0, no penalties active):
 * a device-side ARGMAX gives the same answer. */
int st_sampler_is_greedy(const st_sampler *s);
/* Size of a top-N candidate set that gives the exact answer (top_k plus the distinct
 * penalized tokens), or 0 when the full vocabulary is needed (top_k off). */
int32_t st_sampler_candidates_needed(const st_sampler *s);

#ifdef __cplusplus
}
#endif
#endif
