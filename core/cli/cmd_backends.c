/* SPDX-License-Identifier: Apache-2.0 */
/* strata backends [--json] [--threads N]: every candidate module file, how far it got and
 * why it stopped, and the devices it serves. Exit 0 when a device is usable, 1 when none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_registry.h"
#include "backend/json_writer.h"
#include "cli/commands.h"

static const char *k_cap_names[] = {"F16", "BF16", "PEER", "HOST_REGISTER", "GRAPHS", "UNIFIED", "ASYNC"};
#define N_CAPS (sizeof k_cap_names / sizeof k_cap_names[0])

static void caps_text(uint64_t caps, char *out, size_t n) {
    out[0] = 0;
    size_t len = 0;
    for (size_t i = 0; i < N_CAPS; i++)
        if (caps & (1ull << i)) len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s", len ? "," : "", k_cap_names[i]);
    if (!out[0]) snprintf(out, n, "-");
}

static void uuid_text(const uint8_t *u, char *out) {
    for (int i = 0; i < 16; i++) sprintf(out + 2 * i, "%02x", u[i]);
}

static void size_text(uint64_t b, char *out, size_t n) {
    if (b >= (1ull << 30)) snprintf(out, n, "%.2f GiB", b / 1073741824.0);
    else if (b >= (1ull << 20)) snprintf(out, n, "%.1f MiB", b / 1048576.0);
    else snprintf(out, n, "%llu B", (unsigned long long)b);
}

static const char *arch_text(uint32_t a) {
    return a == ST_CPU_ARCH_X86_64 ? "x86-64" : a == ST_CPU_ARCH_PPC64 ? "ppc64" : "other";
}

static void print_cpu(FILE *f, const st_cpu_features *c) {
    fprintf(f, "CPU: %s", arch_text(c->arch));
    for (int b = 0; b < 32; b++)
        if ((c->flags >> b) & 1u) {
            const char *n = st_cpu_feature_name(1u << b);
            if (n) fprintf(f, ", %s", n);
        }
    fputc('\n', f);
}

static void print_table(const st_backend_registry *reg) {
    printf("Search order (no current-directory search):\n");
    for (uint32_t i = 0; i < st_backend_registry_n_steps(reg); i++) {
        const st_backend_search_step *s = st_backend_registry_step(reg, i);
        printf("  %u. %-22s %s%s%s\n", i + 1, s->what, s->path, s->path[0] ? ": " : "", s->result);
    }
    print_cpu(stdout, st_backend_registry_cpu(reg));
    uint32_t nm = st_backend_registry_n_modules(reg);
    printf("\nModules (%u candidate file%s):\n", nm, nm == 1 ? "" : "s");
    printf("  %-8s %-8s %s\n      %s\n", "STAGE", "VARIANT", "PATH", "REASON / DEVICES");
    for (uint32_t i = 0; i < nm; i++) {
        const st_backend_module *m = st_backend_registry_module(reg, i);
        char reason[ST_BACKEND_TEXT_MAX + 128];
        if (m->usable)
            snprintf(reason, sizeof reason, "ok: %s %s, ABI %u.%u, %.1f ms", m->name, m->version, m->abi_major,
                     m->abi_minor, m->load_ms);
        else
            snprintf(reason, sizeof reason, "%s", m->reason);
        printf("  %-8s %-8s %s\n      %s\n", st_backend_stage_name(m->stage), m->variant[0] ? m->variant : "-",
               m->path, reason);
        if (m->stage >= ST_STAGE_PROBE && m->probe.build_archs[0])
            printf("      built for: %s\n", m->probe.build_archs);
        for (uint32_t d = 0; d < m->n_devices; d++) {
            const st_backend_device_entry *e = &m->devices[d];
            if (!e->props_ok) {
                printf("      device %u: %s\n", e->index, e->note);
                continue;
            }
            const st_device_props *p = &e->props;
            char tot[32], fr[32], caps[128];
            size_text(p->mem_total, tot, sizeof tot);
            size_text(p->mem_free, fr, sizeof fr);
            caps_text(p->caps, caps, sizeof caps);
            printf("      device %u: %s [%s, %s] memory %s total, %s free; caps %s; %s%s%s\n", e->index, p->name,
                   p->vendor, p->arch, tot, fr, caps, e->chosen ? "in use" : "not used",
                   e->note[0] ? ": " : "", e->note);
        }
    }
    uint32_t nd = st_backend_registry_n_devices(reg);
    printf("\nUsable devices: %u\n", nd);
    for (uint32_t i = 0; i < nd; i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        char tot[32], fr[32];
        size_text(d->props->mem_total, tot, sizeof tot);
        size_text(d->props->mem_free, fr, sizeof fr);
        printf("  %u. %s:%u %s (%s total, %s free)\n", i, d->module->backend, d->index, d->props->name, tot, fr);
    }
}

static void json_device(st_json_writer *w, const st_backend_device_entry *e) {
    const st_device_props *p = &e->props;
    char uuid[33];
    uuid_text(p->uuid, uuid);
    st_json_begin_object(w);
    st_json_key(w, "index"); st_json_uint(w, e->index);
    st_json_key(w, "props_ok"); st_json_bool(w, e->props_ok);
    st_json_key(w, "name"); st_json_string(w, p->name);
    st_json_key(w, "vendor"); st_json_string(w, p->vendor);
    st_json_key(w, "arch"); st_json_string(w, p->arch);
    st_json_key(w, "uuid"); st_json_string(w, uuid);
    st_json_key(w, "domain"); st_json_uint(w, p->domain);
    st_json_key(w, "usable"); st_json_bool(w, p->usable != 0);
    st_json_key(w, "chosen"); st_json_bool(w, e->chosen);
    st_json_key(w, "reason"); st_json_string(w, p->reason);
    st_json_key(w, "note"); st_json_string(w, e->note);
    st_json_key(w, "mem_total"); st_json_uint(w, p->mem_total);
    st_json_key(w, "mem_free"); st_json_uint(w, p->mem_free);
    st_json_key(w, "mem_used_self"); st_json_uint(w, p->mem_used_self);
    st_json_key(w, "max_alloc"); st_json_uint(w, p->max_alloc);
    st_json_key(w, "caps");
    st_json_begin_array(w);
    for (size_t i = 0; i < N_CAPS; i++)
        if (p->caps & (1ull << i)) st_json_string(w, k_cap_names[i]);
    st_json_end_array(w);
    st_json_key(w, "compute_major"); st_json_uint(w, p->compute_major);
    st_json_key(w, "compute_minor"); st_json_uint(w, p->compute_minor);
    st_json_key(w, "n_cores"); st_json_uint(w, p->n_cores);
    st_json_key(w, "mem_bw_gbs"); st_json_double(w, p->mem_bw_gbs);
    st_json_end_object(w);
}

static void print_json(const st_backend_registry *reg) {
    st_json_writer w;
    st_json_init(&w, stdout);
    st_json_begin_object(&w);
    st_json_key(&w, "abi");
    st_json_begin_object(&w);
    st_json_key(&w, "major"); st_json_uint(&w, ST_ABI_MAJOR);
    st_json_key(&w, "minor"); st_json_uint(&w, ST_ABI_MINOR);
    st_json_end_object(&w);
    const st_cpu_features *c = st_backend_registry_cpu(reg);
    st_json_key(&w, "cpu");
    st_json_begin_object(&w);
    st_json_key(&w, "arch"); st_json_string(&w, arch_text(c->arch));
    st_json_key(&w, "features");
    st_json_begin_array(&w);
    for (int b = 0; b < 32; b++)
        if (((c->flags >> b) & 1u) && st_cpu_feature_name(1u << b)) st_json_string(&w, st_cpu_feature_name(1u << b));
    st_json_end_array(&w);
    st_json_end_object(&w);
    st_json_key(&w, "search");
    st_json_begin_array(&w);
    for (uint32_t i = 0; i < st_backend_registry_n_steps(reg); i++) {
        const st_backend_search_step *s = st_backend_registry_step(reg, i);
        st_json_begin_object(&w);
        st_json_key(&w, "what"); st_json_string(&w, s->what);
        st_json_key(&w, "path"); st_json_string(&w, s->path);
        st_json_key(&w, "result"); st_json_string(&w, s->result);
        st_json_key(&w, "found"); st_json_uint(&w, s->n_found);
        st_json_end_object(&w);
    }
    st_json_end_array(&w);
    st_json_key(&w, "modules");
    st_json_begin_array(&w);
    for (uint32_t i = 0; i < st_backend_registry_n_modules(reg); i++) {
        const st_backend_module *m = st_backend_registry_module(reg, i);
        st_json_begin_object(&w);
        st_json_key(&w, "path"); st_json_string(&w, m->path);
        st_json_key(&w, "file"); st_json_string(&w, m->file);
        st_json_key(&w, "backend"); st_json_string(&w, m->backend);
        st_json_key(&w, "variant"); st_json_string(&w, m->variant);
        st_json_key(&w, "search_step"); st_json_uint(&w, m->step);
        st_json_key(&w, "stage"); st_json_string(&w, st_backend_stage_name(m->stage));
        st_json_key(&w, "usable"); st_json_bool(&w, m->usable);
        st_json_key(&w, "reason"); st_json_string(&w, m->reason);
        st_json_key(&w, "name"); st_json_string(&w, m->name);
        st_json_key(&w, "version"); st_json_string(&w, m->version);
        st_json_key(&w, "abi_major"); st_json_uint(&w, m->abi_major);
        st_json_key(&w, "abi_minor"); st_json_uint(&w, m->abi_minor);
        st_json_key(&w, "score");
        if (m->has_score) st_json_int(&w, m->score);
        else st_json_null(&w);
        st_json_key(&w, "load_ms"); st_json_double(&w, m->load_ms);
        st_json_key(&w, "probe");
        if (m->stage >= ST_STAGE_PROBE || (m->stage == ST_STAGE_ABI && m->probe.size)) {
            st_json_begin_object(&w);
            st_json_key(&w, "status"); st_json_string(&w, st_backend_status_name(m->probe.status));
            st_json_key(&w, "reason"); st_json_string(&w, m->probe.reason);
            st_json_key(&w, "build_archs"); st_json_string(&w, m->probe.build_archs);
            st_json_key(&w, "n_devices"); st_json_uint(&w, m->probe.n_devices);
            st_json_end_object(&w);
        } else {
            st_json_null(&w);
        }
        st_json_key(&w, "devices");
        st_json_begin_array(&w);
        for (uint32_t d = 0; d < m->n_devices; d++) json_device(&w, &m->devices[d]);
        st_json_end_array(&w);
        st_json_end_object(&w);
    }
    st_json_end_array(&w);
    st_json_key(&w, "devices");
    st_json_begin_array(&w);
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        st_json_begin_object(&w);
        st_json_key(&w, "backend"); st_json_string(&w, d->module->backend);
        st_json_key(&w, "path"); st_json_string(&w, d->module->path);
        st_json_key(&w, "index"); st_json_uint(&w, d->index);
        st_json_key(&w, "name"); st_json_string(&w, d->props->name);
        st_json_key(&w, "mem_total"); st_json_uint(&w, d->props->mem_total);
        st_json_key(&w, "mem_free"); st_json_uint(&w, d->props->mem_free);
        st_json_end_object(&w);
    }
    st_json_end_array(&w);
    st_json_key(&w, "usable_devices"); st_json_uint(&w, st_backend_registry_n_devices(reg));
    st_json_end_object(&w);
    st_json_finish(&w);
}

static int usage(FILE *f) {
    fprintf(f, "usage: strata backends [--json] [--threads N]\n"
               "  Lists every backend module file found (STRATA_BACKEND_PATH, then <exe>/../lib/strata/backends),\n"
               "  the stage each reached (found, loaded, entry, abi, probe, devices), why it stopped, and its devices.\n"
               "  --json       one JSON document instead of the table\n"
               "  --threads N  worker threads offered to CPU-like modules (0 = their default)\n"
               "  Exit status: 0 when at least one device is usable, 1 when none, 2 on bad arguments.\n");
    return f == stderr ? 2 : 0;
}

int st_cmd_backends(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            char *end;
            errno = 0;
            long v = strtol(argv[++i], &end, 10);
            if (errno || *end || v < 0 || v > 4096) {
                fprintf(stderr, "strata backends: --threads wants a number 0..4096, got '%s'\n", argv[i]);
                return 2;
            }
            st_backend_set_threads((unsigned)v);
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            return usage(stdout);
        } else {
            fprintf(stderr, "strata backends: unknown argument '%s'\n", argv[i]);
            return usage(stderr);
        }
    }
    st_backend_registry *reg = st_backend_registry_open(NULL);
    if (!reg) {
        fprintf(stderr, "strata backends: out of memory\n");
        return 1;
    }
    if (json) print_json(reg);
    else print_table(reg);
    fflush(stdout);
    int rc = st_backend_registry_n_devices(reg) > 0 ? 0 : 1;
    st_backend_registry_close(reg);
    return rc;
}
