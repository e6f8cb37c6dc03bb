/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance test calls the module's table directly, not through the device door
 * (core/backend/dev.h): it tests the table itself (each slot as the module filled it, its
 * statuses and texts unchanged), which the door would check, rename and retry around. */
#include "conformance/conformance.h"

#include <string.h>
#include <time.h>

#include "conformance/conf_ops.h"
#include "ref/ref.h"

typedef struct {
    const char *name;
    void (*run)(st_conf_ctx *c);
} conf_group;

static const conf_group k_groups[] = {
    {"get_rows", st_conf_get_rows},     {"rms_norm", st_conf_rms_norm},       {"matmul", st_conf_matmul},
    {"rope", st_conf_rope},             {"kv_write", st_conf_kv_write},       {"attention", st_conf_attention},
    {"elementwise", st_conf_elementwise}, {"router", st_conf_router},         {"moe_matmul", st_conf_moe_matmul},
    {"moe_combine", st_conf_moe_combine}, {"topk", st_conf_topk},         {"attn_prep", st_conf_attn_prep},
    {"moe_fused", st_conf_moe_fused},     {"oai", st_conf_oai},
};

/* The filter matches a group name, or the op names inside the elementwise group. */
static int group_selected(const conf_group *g, const char *filter) {
    if (!filter || !*filter) return 1;
    if (strstr(g->name, filter) || strstr(filter, g->name)) return 1;
    if (!strcmp(g->name, "elementwise"))
        return strstr("swiglu add scale convert mul_rows", filter) != NULL;
    if (!strcmp(g->name, "topk")) return strstr("argmax topk", filter) != NULL;
    if (!strcmp(g->name, "moe_fused")) return strstr("moe_gate_up moe_down", filter) != NULL;
    if (!strcmp(g->name, "oai")) return strstr("attention_ex swiglu_oai router_groups", filter) != NULL;
    return 0;
}

st_status st_conf_run(const st_backend_api *api, uint32_t index, const st_conf_options *opt, st_conf_result *res) {
    st_conf_ctx c;
    memset(&c, 0, sizeof c);
    c.api = api;
    c.ops = api->ops;
    c.ref = st_ref_ops_table();
    c.index = index;
    c.opt = opt;
    c.res = res;
    c.out = opt->out ? opt->out : stdout;
    c.quick = opt->quick;
    c.rng = opt->seed ? opt->seed : (uint64_t)time(NULL) * 2654435761u;
    fprintf(c.out, "seed %llu\n", (unsigned long long)c.rng);
    st_status s = api->device_open(index, &c.dev);
    if (s != ST_OK) {
        fprintf(c.out, "cannot open device %u: %s\n", index, api->last_error());
        return s;
    }
    s = api->stream_create(c.dev, &c.stream);
    if (s != ST_OK) {
        fprintf(c.out, "cannot create a stream on device %u: %s\n", index, api->last_error());
        api->device_close(c.dev);
        return s;
    }
    for (size_t g = 0; g < sizeof k_groups / sizeof k_groups[0]; g++)
        if (group_selected(&k_groups[g], opt->filter)) k_groups[g].run(&c);
    api->stream_destroy(c.stream);
    api->device_close(c.dev);
    return ST_OK;
}
