/* SPDX-License-Identifier: Apache-2.0 */
/* The CHECK macro of the C tests: on a false condition it prints "FAIL file:line: message" to
 * stderr and counts it in the test's `g_fail` (an int the including file defines or declares). */
#ifndef STRATA_TEST_CHECK_H
#define STRATA_TEST_CHECK_H

#include <stdio.h>

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fprintf(stderr, "\n");                               \
            g_fail++;                                            \
        }                                                        \
    } while (0)

#endif
