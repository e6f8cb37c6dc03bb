/* The sim's ops: each first passes the fault/accounting layer (st_sim_op_enter), then runs
 * core/ref's scalar implementation on the device memory (host memory underneath). */
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "common/module_util.h"
#include "ref/ref.h"
#include "sim/sim_internal.h"

static const char *k_op_names[ST_OP_COUNT] = {
    "get_rows", "rms_norm", "matmul", "rope", "kv_write", "attention", "swiglu", "router",
    "moe_matmul", "moe_combine", "add", "scale", "convert", "mul_rows", "argmax", "topk"};

static const char *op_name(uint32_t op) { return op < ST_OP_COUNT ? k_op_names[op] : "op"; }

static void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

st_status st_sim_op_enter(st_stream *s, uint32_t op) {
    if (!s || !s->dev) return st_mod_fail(ST_INVALID, "%s: NULL stream", op_name(op));
    st_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    if (d->lost) {
        pthread_mutex_unlock(&d->mu);
        return st_mod_fail(ST_DEVICE_LOST, "%s on %s: device lost (after %llu ops, lose_after=%llu)", op_name(op),
                           d->name, (unsigned long long)d->cfg.lose_after, (unsigned long long)d->cfg.lose_after);
    }
    uint64_t n = ++d->n_ops;
    if (d->cfg.lose_after && n > d->cfg.lose_after) {
        d->lost = 1;
        pthread_mutex_unlock(&d->mu);
        st_mod_log(ST_LOG_WARN, "%s: simulated device loss at op #%llu (%s)", d->name, (unsigned long long)n,
                   op_name(op));
        return st_mod_fail(ST_DEVICE_LOST, "%s on %s: device lost (after %llu ops, lose_after=%llu)", op_name(op),
                           d->name, (unsigned long long)d->cfg.lose_after, (unsigned long long)d->cfg.lose_after);
    }
    int hang = d->cfg.hang_op && n == d->cfg.hang_op;
    int fail = d->cfg.fail_op && n == d->cfg.fail_op;
    uint64_t hang_ms = d->cfg.hang_ms;
    pthread_mutex_unlock(&d->mu);
    if (fail)
        return st_mod_fail(ST_INTERNAL, "injected failure: op #%llu (%s) on %s (fail_op=%llu)", (unsigned long long)n,
                           op_name(op), d->name, (unsigned long long)n);
    if (hang) {
        st_mod_log(ST_LOG_WARN, "%s: op #%llu (%s) hangs for %llu ms (hang_op)", d->name, (unsigned long long)n,
                   op_name(op), (unsigned long long)hang_ms);
        sleep_ms(hang_ms);
    }
    return ST_OK;
}

/* The reference keeps its own error text; carry it over into this module's. */
static st_status ref_result(st_stream *s, uint32_t op, st_status st) {
    if (st == ST_OK) return ST_OK;
    return st_mod_fail(st, "%s on %s: %s", op_name(op), s->dev->name, st_ref_last_error());
}

/* One wrapper per op slot: the fault layer, then the reference. */
#define SIM_OP(slot, id, argtype)                                                      \
    static st_status sim_##slot(st_stream *s, const argtype *a) {                      \
        st_status st = st_sim_op_enter(s, id);                                         \
        if (st != ST_OK) return st;                                                    \
        return ref_result(s, id, st_ref_ops_table()->slot(s, a));                      \
    }

SIM_OP(get_rows, ST_OP_GET_ROWS, st_get_rows_args)
SIM_OP(rms_norm, ST_OP_RMS_NORM, st_rms_norm_args)
SIM_OP(matmul, ST_OP_MATMUL, st_matmul_args)
SIM_OP(rope, ST_OP_ROPE, st_rope_args)
SIM_OP(kv_write, ST_OP_KV_WRITE, st_kv_write_args)
SIM_OP(attention, ST_OP_ATTENTION, st_attention_args)
SIM_OP(swiglu, ST_OP_SWIGLU, st_swiglu_args)
SIM_OP(router, ST_OP_ROUTER, st_router_args)
SIM_OP(moe_matmul, ST_OP_MOE_MATMUL, st_moe_matmul_args)
SIM_OP(moe_combine, ST_OP_MOE_COMBINE, st_moe_combine_args)
SIM_OP(add, ST_OP_ADD, st_binary_args)
SIM_OP(scale, ST_OP_SCALE, st_binary_args)
SIM_OP(convert, ST_OP_CONVERT, st_binary_args)
SIM_OP(mul_rows, ST_OP_MUL_ROWS, st_binary_args)
SIM_OP(argmax, ST_OP_ARGMAX, st_topk_args)
SIM_OP(topk, ST_OP_TOPK, st_topk_args)

static const st_backend_ops k_all = {
    sizeof(st_backend_ops), 0,
    sim_get_rows, sim_rms_norm, sim_matmul, sim_rope, sim_kv_write, sim_attention, sim_swiglu, sim_router,
    sim_moe_matmul, sim_moe_combine, sim_add, sim_scale, sim_convert, sim_mul_rows, sim_argmax, sim_topk,
};

static st_backend_ops g_ops;

/* The wrappers for exactly the ops the reference implements; the others stay NULL (absent). */
const st_backend_ops *st_sim_ops(void) {
    const st_backend_ops *r = st_ref_ops_table();
    g_ops = k_all;
    if (!r) {
        st_backend_ops empty = {.size = sizeof(st_backend_ops)};
        g_ops = empty;
        return &g_ops;
    }
#define KEEP(slot) if (r->size < offsetof(st_backend_ops, slot) + sizeof r->slot || !r->slot) g_ops.slot = NULL
    KEEP(get_rows); KEEP(rms_norm); KEEP(matmul); KEEP(rope); KEEP(kv_write); KEEP(attention); KEEP(swiglu);
    KEEP(router); KEEP(moe_matmul); KEEP(moe_combine); KEEP(add); KEEP(scale); KEEP(convert); KEEP(mul_rows);
    KEEP(argmax); KEEP(topk);
#undef KEEP
    return &g_ops;
}

int st_sim_ref_supported(uint32_t op, uint32_t wtype) { return st_ref_op_supported(op, wtype); }
