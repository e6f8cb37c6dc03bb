/* SPDX-License-Identifier: Apache-2.0 */
/* A generated MoE model loaded through the commands' path (st_offload_prepare + st_offload_load)
 * on a simulated device that counts its memory exactly, with every expert resident, with an
 * expert cache (with and without staging slots) and with a cache of no slot. A counting layer
 * between the plan's arena and the simulated module sees every device allocation:
 *   - their number equals the plan's allocated consumers (one block each; the simulated
 *     module's streams hold no device memory of their own, so nothing else is allocated),
 *   - their bytes equal the plan's allocated total and what the device reports as used,
 *   - no allocation happens after the load (decoding included), every named consumer's buffers
 *     fit its block, and those the plan sizes exactly are filled exactly,
 *   - the greedy tokens equal an ordinary load's (every expert resident, no plan),
 *   - a consumer sized one step too small is refused naming it, and nothing is left allocated.
 * It also prints what the ordinary load's allocations would cost at a 2 MiB allocation
 * granularity (a GPU driver's) against the plan's blocks.
 * usage: test_plan_arena_model SIM_MODULE.so CPU_MODULE.so */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_registry.h"
#include "engine/engine_offload.h"
#include "gguf/gguf.h"
#include "model/gen.h"
#include "model/model.h"
#include "plan/plan_arena.h"

static int g_fail = 0;
#include "../common/check.h"

#define MiB (1024ull * 1024ull)
#define GRAN (2ull * MiB) /* a GPU driver's allocation granularity */
#define N_TOK 24

/* ---- a counting layer over the simulated module's allocations ---- */
static const st_backend_api *g_real;
static st_backend_api g_count_api;
static uint64_t g_allocs, g_bytes, g_bytes_gran, g_live;

static st_status count_alloc(st_device *d, uint64_t bytes, void **out) {
    st_status s = g_real->mem_alloc(d, bytes, out);
    if (s == ST_OK) {
        g_allocs++;
        g_bytes += bytes;
        g_bytes_gran += (bytes + GRAN - 1) / GRAN * GRAN;
        g_live++;
    }
    return s;
}

static st_status count_free(st_device *d, void *p) {
    st_status s = g_real->mem_free(d, p);
    if (s == ST_OK && p) g_live--;
    return s;
}

static void count_reset(void) { g_allocs = g_bytes = g_bytes_gran = 0; }

static uint64_t dev_used(st_device *dev) {
    uint64_t fr = 0, tot = 0;
    g_real->mem_info(dev, &fr, &tot);
    return tot - fr;
}

/* Greedy tokens from token 5: N_TOK of them. 0 or -1 with err. */
static int greedy(st_model *m, int32_t *out, char *err, size_t errlen) {
    int32_t t = 5;
    if (st_model_eval(m, 0, &t, 1, 0, 0, NULL, err, errlen)) return -1;
    for (int i = 0; i < N_TOK; i++) {
        if (st_model_argmax(m, &t, err, errlen)) return -1;
        out[i] = t;
        if (st_model_eval(m, 0, &t, 1, i + 1, 0, NULL, err, errlen)) return -1;
    }
    return 0;
}

static uint64_t n_allocated_consumers(const st_plan *p) {
    uint64_t n = 0;
    for (int32_t i = 0; i < p->dev[0].n_consumers; i++)
        if (st_plan_kind_allocated(p->dev[0].c[i].kind) && p->dev[0].c[i].bytes > 0) n++;
    return n;
}

typedef struct env {
    st_backend_registry *reg;
    const st_backend_device *pick;
    st_device *dev;
    const st_model_desc *desc;
    int32_t ref[N_TOK];
    int cache_tokens; /* F32: a cache gives the all-resident tokens (the CPU module rounds a
                         quantized model's activations to 8 bits, which may flip a choice) */
    const char *label;
    char label_buf[64];
} env;

static void base_params(st_model_params *p) {
    st_model_params_default(p);
    p->n_ctx = 256;
    p->n_batch = 64;
}

/* One load through the plan: budget 0 = none; cache -1 = auto. */
static void run_case(const env *e, const char *name, uint64_t budget, int64_t cache, int want_cache,
                     int want_stage, uint64_t *fixed) {
    char err[1024];
    st_offload_opts oo;
    st_offload_opts_init(&oo);
    oo.vram_budget = budget;
    oo.expert_cache = cache;
    oo.given = 1;
    st_model_params mp;
    base_params(&mp);
    st_offload off;
    const uint64_t u0 = dev_used(e->dev);
    if (st_offload_prepare(&oo, e->desc, e->reg, e->pick, e->dev, &mp, NULL, &off, err, sizeof err)) {
        CHECK(0, "%s: prepare: %s", name, err);
        st_offload_release(&off);
        return;
    }
    const st_plan *p = off.plan;
    CHECK(p && p->ok, "%s: no plan", name);
    if (!p || !p->ok) {
        st_offload_release(&off);
        return;
    }
    CHECK(want_cache ? off.expert_slots >= 0 : off.expert_slots == -1, "%s: expert slots %lld", name,
          (long long)off.expert_slots);
    CHECK(want_stage ? mp.expert_stage_slots > 0 : mp.expert_stage_slots == 0, "%s: %d staging slots", name,
          mp.expert_stage_slots);
    if (fixed) {
        const st_plan_consumer *ec = st_plan_find(p, 0, "expert_cache");
        *fixed = p->dev[0].planned - (ec ? ec->bytes : 0);
    }
    count_reset();
    st_model *m = st_offload_load(&off, e->desc, &g_count_api, e->dev, e->pick->index, &mp, NULL, err, sizeof err);
    CHECK(m != NULL, "%s: load from the plan: %s", name, err);
    if (m) {
        const uint64_t want_n = n_allocated_consumers(p), allocated = p->dev[0].allocated;
        const uint64_t used = dev_used(e->dev) - u0;
        CHECK(off.arena != NULL, "%s: no arena", name);
        CHECK(g_allocs == want_n, "%s: %llu device allocations, the plan has %llu allocated consumers", name,
              (unsigned long long)g_allocs, (unsigned long long)want_n);
        CHECK(g_bytes == allocated && used == allocated, "%s: allocations %llu B, device used %llu B, plan %llu B",
              name, (unsigned long long)g_bytes, (unsigned long long)used, (unsigned long long)allocated);
        /* each named consumer's buffers fit its block; those the plan sizes exactly fill it */
        for (int32_t i = 0; i < p->dev[0].n_consumers; i++) {
            const st_plan_consumer *c = &p->dev[0].c[i];
            if (!st_plan_kind_allocated(c->kind) || c->bytes == 0) continue;
            const uint64_t u = st_plan_arena_used(off.arena, c->name), b = st_plan_arena_budget(off.arena, c->name);
            CHECK(u <= b, "%s: consumer %s used %llu of %llu", name, c->name, (unsigned long long)u,
                  (unsigned long long)b);
            const int exact = !strcmp(c->name, "weights") || !strcmp(c->name, "kv") || !strcmp(c->name, "work") ||
                              (!strcmp(c->name, "expert_cache") && !want_cache) ||
                              (!strcmp(c->name, "expert_table") && want_stage);
            /* without staging slots the cache has no staging table: that much of the block stays */
            if (!strcmp(c->name, "expert_table") && want_cache && !want_stage)
                CHECK(b - u == (e->desc->hp.n_expert * 4u + ST_PLAN_ALIGN - 1) / ST_PLAN_ALIGN * ST_PLAN_ALIGN,
                      "%s: expert_table used %llu B of %llu B", name, (unsigned long long)u, (unsigned long long)b);
            if (exact)
                CHECK(u == b, "%s: consumer %s used %llu B of its %llu B (the plan's size is not the model's)",
                      name, c->name, (unsigned long long)u, (unsigned long long)b);
            if (!strcmp(c->name, "expert_cache") && want_cache) {
                st_model_expert_info in;
                CHECK(st_model_expert_info_get(m, &in) == 0 && b - u < in.slot_bytes,
                      "%s: the cache leaves %llu B of its block unused (a slot is %llu B)", name,
                      (unsigned long long)(b - u), (unsigned long long)in.slot_bytes);
            }
            printf("  %-14s %9llu of %9llu B\n", c->name, (unsigned long long)u, (unsigned long long)b);
        }
        int32_t got[N_TOK];
        int rc = greedy(m, got, err, sizeof err);
        CHECK(rc == 0, "%s: decode: %s", name, err);
        if (rc == 0 && (!want_cache || e->cache_tokens))
            CHECK(!memcmp(got, e->ref, sizeof got), "%s %s: the greedy tokens differ from an ordinary load", e->label,
                  name);
        CHECK(g_allocs == want_n, "%s: %llu allocations after decoding (%llu at load)", name,
              (unsigned long long)g_allocs, (unsigned long long)want_n);
        printf("%s %s: %lld expert slots (%d staging), %llu device allocations = %llu consumers, %llu B = plan's "
               "allocated total%s\n", e->label, name, (long long)off.expert_slots, mp.expert_stage_slots,
               (unsigned long long)g_allocs, (unsigned long long)want_n, (unsigned long long)allocated,
               !want_cache || e->cache_tokens ? ", tokens equal" : "");
    }
    st_model_free(m);
    st_offload_release(&off);
    CHECK(dev_used(e->dev) == u0 && g_live == 0, "%s: %llu B and %llu buffers left on the device", name,
          (unsigned long long)(dev_used(e->dev) - u0), (unsigned long long)g_live);
}

/* A consumer sized one alignment step too small: the load is refused naming it. */
static void run_too_small(const env *e, const char *consumer, uint64_t budget) {
    char err[1024];
    st_offload_opts oo;
    st_offload_opts_init(&oo);
    oo.vram_budget = budget;
    oo.given = 1;
    st_model_params mp;
    base_params(&mp);
    st_offload off;
    const uint64_t u0 = dev_used(e->dev);
    if (st_offload_prepare(&oo, e->desc, e->reg, e->pick, e->dev, &mp, NULL, &off, err, sizeof err)) {
        CHECK(0, "too small: prepare: %s", err);
        st_offload_release(&off);
        return;
    }
    for (int32_t i = 0; i < off.plan->dev[0].n_consumers; i++)
        if (!strcmp(off.plan->dev[0].c[i].name, consumer)) {
            off.plan->dev[0].c[i].bytes -= ST_PLAN_ALIGN;
            off.plan->dev[0].allocated -= ST_PLAN_ALIGN;
        }
    char want[64];
    snprintf(want, sizeof want, "consumer '%s'", consumer);
    st_model *m = st_offload_load(&off, e->desc, &g_count_api, e->dev, e->pick->index, &mp, NULL, err, sizeof err);
    CHECK(m == NULL && strstr(err, want) && strstr(err, "beyond its") && strstr(err, "a bug"),
          "'%s' one step too small: %s", consumer, m ? "loaded" : err);
    if (!m) printf("%s one step too small: %s\n", consumer, err);
    st_model_free(m);
    CHECK(off.arena == NULL && dev_used(e->dev) == u0 && g_live == 0, "the refused load left memory behind");
    st_offload_release(&off);
}

/* Every case on one generated model; `granularity`: print and check the 2 MiB comparison;
 * `offload` 0: the all-resident case only (families expert offload does not take yet). */
static void test_model(env *e, const char *arch, uint32_t wtype, int granularity, int offload) {
    char path[256], err[1024];
    snprintf(e->label_buf, sizeof e->label_buf, "%s %s", arch, wtype == ST_TYPE_F32 ? "F32" : "Q8_0");
    e->label = e->label_buf;
    e->cache_tokens = wtype == ST_TYPE_F32;
    printf("== %s\n", e->label);
    snprintf(path, sizeof path, "/tmp/strata_plan_arena_%d.gguf", (int)getpid());
    st_gen_params gp;
    st_gen_preset("demo", arch, &gp);
    gp.wtype = wtype;
    gp.router_skew = 1.0f;
    st_gguf *g = NULL;
    st_model_desc *desc = NULL;
    if (st_gen_model(&gp, path, err, sizeof err) || !(g = st_gguf_open(path, err, sizeof err)) ||
        !(desc = st_arch_describe(g, err, sizeof err))) {
        CHECK(0, "%s model: %s", e->label, err);
        st_gguf_close(g);
        return;
    }
    e->desc = desc;
    /* the plan reserves the cache's index arrays by its own formula: it must be the model's */
    CHECK(st_plan_expert_index_bytes(&desc->hp, 64) == st_model_expert_io_bytes(&desc->hp, 64),
          "%s: the plan's expert index bytes %llu, the model's %llu", e->label,
          (unsigned long long)st_plan_expert_index_bytes(&desc->hp, 64),
          (unsigned long long)st_model_expert_io_bytes(&desc->hp, 64));

    /* the reference: an ordinary load (a buffer per tensor and buffer, every expert resident) */
    st_model_params mp;
    base_params(&mp);
    mp.no_in_place = 1;
    count_reset();
    st_model *m = st_model_load(desc, &g_count_api, e->dev, e->pick->index, &mp, err, sizeof err);
    CHECK(m != NULL, "%s ordinary load: %s", e->label, err);
    if (m) {
        const uint64_t ord_n = g_allocs, ord_b = g_bytes, ord_g = g_bytes_gran;
        CHECK(greedy(m, e->ref, err, sizeof err) == 0, "ordinary decode: %s", err);
        st_model_free(m);

        uint64_t fixed = 0;
        run_case(e, "all resident", 0, -1, 0, 0, &fixed);
        if (!offload) goto done;
        const uint64_t pl_n = g_allocs, pl_b = g_bytes, pl_g = g_bytes_gran;
        /* budgets for about 10 slots (no staging: fewer than 16) and 40 (10 of them staging) */
        const uint64_t slice = desc->bytes_expert_slice;
        const uint64_t b10 = fixed + 10 * slice + slice / 2, b40 = fixed + 40 * slice + slice / 2;
        run_case(e, "cache of ~10 slots", b10, -1, 1, 0, NULL);
        run_case(e, "cache of ~40 slots, staging", b40, -1, 1, 1, NULL);
        run_case(e, "cache of 0 slots", 0, 0, 1, 0, NULL);
        if (granularity) {
            run_too_small(e, "weights", 0);
            run_too_small(e, "kv", 0);
            run_too_small(e, "expert_cache", 0);
            run_too_small(e, "work", b40);
            run_too_small(e, "expert_table", b40);
            /* what a 2 MiB granularity would make of each: the plan's blocks pay it once per consumer */
            printf("2 MiB granularity: ordinary load %llu allocations, %.2f MiB asked, %.2f MiB rounded (+%.2f); "
                   "from the plan %llu allocations, %.2f MiB, %.2f MiB rounded (+%.2f)\n",
                   (unsigned long long)ord_n, (double)ord_b / MiB, (double)ord_g / MiB, (double)(ord_g - ord_b) / MiB,
                   (unsigned long long)pl_n, (double)pl_b / MiB, (double)pl_g / MiB, (double)(pl_g - pl_b) / MiB);
            CHECK(pl_n > 0 && pl_g - pl_b < pl_n * GRAN && pl_g - pl_b < ord_g - ord_b,
                  "the plan's blocks should waste less than a per-buffer load at 2 MiB granularity");
        }
    }
done:
    e->desc = NULL;
    st_model_desc_free(desc);
    st_gguf_close(g);
    unlink(path);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s SIM_MODULE.so CPU_MODULE.so\n", argv[0]);
        return 2;
    }
    char sp[2048];
    snprintf(sp, sizeof sp, "%s:%s", argv[1], argv[2]);
    setenv("STRATA_SIM", "devices=1,mem=256MiB", 1);
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    opt.search_path = sp;
    opt.ignore_env_path = 1;
    opt.skip_exe_dir = 1;
    env e;
    memset(&e, 0, sizeof e);
    e.reg = st_backend_registry_open(&opt);
    for (uint32_t i = 0; e.reg && i < st_backend_registry_n_devices(e.reg) && !e.pick; i++)
        if (!strcmp(st_backend_registry_device(e.reg, i)->module->api->name, "sim"))
            e.pick = st_backend_registry_device(e.reg, i);
    if (!e.pick) {
        fprintf(stderr, "no simulated device\n");
        return 1;
    }
    g_real = e.pick->module->api;
    g_count_api = *g_real;
    g_count_api.mem_alloc = count_alloc;
    g_count_api.mem_free = count_free;
    if (g_real->device_open(e.pick->index, &e.dev) != ST_OK) {
        fprintf(stderr, "opening the simulated device: %s\n", g_real->last_error());
        return 1;
    }
    test_model(&e, "qwen3moe", ST_TYPE_F32, 1, 1);
    test_model(&e, "qwen2moe", ST_TYPE_F32, 0, 1);
    test_model(&e, "qwen3moe", ST_TYPE_Q8_0, 0, 1);
    /* multi-head latent attention: one latent KV cache, the head tables in the work buffers */
    test_model(&e, "deepseek2", ST_TYPE_Q8_0, 0, 0);
    test_model(&e, "glm4moe", ST_TYPE_Q8_0, 0, 0);
    test_model(&e, "gpt-oss", ST_TYPE_Q8_0, 0, 0); /* sinks, windows, expert-bias rows */
    CHECK(g_real->device_close(e.dev) == ST_OK, "device_close: %s", g_real->last_error());
    st_backend_registry_close(e.reg);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("plan arena model: all checks passed\n");
    return 0;
}
