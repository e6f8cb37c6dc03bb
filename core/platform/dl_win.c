/* SPDX-License-Identifier: Apache-2.0 */
/* The dynamic-library shim on Windows (LoadLibraryExW). See dl.h. A module is loaded with its
 * own directory and the system directories as the search path for its dependencies (never the
 * current directory), and without the error dialog Windows shows for a missing DLL. When a
 * dependency is missing, Windows says only "The specified module could not be found": the
 * module's import table is read to name the DLL that is not there. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/dl.h"

static void copy_text(char *out, size_t outlen, const char *s) {
    if (out && outlen) snprintf(out, outlen, "%s", s ? s : "");
}

/* Windows texts are made by st_dl_open itself (dependency named): nothing to explain. */
void st_dl_explain(const char *path, const char *loader_text, char *out, size_t outlen) {
    (void)path;
    copy_text(out, outlen, loader_text ? loader_text : "unknown loader error");
}

static void system_text(DWORD e, char *out, size_t outlen) {
    char msg[256] = "";
    FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, msg, sizeof msg, NULL);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == '.')) msg[--n] = 0;
    snprintf(out, outlen, "%s (error %lu)", msg[0] ? msg : "the Windows loader failed", (unsigned long)e);
}

/* The file's bytes (malloc'ed) or NULL. */
static unsigned char *read_all(const wchar_t *path, size_t *len) {
    FILE *f = _wfopen(path, L"rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && n < (1L << 30) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

/* The file offset of relative virtual address rva, or 0 when no section holds it. */
static size_t rva_offset(const IMAGE_NT_HEADERS64 *nt, DWORD rva) {
    const IMAGE_SECTION_HEADER *s = IMAGE_FIRST_SECTION(nt);
    for (WORD i = 0; i < nt->FileHeader.NumberOfSections; i++, s++)
        if (rva >= s->VirtualAddress && rva < s->VirtualAddress + s->SizeOfRawData)
            return (size_t)(rva - s->VirtualAddress) + s->PointerToRawData;
    return 0;
}

/* Can the loader find dependency `dep` of a module in directory `dir`? */
static int dependency_found(const wchar_t *dir, const char *dep) {
    if (!_strnicmp(dep, "api-ms-", 7) || !_strnicmp(dep, "ext-ms-", 7)) return 1; /* API sets */
    wchar_t w[MAX_PATH * 2];
    if (_snwprintf(w, MAX_PATH * 2, L"%ls\\%hs", dir, dep) > 0 && GetFileAttributesW(w) != INVALID_FILE_ATTRIBUTES)
        return 1;
    HMODULE h = LoadLibraryExA(dep, NULL, LOAD_LIBRARY_AS_DATAFILE | LOAD_LIBRARY_SEARCH_SYSTEM32);
    if (!h) h = LoadLibraryExA(dep, NULL, LOAD_LIBRARY_AS_DATAFILE);
    if (h) FreeLibrary(h);
    return h != NULL;
}

/* The first DLL the 64-bit module at `path` imports that cannot be found, into out; 0 when one
 * was named. */
static int missing_dependency(const wchar_t *path, const wchar_t *dir, char *out, size_t outlen) {
    size_t len;
    unsigned char *b = read_all(path, &len);
    int rc = -1;
    const IMAGE_DOS_HEADER *dos = (const void *)b;
    if (!b || len < sizeof *dos || dos->e_magic != IMAGE_DOS_SIGNATURE || (size_t)dos->e_lfanew + sizeof(IMAGE_NT_HEADERS64) > len)
        goto done;
    const IMAGE_NT_HEADERS64 *nt = (const void *)(b + dos->e_lfanew);
    if (nt->Signature != IMAGE_NT_SIGNATURE || nt->OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR64_MAGIC) goto done;
    DWORD rva = nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_IMPORT].VirtualAddress;
    size_t off = rva ? rva_offset(nt, rva) : 0;
    for (; off && off + sizeof(IMAGE_IMPORT_DESCRIPTOR) <= len; off += sizeof(IMAGE_IMPORT_DESCRIPTOR)) {
        const IMAGE_IMPORT_DESCRIPTOR *d = (const void *)(b + off);
        size_t name = d->Name ? rva_offset(nt, d->Name) : 0;
        if (!name || name >= len) break;
        const char *dep = (const char *)b + name;
        if (memchr(dep, 0, len - name) && !dependency_found(dir, dep)) {
            snprintf(out, outlen, "%s", dep);
            rc = 0;
            break;
        }
    }
done:
    free(b);
    return rc;
}

st_dl *st_dl_open(const char *path, char *err, size_t errlen) {
    copy_text(err, errlen, "");
    if (!path || !*path) {
        copy_text(err, errlen, "empty module path");
        return NULL;
    }
    wchar_t w[MAX_PATH * 2], full[MAX_PATH * 2], dir[MAX_PATH * 2];
    if (!MultiByteToWideChar(CP_UTF8, 0, path, -1, w, MAX_PATH * 2) || !GetFullPathNameW(w, MAX_PATH * 2, full, NULL)) {
        copy_text(err, errlen, "the path is too long or not UTF-8");
        return NULL;
    }
    for (wchar_t *p = full; *p; p++)
        if (*p == L'/') *p = L'\\';
    DWORD old;
    SetThreadErrorMode(SEM_FAILCRITICALERRORS | SEM_NOOPENFILEERRORBOX, &old);
    HMODULE h = LoadLibraryExW(full, NULL, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_DEFAULT_DIRS);
    DWORD e = h ? 0 : GetLastError();
    SetThreadErrorMode(old, NULL);
    if (h) return (st_dl *)h;
    char why[300], dep[256];
    system_text(e, why, sizeof why);
    wcscpy(dir, full);
    wchar_t *slash = wcsrchr(dir, L'\\');
    if (slash) *slash = 0;
    if (e == ERROR_MOD_NOT_FOUND && GetFileAttributesW(full) != INVALID_FILE_ATTRIBUTES &&
        missing_dependency(full, dir, dep, sizeof dep) == 0)
        snprintf(err, errlen, "needs %s, not found (%s)", dep, why);
    else
        copy_text(err, errlen, why);
    return NULL;
}

void *st_dl_sym(st_dl *dl, const char *name) {
    if (!dl || !name) return NULL;
    return (void *)GetProcAddress((HMODULE)dl, name);
}

int st_dl_close(st_dl *dl, char *err, size_t errlen) {
    copy_text(err, errlen, "");
    if (!dl) return 0;
    if (!FreeLibrary((HMODULE)dl)) {
        system_text(GetLastError(), err, errlen);
        return -1;
    }
    return 0;
}
