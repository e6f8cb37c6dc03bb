/* SPDX-License-Identifier: Apache-2.0 */
/* <sys/mman.h> for Windows builds (core/platform/win/posix_compat.h says why): anonymous
 * private mappings (VirtualAlloc) and their release; file mappings go through
 * platform/mapfile.h, whose Windows side is core/platform/mmap_win.c. madvise is a hint and
 * does nothing here. */
#ifndef STRATA_PLATFORM_WIN_SYS_MMAN_H
#define STRATA_PLATFORM_WIN_SYS_MMAN_H

#include <stddef.h>
#include <sys/types.h>

#define PROT_NONE 0
#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_SHARED 1
#define MAP_PRIVATE 2
#define MAP_ANONYMOUS 0x20
#define MAP_FAILED ((void *)-1)
#define MADV_NORMAL 0
#define MADV_RANDOM 1
#define MADV_SEQUENTIAL 2
#define MADV_WILLNEED 3
#define MADV_DONTNEED 4
#define MADV_HUGEPAGE 14

/* Only MAP_PRIVATE | MAP_ANONYMOUS (fd -1) is supported; anything else fails with ENOSYS. */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int munmap(void *addr, size_t len);
static inline int madvise(void *addr, size_t len, int advice) {
    (void)addr, (void)len, (void)advice;
    return 0;
}

#endif
