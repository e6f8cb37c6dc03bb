/* SPDX-License-Identifier: Apache-2.0 */
/* strata --version: the release (project() version in CMake), the commit the build was
 * configured from, the backend ABI this executable speaks, and the backend modules it finds
 * (the same search and loader as `strata backends`). Exit 0 whatever the modules do. */
#include <stdio.h>
#include <string.h>

#include "backend/backend_registry.h"
#include "cli/build_info.h"
#include "cli/commands.h"

int st_cmd_version(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: strata --version\n"
                   "  Prints the version, the git commit of the build (\"unknown\" when built outside git),\n"
                   "  the backend ABI version, and every backend module file found, with how far it loaded.\n");
            return 0;
        }
        fprintf(stderr, "strata --version: unknown argument '%s'\n", argv[i]);
        return 2;
    }
    printf("strata %s\n", STRATA_VERSION_STRING);
    printf("commit: %s\n", STRATA_GIT_COMMIT_STRING);
    printf("backend ABI: %u.%u\n", (unsigned)ST_ABI_MAJOR, (unsigned)ST_ABI_MINOR);
    fflush(stdout);
    st_backend_registry *reg = st_backend_registry_open(NULL);
    if (!reg) {
        printf("modules: unknown (out of memory)\n");
        return 0;
    }
    uint32_t nm = st_backend_registry_n_modules(reg);
    printf("modules: %u found\n", nm);
    for (uint32_t i = 0; i < nm; i++) {
        const st_backend_module *m = st_backend_registry_module(reg, i);
        if (m->usable)
            printf("  %s: %s %s, ABI %u.%u, %s\n", m->file, m->name, m->version, m->abi_major, m->abi_minor,
                   m->path);
        else
            printf("  %s: not usable (%s: %s), %s\n", m->file, st_backend_stage_name(m->stage), m->reason, m->path);
    }
    if (nm == 0) {
        for (uint32_t i = 0; i < st_backend_registry_n_steps(reg); i++) {
            const st_backend_search_step *s = st_backend_registry_step(reg, i);
            printf("  searched %s %s: %s\n", s->what, s->path, s->result);
        }
    }
    st_backend_registry_close(reg);
    return 0;
}
