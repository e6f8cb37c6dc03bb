/* SPDX-License-Identifier: Apache-2.0 */
/* Module file names and CPU variant choice. See variant.h. */
#include "backend/variant.h"

#include "platform/dl.h"

#include <stdio.h>
#include <string.h>

int st_module_name_parse(const char *file, char *backend, size_t blen, char *variant, size_t vlen) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    const size_t sl = strlen(ST_DL_SUFFIX);
    int ok = n > 7 + sl && !strncmp(base, "strata-", 7) && !strcmp(base + n - sl, ST_DL_SUFFIX);
    char stem[256];
    if (ok) {
        snprintf(stem, sizeof stem, "%.*s", (int)(n - 7 - sl), base + 7);
    } else {
        const char *dot = strchr(base, '.');
        snprintf(stem, sizeof stem, "%.*s", (int)(dot ? (size_t)(dot - base) : n), base);
    }
    char *dash = ok ? strchr(stem, '-') : NULL;
    if (dash) {
        *dash = 0;
        snprintf(variant, vlen, "%s", dash + 1);
    } else {
        snprintf(variant, vlen, "%s", "");
    }
    snprintf(backend, blen, "%s", stem);
    return ok;
}

typedef struct {
    const char *variant;
    uint32_t arch;       /* st_cpu_arch the variant is built for; OTHER = any */
    int rank;
    uint32_t needs[20];  /* feature bits in the order they are reported; 0 ends */
} known_variant;

static const known_variant k_variants[] = {
    {"", ST_CPU_ARCH_OTHER, 1, {0}},
    {"vsx", ST_CPU_ARCH_PPC64, 10, {ST_CPUF_PPC_VSX, ST_CPUF_PPC_ARCH_3_00, 0}},
    /* The x86 lists mirror the flags backends/cpu_avx2 compiles each variant with: avx2 is
     * x86-64-v3 (-mavx2 -mfma -mf16c -mbmi -mbmi2 -mlzcnt -mpopcnt); avx512 adds -mavx512f/bw/
     * vl/dq/cd and -mavx512vnni. A CPU lacking any of them must not load the variant. */
    {"avx2", ST_CPU_ARCH_X86_64, 10,
     {ST_CPUF_AVX, ST_CPUF_AVX2, ST_CPUF_FMA, ST_CPUF_F16C, ST_CPUF_BMI1, ST_CPUF_BMI2, ST_CPUF_LZCNT,
      ST_CPUF_POPCNT, ST_CPUF_OS_YMM, 0}},
    {"avx512", ST_CPU_ARCH_X86_64, 20,
     {ST_CPUF_AVX512F, ST_CPUF_AVX512BW, ST_CPUF_AVX512VL, ST_CPUF_AVX512DQ, ST_CPUF_AVX512CD, ST_CPUF_AVX512VNNI,
      ST_CPUF_OS_ZMM, ST_CPUF_AVX, ST_CPUF_AVX2, ST_CPUF_FMA, ST_CPUF_F16C, ST_CPUF_BMI1, ST_CPUF_BMI2,
      ST_CPUF_LZCNT, ST_CPUF_POPCNT, ST_CPUF_OS_YMM, 0}},
};

static const known_variant *find_variant(const char *v) {
    for (size_t i = 0; i < sizeof k_variants / sizeof k_variants[0]; i++)
        if (!strcmp(k_variants[i].variant, v ? v : "")) return &k_variants[i];
    return NULL;
}

static const char *arch_name(uint32_t a) {
    return a == ST_CPU_ARCH_X86_64 ? "x86-64" : a == ST_CPU_ARCH_PPC64 ? "POWER" : "another processor";
}

int st_cpu_variant_check(const char *variant, const st_cpu_features *f, char *why, size_t wlen) {
    if (why && wlen) why[0] = 0;
    const known_variant *k = find_variant(variant);
    if (!k) return -1;
    for (int i = 0; k->needs[i]; i++) {
        if (k->arch != ST_CPU_ARCH_OTHER && f->arch != k->arch) {
            if (why)
                snprintf(why, wlen, "CPU lacks %s (variant built for %s, CPU is %s)",
                         st_cpu_feature_name(k->needs[i]), arch_name(k->arch), arch_name(f->arch));
            return 0;
        }
        if (!(f->flags & k->needs[i])) {
            if (why) snprintf(why, wlen, "CPU lacks %s", st_cpu_feature_name(k->needs[i]));
            return 0;
        }
    }
    return 1;
}

int st_cpu_variant_rank(const char *variant) {
    const known_variant *k = find_variant(variant);
    return k ? k->rank : -1;
}

void st_cpu_variants_choose(const char *const *variants, size_t n, const st_cpu_features *f,
                            st_variant_choice *out) {
    size_t best = n;
    int best_rank = -1;
    for (size_t i = 0; i < n; i++) {
        char why[128];
        int r = st_cpu_variant_check(variants[i], f, why, sizeof why);
        out[i].reason[0] = 0;
        if (r < 0) {
            out[i].action = ST_VARIANT_ASK_SCORE;
            snprintf(out[i].reason, sizeof out[i].reason,
                     "unknown variant '%s': loaded only if its st_backend_score() is above 0", variants[i]);
        } else if (r == 0) {
            out[i].action = ST_VARIANT_NO_CPU;
            snprintf(out[i].reason, sizeof out[i].reason, "not loaded: %s", why);
        } else {
            out[i].action = ST_VARIANT_NOT_BEST; /* settled below */
            int rank = st_cpu_variant_rank(variants[i]);
            if (rank > best_rank) {
                best_rank = rank;
                best = i;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (out[i].action != ST_VARIANT_NOT_BEST) continue;
        if (i == best) {
            out[i].action = ST_VARIANT_LOAD;
        } else {
            const char *bv = variants[best][0] ? variants[best] : "generic";
            snprintf(out[i].reason, sizeof out[i].reason, "skipped: %s variant preferred", bv);
        }
    }
}
