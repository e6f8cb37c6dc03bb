/* SPDX-License-Identifier: Apache-2.0 */
/* Crash reports on Windows (see crash.h): an unhandled-exception filter writes the exception,
 * its address, the stage and the last log lines to stderr and to <dir>/strata-crash-<pid>.txt,
 * then lets Windows end the process. No backtrace yet (DbgHelp is not linked). */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <fcntl.h>
#include <io.h>
#include <stdint.h>
#include <stdio.h>

#include "platform/crash.h"
#include "platform/crash_internal.h"

static const char *code_name(DWORD c) {
    switch (c) {
    case EXCEPTION_ACCESS_VIOLATION: return "ACCESS_VIOLATION";
    case EXCEPTION_ILLEGAL_INSTRUCTION: return "ILLEGAL_INSTRUCTION";
    case EXCEPTION_INT_DIVIDE_BY_ZERO: return "INT_DIVIDE_BY_ZERO";
    case EXCEPTION_STACK_OVERFLOW: return "STACK_OVERFLOW";
    case EXCEPTION_IN_PAGE_ERROR: return "IN_PAGE_ERROR";
    default: return "exception";
    }
}

static void report(int fd, const EXCEPTION_RECORD *r) {
    st_crash_put(fd, "strata crash report\nexception: ");
    st_crash_put(fd, code_name(r->ExceptionCode));
    st_crash_put(fd, " (");
    st_crash_put_num(fd, r->ExceptionCode, 16);
    st_crash_put(fd, ")\naddress: ");
    st_crash_put_num(fd, (unsigned long long)(uintptr_t)r->ExceptionAddress, 16);
    st_crash_put(fd, "\npid: ");
    st_crash_put_num(fd, GetCurrentProcessId(), 10);
    st_crash_put(fd, "\nstage: ");
    st_crash_put(fd, st_crash_stage()[0] ? st_crash_stage() : "(not set)");
    st_crash_put(fd, "\nlast log lines:\n");
    st_crash_write_log(fd);
}

static LONG WINAPI on_exception(EXCEPTION_POINTERS *e) {
    char path[600];
    report(2, e->ExceptionRecord);
    if (st_crash_report_path(path, sizeof path, GetCurrentProcessId())) {
        int fd = _open(path, _O_WRONLY | _O_CREAT | _O_TRUNC | _O_BINARY, 0644);
        if (fd >= 0) {
            report(fd, e->ExceptionRecord);
            _close(fd);
            st_crash_put(2, "crash report written to ");
            st_crash_put(2, path);
            st_crash_put(2, "\n");
        }
    }
    return EXCEPTION_CONTINUE_SEARCH;
}

int st_crash_install(const char *dir) {
    char tmp[MAX_PATH];
    DWORD n = GetTempPathA(sizeof tmp, tmp);
    const char *d = dir && *dir ? dir : n && n < sizeof tmp ? tmp : ".";
    snprintf(st_crash_dir, sizeof st_crash_dir, "%s", d);
    SetUnhandledExceptionFilter(on_exception);
    return 0;
}
