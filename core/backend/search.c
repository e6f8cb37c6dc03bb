/* SPDX-License-Identifier: Apache-2.0 */
/* Search order for module files: $STRATA_BACKEND_PATH, then <exe dir>/../lib/strata/backends.
 * No current-directory search. Every step is recorded with what it found. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/registry_internal.h"
#include "backend/variant.h"

static st_backend_search_step *add_step(st_backend_registry *reg, const char *what, const char *path) {
    if (reg->n_steps == reg->cap_steps) {
        uint32_t cap = reg->cap_steps ? reg->cap_steps * 2 : 8;
        st_backend_search_step *s = realloc(reg->steps, cap * sizeof *s);
        if (!s) return NULL;
        reg->steps = s;
        reg->cap_steps = cap;
    }
    st_backend_search_step *s = &reg->steps[reg->n_steps++];
    memset(s, 0, sizeof *s);
    snprintf(s->what, sizeof s->what, "%s", what);
    snprintf(s->path, sizeof s->path, "%s", path ? path : "");
    return s;
}

static int add_candidate(st_backend_registry *reg, const char *path, uint32_t step) {
    if (reg->n_mods == reg->cap_mods) {
        uint32_t cap = reg->cap_mods ? reg->cap_mods * 2 : 16;
        st_backend_module **a = realloc(reg->mods, cap * sizeof *a);
        if (!a) return -1;
        reg->mods = a;
        reg->cap_mods = cap;
    }
    st_backend_module *m = calloc(1, sizeof *m);
    if (!m) return -1;
    snprintf(m->path, sizeof m->path, "%s", path);
    const char *base = strrchr(path, '/');
    snprintf(m->file, sizeof m->file, "%s", base ? base + 1 : path);
    st_module_name_parse(m->file, m->backend, sizeof m->backend, m->variant, sizeof m->variant);
    m->step = step;
    m->stage = ST_STAGE_FOUND;
    /* Same file reached twice, or a file name already found earlier: the earlier one wins. */
    char real_new[PATH_MAX];
    int have_real = realpath(path, real_new) != NULL;
    for (uint32_t i = 0; i < reg->n_mods; i++) {
        const st_backend_module *o = reg->mods[i];
        char real_old[PATH_MAX];
        if (have_real && realpath(o->path, real_old) && !strcmp(real_old, real_new)) {
            st_backend_text(m->reason, sizeof m->reason, "skipped: same file as %s (found earlier)", o->path);
            break;
        }
        if (!strcmp(o->file, m->file)) {
            st_backend_text(m->reason, sizeof m->reason, "skipped: shadowed by %s (earlier in the search order)", o->path);
            break;
        }
    }
    reg->mods[reg->n_mods++] = m;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_module_name(const char *name) {
    size_t n = strlen(name);
    const size_t sl = strlen(ST_DL_SUFFIX);
    return n > 7 + sl && !strncmp(name, "strata-", 7) && !strcmp(name + n - sl, ST_DL_SUFFIX);
}

/* Look at one directory or file; fills the step's result. */
static int scan_entry(st_backend_registry *reg, uint32_t step_idx) {
    st_backend_search_step *st = &reg->steps[step_idx];
    char path[ST_BACKEND_PATH_MAX];
    snprintf(path, sizeof path, "%s", st->path);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode) && is_module_name(strrchr(path, '/') ? strrchr(path, '/') + 1 : path)) {
            /* a dangling link named like a module: report it as a candidate that cannot load */
            if (add_candidate(reg, path, step_idx)) return -1;
            st = &reg->steps[step_idx];
            st->n_found = 1;
            snprintf(st->result, sizeof st->result, "1 module file (a dangling link)");
            return 0;
        }
        snprintf(st->result, sizeof st->result, "%s", errno == ENOENT ? "not found" : strerror(errno));
        return 0;
    }
    if (!S_ISDIR(sb.st_mode)) {
        if (add_candidate(reg, path, step_idx)) return -1;
        st = &reg->steps[step_idx];
        st->n_found = 1;
        snprintf(st->result, sizeof st->result, "a module file");
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) {
        snprintf(st->result, sizeof st->result, "cannot read directory: %s", strerror(errno));
        return 0;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (!is_module_name(e->d_name)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) { rc = -1; break; }
            names = nn;
        }
        names[n] = strdup(e->d_name);
        if (!names[n]) { rc = -1; break; }
        n++;
    }
    closedir(d);
    if (rc == 0) {
        qsort(names, n, sizeof *names, cmp_str);
        for (size_t i = 0; i < n && rc == 0; i++) {
            char full[ST_BACKEND_PATH_MAX + 256];
            snprintf(full, sizeof full, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", names[i]);
            rc = add_candidate(reg, full, step_idx);
        }
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    st = &reg->steps[step_idx];
    st->n_found = (uint32_t)n;
    snprintf(st->result, sizeof st->result, "%zu module file%s (strata-*" ST_DL_SUFFIX ")", n, n == 1 ? "" : "s");
    return rc;
}

int st_backend_search_run(st_backend_registry *reg, const st_backend_options *opt) {
    const char *list = opt && opt->search_path ? opt->search_path : NULL;
    const char *what = opt && opt->search_path ? "search path (option)" : "STRATA_BACKEND_PATH";
    if (!list && !(opt && opt->ignore_env_path)) list = getenv("STRATA_BACKEND_PATH");
    if (!list || !*list) {
        st_backend_search_step *s = add_step(reg, what, "");
        if (!s) return -1;
        snprintf(s->result, sizeof s->result, "%s", opt && opt->ignore_env_path && !(opt->search_path) ? "ignored" : "not set");
    } else {
        const char *p = list;
        while (*p) {
            const char *colon = strchr(p, ST_PATH_LIST_SEP);
            size_t len = colon ? (size_t)(colon - p) : strlen(p);
            if (len > 0 && len < ST_BACKEND_PATH_MAX) {
                char entry[ST_BACKEND_PATH_MAX];
                memcpy(entry, p, len);
                entry[len] = 0;
                if (!add_step(reg, what, entry)) return -1;
                if (scan_entry(reg, reg->n_steps - 1)) return -1;
            }
            if (!colon) break;
            p = colon + 1;
        }
    }
    if (!(opt && opt->skip_exe_dir)) {
        char exe[ST_BACKEND_PATH_MAX];
        if (st_exe_dir(exe, sizeof exe - 64) != 0) {
            st_backend_search_step *s = add_step(reg, "executable-relative", "");
            if (!s) return -1;
            snprintf(s->result, sizeof s->result, "skipped: the executable's directory is unknown (/proc/self/exe)");
        } else {
            char dir[ST_BACKEND_PATH_MAX];
            st_backend_text(dir, sizeof dir, "%s/../lib/strata/backends", exe);
            char real[PATH_MAX];
            if (!add_step(reg, "executable-relative", realpath(dir, real) ? real : dir)) return -1;
            if (scan_entry(reg, reg->n_steps - 1)) return -1;
        }
    }
    return 0;
}
