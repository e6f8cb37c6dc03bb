/* SPDX-License-Identifier: Apache-2.0 */
/* strata conformance: run the conformance cases on backend devices (core/conformance). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_registry.h"
#include "cli/commands.h"
#include "conformance/conformance.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: strata conformance [--backend NAME] [--device N] [--filter OP] [--seed S]\n"
            "                          [--quick] [--verbose] [--threads N]\n"
            "Runs every op a device claims, for every weight format and edge-case shapes, against\n"
            "the scalar reference. Without --backend, every usable device of every module.\n"
            "Exit status: 0 when every case passed, 1 on a failure, 2 when no device matched.\n");
    return f == stdout ? 0 : 2;
}

int st_cmd_conformance(int argc, char **argv) {
    const char *backend = NULL;
    int device = -1;
    st_conf_options opt = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--backend") && more) backend = argv[++i];
        else if (!strcmp(a, "--device") && more) device = atoi(argv[++i]);
        else if (!strcmp(a, "--filter") && more) opt.filter = argv[++i];
        else if (!strcmp(a, "--seed") && more) opt.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--threads") && more) st_backend_set_threads((unsigned)atoi(argv[++i]));
        else if (!strcmp(a, "--quick")) opt.quick = 1;
        else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) opt.verbose = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout);
        else {
            fprintf(stderr, "strata conformance: unknown option '%s'\n", a);
            return usage(stderr);
        }
    }
    st_backend_registry *reg = st_backend_registry_open(NULL);
    if (!reg) {
        fprintf(stderr, "strata conformance: out of memory\n");
        return 1;
    }
    st_conf_result total = {0};
    int ran = 0, broken = 0;
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        const st_backend_module *m = d->module;
        if (backend && strcmp(m->backend, backend) && strcmp(m->name, backend)) continue;
        if (device >= 0 && (uint32_t)device != d->index) continue;
        printf("== %s device %u: %s (%s, %s)\n", m->file, d->index, d->props->name, d->props->vendor,
               d->props->arch);
        st_conf_result r = {0};
        st_status s = st_conf_run(m->api, d->index, &opt, &r);
        if (s != ST_OK) broken = 1;
        printf("-- %s device %u: %d passed, %d failed, %d not claimed\n", m->file, d->index, r.passed, r.failed,
               r.skipped);
        total.passed += r.passed;
        total.failed += r.failed;
        total.skipped += r.skipped;
        ran++;
    }
    int rc = 0;
    if (!ran) {
        fprintf(stderr, "strata conformance: no usable device%s%s%s (see `strata backends`)\n",
                backend ? " of backend '" : "", backend ? backend : "", backend ? "'" : "");
        rc = 2;
    } else {
        printf("%d passed, %d failed\n", total.passed, total.failed);
        rc = total.failed || broken ? 1 : 0;
    }
    st_backend_registry_close(reg);
    return rc;
}
