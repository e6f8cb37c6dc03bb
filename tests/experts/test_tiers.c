/* SPDX-License-Identifier: Apache-2.0 */
/* core/experts tiers on a generated model and a simulated device: file slices, the CPU FFN of
 * a missed expert against a plain float computation, the RAM tier (pinned or honestly not,
 * contents, LRU), and one MoE step whose hits run on the device through the cache's slot
 * table while its misses run on the CPU, both matching the all-CPU result.
 * usage: test_tiers path/to/strata-sim.so */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_registry.h"
#include "experts/expert_cache.h"
#include "experts/expert_cost.h"
#include "experts/expert_pool.h"
#include "experts/expert_tiers.h"
#include "gguf/gguf.h"
#include "model/gen.h"
#include "quant/quant.h"

static int g_fail = 0;
#include "../common/check.h"

/* Plain float FFN from dequantized rows: the comparison for st_expert_cpu_ffn. */
static void naive_ffn(const st_expert_slice *s, const float *x, float *out) {
    const int64_t F = s->gate.rows, K = s->gate.cols, M = s->down.rows;
    float *row = malloc((size_t)(K > F ? K : F) * sizeof *row), *h = malloc((size_t)F * sizeof *h);
    for (int64_t f = 0; f < F; f++) {
        double a = 0, b = 0;
        st_dequantize_row(s->gate.type, (const char *)s->gate.data + f * s->gate.row_bytes, row, K);
        for (int64_t k = 0; k < K; k++) a += (double)row[k] * x[k];
        st_dequantize_row(s->up.type, (const char *)s->up.data + f * s->up.row_bytes, row, K);
        for (int64_t k = 0; k < K; k++) b += (double)row[k] * x[k];
        h[f] = (float)(a / (1 + exp(-a)) * b);
    }
    for (int64_t m = 0; m < M; m++) {
        double v = 0;
        st_dequantize_row(s->down.type, (const char *)s->down.data + m * s->down.row_bytes, row, F);
        for (int64_t f = 0; f < F; f++) v += (double)row[f] * h[f];
        out[m] = (float)v;
    }
    free(row);
    free(h);
}

static double rel_diff(const float *a, const float *b, int64_t n) {
    double d = 0, m = 1e-6;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

typedef struct sim_dev {
    st_backend_registry *reg;
    const st_backend_api *api;
    st_device *dev;
} sim_dev;

static int sim_open(sim_dev *s, const char *module, const char *cfg) {
    memset(s, 0, sizeof *s);
    setenv("STRATA_SIM", cfg, 1);
    st_backend_options opt;
    memset(&opt, 0, sizeof opt);
    opt.search_path = module;
    opt.ignore_env_path = 1;
    opt.skip_exe_dir = 1;
    s->reg = st_backend_registry_open(&opt);
    if (!s->reg || st_backend_registry_n_devices(s->reg) == 0) {
        fprintf(stderr, "no sim device from %s\n", module);
        return -1;
    }
    const st_backend_device *d = st_backend_registry_device(s->reg, 0);
    s->api = d->module->api;
    if (s->api->device_open(d->index, &s->dev) != ST_OK) {
        fprintf(stderr, "device_open: %s\n", s->api->last_error());
        return -1;
    }
    return 0;
}

static void sim_close(sim_dev *s) {
    if (s->dev) CHECK(s->api->device_close(s->dev) == ST_OK, "device_close: %s", s->api->last_error());
    if (s->reg) st_backend_registry_close(s->reg);
    memset(s, 0, sizeof *s);
}

static st_tensor view(void *data, uint32_t type, int64_t cols, int64_t rows, int64_t n, uint64_t mat_stride) {
    st_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.type = type;
    t.ne[0] = cols;
    t.ne[1] = rows;
    t.ne[2] = n;
    t.ne[3] = 1;
    t.nb[0] = (int64_t)st_type_get(type)->type_size;
    t.nb[1] = (int64_t)st_row_size(type, cols);
    t.nb[2] = mat_stride ? (int64_t)mat_stride : t.nb[1] * rows;
    t.nb[3] = t.nb[2] * n;
    return t;
}

static void *dalloc(sim_dev *s, uint64_t bytes) {
    void *p = NULL;
    CHECK(s->api->mem_alloc(s->dev, bytes, &p) == ST_OK, "mem_alloc %llu: %s", (unsigned long long)bytes,
          s->api->last_error());
    return p;
}

static void upload(sim_dev *s, st_stream *st, void *dst, const void *src, uint64_t n) {
    CHECK(s->api->copy_h2d(st, dst, src, n) == ST_OK && s->api->stream_sync(st) == ST_OK, "upload: %s",
          s->api->last_error());
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_tiers path/to/strata-sim.so\n");
        return 2;
    }
    char path[512], err[512];
    const char *td = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/strata-tiers-%d.gguf", td && *td ? td : "/tmp", (int)getpid());
    st_gen_params gp;
    st_gen_preset("tiny", "qwen3moe", &gp);
    gp.wtype = ST_TYPE_Q8_0;
    gp.seed = 11;
    if (st_gen_model(&gp, path, err, sizeof err)) {
        fprintf(stderr, "gen: %s\n", err);
        return 1;
    }
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    if (!d) {
        fprintf(stderr, "open: %s\n", err);
        return 1;
    }
    const int32_t NE = d->hp.n_expert, E = d->hp.n_embd;

    /* 1. file slices */
    for (int32_t l = 0; l < d->hp.n_layer; l++)
        for (int32_t e = 0; e < NE; e++) {
            st_expert_slice s, s1;
            CHECK(st_expert_slice_of(d, l, e, &s, err, sizeof err) == 0, "slice: %s", err);
            CHECK(s.bytes == d->bytes_expert_slice, "slice bytes %llu vs desc %llu", (unsigned long long)s.bytes,
                  (unsigned long long)d->bytes_expert_slice);
            CHECK(s.gate.rows == d->hp.n_ff_exp && s.gate.cols == E && s.down.rows == E && s.down.cols == d->hp.n_ff_exp,
                  "slice shapes");
            if (e + 1 < NE && st_expert_slice_of(d, l, e + 1, &s1, err, sizeof err) == 0)
                CHECK((const char *)s1.gate.data == (const char *)s.gate.data + s.gate.bytes, "slices not contiguous");
        }
    {
        st_expert_slice s;
        CHECK(st_expert_slice_of(d, 0, NE, &s, err, sizeof err) == -1 && strstr(err, "out of range"), "expert out of range");
        CHECK(st_expert_slice_of(d, d->hp.n_layer, 0, &s, err, sizeof err) == -1, "layer out of range");
        (void)st_expert_prefetch(d, 0, 1); /* advisory: the OS may refuse */
    }

    /* 2. CPU FFN of one expert vs dequantized float math */
    float x[4 * 64], out[4 * 64], ref[64], scratch[2 * 64];
    for (int i = 0; i < 4 * E; i++) x[i] = sinf(0.37f * (float)i) * 0.5f;
    for (int32_t e = 0; e < NE; e++) {
        st_expert_slice s;
        st_expert_slice_of(d, 1, e, &s, err, sizeof err);
        CHECK(st_expert_cpu_ffn(&s, x, 4, out, scratch) == 0, "cpu ffn failed");
        for (int i = 0; i < 4; i++) {
            naive_ffn(&s, x + i * E, ref);
            double r = rel_diff(out + i * E, ref, E);
            CHECK(r < 1e-5, "expert %d row %d: CPU FFN differs by %.3g", e, i, r);
        }
    }

    /* 3. RAM tier: pinned when the backend gives it, honestly pageable when not */
    sim_dev sd;
    if (sim_open(&sd, argv[1], "devices=1,mem=64MiB,pinned=1KiB")) return 1;
    char rep[256];
    st_expert_ram *ram = st_expert_ram_create(d, 3, sd.api, sd.dev, rep, sizeof rep, err, sizeof err);
    CHECK(ram && !st_expert_ram_pinned(ram) && strstr(rep, "pinned host memory refused") && strstr(rep, "pageable"),
          "refused pinning not reported: %s", rep);
    printf("%s\n", rep);
    st_expert_ram_free(ram);
    sim_close(&sd);
    if (sim_open(&sd, argv[1], "devices=1,mem=64MiB")) return 1;
    ram = st_expert_ram_create(d, 3, sd.api, sd.dev, rep, sizeof rep, err, sizeof err);
    CHECK(ram && st_expert_ram_pinned(ram) && strstr(rep, " pinned"), "pinned arena: %s", rep);
    printf("%s\n", rep);
    if (!ram) return 1;
    const int32_t seq[] = {0, 1, 2, 0, 1, 2, 3, 0, 1};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        st_expert_slice fs, rs;
        st_expert_slice_of(d, 0, seq[i], &fs, err, sizeof err);
        CHECK(st_expert_ram_get(ram, 0, seq[i], &rs, err, sizeof err) == 0, "ram get: %s", err);
        CHECK(rs.gate.data != fs.gate.data && !memcmp(rs.gate.data, fs.gate.data, fs.gate.bytes) &&
                  !memcmp(rs.up.data, fs.up.data, fs.up.bytes) && !memcmp(rs.down.data, fs.down.data, fs.down.bytes),
              "RAM slot of expert %d differs from the file", seq[i]);
    }
    st_expert_ram_stats rst;
    st_expert_ram_stats_get(ram, &rst);
    /* 0 1 2 read; 0 1 2 hit; 3 read (evicts 0); 0 read (evicts 1); 1 read (evicts 2) */
    CHECK(rst.file_reads == 6 && rst.hits == 3 && rst.evictions == 3 && rst.bytes_file == 6 * d->bytes_expert_slice,
          "RAM stats: %llu reads, %llu hits, %llu evictions", (unsigned long long)rst.file_reads,
          (unsigned long long)rst.hits, (unsigned long long)rst.evictions);

    /* 4. one MoE step: hits on the device through the slot table, misses on the CPU */
    const int32_t S = 3, NT = 4, K = 2, A = NT * K;
    const int32_t ids[8] = {0, 1, 2, 3, 0, 4, 1, 5}; /* 6 distinct experts, 3 slots */
    st_expert_cache_params cp;
    memset(&cp, 0, sizeof cp);
    cp.n_layer = d->hp.n_layer;
    cp.n_expert = NE;
    cp.n_slots = S;
    cp.policy = ST_EXPERT_LRU;
    cp.slot_bytes = d->bytes_expert_slice;
    st_expert_cache *cache = st_expert_cache_create(&cp, err, sizeof err);
    st_stream *stream = NULL;
    CHECK(cache && sd.api->stream_create(sd.dev, &stream) == ST_OK, "cache/stream");
    st_expert_slice s0;
    st_expert_slice_of(d, 0, 0, &s0, err, sizeof err);
    const int64_t Fe = s0.gate.rows;
    char *pool_g = dalloc(&sd, s0.gate.bytes * S), *pool_u = dalloc(&sd, s0.up.bytes * S),
         *pool_d = dalloc(&sd, s0.down.bytes * S);
    int32_t slot_of[8];
    st_expert_load loads[8];
    st_expert_cache_step(cache);
    int64_t nl = st_expert_cache_route(cache, 0, ids, A, slot_of, loads, 8);
    CHECK(nl == S, "first step should fill the %d slots (admitted %lld)", S, (long long)nl);
    for (int64_t j = 0; j < nl; j++) { /* the uploads the engine would do, from the RAM tier */
        st_expert_slice rs;
        st_expert_ram_get(ram, loads[j].layer, loads[j].expert, &rs, err, sizeof err);
        upload(&sd, stream, pool_g + loads[j].slot * s0.gate.bytes, rs.gate.data, rs.gate.bytes);
        upload(&sd, stream, pool_u + loads[j].slot * s0.up.bytes, rs.up.data, rs.up.bytes);
        upload(&sd, stream, pool_d + loads[j].slot * s0.down.bytes, rs.down.data, rs.down.bytes);
    }
    st_expert_cache_step(cache);
    nl = st_expert_cache_route(cache, 0, ids, A, slot_of, loads, 0); /* no admissions: keep the table */
    int n_hit = 0;
    for (int a = 0; a < A; a++) n_hit += slot_of[a] >= 0;
    CHECK(n_hit > 0 && n_hit < A, "the step should mix hits and misses (%d hits of %d)", n_hit, A);
    int32_t h_xrow[8], h_ident[8];
    for (int a = 0; a < A; a++) h_xrow[a] = a / K, h_ident[a] = a;
    int32_t *d_table = dalloc(&sd, (uint64_t)NE * 4), *d_ids = dalloc(&sd, A * 4), *d_xrow = dalloc(&sd, A * 4),
            *d_ident = dalloc(&sd, A * 4);
    float *d_x = dalloc(&sd, (uint64_t)NT * E * 4), *d_eg = dalloc(&sd, (uint64_t)A * Fe * 4),
          *d_eu = dalloc(&sd, (uint64_t)A * Fe * 4), *d_ed = dalloc(&sd, (uint64_t)A * E * 4);
    upload(&sd, stream, d_table, st_expert_cache_table(cache) + 0 * NE, (uint64_t)NE * 4); /* layer 0's row */
    upload(&sd, stream, d_ids, ids, A * 4);
    upload(&sd, stream, d_xrow, h_xrow, A * 4);
    upload(&sd, stream, d_ident, h_ident, A * 4);
    upload(&sd, stream, d_x, x, (uint64_t)NT * E * 4);
    float *ed = malloc((size_t)A * E * sizeof *ed);
    for (int i = 0; i < A * E; i++) ed[i] = 12345.0f; /* rows the device must leave alone */
    upload(&sd, stream, d_ed, ed, (uint64_t)A * E * 4);
    const st_backend_ops *ops = sd.api->ops;
    st_moe_matmul_args mm;
    memset(&mm, 0, sizeof mm);
    mm.size = sizeof mm;
    mm.n_assign = A;
    mm.slot_table = d_table;
    mm.expert = d_ids;
    mm.x_row = d_xrow;
    mm.w = view(pool_g, s0.gate.type, E, Fe, S, s0.gate.bytes);
    mm.x = view(d_x, ST_TYPE_F32, E, NT, 1, 0);
    mm.out = view(d_eg, ST_TYPE_F32, Fe, A, 1, 0);
    CHECK(ops->moe_matmul(stream, &mm) == ST_OK, "gate: %s", sd.api->last_error());
    mm.w = view(pool_u, s0.up.type, E, Fe, S, s0.up.bytes);
    mm.out = view(d_eu, ST_TYPE_F32, Fe, A, 1, 0);
    CHECK(ops->moe_matmul(stream, &mm) == ST_OK, "up: %s", sd.api->last_error());
    st_swiglu_args sw;
    memset(&sw, 0, sizeof sw);
    sw.size = sizeof sw;
    sw.gate = view(d_eg, ST_TYPE_F32, Fe, A, 1, 0);
    sw.up = view(d_eu, ST_TYPE_F32, Fe, A, 1, 0);
    sw.out = sw.gate;
    CHECK(ops->swiglu(stream, &sw) == ST_OK, "swiglu: %s", sd.api->last_error());
    mm.w = view(pool_d, s0.down.type, Fe, E, S, s0.down.bytes);
    mm.x = view(d_eg, ST_TYPE_F32, Fe, A, 1, 0);
    mm.x_row = d_ident;
    mm.out = view(d_ed, ST_TYPE_F32, E, A, 1, 0);
    CHECK(ops->moe_matmul(stream, &mm) == ST_OK, "down: %s", sd.api->last_error());
    CHECK(sd.api->copy_d2h(stream, ed, d_ed, (uint64_t)A * E * 4) == ST_OK && sd.api->stream_sync(stream) == ST_OK,
          "readback: %s", sd.api->last_error());
    for (int a = 0; a < A; a++) {
        st_expert_slice fs;
        st_expert_slice_of(d, 0, ids[a], &fs, err, sizeof err);
        float want[64], miss[64];
        CHECK(st_expert_cpu_ffn(&fs, x + (a / K) * E, 1, want, scratch) == 0, "reference");
        if (slot_of[a] >= 0) {
            double r = rel_diff(ed + a * E, want, E);
            CHECK(r < 1e-4, "assignment %d (expert %d, slot %d): device hit differs from the CPU by %.3g", a, ids[a],
                  slot_of[a], r);
        } else {
            CHECK(ed[a * E] == 12345.0f && ed[a * E + E - 1] == 12345.0f, "the device wrote miss row %d", a);
            st_expert_slice rs;
            CHECK(st_expert_ram_get(ram, 0, ids[a], &rs, err, sizeof err) == 0, "%s", err);
            CHECK(st_expert_cpu_ffn(&rs, x + (a / K) * E, 1, miss, scratch) == 0, "miss on the CPU");
            CHECK(rel_diff(miss, want, E) == 0.0, "miss from the RAM tier differs from the file");
        }
    }
    printf("MoE step: %d hits on the device, %d misses on the CPU, all rows match\n", n_hit, A - n_hit);

    /* 5. the CPU pool: the same rows as one thread, a second batch refused while one runs */
    {
        st_expert_pool *pool = st_expert_pool_create(3, d->hp.n_ff_exp, err, sizeof err);
        CHECK(pool != NULL, "pool: %s", err);
        st_expert_job jobs[8];
        float pout[8 * 64], sout[8 * 64];
        for (int a = 0; a < A; a++) {
            memset(&jobs[a], 0, sizeof jobs[a]);
            st_expert_slice_of(d, 1, ids[a], &jobs[a].slice, err, sizeof err);
            jobs[a].x = x + (a / K) * E;
            jobs[a].n = 1;
            jobs[a].out = pout + a * E;
            jobs[a].status = 99;
            st_expert_cpu_ffn(&jobs[a].slice, jobs[a].x, 1, sout + a * E, scratch);
        }
        if (pool) {
            CHECK(st_expert_pool_submit(pool, jobs, A) == 0, "submit");
            CHECK(st_expert_pool_submit(pool, jobs, A) == -1, "a second batch while one runs must be refused");
            CHECK(st_expert_pool_wait(pool) == 0, "pool batch failed");
            int st = 0;
            for (int a = 0; a < A; a++) st |= jobs[a].status;
            CHECK(st == 0 && !memcmp(pout, sout, (size_t)A * E * sizeof *pout), "pool results differ from one thread");
            jobs[0].slice.gate.rows = d->hp.n_ff_exp + 1; /* beyond the pool's scratch: must fail, not overrun */
            CHECK(st_expert_pool_submit(pool, jobs, 1) == 0 && st_expert_pool_wait(pool) == -1 && jobs[0].status == -1,
                  "a job the pool cannot run must fail");
            st_expert_pool_free(pool);
        }
    }

    /* 6. upload or compute: Fiddler's 4090 numbers (copy 13.3 ms at 24.7 GB/s, CPU 11.4 ms at one
     * row, GPU 0.59 ms) say CPU at batch 1; more rows tip it to the upload */
    {
        st_expert_cost c;
        memset(&c, 0, sizeof c);
        c.upload_bytes_per_s = 24.7e9;
        c.device_s_per_expert = 0.59e-3;
        c.cpu_s_per_expert = 11.4e-3;
        c.cpu_s_per_row = 2.0e-3;
        const uint64_t bytes = (uint64_t)(24.7e9 * 13.3e-3);
        CHECK(!st_expert_cost_prefer_upload(&c, bytes, 1), "one row should stay on the CPU");
        CHECK(st_expert_cost_prefer_upload(&c, bytes, 64), "64 rows should upload");
        int64_t be = st_expert_cost_break_even(&c, bytes);
        CHECK(be > 1 && st_expert_cost_prefer_upload(&c, bytes, be) && !st_expert_cost_prefer_upload(&c, bytes, be - 1),
              "break-even %lld is not where the choice flips", (long long)be);
        c.cpu_s_per_row = 0;
        CHECK(st_expert_cost_break_even(&c, bytes) == INT64_MAX, "a CPU with free rows never loses");
        st_expert_slice fs;
        st_expert_slice_of(d, 0, 0, &fs, err, sizeof err);
        CHECK(st_expert_cost_calibrate_cpu(&c, &fs, 8) == 0 && c.cpu_s_per_expert > 0 && c.cpu_s_per_row > 0,
              "calibration: %g s per expert, %g s per row", c.cpu_s_per_expert, c.cpu_s_per_row);
        printf("CPU FFN of one tiny expert: %.1f us, +%.1f us per row; Fiddler's break-even: %lld rows\n",
               c.cpu_s_per_expert * 1e6, c.cpu_s_per_row * 1e6, (long long)be);
    }
    free(ed);
    void *bufs[] = {pool_g, pool_u, pool_d, d_table, d_ids, d_xrow, d_ident, d_x, d_eg, d_eu, d_ed};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) sd.api->mem_free(sd.dev, bufs[i]);
    if (stream) sd.api->stream_destroy(stream);
    st_expert_cache_free(cache);
    st_expert_ram_free(ram);
    sim_close(&sd);
    st_model_desc_free(d);
    st_gguf_close(g);
    remove(path);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("tiers: all checks passed\n");
    return 0;
}
