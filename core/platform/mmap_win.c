/* SPDX-License-Identifier: Apache-2.0 */
/* Read-only file mappings on Windows (CreateFileMapping / MapViewOfFile). See mapfile.h. The
 * file and mapping handles are closed once the view exists (the view keeps the file open), so
 * fd is only 0 (open) or -1. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <stdio.h>
#include <string.h>

#include "platform/mapfile.h"

static void win_error(char *err, size_t errlen, const char *path, const char *what) {
    char msg[256] = "";
    DWORD e = GetLastError();
    FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, msg, sizeof msg, NULL);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == '.')) msg[--n] = 0;
    snprintf(err, errlen, "%s: %s: %s (error %lu)", path, what, msg, (unsigned long)e);
}

int st_mapfile_open(st_mapfile *m, const char *path, char *err, size_t errlen) {
    m->base = NULL;
    m->size = 0;
    m->fd = -1;
    wchar_t wpath[4096];
    if (!MultiByteToWideChar(CP_UTF8, 0, path, -1, wpath, 4096)) {
        snprintf(err, errlen, "%s: cannot open: the path is too long or not UTF-8", path);
        return -1;
    }
    HANDLE f = CreateFileW(wpath, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    if (f == INVALID_HANDLE_VALUE) {
        win_error(err, errlen, path, "cannot open");
        return -1;
    }
    LARGE_INTEGER sz;
    if (!GetFileSizeEx(f, &sz)) {
        win_error(err, errlen, path, "cannot stat");
        CloseHandle(f);
        return -1;
    }
    void *base = NULL;
    if (sz.QuadPart > 0) {
        HANDLE map = CreateFileMappingW(f, NULL, PAGE_READONLY, 0, 0, NULL);
        base = map ? MapViewOfFile(map, FILE_MAP_READ, 0, 0, 0) : NULL;
        if (!base) win_error(err, errlen, path, "cannot map");
        if (map) CloseHandle(map);
    }
    CloseHandle(f);
    if (sz.QuadPart > 0 && !base) return -1;
    m->base = base;
    m->size = (uint64_t)sz.QuadPart;
    m->fd = 0;
    return 0;
}

void st_mapfile_close(st_mapfile *m) {
    if (!m) return;
    if (m->base) UnmapViewOfFile(m->base);
    m->base = NULL;
    m->size = 0;
    m->fd = -1;
}

/* Only WILLNEED does something: the range is read ahead (PrefetchVirtualMemory, Windows 8). */
int st_mapfile_advise(const st_mapfile *m, uint64_t off, uint64_t len, int advice) {
    if (!m || !m->base || off >= m->size || len == 0) return m && m->base ? 0 : -1;
    if (advice < ST_MAP_NORMAL || advice > ST_MAP_DONTNEED) return -1;
    if (advice != ST_MAP_WILLNEED) return 0;
    if (len > m->size - off) len = m->size - off;
    WIN32_MEMORY_RANGE_ENTRY r = {(char *)m->base + off, (SIZE_T)len};
    return PrefetchVirtualMemory(GetCurrentProcess(), 1, &r, 0) ? 0 : -1;
}
