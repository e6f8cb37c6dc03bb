/* The plan as text: the table per device (consumer, MiB, why), Prometheus lines, JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "quant/quant.h"

#define MIB(b) ((double)(b) / 1048576.0)

typedef struct out_buf {
    char *buf;
    size_t len, n;
} out_buf;

static void put(out_buf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_buf *o, const char *fmt, ...) {
    if (o->len == 0) return;
    size_t room = o->n < o->len ? o->len - o->n : 0;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(room ? o->buf + o->n : NULL, room, fmt, ap);
    va_end(ap);
    if (w > 0) o->n += (size_t)w;
    if (o->n >= o->len) o->buf[o->len - 1] = 0;
}

static size_t done(out_buf *o) { return o->n < o->len ? o->n : (o->len ? o->len - 1 : 0); }

static const char *level_name(st_plan_level l) {
    return l == ST_PLAN_WARNING ? "WARNING" : l == ST_PLAN_ERROR ? "ERROR" : "info";
}

size_t st_plan_format(const st_plan *p, char *buf, size_t len) {
    out_buf o = {buf, len, 0};
    if (len) buf[0] = 0;
    put(&o, "memory plan: %d slot%s x %d positions, KV %s, step %d tokens, verify window %d%s\n", p->n_slots,
        p->n_slots == 1 ? "" : "s", p->n_ctx, st_type_name(p->kv_type), p->n_tok_step, p->verify_window,
        p->ok ? "" : "  (REFUSED)");
    for (int32_t i = 0; i < p->n_devices; i++) {
        const st_plan_device *d = &p->dev[i];
        char layers[48];
        if (d->n_layers > 0) snprintf(layers, sizeof layers, "layers %d-%d", d->layer_first, d->layer_first + d->n_layers - 1);
        else snprintf(layers, sizeof layers, "no layers");
        put(&o, "\n%s: %.1f MiB usable (free %.1f of %.1f MiB%s), %s\n", d->in.name, MIB(d->capacity),
            MIB(d->in.mem_free), MIB(d->in.mem_total), d->in.vram_budget ? ", --vram-budget" : "", layers);
        put(&o, "  %-16s %12s  %s\n", "consumer", "MiB", "why");
        for (int32_t c = 0; c < d->n_consumers; c++)
            put(&o, "  %-16s %12.1f  %s\n", d->c[c].name, MIB(d->c[c].bytes), d->c[c].why);
        if (d->capacity >= d->planned)
            put(&o, "  %-16s %12.1f  %s\n", "(unused)", MIB(d->capacity - d->planned),
                d->expert_slots_max == 0 ? "left over: no experts to cache here"
                : d->expert_slots == d->expert_slots_max ? "left over: every expert is already resident"
                : d->capacity - d->planned >= p->bytes_expert_slot && p->bytes_expert_slot
                    ? "left over: --expert-cache asked for fewer slots"
                    : "left over: less than one expert slot");
        put(&o, "  %-16s %12.1f  %s\n", "total", MIB(d->planned),
            d->planned > d->capacity ? "OVER the usable memory" : "of the usable memory");
    }
    for (int32_t i = 0; i < p->n_notes; i++) put(&o, "%s: %s\n", level_name(p->notes[i].level), p->notes[i].text);
    if (!p->ok) put(&o, "ERROR: %s\n", p->refusal);
    return done(&o);
}

size_t st_plan_format_metrics(const st_plan *p, char *buf, size_t len) {
    out_buf o = {buf, len, 0};
    if (len) buf[0] = 0;
    put(&o, "# HELP strata_plan_ok 1 when the memory plan fits, 0 when it was refused\n");
    put(&o, "# TYPE strata_plan_ok gauge\nstrata_plan_ok %d\n", p->ok ? 1 : 0);
    put(&o, "# TYPE strata_plan_slots gauge\nstrata_plan_slots %d\n", p->n_slots);
    put(&o, "# TYPE strata_plan_ctx gauge\nstrata_plan_ctx %d\n", p->n_ctx);
    put(&o, "# TYPE strata_plan_verify_window gauge\nstrata_plan_verify_window %d\n", p->verify_window);
    put(&o, "# HELP strata_plan_bytes bytes the plan gives each consumer on each device\n");
    put(&o, "# TYPE strata_plan_bytes gauge\n");
    for (int32_t i = 0; i < p->n_devices; i++)
        for (int32_t c = 0; c < p->dev[i].n_consumers; c++)
            put(&o, "strata_plan_bytes{device=\"%d\",consumer=\"%s\",kind=\"%s\"} %llu\n", i, p->dev[i].c[c].name,
                st_plan_kind_name(p->dev[i].c[c].kind), (unsigned long long)p->dev[i].c[c].bytes);
    put(&o, "# TYPE strata_plan_capacity_bytes gauge\n");
    for (int32_t i = 0; i < p->n_devices; i++)
        put(&o, "strata_plan_capacity_bytes{device=\"%d\"} %llu\n", i, (unsigned long long)p->dev[i].capacity);
    put(&o, "# TYPE strata_plan_expert_slots gauge\n");
    for (int32_t i = 0; i < p->n_devices; i++)
        put(&o, "strata_plan_expert_slots{device=\"%d\"} %lld\n", i, (long long)p->dev[i].expert_slots);
    put(&o, "# TYPE strata_plan_warnings gauge\n");
    int w = 0;
    for (int32_t i = 0; i < p->n_notes; i++) w += p->notes[i].level == ST_PLAN_WARNING;
    put(&o, "strata_plan_warnings %d\n", w);
    return done(&o);
}

static void put_json_str(out_buf *o, const char *s) {
    put(o, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') put(o, "\\%c", ch);
        else if (ch < 0x20) put(o, "\\u%04x", ch);
        else put(o, "%c", ch);
    }
    put(o, "\"");
}

size_t st_plan_format_json(const st_plan *p, char *buf, size_t len) {
    out_buf o = {buf, len, 0};
    if (len) buf[0] = 0;
    put(&o, "{\"ok\":%s,\"slots\":%d,\"ctx\":%d,\"kv_type\":\"%s\",\"step_tokens\":%d,\"verify_window\":%d,"
        "\"expert_slot_bytes\":%llu,\"devices\":[",
        p->ok ? "true" : "false", p->n_slots, p->n_ctx, st_type_name(p->kv_type), p->n_tok_step, p->verify_window,
        (unsigned long long)p->bytes_expert_slot);
    for (int32_t i = 0; i < p->n_devices; i++) {
        const st_plan_device *d = &p->dev[i];
        put(&o, "%s{\"name\":", i ? "," : "");
        put_json_str(&o, d->in.name);
        put(&o, ",\"capacity\":%llu,\"planned\":%llu,\"allocated\":%llu,\"layer_first\":%d,\"n_layers\":%d,"
            "\"expert_slots\":%lld,\"expert_slots_max\":%lld,\"consumers\":[",
            (unsigned long long)d->capacity, (unsigned long long)d->planned, (unsigned long long)d->allocated,
            d->layer_first, d->n_layers, (long long)d->expert_slots, (long long)d->expert_slots_max);
        for (int32_t c = 0; c < d->n_consumers; c++) {
            put(&o, "%s{\"name\":", c ? "," : "");
            put_json_str(&o, d->c[c].name);
            put(&o, ",\"kind\":\"%s\",\"bytes\":%llu,\"why\":", st_plan_kind_name(d->c[c].kind),
                (unsigned long long)d->c[c].bytes);
            put_json_str(&o, d->c[c].why);
            put(&o, "}");
        }
        put(&o, "]}");
    }
    put(&o, "],\"notes\":[");
    for (int32_t i = 0; i < p->n_notes; i++) {
        put(&o, "%s{\"level\":\"%s\",\"text\":", i ? "," : "", level_name(p->notes[i].level));
        put_json_str(&o, p->notes[i].text);
        put(&o, "}");
    }
    put(&o, "],\"refusal\":");
    put_json_str(&o, p->ok ? "" : p->refusal);
    put(&o, "}\n");
    return done(&o);
}
