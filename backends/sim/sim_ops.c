/* SPDX-License-Identifier: Apache-2.0 */
/* The sim's ops: each first passes the fault/accounting layer (st_sim_op_enter), then runs
 * core/ref's scalar implementation on the device memory (host memory underneath). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/module_util.h"
#include "ref/ref.h"
#include "sim/sim_internal.h"

static const char *op_name(uint32_t op) { return st_op_name(op); }

static void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

st_status st_sim_take_pending(st_device *d) {
    pthread_mutex_lock(&d->mu);
    st_status st = d->pending;
    char text[sizeof d->pending_text];
    memcpy(text, d->pending_text, sizeof text);
    d->pending = ST_OK;
    pthread_mutex_unlock(&d->mu);
    return st == ST_OK ? ST_OK : st_mod_fail(st, "%s", text);
}

st_status st_sim_op_enter(st_stream *s, uint32_t op, int *skip) {
    *skip = 0;
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
    if (fail && d->cfg.async_errors) {
        pthread_mutex_lock(&d->mu);
        if (d->pending == ST_OK) {
            d->pending = ST_INTERNAL;
            snprintf(d->pending_text, sizeof d->pending_text,
                     "asynchronous failure of op #%llu (%s) on %s, reported at synchronization (fail_op=%llu)",
                     (unsigned long long)n, op_name(op), d->name, (unsigned long long)n);
        }
        pthread_mutex_unlock(&d->mu);
        *skip = 1;
        return ST_OK;
    }
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

/* ---- device addresses of the op's arguments ---------------------------------------------- */

/* A tensor view: its first element and the start of its last row must lie in one allocation. */
static st_status chk_t(st_device *d, const char *op, const char *name, const st_tensor *t) {
    if (!t->data) return ST_OK;
    int64_t last = 0;
    for (int i = 1; i < 4; i++)
        if (t->ne[i] > 1 && t->nb[i] > 0) last += (t->ne[i] - 1) * t->nb[i];
    char what[64];
    snprintf(what, sizeof what, "%s: %s", op, name);
    return st_sim_check_ptr(d, what, t->data, (const char *)t->data + last);
}

static st_status chk_p(st_device *d, const char *op, const char *name, const void *p) {
    char what[64];
    snprintf(what, sizeof what, "%s: %s", op, name);
    return st_sim_check_ptr(d, what, p, p);
}

#define T(f) if ((st = chk_t(d, op, #f, &a->f)) != ST_OK) return st
#define P(f) if ((st = chk_p(d, op, #f, a->f)) != ST_OK) return st

static st_status chk_get_rows(st_device *d, const char *op, const st_get_rows_args *a) { st_status st; T(w); P(ids); T(out); return ST_OK; }
static st_status chk_rms_norm(st_device *d, const char *op, const st_rms_norm_args *a) {
    st_status st; T(x); T(residual); T(sum_out); T(weight); T(out); return ST_OK;
}
static st_status chk_matmul(st_device *d, const char *op, const st_matmul_args *a) { st_status st; T(w); T(x); T(out); return ST_OK; }
static st_status chk_rope(st_device *d, const char *op, const st_rope_args *a) { st_status st; T(x); T(out); P(pos); return ST_OK; }
static st_status chk_kv_write(st_device *d, const char *op, const st_kv_write_args *a) {
    st_status st; T(k); T(v); T(k_cache); T(v_cache); P(cells); return ST_OK;
}
static st_status chk_attention(st_device *d, const char *op, const st_attention_args *a) {
    st_status st; T(q); T(k_cache); T(v_cache); T(out); P(seq); P(kv_len); P(cell_table); P(mask); return ST_OK;
}
static st_status chk_swiglu(st_device *d, const char *op, const st_swiglu_args *a) { st_status st; T(gate); T(up); T(out); return ST_OK; }
static st_status chk_router(st_device *d, const char *op, const st_router_args *a) {
    st_status st; T(logits); P(bias); P(ids); P(weights); return ST_OK;
}
static st_status chk_moe_matmul(st_device *d, const char *op, const st_moe_matmul_args *a) {
    st_status st; T(w); T(x); T(out); P(slot_table); P(expert); P(x_row); P(scale); return ST_OK;
}
static st_status chk_moe_combine(st_device *d, const char *op, const st_moe_combine_args *a) {
    st_status st; T(rows); T(out); P(row_of); P(weights); return ST_OK;
}
/* b is read only by ADD and MUL_ROWS */
static st_status chk_add(st_device *d, const char *op, const st_binary_args *a) { st_status st; T(a); T(b); T(out); return ST_OK; }
static st_status chk_scale(st_device *d, const char *op, const st_binary_args *a) { st_status st; T(a); T(out); return ST_OK; }
#define chk_convert chk_scale
#define chk_mul_rows chk_add
static st_status chk_argmax(st_device *d, const char *op, const st_topk_args *a) { st_status st; T(x); P(ids); P(values); return ST_OK; }
#define chk_topk chk_argmax
static st_status chk_attn_prep(st_device *d, const char *op, const st_attn_prep_args *a) {
    st_status st; T(q); T(k); T(v); T(q_norm); T(k_norm); T(q_out); T(k_cache); T(v_cache); P(cells); P(rope.pos);
    return ST_OK;
}
static st_status chk_moe_gate_up(st_device *d, const char *op, const st_moe_gate_up_args *a) {
    st_status st; T(w_gate); T(w_up); T(x); T(out); T(scratch); P(slot_table); P(expert); P(x_row); return ST_OK;
}
static st_status chk_moe_down(st_device *d, const char *op, const st_moe_down_args *a) {
    st_status st; T(w); T(x); T(out); T(scratch); P(slot_table); P(ids); P(weights); return ST_OK;
}
static st_status chk_attention_ex(st_device *d, const char *op, const st_attention_ex_args *a) {
    st_status st = chk_attention(d, op, &a->base);
    if (st != ST_OK) return st;
    P(sinks);
    return ST_OK;
}
static st_status chk_swiglu_oai(st_device *d, const char *op, const st_swiglu_oai_args *a) {
    st_status st; T(gate); T(up); T(out); return ST_OK;
}
static st_status chk_router_groups(st_device *d, const char *op, const st_router_groups_args *a) {
    return chk_router(d, op, &a->base);
}
#undef T
#undef P

/* One wrapper per op slot: the fault layer, the argument addresses, then the reference. */
#define SIM_OP(slot, id, argtype)                                                      \
    static st_status sim_##slot(st_stream *s, const argtype *a) {                      \
        int skip_;                                                                     \
        st_status st = st_sim_op_enter(s, id, &skip_);                                 \
        if (st != ST_OK || skip_) return st;                                           \
        if (!a) return st_mod_fail(ST_INVALID, "%s: NULL arguments", op_name(id));     \
        st = chk_##slot(s->dev, op_name(id), a);                                       \
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
SIM_OP(attn_prep, ST_OP_ATTN_PREP, st_attn_prep_args)
SIM_OP(moe_gate_up, ST_OP_MOE_GATE_UP, st_moe_gate_up_args)
SIM_OP(moe_down, ST_OP_MOE_DOWN, st_moe_down_args)
SIM_OP(attention_ex, ST_OP_ATTENTION_EX, st_attention_ex_args)
SIM_OP(swiglu_oai, ST_OP_SWIGLU_OAI, st_swiglu_oai_args)
SIM_OP(router_groups, ST_OP_ROUTER_GROUPS, st_router_groups_args)

static const st_backend_ops k_all = {
    sizeof(st_backend_ops), 0,
    sim_get_rows, sim_rms_norm, sim_matmul, sim_rope, sim_kv_write, sim_attention, sim_swiglu, sim_router,
    sim_moe_matmul, sim_moe_combine, sim_add, sim_scale, sim_convert, sim_mul_rows, sim_argmax, sim_topk,
    sim_attn_prep, sim_moe_gate_up, sim_moe_down, sim_attention_ex, sim_swiglu_oai, sim_router_groups,
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
    KEEP(argmax); KEEP(topk); KEEP(attn_prep); KEEP(moe_gate_up); KEEP(moe_down); KEEP(attention_ex);
    KEEP(swiglu_oai); KEEP(router_groups);
#undef KEEP
    return &g_ops;
}

int st_sim_ref_supported(uint32_t op, uint32_t wtype) { return st_ref_op_supported(op, wtype); }
