/* SPDX-License-Identifier: Apache-2.0 */
/* Private functions shared by the planner's files. */
#ifndef STRATA_PLAN_INTERNAL_H
#define STRATA_PLAN_INTERNAL_H

#include "plan/plan.h"

/* bytes (0 counts as 64, as the model allocates) rounded up to ST_PLAN_ALIGN */
uint64_t st_plan_round(uint64_t bytes);
/* Non-expert weights of layers [l0, l0+n), with the token embedding when `first` and the
 * output norm/matrix when `last`; `unified` devices read matrices in place (0 bytes). */
uint64_t st_plan_weight_bytes(const st_model_desc *d, int32_t l0, int32_t n, int first, int last,
                              int unified);

#endif
