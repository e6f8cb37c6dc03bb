/* Test backend: core/ref's ops on host memory (see host_ref.c). */
#ifndef STRATA_TEST_HOST_REF_H
#define STRATA_TEST_HOST_REF_H

#include "strata/backend.h"

/* The table (static storage; one configuration at a time). unified: claim ST_CAP_UNIFIED. */
const st_backend_api *st_test_ref_api(int unified);

#endif
