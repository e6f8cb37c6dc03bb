/* SPDX-License-Identifier: Apache-2.0 */
/* Reference rotary embedding: normal mode rotates adjacent pairs (2i, 2i+1), NeoX mode pairs
 * (i, i + n_rot/2). Pair i turns by theta = pos * freq_base^(-2i/n_rot), scaled by YaRN:
 *   theta_interp = freq_scale * theta_extrap;
 *   ext_factor == 0: theta = theta_interp, magnitude attn_factor;
 *   ext_factor != 0: ramp r(i) = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1) between the
 *     correction dims lo = max(0, floor(d(beta_fast))), hi = min(n_rot - 1, ceil(d(beta_slow)))
 *     with d(b) = n_rot * ln(n_ctx_orig / (2*pi*b)) / (2 ln freq_base); mix = r(i) * ext_factor;
 *     theta = theta_interp * (1 - mix) + theta_extrap * mix;
 *     magnitude attn_factor * (1 + 0.1 ln(1 / freq_scale)).
 * Angles and products are computed in double. */
#include <math.h>
#include <stdlib.h>

#include "ref/ref_internal.h"

#define CHECK(expr)                      \
    do {                                 \
        st_status st_s_ = (expr);        \
        if (st_s_ != ST_OK) return st_s_; \
    } while (0)

static double yarn_corr_dim(int n_rot, int n_ctx_orig, double n_rotations, double base) {
    return n_rot * log(n_ctx_orig / (n_rotations * 2.0 * 3.14159265358979323846)) / (2.0 * log(base));
}

st_status st_ref_rope(const st_rope_args *a) {
    const char *op = "rope";
    CHECK(st_ref_check_args(op, a, a ? a->size : 0, sizeof *a));
    CHECK(st_ref_check(op, "x", &a->x, 1));
    CHECK(st_ref_check(op, "out", &a->out, 1));
    for (int d = 0; d < 4; d++)
        if (a->x.ne[d] != a->out.ne[d]) return st_ref_fail(ST_INVALID, "rope: x and out shapes differ (dim %d)", d);
    if (a->x.ne[3] != 1) return st_ref_fail(ST_INVALID, "rope: x must be [n][n_head][head_dim] (ne[3] = 1)");
    if (a->mode != ST_ROPE_NORMAL && a->mode != ST_ROPE_NEOX)
        return st_ref_fail(ST_INVALID, "rope: unknown mode %u", a->mode);
    int64_t hd = a->x.ne[0], n_head = a->x.ne[1], n = a->x.ne[2];
    if (a->n_rot < 0 || a->n_rot > hd || a->n_rot % 2 != 0)
        return st_ref_fail(ST_INVALID, "rope: n_rot %d must be even and within head_dim %lld", a->n_rot, (long long)hd);
    if (!(a->freq_base > 0.0f) || !(a->freq_scale > 0.0f))
        return st_ref_fail(ST_INVALID, "rope: freq_base %g and freq_scale %g must be positive", (double)a->freq_base,
                           (double)a->freq_scale);
    if (a->ext_factor != 0.0f && a->n_ctx_orig <= 0)
        return st_ref_fail(ST_INVALID, "rope: YaRN (ext_factor %g) needs n_ctx_orig > 0", (double)a->ext_factor);
    if (n > 0 && a->pos == NULL) return st_ref_fail(ST_INVALID, "rope: pos is NULL");

    int n_rot = a->n_rot, half = n_rot / 2;
    double corr_lo = 0, corr_hi = 0, mscale = a->attn_factor;
    if (a->ext_factor != 0.0f) {
        corr_lo = floor(yarn_corr_dim(n_rot, a->n_ctx_orig, a->beta_fast, a->freq_base));
        corr_hi = ceil(yarn_corr_dim(n_rot, a->n_ctx_orig, a->beta_slow, a->freq_base));
        if (corr_lo < 0) corr_lo = 0;
        if (corr_hi > n_rot - 1) corr_hi = n_rot - 1;
        mscale *= 1.0 + 0.1 * log(1.0 / a->freq_scale);
    }
    double *row = st_ref_alloc(op, (size_t)hd * 2 + (size_t)half * 2, sizeof(double));
    if (row == NULL) return ST_OOM;
    double *res = row + hd, *cs = res + hd, *sn = cs + half;
    for (int64_t t = 0; t < n; t++) {
        for (int i = 0; i < half; i++) {
            double theta_extrap = (double)a->pos[t] * pow((double)a->freq_base, -2.0 * i / n_rot);
            double theta = a->freq_scale * theta_extrap;
            if (a->ext_factor != 0.0f) {
                double y = (i - corr_lo) / fmax(0.001, corr_hi - corr_lo);
                double ramp = 1.0 - fmin(1.0, fmax(0.0, y));
                double mix = ramp * a->ext_factor;
                theta = theta * (1.0 - mix) + theta_extrap * mix;
            }
            cs[i] = cos(theta) * mscale;
            sn[i] = sin(theta) * mscale;
        }
        for (int64_t h = 0; h < n_head; h++) {
            st_ref_load_row_d(&a->x, st_ref_elem_ptr(&a->x, 0, h, t, 0), row, hd);
            for (int64_t k = 0; k < hd; k++) res[k] = row[k];
            for (int i = 0; i < half; i++) {
                int i0 = a->mode == ST_ROPE_NEOX ? i : 2 * i;
                int i1 = a->mode == ST_ROPE_NEOX ? i + half : 2 * i + 1;
                res[i0] = row[i0] * cs[i] - row[i1] * sn[i];
                res[i1] = row[i0] * sn[i] + row[i1] * cs[i];
            }
            st_ref_store_row(&a->out, st_ref_elem_ptr(&a->out, 0, h, t, 0), res, hd);
        }
    }
    free(row);
    return ST_OK;
}
