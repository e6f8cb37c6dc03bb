/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX calls the core and the CPU backend make that mingw-w64 lacks, for Windows builds
 * only: force-included into every C file there (cmake/StrataWindows.cmake), implemented in
 * core/platform/win/posix_compat.c on Win32 calls. Each keeps its POSIX meaning for the uses in
 * this tree; what Windows cannot do is said beside it. Linux builds never see this file. */
#ifndef STRATA_PLATFORM_WIN_POSIX_COMPAT_H
#define STRATA_PLATFORM_WIN_POSIX_COMPAT_H
#ifdef _WIN32

#include <stddef.h> /* nothing more: every name a header brings here meets every file */

#ifdef __cplusplus
extern "C" {
#endif

/* sysconf: page size, physical and available memory pages, online processors. */
#define _SC_PAGESIZE 30
#define _SC_PHYS_PAGES 85
#define _SC_AVPHYS_PAGES 86
#define _SC_NPROCESSORS_ONLN 84
long sysconf(int name);

/* realpath: the absolute path (GetFullPathName; links are not resolved), '\\' turned into '/'.
 * resolved may be NULL (then malloc'ed). */
char *realpath(const char *path, char *resolved);
/* No symbolic links here: lstat is stat. */
#define lstat(p, st) stat(p, st)
#ifndef S_ISLNK
#define S_ISLNK(m) 0
#endif
/* glibc's version-aware comparison ("strata-cuda12.dll" < "strata-cuda13.dll"). */
int strverscmp(const char *a, const char *b);
/* Descriptors are not inherited by child processes unless asked: _O_NOINHERIT (<fcntl.h>) is
 * O_CLOEXEC. */
#ifndef O_CLOEXEC
#define O_CLOEXEC _O_NOINHERIT
#endif
/* printf to a descriptor. */
int dprintf(int fd, const char *fmt, ...);

/* Aligned memory that free() releases does not exist on Windows: code uses
 * platform/aligned.h (st_aligned_alloc / st_aligned_free) instead. */

#ifdef __cplusplus
}
#endif
#endif
#endif
