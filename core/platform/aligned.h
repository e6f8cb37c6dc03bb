/* SPDX-License-Identifier: Apache-2.0 */
/* Aligned host memory. POSIX frees posix_memalign's memory with free(); Windows needs
 * _aligned_free for _aligned_malloc's, so such memory goes back through st_aligned_free.
 * Header-only, so that backend modules use it without linking the core. */
#ifndef STRATA_PLATFORM_ALIGNED_H
#define STRATA_PLATFORM_ALIGNED_H

#include <stddef.h>
#include <stdlib.h>
#ifdef _WIN32
#include <malloc.h>
#endif

/* `bytes` aligned to `align` (a power of two, at least sizeof(void *)); NULL when out of
 * memory. Release with st_aligned_free. */
static inline void *st_aligned_alloc(size_t align, size_t bytes) {
#ifdef _WIN32
    return _aligned_malloc(bytes ? bytes : 1, align);
#else
    void *p = NULL;
    return posix_memalign(&p, align, bytes ? bytes : 1) == 0 ? p : NULL;
#endif
}

static inline void st_aligned_free(void *p) {
#ifdef _WIN32
    _aligned_free(p);
#else
    free(p);
#endif
}

#endif
