/* SPDX-License-Identifier: Apache-2.0 */
/* Crash reports on POSIX signals (see crash.h). */
#include "platform/crash.h"
#include "platform/crash_internal.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *sig_name(int s) {
    switch (s) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
    }
}

static void report(int fd, int sig, void *addr) {
    void *frames[64];
    st_crash_put(fd, "strata crash report\nsignal: ");
    st_crash_put(fd, sig_name(sig));
    st_crash_put(fd, " (");
    st_crash_put_num(fd, (unsigned)sig, 10);
    st_crash_put(fd, ")\naddress: ");
    st_crash_put_num(fd, (unsigned long long)(uintptr_t)addr, 16);
    st_crash_put(fd, "\npid: ");
    st_crash_put_num(fd, (unsigned long long)getpid(), 10);
    st_crash_put(fd, "\nstage: ");
    st_crash_put(fd, st_crash_stage()[0] ? st_crash_stage() : "(not set)");
    st_crash_put(fd, "\nbacktrace:\n");
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, fd);
    st_crash_put(fd, "last log lines:\n");
    st_crash_write_log(fd);
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    char path[600];
    size_t have_path = st_crash_report_path(path, sizeof path, (unsigned long long)getpid());
    report(2, sig, si ? si->si_addr : NULL);
    int fd = have_path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) {
        report(fd, sig, si ? si->si_addr : NULL);
        close(fd);
        st_crash_put(2, "crash report written to ");
        st_crash_put(2, path);
        st_crash_put(2, "\n");
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

int st_crash_install(const char *dir) {
    snprintf(st_crash_dir, sizeof st_crash_dir, "%s", dir && *dir ? dir : "/tmp");
    void *warm[2];
    backtrace(warm, 2); /* load the unwinder now, not inside the handler */
    static char alt[65536];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
        if (sigaction(sigs[k], &sa, NULL)) return -1;
    return 0;
}
