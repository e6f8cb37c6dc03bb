/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal checking macros for the backend tests: count failures, print each with its line. */
#ifndef STRATA_TEST_BACKEND_UTIL_H
#define STRATA_TEST_BACKEND_UTIL_H

#include <stdio.h>
#include <string.h>

static int g_failures;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
            g_failures++;                                                  \
        }                                                                  \
    } while (0)

/* `text` contains `needle` */
#define CHECK_HAS(text, needle)                                                              \
    do {                                                                                     \
        const char *t_ = (text), *n_ = (needle);                                             \
        if (!t_ || !strstr(t_, n_)) {                                                        \
            printf("FAIL %s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,      \
                   t_ ? t_ : "(null)", n_);                                                  \
            g_failures++;                                                                    \
        }                                                                                    \
    } while (0)

#define CHECK_STR(text, want)                                                                \
    do {                                                                                     \
        const char *t_ = (text), *w_ = (want);                                               \
        if (!t_ || strcmp(t_, w_)) {                                                         \
            printf("FAIL %s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__, t_ ? t_ : "(null)", w_); \
            g_failures++;                                                                    \
        }                                                                                    \
    } while (0)

#define TEST_DONE()                                                        \
    do {                                                                   \
        printf("%s: %d failure%s\n", __FILE__, g_failures, g_failures == 1 ? "" : "s"); \
        return g_failures ? 1 : 0;                                         \
    } while (0)

#endif
