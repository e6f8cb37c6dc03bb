/* SPDX-License-Identifier: Apache-2.0 */
/* Read-only file mappings: map a whole file, unmap it, give access hints.
 * The only place that names mmap/madvise; other code uses st_mapfile. */
#ifndef STRATA_PLATFORM_MAPFILE_H
#define STRATA_PLATFORM_MAPFILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Access hints (st_mapfile_advise). */
#define ST_MAP_NORMAL 0
#define ST_MAP_SEQUENTIAL 1
#define ST_MAP_RANDOM 2
#define ST_MAP_WILLNEED 3
#define ST_MAP_DONTNEED 4

typedef struct st_mapfile {
    const void *base; /* NULL for an empty file */
    uint64_t size;    /* file size in bytes */
    int fd;           /* read-only descriptor, -1 when closed */
} st_mapfile;

/* Maps the whole file at `path` read-only (shared, no copy). Returns 0, or -1 with a message
 * in err (naming the path and the OS error) and *m zeroed with fd = -1. The caller owns the
 * mapping and releases it with st_mapfile_close. An empty file gives base NULL, size 0. */
int st_mapfile_open(st_mapfile *m, const char *path, char *err, size_t errlen);
/* Unmaps and closes; safe on a zeroed or already closed st_mapfile. */
void st_mapfile_close(st_mapfile *m);
/* Hint for bytes [off, off+len) (clamped to the file, widened to whole pages).
 * Returns 0, or -1 when the OS refused (the mapping stays valid). */
int st_mapfile_advise(const st_mapfile *m, uint64_t off, uint64_t len, int advice);

#ifdef __cplusplus
}
#endif
#endif
