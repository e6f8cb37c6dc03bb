/* SPDX-License-Identifier: Apache-2.0 */
/* The registry: runs the search, the CPU variant choice, loads every candidate, and picks one
 * module per physical device. See backend_registry.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/registry_internal.h"
#include "backend/variant.h"

void st_backend_text(char *out, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

const char *st_backend_stage_name(st_backend_stage stage) {
    static const char *n[] = {"found", "loaded", "entry", "abi", "probe", "devices"};
    return (unsigned)stage < 6 ? n[stage] : "unknown";
}

const char *st_backend_status_name(uint32_t status) {
    static const char *n[] = {"OK", "NO_DRIVER", "NO_DEVICE", "ARCH", "ABI", "OOM",
                              "DEVICE_LOST", "TIMEOUT", "UNSUPPORTED", "INVALID", "IO", "INTERNAL"};
    return status < sizeof n / sizeof n[0] ? n[status] : "UNKNOWN";
}

/* Apply $STRATA_CPU_DISABLE (comma-separated feature names) to the detected features. */
static void cpu_mask_from_env(st_cpu_features *f) {
    const char *e = getenv("STRATA_CPU_DISABLE");
    if (!e || !*e) return;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", e);
    for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        uint32_t bit = st_cpu_feature_by_name(tok);
        if (bit) f->flags &= ~bit;
        else st_backend_log(ST_LOG_WARN, "host", "STRATA_CPU_DISABLE: unknown feature '%s'", tok);
    }
}

/* Decide which cpu-backend variants to load, before any of them is opened. */
static void choose_cpu_variants(st_backend_registry *reg) {
    uint32_t idx[64], n = 0;
    const char *names[64];
    for (uint32_t i = 0; i < reg->n_mods && n < 64; i++) {
        st_backend_module *m = reg->mods[i];
        if (strcmp(m->backend, "cpu") || m->reason[0]) continue;
        idx[n] = i;
        names[n] = m->variant;
        n++;
    }
    if (!n) return;
    st_variant_choice ch[64];
    st_cpu_variants_choose(names, n, &reg->cpu, ch);
    for (uint32_t k = 0; k < n; k++) {
        st_backend_module *m = reg->mods[idx[k]];
        if (ch[k].action == ST_VARIANT_NO_CPU || ch[k].action == ST_VARIANT_NOT_BEST)
            snprintf(m->reason, sizeof m->reason, "%s", ch[k].reason);
    }
}

static int uuid_is_zero(const uint8_t *u) {
    for (int i = 0; i < 16; i++)
        if (u[i]) return 0;
    return 1;
}

/* Nonzero when module a's device should win over module b's for the same physical device;
 * writes why into `why`. */
static int better(const st_backend_module *a, const st_backend_module *b, char *why, size_t wlen) {
    if (a->abi_minor != b->abi_minor) {
        snprintf(why, wlen, "newer ABI minor (%u.%u vs %u.%u)", a->abi_major, a->abi_minor, b->abi_major, b->abi_minor);
        return a->abi_minor > b->abi_minor;
    }
    if (a->has_score && b->has_score && a->score != b->score) {
        snprintf(why, wlen, "higher st_backend_score (%d vs %d)", a->score, b->score);
        return a->score > b->score;
    }
    int v = strverscmp(a->version, b->version);
    if (v != 0) {
        snprintf(why, wlen, "newer module version (%s vs %s)", a->version, b->version);
        return v > 0;
    }
    snprintf(why, wlen, "equal ABI and version; found earlier in the search order");
    return 0; /* a is later in search order when called */
}

static void choose_devices(st_backend_registry *reg) {
    uint32_t cap = 0;
    for (uint32_t i = 0; i < reg->n_mods; i++)
        if (reg->mods[i]->stage == ST_STAGE_DEVICES) cap += reg->mods[i]->n_devices;
    reg->devs = cap ? calloc(cap, sizeof *reg->devs) : NULL;
    if (cap && !reg->devs) return;
    reg->n_devs = 0;
    for (uint32_t i = 0; i < reg->n_mods; i++) {
        st_backend_module *m = reg->mods[i];
        if (m->stage != ST_STAGE_DEVICES) continue;
        for (uint32_t d = 0; d < m->n_devices; d++) {
            st_backend_device_entry *e = &m->devices[d];
            if (!e->props_ok || !e->props.usable) continue;
            uint32_t dup = reg->n_devs;
            if (!uuid_is_zero(e->props.uuid))
                for (uint32_t k = 0; k < reg->n_devs; k++)
                    if (!memcmp(reg->devs[k].props->uuid, e->props.uuid, 16)) dup = k;
            if (dup == reg->n_devs) {
                reg->devs[reg->n_devs].module = m;
                reg->devs[reg->n_devs].index = d;
                reg->devs[reg->n_devs].props = &e->props;
                reg->n_devs++;
                e->chosen = 1;
                continue;
            }
            st_backend_device *old = &reg->devs[dup];
            st_backend_device_entry *oe = &old->module->devices[old->index];
            char why[200];
            if (better(m, old->module, why, sizeof why)) {
                oe->chosen = 0;
                st_backend_text(oe->note, sizeof oe->note, "same device served by %s (%s): %s", m->file, m->name, why);
                st_backend_text(e->note, sizeof e->note, "chosen over %s: %s", old->module->file, why);
                old->module = m;
                old->index = d;
                old->props = &e->props;
                e->chosen = 1;
            } else {
                st_backend_text(e->note, sizeof e->note, "same device served by %s (%s): %s", old->module->file,
                         old->module->name, why);
                if (!oe->note[0]) st_backend_text(oe->note, sizeof oe->note, "chosen over %s: %s", m->file, why);
            }
        }
    }
    /* Modules left without a chosen device are unloaded: two modules never drive one device. */
    for (uint32_t i = 0; i < reg->n_mods; i++) {
        st_backend_module *m = reg->mods[i];
        if (m->stage != ST_STAGE_DEVICES) continue;
        uint32_t n = 0;
        for (uint32_t d = 0; d < m->n_devices; d++) n += m->devices[d].chosen;
        m->usable = n > 0;
        if (!n) {
            snprintf(m->reason, sizeof m->reason, "not used: every device it serves is served by another module");
            st_backend_module_unload(m);
        }
    }
}

st_backend_registry *st_backend_registry_open(const st_backend_options *opt) {
    st_backend_registry *reg = calloc(1, sizeof *reg);
    if (!reg) return NULL;
    if (opt && opt->cpu) reg->cpu = *opt->cpu;
    else {
        st_cpu_features_detect(&reg->cpu);
        cpu_mask_from_env(&reg->cpu);
    }
    if (st_backend_search_run(reg, opt) != 0) {
        st_backend_registry_close(reg);
        return NULL;
    }
    choose_cpu_variants(reg);
    reg->load_order = reg->n_mods ? calloc(reg->n_mods, sizeof *reg->load_order) : NULL;
    if (reg->n_mods && !reg->load_order) {
        st_backend_registry_close(reg);
        return NULL;
    }
    for (uint32_t i = 0; i < reg->n_mods; i++) {
        st_backend_module *m = reg->mods[i];
        if (m->reason[0]) continue; /* decided before loading: duplicate, shadowed, CPU variant */
        /* unknown cpu variants: only the module's own st_backend_score() may vouch for them */
        char why[8];
        int need_score = !strcmp(m->backend, "cpu") && st_cpu_variant_check(m->variant, &reg->cpu, why, sizeof why) < 0;
        st_backend_module_load(reg, m, need_score);
        if (m->dl) reg->load_order[reg->n_loaded++] = i;
        st_backend_log(ST_LOG_INFO, "host", "%s: stage %s%s%s", m->path, st_backend_stage_name(m->stage),
                       m->reason[0] ? ": " : "", m->reason);
    }
    choose_devices(reg);
    return reg;
}

void st_backend_registry_close(st_backend_registry *reg) {
    if (!reg) return;
    for (uint32_t k = reg->n_loaded; k-- > 0;) st_backend_module_unload(reg->mods[reg->load_order[k]]);
    for (uint32_t i = 0; i < reg->n_mods; i++) {
        st_backend_module_unload(reg->mods[i]);
        free(reg->mods[i]->devices);
        free(reg->mods[i]->config);
        free(reg->mods[i]);
    }
    free(reg->mods);
    free(reg->steps);
    free(reg->devs);
    free(reg->load_order);
    free(reg);
}

uint32_t st_backend_registry_n_steps(const st_backend_registry *reg) { return reg ? reg->n_steps : 0; }

const st_backend_search_step *st_backend_registry_step(const st_backend_registry *reg, uint32_t i) {
    return reg && i < reg->n_steps ? &reg->steps[i] : NULL;
}

uint32_t st_backend_registry_n_modules(const st_backend_registry *reg) { return reg ? reg->n_mods : 0; }

const st_backend_module *st_backend_registry_module(const st_backend_registry *reg, uint32_t i) {
    return reg && i < reg->n_mods ? reg->mods[i] : NULL;
}

const st_backend_module *st_backend_registry_find(const st_backend_registry *reg, const char *name) {
    if (!reg || !name) return NULL;
    for (uint32_t i = 0; i < reg->n_mods; i++) {
        const st_backend_module *m = reg->mods[i];
        if (m->usable && (!strcmp(m->backend, name) || !strcmp(m->name, name))) return m;
    }
    return NULL;
}

uint32_t st_backend_registry_n_devices(const st_backend_registry *reg) { return reg ? reg->n_devs : 0; }

const st_backend_device *st_backend_registry_device(const st_backend_registry *reg, uint32_t i) {
    return reg && i < reg->n_devs ? &reg->devs[i] : NULL;
}

const st_cpu_features *st_backend_registry_cpu(const st_backend_registry *reg) { return reg ? &reg->cpu : NULL; }
