/* SPDX-License-Identifier: Apache-2.0 */
/* POSIX dlopen shim. See dl.h. */
#include "platform/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void copy_text(char *out, size_t outlen, const char *s) {
    if (!out || !outlen) return;
    snprintf(out, outlen, "%s", s ? s : "");
}

void st_dl_explain(const char *path, const char *loader_text, char *out, size_t outlen) {
    const char *t = loader_text ? loader_text : "unknown loader error";
    /* glibc: "<file>: cannot open shared object file: No such file or directory", where
     * <file> is the dependency's name when a DT_NEEDED entry was not found. */
    const char *marker = ": cannot open shared object file";
    const char *m = strstr(t, marker);
    if (m && path) {
        size_t n = (size_t)(m - t);
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        int is_self = (n == strlen(path) && !strncmp(t, path, n)) || (n == strlen(base) && !strncmp(t, base, n));
        if (!is_self && n > 0 && n < 256) {
            char dep[256];
            memcpy(dep, t, n);
            dep[n] = 0;
            snprintf(out, outlen, "needs %s, not found (%s)", dep, t);
            return;
        }
    }
    copy_text(out, outlen, t);
}

st_dl *st_dl_open(const char *path, char *err, size_t errlen) {
    copy_text(err, errlen, "");
    if (!path || !*path) {
        copy_text(err, errlen, "empty module path");
        return NULL;
    }
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        st_dl_explain(path, dlerror(), err, errlen);
        return NULL;
    }
    return (st_dl *)h;
}

void *st_dl_sym(st_dl *dl, const char *name) {
    if (!dl || !name) return NULL;
    dlerror();
    return dlsym((void *)dl, name);
}

int st_dl_close(st_dl *dl, char *err, size_t errlen) {
    copy_text(err, errlen, "");
    if (!dl) return 0;
    dlerror();
    if (dlclose((void *)dl) != 0) {
        const char *e = dlerror();
        copy_text(err, errlen, e ? e : "dlclose failed");
        return -1;
    }
    return 0;
}
