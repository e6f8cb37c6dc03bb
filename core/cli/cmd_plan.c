/* SPDX-License-Identifier: Apache-2.0 */
/* strata plan -m F.gguf [options]: the memory plan of a model on the chosen devices, printed
 * as one table per device (consumer, MiB, why), with the degrade warnings; nothing is
 * allocated except each runtime's own context, which is measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "backend/backend_registry.h"
#include "backend/dev.h"
#include "cli/cli_common.h"
#include "cli/cli_planned.h"
#include "cli/commands.h"
#include "gguf/gguf.h"
#include "kv/kv.h"
#include "model/model.h"
#include "plan/plan.h"
#include "plan/plan_arena.h"

static void help(FILE *f) {
    fprintf(f,
            "usage: strata plan -m F.gguf [options]\n"
            "  --backend NAME          devices of this module only (cuda, sim, cpu, ...)\n"
            "  --device LIST           comma-separated device indexes of `strata backends`' list, or NAME:N\n"
            "                          (default: every GPU, else the CPU; simulated devices only when asked)\n"
            "  --parallel N            concurrent slots (default 1)\n"
            "  --ctx N                 positions per slot (default min(training context, 4096))\n"
            "  --kv-type T             f16 (default), f32, q8_0\n"
            "  --batch N               largest prefill chunk in tokens (default 512)\n"
            "  --verify-window W       draft tokens verified per slot and step (default 0)\n"
            "  --draft-bytes SIZE      draft / MTP head on the last device\n"
            "  --extra NAME:DEV:SIZE   a consumer registered by name (repeatable)\n"
            "  --layers A,B,...        layers per device (default: split by usable memory)\n"
            "  --vram-budget SIZE[,SIZE...]  act as if each device had at most SIZE (one for all, or per device)\n"
            "  --vram-reserve-mib N    keep N MiB free on every device\n"
            "  --expert-cache auto|N   expert slots per device (auto: what is left)\n"
            "  --runtime-overhead SIZE the runtime's own bytes when not measurable (added to what is measured)\n"
            "  --json | --metrics      print the plan as JSON or Prometheus lines instead of the table\n"
            "  --allocate              then allocate every consumer on the devices, report what each device\n"
            "                          holds against the plan, and free it (proves the plan on real memory)\n"
            "  --load                  (one device) then load the model as run, bench and serve do (their plan,\n"
            "                          an expert cache when it caches experts), run one forward, and print what\n"
            "                          each consumer took against the plan\n"
            "Exit status: 0 the plan fits (maybe degraded, see WARNING lines), 1 refused or an allocation\n"
            "failed, 2 bad arguments.\n");
}

static int parse_size_opt(const char *name, const char *v, uint64_t *out) {
    if (st_plan_parse_size(v, out)) {
        fprintf(stderr, "strata plan: bad value for %s: '%s' (a size like 512MiB or 24GiB)\n", name, v);
        return -1;
    }
    return 0;
}

static int is_gpu_like(const st_backend_device *d) {
    return strcmp(d->props->vendor, "cpu") != 0 && strcmp(d->props->vendor, "sim") != 0;
}

/* Picks devices from --backend / --device into out[]; returns the count or -1. */
static int pick_devices(st_backend_registry *reg, const char *backend, const char *list,
                        const st_backend_device **out, int cap) {
    const uint32_t n = st_backend_registry_n_devices(reg);
    int k = 0;
    if (list) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", list);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            const char *colon = strchr(t, ':');
            const st_backend_device *pick = NULL;
            if (colon) {
                long idx = strtol(colon + 1, NULL, 10);
                for (uint32_t i = 0; i < n && !pick; i++) {
                    const st_backend_device *d = st_backend_registry_device(reg, i);
                    if ((size_t)(colon - t) == strlen(d->module->api->name) &&
                        !strncmp(t, d->module->api->name, (size_t)(colon - t)) && d->index == (uint32_t)idx)
                        pick = d;
                }
            } else {
                char *end = NULL;
                long idx = strtol(t, &end, 10);
                if (end != t && !*end && idx >= 0 && (uint32_t)idx < n) pick = st_backend_registry_device(reg, (uint32_t)idx);
            }
            if (!pick) {
                fprintf(stderr, "strata plan: --device '%s': no such usable device (see `strata backends`)\n", t);
                return -1;
            }
            if (k == cap) break;
            out[k++] = pick;
        }
        return k;
    }
    for (uint32_t i = 0; i < n && k < cap; i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (backend ? (!strcmp(d->module->api->name, backend) || !strcmp(d->module->backend, backend)) : is_gpu_like(d))
            out[k++] = d;
    }
    for (uint32_t i = 0; i < n && k == 0 && !backend; i++) {
        const st_backend_device *d = st_backend_registry_device(reg, i);
        if (!strcmp(d->props->vendor, "cpu")) out[k++] = d;
    }
    if (k == 0)
        fprintf(stderr, "strata plan: no usable device%s%s (see `strata backends`)\n", backend ? " of backend " : "",
                backend ? backend : "");
    return k;
}

/* Allocates every consumer of the plan on its device, compares what the device reports with
 * the plan, frees everything. 0, or -1 (reason printed) when an allocation fails. */
static int allocate_plan(const st_plan *p, const st_backend_device *const *picked, int nd) {
    st_device *devs[ST_PLAN_MAX_DEVICES] = {0};
    const st_backend_api *apis[ST_PLAN_MAX_DEVICES];
    uint64_t before[ST_PLAN_MAX_DEVICES] = {0};
    int rc = 0;
    for (int i = 0; i < nd; i++) {
        apis[i] = picked[i]->module->api;
        if (apis[i]->device_open(picked[i]->index, &devs[i]) != ST_OK) {
            fprintf(stderr, "strata plan: opening %s: %s\n", p->dev[i].in.name, apis[i]->last_error());
            rc = -1;
            goto out;
        }
        uint64_t fr = 0, tot = 0;
        if (apis[i]->mem_info(devs[i], &fr, &tot) == ST_OK) before[i] = fr;
    }
    char err[1024];
    st_status st = ST_OK;
    st_plan_arenas *as = st_plan_arenas_create(p, apis, devs, &st, err, sizeof err);
    if (!as) {
        fprintf(stderr, "strata plan: ERROR: %s\n", err);
        rc = -1;
        goto out;
    }
    printf("\nallocated:\n");
    for (int i = 0; i < nd; i++) {
        uint64_t fr = 0, tot = 0;
        if (apis[i]->mem_info(devs[i], &fr, &tot) != ST_OK) continue;
        uint64_t took = before[i] > fr ? before[i] - fr : 0;
        printf("  %-40s %10.1f MiB taken, plan %10.1f MiB allocated, %10.1f MiB free now\n", p->dev[i].in.name,
               (double)took / 1048576.0, (double)p->dev[i].allocated / 1048576.0, (double)fr / 1048576.0);
    }
    if (st_plan_arenas_free(as) != ST_OK) {
        fprintf(stderr, "strata plan: freeing the arenas failed\n");
        rc = -1;
    }
out:
    for (int i = 0; i < nd; i++)
        if (devs[i]) apis[i]->device_close(devs[i]);
    return rc;
}

#define MIB(b) ((double)(b) / 1048576.0)

/* Loads the model on device `dev` ("module:index") the way run, bench, profile-experts and the
 * server's engine do (st_cli_open_planned: st_offload_prepare plans with the same options, then
 * st_offload_load allocates the plan's blocks and carves the model from them, with an expert
 * cache and its misses on the CPU module when the plan caches experts), runs one forward, and
 * prints per consumer what the model took against that plan and against `p` (the plan printed
 * above). 0, or -1 with the reason printed. */
static int load_like_commands(const char *model, const char *dev, const st_plan *p, const st_plan_request *r,
                              uint64_t vram_budget) {
    st_cli_model_opts o;
    memset(&o, 0, sizeof o);
    o.model = model;
    o.device = dev;
    st_offload_opts oo;
    st_offload_opts_init(&oo);
    oo.vram_budget = vram_budget;
    oo.reserve = r->reserve;
    oo.expert_cache = r->expert_cache;
    oo.given = 1; /* a plan even on a device that reads host memory */
    st_model_params mp;
    st_model_params_default(&mp);
    mp.n_seq = r->n_slots;
    mp.n_ctx = r->n_ctx > 0 ? r->n_ctx : p->n_ctx;
    mp.n_batch = r->n_batch;
    mp.n_out_max = r->n_slots;
    mp.kv_type = r->kv_type;
    printf("\nloading as run, bench and serve do (their plan and its table follow on stderr):\n");
    fflush(stdout);
    st_cli_session s;
    st_offload off;
    if (st_cli_open_planned("plan", &s, &o, &oo, &mp, 0, &off)) return -1;
    char err[1024];
    int rc = -1;
    const int32_t tok = 1;
    int32_t id = -1;
    if (st_model_eval(s.m, 0, &tok, 1, 0, 0, NULL, err, sizeof err) || st_model_argmax(s.m, &id, err, sizeof err)) {
        fprintf(stderr, "strata plan: ERROR: forward inside the plan: %s\n", err);
        goto out;
    }
    const st_plan *q = off.plan;
    if (!q || !off.arena) {
        printf("  %s reads host memory: the weights are read in place and nothing is allocated from a plan; "
               "one forward ran (argmax %d)\n", s.device_text, id);
        rc = 0;
        goto out;
    }
    const st_plan_device *qd = &q->dev[0];
    printf("  %-16s %14s %14s %12s\n", "consumer", "this plan MiB", "loaded plan", "used MiB");
    uint64_t used = 0;
    for (int32_t i = 0; i < qd->n_consumers; i++) {
        const st_plan_consumer *c = &qd->c[i];
        if (!st_plan_kind_allocated(c->kind)) continue;
        const st_plan_consumer *pc = st_plan_find(p, 0, c->name);
        const uint64_t u = st_plan_arena_used(off.arena, c->name);
        used += u;
        char mine[32];
        if (pc) snprintf(mine, sizeof mine, "%.1f", MIB(pc->bytes));
        else snprintf(mine, sizeof mine, "-");
        printf("  %-16s %14s %14.1f %12.1f%s\n", c->name, mine, MIB(c->bytes), MIB(u),
               u > c->bytes ? "  OVER THE PLAN" : "");
    }
    printf("  %-16s %14.1f %14.1f %12.1f\n", "allocated", MIB(p->dev[0].allocated), MIB(qd->allocated), MIB(used));
    const st_backend_device *pick = s.pick;
    uint64_t fr = 0, tot = 0;
    st_dev door;
    st_dev_wrap(&door, s.api, s.dev, s.index, 0);
    if (pick && st_dev_mem_info(&door, &fr, &tot) == ST_OK && fr <= pick->props->mem_free) {
        uint64_t runtime = 0;
        const st_plan_consumer *rc_ = st_plan_find(q, 0, "runtime");
        if (rc_) runtime = rc_->bytes;
        printf("  device: %.1f MiB taken since the probe (the loaded plan: %.1f MiB allocated + %.1f MiB runtime); "
               "%.1f MiB free now\n", MIB(pick->props->mem_free - fr), MIB(qd->allocated), MIB(runtime), MIB(fr));
    }
    st_model_expert_info xi;
    if (st_model_expert_info_get(s.m, &xi) == 0)
        printf("  experts: a cache of %lld of %lld experts and %lld staging slots (%.2f MiB each); misses run on "
               "the CPU module\n", (long long)xi.slots, (long long)xi.experts_total, (long long)xi.stage_slots,
               MIB(xi.slot_bytes));
    else
        printf("  experts: every expert resident on the device\n");
    printf("loaded inside the plan: the model took %.1f MiB of the %.1f MiB planned for it; one forward ran "
           "(argmax %d)\n", MIB(used), MIB(qd->allocated), id);
    rc = used <= qd->allocated ? 0 : -1;
out:
    st_cli_close_planned(&s, &off);
    return rc;
}

int st_cmd_plan(int argc, char **argv) {
    const char *model = NULL, *backend = NULL, *devlist = NULL, *budget = NULL, *layers = NULL, *v;
    st_plan_request r;
    st_plan_request_default(&r);
    uint64_t extra_overhead = 0;
    int json = 0, metrics = 0, allocate = 0, load = 0;
    long n;
    for (int i = 1; i < argc; i++) {
        int k;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--json")) { json = 1; continue; }
        if (!strcmp(argv[i], "--metrics")) { metrics = 1; continue; }
        if (!strcmp(argv[i], "--allocate")) { allocate = 1; continue; }
        if (!strcmp(argv[i], "--load")) { load = 1; continue; }
        if ((k = st_cli_opt(argc, argv, &i, "--model", "-m", &v))) { if (k < 0) return 2; model = v; }
        else if ((k = st_cli_opt(argc, argv, &i, "--backend", NULL, &v))) { if (k < 0) return 2; backend = v; }
        else if ((k = st_cli_opt(argc, argv, &i, "--device", NULL, &v))) { if (k < 0) return 2; devlist = v; }
        else if ((k = st_cli_opt(argc, argv, &i, "--parallel", "-np", &v))) {
            if (k < 0 || st_cli_int("plan", "--parallel", v, 1, 4096, &n)) return 2;
            r.n_slots = (int32_t)n;
        } else if ((k = st_cli_opt(argc, argv, &i, "--ctx", "-c", &v))) {
            if (k < 0 || st_cli_int("plan", "--ctx", v, 16, 1L << 30, &n)) return 2;
            r.n_ctx = (int32_t)n;
        } else if ((k = st_cli_opt(argc, argv, &i, "--batch", NULL, &v))) {
            if (k < 0 || st_cli_int("plan", "--batch", v, 1, 1 << 20, &n)) return 2;
            r.n_batch = (int32_t)n;
        } else if ((k = st_cli_opt(argc, argv, &i, "--verify-window", NULL, &v))) {
            if (k < 0 || st_cli_int("plan", "--verify-window", v, 0, 256, &n)) return 2;
            r.verify_window = (int32_t)n;
        } else if ((k = st_cli_opt(argc, argv, &i, "--kv-type", NULL, &v))) {
            int t = k < 0 ? -1 : st_kv_type_from_name(v);
            if (t < 0) {
                fprintf(stderr, "strata plan: --kv-type must be f16, f32 or q8_0\n");
                return 2;
            }
            r.kv_type = (uint32_t)t;
        } else if ((k = st_cli_opt(argc, argv, &i, "--draft-bytes", NULL, &v))) {
            if (k < 0 || parse_size_opt("--draft-bytes", v, &r.draft_head_bytes)) return 2;
        } else if ((k = st_cli_opt(argc, argv, &i, "--runtime-overhead", NULL, &v))) {
            if (k < 0 || parse_size_opt("--runtime-overhead", v, &extra_overhead)) return 2;
        } else if ((k = st_cli_opt(argc, argv, &i, "--vram-budget", NULL, &v))) {
            if (k < 0) return 2;
            budget = v;
        } else if ((k = st_cli_opt(argc, argv, &i, "--layers", NULL, &v))) {
            if (k < 0) return 2;
            layers = v;
        } else if ((k = st_cli_opt(argc, argv, &i, "--vram-reserve-mib", NULL, &v))) {
            if (k < 0 || st_cli_int("plan", "--vram-reserve-mib", v, 0, 1L << 30, &n)) return 2;
            r.reserve = (uint64_t)n << 20;
        } else if ((k = st_cli_opt(argc, argv, &i, "--expert-cache", NULL, &v))) {
            if (k < 0) return 2;
            if (!strcmp(v, "auto")) r.expert_cache = -1;
            else if (st_cli_int("plan", "--expert-cache", v, 0, 1L << 30, &n)) return 2;
            else r.expert_cache = n;
        } else if ((k = st_cli_opt(argc, argv, &i, "--extra", NULL, &v))) {
            if (k < 0) return 2;
            char nm[ST_PLAN_NAME_MAX] = {0};
            int dev = -1;
            const char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            uint64_t b = 0;
            if (!c1 || !c2 || c1 == v || (size_t)(c1 - v) >= sizeof nm || r.n_extra >= ST_PLAN_MAX_EXTRA ||
                st_plan_parse_size(c2 + 1, &b)) {
                fprintf(stderr, "strata plan: --extra wants NAME:DEVICE:SIZE (at most %d)\n", ST_PLAN_MAX_EXTRA);
                return 2;
            }
            memcpy(nm, v, (size_t)(c1 - v));
            dev = atoi(c1 + 1);
            st_plan_extra *e = &r.extra[r.n_extra++];
            snprintf(e->name, sizeof e->name, "%s", nm);
            e->device = dev;
            e->bytes = b;
        } else {
            fprintf(stderr, "strata plan: unknown option '%s'\n", argv[i]);
            help(stderr);
            return 2;
        }
    }
    if (!model) {
        fprintf(stderr, "strata plan: no model given (-m F.gguf)\n");
        return 2;
    }
    if (load && (r.verify_window || r.draft_head_bytes || r.n_extra || layers || extra_overhead)) {
        fprintf(stderr, "strata plan: --load loads as run, bench and serve do, which have no --verify-window, "
                "--draft-bytes, --extra, --layers or --runtime-overhead: leave them out with --load\n");
        return 2;
    }
    char err[1024];
    st_gguf *g = st_gguf_open(model, err, sizeof err);
    if (!g) {
        fprintf(stderr, "strata plan: %s\n", err);
        return 1;
    }
    st_model_desc *desc = st_arch_describe(g, err, sizeof err);
    if (!desc) {
        fprintf(stderr, "strata plan: %s\n", err);
        st_gguf_close(g);
        return 1;
    }
    int rc = 1;
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    st_backend_registry *reg = st_backend_registry_open(&opt);
    const st_backend_device *picked[ST_PLAN_MAX_DEVICES];
    st_plan_device_in in[ST_PLAN_MAX_DEVICES];
    int nd = reg ? pick_devices(reg, backend, devlist, picked, ST_PLAN_MAX_DEVICES) : -1;
    if (nd <= 0) {
        rc = nd < 0 ? 2 : 1;
        goto out;
    }
    memset(in, 0, sizeof in);
    for (int i = 0; i < nd; i++) {
        const st_backend_device *d = picked[i];
        snprintf(in[i].name, sizeof in[i].name, "%.8s%u (%.40s)", d->module->api->name, d->index, d->props->name);
        in[i].mem_total = d->props->mem_total;
        in[i].mem_free = d->props->mem_free;
        in[i].unified = (d->props->caps & ST_CAP_UNIFIED) != 0;
        in[i].bw_gbs = d->props->mem_bw_gbs; /* known on every device: the split minimizes modelled time */
        /* the runtime's own overhead: free memory before and after opening the device */
        st_dev door;
        if (st_dev_open(&door, d->module->api, d->index) == ST_OK) {
            uint64_t fr = 0, tot = 0;
            if (st_dev_mem_info(&door, &fr, &tot) == ST_OK && fr < in[i].mem_free)
                in[i].runtime_overhead = in[i].mem_free - fr;
            st_dev_close(&door);
        }
        in[i].runtime_overhead += extra_overhead;
    }
    if (budget) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", budget);
        int i = 0;
        uint64_t last = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), i++) {
            if (parse_size_opt("--vram-budget", t, &last)) { rc = 2; goto out; }
            if (i < nd) in[i].vram_budget = last;
        }
        if (i == 1)
            for (int j = 1; j < nd; j++) in[j].vram_budget = last; /* one value: every device */
    }
    if (layers) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", layers);
        int i = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && i < nd; t = strtok_r(NULL, ",", &save), i++)
            in[i].n_layers = atoi(t);
    }
    st_plan *p = st_plan_build(desc, in, nd, &r, err, sizeof err);
    if (!p) {
        fprintf(stderr, "strata plan: %s\n", err);
        rc = 2;
        goto out;
    }
    size_t cap = 1 << 16;
    char *text = malloc(cap);
    if (text) {
        if (json) st_plan_format_json(p, text, cap);
        else if (metrics) st_plan_format_metrics(p, text, cap);
        else {
            char sum[256];
            st_model_desc_summary(desc, sum, sizeof sum);
            printf("%s\n", sum);
            st_plan_format(p, text, cap);
        }
        fputs(text, stdout);
        free(text);
    }
    rc = p->ok ? 0 : 1;
    if (p->ok && allocate && allocate_plan(p, picked, nd)) rc = 1;
    char load_dev[96] = "";
    if (p->ok && load) {
        if (nd != 1) {
            fprintf(stderr, "strata plan: --load runs the model on one device (%d chosen)\n", nd);
            rc = 1;
        } else {
            snprintf(load_dev, sizeof load_dev, "%s:%u", picked[0]->module->api->name, picked[0]->index);
        }
    }
    /* the commands open their own registry: this one is closed first */
    st_backend_registry_close(reg);
    reg = NULL;
    if (load_dev[0] && load_like_commands(model, load_dev, p, &r, in[0].vram_budget)) rc = 1;
    st_plan_free(p);
out:
    if (reg) st_backend_registry_close(reg);
    st_model_desc_free(desc);
    st_gguf_close(g);
    return rc;
}
