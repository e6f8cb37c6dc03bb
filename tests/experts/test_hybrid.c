/* SPDX-License-Identifier: Apache-2.0 */
/* The hybrid expert path of core/model on a generated MoE model: a simulated device is the "GPU"
 * with an expert cache of 0%, 50% and 100% of the experts, the CPU module computes the misses
 * from the mapped file. Greedy decoding of 64 tokens must give the same tokens as the model with
 * every expert resident, with every step's logits within a stated tolerance; the cache's
 * statistics must add up (0% -> no hit; 100% -> every access a hit once filled; Belady never
 * below the policy), the experts must not be uploaded, and a profile-seeded fixed cache must
 * admit nothing.
 * usage: test_hybrid GPU_MODULE.so CPU_MODULE.so [GPU_BACKEND]
 *   GPU_BACKEND: the module playing the GPU, "sim" (default; device memory is then counted
 *   exactly and checked) or e.g. "cuda" (exit 77 when it has no device). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_registry.h"
#include "experts/expert_profile.h"
#include "gguf/gguf.h"
#include "model/gen.h"
#include "engine/engine_offload.h"
#include "model/model.h"
#include "quant/quant.h"

static int g_fail = 0;
static int g_exact = 1; /* the "GPU" counts its memory exactly (the simulated device) */
#include "../common/check.h"

#define N_GEN 64
#define N_PROMPT 12
/* Logits of the hybrid model against the all-resident one, per step: max |diff| over the row
 * divided by max |logit| of the row. The misses run in another module's arithmetic (AVX2 F32
 * dot products with a different summation order than the reference), so rows differ by float
 * rounding carried through the layers (measured: about 2e-7 with F32 weights); 1e-4 leaves room
 * for other summation orders and stays far below a changed token. */
#define LOGIT_TOL 1e-4
/* Q8_0 weights: the CPU module may round activations to 8 bits for its integer dot products
 * where the reference keeps F32, so misses carry that rounding. */
#define LOGIT_TOL_Q8 2e-2 /* floor; raised to the CPU module's own deviation (see test_arch) */

typedef struct dev {
    const st_backend_api *api;
    uint32_t index;
    st_device *dev;
    int exact; /* counts its memory exactly (the simulated device; a CPU device reports free RAM) */
} dev;

typedef struct run_out {
    int32_t tok[N_GEN];
    float *logits;          /* [N_GEN][V] */
    st_model_expert_info info;
    st_expert_stats belady;
    int have_belady;
    uint64_t uploaded, dev_used;
    uint64_t counts_sum;
    uint64_t *counts;       /* [n_layer][n_expert] (all-resident run only) */
} run_out;

static uint64_t dev_free(const dev *d) {
    uint64_t fr = 0, tot = 0;
    d->api->mem_info(d->dev, &fr, &tot);
    return fr;
}

/* Prompt + greedy decode. slots < 0: every expert resident. Returns 0 or -1. */
static int run(const st_model_desc *desc, const dev *gpu, const dev *cpu, int64_t slots, int policy,
               const st_expert_profile *prof, int stage_slots, run_out *o) {
    char err[1024];
    const int32_t V = desc->hp.n_vocab;
    st_model_params p;
    st_model_params_default(&p);
    p.n_ctx = 128;
    p.n_batch = 16;
    p.kv_type = ST_TYPE_F32;
    p.expert_slots = slots;
    p.expert_policy = policy;
    p.expert_profile = prof;
    p.expert_stage_slots = stage_slots;
    p.expert_stage_rows = stage_slots > 0 ? 2 : -1; /* stage any expert with 2 rows or more */
    p.cpu_api = cpu->api;
    p.cpu_dev = cpu->dev;
    p.cpu_index = cpu->index;
    uint64_t free0 = dev_free(gpu);
    st_model *m = st_model_load(desc, gpu->api, gpu->dev, gpu->index, &p, err, sizeof err);
    if (!m) {
        fprintf(stderr, "FAIL load (slots %lld): %s\n", (long long)slots, err);
        g_fail++;
        return -1;
    }
    o->dev_used = free0 - dev_free(gpu);
    o->uploaded = st_model_weight_bytes_uploaded(m);
    o->logits = malloc(sizeof(float) * (size_t)V * N_GEN);
    st_model_expert_trace(m, 1);
    if (slots < 0) st_model_count_experts(m, 1);
    int32_t prompt[N_PROMPT] = {1, 17, 42, 99, 7, 23, 5, 64, 31, 8, 77, 12};
    int rc = st_model_eval(m, 0, prompt, N_PROMPT, 0, 0, NULL, err, sizeof err);
    int32_t t = 0;
    for (int i = 0; rc == 0 && i < N_GEN; i++) {
        rc = st_model_logits(m, o->logits + (size_t)i * (size_t)V, err, sizeof err);
        if (rc == 0) rc = st_model_argmax(m, &t, err, sizeof err);
        if (rc) break;
        o->tok[i] = t;
        if (i + 1 < N_GEN) rc = st_model_eval(m, 0, &t, 1, N_PROMPT + i, 0, NULL, err, sizeof err);
    }
    if (rc) {
        fprintf(stderr, "FAIL forward (slots %lld): %s\n", (long long)slots, err);
        g_fail++;
    }
    st_model_expert_info_get(m, &o->info);
    o->have_belady = slots >= 0 && st_model_expert_belady(m, &o->belady, err, sizeof err) == 0;
    if (slots < 0) {
        size_t n = (size_t)desc->hp.n_layer * (size_t)desc->hp.n_expert;
        o->counts = malloc(n * sizeof *o->counts);
        memcpy(o->counts, st_model_expert_counts(m), n * sizeof *o->counts);
        for (size_t i = 0; i < n; i++) o->counts_sum += o->counts[i];
    }
    if (rc == 0 && slots >= 0) {
        /* a second pass over the same text: with every expert fitting, everything now hits */
        st_model_expert_stats_reset(m);
        st_kv_clear(st_model_kv(m));
        rc = st_model_eval(m, 0, prompt, N_PROMPT, 0, 0, NULL, err, sizeof err);
        if (rc == 0) rc = st_model_eval(m, 0, o->tok, N_GEN - 1, N_PROMPT, 0, NULL, err, sizeof err);
        if (rc) {
            fprintf(stderr, "FAIL second pass (slots %lld): %s\n", (long long)slots, err);
            g_fail++;
        }
    }
    st_model_expert_info info2;
    st_model_expert_info_get(m, &info2);
    if (slots >= 0 && rc == 0) {
        const int64_t total = info2.experts_total;
        if (slots >= total) {
            CHECK(info2.stats.misses == 0 && info2.stats.hits > 0,
                  "100%% cache after the fill: %llu hits, %llu misses (want all hits)",
                  (unsigned long long)info2.stats.hits, (unsigned long long)info2.stats.misses);
        }
        if (slots == 0) CHECK(info2.stats.hits == 0, "0 slots: %llu hits", (unsigned long long)info2.stats.hits);
        CHECK(info2.cpu_assign + info2.stage_assign == info2.stats.misses,
              "CPU computed %llu assignments and staging %llu, the cache counted %llu misses",
              (unsigned long long)info2.cpu_assign, (unsigned long long)info2.stage_assign,
              (unsigned long long)info2.stats.misses);
    }
    st_model_free(m);
    CHECK(!gpu->exact || dev_free(gpu) == free0, "the model left %lld bytes on the device",
          (long long)(free0 - dev_free(gpu)));
    return rc;
}

static double row_diff(const float *a, const float *b, int64_t n) {
    double d = 0, mx = 1e-6;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        mx = fmax(mx, fabs((double)b[i]));
    }
    return d / mx;
}

static int open_dev(st_backend_registry *reg, const char *name, dev *d) {
    memset(d, 0, sizeof *d);
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *bd = st_backend_registry_device(reg, i);
        if (strcmp(bd->module->api->name, name) && strcmp(bd->module->backend, name)) continue;
        d->api = bd->module->api;
        d->index = bd->index;
        d->exact = !strcmp(bd->module->api->name, "sim");
        if (d->api->device_open(d->index, &d->dev) != ST_OK) {
            fprintf(stderr, "opening %s: %s\n", name, d->api->last_error());
            return -1;
        }
        return 0;
    }
    fprintf(stderr, "no usable %s device\n", name);
    return -1;
}

static void test_arch(const char *arch, uint32_t wtype, double tol, const dev *gpu, const dev *cpu) {
    char path[256], err[1024];
    snprintf(path, sizeof path, "/tmp/strata_hybrid_%s_%d.gguf", arch, (int)getpid());
    st_gen_params gp;
    if (st_gen_preset("tiny", arch, &gp)) {
        CHECK(0, "no tiny preset for %s", arch);
        return;
    }
    gp.wtype = wtype;
    gp.hp.n_layer = 3;
    gp.hp.n_expert = 16;
    gp.hp.n_expert_used = 4;
    gp.router_skew = 1.0f; /* a few experts dominate, as in real routers: a cache has something to keep */
    if (st_gen_model(&gp, path, err, sizeof err)) {
        CHECK(0, "gen-model %s: %s", arch, err);
        return;
    }
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *desc = g ? st_arch_describe(g, err, sizeof err) : NULL;
    if (!desc) {
        CHECK(0, "%s: %s", arch, err);
        st_gguf_close(g);
        unlink(path);
        return;
    }
    const int32_t V = desc->hp.n_vocab;
    int64_t total = 0;
    for (int l = 0; l < desc->hp.n_layer; l++) total += desc->layers[l].is_moe ? desc->hp.n_expert : 0;
    run_out ref;
    memset(&ref, 0, sizeof ref);
    if (run(desc, gpu, cpu, -1, 0, NULL, 0, &ref) == 0) {
        const uint64_t accesses = ref.counts_sum; /* prompt + N_GEN-1 decode forwards, k per token per layer */
        CHECK(accesses == (uint64_t)(N_PROMPT + N_GEN - 1) * (uint64_t)desc->hp.n_expert_used * (uint64_t)total /
                              (uint64_t)desc->hp.n_expert,
              "%s: %llu expert accesses counted", arch, (unsigned long long)accesses);
        struct {
            int64_t slots;
            int policy;
            const char *name;
            int stage;
        } cases[] = {{0, ST_EXPERT_LFRU, "0% lfru", 0},
                     {total / 2, ST_EXPERT_LFRU, "50% lfru", 0},
                     {total / 2, ST_EXPERT_LRU, "50% lru", 0},
                     {total, ST_EXPERT_LFRU, "100% lfru", 0},
                     {total / 2, ST_EXPERT_PROFILE, "50% profile", 0},
                     {0, ST_EXPERT_LFRU, "0% staged", 3},
                     {total / 4, ST_EXPERT_LRU, "25% staged", 2}};
        /* quantized weights: the CPU module's own arithmetic (8-bit activations in its integer dot
         * products) differs from the reference's, enough to flip a router's choice; the bound for
         * the hybrid is then what the CPU module alone, every expert on it, deviates by */
        double cpu_dev = 0;
        if (wtype != ST_TYPE_F32) {
            run_out c;
            memset(&c, 0, sizeof c);
            if (run(desc, cpu, cpu, -1, 0, NULL, 0, &c) == 0)
                for (int i = 0; i < N_GEN; i++)
                    cpu_dev = fmax(cpu_dev, row_diff(c.logits + (size_t)i * V, ref.logits + (size_t)i * V, V));
            printf("%-9s %-4s the CPU module alone (every expert on it) deviates from the sim by %.3g\n", arch,
                   st_type_name(wtype), cpu_dev);
            free(c.logits);
            free(c.counts);
            tol = fmax(tol, cpu_dev);
        }
        st_expert_profile *prof =
            st_expert_profile_from_counts(desc->hp.n_layer, desc->hp.n_expert, ref.counts, err, sizeof err);
        CHECK(prof != NULL, "profile: %s", err);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            run_out o;
            memset(&o, 0, sizeof o);
            const st_expert_profile *pf = cases[c].policy == ST_EXPERT_PROFILE ? prof : NULL;
            if (run(desc, gpu, cpu, cases[c].slots, cases[c].policy, pf, cases[c].stage, &o) == 0) {
                int same = 1, first = -1;
                double worst = 0;
                for (int i = 0; i < N_GEN; i++) {
                    if (o.tok[i] != ref.tok[i] && first < 0) first = i, same = 0;
                    double d = row_diff(o.logits + (size_t)i * V, ref.logits + (size_t)i * V, V);
                    worst = fmax(worst, d);
                }
                CHECK(same || wtype != ST_TYPE_F32, "%s %s: greedy tokens differ from all-resident at %d (%d vs %d)", arch, cases[c].name,
                      first, first >= 0 ? o.tok[first] : 0, first >= 0 ? ref.tok[first] : 0);
                CHECK(worst < tol, "%s %s: logits differ by %.3g (relative) > %.0e", arch, cases[c].name, worst, tol);
                const st_expert_stats *s = &o.info.stats;
                double hr = (double)s->hits / (double)(s->hits + s->misses ? s->hits + s->misses : 1);
                CHECK(s->hits + s->misses == ref.counts_sum, "%s %s: %llu hits + %llu misses != %llu accesses", arch,
                      cases[c].name, (unsigned long long)s->hits, (unsigned long long)s->misses,
                      (unsigned long long)ref.counts_sum);
                CHECK(o.info.slots == cases[c].slots, "%s %s: %lld slots", arch, cases[c].name, (long long)o.info.slots);
                /* experts stay in the file: what was uploaded is the non-expert weights only */
                CHECK(o.uploaded + desc->bytes_experts == ref.uploaded,
                      "%s %s: uploaded %llu, all-resident %llu, experts %llu", arch, cases[c].name,
                      (unsigned long long)o.uploaded, (unsigned long long)ref.uploaded,
                      (unsigned long long)desc->bytes_experts);
                CHECK(!gpu->exact || o.dev_used < ref.dev_used || cases[c].slots + cases[c].stage >= total, "%s %s: device use %llu >= %llu", arch,
                      cases[c].name, (unsigned long long)o.dev_used, (unsigned long long)ref.dev_used);
                if (cases[c].slots == 0) CHECK(s->hits == 0 && hr == 0.0, "%s 0%%: hit rate %.3f", arch, hr);
                if (cases[c].slots == total)
                    CHECK(s->inserts <= (uint64_t)total,
                          "%s 100%%: %llu inserts for %lld experts", arch, (unsigned long long)s->inserts,
                          (long long)total);
                if (cases[c].slots > 0) CHECK(s->hits > 0, "%s %s: no hit at all", arch, cases[c].name);
                if (cases[c].stage)
                    CHECK(o.info.stage_assign > 0 && o.info.stage_experts > 0 && o.info.stage_slots == cases[c].stage,
                          "%s %s: nothing staged (%llu rows, %llu experts, %lld slots)", arch, cases[c].name,
                          (unsigned long long)o.info.stage_assign, (unsigned long long)o.info.stage_experts,
                          (long long)o.info.stage_slots);
                else
                    CHECK(o.info.stage_assign == 0, "%s %s: staged without staging slots", arch, cases[c].name);
                if (cases[c].policy == ST_EXPERT_PROFILE)
                    CHECK(s->inserts == 0, "%s profile: %llu admissions (fixed cache)", arch,
                          (unsigned long long)s->inserts);
                CHECK(o.have_belady, "%s %s: no Belady figure", arch, cases[c].name);
                if (o.have_belady && cases[c].policy != ST_EXPERT_PROFILE)
                    CHECK(o.belady.hits >= s->hits, "%s %s: Belady %llu hits < policy %llu", arch, cases[c].name,
                          (unsigned long long)o.belady.hits, (unsigned long long)s->hits);
                printf("%-9s %-4s %-12s slots %3lld/%lld: hit rate %.3f (Belady %.3f), %llu inserts, %llu on the CPU, "
                       "%llu staged, logits within %.2g, device %.1f KiB (all resident %.1f KiB)\n",
                       arch, st_type_name(wtype), cases[c].name, (long long)cases[c].slots, (long long)total, hr,
                       o.have_belady ? (double)o.belady.hits / (double)(o.belady.hits + o.belady.misses) : -1.0,
                       (unsigned long long)s->inserts, (unsigned long long)o.info.cpu_assign,
                       (unsigned long long)o.info.stage_assign, worst,
                       (double)o.dev_used / 1024.0, (double)ref.dev_used / 1024.0);
            }
            free(o.logits);
        }
        st_expert_profile_free(prof);
    }
    free(ref.logits);
    free(ref.counts);
    st_model_desc_free(desc);
    st_gguf_close(g);
    unlink(path);
}

/* Pinning the file's expert tensors: a device table whose host_register records the ranges and
 * refuses what a driver refuses (a page registered twice, a range outside a mapping, unaligned),
 * on top of the simulated device. */
#define MAX_REG 256
static struct {
    uintptr_t a, b;
    int live;
} g_reg[MAX_REG];
static int g_n_reg, g_reg_bad;
static const st_gguf *g_reg_file;

static st_status fake_register(st_device *d, void *ptr, uint64_t bytes) {
    (void)d;
    uintptr_t a = (uintptr_t)ptr, b = a + bytes;
    int inside = 0;
    for (uint32_t i = 0; i < st_gguf_shard_count(g_reg_file); i++) {
        const st_gguf_shard *sh = st_gguf_shard_at(g_reg_file, i);
        uintptr_t lo = (uintptr_t)sh->base, hi = lo + (sh->size + 4095u) / 4096u * 4096u;
        inside |= a >= lo && b <= hi;
    }
    int clash = 0;
    for (int i = 0; i < g_n_reg; i++) clash |= g_reg[i].live && a < g_reg[i].b && g_reg[i].a < b;
    if (!inside || clash || a % 4096 || bytes % 4096 || g_n_reg == MAX_REG) {
        g_reg_bad++;
        return ST_INVALID;
    }
    g_reg[g_n_reg].a = a;
    g_reg[g_n_reg].b = b;
    g_reg[g_n_reg++].live = 1;
    return ST_OK;
}

static st_status fake_unregister(st_device *d, void *ptr) {
    (void)d;
    for (int i = 0; i < g_n_reg; i++)
        if (g_reg[i].live && g_reg[i].a == (uintptr_t)ptr) {
            g_reg[i].live = 0;
            return ST_OK;
        }
    g_reg_bad++;
    return ST_INVALID;
}

static void test_pin(const dev *gpu, const dev *cpu) {
    char path[256], err[1024];
    snprintf(path, sizeof path, "/tmp/strata_hybrid_pin_%d.gguf", (int)getpid());
    st_gen_params gp;
    st_gen_preset("tiny", "qwen3moe", &gp);
    gp.hp.n_layer = 3;
    if (st_gen_model(&gp, path, err, sizeof err)) {
        CHECK(0, "gen-model: %s", err);
        return;
    }
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *desc = g ? st_arch_describe(g, err, sizeof err) : NULL;
    if (desc) {
        static st_backend_api api;
        api = *gpu->api;
        api.host_register = fake_register;
        api.host_unregister = fake_unregister;
        g_reg_file = g;
        st_model_params p;
        st_model_params_default(&p);
        p.n_ctx = 64;
        p.expert_slots = 4;
        p.expert_pin = 1;
        p.cpu_api = cpu->api;
        p.cpu_dev = cpu->dev;
        p.cpu_index = cpu->index;
        st_model *m = st_model_load(desc, &api, gpu->dev, gpu->index, &p, err, sizeof err);
        CHECK(m != NULL, "load with pinning: %s", err);
        if (m) {
            st_model_expert_info in;
            st_model_expert_info_get(m, &in);
            CHECK(g_reg_bad == 0, "%d registrations a driver would refuse", g_reg_bad);
            CHECK(in.pinned_bytes >= desc->bytes_experts && in.pin_note[0] == 0,
                  "pinned %llu bytes of %llu expert bytes (%s)", (unsigned long long)in.pinned_bytes,
                  (unsigned long long)desc->bytes_experts, in.pin_note);
            int32_t tok[4] = {1, 2, 3, 4};
            CHECK(st_model_eval(m, 0, tok, 4, 0, 0, NULL, err, sizeof err) == 0, "forward: %s", err);
            st_model_free(m);
            int live = 0;
            for (int i = 0; i < g_n_reg; i++) live += g_reg[i].live;
            CHECK(live == 0 && g_reg_bad == 0, "%d ranges still registered after free (%d bad calls)", live, g_reg_bad);
            printf("pinning: %d merged range(s), %llu bytes for %llu bytes of experts\n", g_n_reg,
                   (unsigned long long)in.pinned_bytes, (unsigned long long)desc->bytes_experts);
        }
    }
    st_model_desc_free(desc);
    st_gguf_close(g);
    unlink(path);
}

/* The commands' path (engine_offload.h): a --vram-budget between the model's fixed consumers and
 * the whole model gives a partial cache, and the loaded model takes no more device memory than
 * the plan allocates; the greedy tokens stay those of the all-resident model. */
static void test_plan_bound(st_backend_registry *reg, const dev *gpu) {
    char path[256], err[1024];
    snprintf(path, sizeof path, "/tmp/strata_hybrid_plan_%d.gguf", (int)getpid());
    st_gen_params gp;
    st_gen_preset("demo", "qwen3moe", &gp);
    gp.wtype = ST_TYPE_F32;
    gp.router_skew = 1.0f;
    if (st_gen_model(&gp, path, err, sizeof err)) {
        CHECK(0, "gen-model: %s", err);
        return;
    }
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *desc = g ? st_arch_describe(g, err, sizeof err) : NULL;
    const st_backend_device *pick = NULL;
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg) && !pick; i++)
        if (st_backend_registry_device(reg, i)->module->api == gpu->api) pick = st_backend_registry_device(reg, i);
    int32_t ref[24], got[24];
    for (int pass = 0; desc && pick && pass < 2; pass++) {
        st_offload_opts oo;
        st_offload_opts_init(&oo);
        if (pass == 1) {
            oo.vram_budget = 25ull << 20; /* fixed consumers ~13 MiB, every expert 24 MiB more */
            oo.given = 1;
        }
        st_model_params p;
        st_model_params_default(&p);
        p.n_ctx = 256;
        p.n_batch = 64;
        st_offload off;
        uint64_t f0 = dev_free(gpu);
        if (st_offload_prepare(&oo, desc, reg, pick, gpu->dev, &p, NULL, &off, err, sizeof err)) {
            CHECK(0, "prepare (pass %d): %s", pass, err);
            st_offload_release(&off);
            break;
        }
        CHECK(off.plan != NULL, "no plan for a simulated device");
        st_model *m = st_offload_load(&off, desc, gpu->api, gpu->dev, gpu->index, &p, NULL, err, sizeof err);
        CHECK(m != NULL, "load (pass %d): %s", pass, err);
        if (m && off.plan) {
            /* the model is carved from the plan's blocks: the device holds exactly the plan */
            const uint64_t used = f0 - dev_free(gpu), planned = off.plan->dev[0].allocated;
            CHECK(used == planned && off.arena != NULL, "pass %d: the device holds %llu bytes, the plan allocates %llu",
                  pass, (unsigned long long)used, (unsigned long long)planned);
            if (pass == 1)
                CHECK(off.expert_slots > 0 && off.expert_slots < off.plan->dev[0].expert_slots_max,
                      "25 MiB should give a partial cache (%lld of %lld)", (long long)off.expert_slots,
                      (long long)off.plan->dev[0].expert_slots_max);
            else
                CHECK(off.expert_slots == -1, "without a budget every expert should be resident");
            int32_t t = 5, *out = pass ? got : ref;
            int rc = st_model_eval(m, 0, &t, 1, 0, 0, NULL, err, sizeof err);
            for (int i = 0; rc == 0 && i < 24; i++) {
                rc = st_model_argmax(m, &t, err, sizeof err);
                out[i] = t;
                if (rc == 0) rc = st_model_eval(m, 0, &t, 1, i + 1, 0, NULL, err, sizeof err);
            }
            CHECK(rc == 0, "decode (pass %d): %s", pass, err);
            printf("plan-bound pass %d: %lld expert slots, model %.1f MiB of the plan's %.1f MiB\n", pass,
                   (long long)off.expert_slots, (double)used / 1048576.0, (double)planned / 1048576.0);
        }
        st_model_free(m);
        st_offload_release(&off);
        if (pass == 1) CHECK(!memcmp(ref, got, sizeof ref), "the planned cache changed the greedy tokens");
    }
    st_model_desc_free(desc);
    st_gguf_close(g);
    unlink(path);
}

/* Refusals: an expert cache without a CPU module, a CPU "module" that cannot read host memory. */
static void test_refusals(const dev *gpu) {
    char path[256], err[1024];
    snprintf(path, sizeof path, "/tmp/strata_hybrid_refuse_%d.gguf", (int)getpid());
    st_gen_params gp;
    st_gen_preset("tiny", "qwen3moe", &gp);
    if (st_gen_model(&gp, path, err, sizeof err)) {
        CHECK(0, "gen-model: %s", err);
        return;
    }
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *desc = g ? st_arch_describe(g, err, sizeof err) : NULL;
    if (desc) {
        st_model_params p;
        st_model_params_default(&p);
        p.n_ctx = 64;
        p.expert_slots = 4;
        uint64_t f0 = dev_free(gpu);
        st_model *m = st_model_load(desc, gpu->api, gpu->dev, gpu->index, &p, err, sizeof err);
        CHECK(m == NULL && strstr(err, "CPU module"), "no CPU module: load %s (%s)", m ? "succeeded" : "failed", err);
        st_model_free(m);
        p.cpu_api = gpu->api; /* the sim device is not unified */
        p.cpu_dev = gpu->dev;
        p.cpu_index = gpu->index;
        m = st_model_load(desc, gpu->api, gpu->dev, gpu->index, &p, err, sizeof err);
        CHECK(m == NULL && strstr(err, "UNIFIED"), "non-unified CPU module: load %s (%s)", m ? "succeeded" : "failed",
              err);
        st_model_free(m);
        CHECK(!gpu->exact || dev_free(gpu) == f0, "a refused load left %lld bytes on the device", (long long)(f0 - dev_free(gpu)));
    }
    st_model_desc_free(desc);
    st_gguf_close(g);
    unlink(path);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s GPU_MODULE.so CPU_MODULE.so [GPU_BACKEND]\n", argv[0]);
        return 2;
    }
    const char *gpu_name = argc > 3 ? argv[3] : "sim";
    g_exact = !strcmp(gpu_name, "sim");
    char sp[2048];
    snprintf(sp, sizeof sp, "%s:%s", argv[1], argv[2]);
    if (!getenv("STRATA_SIM")) setenv("STRATA_SIM", "devices=1,mem=256MiB", 1);
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    opt.search_path = sp;
    opt.ignore_env_path = 1;
    opt.skip_exe_dir = 1;
    st_backend_registry *reg = st_backend_registry_open(&opt);
    dev gpu, cpu;
    if (!reg || open_dev(reg, gpu_name, &gpu) || open_dev(reg, "cpu", &cpu)) {
        fprintf(stderr, "SKIP: a %s device and the CPU module are needed\n", gpu_name);
        if (reg) st_backend_registry_close(reg);
        return 77;
    }
    test_refusals(&gpu);
    test_pin(&gpu, &cpu);
    if (g_exact) test_plan_bound(reg, &gpu); /* device memory read back exactly */
    test_arch("qwen3moe", ST_TYPE_F32, LOGIT_TOL, &gpu, &cpu);
    test_arch("qwen2moe", ST_TYPE_F32, LOGIT_TOL, &gpu, &cpu);
    test_arch("qwen3moe", ST_TYPE_Q8_0, LOGIT_TOL_Q8, &gpu, &cpu);
    gpu.api->device_close(gpu.dev);
    cpu.api->device_close(cpu.dev);
    st_backend_registry_close(reg);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("hybrid experts: all checks passed\n");
    return 0;
}
