/* SPDX-License-Identifier: Apache-2.0 */
/* The planner without devices: consumers and their sums, the expert cache in whole slots,
 * the degrade order with its warnings, refusal with suggestions that really fit,
 * --vram-budget, extra consumers, multi-device split, and the printed forms. */
#include <stdlib.h>
#include <string.h>

#include "plan_testutil.h"
#include "quant/quant.h"

#define MiB (1024ull * 1024ull)

static st_plan_device_in dev_in(const char *name, uint64_t free_bytes) {
    st_plan_device_in d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    d.mem_total = free_bytes + 64 * MiB;
    d.mem_free = free_bytes;
    return d;
}

static uint64_t sum_consumers(const st_plan_device *d, int allocated_only) {
    uint64_t s = 0;
    for (int i = 0; i < d->n_consumers; i++)
        if (!allocated_only || st_plan_kind_allocated(d->c[i].kind)) s += d->c[i].bytes;
    return s;
}

static int note_index(const st_plan *p, const char *needle) {
    for (int i = 0; i < p->n_notes; i++)
        if (strstr(p->notes[i].text, needle)) return i;
    return -1;
}

static void check_sums(const st_plan *p) {
    for (int i = 0; i < p->n_devices; i++) {
        const st_plan_device *d = &p->dev[i];
        CHECK(sum_consumers(d, 0) == d->planned, "%s: planned %llu != sum %llu", d->in.name,
              (unsigned long long)d->planned, (unsigned long long)sum_consumers(d, 0));
        CHECK(sum_consumers(d, 1) == d->allocated, "%s: allocated != sum of allocated consumers", d->in.name);
        if (p->ok) CHECK(d->planned <= d->capacity, "%s: ok plan over capacity", d->in.name);
    }
}

static void test_dense(const pt_model *m) {
    char err[512];
    st_plan_device_in d = dev_in("GPU0", 512 * MiB);
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_ctx = 1024;
    st_plan *p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && p->ok, "dense plan refused: %s", p ? p->refusal : err);
    if (!p) return;
    check_sums(p);
    CHECK(st_plan_find(p, 0, "weights") && st_plan_find(p, 0, "kv") && st_plan_find(p, 0, "work") &&
              st_plan_find(p, 0, "logits"),
          "dense plan lacks a consumer");
    CHECK(!st_plan_find(p, 0, "expert_cache"), "dense model got an expert cache");
    const st_plan_consumer *kv = st_plan_find(p, 0, "kv");
    uint64_t want = st_plan_kv_bytes(&m->d->hp, ST_TYPE_F16, m->d->hp.n_layer, 1, 1024);
    CHECK(kv && kv->bytes == want, "kv bytes %llu, expected %llu", kv ? (unsigned long long)kv->bytes : 0ull,
          (unsigned long long)want);
    /* KV grows linearly in slots x context (up to the table and page rounding) */
    uint64_t k1 = st_plan_kv_bytes(&m->d->hp, ST_TYPE_F16, 2, 1, 4096);
    uint64_t k4 = st_plan_kv_bytes(&m->d->hp, ST_TYPE_F16, 2, 4, 4096);
    CHECK(k4 > 3 * k1 && k4 <= 4 * k1, "kv(4 slots) %llu vs kv(1 slot) %llu", (unsigned long long)k4,
          (unsigned long long)k1);
    uint64_t q8 = st_plan_kv_bytes(&m->d->hp, ST_TYPE_Q8_0, 2, 4, 4096);
    CHECK(q8 < k4 * 6 / 10, "q8_0 KV %llu not smaller than f16 %llu", (unsigned long long)q8, (unsigned long long)k4);
    CHECK(p->n_notes == 0 || note_index(p, "WARNING") < 0, "unexpected notes");
    st_plan_free(p);
}

static void test_expert_cache(const pt_model *m) {
    char err[512];
    const uint64_t slot = m->d->bytes_expert_slice;
    CHECK(slot > 0, "MoE model has no expert slice size");
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_ctx = 2048;
    r.n_slots = 2;
    /* capacity for the fixed consumers plus 10.5 slots */
    st_plan_device_in d = dev_in("GPU0", 4096 * MiB);
    st_plan *p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && p->ok, "plan: %s", p ? p->refusal : err);
    if (!p) return;
    const st_plan_consumer *c = st_plan_find(p, 0, "expert_cache");
    uint64_t fixed = p->dev[0].planned - (c ? c->bytes : 0);
    st_plan_free(p);
    d.mem_free = fixed + 10 * slot + slot / 2;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && p->ok, "plan: %s", p ? p->refusal : err);
    if (!p) return;
    check_sums(p);
    c = st_plan_find(p, 0, "expert_cache");
    CHECK(p->dev[0].expert_slots == 10, "expert slots %lld, expected 10 (whole slots of what is left)",
          (long long)p->dev[0].expert_slots);
    CHECK(c && c->bytes == 10 * slot, "expert cache bytes");
    CHECK(p->n_slots == 2 && p->n_ctx == 2048, "slots/ctx changed although they fit");
    CHECK(p->dev[0].capacity - p->dev[0].planned < slot, "more than one slot left unused");
    st_plan_free(p);
    /* plenty of room: capped at every expert of every layer */
    d.mem_free = fixed + 100000 * slot;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    if (p) {
        CHECK(p->dev[0].expert_slots == (int64_t)m->d->hp.n_layer * m->d->hp.n_expert, "cache not capped at all experts");
        CHECK(p->dev[0].expert_slots == p->dev[0].expert_slots_max, "max");
        st_plan_free(p);
    }
    /* an explicit request that does not fit shrinks with a warning naming --expert-cache */
    d.mem_free = fixed + 5 * slot;
    r.expert_cache = 8;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && p->ok && p->dev[0].expert_slots == 5, "explicit cache: %lld slots", p ? (long long)p->dev[0].expert_slots : -1);
    CHECK(p && note_index(p, "--expert-cache 5") >= 0, "no warning naming --expert-cache");
    st_plan_free(p);
    /* --expert-cache 0: no cache, no warning */
    r.expert_cache = 0;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && p->ok && !st_plan_find(p, 0, "expert_cache") && p->n_notes == 0, "--expert-cache 0");
    st_plan_free(p);
}

static void test_degrade(const pt_model *m) {
    char err[512];
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_ctx = 8192;
    r.n_slots = 1;
    st_plan_device_in d = dev_in("GPU0", 64 * 1024 * MiB);
    st_plan *p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    if (!p) return;
    uint64_t one_slot = p->dev[0].planned - (st_plan_find(p, 0, "expert_cache") ? st_plan_find(p, 0, "expert_cache")->bytes : 0);
    uint64_t kv1 = st_plan_find(p, 0, "kv")->bytes;
    st_plan_free(p);
    /* room for 2 slots (and a bit), 6 asked: slots degrade to 2 with warnings in the fixed order */
    d.mem_free = one_slot + kv1 + kv1 / 2;
    r.n_slots = 6;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && p->ok, "degraded plan refused: %s", p ? p->refusal : err);
    if (!p) return;
    check_sums(p);
    CHECK(p->n_slots == 2, "slots %d, expected 2", p->n_slots);
    int ic = note_index(p, "expert cache"), is = note_index(p, "KV streaming"), ip = note_index(p, "--parallel 2");
    CHECK(ic >= 0 && is > ic && ip > is, "degrade warnings out of order: cache %d, stream %d, parallel %d", ic, is, ip);
    for (int i = 0; i < p->n_notes; i++) CHECK(p->notes[i].level == ST_PLAN_WARNING, "note %d is not a warning", i);
    st_plan_free(p);

    /* verify windows shrink only after slots reached 1 */
    r.n_slots = 2;
    r.verify_window = 8;
    r.n_ctx = 65536;
    d.mem_free = 64 * 1024 * MiB;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    if (!p) return;
    CHECK(p->ok && p->verify_window == 8 && st_plan_find(p, 0, "verify"), "verify window consumer missing");
    uint64_t fixed1 = 0;
    st_plan_free(p);
    r.n_slots = 1;
    r.verify_window = 0;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    fixed1 = p->dev[0].planned - (st_plan_find(p, 0, "expert_cache") ? st_plan_find(p, 0, "expert_cache")->bytes : 0);
    st_plan_free(p);
    d.mem_free = fixed1 + 1 * MiB; /* 1 slot fits; masks of (1+8) or (1+4) rows x 65536 positions do not */
    r.n_slots = 2;
    r.verify_window = 8;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && p->ok, "window degrade refused: %s", p ? p->refusal : err);
    if (p) {
        CHECK(p->n_slots == 1 && p->verify_window < 8, "slots %d window %d", p->n_slots, p->verify_window);
        int ip2 = note_index(p, "--parallel 1"), iw = note_index(p, "--verify-window");
        CHECK(ip2 >= 0 && iw > ip2, "window warning must follow the slots warning (%d, %d)", ip2, iw);
        check_sums(p);
        st_plan_free(p);
    }
}

static void test_refuse(const pt_model *m) {
    char err[512];
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_ctx = 32768;
    r.n_slots = 4;
    r.reserve = 16 * MiB;
    st_plan_device_in d = dev_in("GPU0", 40 * MiB);
    st_plan *p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && !p->ok, "a 40 MiB device cannot hold 4 x 32768 positions");
    if (!p) return;
    CHECK(strstr(p->refusal, "--ctx ") != NULL, "refusal has no --ctx suggestion: %s", p->refusal);
    CHECK(strstr(p->refusal, "MiB more free memory on GPU0") != NULL, "refusal has no memory suggestion: %s", p->refusal);
    char tab[8192];
    st_plan_format(p, tab, sizeof tab);
    CHECK(strstr(tab, "REFUSED") && strstr(tab, "ERROR: the plan does not fit"), "table of a refused plan:\n%s", tab);
    /* the suggested context really fits */
    const char *s = strstr(p->refusal, "--ctx ");
    int ctx = s ? atoi(s + 6) : 0;
    CHECK(ctx > 0 && ctx < 32768, "suggested ctx %d", ctx);
    st_plan_free(p);
    r.n_ctx = ctx;
    r.n_slots = 1;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && p->ok, "the suggested --ctx %d does not fit: %s", ctx, p ? p->refusal : err);
    st_plan_free(p);
    r.n_ctx = ctx + 64;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(p && !p->ok, "--ctx %d (above the suggestion) fits: the suggestion was not the largest", ctx + 64);
    st_plan_free(p);
}

static void test_budget_extra_split(const pt_model *m) {
    char err[512];
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_ctx = 4096;
    r.n_slots = 2;
    st_plan_device_in d[2] = {dev_in("GPU0", 8192 * MiB), dev_in("GPU1", 8192 * MiB)};
    d[1].vram_budget = 1024 * MiB;
    r.n_extra = 1;
    snprintf(r.extra[0].name, sizeof r.extra[0].name, "prompt_cache");
    r.extra[0].device = 1;
    r.extra[0].bytes = 110 * MiB;
    st_plan *p = st_plan_build(m->d, d, 2, &r, err, sizeof err);
    CHECK(p && p->ok, "two devices: %s", p ? p->refusal : err);
    if (!p) return;
    check_sums(p);
    CHECK(p->dev[1].capacity == 1024 * MiB, "--vram-budget not applied: %llu", (unsigned long long)p->dev[1].capacity);
    CHECK(p->dev[0].n_layers + p->dev[1].n_layers == m->d->hp.n_layer, "layers lost in the split");
    CHECK(p->dev[0].n_layers > p->dev[1].n_layers, "split ignores capacity (%d vs %d)", p->dev[0].n_layers, p->dev[1].n_layers);
    CHECK(p->dev[1].layer_first == p->dev[0].n_layers, "ranges not contiguous");
    CHECK(st_plan_find(p, 1, "prompt_cache") && !st_plan_find(p, 0, "prompt_cache"), "extra on the wrong device");
    CHECK(st_plan_find(p, 1, "logits") && !st_plan_find(p, 0, "logits"), "logits belong on the last device");
    char buf[16384];
    st_plan_format(p, buf, sizeof buf);
    CHECK(strstr(buf, "prompt_cache") && strstr(buf, "GPU1") && strstr(buf, "expert_cache"), "table:\n%s", buf);
    st_plan_format_metrics(p, buf, sizeof buf);
    CHECK(strstr(buf, "strata_plan_bytes{device=\"1\",consumer=\"prompt_cache\",kind=\"extra\"} 115343360"),
          "metrics:\n%s", buf);
    CHECK(strstr(buf, "strata_plan_ok 1"), "metrics ok line");
    st_plan_format_json(p, buf, sizeof buf);
    CHECK(buf[0] == '{' && strstr(buf, "\"ok\":true") && strstr(buf, "\"name\":\"prompt_cache\""), "json: %s", buf);
    /* truncation keeps the buffer terminated */
    char small[40];
    size_t n = st_plan_format(p, small, sizeof small);
    CHECK(n < sizeof small && small[n] == 0, "truncated output not terminated");
    st_plan_free(p);
    /* a given split is kept */
    d[0].n_layers = 1;
    d[1].n_layers = m->d->hp.n_layer - 1;
    p = st_plan_build(m->d, d, 2, &r, err, sizeof err);
    CHECK(p && p->dev[0].n_layers == 1 && p->dev[1].layer_first == 1, "explicit split not kept");
    st_plan_free(p);
    d[1].n_layers = 0;
    p = st_plan_build(m->d, d, 2, &r, err, sizeof err);
    CHECK(!p && strstr(err, "layer split"), "a split that loses layers must be refused");
    st_plan_free(p);
}

static void test_bad_requests(const pt_model *m) {
    char err[512];
    st_plan_device_in d = dev_in("GPU0", 512 * MiB);
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_extra = 1;
    snprintf(r.extra[0].name, sizeof r.extra[0].name, "kv");
    st_plan *p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(!p && strstr(err, "'kv'"), "an extra consumer may not take a planner name");
    st_plan_free(p);
    snprintf(r.extra[0].name, sizeof r.extra[0].name, "x");
    r.extra[0].device = 3;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(!p && strstr(err, "device 3"), "extra consumer on a missing device");
    st_plan_free(p);
    r.n_extra = 0;
    r.kv_type = ST_TYPE_Q4_K;
    p = st_plan_build(m->d, &d, 1, &r, err, sizeof err);
    CHECK(!p && strstr(err, "KV type"), "unsupported KV type accepted");
    st_plan_free(p);
}

static void test_more_devices_than_layers(const pt_model *m) {
    char err[512];
    st_plan_device_in d[3] = {dev_in("GPU0", 512 * MiB), dev_in("GPU1", 512 * MiB), dev_in("GPU2", 512 * MiB)};
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_ctx = 512;
    st_plan *p = st_plan_build(m->d, d, 3, &r, err, sizeof err); /* the dense model has 2 layers */
    CHECK(p && p->ok, "3 devices, 2 layers: %s", p ? p->refusal : err);
    if (!p) return;
    check_sums(p);
    int with_layers = 0;
    for (int i = 0; i < 3; i++) {
        with_layers += p->dev[i].n_layers > 0;
        if (p->dev[i].n_layers == 0) {
            CHECK(!st_plan_find(p, i, "kv"), "KV on a device without layers");
            CHECK(i == 2 ? st_plan_find(p, i, "work") != NULL : st_plan_find(p, i, "work") == NULL,
                  "work buffers only where something runs");
        }
    }
    CHECK(with_layers == 2 && st_plan_find(p, 2, "logits"), "split of 2 layers over 3 devices");
    char buf[8192];
    st_plan_format(p, buf, sizeof buf);
    CHECK(strstr(buf, "no layers") && !strstr(buf, "--1"), "table of a device without layers:\n%s", buf);
    st_plan_free(p);
}

/* A device with a large extra consumer gets fewer layers instead of costing every device slots. */
static void test_fit_split(const pt_model *m) {
    char err[512];
    st_plan_device_in d[2] = {dev_in("GPU0", 200 * MiB), dev_in("GPU1", 200 * MiB)};
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_slots = 4;
    r.n_ctx = 16384; /* 32 MiB of KV per layer */
    r.n_extra = 1;
    snprintf(r.extra[0].name, sizeof r.extra[0].name, "big");
    r.extra[0].device = 0;
    r.extra[0].bytes = 150 * MiB;
    st_plan *p = st_plan_build(m->d, d, 2, &r, err, sizeof err);
    CHECK(p && p->ok && p->split_auto, "fit split: %s", p ? p->refusal : err);
    if (!p) return;
    check_sums(p);
    CHECK(p->n_slots == 4 && note_index(p, "--parallel") < 0, "slots cut (%d) although the other device has room",
          p->n_slots);
    CHECK(p->dev[0].n_layers < 2 && p->dev[0].n_layers + p->dev[1].n_layers == m->d->hp.n_layer,
          "layers %d + %d", p->dev[0].n_layers, p->dev[1].n_layers);
    st_plan_free(p);
    /* the same with the split fixed at 2 + 2 must cut slots: the check above can fail */
    d[0].n_layers = 2;
    d[1].n_layers = 2;
    p = st_plan_build(m->d, d, 2, &r, err, sizeof err);
    CHECK(p && p->ok && p->n_slots < 4 && note_index(p, "--parallel") >= 0 && !p->split_auto,
          "a fixed 2+2 split should cut slots (%d)", p ? p->n_slots : -1);
    st_plan_free(p);
}

static void test_parse(void) {
    uint64_t v = 0;
    CHECK(st_plan_parse_size("24GiB", &v) == 0 && v == 24ull << 30, "24GiB");
    CHECK(st_plan_parse_size("512MiB", &v) == 0 && v == 512ull << 20, "512MiB");
    CHECK(st_plan_parse_size("1.5G", &v) == 0 && v == 3ull << 29, "1.5G");
    CHECK(st_plan_parse_size("1000", &v) == 0 && v == 1000, "1000");
    CHECK(st_plan_parse_size("2GB", &v) == 0 && v == 2000000000ull, "2GB");
    CHECK(st_plan_parse_size("2 parsecs", &v) != 0 && st_plan_parse_size("", &v) != 0 &&
              st_plan_parse_size("-1G", &v) != 0,
          "bad sizes accepted");
}

int main(void) {
    char path_moe[512], path_dense[512];
    pt_tmp_path(path_moe, sizeof path_moe, "moe.gguf");
    pt_tmp_path(path_dense, sizeof path_dense, "dense.gguf");
    pt_shape moe = {ST_ARCH_QWEN3MOE, 4, 256, 4, 2, 64, 0, 512, 16, 2, 256, 32768, 0, 0, ST_TYPE_Q8_0};
    pt_shape dense = {ST_ARCH_QWEN3, 2, 128, 2, 1, 64, 256, 256, 0, 0, 0, 4096, 0, 0, ST_TYPE_F16};
    if (pt_write_model(&moe, path_moe) || pt_write_model(&dense, path_dense)) return 1;
    pt_model mm, md;
    if (pt_open_model(&mm, path_moe) || pt_open_model(&md, path_dense)) return 1;
    test_dense(&md);
    test_expert_cache(&mm);
    test_degrade(&mm);
    test_refuse(&mm);
    test_budget_extra_split(&mm);
    test_bad_requests(&mm);
    test_more_devices_than_layers(&md);
    test_fit_split(&mm);
    test_parse();
    pt_close_model(&mm);
    pt_close_model(&md);
    remove(path_moe);
    remove(path_dense);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("plan: all checks passed\n");
    return 0;
}
