/* SPDX-License-Identifier: Apache-2.0 */
/* POSIX calls on Win32, for Windows builds only: see posix_compat.h and the headers beside it. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <psapi.h>

#include <ctype.h>
#include <errno.h>
#include <io.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/mman.h"
#include "sys/resource.h"

long sysconf(int name) {
    SYSTEM_INFO si;
    MEMORYSTATUSEX ms;
    GetSystemInfo(&si);
    ms.dwLength = sizeof ms;
    switch (name) {
    case _SC_PAGESIZE: return (long)si.dwPageSize;
    case _SC_NPROCESSORS_ONLN: return (long)si.dwNumberOfProcessors;
    case _SC_PHYS_PAGES: return GlobalMemoryStatusEx(&ms) ? (long)(ms.ullTotalPhys / si.dwPageSize) : -1;
    case _SC_AVPHYS_PAGES: return GlobalMemoryStatusEx(&ms) ? (long)(ms.ullAvailPhys / si.dwPageSize) : -1;
    default: errno = EINVAL; return -1;
    }
}

char *realpath(const char *path, char *resolved) {
    char buf[MAX_PATH * 4];
    DWORD n = GetFullPathNameA(path, (DWORD)sizeof buf, buf, NULL);
    if (n == 0 || n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    if (GetFileAttributesA(buf) == INVALID_FILE_ATTRIBUTES) {
        errno = ENOENT;
        return NULL;
    }
    for (char *p = buf; *p; p++)
        if (*p == '\\') *p = '/';
    if (!resolved) return strdup(buf);
    memcpy(resolved, buf, n + 1); /* callers pass PATH_MAX (260) or more; n < MAX_PATH for them */
    return resolved;
}

/* Digit runs compare by value (leading zeros aside), everything else byte by byte. */
int strverscmp(const char *a, const char *b) {
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0') a++;
            while (*b == '0') b++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)a[la])) la++;
            while (isdigit((unsigned char)b[lb])) lb++;
            if (la != lb) return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c) return c;
            a += la;
            b += lb;
        } else {
            if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return (unsigned char)*a - (unsigned char)*b;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    (void)addr, (void)off;
    if (!(flags & MAP_ANONYMOUS) || fd != -1) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    DWORD protect = (prot & PROT_WRITE) ? PAGE_READWRITE : (prot & PROT_READ) ? PAGE_READONLY : PAGE_NOACCESS;
    void *p = VirtualAlloc(NULL, len, MEM_RESERVE | MEM_COMMIT, protect);
    if (!p) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return p;
}

int munmap(void *addr, size_t len) {
    (void)len; /* whole mappings only, as mmap made them */
    return VirtualFree(addr, 0, MEM_RELEASE) ? 0 : -1;
}

static void to_timeval(FILETIME ft, struct timeval *tv) {
    unsigned long long t = ((unsigned long long)ft.dwHighDateTime << 32 | ft.dwLowDateTime) / 10; /* us */
    tv->tv_sec = (long)(t / 1000000);
    tv->tv_usec = (long)(t % 1000000);
}

int getrusage(int who, struct rusage *ru) {
    FILETIME c, e, k, u;
    PROCESS_MEMORY_COUNTERS pmc;
    if (who != RUSAGE_SELF || !GetProcessTimes(GetCurrentProcess(), &c, &e, &k, &u)) {
        errno = EINVAL;
        return -1;
    }
    memset(ru, 0, sizeof *ru);
    to_timeval(u, &ru->ru_utime);
    to_timeval(k, &ru->ru_stime);
    if (GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc)) {
        ru->ru_maxrss = (long)(pmc.PeakWorkingSetSize / 1024);
        ru->ru_majflt = (long)pmc.PageFaultCount;
    }
    return 0;
}

int dprintf(int fd, const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return n;
    return _write(fd, buf, (unsigned)((size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1));
}
