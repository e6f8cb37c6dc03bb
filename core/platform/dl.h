/* SPDX-License-Identifier: Apache-2.0 */
/* Dynamic-library shim for backend modules: open, look up, close, and where the running
 * executable lives. The only place that names dlopen/dlsym. */
#ifndef STRATA_PLATFORM_DL_H
#define STRATA_PLATFORM_DL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_dl st_dl; /* an opened shared object */

/* File-name suffix of a shared object, and the separator of path lists ($STRATA_BACKEND_PATH):
 * ".so" and ':' on POSIX, ".dll" and ';' on Windows (where ':' follows a drive letter). */
#ifdef _WIN32
#define ST_DL_SUFFIX ".dll"
#define ST_PATH_LIST_SEP ';'
#else
#define ST_DL_SUFFIX ".so"
#define ST_PATH_LIST_SEP ':'
#endif

/* Open the shared object at `path` (RTLD_NOW | RTLD_LOCAL). Returns the handle, owned by the
 * caller until st_dl_close, or NULL with a reason in err: the loader's text, and for a missing
 * dependency library its name first ("needs libcuda.so.1, not found (...)"). */
st_dl *st_dl_open(const char *path, char *err, size_t errlen);
/* Address of the exported symbol `name`, or NULL when absent. The handle stays owned by the
 * caller. */
void *st_dl_sym(st_dl *dl, const char *name);
/* Close a handle from st_dl_open; NULL is accepted. Returns 0, or -1 with err filled. */
int st_dl_close(st_dl *dl, char *err, size_t errlen);

/* Turn the loader's error text for `path` into a reason: "needs X, not found (...)" when the
 * text names a dependency other than `path` that could not be opened, else the text itself.
 * Writes into out (always NUL-terminated). Pure function; exposed for tests. */
void st_dl_explain(const char *path, const char *loader_text, char *out, size_t outlen);

/* The directory part of the file path in buf ('/'-separated; buf is modified), without a
 * trailing slash ("/" for a file in the root), into out. 0, or -1 when there is no '/' or it
 * does not fit. */
int st_path_dir(char *buf, char *out, size_t outlen);
/* Directory of the running executable (from /proc/self/exe), without a trailing slash.
 * Returns 0, or -1 with out set to "" when the OS cannot tell. */
int st_exe_dir(char *out, size_t outlen);
/* Directory of the executable or shared library holding the code at `addr` (a function of the
 * caller's), without a trailing slash: libstrata.so's own directory when it is linked as one.
 * Returns 0, or -1 with out set to "" when the OS cannot tell. */
int st_code_dir(const void *addr, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
