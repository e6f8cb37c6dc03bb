/* SPDX-License-Identifier: Apache-2.0 */
/* The upload-or-compute choice for missed experts. */
#include "experts/expert_cost.h"

#include <math.h>
#include <stdlib.h>

#include "platform/platform.h"

double st_expert_cost_cpu_s(const st_expert_cost *c, int64_t n_rows) {
    if (n_rows <= 0) return 0;
    return c->cpu_s_per_expert + (double)(n_rows - 1) * c->cpu_s_per_row;
}

double st_expert_cost_upload_s(const st_expert_cost *c, uint64_t bytes) {
    double bw = c->upload_bytes_per_s > 0 ? c->upload_bytes_per_s : 1.0;
    return c->upload_latency_s + (double)bytes / bw + c->device_s_per_expert;
}

int st_expert_cost_prefer_upload(const st_expert_cost *c, uint64_t bytes, int64_t n_rows) {
    return st_expert_cost_upload_s(c, bytes) < st_expert_cost_cpu_s(c, n_rows);
}

int64_t st_expert_cost_break_even(const st_expert_cost *c, uint64_t bytes) {
    const double up = st_expert_cost_upload_s(c, bytes);
    if (up < c->cpu_s_per_expert) return 1;
    if (c->cpu_s_per_row <= 0) return INT64_MAX;
    double n = 1.0 + (up - c->cpu_s_per_expert) / c->cpu_s_per_row;
    int64_t k = (int64_t)floor(n) + 1; /* strictly slower on the CPU from here */
    if (k < 1) k = 1;
    while (k > 1 && st_expert_cost_prefer_upload(c, bytes, k - 1)) k--;
    while (!st_expert_cost_prefer_upload(c, bytes, k)) k++;
    return k;
}

int64_t st_expert_cost_split(const st_expert_cost *c, uint64_t bytes, double dev_s, const int32_t *rows, int64_t n,
                             int64_t max_upload, uint8_t *upload, double *t_out) {
    double cpu = 0;
    for (int64_t i = 0; i < n; i++) {
        upload[i] = 0;
        cpu += st_expert_cost_cpu_s(c, rows[i]);
    }
    const double up = st_expert_cost_upload_s(c, bytes);
    double dev = dev_s;
    int64_t moved = 0;
    while (moved < max_upload) {
        int64_t best = -1; /* the CPU's most expensive expert still there */
        for (int64_t i = 0; i < n; i++)
            if (!upload[i] && (best < 0 || rows[i] > rows[best])) best = i;
        if (best < 0) break;
        const double c_best = st_expert_cost_cpu_s(c, rows[best]);
        const double now = dev > cpu ? dev : cpu;
        const double after = dev + up > cpu - c_best ? dev + up : cpu - c_best;
        if (!(after < now)) break;
        upload[best] = 1;
        dev += up;
        cpu -= c_best;
        moved++;
    }
    if (t_out) *t_out = dev > cpu ? dev : cpu;
    return moved;
}

static double time_ffn(const st_expert_slice *s, const float *x, int64_t n, float *out, float *scratch) {
    double best = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t t0 = st_now_ns();
        if (st_expert_cpu_ffn(s, x, n, out, scratch)) return -1;
        double dt = (double)(st_now_ns() - t0) * 1e-9;
        if (dt < best) best = dt;
    }
    return best;
}

int st_expert_cost_calibrate_cpu(st_expert_cost *c, const st_expert_slice *s, int64_t n_rows) {
    if (n_rows < 2) n_rows = 2;
    const int64_t K = s->gate.cols, F = s->gate.rows, M = s->down.rows;
    float *x = calloc((size_t)(n_rows * K), sizeof *x), *out = malloc((size_t)(n_rows * M) * sizeof *out),
          *scratch = malloc((size_t)(2 * F) * sizeof *scratch);
    int rc = -1;
    if (x && out && scratch) {
        for (int64_t i = 0; i < n_rows * K; i++) x[i] = (float)((i % 17) - 8) * 0.01f;
        double t1 = time_ffn(s, x, 1, out, scratch), tn = time_ffn(s, x, n_rows, out, scratch);
        if (t1 >= 0 && tn >= 0) {
            c->cpu_s_per_expert = t1;
            c->cpu_s_per_row = tn > t1 ? (tn - t1) / (double)(n_rows - 1) : t1 / (double)n_rows;
            rc = 0;
        }
    }
    free(x);
    free(out);
    free(scratch);
    return rc;
}
