/* SPDX-License-Identifier: Apache-2.0 */
/* The plan as text: the table per device (consumer, MiB, why), Prometheus lines, JSON. */
#include <stdio.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "platform/textbuf.h"
#include "quant/quant.h"

#define MIB(b) ((double)(b) / 1048576.0)

static const char *level_name(st_plan_level l) {
    return l == ST_PLAN_WARNING ? "WARNING" : l == ST_PLAN_ERROR ? "ERROR" : "info";
}

size_t st_plan_format(const st_plan *p, char *buf, size_t len) {
    st_textbuf o = {buf, len, 0};
    if (len) buf[0] = 0;
    st_textbuf_put(&o, "memory plan: %d slot%s x %d positions, KV %s, step %d tokens, verify window %d%s\n", p->n_slots,
        p->n_slots == 1 ? "" : "s", p->n_ctx, st_type_name(p->kv_type), p->n_tok_step, p->verify_window,
        p->ok ? "" : "  (REFUSED)");
    for (int32_t i = 0; i < p->n_devices; i++) {
        const st_plan_device *d = &p->dev[i];
        char layers[48];
        if (d->n_layers > 0) snprintf(layers, sizeof layers, "layers %d-%d", d->layer_first, d->layer_first + d->n_layers - 1);
        else snprintf(layers, sizeof layers, "no layers");
        char share[80] = "";
        if (p->t_token_s > 0)
            snprintf(share, sizeof share, ", %.3f ms/token modelled (%.0f%% of the time)", d->t_token_s * 1e3,
                     100 * d->t_token_s / p->t_token_s);
        st_textbuf_put(&o, "\n%s: %.1f MiB usable (free %.1f of %.1f MiB%s), %s%s\n", d->in.name, MIB(d->capacity),
            MIB(d->in.mem_free), MIB(d->in.mem_total), d->in.vram_budget ? ", --vram-budget" : "", layers, share);
        st_textbuf_put(&o, "  %-16s %12s  %s\n", "consumer", "MiB", "why");
        for (int32_t c = 0; c < d->n_consumers; c++)
            st_textbuf_put(&o, "  %-16s %12.1f  %s\n", d->c[c].name, MIB(d->c[c].bytes), d->c[c].why);
        if (d->capacity >= d->planned)
            st_textbuf_put(&o, "  %-16s %12.1f  %s\n", "(unused)", MIB(d->capacity - d->planned),
                d->expert_slots_max == 0 ? "left over: no experts to cache here"
                : d->expert_slots == d->expert_slots_max ? "left over: every expert is already resident"
                : d->capacity - d->planned >= p->bytes_expert_slot && p->bytes_expert_slot
                    ? "left over: --expert-cache asked for fewer slots"
                    : "left over: less than one expert slot");
        st_textbuf_put(&o, "  %-16s %12.1f  %s\n", "total", MIB(d->planned),
            d->planned > d->capacity ? "OVER the usable memory" : "of the usable memory");
    }
    for (int32_t i = 0; i < p->n_notes; i++) st_textbuf_put(&o, "%s: %s\n", level_name(p->notes[i].level), p->notes[i].text);
    if (!p->ok) st_textbuf_put(&o, "ERROR: %s\n", p->refusal);
    return st_textbuf_done(&o);
}

size_t st_plan_format_metrics(const st_plan *p, char *buf, size_t len) {
    st_textbuf o = {buf, len, 0};
    if (len) buf[0] = 0;
    st_textbuf_put(&o, "# HELP strata_plan_ok 1 when the memory plan fits, 0 when it was refused\n");
    st_textbuf_put(&o, "# TYPE strata_plan_ok gauge\nstrata_plan_ok %d\n", p->ok ? 1 : 0);
    st_textbuf_put(&o, "# TYPE strata_plan_slots gauge\nstrata_plan_slots %d\n", p->n_slots);
    st_textbuf_put(&o, "# TYPE strata_plan_ctx gauge\nstrata_plan_ctx %d\n", p->n_ctx);
    st_textbuf_put(&o, "# TYPE strata_plan_verify_window gauge\nstrata_plan_verify_window %d\n", p->verify_window);
    st_textbuf_put(&o, "# HELP strata_plan_device_layers layers the split places on each device, from layer_first\n");
    st_textbuf_put(&o, "# TYPE strata_plan_device_layers gauge\n");
    for (int32_t i = 0; i < p->n_devices; i++)
        st_textbuf_put(&o, "strata_plan_device_layers{device=\"%d\",name=\"%s\",layer_first=\"%d\"} %d\n", i,
            p->dev[i].in.name, p->dev[i].layer_first, p->dev[i].n_layers);
    st_textbuf_put(&o, "# HELP strata_plan_device_allocated_bytes bytes the plan allocates on each device\n");
    st_textbuf_put(&o, "# TYPE strata_plan_device_allocated_bytes gauge\n");
    for (int32_t i = 0; i < p->n_devices; i++)
        st_textbuf_put(&o, "strata_plan_device_allocated_bytes{device=\"%d\"} %llu\n", i,
            (unsigned long long)p->dev[i].allocated);
    if (p->t_token_s > 0) {
        st_textbuf_put(&o, "# HELP strata_plan_device_time_share modelled share of a decode token's time per device\n");
        st_textbuf_put(&o, "# TYPE strata_plan_device_time_share gauge\n");
        for (int32_t i = 0; i < p->n_devices; i++)
            st_textbuf_put(&o, "strata_plan_device_time_share{device=\"%d\"} %.4f\n", i, p->dev[i].t_token_s / p->t_token_s);
    }
    st_textbuf_put(&o, "# HELP strata_plan_bytes bytes the plan gives each consumer on each device\n");
    st_textbuf_put(&o, "# TYPE strata_plan_bytes gauge\n");
    for (int32_t i = 0; i < p->n_devices; i++)
        for (int32_t c = 0; c < p->dev[i].n_consumers; c++)
            st_textbuf_put(&o, "strata_plan_bytes{device=\"%d\",consumer=\"%s\",kind=\"%s\"} %llu\n", i, p->dev[i].c[c].name,
                st_plan_kind_name(p->dev[i].c[c].kind), (unsigned long long)p->dev[i].c[c].bytes);
    st_textbuf_put(&o, "# TYPE strata_plan_capacity_bytes gauge\n");
    for (int32_t i = 0; i < p->n_devices; i++)
        st_textbuf_put(&o, "strata_plan_capacity_bytes{device=\"%d\"} %llu\n", i, (unsigned long long)p->dev[i].capacity);
    st_textbuf_put(&o, "# TYPE strata_plan_expert_slots gauge\n");
    for (int32_t i = 0; i < p->n_devices; i++)
        st_textbuf_put(&o, "strata_plan_expert_slots{device=\"%d\"} %lld\n", i, (long long)p->dev[i].expert_slots);
    st_textbuf_put(&o, "# TYPE strata_plan_warnings gauge\n");
    int w = 0;
    for (int32_t i = 0; i < p->n_notes; i++) w += p->notes[i].level == ST_PLAN_WARNING;
    st_textbuf_put(&o, "strata_plan_warnings %d\n", w);
    return st_textbuf_done(&o);
}

static void put_json_str(st_textbuf *o, const char *s) {
    st_textbuf_put(o, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') st_textbuf_put(o, "\\%c", ch);
        else if (ch < 0x20) st_textbuf_put(o, "\\u%04x", ch);
        else st_textbuf_put(o, "%c", ch);
    }
    st_textbuf_put(o, "\"");
}

size_t st_plan_format_json(const st_plan *p, char *buf, size_t len) {
    st_textbuf o = {buf, len, 0};
    if (len) buf[0] = 0;
    st_textbuf_put(&o, "{\"ok\":%s,\"slots\":%d,\"ctx\":%d,\"kv_type\":\"%s\",\"step_tokens\":%d,\"verify_window\":%d,"
        "\"expert_slot_bytes\":%llu,\"devices\":[",
        p->ok ? "true" : "false", p->n_slots, p->n_ctx, st_type_name(p->kv_type), p->n_tok_step, p->verify_window,
        (unsigned long long)p->bytes_expert_slot);
    for (int32_t i = 0; i < p->n_devices; i++) {
        const st_plan_device *d = &p->dev[i];
        st_textbuf_put(&o, "%s{\"name\":", i ? "," : "");
        put_json_str(&o, d->in.name);
        st_textbuf_put(&o, ",\"capacity\":%llu,\"planned\":%llu,\"allocated\":%llu,\"layer_first\":%d,\"n_layers\":%d,"
            "\"expert_slots\":%lld,\"expert_slots_max\":%lld,\"token_ms\":%.4f,\"consumers\":[",
            (unsigned long long)d->capacity, (unsigned long long)d->planned, (unsigned long long)d->allocated,
            d->layer_first, d->n_layers, (long long)d->expert_slots, (long long)d->expert_slots_max, d->t_token_s * 1e3);
        for (int32_t c = 0; c < d->n_consumers; c++) {
            st_textbuf_put(&o, "%s{\"name\":", c ? "," : "");
            put_json_str(&o, d->c[c].name);
            st_textbuf_put(&o, ",\"kind\":\"%s\",\"bytes\":%llu,\"why\":", st_plan_kind_name(d->c[c].kind),
                (unsigned long long)d->c[c].bytes);
            put_json_str(&o, d->c[c].why);
            st_textbuf_put(&o, "}");
        }
        st_textbuf_put(&o, "]}");
    }
    st_textbuf_put(&o, "],\"notes\":[");
    for (int32_t i = 0; i < p->n_notes; i++) {
        st_textbuf_put(&o, "%s{\"level\":\"%s\",\"text\":", i ? "," : "", level_name(p->notes[i].level));
        put_json_str(&o, p->notes[i].text);
        st_textbuf_put(&o, "}");
    }
    st_textbuf_put(&o, "],\"refusal\":");
    put_json_str(&o, p->ok ? "" : p->refusal);
    st_textbuf_put(&o, "}\n");
    return st_textbuf_done(&o);
}
