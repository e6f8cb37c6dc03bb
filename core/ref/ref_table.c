/* SPDX-License-Identifier: Apache-2.0 */
/* The reference ops as a backend ops table, and which (op, type) pairs they take. */
#include "quant/quant.h"
#include "ref/ref_internal.h"

#define WRAP(name, args_t) \
    static st_status wrap_##name(st_stream *s, const args_t *a) { \
        (void)s;                                                  \
        return st_ref_##name(a);                                  \
    }

WRAP(get_rows, st_get_rows_args)
WRAP(rms_norm, st_rms_norm_args)
WRAP(matmul, st_matmul_args)
WRAP(rope, st_rope_args)
WRAP(kv_write, st_kv_write_args)
WRAP(attention, st_attention_args)
WRAP(swiglu, st_swiglu_args)
WRAP(router, st_router_args)
WRAP(moe_matmul, st_moe_matmul_args)
WRAP(moe_combine, st_moe_combine_args)
WRAP(add, st_binary_args)
WRAP(scale, st_binary_args)
WRAP(convert, st_binary_args)
WRAP(mul_rows, st_binary_args)
WRAP(argmax, st_topk_args)
WRAP(topk, st_topk_args)
WRAP(attn_prep, st_attn_prep_args)
WRAP(moe_gate_up, st_moe_gate_up_args)
WRAP(moe_down, st_moe_down_args)
WRAP(attention_ex, st_attention_ex_args)
WRAP(swiglu_oai, st_swiglu_oai_args)
WRAP(router_groups, st_router_groups_args)

static const st_backend_ops g_ops = {
    .size = sizeof(st_backend_ops),
    .get_rows = wrap_get_rows,
    .rms_norm = wrap_rms_norm,
    .matmul = wrap_matmul,
    .rope = wrap_rope,
    .kv_write = wrap_kv_write,
    .attention = wrap_attention,
    .swiglu = wrap_swiglu,
    .router = wrap_router,
    .moe_matmul = wrap_moe_matmul,
    .moe_combine = wrap_moe_combine,
    .add = wrap_add,
    .scale = wrap_scale,
    .convert = wrap_convert,
    .mul_rows = wrap_mul_rows,
    .argmax = wrap_argmax,
    .topk = wrap_topk,
    .attn_prep = wrap_attn_prep,
    .moe_gate_up = wrap_moe_gate_up,
    .moe_down = wrap_moe_down,
    .attention_ex = wrap_attention_ex,
    .swiglu_oai = wrap_swiglu_oai,
    .router_groups = wrap_router_groups,
};

const st_backend_ops *st_ref_ops_table(void) { return &g_ops; }

int st_ref_op_supported(uint32_t op, uint32_t type) {
    switch (op) {
    case ST_OP_GET_ROWS:
    case ST_OP_MATMUL:
    case ST_OP_MOE_MATMUL:
    case ST_OP_MOE_GATE_UP:
    case ST_OP_MOE_DOWN: return st_type_get(type) != NULL;
    case ST_OP_ATTN_PREP:
    case ST_OP_KV_WRITE:
    case ST_OP_ATTENTION_EX:
    case ST_OP_ATTENTION: return st_ref_is_act(type) || type == ST_TYPE_Q8_0;
    case ST_OP_RMS_NORM:
    case ST_OP_ROPE:
    case ST_OP_SWIGLU:
    case ST_OP_SWIGLU_OAI:
    case ST_OP_ROUTER:
    case ST_OP_ROUTER_GROUPS:
    case ST_OP_MOE_COMBINE:
    case ST_OP_ADD:
    case ST_OP_SCALE:
    case ST_OP_CONVERT:
    case ST_OP_MUL_ROWS:
    case ST_OP_ARGMAX:
    case ST_OP_TOPK: return st_ref_is_act(type);
    default: return 0;
    }
}
