/* SPDX-License-Identifier: Apache-2.0 */
/* The memory plan before loading, the expert placement it implies, and expert statistics. */
#include "engine/engine_offload.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "experts/expert_cache.h"
#include "kv/kv.h"

#define MIB(b) ((double)(b) / 1048576.0)

void st_offload_opts_init(st_offload_opts *o) {
    memset(o, 0, sizeof *o);
    o->expert_cache = -1;
    o->policy = ST_EXPERT_LFRU;
    o->n_cpu_moe = -1;
}

static int match(int argc, char **argv, int *i, const char *name, const char **val) {
    const char *a = argv[*i];
    size_t ln = strlen(name);
    if (strncmp(a, name, ln)) return 0;
    if (a[ln] == '=') {
        *val = a + ln + 1;
        return 1;
    }
    if (a[ln]) return 0;
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
}

static int bad(const char *cmd, const char *name, const char *v, const char *want) {
    fprintf(stderr, "strata %s: bad value '%s' for %s (%s)\n", cmd, v ? v : "", name, want);
    return -1;
}

static int parse_long(const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

int st_offload_opt(const char *cmd, int argc, char **argv, int *i, st_offload_opts *o) {
    const char *v = NULL;
    int r;
    long n;
    if ((r = match(argc, argv, i, "--vram-budget", &v))) {
        if (r < 0 || st_plan_parse_size(v, &o->vram_budget) || o->vram_budget == 0)
            return bad(cmd, "--vram-budget", v, "a size like 4GiB");
    } else if ((r = match(argc, argv, i, "--vram-reserve-mib", &v))) {
        if (r < 0 || parse_long(v, 0, 1L << 30, &n)) return bad(cmd, "--vram-reserve-mib", v, "MiB, 0 or more");
        o->reserve = (uint64_t)n << 20;
    } else if ((r = match(argc, argv, i, "--expert-cache", &v))) {
        if (r < 0) return bad(cmd, "--expert-cache", v, "auto, a number of slots or a size");
        o->expert_cache_bytes = 0;
        if (!strcmp(v, "auto")) o->expert_cache = -1;
        else if (parse_long(v, 0, LONG_MAX > (1LL << 40) ? (long)(1LL << 40) : LONG_MAX, &n) == 0) /* 32-bit on Windows */
            o->expert_cache = n;
        else if (st_plan_parse_size(v, &o->expert_cache_bytes) == 0) o->expert_cache = -1;
        else return bad(cmd, "--expert-cache", v, "auto, a number of slots or a size like 2GiB");
    } else if ((r = match(argc, argv, i, "--expert-policy", &v))) {
        int p = r < 0 ? -1 : st_expert_policy_from_name(v);
        if (p < 0) return bad(cmd, "--expert-policy", v, "lfru, lru or profile");
        o->policy = p;
    } else if ((r = match(argc, argv, i, "--expert-profile", &v))) {
        if (r < 0) return bad(cmd, "--expert-profile", v, "a file written by `strata profile-experts`");
        o->profile = v;
    } else if ((r = match(argc, argv, i, "--n-cpu-moe", &v)) || (r = match(argc, argv, i, "-ncmoe", &v))) {
        if (r < 0 || parse_long(v, 0, 1 << 20, &n)) return bad(cmd, "--n-cpu-moe", v, "a number of layers, 0 or more");
        o->n_cpu_moe = (int32_t)n;
    } else if (!strcmp(argv[*i], "--cpu-moe") || !strcmp(argv[*i], "-cmoe")) {
        o->n_cpu_moe = INT32_MAX;
    } else if ((r = match(argc, argv, i, "--cpu-threads", &v))) {
        if (r < 0 || parse_long(v, 0, 4096, &n)) return bad(cmd, "--cpu-threads", v, "0..4096");
        o->cpu_threads = (int32_t)n;
    } else {
        return 0;
    }
    o->given = 1;
    return 1;
}

void st_offload_opts_help(FILE *f) {
    fprintf(f,
            "  --vram-budget SIZE     plan as if the device had at most SIZE (e.g. 8GiB)\n"
            "  --vram-reserve-mib N   keep N MiB of the device free\n"
            "  --expert-cache X       auto (what the plan leaves), N slots, or a size; experts that do not\n"
            "                         fit stay in the file and their misses run on the CPU module\n"
            "  --expert-policy P      lfru (default), lru, or profile (fixed, from --expert-profile)\n"
            "  --expert-profile FILE  ranked experts (`strata profile-experts`) that fill the cache first\n"
            "  --n-cpu-moe N          static split, as llama.cpp's: the experts of the first N layers stay in\n"
            "                         host memory (computed by the CPU, or streamed to the device when\n"
            "                         that is faster), the other layers' experts are resident and fixed\n"
            "  --cpu-moe              the same for every layer\n"
            "  --cpu-threads N        threads of the CPU module computing expert misses\n");
}

static void log_block(FILE *log, const char *text) {
    if (log && text) fputs(text, log);
}

/* The first CPU device of the registry. */
static const st_backend_device *cpu_device(st_backend_registry *reg) {
    for (uint32_t i = 0; reg && i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (!strcmp(d->props->vendor, "cpu") && (d->props->caps & ST_CAP_UNIFIED)) return d;
    }
    return NULL;
}

/* Device memory one stream of the module holds of its own: free memory before and after
 * creating one (0 when the module cannot say). */
/* Device memory the driver takes after the plan's measurement (see st_offload_prepare). */
#define ST_OFFLOAD_DRIVER_GROWTH (64ull << 20)

static uint64_t stream_bytes(st_dev *dv) {
    uint64_t f0 = 0, f1 = 0, t = 0;
    st_stream *s = NULL;
    if (st_dev_mem_info(dv, &f0, &t) != ST_OK || st_dev_stream_create(dv, &s) != ST_OK) return 0;
    st_status st = st_dev_mem_info(dv, &f1, &t);
    st_dev_stream_destroy(dv, s);
    return st == ST_OK && f1 < f0 ? f0 - f1 : 0;
}

/* Staging slots of a cache: misses uploaded and computed on the device beside the CPU's. */
#define ST_OFFLOAD_STAGE_SLOTS 16

/* First MoE layer index from which --n-cpu-moe N leaves experts resident (the layer after the
 * N-th MoE layer), and the slots that takes. */
static int32_t static_first(const st_model_desc *d, int32_t n_cpu_moe) {
    int32_t seen = 0;
    for (int32_t l = 0; l < d->hp.n_layer; l++)
        if (d->layers[l].is_moe && seen++ == n_cpu_moe) return l;
    return d->hp.n_layer;
}
static int64_t static_slots(const st_model_desc *d, int32_t n_cpu_moe) {
    int64_t n = 0;
    for (int32_t l = static_first(d, n_cpu_moe); l < d->hp.n_layer; l++) n += d->layers[l].is_moe ? d->hp.n_expert : 0;
    return n;
}

/* What the cache holds at load: --expert-profile's ranking; --n-cpu-moe's layers (fixed); or, by
 * default, the whole last layers that fit, so the cache starts as the static split and moves
 * from it only on evidence of reuse (lfru). out->profile, or -1 with err. */
static int initial_placement(const st_offload_opts *o, const st_model_desc *d, int64_t slots, FILE *log,
                             st_offload *out, char *err, size_t errlen) {
    const int32_t L = d->hp.n_layer, X = d->hp.n_expert;
    if (o->profile) {
        out->profile = st_expert_profile_read(o->profile, err, errlen);
        return !out->profile || st_expert_profile_check(out->profile, L, X, err, errlen) ? -1 : 0;
    }
    if (o->policy == ST_EXPERT_PROFILE && o->n_cpu_moe < 0) {
        snprintf(err, errlen, "--expert-policy profile keeps the cache fixed to a profile: give --expert-profile");
        return -1;
    }
    int32_t first = L;
    if (o->n_cpu_moe >= 0) {
        first = static_first(d, o->n_cpu_moe);
        if (static_slots(d, o->n_cpu_moe) > slots && log)
            fprintf(log, "experts: WARNING: --n-cpu-moe %d needs %lld slots for its resident layers, the plan has %lld; "
                    "the last layers that fit are resident (raise --vram-budget or --n-cpu-moe)\n", o->n_cpu_moe,
                    (long long)static_slots(d, o->n_cpu_moe), (long long)slots);
    }
    for (int64_t room = slots; first > 0 && o->n_cpu_moe < 0;) { /* the last whole layers that fit */
        int32_t l = first - 1;
        int64_t need = d->layers[l].is_moe ? X : 0;
        if (need > room) break;
        room -= need;
        first = l;
    }
    if (first >= L) return 0;
    out->profile = st_expert_profile_layers(L, X, first, L - 1, err, errlen);
    if (!out->profile) return -1;
    if (log)
        fprintf(log, "experts: layers %d-%d start resident (%s); the rest are computed on the CPU or streamed\n", first,
                L - 1, o->n_cpu_moe >= 0 ? "--n-cpu-moe, fixed" : "then adapted on evidence of reuse");
    return 0;
}

int st_offload_bind(const st_plan *p, int32_t d, const st_backend_api *api, st_device *dev, st_plan_arena **arena,
                    st_backend_api *bound, char *err, size_t errlen) {
    const st_plan_device *pd = &p->dev[d];
    st_status st = ST_OK;
    *arena = st_plan_arena_create(p, d, api, dev, &st, err, errlen);
    if (!*arena) return -1;
    /* every allocated consumer, in the plan's order: the fallback for buffers not named */
    const char *chain[ST_PLAN_MAX_CONSUMERS];
    int n = 0;
    for (int32_t i = 0; i < pd->n_consumers; i++)
        if (st_plan_kind_allocated(pd->c[i].kind) && pd->c[i].bytes > 0) chain[n++] = pd->c[i].name;
    if (n == 0 || st_plan_api_bind(*arena, api, dev, chain, n, bound, err, errlen)) {
        if (n == 0) snprintf(err, errlen, "the memory plan allocates nothing on %s", pd->in.name);
        st_plan_arena_free(*arena);
        *arena = NULL;
        return -1;
    }
    return n;
}

/* The plan's blocks on device 0 and the table carving from them (out->plan is ok). */
static int bind_arena(st_offload *out, const st_backend_api *api, st_device *dev, FILE *log, char *err,
                      size_t errlen) {
    int n = st_offload_bind(out->plan, 0, api, dev, &out->arena, &out->api, err, errlen);
    if (n < 0) return -1;
    out->dev = dev;
    if (log)
        fprintf(log, "memory: %d device allocations of %.1f MiB made from the plan, one per consumer; the model's "
                "buffers are carved from them\n", n, MIB(st_plan_arena_bytes(out->arena)));
    return 0;
}

int st_offload_prepare(const st_offload_opts *o, const st_model_desc *d, st_backend_registry *reg,
                       const st_backend_device *pick, st_device *dev, st_model_params *mp, FILE *log,
                       st_offload *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->expert_slots = -1;
    st_dev dv;
    st_dev_wrap(&dv, pick->module->api, dev, pick->index, 0);
    const int unified = (pick->props->caps & ST_CAP_UNIFIED) && !mp->no_in_place;
    if (unified && !o->given) return 0; /* weights are read in place: nothing to plan on the device */
    st_plan_device_in in;
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "%.12s (%.40s)", dv.name, pick->props->name);
    snprintf(out->device, sizeof out->device, "%s", in.name);
    out->unified = unified;
    in.mem_total = pick->props->mem_total;
    in.mem_free = pick->props->mem_free;
    in.unified = unified;
    /* the runtime's own overhead: free memory at probe time against now (the device is open) */
    uint64_t fr = 0, tot = 0;
    if (st_dev_mem_info(&dv, &fr, &tot) == ST_OK && fr < in.mem_free) in.runtime_overhead = in.mem_free - fr;
    /* the model's streams may hold device memory of the module's own (CUDA: a workspace per
       stream), outside mem_alloc: measured on one, counted for the compute stream and, for a
       model with experts, the upload stream of a cache (not on a device that reads host memory,
       whose free memory is the host's and moves on its own) */
    const uint64_t per_stream = unified ? 0 : stream_bytes(&dv);
    in.runtime_overhead += per_stream * (d->hp.n_expert > 0 ? 2u : 1u);
    if (log && per_stream)
        fprintf(log, "runtime: a stream holds %.1f MiB of device memory of its own (measured); counted for %d\n",
                MIB(per_stream), d->hp.n_expert > 0 ? 2 : 1);
    /* what the driver takes after this measurement, outside any allocation of ours (kernel
       launches, graph instantiation, host mappings): measured 17-41 MiB past the plan on an H200
       (docs/memory.md); an allowance keeps --vram-budget a bound on GPU drivers' devices */
    if (!unified && (!strcmp(pick->props->vendor, "nvidia") || !strcmp(pick->props->vendor, "amd"))) {
        in.runtime_overhead += ST_OFFLOAD_DRIVER_GROWTH;
        if (log)
            fprintf(log, "runtime: %.0f MiB allowed for what the driver takes after the first launches\n",
                    MIB(ST_OFFLOAD_DRIVER_GROWTH));
    }
    in.vram_budget = o->vram_budget;
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_slots = mp->n_seq > 0 ? mp->n_seq : 1;
    r.n_ctx = mp->n_ctx;
    r.kv_type = mp->kv_type;
    r.n_batch = mp->n_batch > 0 ? mp->n_batch : 512;
    r.topk_max = mp->topk_max;
    r.reserve = o->reserve;
    r.expert_cache = o->expert_cache;
    if (o->expert_cache_bytes && d->bytes_expert_slice)
        r.expert_cache = (int64_t)(o->expert_cache_bytes / d->bytes_expert_slice);
    if (o->n_cpu_moe >= 0) r.expert_cache = static_slots(d, o->n_cpu_moe) + ST_OFFLOAD_STAGE_SLOTS;
    out->plan = st_plan_build(d, &in, 1, &r, err, errlen);
    if (!out->plan) return -1;
    const st_plan *p = out->plan;
    size_t cap = 1 << 16;
    char *text = malloc(cap);
    if (text) {
        st_plan_format(p, text, cap);
        log_block(log, text);
        free(text);
    }
    if (!p->ok) {
        snprintf(err, errlen, "the memory plan refuses this configuration: %s", p->refusal);
        return -1;
    }
    if (p->n_slots != r.n_slots || (r.n_ctx > 0 && p->n_ctx != r.n_ctx)) {
        snprintf(err, errlen, "the memory plan fits only %d slot(s) x %d positions (asked %d x %d): use a smaller "
                 "--ctx or --parallel, or a larger --vram-budget", p->n_slots, p->n_ctx, r.n_slots, r.n_ctx);
        return -1;
    }
    const st_plan_device *pd = &p->dev[0];
    if (pd->expert_slots_max == 0 || pd->expert_slots >= pd->expert_slots_max || unified) return 0;
    /* an expert cache: the model's slots are strided per matrix (so it may get fewer than the
     * plan's when the matrices' types differ across layers); its slot table and index arrays
     * are the plan's expert_table consumer */
    const st_plan_consumer *ec = st_plan_find(p, 0, "expert_cache");
    uint64_t budget = ec ? ec->bytes : 0;
    uint64_t slot = st_model_expert_slot_bytes(d);
    int64_t slots = slot ? (int64_t)(budget / slot) : 0;
    if (slots > pd->expert_slots) slots = pd->expert_slots;
    const st_backend_device *cd = cpu_device(reg);
    if (!cd) {
        snprintf(err, errlen, "the plan caches %lld of %lld experts on %s but no CPU module is loaded to compute "
                 "the misses (see `strata backends`)", (long long)pd->expert_slots,
                 (long long)pd->expert_slots_max, in.name);
        return -1;
    }
    if (st_dev_open(&out->cpu, cd->module->api, cd->index) != ST_OK) {
        snprintf(err, errlen, "opening the CPU module for expert misses: %s", st_dev_error());
        return -1;
    }
    out->cpu_dev = out->cpu.handle;
    out->cpu_api = cd->module->api;
    out->cpu_index = cd->index;
    /* a few of the slots stage misses on the device: uploaded and computed there, beside the
       CPU's share (the cost model splits each layer's misses between the two) */
    const int32_t stage = slots >= 4 * ST_OFFLOAD_STAGE_SLOTS ? ST_OFFLOAD_STAGE_SLOTS
                          : o->n_cpu_moe >= 0 && slots > 0 ? (int32_t)(slots < ST_OFFLOAD_STAGE_SLOTS ? slots : ST_OFFLOAD_STAGE_SLOTS)
                          : slots >= 16 ? (int32_t)(slots / 4) : 0;
    slots -= stage;
    if (initial_placement(o, d, slots, log, out, err, errlen)) return -1;
    mp->expert_stage_slots = stage;
    mp->expert_stage_rows = 0;
    out->expert_slots = slots;
    mp->expert_slots = slots;
    mp->expert_policy = o->n_cpu_moe >= 0 ? ST_EXPERT_PROFILE : o->policy;
    mp->expert_profile = out->profile;
    mp->cpu_api = out->cpu_api;
    mp->cpu_dev = out->cpu_dev;
    mp->cpu_index = out->cpu_index;
    /* uploads from the pinned file are asynchronous (CUDA: cudaHostRegister); STRATA_EXPERT_PIN=0
       leaves the file pageable (comparisons of device memory and upload speed) */
    const char *pin_env = getenv("STRATA_EXPERT_PIN");
    mp->expert_pin = !(pin_env && strcmp(pin_env, "0") == 0);
    if (log)
        fprintf(log, "experts: %lld of %lld slots on %s (%.2f MiB each, %s) and %d staging slots; misses on %s (%s)\n",
                (long long)slots, (long long)pd->expert_slots_max, in.name, MIB(slot),
                st_expert_policy_name(mp->expert_policy),
                stage, out->cpu.name, cd->props->name);
    return 0;
}

static void unbind_arena(st_offload *o) {
    if (!o->arena) return;
    st_plan_api_unbind(o->dev);
    st_plan_arena_free(o->arena);
    o->arena = NULL;
    o->dev = NULL;
}

st_model *st_offload_load(st_offload *o, const st_model_desc *desc, const st_backend_api *api, st_device *dev,
                          uint32_t index, const st_model_params *mp, FILE *log, char *err, size_t errlen) {
    if (!o->plan || !o->plan->ok || o->unified) return st_model_load(desc, api, dev, index, mp, err, errlen);
    if (o->arena) {
        snprintf(err, errlen, "the plan's memory holds a model already");
        return NULL;
    }
    if (bind_arena(o, api, dev, log, err, errlen)) return NULL;
    st_model_params p = *mp;
    p.alloc_consumer = st_plan_api_consumer;
    st_model *m = st_model_load(desc, &o->api, dev, index, &p, err, errlen);
    if (!m) unbind_arena(o);
    return m;
}

void st_offload_release(st_offload *o) {
    unbind_arena(o);
    st_dev_close(&o->cpu);
    st_expert_profile_free(o->profile);
    st_plan_free(o->plan);
    memset(o, 0, sizeof *o);
    o->expert_slots = -1;
}

size_t st_offload_format_json(st_model *m, char *buf, size_t len) {
    st_model_expert_info in;
    if (len) buf[0] = 0;
    if (st_model_expert_info_get(m, &in)) return 0;
    char e[256];
    st_expert_stats bel;
    double bhr = -1;
    if (st_model_expert_belady(m, &bel, e, sizeof e) == 0) bhr = st_expert_stats_hit_rate(&bel);
    const double tok = in.tokens ? (double)in.tokens : 1.0;
    int w = snprintf(buf, len,
                     ",\"experts\":{\"slots\":%lld,\"experts_total\":%lld,\"slot_bytes\":%llu,\"policy\":\"%s\","
                     "\"hits\":%llu,\"misses\":%llu,\"inserts\":%llu,\"evictions\":%llu,\"hit_rate\":%.4f,"
                     "\"belady_hit_rate\":%.4f,\"bytes\":{\"device\":%llu,\"host\":%llu,\"upload\":%llu},"
                     "\"tokens\":%llu,\"cpu_assignments\":%llu,\"cpu_ms_per_token\":%.4f,"
                     "\"route_sync_ms_per_token\":%.4f,\"pinned_bytes\":%llu,\"stage_slots\":%lld,"
                     "\"staged_experts\":%llu,\"staged_assignments\":%llu,\"upload_ms_per_expert\":%.4f}",
                     (long long)in.slots, (long long)in.experts_total, (unsigned long long)in.slot_bytes,
                     st_expert_policy_name(st_model_params_of(m)->expert_policy), (unsigned long long)in.stats.hits,
                     (unsigned long long)in.stats.misses, (unsigned long long)in.stats.inserts,
                     (unsigned long long)in.stats.evictions, st_expert_stats_hit_rate(&in.stats), bhr,
                     (unsigned long long)in.stats.bytes_device, (unsigned long long)in.stats.bytes_host,
                     (unsigned long long)in.stats.bytes_upload, (unsigned long long)in.tokens,
                     (unsigned long long)in.cpu_assign, in.cpu_s * 1e3 / tok, in.route_s * 1e3 / tok,
                     (unsigned long long)in.pinned_bytes, (long long)in.stage_slots,
                     (unsigned long long)in.stage_experts, (unsigned long long)in.stage_assign, in.upload_s * 1e3);
    if (w < 0) return 0;
    return (size_t)w < len ? (size_t)w : (len ? len - 1 : 0);
}

size_t st_offload_format_metrics(const st_offload *o, st_model *m, char *buf, size_t len) {
    size_t n = 0;
    if (len) buf[0] = 0;
    if (o && o->plan) n += st_plan_format_metrics(o->plan, buf, len);
    const st_expert_cache *c = m ? st_model_expert_cache(m) : NULL;
    if (c && n + 1 < len) {
        char e[256];
        st_expert_stats bel;
        double bhr = -1;
        if (st_model_expert_belady(m, &bel, e, sizeof e) == 0) bhr = st_expert_stats_hit_rate(&bel);
        /* device "0": the plan's label of the (only) device */
        n += st_expert_cache_format_metrics(c, "0", bhr, buf + n, len - n);
        st_model_expert_info in;
        st_model_expert_info_get(m, &in);
        int w = snprintf(buf + n, len - n,
                         "# TYPE strata_expert_cpu_seconds_total counter\nstrata_expert_cpu_seconds_total %.6f\n"
                         "# TYPE strata_expert_cpu_assignments_total counter\n"
                         "strata_expert_cpu_assignments_total %llu\n"
                         "# TYPE strata_expert_streamed_total counter\nstrata_expert_streamed_total %llu\n"
                         "# TYPE strata_expert_streamed_assignments_total counter\n"
                         "strata_expert_streamed_assignments_total %llu\n"
                         "# TYPE strata_expert_route_sync_seconds_total counter\n"
                         "strata_expert_route_sync_seconds_total %.6f\n",
                         in.cpu_s, (unsigned long long)in.cpu_assign, (unsigned long long)in.stage_experts,
                         (unsigned long long)in.stage_assign, in.route_s);
        if (w > 0) n += (size_t)w < len - n ? (size_t)w : len - n - 1;
    }
    return n;
}
