/* SPDX-License-Identifier: Apache-2.0 */
/* Scale searches shared by the K-quant and IQ4 reference quantizers: each tries a small grid
 * of candidate scales, assigns the nearest level, refits the scale by least squares and keeps
 * the candidate with the lowest squared error. Accumulation is in double. */
#include "quant/quant_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define ST_FIT_STEPS 10 /* candidates on each side of the plain max-based scale */
#define ST_FIT_MAX_N 256

/* Nearest integer to v (halves away from zero) clamped to [lo, hi]; NaN -> 0 clamped. */
static int round_clamp(double v, int lo, int hi) {
    if (!(v == v)) v = 0;
    if (v <= lo) return lo;
    if (v >= hi) return hi;
    return (int)lround(v);
}

static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, mx = 0.0f;
    for (int j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            mx = x[j];
        }
    }
    return mx;
}

/* Least-squares a, b for x ~= a*l + b with b <= 0 and a >= 0; returns the squared error. */
static double affine_lsq(int n, const float *x, const uint8_t *l, double *a_out, double *b_out) {
    double sl = 0, sl2 = 0, sx = 0, slx = 0;
    for (int j = 0; j < n; j++) {
        sl += l[j];
        sl2 += (double)l[j] * l[j];
        sx += x[j];
        slx += (double)l[j] * x[j];
    }
    double a = 0, b = 0, det = n * sl2 - sl * sl;
    if (det > 0) {
        a = (n * slx - sl * sx) / det;
        b = (sl2 * sx - sl * slx) / det;
    }
    if (det <= 0 || b > 0) { /* offset must not be positive: fit the scale alone */
        b = 0;
        a = sl2 > 0 ? slx / sl2 : 0;
    }
    if (a < 0) a = 0;
    double err = 0;
    for (int j = 0; j < n; j++) {
        double e = a * l[j] + b - x[j];
        err += e * e;
    }
    *a_out = a;
    *b_out = b;
    return err;
}

float st_quant_fit_affine(int n, const float *x, int nmax, uint8_t *L, float *min_out) {
    if (n <= 0 || n > ST_FIT_MAX_N) {
        if (min_out) *min_out = 0.0f;
        return 0.0f;
    }
    float mn = x[0], mx = x[0];
    for (int j = 1; j < n; j++) {
        if (x[j] < mn) mn = x[j];
        if (x[j] > mx) mx = x[j];
    }
    if (mn > 0) mn = 0;
    if (mx == mn) {
        memset(L, 0, (size_t)n);
        *min_out = -mn;
        return 0.0f;
    }
    uint8_t cand[ST_FIT_MAX_N];
    double best_err = DBL_MAX, best_a = 0, best_b = mn;
    for (int step = -ST_FIT_STEPS; step <= ST_FIT_STEPS; step++) {
        double iscale = (nmax + 0.1 * step) / ((double)mx - mn);
        for (int j = 0; j < n; j++)
            cand[j] = (uint8_t)round_clamp(iscale * ((double)x[j] - mn), 0, nmax);
        double a, b, err = affine_lsq(n, x, cand, &a, &b);
        if (err < best_err) {
            best_err = err;
            best_a = a;
            best_b = b;
            memcpy(L, cand, (size_t)n);
        }
    }
    for (int it = 0; it < 2 && best_a > 0; it++) { /* requantize with the fitted scale */
        for (int j = 0; j < n; j++)
            cand[j] = (uint8_t)round_clamp(((double)x[j] - best_b) / best_a, 0, nmax);
        double a, b, err = affine_lsq(n, x, cand, &a, &b);
        if (!(err < best_err)) break;
        best_err = err;
        best_a = a;
        best_b = b;
        memcpy(L, cand, (size_t)n);
    }
    *min_out = (float)-best_b;
    return (float)best_a;
}

/* Score of levels l against x: (sum l*x)^2 / sum l^2 (larger = smaller error); scale out. */
static double sym_score(int n, const float *x, const int8_t *l, double *scale) {
    double slx = 0, sl2 = 0;
    for (int j = 0; j < n; j++) {
        slx += (double)l[j] * x[j];
        sl2 += (double)l[j] * l[j];
    }
    if (sl2 <= 0) {
        *scale = 0;
        return 0;
    }
    *scale = slx / sl2;
    return slx * slx / sl2;
}

float st_quant_fit_symmetric(int n, const float *x, int lo, int hi, int8_t *L) {
    if (n <= 0 || n > ST_FIT_MAX_N) return 0.0f;
    float mx = signed_absmax(x, n);
    memset(L, 0, (size_t)n);
    if (mx == 0.0f) return 0.0f;
    int8_t cand[ST_FIT_MAX_N];
    double best = -1, best_scale = 0;
    for (int side = 0; side < 2; side++) {
        double target = side == 0 ? (double)lo : (double)hi; /* level the extreme maps to */
        for (int step = -ST_FIT_STEPS; step <= ST_FIT_STEPS; step++) {
            double iscale = target * (1.0 + 0.025 * step) / mx;
            for (int j = 0; j < n; j++) cand[j] = (int8_t)round_clamp(iscale * x[j], lo, hi);
            double s, score = sym_score(n, x, cand, &s);
            if (score > best) {
                best = score;
                best_scale = s;
                memcpy(L, cand, (size_t)n);
            }
        }
    }
    for (int it = 0; it < 2 && best_scale != 0; it++) {
        for (int j = 0; j < n; j++) cand[j] = (int8_t)round_clamp(x[j] / best_scale, lo, hi);
        double s, score = sym_score(n, x, cand, &s);
        if (!(score > best)) break;
        best = score;
        best_scale = s;
        memcpy(L, cand, (size_t)n);
    }
    return (float)best_scale;
}

int st_quant_iq4_nearest(float v) {
    int best = 0;
    float bd = fabsf(v - st_iq4nl_values[0]);
    for (int i = 1; i < 16; i++) {
        float d = fabsf(v - st_iq4nl_values[i]);
        if (d < bd) {
            bd = d;
            best = i;
        }
    }
    return best;
}

static double iq4_score(int n, const float *x, const uint8_t *idx, double *scale) {
    double svx = 0, sv2 = 0;
    for (int j = 0; j < n; j++) {
        double v = st_iq4nl_values[idx[j]];
        svx += v * x[j];
        sv2 += v * v;
    }
    *scale = sv2 > 0 ? svx / sv2 : 0;
    return sv2 > 0 ? svx * svx / sv2 : 0;
}

float st_quant_fit_iq4(int n, const float *x, uint8_t *idx) {
    if (n <= 0 || n > ST_FIT_MAX_N) return 0.0f;
    float mx = signed_absmax(x, n);
    if (mx == 0.0f) {
        memset(idx, 8, (size_t)n); /* level +1: times a zero scale gives 0 */
        return 0.0f;
    }
    uint8_t cand[ST_FIT_MAX_N];
    double best = -1, best_scale = 0;
    for (int side = 0; side < 2; side++) {
        double target = side == 0 ? st_iq4nl_values[0] : st_iq4nl_values[15];
        for (int step = -ST_FIT_STEPS; step <= ST_FIT_STEPS; step++) {
            float iscale = (float)(target * (1.0 + 0.02 * step) / mx);
            for (int j = 0; j < n; j++) cand[j] = (uint8_t)st_quant_iq4_nearest(iscale * x[j]);
            double s, score = iq4_score(n, x, cand, &s);
            if (score > best) {
                best = score;
                best_scale = s;
                memcpy(idx, cand, (size_t)n);
            }
        }
    }
    for (int it = 0; it < 2 && best_scale != 0; it++) {
        for (int j = 0; j < n; j++) cand[j] = (uint8_t)st_quant_iq4_nearest((float)(x[j] / best_scale));
        double s, score = iq4_score(n, x, cand, &s);
        if (!(score > best)) break;
        best = score;
        best_scale = s;
        memcpy(idx, cand, (size_t)n);
    }
    return (float)best_scale;
}
