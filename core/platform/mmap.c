/* SPDX-License-Identifier: Apache-2.0 */
/* Read-only file mappings (POSIX mmap). See mapfile.h. */
#include "platform/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int st_mapfile_open(st_mapfile *m, const char *path, char *err, size_t errlen)
{
    m->base = NULL;
    m->size = 0;
    m->fd = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    uint64_t size = (uint64_t)st.st_size;
    if ((uint64_t)(size_t)size != size) {
        snprintf(err, errlen, "%s: file of %llu bytes does not fit the address space", path,
                 (unsigned long long)size);
        close(fd);
        return -1;
    }
    void *base = NULL;
    if (size > 0) {
        base = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
            snprintf(err, errlen, "%s: cannot map %llu bytes: %s", path,
                     (unsigned long long)size, strerror(errno));
            close(fd);
            return -1;
        }
    }
    m->base = base;
    m->size = size;
    m->fd = fd;
    return 0;
}

void st_mapfile_close(st_mapfile *m)
{
    if (!m)
        return;
    if (m->base && m->size)
        munmap((void *)m->base, (size_t)m->size);
    if (m->fd >= 0)
        close(m->fd);
    m->base = NULL;
    m->size = 0;
    m->fd = -1;
}

int st_mapfile_advise(const st_mapfile *m, uint64_t off, uint64_t len, int advice)
{
    if (!m || !m->base || off >= m->size || len == 0)
        return m && m->base ? 0 : -1;
    if (len > m->size - off)
        len = m->size - off;
    int adv;
    switch (advice) {
    case ST_MAP_SEQUENTIAL: adv = MADV_SEQUENTIAL; break;
    case ST_MAP_RANDOM: adv = MADV_RANDOM; break;
    case ST_MAP_WILLNEED: adv = MADV_WILLNEED; break;
    case ST_MAP_DONTNEED: adv = MADV_DONTNEED; break;
    case ST_MAP_NORMAL: adv = MADV_NORMAL; break;
    default: return -1;
    }
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t page = pg > 0 ? (uint64_t)pg : 4096u;
    uint64_t start = off & ~(page - 1);
    uint64_t end = off + len;
    const char *p = (const char *)m->base + start;
    return madvise((void *)p, (size_t)(end - start), adv) == 0 ? 0 : -1;
}
