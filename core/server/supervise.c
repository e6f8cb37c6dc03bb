/* SPDX-License-Identifier: Apache-2.0 */
/* Supervision of the engine child: start it, read its frames, watch its heartbeats, and on
 * its death fail every request, describe what happened and start it again after a growing
 * back-off. A start-up failure that will repeat ends the server (first engine) or stops the
 * restarts (later ones) instead of looping.
 *
 * The child's pid is signalled only while it has not been reaped: the reader waits for the
 * death without reaping (WNOWAIT), clears f->pid under f->mu, then reaps. Every kill() is made
 * under f->mu with f->pid > 0, so no signal can reach a pid the system may have reused. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "platform/platform.h"
#include "server/front.h"

/* Engine stderr: echo with a prefix and keep the last lines for death reports. */
static void *log_reader(void *arg) {
    st_front *f = ((void **)arg)[0];
    int fd = (int)(intptr_t)((void **)arg)[1];
    free(arg);
    FILE *in = fdopen(fd, "r");
    char line[1024];
    int in_report = 0;
    while (in && fgets(line, sizeof line, in)) {
        size_t l = strlen(line);
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r')) line[--l] = 0;
        fprintf(stderr, "engine: %s\n", line);
        /* a crash or stall report's body is in its file: keep the ring for ordinary log lines */
        if (!strncmp(line, "strata crash report", 19) || !strncmp(line, "strata stall report", 19)) in_report = 1;
        if (!in_report) st_front_ring_add(f, line);
        if (strstr(line, "report written to ")) in_report = 0;
    }
    if (in) fclose(in);
    else close(fd);
    return NULL;
}

/* The engine's command line (pointers into f->cfg and the caller's buffers). */
static void engine_argv(st_front *f, const char **argv, char bufs[4][32]) {
    snprintf(bufs[0], 32, "%d", f->cfg.ctx);
    snprintf(bufs[1], 32, "%d", f->cfg.queue_max);
    snprintf(bufs[2], 32, "%d", f->cfg.parallel);
    snprintf(bufs[3], 32, "%g", f->cfg.stall_timeout);
    const char *fixed[] = {"strata", "engine", "--fd", "3", "-m", f->cfg.model_path, "--parallel", bufs[2],
                           "--ctx", bufs[0], "--queue", bufs[1], "--stall-timeout", bufs[3], "--report-dir",
                           st_front_report_dir(f)};
    int a = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) argv[a++] = fixed[i];
    for (int i = 0; f->cfg.engine_args && f->cfg.engine_args[i] && a < 62; i++) argv[a++] = f->cfg.engine_args[i];
    argv[a] = NULL;
}

int st_engine_spawn(st_front *f) {
    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return -1;
    if (pipe2(ep, O_CLOEXEC)) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    const char *argv[64];
    char bufs[4][32];
    engine_argv(f, argv, bufs);
    const char *exe = f->cfg.exe ? f->cfg.exe : "/proc/self/exe";
    pthread_mutex_lock(&f->send_mu); /* f->fd changes under both locks (front.h) */
    pthread_mutex_lock(&f->mu);
    f->log_head = 0; /* "last log lines" are this engine's */
    pid_t pid = f->stopping ? -1 : fork();
    int err = errno;
    if (pid == 0) {
        dup2(sv[1], 3);
        dup2(ep[1], 2);
        int fl = fcntl(3, F_GETFD);
        fcntl(3, F_SETFD, fl & ~FD_CLOEXEC);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    if (pid > 0) {
        f->fd = sv[0];
        f->pid = pid;
        f->state = ST_ENGINE_STARTING;
        f->hb_killed = 0;
        f->last_frame_ns = f->spawn_ns = st_now_ns();
    }
    pthread_mutex_unlock(&f->mu);
    pthread_mutex_unlock(&f->send_mu);
    close(sv[1]);
    close(ep[1]);
    if (pid < 0) {
        close(sv[0]);
        close(ep[0]);
        errno = f->stopping ? ECANCELED : err;
        return -1;
    }
    void **arg = malloc(2 * sizeof(void *));
    if (arg) {
        arg[0] = f;
        arg[1] = (void *)(intptr_t)ep[0];
    }
    f->log_thread_ok = arg && pthread_create(&f->log_thread, NULL, log_reader, arg) == 0;
    if (!f->log_thread_ok) {
        free(arg);
        close(ep[0]);
    }
    return 0;
}

/* The "stage: " line of a report file, or "" (and path emptied when the file is absent). */
static void report_stage(char *path, char *stage, size_t n) {
    stage[0] = 0;
    FILE *r = path[0] ? fopen(path, "r") : NULL;
    if (!r) {
        path[0] = 0;
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, r))
        if (!strncmp(line, "stage: ", 7)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(stage, n, "%.255s", line + 7);
            break;
        }
    fclose(r);
}

/* Describe how the engine ended, with its report's path and stage when it wrote one. */
static void describe_death(st_front *f, pid_t pid, int wstatus, char *out, size_t n) {
    char what[400], path[700] = "", stage[256] = "", logs[600];
    const char *dir = st_front_report_dir(f);
    pthread_mutex_lock(&f->mu);
    int hb = f->hb_killed;
    if (hb) {
        snprintf(what, sizeof what, "stopped answering (%s) and was killed by the server", f->hb_what);
        snprintf(path, sizeof path, "%s", f->hb_report);
    }
    pthread_mutex_unlock(&f->mu);
    if (hb) {
    } else if (WIFSIGNALED(wstatus)) {
        int s = WTERMSIG(wstatus);
        snprintf(what, sizeof what, "was killed by signal %s (%d)", sigabbrev_np(s) ? sigabbrev_np(s) : "?", s);
        snprintf(path, sizeof path, "%s/strata-crash-%d.txt", dir, (int)pid);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == ST_ENGINE_EXIT_STALL) {
        snprintf(what, sizeof what, "stalled (no progress for %g s) and was stopped by its watchdog", f->cfg.stall_timeout);
        snprintf(path, sizeof path, "%s/strata-stall-%d.txt", dir, (int)pid);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == ST_ENGINE_EXIT_DEVICE) {
        snprintf(what, sizeof what, "stopped after a failed forward on its device (exit code %d)", ST_ENGINE_EXIT_DEVICE);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == ST_ENGINE_EXIT_START) {
        snprintf(what, sizeof what, "could not start (exit code %d)", ST_ENGINE_EXIT_START);
    } else {
        snprintf(what, sizeof what, "exited with code %d", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
        snprintf(path, sizeof path, "%s/strata-crash-%d.txt", dir, (int)pid);
    }
    report_stage(path, stage, sizeof stage);
    st_front_last_log(f, logs, sizeof logs);
    snprintf(out, n, "the engine %s%s%s%s%s%s%s", what, stage[0] ? " during " : "", stage,
             path[0] ? "; report: " : "", path, logs[0] ? "; last log: " : "", logs);
}

/* Waits for the engine to end, then reaps it (see the top of the file). */
static int reap_engine(st_front *f) {
    pthread_mutex_lock(&f->mu);
    pid_t pid = f->pid;
    pthread_mutex_unlock(&f->mu);
    siginfo_t si;
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    pthread_mutex_lock(&f->mu);
    f->pid = 0;
    pthread_mutex_unlock(&f->mu);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    return wstatus;
}

/* Waits `delay` seconds or until the server stops; returns nonzero when it stops. */
static int backoff_wait(st_front *f, double delay) {
    pthread_mutex_lock(&f->mu);
    f->retry_at_ns = st_now_ns() + (uint64_t)(delay * 1e9);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (uint64_t)(delay * 1e9);
    ts.tv_sec = (time_t)(end / 1000000000ull);
    ts.tv_nsec = (long)(end % 1000000000ull);
    while (!f->stopping)
        if (pthread_cond_timedwait(&f->cv, &f->mu, &ts)) break;
    int stopping = f->stopping;
    f->retry_at_ns = 0;
    pthread_mutex_unlock(&f->mu);
    return stopping;
}

/* Decides what follows a death: 0 restart, 1 stop restarting (state STOPPED, reason set),
 * 2 the server must exit (f->fatal set). Called with f->mu held. */
static int restart_verdict(st_front *f, int wstatus, int was_ready, const char *why, const char *sig) {
    if (was_ready) {
        f->same_fails = 0;
        f->fail_sig[0] = 0;
        return 0;
    }
    int start_exit = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == ST_ENGINE_EXIT_START;
    if (start_exit && !f->ever_ready) {
        f->fatal = 1;
        snprintf(f->fatal_msg, sizeof f->fatal_msg, "%.1000s", why);
        return 2;
    }
    f->same_fails = strcmp(sig, f->fail_sig) ? 1 : f->same_fails + 1;
    snprintf(f->fail_sig, sizeof f->fail_sig, "%s", sig);
    if (f->same_fails < f->cfg.restart_limit) return 0;
    f->state = ST_ENGINE_STOPPED;
    snprintf(f->state_reason, sizeof f->state_reason,
             "the engine failed to start %d times in a row the same way; not restarting it "
             "(fix the cause and restart the server): %.1000s",
             f->same_fails, why);
    return 1;
}

/* The engine is gone: fail its requests, decide, wait the back-off. Returns nonzero when the
 * reader must end (stopping, no more restarts, fatal). */
static int on_engine_death(st_front *f) {
    pthread_mutex_lock(&f->mu);
    pid_t pid = f->pid;
    int was_ready = f->state == ST_ENGINE_READY;
    pthread_mutex_unlock(&f->mu);
    int wstatus = reap_engine(f);
    /* its stderr ends with it: read the last lines before describing the death */
    if (f->log_thread_ok) pthread_join(f->log_thread, NULL);
    f->log_thread_ok = 0;
    char why[1400], sig[256], last[256];
    describe_death(f, pid, wstatus, why, sizeof why);
    pthread_mutex_lock(&f->send_mu); /* no sender holds the old fd while it is closed */
    pthread_mutex_lock(&f->mu);
    snprintf(last, sizeof last, "%s", f->log_head ? f->log_ring[(f->log_head - 1) % ST_LOG_RING] : "");
    snprintf(sig, sizeof sig, "%d|%.200s", wstatus, last);
    close(f->fd);
    f->fd = -1;
    pthread_mutex_unlock(&f->send_mu);
    int stopping = f->stopping, verdict = stopping ? 1 : restart_verdict(f, wstatus, was_ready, why, sig);
    st_req *list = f->reqs;
    f->reqs = NULL;
    if (!stopping && verdict == 0) {
        f->state = ST_ENGINE_RESTARTING;
        snprintf(f->state_reason, sizeof f->state_reason, "restarting: %.490s", why);
        f->m_restarts++;
        f->deaths = was_ready ? 1 : f->deaths + 1;
    }
    pthread_cond_broadcast(&f->cv);
    int deaths = f->deaths;
    pthread_mutex_unlock(&f->mu);
    if (!stopping)
        fprintf(stderr, "strata serve: ERROR %s; %s\n", why,
                verdict == 0 ? "restarting it" : verdict == 1 ? "not restarting it again" : "the server exits");
    for (st_req *n; list; list = n) {
        n = list->next;
        st_req_fail(list, 503, "engine_died", why);
        st_req_unref(list);
    }
    if (stopping || verdict) return 1;
    /* wait before restarting: twice as long after each death before an engine got ready */
    double delay = f->cfg.restart_delay;
    for (int i = 1; i < deaths && delay < 300; i++) delay *= 2;
    if (delay > 300) delay = 300;
    return backoff_wait(f, delay);
}

static void on_ready(st_front *f, const st_msg_ready *m) {
    pthread_mutex_lock(&f->mu);
    f->ready = *m;
    memset(&f->stats, 0, sizeof f->stats); /* a new engine: its figures start at 0 */
    f->state = ST_ENGINE_READY;
    f->state_reason[0] = 0;
    f->ever_ready = 1;
    f->deaths = 0;
    f->same_fails = 0;
    f->fail_sig[0] = 0;
    f->load_s = (double)(st_now_ns() - f->spawn_ns) / 1e9;
    pthread_cond_broadcast(&f->cv);
    pid_t pid = f->pid;
    pthread_mutex_unlock(&f->mu);
    fprintf(stderr, "strata serve: engine (pid %d) ready on %s: %d slots x %d positions\n", (int)pid, m->device,
            m->n_slots, m->n_ctx);
}

static void on_refused(st_front *f, const st_msg_refused *m) {
    pthread_mutex_lock(&f->mu);
    st_req *r = NULL;
    for (st_req **p = &f->reqs; *p; p = &(*p)->next)
        if ((*p)->id == m->id) {
            r = *p;
            *p = r->next;
            break;
        }
    pthread_mutex_unlock(&f->mu);
    if (!r) return;
    int q = !strncmp(m->msg, "queue full", 10), c = !strncmp(m->msg, "context_length", 14),
        t = !strncmp(m->msg, "invalid_token", 13);
    st_req_fail(r, q ? 429 : 400, q ? "rate_limit_exceeded" : c ? "context_length_exceeded" : t ? "invalid_token" : "invalid_request",
                m->msg);
    st_req_unref(r);
}

static void on_stats(st_front *f, const void *p, size_t len) {
    /* text after the record: the engine's plan and expert lines for /metrics */
    char *text = len > sizeof(st_msg_stats) ? strndup((const char *)p + sizeof(st_msg_stats), len - sizeof(st_msg_stats))
                                            : NULL;
    pthread_mutex_lock(&f->mu);
    free(f->stats_text);
    f->stats_text = text;
    f->stats = *(const st_msg_stats *)p;
    f->stats_seq++;
    f->stats_ns = st_now_ns();
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void *st_engine_reader(void *arg) {
    st_front *f = arg;
    for (;;) {
        uint32_t type;
        void *p;
        size_t len;
        if (st_msg_recv(f->fd, &type, &p, &len) == 0) {
            pthread_mutex_lock(&f->mu);
            f->last_frame_ns = st_now_ns(); /* every frame counts as a heartbeat */
            pthread_mutex_unlock(&f->mu);
            if (type == ST_MSG_EVENT && len >= sizeof(st_engine_event)) st_front_on_event(f, p, len);
            else if (type == ST_MSG_READY && len == sizeof(st_msg_ready)) on_ready(f, p);
            else if (type == ST_MSG_REFUSED && len == sizeof(st_msg_refused)) on_refused(f, p);
            else if (type == ST_MSG_STATS && len >= sizeof(st_msg_stats)) on_stats(f, p, len);
            free(p);
            continue;
        }
        if (on_engine_death(f)) break;
        if (st_engine_spawn(f)) {
            if (errno == ECANCELED) break;
            fprintf(stderr, "strata serve: cannot start the engine: %s\n", strerror(errno));
            pthread_mutex_lock(&f->mu);
            f->state = ST_ENGINE_STOPPED;
            snprintf(f->state_reason, sizeof f->state_reason, "the engine cannot be started: %s", strerror(errno));
            pthread_mutex_unlock(&f->mu);
            break;
        }
    }
    pthread_mutex_lock(&f->mu);
    f->reader_done = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* The state letter and name of a process from /proc (e.g. "T (stopped)"), or "?". */
static void proc_state(pid_t pid, char *out, size_t n) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    snprintf(out, n, "?");
    FILE *s = fopen(path, "r");
    if (!s) return;
    while (fgets(line, sizeof line, s))
        if (!strncmp(line, "State:", 6)) {
            const char *v = line + 6;
            while (*v == ' ' || *v == '\t') v++;
            snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
            break;
        }
    fclose(s);
}

/* The front's stall report: what it saw of an engine that stopped answering. */
static void write_hb_report(st_front *f, pid_t pid, const char *what, char *path, size_t n) {
    snprintf(path, n, "%s/strata-stall-%d.txt", st_front_report_dir(f), (int)pid);
    FILE *r = fopen(path, "w");
    if (!r) {
        fprintf(stderr, "strata serve: WARNING: cannot write the stall report %s\n", path);
        path[0] = 0;
        return;
    }
    char logs[600];
    st_front_last_log(f, logs, sizeof logs);
    fprintf(r, "strata stall report\nwritten by: the server (the engine itself did not answer)\nengine pid: %d\n"
               "seen: %s\nlimit: %g s (--stall-timeout)\nlast log lines: %s\n",
            (int)pid, what, f->cfg.stall_timeout, logs);
    fclose(r);
}

void st_engine_watch(st_front *f) {
    pthread_mutex_lock(&f->mu);
    pid_t pid = f->pid;
    double silent = (double)(st_now_ns() - f->last_frame_ns) / 1e9;
    int late = pid > 0 && !f->hb_killed && !f->stopping && silent > f->cfg.stall_timeout;
    pthread_mutex_unlock(&f->mu);
    if (!late) return;
    char state[64], what[256], path[512];
    proc_state(pid, state, sizeof state);
    snprintf(what, sizeof what, "no heartbeat for %.1f s, limit %g s; process state %s", silent, f->cfg.stall_timeout,
             state);
    write_hb_report(f, pid, what, path, sizeof path);
    pthread_mutex_lock(&f->mu);
    if (f->pid == pid && !f->hb_killed) {
        f->hb_killed = 1;
        snprintf(f->hb_what, sizeof f->hb_what, "%s", what);
        snprintf(f->hb_report, sizeof f->hb_report, "%s", path);
        kill(pid, SIGKILL); /* a stopped process dies of SIGKILL too */
    }
    pthread_mutex_unlock(&f->mu);
    fprintf(stderr, "strata serve: ERROR the engine (pid %d) stopped answering (%s); killed it\n", (int)pid, what);
}

/* Waits up to ms for the reader to end; returns nonzero when it did. */
static int wait_reader(st_front *f, long ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->mu);
    while (!f->reader_done)
        if (pthread_cond_timedwait(&f->cv, &f->mu, &ts)) break;
    int done = f->reader_done;
    pthread_mutex_unlock(&f->mu);
    return done;
}

void st_engine_shutdown(st_front *f, pthread_t reader) {
    pthread_mutex_lock(&f->mu);
    f->stopping = 1;
    pthread_cond_broadcast(&f->cv); /* ends a back-off */
    if (f->pid > 0) {
        kill(f->pid, SIGTERM);
        kill(f->pid, SIGCONT); /* a stopped engine cannot act on SIGTERM */
    }
    pthread_mutex_unlock(&f->mu);
    if (!wait_reader(f, 3000)) {
        pthread_mutex_lock(&f->mu);
        if (f->pid > 0) {
            fprintf(stderr, "strata serve: the engine (pid %d) did not end within 3 s of SIGTERM; killing it\n", (int)f->pid);
            kill(f->pid, SIGKILL);
        }
        pthread_mutex_unlock(&f->mu);
    }
    pthread_join(reader, NULL);
}

int st_front_retry_after(st_front *f) {
    pthread_mutex_lock(&f->mu);
    uint64_t now = st_now_ns();
    double load = f->load_s > 0 ? f->load_s : 1.0, left = 0;
    int state = f->state, stopping = f->stopping;
    if (state == ST_ENGINE_RESTARTING && f->retry_at_ns > now) left = (double)(f->retry_at_ns - now) / 1e9;
    if (state == ST_ENGINE_STARTING) {
        double since = (double)(now - f->spawn_ns) / 1e9;
        load = load > since ? load - since : 1.0;
    }
    pthread_mutex_unlock(&f->mu);
    if (state == ST_ENGINE_STOPPED || stopping) return 0;
    int s = (int)(left + load + 0.999);
    return s < 1 ? 1 : s;
}

int st_front_engine_up(st_front *f) {
    /* the engine sends a heartbeat every stall/5 s (0.05 .. 1 s): three missed ones and it is
     * not called up, well before the deadline that kills it */
    double iv = f->cfg.stall_timeout / 5, limit;
    iv = iv < 0.05 ? 0.05 : iv > 1.0 ? 1.0 : iv;
    limit = 3 * iv < f->cfg.stall_timeout ? 3 * iv : f->cfg.stall_timeout;
    pthread_mutex_lock(&f->mu);
    int up = f->state == ST_ENGINE_READY && (double)(st_now_ns() - f->last_frame_ns) / 1e9 <= limit;
    pthread_mutex_unlock(&f->mu);
    return up;
}
