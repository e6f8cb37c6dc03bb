/* SPDX-License-Identifier: Apache-2.0 */
/* The layer split's time model: which contiguous layer ranges make a decode step fastest.
 *
 * A decode token crosses the stages one after another, so its time is the sum over devices of
 * the bytes it reads there (its layers' non-expert weights and the experts the router picks,
 * top-k of them) over the device's bandwidth, plus one hidden-state move per boundary. With
 * contiguous ranges in the given device order this is a shortest path over (device, layers
 * placed so far), solved exactly by dynamic programming; each device takes at most the layers
 * its memory holds after its own KV, work buffers and the rest (maxl). docs/layer-split.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"

/* A boundary: the hidden state ([2][n_embd] F32 for one token) through host memory, dominated by
 * the two copies' latency. */
#define BOUNDARY_S 20e-6
/* Prefers, among equal times, the split nearest to one in proportion to room (seconds per layer). */
#define TIE_S 1e-12

/* Bytes one decode token reads from layer l: the non-expert weights and its top-k experts. */
static double layer_bytes(const st_model_desc *d, int32_t l) {
    double b = (double)st_plan_weight_bytes(d, l, 1, 0, 0, 0);
    if (d->layers[l].is_moe) b += (double)d->hp.n_expert_used * (double)d->bytes_expert_slice;
    return b;
}

/* Seconds of the first/last extras on a device (embedding row, output matrix). */
static double ends_s(const st_plan *p, const st_model_desc *d, int32_t i) {
    const int last = i == p->n_devices - 1;
    double b = last ? (double)st_plan_weight_bytes(d, 0, 0, 0, 1, 0) : 0;
    return b / (p->dev[i].in.bw_gbs * 1e9);
}

int st_plan_split_fastest(st_plan *p, const st_model_desc *desc, const int64_t *maxl, const int64_t *room,
                          int32_t *n) {
    const int32_t L = desc->hp.n_layer, D = p->n_devices;
    double *pre = malloc((size_t)(L + 1) * sizeof *pre);          /* prefix sums of layer bytes */
    double *best = malloc((size_t)(D + 1) * (size_t)(L + 1) * sizeof *best); /* [D+1][L+1] */
    int32_t *from = malloc((size_t)(D + 1) * (size_t)(L + 1) * sizeof *from);
    int rc = -1;
    if (!pre || !best || !from) goto done;
    pre[0] = 0;
    for (int32_t l = 0; l < L; l++) pre[l + 1] = pre[l] + layer_bytes(desc, l);
    double sum_room = 0;
    for (int32_t i = 0; i < D; i++) sum_room += (double)room[i];
    for (int32_t k = 0; k < (D + 1) * (L + 1); k++) best[k] = INFINITY, from[k] = -1;
    best[0] = 0;
    p->split_considered = 0;
    for (int32_t i = 0; i < D; i++) {
        const double bw = p->dev[i].in.bw_gbs * 1e9;
        const double prop = sum_room > 0 ? (double)L * (double)room[i] / sum_room : (double)L / D;
        for (int32_t l = 0; l <= L; l++) {
            const double b0 = best[i * (L + 1) + l];
            if (!isfinite(b0)) continue;
            for (int32_t c = 0; c <= maxl[i] && l + c <= L; c++) {
                /* a boundary: between two devices' layers, before the first layers when the embedding's
                   device (0) holds none, and after the last when the output's (D-1) holds none */
                const int cross = (c > 0 && (l > 0 || i > 0)) || (c == 0 && i == D - 1 && l == L && L > 0);
                double t = b0 + (pre[l + c] - pre[l]) / bw + (cross ? BOUNDARY_S : 0) + TIE_S * fabs((double)c - prop);
                p->split_considered++;
                if (t < best[(i + 1) * (L + 1) + l + c]) {
                    best[(i + 1) * (L + 1) + l + c] = t;
                    from[(i + 1) * (L + 1) + l + c] = l;
                }
            }
        }
    }
    if (!isfinite(best[D * (L + 1) + L])) goto done;
    for (int32_t i = D, l = L; i > 0; i--) {
        const int32_t f = from[i * (L + 1) + l];
        n[i - 1] = l - f;
        l = f;
    }
    rc = 0;
done:
    free(pre);
    free(best);
    free(from);
    return rc;
}

void st_plan_split_times(st_plan *p, const st_model_desc *desc) {
    int known = p->n_devices > 0;
    for (int32_t i = 0; i < p->n_devices; i++) known &= p->dev[i].in.bw_gbs > 0;
    p->t_token_s = 0;
    for (int32_t i = 0; i < p->n_devices; i++) p->dev[i].t_token_s = 0;
    if (!known) return;
    int32_t used = 0;
    for (int32_t i = 0; i < p->n_devices; i++) {
        st_plan_device *d = &p->dev[i];
        double b = 0;
        for (int32_t l = d->layer_first; l < d->layer_first + d->n_layers; l++) b += layer_bytes(desc, l);
        d->t_token_s = b / (d->in.bw_gbs * 1e9) + ends_s(p, desc, i);
        p->t_token_s += d->t_token_s;
        used += d->n_layers > 0;
    }
    int32_t lo = -1, hi = -1; /* devices holding the first and the last layers */
    for (int32_t i = 0; i < p->n_devices; i++)
        if (p->dev[i].n_layers > 0) hi = i, lo = lo < 0 ? i : lo;
    const int32_t crossings = (used > 1 ? used - 1 : 0) + (lo > 0) + (hi >= 0 && hi < p->n_devices - 1);
    p->t_token_s += crossings * BOUNDARY_S;
    char share[256] = "";
    size_t at = 0;
    for (int32_t i = 0; i < p->n_devices && at < sizeof share; i++)
        at += (size_t)snprintf(share + at, sizeof share - at, "%s%.*s %d layers %.0f%%", i ? ", " : "", 24,
                               p->dev[i].in.name, p->dev[i].n_layers,
                               p->t_token_s > 0 ? 100 * p->dev[i].t_token_s / p->t_token_s : 0);
    char why[160];
    if (p->split_speed)
        snprintf(why, sizeof why, "the fastest of %lld placements the time model compared", (long long)p->split_considered);
    else
        snprintf(why, sizeof why, "%s", p->split_auto ? "in proportion to each device's room" : "as given");
    st_plan_note_add(p, ST_PLAN_INFO,
                     "layer split %s: %.3f ms per decode token modelled (bytes read / bandwidth, %.0f us per "
                     "boundary); time shares: %s", why, p->t_token_s * 1e3, BOUNDARY_S * 1e6, share);
}
