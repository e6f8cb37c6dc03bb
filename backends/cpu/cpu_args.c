/* SPDX-License-Identifier: Apache-2.0 */
/* Argument checks shared by the CPU ops: every op validates its tensors before touching data,
 * and reports a failure as ST_INVALID with a text naming the op and the argument. */
#include "cpu/cpu_internal.h"

static int64_t elem_size(uint32_t type) { return type == ST_TYPE_F32 ? 4 : 2; }

static st_status check_dims(const char *op, const char *name, const st_tensor *t) {
    for (int i = 0; i < 4; i++)
        if (t->ne[i] < 0)
            return st_mod_fail(ST_INVALID, "cpu %s: %s.ne[%d] = %lld is negative", op, name, i, (long long)t->ne[i]);
    return ST_OK;
}

st_status st_cpu_check_act(const char *op, const char *name, const st_tensor *t) {
    if (t->type != ST_TYPE_F32 && t->type != ST_TYPE_F16 && t->type != ST_TYPE_BF16)
        return st_mod_fail(ST_INVALID, "cpu %s: %s has type %s; expected F32, F16 or BF16", op, name,
                           st_type_name(t->type));
    st_status s = check_dims(op, name, t);
    if (s != ST_OK) return s;
    if (!t->data && st_cpu_nrows(t) * t->ne[0] > 0)
        return st_mod_fail(ST_INVALID, "cpu %s: %s has no data", op, name);
    if (t->ne[0] > 1 && t->nb[0] != elem_size(t->type))
        return st_mod_fail(ST_INVALID, "cpu %s: %s.nb[0] = %lld; rows must be contiguous", op, name,
                           (long long)t->nb[0]);
    return ST_OK;
}

st_status st_cpu_check_weight(const char *op, const char *name, const st_tensor *t) {
    const st_type_info *ti = st_type_get(t->type);
    if (!ti) return st_mod_fail(ST_INVALID, "cpu %s: %s has unknown type id %u", op, name, t->type);
    st_status s = check_dims(op, name, t);
    if (s != ST_OK) return s;
    if (t->ne[0] % ti->block_size != 0)
        return st_mod_fail(ST_INVALID, "cpu %s: %s row of %lld elements is not a multiple of the %s block (%d)", op,
                           name, (long long)t->ne[0], ti->name, ti->block_size);
    if (!t->data && st_cpu_nrows(t) * t->ne[0] > 0)
        return st_mod_fail(ST_INVALID, "cpu %s: %s has no data", op, name);
    /* plain types need contiguous elements; block rows are contiguous by definition */
    if (ti->block_size == 1 && t->ne[0] > 1 && t->nb[0] != ti->type_size)
        return st_mod_fail(ST_INVALID, "cpu %s: %s.nb[0] = %lld; %s rows must be contiguous (%d)", op, name,
                           (long long)t->nb[0], ti->name, ti->type_size);
    if (t->ne[1] > 1 && (size_t)t->nb[1] < st_row_size(t->type, t->ne[0]))
        return st_mod_fail(ST_INVALID, "cpu %s: %s.nb[1] = %lld is shorter than a row (%zu bytes)", op, name,
                           (long long)t->nb[1], st_row_size(t->type, t->ne[0]));
    return ST_OK;
}

st_status st_cpu_check_shape(const char *op, const char *name, const st_tensor *t, int64_t n, int64_t k) {
    if (t->ne[0] != k || st_cpu_nrows(t) != n)
        return st_mod_fail(ST_INVALID, "cpu %s: %s is [%lld][%lld]; expected [%lld][%lld]", op, name,
                           (long long)st_cpu_nrows(t), (long long)t->ne[0], (long long)n, (long long)k);
    return ST_OK;
}
