/* SPDX-License-Identifier: Apache-2.0 */
/* A model over several devices: see engine_split.h. */
#include "engine/engine_split.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine_offload.h"
#include "platform/textbuf.h"

#define MIB(b) ((double)(b) / 1048576.0)

/* Declared speeds when a module reports none (GB/s): the planner's time model needs one per
 * device, and says so in its note. */
#define ST_SPLIT_CPU_GBS 40.0
#define ST_SPLIT_DEV_GBS 300.0

static int is_cpu(const st_backend_device *d) { return !strcmp(d->props->vendor, "cpu"); }

/* A device of the chosen kind: the --backend module's, else every GPU-like one. */
static int chosen(const st_backend_device *d, const char *backend) {
    if (backend) return !strcmp(d->module->backend, backend) || !strcmp(d->module->api->name, backend);
    return !is_cpu(d) && strcmp(d->props->vendor, "sim");
}

static int excluded(const st_split_opts *o, const st_backend_device *d) {
    char name[ST_DEV_NAME_MAX];
    snprintf(name, sizeof name, "%.20s%u", d->module->api->name, d->index);
    for (int32_t i = 0; i < o->n_exclude; i++)
        if (!strcmp(o->exclude[i], name)) return 1;
    return 0;
}

static int32_t list_devices(const st_split_opts *o, st_backend_registry *reg, const st_backend_device **out) {
    int32_t n = 0;
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg) && n < ST_PLAN_MAX_DEVICES - 1; i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (chosen(d, o->backend) && !excluded(o, d)) out[n++] = d;
    }
    return n;
}

static const st_backend_device *cpu_device(st_backend_registry *reg) {
    for (uint32_t i = 0; i < st_backend_registry_n_devices(reg); i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (is_cpu(d) && (d->props->caps & ST_CAP_UNIFIED)) return d;
    }
    return NULL;
}

int st_split_wanted(const st_split_opts *o, st_backend_registry *reg, int32_t n_layer) {
    const st_backend_device *devs[ST_PLAN_MAX_DEVICES];
    if (o->split_none || !reg) return 0;
    const int32_t n = list_devices(o, reg, devs);
    if (n == 0) return 0; /* nothing but the CPU: -ngl has nothing to place layers on */
    if (o->n_gpu_layers >= 0 && o->n_gpu_layers < n_layer && !is_cpu(devs[0])) return 1;
    return o->tensor_split != NULL || n > 1;
}

/* The devices in chain order: the CPU first when -ngl leaves it layers (it holds the embedding,
 * as the first layers), then the chosen devices with the main one last (it holds the output). */
static int32_t chain(const st_split_opts *o, st_backend_registry *reg, int32_t L, const st_backend_device **out,
                     int *with_cpu, char *err, size_t errlen) {
    const st_backend_device *devs[ST_PLAN_MAX_DEVICES];
    int32_t n = list_devices(o, reg, devs), k = 0;
    if (n == 0) {
        snprintf(err, errlen, "no usable device%s%s (see `strata backends`)", o->backend ? " of backend " : "",
                 o->backend ? o->backend : " other than the CPU");
        return -1;
    }
    if (o->main_device >= n) {
        snprintf(err, errlen, "--main-device %d: only %d device(s) of that kind", o->main_device, n);
        return -1;
    }
    *with_cpu = o->n_gpu_layers >= 0 && o->n_gpu_layers < L && !is_cpu(devs[0]);
    if (*with_cpu) {
        if (!(out[k] = cpu_device(reg))) {
            snprintf(err, errlen, "-ngl %d leaves %d layers to the CPU module, and none is loaded", o->n_gpu_layers,
                     L - o->n_gpu_layers);
            return -1;
        }
        k++;
    }
    if (o->split_none) {
        out[k++] = devs[o->main_device >= 0 ? o->main_device : 0];
        return k;
    }
    for (int32_t i = 0; i < n; i++)
        if (i != o->main_device) out[k++] = devs[i];
    if (o->main_device >= 0) out[k++] = devs[o->main_device];
    return k;
}

/* --tensor-split's ratios, one per device after the CPU (s->ratio). 0, or -1 with err. */
static int parse_ratios(st_split *s, const st_split_opts *o, char *err, size_t errlen) {
    const int32_t ng = s->n - (s->with_cpu ? 1 : 0);
    const char *t = o->tensor_split;
    for (int32_t i = 0; t && i < ng; i++) {
        char *end;
        s->ratio[i] = strtod(t, &end);
        if (end == t || s->ratio[i] < 0 || (i + 1 < ng && *end != ',') || (i + 1 == ng && *end)) {
            snprintf(err, errlen, "--tensor-split '%s': expected %d non-negative ratios separated by commas (one per "
                     "device)", o->tensor_split, ng);
            return -1;
        }
        t = end + 1;
    }
    return 0;
}

/* Layers per device from -ngl and --tensor-split (0 everywhere: the planner decides): the ratios
 * (or, for -ngl alone, free memory) cut the devices' layers at rounded cumulative shares, so the
 * counts add up exactly. */
static int given_layers(const st_split *s, const st_split_opts *o, int32_t L, st_plan_device_in *in, char *err,
                        size_t errlen) {
    const int32_t g0 = s->with_cpu ? 1 : 0, ng = s->n - g0;
    const int32_t on_dev = o->n_gpu_layers >= 0 && o->n_gpu_layers < L ? o->n_gpu_layers : L;
    double r[ST_PLAN_MAX_DEVICES], sum = 0, cum = 0;
    if (!o->tensor_split && !s->with_cpu) return 0;
    for (int32_t i = 0; i < ng; i++) sum += r[i] = o->tensor_split ? s->ratio[i] : (double)in[g0 + i].mem_free;
    if (sum <= 0) {
        snprintf(err, errlen, "--tensor-split '%s' gives no layer to any device", o->tensor_split);
        return -1;
    }
    int32_t given = 0;
    for (int32_t i = 0; i < ng; i++) {
        cum += r[i];
        const int32_t upto = i == ng - 1 ? on_dev : (int32_t)((double)on_dev * cum / sum + 0.5);
        in[g0 + i].n_layers = upto - given;
        given = upto;
    }
    if (s->with_cpu) in[0].n_layers = L - on_dev;
    return 0;
}

/* Leaves out device i (no layers in the plan): its door, its ratio. */
static void drop_device(st_split *s, int32_t i, FILE *log) {
    if (log) fprintf(log, "layer split: %s takes no layers: left out\n", s->dev[i].name);
    st_dev_close(&s->dev[i]);
    memmove(&s->dev[i], &s->dev[i + 1], (size_t)(s->n - i - 1) * sizeof s->dev[0]);
    const int32_t g = i - (s->with_cpu ? 1 : 0);
    if (g >= 0) memmove(&s->ratio[g], &s->ratio[g + 1], (size_t)(ST_PLAN_MAX_DEVICES - g - 1) * sizeof s->ratio[0]);
    else s->with_cpu = 0;
    s->n--;
    st_plan_free(s->plan);
    s->plan = NULL;
}

/* What the planner knows of device i. */
static void device_in(const st_split_opts *o, st_dev *v, int cpu, st_plan_device_in *in) {
    memset(in, 0, sizeof *in);
    snprintf(in->name, sizeof in->name, "%.12s (%.40s)", v->name, v->props.name);
    in->mem_total = v->props.mem_total;
    in->mem_free = v->props.mem_free;
    in->unified = (v->props.caps & ST_CAP_UNIFIED) != 0;
    uint64_t fr = 0, tot = 0;
    if (st_dev_mem_info(v, &fr, &tot) == ST_OK && fr < in->mem_free) in->runtime_overhead = in->mem_free - fr;
    in->runtime_overhead += o->reserve;
    if (!cpu) in->vram_budget = o->vram_budget;
    in->bw_gbs = v->props.mem_bw_gbs > 0 ? v->props.mem_bw_gbs : cpu ? ST_SPLIT_CPU_GBS : ST_SPLIT_DEV_GBS;
}

/* Whether every device with layers holds all of their experts; when not, the split caches
 * experts per device (an expert cache on each device of what its plan leaves, misses on the CPU
 * module), which needs a CPU module. 0, or -1 with err. */
static int experts_placed(st_split *s, st_backend_registry *reg, char *err, size_t errlen) {
    const st_plan *p = s->plan;
    s->offload = 0;
    for (int32_t i = 0; i < p->n_devices; i++)
        s->offload |= p->dev[i].n_layers > 0 && p->dev[i].expert_slots < p->dev[i].expert_slots_max;
    if (!s->offload || s->cpu.api) return 0;
    const st_backend_device *c = cpu_device(reg);
    if (!c) {
        snprintf(err, errlen, "the experts do not all fit on the devices and no CPU module is loaded to compute the "
                 "misses (see `strata backends`)");
        return -1;
    }
    if (st_dev_open(&s->cpu, c->module->api, c->index) != ST_OK) {
        snprintf(err, errlen, "opening the CPU module for expert misses: %s", st_dev_error());
        return -1;
    }
    return 0;
}

static int plan_split(st_split *s, const st_split_opts *o, st_backend_registry *reg, const st_model_desc *d,
                      const st_model_params *mp, FILE *log, char *err, size_t errlen) {
    st_plan_request r;
    st_plan_request_default(&r);
    r.n_slots = o->n_slots > 0 ? o->n_slots : 1;
    r.n_ctx = mp->n_ctx;
    r.kv_type = mp->kv_type;
    r.n_batch = mp->n_batch;
    r.topk_max = mp->topk_max;
    /* every expert resident when they fit (the layer costs count them); else each device caches
       what its plan leaves (--expert-cache N: N slots each) */
    r.expert_cache = o->expert_cache;
    r.experts_resident = o->expert_cache < 0 && !s->offload;
    st_plan_device_in in[ST_PLAN_MAX_DEVICES];
    for (int32_t i = 0; i < s->n; i++) device_in(o, &s->dev[i], !strcmp(s->dev[i].props.vendor, "cpu"), &in[i]);
    if (given_layers(s, o, d->hp.n_layer, in, err, errlen)) return -1;
    s->plan = st_plan_build(d, in, s->n, &r, err, errlen);
    if (!s->plan) return -1;
    /* a device given no layers (by the time model, -ngl or the ratios) is left out, and the
       others planned again: a stage holds at least one layer */
    for (int32_t i = 0; s->plan->ok && s->n > 1 && i < s->n; i++) {
        if (s->plan->dev[i].n_layers > 0) continue;
        drop_device(s, i, log);
        return plan_split(s, o, reg, d, mp, log, err, errlen);
    }
    if (!s->plan->ok && r.experts_resident && d->hp.n_expert > 0) {
        /* the layers with all their experts fit nowhere: plan again, each device caching experts */
        if (log) fprintf(log, "layer split: the experts do not all fit on the devices: each caches its layers' experts\n");
        st_plan_free(s->plan);
        s->plan = NULL;
        s->offload = 1;
        return plan_split(s, o, reg, d, mp, log, err, errlen);
    }
    if (log) {
        static char text[1 << 16];
        st_plan_format(s->plan, text, sizeof text);
        fprintf(log, "%s", text);
    }
    if (!s->plan->ok) {
        snprintf(err, errlen, "%s", s->plan->refusal);
        return -1;
    }
    return experts_placed(s, reg, err, errlen);
}

/* The ops each device's layers need, before anything is allocated. */
static int check_ops(st_split *s, const st_model_desc *d, const st_model_params *mp, char *err, size_t errlen) {
    int32_t first = -1, last = -1;
    for (int32_t i = 0; i < s->n; i++)
        if (s->plan->dev[i].n_layers > 0) {
            if (first < 0) first = i;
            last = i;
        }
    for (int32_t i = 0; i < s->n; i++) {
        const st_plan_device *pd = &s->plan->dev[i];
        if (pd->n_layers == 0) continue;
        st_model_stage st = {s->dev[i].api, s->dev[i].handle, s->dev[i].index, pd->n_layers, 0, -1};
        char e[512] = "";
        if (st_model_check_stage(d, &st, pd->layer_first, i == first, i == last, mp->kv_type, e, sizeof e)) {
            snprintf(err, errlen, "plan: %s cannot hold layers %d-%d: %s", s->dev[i].name, pd->layer_first,
                     pd->layer_first + pd->n_layers - 1, e);
            return -1;
        }
    }
    return 0;
}

int st_split_prepare(st_split *s, const st_split_opts *o, st_backend_registry *reg, const st_model_desc *d,
                     const st_model_params *mp, FILE *log, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    const st_backend_device *devs[ST_PLAN_MAX_DEVICES];
    int32_t n = chain(o, reg, d->hp.n_layer, devs, &s->with_cpu, err, errlen);
    if (n < 0) return -1;
    for (int32_t i = 0; i < n; i++, s->n++)
        if (st_dev_open(&s->dev[i], devs[i]->module->api, devs[i]->index) != ST_OK) {
            snprintf(err, errlen, "opening %s%u: %s", devs[i]->module->api->name, devs[i]->index, st_dev_error());
            goto fail;
        }
    if (parse_ratios(s, o, err, errlen) || plan_split(s, o, reg, d, mp, log, err, errlen) ||
        check_ops(s, d, mp, err, errlen))
        goto fail;
    for (int32_t i = 0; i < s->n; i++) {
        if (s->plan->dev[i].allocated == 0) continue;
        if (st_offload_bind(s->plan, i, s->dev[i].api, s->dev[i].handle, &s->arena[i], &s->bound[i], err, errlen) < 0)
            goto fail;
    }
    return 0;
fail:
    st_split_release(s);
    return -1;
}

/* The slots of device i's cache: its expert_cache block over the model's slot size (which rounds
 * each matrix), at most the plan's count; -1 when every expert of its layers is resident. */
static int64_t stage_slots(const st_split *s, const st_model_desc *d, int32_t i) {
    const st_plan_device *pd = &s->plan->dev[i];
    if (pd->expert_slots >= pd->expert_slots_max) return -1;
    const st_plan_consumer *c = st_plan_find(s->plan, i, "expert_cache");
    const uint64_t slot = st_model_expert_slot_bytes(d);
    int64_t n = c && slot ? (int64_t)(c->bytes / slot) : 0;
    return n < pd->expert_slots ? n : pd->expert_slots;
}

st_model *st_split_load(st_split *s, const st_model_desc *d, const st_model_params *mp, char *err, size_t errlen) {
    st_model_stage st[ST_PLAN_MAX_DEVICES];
    for (int32_t i = 0; i < s->n; i++) {
        const int64_t slots = s->offload ? stage_slots(s, d, i) : -1;
        st[i] = (st_model_stage){s->arena[i] ? &s->bound[i] : s->dev[i].api, s->dev[i].handle, s->dev[i].index,
                                 s->plan->dev[i].n_layers, slots >= 0, slots};
    }
    st_model_params p = *mp;
    p.alloc_consumer = st_plan_api_consumer;
    p.expert_slots = -1;
    if (s->offload) { /* every caching device's misses on the CPU module */
        p.cpu_api = s->cpu.api;
        p.cpu_dev = s->cpu.handle;
        p.cpu_index = s->cpu.index;
    }
    if (s->n == 1 && s->offload) p.expert_slots = stage_slots(s, d, 0); /* one stage follows the params */
    return st_model_load_split(d, st, s->n, &p, err, errlen);
}

int st_split_replan(st_split *s, st_model **m, st_split_opts *o, st_backend_registry *reg, const st_model_desc *d,
                    const st_model_params *mp, FILE *log, char *err, size_t errlen) {
    st_model_stage_info si;
    char lost[256] = "";
    size_t at = 0;
    for (int32_t i = 0; *m && st_model_stage_get(*m, i, &si) == 0; i++) {
        if (!si.lost || o->n_exclude >= ST_PLAN_MAX_DEVICES) continue;
        snprintf(o->exclude[o->n_exclude++], ST_DEV_NAME_MAX, "%s", si.device);
        at += (size_t)snprintf(lost + at, sizeof lost - at, "%s%s (layers %d-%d)", at ? ", " : "", si.device,
                               si.layer_first, si.layer_first + si.n_layers - 1);
    }
    if (!lost[0]) return 0;
    st_model_free(*m);
    *m = NULL;
    st_split_release(s);
    if (log) fprintf(log, "WARNING: lost %s; planning the model again on the devices that remain\n", lost);
    char e[1024];
    if (st_split_prepare(s, o, reg, d, mp, log, e, sizeof e) == 0 && !(*m = st_split_load(s, d, mp, e, sizeof e)))
        st_split_release(s);
    if (!*m) {
        snprintf(err, errlen, "lost %s, and the model does not run on the devices that remain: %s", lost, e);
        return -1;
    }
    return 1;
}

void st_split_release(st_split *s) {
    for (int32_t i = 0; i < s->n; i++) {
        if (s->arena[i]) {
            st_plan_api_unbind(s->dev[i].handle);
            st_plan_arena_free(s->arena[i]);
        }
        st_dev_close(&s->dev[i]);
    }
    st_plan_free(s->plan);
    st_dev_close(&s->cpu);
    memset(s, 0, sizeof *s);
}

void st_split_report(const st_split *s, const st_model *m, FILE *f) {
    const int32_t n = st_model_n_stages(m);
    double busy = 0, modelled = 0;
    for (int32_t j = 0; s && s->plan && j < s->plan->n_devices; j++) modelled += s->plan->dev[j].t_token_s;
    st_model_stage_info si;
    for (int32_t i = 0; i < n && st_model_stage_get(m, i, &si) == 0; i++) busy += si.busy_s;
    fprintf(f, "layer split over %d devices:\n  %-6s %-28s %-10s %10s %9s %9s\n", n, "device", "name", "layers", "MiB",
            "modelled", "measured");
    for (int32_t i = 0; i < n && st_model_stage_get(m, i, &si) == 0; i++) {
        double share = 0;
        for (int32_t j = 0; s && s->plan && j < s->plan->n_devices; j++)
            if (s->plan->dev[j].layer_first == si.layer_first && s->plan->dev[j].n_layers == si.n_layers &&
                modelled > 0)
                share = s->plan->dev[j].t_token_s / modelled; /* of the devices' time, boundaries aside */
        char layers[24];
        snprintf(layers, sizeof layers, "%d-%d", si.layer_first, si.layer_first + si.n_layers - 1);
        fprintf(f, "  %-6s %-28.28s %-10s %10.1f %8.0f%% %8.0f%%\n", si.device, si.name, layers, MIB(si.bytes),
                100 * share, busy > 0 ? 100 * si.busy_s / busy : 0);
    }
}

size_t st_split_times(const st_model *m, double *last, char *buf, size_t len) {
    st_textbuf o = {buf, len, 0};
    if (len) buf[0] = 0;
    st_model_stage_info si;
    for (int32_t i = 0; i < ST_PLAN_MAX_DEVICES && st_model_stage_get(m, i, &si) == 0; i++) {
        st_textbuf_put(&o, "%s%s %.1f ms", i ? ", " : "", si.device, (si.busy_s - last[i]) * 1e3);
        last[i] = si.busy_s;
    }
    return st_textbuf_done(&o);
}

size_t st_split_format_metrics(const st_model *m, char *buf, size_t len) {
    st_textbuf o = {buf, len, 0};
    if (len) buf[0] = 0;
    st_model_stage_info si;
    st_textbuf_put(&o, "# HELP strata_device_layers layers of the model each device holds\n"
                       "# TYPE strata_device_layers gauge\n");
    for (int32_t i = 0; st_model_stage_get(m, i, &si) == 0; i++)
        st_textbuf_put(&o, "strata_device_layers{device=\"%s\",layer_first=\"%d\"} %d\n", si.device, si.layer_first,
                       si.n_layers);
    st_textbuf_put(&o, "# HELP strata_device_bytes device bytes the model's stage on each device allocated\n"
                       "# TYPE strata_device_bytes gauge\n");
    for (int32_t i = 0; st_model_stage_get(m, i, &si) == 0; i++)
        st_textbuf_put(&o, "strata_device_bytes{device=\"%s\"} %llu\n", si.device, (unsigned long long)si.bytes);
    st_textbuf_put(&o, "# HELP strata_device_busy_seconds seconds each device's stage of the steps took\n"
                       "# TYPE strata_device_busy_seconds counter\n");
    for (int32_t i = 0; st_model_stage_get(m, i, &si) == 0; i++)
        st_textbuf_put(&o, "strata_device_busy_seconds{device=\"%s\"} %.6f\n", si.device, si.busy_s);
    return st_textbuf_done(&o);
}
