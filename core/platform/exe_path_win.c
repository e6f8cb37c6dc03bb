/* SPDX-License-Identifier: Apache-2.0 */
/* Where the running executable or a DLL lives, on Windows (GetModuleFileNameW), as UTF-8 with
 * '/' separators. See dl.h. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <string.h>

#include "platform/dl.h"

/* The directory of module h's file into out (UTF-8, '/'). */
static int module_dir(HMODULE h, char *out, size_t outlen) {
    wchar_t w[4096];
    char buf[4 * 4096];
    DWORD n = GetModuleFileNameW(h, w, 4096);
    if (n == 0 || n >= 4096) return -1;
    int k = WideCharToMultiByte(CP_UTF8, 0, w, (int)n, buf, (int)sizeof buf - 1, NULL, NULL);
    if (k <= 0) return -1;
    buf[k] = 0;
    for (char *p = buf; *p; p++)
        if (*p == '\\') *p = '/';
    return st_path_dir(buf, out, outlen);
}

int st_exe_dir(char *out, size_t outlen) {
    if (!out || outlen < 2) return -1;
    out[0] = 0;
    return module_dir(NULL, out, outlen);
}

int st_code_dir(const void *addr, char *out, size_t outlen) {
    if (!out || outlen < 2) return -1;
    out[0] = 0;
    HMODULE h = NULL;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCWSTR)addr, &h))
        return -1;
    return module_dir(h, out, outlen);
}
