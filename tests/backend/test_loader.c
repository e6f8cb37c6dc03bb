/* SPDX-License-Identifier: Apache-2.0 */
/* The registry against real module files: broken modules (no entry symbol, ABI major 2, an
 * absent dependency library, garbage bytes, a dangling link, an entry that fails, a NULL or
 * too small table), CPU variants chosen before dlopen, unknown variants and their score, two
 * modules serving one device, shadowed files, and the sim module loading beside all of them.
 * argv[1]: directory of the test modules; argv[2]: strata-sim.so. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend_registry.h"
#include "backend/variant.h"
#include "test_util.h"

static char g_tmp[256];
static char g_mark[320];

static int copy_file(const char *src, const char *dir, const char *name) {
    char dst[512];
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    FILE *in = fopen(src, "rb");
    if (!in) {
        printf("cannot open %s: %s\n", src, strerror(errno));
        return -1;
    }
    FILE *out = fopen(dst, "wb");
    if (!out) {
        fclose(in);
        return -1;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    return 0;
}

static const st_backend_module *by_file(const st_backend_registry *reg, const char *file) {
    for (uint32_t i = 0; i < st_backend_registry_n_modules(reg); i++) {
        const st_backend_module *m = st_backend_registry_module(reg, i);
        if (!strcmp(m->file, file)) return m;
    }
    printf("FAIL: module file %s not among the candidates\n", file);
    g_failures++;
    return NULL;
}

static int marked(const char *file) {
    FILE *fp = fopen(g_mark, "r");
    if (!fp) return 0;
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, fp))
        if (strstr(line, file)) found = 1;
    fclose(fp);
    return found;
}

static void setup(const char *mods, const char *sim) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/strata-loader-XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(g_mark, sizeof g_mark, "%s/loaded.txt", g_tmp);
    setenv("STRATA_TEST_MARK", g_mark, 1);
    const char *names[] = {"strata-noentry.so", "strata-abi2.so", "strata-needsdep.so", "strata-entryfail.so",
                           "strata-nulltable.so", "strata-smalltable.so"};
    char src[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(src, sizeof src, "%s/%s", mods, names[i]);
        CHECK(copy_file(src, g_tmp, names[i]) == 0);
    }
    /* one well-formed module under several cpu variant names */
    const char *cpu_names[] = {"strata-cpu-avx2.so", "strata-cpu-avx512.so", "strata-cpu-vsx.so", "strata-cpu-neon.so"};
    snprintf(src, sizeof src, "%s/fakecpu.so", mods);
    for (size_t i = 0; i < 4; i++) CHECK(copy_file(src, g_tmp, cpu_names[i]) == 0);
    snprintf(src, sizeof src, "%s/fakecpu-score3.so", mods);
    CHECK(copy_file(src, g_tmp, "strata-cpu-future.so") == 0);
    snprintf(src, sizeof src, "%s/fakecpu-score0.so", mods);
    CHECK(copy_file(src, g_tmp, "strata-cpu-zero.so") == 0);
    CHECK(copy_file(sim, g_tmp, "strata-sim.so") == 0);
    CHECK(copy_file(sim, g_tmp, "strata-sim-b.so") == 0);
    /* garbage bytes */
    char p[512];
    snprintf(p, sizeof p, "%s/strata-garbage.so", g_tmp);
    FILE *g = fopen(p, "wb");
    uint32_t x = 0x12345678u;
    for (int i = 0; i < 8192; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        fputc((int)(x & 0xff), g);
    }
    fclose(g);
    /* a dangling link: the module file is missing */
    snprintf(p, sizeof p, "%s/strata-missing.so", g_tmp);
    CHECK(symlink("/nonexistent/strata-missing-target.so", p) == 0);
}

static void test_broken_and_sim(void) {
    setenv("STRATA_SIM", "devices=2,mem=64MiB", 1);
    unlink(g_mark);
    st_backend_set_threads(7);
    st_cpu_features avx2_cpu = {ST_CPU_ARCH_X86_64, ST_CPUF_AVX | ST_CPUF_AVX2 | ST_CPUF_FMA | ST_CPUF_F16C |
                                                        ST_CPUF_BMI1 | ST_CPUF_BMI2 | ST_CPUF_LZCNT |
                                                        ST_CPUF_POPCNT | ST_CPUF_OS_YMM};
    st_backend_options opt = {0};
    opt.search_path = g_tmp;
    opt.skip_exe_dir = 1;
    opt.cpu = &avx2_cpu;
    st_backend_registry *reg = st_backend_registry_open(&opt);
    CHECK(reg != NULL);
    if (!reg) return;
    CHECK(st_backend_registry_n_steps(reg) == 1);
    CHECK(st_backend_registry_step(reg, 0)->n_found == 16);

    const st_backend_module *m;
    m = by_file(reg, "strata-noentry.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_LOADED);
        CHECK_HAS(m->reason, "no st_backend_entry symbol");
    }
    m = by_file(reg, "strata-abi2.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_ENTRY);
        CHECK_STR(m->reason, "ABI 2, host speaks 1");
        CHECK(m->abi_major == 2);
    }
    m = by_file(reg, "strata-needsdep.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_FOUND);
        CHECK_HAS(m->reason, "needs libstrata_test_absent_dep.so, not found");
    }
    m = by_file(reg, "strata-entryfail.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_ENTRY);
        CHECK_STR(m->reason, "st_backend_entry returned NO_DRIVER: vendor driver refused to initialise (test)");
    }
    m = by_file(reg, "strata-nulltable.so");
    if (m) CHECK_HAS(m->reason, "returned OK but no table");
    m = by_file(reg, "strata-smalltable.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_ENTRY);
        CHECK_HAS(m->reason, "table of 48 bytes is smaller than ABI 1.0 requires");
    }
    m = by_file(reg, "strata-garbage.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_FOUND);
        CHECK_HAS(m->reason, "dlopen failed: ");
        CHECK(strstr(m->reason, "ELF") || strstr(m->reason, "too short"));
    }
    m = by_file(reg, "strata-missing.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_FOUND);
        CHECK_HAS(m->reason, "No such file or directory");
    }
    /* CPU variants: decided before dlopen */
    m = by_file(reg, "strata-cpu-avx512.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_FOUND);
        CHECK_STR(m->reason, "not loaded: CPU lacks AVX-512F");
    }
    m = by_file(reg, "strata-cpu-vsx.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_FOUND);
        CHECK_HAS(m->reason, "not loaded: CPU lacks VSX");
    }
    CHECK(!marked("strata-cpu-avx512.so"));
    CHECK(!marked("strata-cpu-vsx.so"));
    CHECK(marked("strata-cpu-avx2.so"));
    m = by_file(reg, "strata-cpu-neon.so");
    if (m) {
        CHECK(m->stage == ST_STAGE_LOADED);
        CHECK_HAS(m->reason, "unknown cpu variant 'neon' and the module exports no st_backend_score");
    }
    m = by_file(reg, "strata-cpu-zero.so");
    if (m) {
        CHECK(m->has_score && m->score == 0);
        CHECK_HAS(m->reason, "st_backend_score() returned 0");
    }
    /* avx2 (version 1.0) and future (score 3, version 2.0) serve the same fake CPU device */
    const st_backend_module *avx2 = by_file(reg, "strata-cpu-avx2.so");
    const st_backend_module *fut = by_file(reg, "strata-cpu-future.so");
    if (avx2 && fut) {
        CHECK(avx2->stage == ST_STAGE_DEVICES && fut->stage == ST_STAGE_DEVICES);
        CHECK(fut->usable && !avx2->usable);
        CHECK(avx2->api == NULL); /* unloaded: two modules never drive one device */
        CHECK(fut->n_devices == 1 && fut->devices[0].chosen);
        CHECK(avx2->n_devices == 1 && !avx2->devices[0].chosen);
        CHECK_HAS(avx2->devices[0].note, "same device served by strata-cpu-future.so");
        CHECK_HAS(avx2->devices[0].note, "newer module version (2.0 vs 1.0)");
        CHECK_HAS(fut->devices[0].note, "chosen over strata-cpu-avx2.so");
        CHECK(fut->devices[0].props.n_cores == 7); /* the host's n_threads reached the module */
    }
    /* sim loads beside all of that. Its copy strata-sim-b.so sorts first in the directory, so
     * it serves the devices (same UUIDs) and strata-sim.so loses to it. */
    const st_backend_module *simb = by_file(reg, "strata-sim-b.so");
    const st_backend_module *sim0 = by_file(reg, "strata-sim.so");
    const st_backend_module *sim = simb;
    if (sim0 && simb) {
        CHECK(simb->step == sim0->step);
        CHECK(simb->stage == ST_STAGE_DEVICES && simb->usable);
        CHECK(simb->api != NULL);
        CHECK(simb->n_devices == 2 && simb->devices[1].props.mem_total == 64ull << 20);
        CHECK_STR(simb->name, "sim");
        CHECK_STR(simb->variant, "b");
        CHECK(sim0->stage == ST_STAGE_DEVICES && !sim0->usable && sim0->api == NULL);
        CHECK_HAS(sim0->reason, "served by another module");
        CHECK(sim0->n_devices == 2);
        if (sim0->n_devices == 2) {
            CHECK_HAS(sim0->devices[0].note, "same device served by strata-sim-b.so");
            CHECK_HAS(sim0->devices[0].note, "found earlier in the search order");
        }
    }
    CHECK(st_backend_registry_find(reg, "sim") == simb);
    CHECK(st_backend_registry_find(reg, "abi2") == NULL);
    CHECK(st_backend_registry_n_devices(reg) == 3);
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        CHECK(d->module->usable && d->module->api && d->props->usable);
    }
    /* the sim device is usable through the registry's table */
    if (sim && sim->api) {
        st_device *dev = NULL;
        CHECK(sim->api->device_open(0, &dev) == ST_OK);
        void *p = NULL;
        CHECK(sim->api->mem_alloc(dev, 1 << 20, &p) == ST_OK);
        uint64_t fr = 0, tot = 0;
        CHECK(sim->api->mem_info(dev, &fr, &tot) == ST_OK);
        CHECK(tot == 64ull << 20 && fr == tot - (1 << 20));
        CHECK(sim->api->mem_free(dev, p) == ST_OK);
        CHECK(sim->api->device_close(dev) == ST_OK);
    }
    st_backend_registry_close(reg);
    st_backend_set_threads(0);
}

/* A second directory holding a strata-sim.so, the same directory twice, a missing entry. */
static void test_search_order(void) {
    char dir2[300], list[1024];
    snprintf(dir2, sizeof dir2, "%s/second", g_tmp);
    mkdir(dir2, 0755);
    char src[400];
    snprintf(src, sizeof src, "%s/strata-sim.so", g_tmp);
    CHECK(copy_file(src, dir2, "strata-sim.so") == 0);
    snprintf(list, sizeof list, "%s/strata-sim.so:/nonexistent-strata-dir::%s:%s", g_tmp, dir2, g_tmp);
    setenv("STRATA_BACKEND_PATH", list, 1);
    st_backend_options opt = {0};
    opt.skip_exe_dir = 1;
    st_backend_registry *reg = st_backend_registry_open(&opt);
    unsetenv("STRATA_BACKEND_PATH");
    CHECK(reg != NULL);
    if (!reg) return;
    CHECK(st_backend_registry_n_steps(reg) == 4);
    if (st_backend_registry_n_steps(reg) == 4) {
        CHECK_STR(st_backend_registry_step(reg, 0)->what, "STRATA_BACKEND_PATH");
        CHECK_STR(st_backend_registry_step(reg, 0)->result, "a module file");
        CHECK_STR(st_backend_registry_step(reg, 1)->result, "not found");
        CHECK(st_backend_registry_step(reg, 2)->n_found == 1);
        CHECK(st_backend_registry_step(reg, 3)->n_found == 16);
    }
    const st_backend_module *first = st_backend_registry_module(reg, 0);
    const st_backend_module *second = st_backend_registry_module(reg, 1);
    CHECK(first && first->usable);
    CHECK(second && second->stage == ST_STAGE_FOUND);
    if (second) CHECK_HAS(second->reason, "skipped: shadowed by");
    int same = 0;
    for (uint32_t i = 2; i < st_backend_registry_n_modules(reg); i++) {
        const st_backend_module *m = st_backend_registry_module(reg, i);
        if (!strcmp(m->file, "strata-sim.so")) {
            CHECK_HAS(m->reason, "skipped: same file as");
            same++;
        }
    }
    CHECK(same == 1);
    st_backend_registry_close(reg);
}

/* The sim without STRATA_SIM, and with text it cannot parse. */
static void test_sim_config_reasons(const char *sim) {
    (void)sim;
    char path[400];
    snprintf(path, sizeof path, "%s/strata-sim.so", g_tmp);
    st_backend_options opt = {0};
    opt.search_path = path;
    opt.skip_exe_dir = 1;
    unsetenv("STRATA_SIM");
    st_backend_registry *reg = st_backend_registry_open(&opt);
    const st_backend_module *m = st_backend_registry_module(reg, 0);
    CHECK(m && m->stage == ST_STAGE_ABI && !m->usable);
    if (m) CHECK_STR(m->reason, "probe: NO_DEVICE: STRATA_SIM is not set");
    CHECK(st_backend_registry_n_devices(reg) == 0);
    st_backend_registry_close(reg);

    setenv("STRATA_SIM", "devices=2,bogus=1", 1);
    reg = st_backend_registry_open(&opt);
    m = st_backend_registry_module(reg, 0);
    CHECK(m && m->stage == ST_STAGE_ABI);
    if (m) CHECK_HAS(m->reason, "probe: INVALID: STRATA_SIM: unknown key 'bogus'");
    st_backend_registry_close(reg);

    /* every device marked unusable: probe stage, per-device reasons kept */
    setenv("STRATA_SIM", "devices=2,unusable=1", 1);
    reg = st_backend_registry_open(&opt);
    m = st_backend_registry_module(reg, 0);
    CHECK(m && m->stage == ST_STAGE_PROBE);
    if (m) {
        CHECK_HAS(m->reason, "ARCH");
        CHECK(m->n_devices == 2);
        if (m->n_devices == 2) CHECK_HAS(m->devices[1].note, "unusable: simulated unusable device");
    }
    st_backend_registry_close(reg);
}

/* With the real CPU: the best runnable variant is loaded, and STRATA_CPU_DISABLE is honoured. */
static void test_real_cpu(void) {
    setenv("STRATA_SIM", "devices=1", 1);
    st_backend_options opt = {0};
    opt.search_path = g_tmp;
    opt.skip_exe_dir = 1;
    unlink(g_mark);
    st_backend_registry *reg = st_backend_registry_open(&opt);
    const st_cpu_features *cpu = st_backend_registry_cpu(reg);
    int has512 = st_cpu_variant_check("avx512", cpu, NULL, 0) == 1;
    int has2 = st_cpu_variant_check("avx2", cpu, NULL, 0) == 1;
    const st_backend_module *a512 = by_file(reg, "strata-cpu-avx512.so");
    const st_backend_module *a2 = by_file(reg, "strata-cpu-avx2.so");
    if (a512 && a2) {
        if (has512) {
            CHECK(a512->stage == ST_STAGE_DEVICES);
            CHECK_STR(a2->reason, "skipped: avx512 variant preferred");
            CHECK(!marked("strata-cpu-avx2.so"));
        } else {
            CHECK(a512->stage == ST_STAGE_FOUND);
            CHECK_HAS(a512->reason, "not loaded: CPU lacks");
            CHECK(!marked("strata-cpu-avx512.so"));
            CHECK(has2 ? a2->stage == ST_STAGE_DEVICES : a2->stage == ST_STAGE_FOUND);
        }
    }
    printf("real CPU: avx512 runnable %d, avx2 runnable %d\n", has512, has2);
    st_backend_registry_close(reg);
#if defined(__x86_64__)
    setenv("STRATA_CPU_DISABLE", "avx512f", 1);
    unlink(g_mark);
    reg = st_backend_registry_open(&opt);
    a512 = by_file(reg, "strata-cpu-avx512.so");
    if (a512) CHECK_STR(a512->reason, "not loaded: CPU lacks AVX-512F");
    CHECK(!marked("strata-cpu-avx512.so"));
    st_backend_registry_close(reg);
    unsetenv("STRATA_CPU_DISABLE");
#endif
}

static void cleanup(void) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) printf("note: could not remove %s\n", g_tmp);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s <test-module-dir> <strata-sim.so>\n", argv[0]);
        return 2;
    }
    setup(argv[1], argv[2]);
    test_broken_and_sim();
    test_search_order();
    test_sim_config_reasons(argv[2]);
    test_real_cpu();
    if (!g_failures) cleanup();
    else printf("kept %s for inspection\n", g_tmp);
    TEST_DONE();
}
