/* SPDX-License-Identifier: Apache-2.0 */
/* Tiny assertion helpers for plain-C tests: a failed check prints where and why and marks
 * the test failed; main returns st_check_result(). */
#ifndef STRATA_TEST_CHECK_H
#define STRATA_TEST_CHECK_H

#include <math.h>
#include <stdio.h>

static int st_check_failures = 0;

#define ST_CHECK(cond)                                                             \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            st_check_failures++;                                                   \
        }                                                                          \
    } while (0)

#define ST_CHECK_MSG(cond, ...)                                               \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            st_check_failures++;                                              \
        }                                                                     \
    } while (0)

/* |a - b| <= tol, with both printed on failure. */
#define ST_CHECK_NEAR(a, b, tol)                                                          \
    do {                                                                                  \
        double st_a_ = (double)(a), st_b_ = (double)(b);                                  \
        if (!(fabs(st_a_ - st_b_) <= (double)(tol))) {                                    \
            fprintf(stderr, "%s:%d: check failed: %s = %.9g, %s = %.9g (tol %g)\n", __FILE__, \
                    __LINE__, #a, st_a_, #b, st_b_, (double)(tol));                       \
            st_check_failures++;                                                          \
        }                                                                                 \
    } while (0)

static inline int st_check_result(const char *name) {
    if (st_check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, st_check_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
