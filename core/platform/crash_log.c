/* SPDX-License-Identifier: Apache-2.0 */
/* The stage marker, the last log lines and the async-signal-safe writers every crash handler
 * (crash.c for POSIX signals, crash_win.c for Windows exceptions) reports with. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platform/crash.h"
#include "platform/crash_internal.h"

#define RING 16
char st_crash_dir[512];
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

void st_crash_put(int fd, const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

void st_crash_put_num(int fd, unsigned long long v, int base) {
    char b[32];
    int i = 31;
    b[i] = 0;
    if (!v) b[--i] = '0';
    while (v) {
        b[--i] = "0123456789abcdef"[v % (unsigned)base];
        v /= (unsigned)base;
    }
    if (base == 16) st_crash_put(fd, "0x");
    st_crash_put(fd, b + i);
}

void st_crash_write_log(int fd) {
    int h = g_head, start = h > RING ? h - RING : 0;
    for (int i = start; i < h; i++) {
        st_crash_put(fd, "  ");
        st_crash_put(fd, g_ring[i % RING]);
        st_crash_put(fd, "\n");
    }
}


size_t st_crash_report_path(char *path, size_t cap, unsigned long long pid) {
    /* dir + "/strata-crash-" + pid + ".txt", built without stdio */
    const char *mid = "/strata-crash-";
    size_t l = strlen(st_crash_dir), m = strlen(mid);
    char num[24];
    int i = 23;
    num[i] = 0;
    do {
        num[--i] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid);
    if (l + m + (size_t)(23 - i) + 5 > cap) return 0;
    memcpy(path, st_crash_dir, l);
    memcpy(path + l, mid, m);
    l += m;
    memcpy(path + l, num + i, (size_t)(23 - i));
    l += (size_t)(23 - i);
    memcpy(path + l, ".txt", 5);
    return l + 4;
}
