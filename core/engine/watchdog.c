/* SPDX-License-Identifier: Apache-2.0 */
#include "engine/watchdog.h"

#include "engine/engine.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "platform/crash.h"
#include "platform/platform.h"

struct st_watchdog {
    pthread_t th;
    atomic_uint_fast64_t progress;
    atomic_int busy;
    atomic_int stop;
    double stall_s;
    char dir[512];
    void (*describe)(void *, int);
    void *user;
};

static void write_report(st_watchdog *w, int fd, double idle) {
    dprintf(fd, "strata stall report\npid: %d\nstage: %s\nno progress for: %.1f s (limit %.1f s)\n", (int)getpid(),
            st_crash_stage()[0] ? st_crash_stage() : "(not set)", idle, w->stall_s);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        dprintf(fd, "max resident: %ld KiB\npage faults: %ld major, %ld minor\n", ru.ru_maxrss, ru.ru_majflt,
                ru.ru_minflt);
    FILE *mi = fopen("/proc/meminfo", "r");
    char line[256];
    while (mi && fgets(line, sizeof line, mi))
        if (!strncmp(line, "MemAvailable:", 13) || !strncmp(line, "MemTotal:", 9)) dprintf(fd, "%s", line);
    if (mi) fclose(mi);
    FILE *st = fopen("/proc/self/status", "r");
    while (st && fgets(line, sizeof line, st))
        if (!strncmp(line, "VmRSS:", 6) || !strncmp(line, "Threads:", 8)) dprintf(fd, "%s", line);
    if (st) fclose(st);
    /* each thread's state as the kernel sees it */
    dprintf(fd, "threads:\n");
    DIR *dir = opendir("/proc/self/task");
    struct dirent *de;
    while (dir && (de = readdir(dir))) {
        if (de->d_name[0] == '.') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
        FILE *t = fopen(path, "r");
        char stat[1024];
        if (t && fgets(stat, sizeof stat, t)) {
            /* "tid (name) state ...": the name may hold spaces, the state follows the last ')' */
            char *open_p = strchr(stat, '('), *close_p = strrchr(stat, ')');
            if (open_p && close_p && close_p[1] == ' ')
                dprintf(fd, "  tid %s %.*s state %c\n", de->d_name, (int)(close_p - open_p + 1), open_p, close_p[2]);
        }
        if (t) fclose(t);
    }
    if (dir) closedir(dir);
    if (w->describe) {
        dprintf(fd, "devices:\n");
        w->describe(w->user, fd);
    }
    dprintf(fd, "last log lines:\n");
    st_crash_write_log(fd);
}

static void *run(void *arg) {
    st_watchdog *w = arg;
    uint64_t last = atomic_load(&w->progress), since = st_now_ns();
    while (!atomic_load(&w->stop)) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
        uint64_t p = atomic_load(&w->progress), now = st_now_ns();
        if (p != last || !atomic_load(&w->busy)) {
            last = p;
            since = now;
            continue;
        }
        double idle = (double)(now - since) / 1e9;
        if (idle < w->stall_s) continue;
        char path[600];
        snprintf(path, sizeof path, "%s/strata-stall-%d.txt", w->dir, (int)getpid());
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        write_report(w, 2, idle);
        if (fd >= 0) {
            write_report(w, fd, idle);
            close(fd);
            fprintf(stderr, "stall report written to %s\n", path);
        }
        _exit(ST_ENGINE_EXIT_STALL);
    }
    return NULL;
}

st_watchdog *st_watchdog_start(double stall_seconds, const char *dir, void (*describe)(void *, int), void *user) {
    st_watchdog *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->stall_s = stall_seconds > 0 ? stall_seconds : 60;
    snprintf(w->dir, sizeof w->dir, "%s", dir && *dir ? dir : "/tmp");
    w->describe = describe;
    w->user = user;
    if (pthread_create(&w->th, NULL, run, w)) {
        free(w);
        return NULL;
    }
    return w;
}

void st_watchdog_progress(st_watchdog *w) { atomic_fetch_add(&w->progress, 1); }
void st_watchdog_busy(st_watchdog *w, int busy) { atomic_store(&w->busy, busy); }

void st_watchdog_stop(st_watchdog *w) {
    if (!w) return;
    atomic_store(&w->stop, 1);
    pthread_join(w->th, NULL);
    free(w);
}
