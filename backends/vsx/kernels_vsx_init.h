/* SPDX-License-Identifier: Apache-2.0 */
/* The one function of the VSX kernels that baseline (non-POWER9) code may name: it fills the
 * kernel table. Kept apart from kernels_vsx.h so the module's entry and CPU check never
 * include <altivec.h>. Call only after the CPU check passed. */
#ifndef STRATA_KERNELS_VSX_INIT_H
#define STRATA_KERNELS_VSX_INIT_H

#include "cpu/cpu_kernels.h"

/* Fill *k: scalar kernels first, then every slot this ISA has a VSX version of (isa = "vsx").
 * Never fails. Requires an ISA 3.00 CPU. */
void st_vsx_kernels_init(st_cpu_kernels *k);

#endif
