/* SPDX-License-Identifier: Apache-2.0 */
/* Private functions shared by the planner's files. */
#ifndef STRATA_PLAN_INTERNAL_H
#define STRATA_PLAN_INTERNAL_H

#include "plan/plan.h"

/* Appends a note (printf style) to the plan's notes. */
void st_plan_note_add(st_plan *p, st_plan_level lv, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* bytes (0 counts as 64, as the model allocates) rounded up to ST_PLAN_ALIGN */
uint64_t st_plan_round(uint64_t bytes);
/* Non-expert weights of layers [l0, l0+n), with the token embedding when `first` and the
 * output norm/matrix when `last`; `unified` devices read matrices in place (0 bytes). */
uint64_t st_plan_weight_bytes(const st_model_desc *d, int32_t l0, int32_t n, int first, int last,
                              int unified);

/* The split of L layers over p's devices (each at most maxl[i]) that minimizes the modelled decode
 * time per token: the bytes a token reads from each layer over its device's bandwidth, plus a
 * move of the hidden state per boundary; among equal times the one nearest to a split in
 * proportion to room[i]. Every device needs in.bw_gbs > 0. Writes n[i]; 0, or -1 when the layers
 * do not fit (sum of maxl < L). Sets p->split_considered. (plan_split.c) */
int st_plan_split_fastest(st_plan *p, const st_model_desc *desc, const int64_t *maxl, const int64_t *room,
                          int32_t *n);
/* Fills each device's t_token_s and p->t_token_s for the split in place, and notes why (when
 * every bandwidth is known). */
void st_plan_split_times(st_plan *p, const st_model_desc *desc);

#endif
