/* SPDX-License-Identifier: Apache-2.0 */
/* A model split by layers over simulated devices of different memory, bandwidth and memory
 * domain, and over a simulated GPU plus the CPU module: for every family the tiny test models
 * cover, 64 greedy tokens equal those of the single-device run; the memory plan of a 3-device
 * split equals what each simulated device allocated; a device lost mid-run ends the forward
 * with an error naming it.
 * usage: test_model_split            (STRATA_SIM with 4 devices, the CPU module loaded)
 *        test_model_split loss DEV   (STRATA_SIM where DEV loses itself after some ops) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_registry.h"
#include "backend/dev.h"
#include "model_util.h"
#include "plan/plan.h"
#include "plan/plan_arena.h"
#include "engine/engine_split.h"



static const char *k_archs[] = {"llama",  "qwen2",     "qwen3",   "qwen2moe", "qwen3moe",
                                "olmoe",  "deepseek2", "glm4moe", "gpt-oss"};
enum { N_LAYER = 4, N_PROMPT = 4, N_GEN = 64, MAX_DEV = 8 };

static st_backend_registry *g_reg;
static st_dev g_dev[MAX_DEV]; /* sim0..sim3, then the CPU */
static int g_n_dev;

/* Opens sim0..sim(n-1) (by module index) and the CPU module's first device; returns how many. */
static int open_devices(int n_sim, int with_cpu) {
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    g_reg = st_backend_registry_open(&opt);
    for (int want = 0; g_reg && want < n_sim + with_cpu; want++) {
        const char *be = want < n_sim ? "sim" : "cpu";
        for (uint32_t i = 0; i < st_backend_registry_n_devices(g_reg); i++) {
            const st_backend_device *d = st_backend_registry_device(g_reg, i);
            if (strcmp(d->module->api->name, be) || (want < n_sim && d->index != (uint32_t)want)) continue;
            if (st_dev_open(&g_dev[g_n_dev], d->module->api, d->index) == ST_OK) g_n_dev++;
            break;
        }
    }
    return g_n_dev;
}

static void close_devices(void) {
    for (int i = 0; i < g_n_dev; i++) st_dev_close(&g_dev[i]);
    g_n_dev = 0;
    st_backend_registry_close(g_reg);
}

static int gen(const char *arch, const char *path) {
    st_gen_params p;
    if (st_gen_preset("tiny", arch, &p)) return -1;
    p.hp.n_layer = N_LAYER; /* room for four stages */
    p.seed = 11;
    p.router_skew = 0.5f;
    char err[512];
    if (st_gen_model(&p, path, err, sizeof err)) {
        fprintf(stderr, "gen %s: %s\n", arch, err);
        return -1;
    }
    return 0;
}

static void params(st_model_params *p) {
    st_model_params_default(p);
    p->n_ctx = 128;
    p->n_batch = 8;
}

/* N_PROMPT fixed tokens, then N_GEN greedy ones into out. 0, or -1 with err. */
static int greedy(st_model *m, int32_t n_vocab, int32_t *out, char *err, size_t errlen) {
    int32_t prompt[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++) prompt[i] = (i * 37 + 5) % n_vocab;
    if (st_model_eval(m, 0, prompt, N_PROMPT, 0, 0, NULL, err, errlen)) return -1;
    for (int t = 0; t < N_GEN; t++) {
        if (st_model_argmax(m, &out[t], err, errlen)) return -1;
        int32_t pos = N_PROMPT + t;
        st_batch b = {1, &out[t], &pos, NULL, NULL};
        if (t + 1 < N_GEN && st_model_forward(m, &b, err, errlen)) return -1;
    }
    return 0;
}

/* Loads `desc` over devs[0..n) with layers[i] each and runs greedy(). */
static int run_split(const st_model_desc *d, const int *devs, const int *layers, int n, int32_t *out, char *err,
                     size_t errlen) {
    st_model_stage st[MAX_DEV];
    for (int i = 0; i < n; i++)
        st[i] = (st_model_stage){g_dev[devs[i]].api, g_dev[devs[i]].handle, g_dev[devs[i]].index, layers[i], 0, -1};
    st_model_params p;
    params(&p);
    st_model *m = st_model_load_split(d, st, n, &p, err, errlen);
    if (!m) return -1;
    CHECK(st_model_n_stages(m) == n, "%d stages loaded of %d", st_model_n_stages(m), n);
    int rc = greedy(m, d->hp.n_vocab, out, err, errlen);
    st_model_stage_info si;
    for (int i = 1; rc == 0 && i < n && st_model_stage_get(m, i, &si) == 0; i++)
        CHECK(si.xfer_bytes > 0 && si.busy_s > 0, "stage %d (%s) received no hidden state or took no time", i,
              si.device);
    st_model_free(m);
    return rc;
}

typedef struct split_case {
    const char *what;
    int n;
    int dev[4], layers[4];
} split_case;

static void arch_case(const char *arch, const char *path, int have_cpu) {
    if (gen(arch, path)) return;
    char err[1024];
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    CHECK(d != NULL, "%s: %s", arch, err);
    if (!d) {
        st_gguf_close(g);
        return;
    }
    static const split_case cases[] = {
        {"2 devices (one domain: peer)", 2, {0, 1}, {1, 3}},
        {"3 devices (two domains: host)", 3, {0, 2, 1}, {1, 2, 1}},
        {"4 devices", 4, {3, 2, 1, 0}, {1, 1, 1, 1}},
        {"sim GPU + CPU", 2, {0, 4}, {2, 2}},
    };
    int32_t ref[N_GEN], got[N_GEN];
    const int one_dev[1] = {0}, all[1] = {N_LAYER};
    if (run_split(d, one_dev, all, 1, ref, err, sizeof err)) {
        CHECK(0, "%s single device: %s", arch, err);
    } else {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            if (cases[c].dev[cases[c].n - 1] == 4 && !have_cpu) continue;
            memset(got, -1, sizeof got);
            int rc = run_split(d, cases[c].dev, cases[c].layers, cases[c].n, got, err, sizeof err);
            CHECK(rc == 0, "%s %s: %s", arch, cases[c].what, err);
            int same = 0;
            while (rc == 0 && same < N_GEN && got[same] == ref[same]) same++;
            CHECK(rc || same == N_GEN, "%s %s: token %d differs (%d, single device %d)", arch, cases[c].what, same,
                  same < N_GEN ? got[same] : -1, same < N_GEN ? ref[same] : -1);
            if (rc == 0) printf("%-9s %-32s %d/%d greedy tokens as on one device\n", arch, cases[c].what, same, N_GEN);
        }
    }
    st_model_desc_free(d);
    st_gguf_close(g);
}

/* Expert offload per device: a split over the four simulated devices (one layer each) where each
 * caches 3 of its layer's 8 experts and the CPU module computes the misses gives the tokens of
 * the single device holding every expert. Runs after the test's own doors are closed. */
static void offload_case(const char *path, const int32_t *ref) {
    char err[1024] = "";
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    st_split_opts o;
    memset(&o, 0, sizeof o);
    o.backend = "sim";
    o.tensor_split = "1,1,1,1";
    o.main_device = -1;
    o.n_gpu_layers = -1;
    o.n_slots = 1;
    o.expert_cache = 3;
    st_model_params mp;
    params(&mp);
    st_split sp;
    st_model *m = NULL;
    if (d && st_split_prepare(&sp, &o, g_reg, d, &mp, NULL, err, sizeof err) == 0)
        m = st_split_load(&sp, d, &mp, err, sizeof err);
    CHECK(m && st_model_n_stages(m) == 4 && sp.offload, "offload split over 4 sim devices: %s", err);
    int32_t out[N_GEN];
    if (m) {
        CHECK(greedy(m, d->hp.n_vocab, out, err, sizeof err) == 0, "offload split: %s", err);
        int same = 0;
        while (same < N_GEN && out[same] == ref[same]) same++;
        CHECK(same == N_GEN, "offload split: token %d differs", same);
        st_model_expert_info xi;
        CHECK(st_model_expert_info_get(m, &xi) == 0 && xi.slots == 4 * 3 && xi.cpu_assign > 0 &&
                  xi.stats.hits + xi.stats.misses > 0,
              "four devices cache 3 slots each and send misses to the CPU (%lld slots, %llu CPU pairs)",
              (long long)xi.slots, (unsigned long long)xi.cpu_assign);
        printf("qwen3moe  offload per device (3 of 8 experts each)  %d/%d greedy tokens as on one device\n", same,
               N_GEN);
        st_model_free(m);
        st_split_release(&sp);
    }
    st_model_desc_free(d);
    st_gguf_close(g);
}

/* A module whose ABI lacks an op the layers placed on it need is reported before anything is
 * allocated: gpt-oss's attention needs ATTENTION_EX (ABI 1.2); sim1 posing as a 1.1 module. */
static void plan_time_op_check(const char *path) {
    char err[1024] = "";
    st_gguf *g = gen("gpt-oss", path) ? NULL : st_gguf_open(path, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    CHECK(d != NULL, "gpt-oss model: %s", err);
    if (!d) return;
    st_backend_api old = *g_dev[1].api;
    old.abi_minor = 1;
    st_model_stage st = {&old, g_dev[1].handle, g_dev[1].index, 2, 0, -1};
    int rc = st_model_check_stage(d, &st, 2, 0, 1, ST_TYPE_F16, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "attention_ex") && strstr(err, "sim1") && strstr(err, "ABI 1.1"),
          "a 1.1 module holding gpt-oss layers: %d '%s'", rc, err);
    printf("plan-time op check: %s\n", err);
    st = (st_model_stage){g_dev[1].api, g_dev[1].handle, g_dev[1].index, 2, 0, -1};
    CHECK(st_model_check_stage(d, &st, 2, 0, 1, ST_TYPE_F16, err, sizeof err) == 0, "the 1.2 module: %s", err);
    st_model_desc_free(d);
    st_gguf_close(g);
}

/* Used bytes of a simulated device (total - free). */
static uint64_t used(st_dev *d) {
    uint64_t fr = 0, tot = 0;
    return st_dev_mem_info(d, &fr, &tot) == ST_OK ? tot - fr : 0;
}

/* The memory plan of a 3-device split against what each simulated device allocated: the
 * arenas take exactly the plan's blocks, and the model carves every buffer from them. */
static void plan_totals(const char *path) {
    char err[1024];
    st_gguf *g = gen("qwen3moe", path) ? NULL : st_gguf_open(path, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    CHECK(d != NULL, "plan totals: model");
    if (!d) return;
    const int devs[3] = {0, 2, 1};
    st_plan_device_in in[3];
    memset(in, 0, sizeof in);
    uint64_t u0[3];
    for (int i = 0; i < 3; i++) {
        st_dev *v = &g_dev[devs[i]];
        snprintf(in[i].name, sizeof in[i].name, "%s", v->name);
        st_dev_mem_info(v, &in[i].mem_free, &in[i].mem_total);
        u0[i] = used(v);
    }
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_ctx = 128;
    r.n_batch = 8;
    r.expert_cache = -1; /* room for every expert: they are resident, in the expert_cache block */
    st_plan *p = st_plan_build(d, in, 3, &r, err, sizeof err);
    CHECK(p && p->ok, "plan: %s", p ? p->refusal : err);
    st_plan_arena *ar[3] = {0};
    st_backend_api bound[3];
    st_model_stage st[3];
    int ok = p && p->ok;
    static const char *const chain[] = {"weights", "expert_cache", "expert_table", "kv", "work", "logits"};
    for (int i = 0; ok && i < 3; i++) {
        st_dev *v = &g_dev[devs[i]];
        st_status s;
        ar[i] = st_plan_arena_create(p, i, v->api, v->handle, &s, err, sizeof err);
        ok = ar[i] && st_plan_api_bind(ar[i], v->api, v->handle, chain, 6, &bound[i], err, sizeof err) == 0;
        CHECK(ok, "arena on %s: %s", v->name, err);
        st[i] = (st_model_stage){&bound[i], v->handle, v->index, p->dev[i].n_layers, 0, -1};
    }
    st_model *m = NULL;
    if (ok) {
        st_model_params mp;
        params(&mp);
        mp.alloc_consumer = st_plan_api_consumer;
        m = st_model_load_split(d, st, 3, &mp, err, sizeof err);
        CHECK(m != NULL, "load inside the plan: %s", err);
    }
    int32_t toks[N_GEN];
    if (m) CHECK(greedy(m, d->hp.n_vocab, toks, err, sizeof err) == 0, "forward inside the plan: %s", err);
    for (int i = 0; m && i < 3; i++) {
        const uint64_t u = used(&g_dev[devs[i]]) - u0[i];
        CHECK(u == p->dev[i].allocated, "%s allocated %llu bytes, the plan %llu", g_dev[devs[i]].name,
              (unsigned long long)u, (unsigned long long)p->dev[i].allocated);
        st_model_stage_info si;
        st_model_stage_get(m, i, &si);
        CHECK(si.layer_first == p->dev[i].layer_first && si.n_layers == p->dev[i].n_layers,
              "stage %d holds layers %d+%d, the plan %d+%d", i, si.layer_first, si.n_layers, p->dev[i].layer_first,
              p->dev[i].n_layers);
        CHECK(si.bytes <= p->dev[i].allocated, "stage %d carved %llu bytes of %llu planned", i,
              (unsigned long long)si.bytes, (unsigned long long)p->dev[i].allocated);
        printf("plan: %-5s layers %d-%d: %llu bytes planned = allocated on the device; the model carved %llu\n",
               si.device, si.layer_first, si.layer_first + si.n_layers - 1, (unsigned long long)p->dev[i].allocated,
               (unsigned long long)si.bytes);
    }
    st_model_free(m);
    for (int i = 0; i < 3; i++) {
        st_plan_api_unbind(g_dev[devs[i]].handle);
        st_plan_arena_free(ar[i]);
    }
    st_plan_free(p);
    st_model_desc_free(d);
    st_gguf_close(g);
}

/* STRATA_SIM makes `lost` lose itself mid-run: the forward fails naming it; the split plans the
 * model again on the device that remains (a warning), whose tokens are the single device's. */
static int loss_case(const char *path, const char *lost) {
    if (open_devices(1, 0) < 1 || gen("llama", path)) {
        printf("SKIP: simulated devices needed\n");
        return 77;
    }
    char err[1024];
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    int32_t ref[N_GEN], out[N_GEN];
    const int one[1] = {0}, all[1] = {N_LAYER};
    CHECK(d && run_split(d, one, all, 1, ref, err, sizeof err) == 0, "single device: %s", err);
    st_dev_close(&g_dev[0]); /* the split opens its own */
    g_n_dev = 0;
    st_split_opts o;
    memset(&o, 0, sizeof o);
    o.backend = "sim";
    o.main_device = -1;
    o.n_gpu_layers = -1;
    o.n_slots = 1;
    o.expert_cache = -1;
    st_model_params mp;
    params(&mp);
    st_split sp;
    st_model *m = NULL;
    if (d && st_split_prepare(&sp, &o, g_reg, d, &mp, NULL, err, sizeof err) == 0) m = st_split_load(&sp, d, &mp, err, sizeof err);
    CHECK(m && st_model_n_stages(m) == 2, "split over 2 sim devices: %s", err);
    int rc = m ? greedy(m, d->hp.n_vocab, out, err, sizeof err) : 0;
    CHECK(rc == -1, "the run survived the loss of %s", lost);
    CHECK(strstr(err, lost) && strstr(err, "lost"), "the error names the lost device %s: '%s'", lost, err);
    printf("device loss: %s\n", err);
    if (m) {
        char log[1 << 14];
        FILE *f = fmemopen(log, sizeof log, "w");
        int r = st_split_replan(&sp, &m, &o, g_reg, d, &mp, f, err, sizeof err);
        fclose(f);
        CHECK(r == 1 && m && st_model_n_stages(m) == 1, "replan on the remaining device: %d %s", r, err);
        CHECK(strstr(log, "WARNING: lost") && strstr(log, lost), "the replan warns: %s", log);
        st_model_stage_info si;
        CHECK(m && st_model_stage_get(m, 0, &si) == 0 && strcmp(si.device, lost), "the new plan avoids %s", lost);
        memset(out, -1, sizeof out);
        CHECK(m && greedy(m, d->hp.n_vocab, out, err, sizeof err) == 0 && !memcmp(out, ref, sizeof out),
              "after the replan the tokens are the single device's: %s", err);
        st_model_free(m);
        st_split_release(&sp);
    }
    st_model_desc_free(d);
    st_gguf_close(g);
    close_devices();
    return g_fail ? 1 : 0;
}

int main(int argc, char **argv) {
    char path[512];
    mt_tmp_path(path, sizeof path, "split.gguf");
    if (argc > 2 && !strcmp(argv[1], "loss")) {
        int rc = loss_case(path, argv[2]);
        unlink(path);
        return rc;
    }
    const int n = open_devices(4, 1);
    if (n < 4) {
        printf("SKIP: four simulated devices needed (STRATA_SIM)\n");
        close_devices();
        return 77;
    }
    for (size_t i = 0; i < sizeof k_archs / sizeof k_archs[0]; i++) arch_case(k_archs[i], path, n > 4);
    plan_totals(path);
    plan_time_op_check(path);
    /* the reference for the offload case, then the test's doors give way to the split's */
    int32_t ref[N_GEN];
    char err[1024];
    const int one[1] = {0}, all[1] = {N_LAYER};
    st_gguf *g = gen("qwen3moe", path) ? NULL : st_gguf_open(path, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    int have_ref = d && run_split(d, one, all, 1, ref, err, sizeof err) == 0;
    st_model_desc_free(d);
    st_gguf_close(g);
    for (int i = 0; i < g_n_dev; i++) st_dev_close(&g_dev[i]);
    g_n_dev = 0;
    if (have_ref && n > 4) offload_case(path, ref);
    close_devices();
    unlink(path);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("model.split: all checks passed\n");
    return 0;
}
