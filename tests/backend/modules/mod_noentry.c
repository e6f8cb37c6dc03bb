/* SPDX-License-Identifier: Apache-2.0 */
/* Test module: a shared object without st_backend_entry (exports something else). */
#include "strata/backend.h"

ST_MODULE_EXPORT int st_not_the_entry(void) { return 42; }
