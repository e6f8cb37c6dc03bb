/* SPDX-License-Identifier: Apache-2.0 */
/* Where the running executable lives (Linux: /proc/self/exe). See dl.h. */
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "platform/dl.h"

int st_exe_dir(char *out, size_t outlen) {
    if (!out || outlen < 2) return -1;
    out[0] = 0;
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0 || (size_t)n >= sizeof buf - 1) return -1;
    buf[n] = 0;
    return st_path_dir(buf, out, outlen);
}

int st_code_dir(const void *addr, char *out, size_t outlen) {
    if (!out || outlen < 2) return -1;
    out[0] = 0;
    Dl_info info;
    if (!dladdr(addr, &info) || !info.dli_fname || info.dli_fname[0] != '/') return -1;
    char buf[4096];
    size_t n = strlen(info.dli_fname);
    if (n >= sizeof buf) return -1;
    memcpy(buf, info.dli_fname, n + 1);
    return st_path_dir(buf, out, outlen);
}
