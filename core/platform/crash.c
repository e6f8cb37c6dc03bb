/* SPDX-License-Identifier: Apache-2.0 */
#include "platform/crash.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RING 16
static char g_dir[512];
static char g_stage[256];
static char g_ring[RING][256];
static volatile int g_head;

void st_crash_set_stage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_stage, sizeof g_stage, fmt, ap);
    va_end(ap);
}

const char *st_crash_stage(void) { return g_stage; }

void st_crash_log_line(const char *line) {
    int h = g_head;
    size_t l = strlen(line);
    if (l >= sizeof g_ring[0]) l = sizeof g_ring[0] - 1;
    memcpy(g_ring[h % RING], line, l);
    g_ring[h % RING][l] = 0;
    g_head = h + 1;
}

static void put(int fd, const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void put_num(int fd, unsigned long long v, int base) {
    char b[32];
    int i = 31;
    b[i] = 0;
    if (!v) b[--i] = '0';
    while (v) {
        b[--i] = "0123456789abcdef"[v % (unsigned)base];
        v /= (unsigned)base;
    }
    if (base == 16) put(fd, "0x");
    put(fd, b + i);
}

void st_crash_write_log(int fd) {
    int h = g_head, start = h > RING ? h - RING : 0;
    for (int i = start; i < h; i++) {
        put(fd, "  ");
        put(fd, g_ring[i % RING]);
        put(fd, "\n");
    }
}

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
    put(fd, "strata crash report\nsignal: ");
    put(fd, sig_name(sig));
    put(fd, " (");
    put_num(fd, (unsigned)sig, 10);
    put(fd, ")\naddress: ");
    put_num(fd, (unsigned long long)(uintptr_t)addr, 16);
    put(fd, "\npid: ");
    put_num(fd, (unsigned long long)getpid(), 10);
    put(fd, "\nstage: ");
    put(fd, g_stage[0] ? g_stage : "(not set)");
    put(fd, "\nbacktrace:\n");
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, fd);
    put(fd, "last log lines:\n");
    st_crash_write_log(fd);
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    char path[600];
    /* path = dir + "/strata-crash-" + pid + ".txt", built without stdio */
    size_t l = strlen(g_dir);
    memcpy(path, g_dir, l);
    const char *mid = "/strata-crash-";
    memcpy(path + l, mid, strlen(mid));
    l += strlen(mid);
    char num[24];
    int i = 23;
    num[i] = 0;
    unsigned long long p = (unsigned long long)getpid();
    do {
        num[--i] = (char)('0' + p % 10);
        p /= 10;
    } while (p);
    memcpy(path + l, num + i, (size_t)(23 - i));
    l += (size_t)(23 - i);
    memcpy(path + l, ".txt", 5);
    report(2, sig, si ? si->si_addr : NULL);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        report(fd, sig, si ? si->si_addr : NULL);
        close(fd);
        put(2, "crash report written to ");
        put(2, path);
        put(2, "\n");
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

int st_crash_install(const char *dir) {
    snprintf(g_dir, sizeof g_dir, "%s", dir && *dir ? dir : "/tmp");
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
