/* SPDX-License-Identifier: Apache-2.0 */
/* core/kv: page allocation, cell uniqueness, truncation, exhaustion, the device copy of the
 * cell table after st_kv_sync, views and type checks. Runs on the reference device. */
#include <stdlib.h>
#include <string.h>

#include "kv/kv.h"
#include "model/ref_device.h"
#include "model_util.h"
#include "quant/quant.h"

int main(void) {
    const st_backend_api *api = st_ref_device_api(1);
    st_device *dev;
    st_stream *st;
    char err[512];
    api->device_open(0, &dev);
    api->stream_create(dev, &st);
    st_dev door;
    st_dev_wrap(&door, api, dev, 0, 1);
    st_kv_params p = {.n_layer = 2, .n_head_kv = 2, .head_dim = 32, .type = ST_TYPE_F16, .n_seq = 2, .n_ctx = 40,
                      .n_cells = 64, .page_size = 16};
    st_kv *kv = st_kv_create(&door, st, &p, err, sizeof err);
    CHECK(kv != NULL, "create: %s", err);
    if (!kv) return 1;
    CHECK(st_kv_cells_free(kv) == 64, "4 free pages of 16");
    CHECK(st_kv_bytes_per_pos(kv) == 2ull * 2 * 2 * 32 * 2, "bytes per position %llu",
          (unsigned long long)st_kv_bytes_per_pos(kv));
    /* interleave two sequences: every (seq, pos) gets its own cell */
    int used[64] = {0};
    for (int pos = 0; pos < 20; pos++)
        for (int s = 0; s < 2; s++) {
            int32_t c = st_kv_cell(kv, s, pos);
            CHECK(c >= 0 && c < 64, "cell of (%d,%d) = %d", s, pos, c);
            if (c >= 0 && c < 64) used[c]++;
            CHECK(st_kv_cell(kv, s, pos) == c, "a cell is stable");
        }
    int dup = 0;
    for (int i = 0; i < 64; i++) dup += used[i] > 1;
    CHECK(dup == 0, "%d cells shared by two positions", dup);
    CHECK(st_kv_seq_len(kv, 0) == 20 && st_kv_seq_len(kv, 1) == 20, "lengths");
    CHECK(st_kv_cells_free(kv) == 0, "4 pages in use (2 per sequence)");
    CHECK(st_kv_cell(kv, 0, 32) == -1, "a third page for seq 0 does not exist (cache full)");
    CHECK(st_kv_cell(kv, 0, 40) == -1 && st_kv_cell(kv, 2, 0) == -1 && st_kv_cell(kv, -1, 0) == -1, "ranges");
    /* the device table equals the host mapping after a sync */
    CHECK(st_kv_sync(kv, st) == ST_OK, "sync");
    int32_t tab[2 * 40];
    api->copy_d2h(st, tab, st_kv_table_dev(kv), sizeof tab);
    int mism = 0;
    for (int s = 0; s < 2; s++)
        for (int pos = 0; pos < 20; pos++) mism += tab[s * 40 + pos] != st_kv_cell(kv, s, pos);
    CHECK(mism == 0, "%d device table entries differ", mism);
    CHECK(tab[0 * 40 + 35] == -1, "positions without a page read -1");
    /* truncation returns whole pages and keeps the rest */
    int32_t c5 = st_kv_cell(kv, 1, 5);
    st_kv_seq_truncate(kv, 1, 10);
    CHECK(st_kv_seq_len(kv, 1) == 10, "truncated length");
    CHECK(st_kv_cells_free(kv) == 16, "one page back");
    CHECK(st_kv_cell(kv, 1, 5) == c5, "kept positions keep their cell");
    st_kv_sync(kv, st);
    api->copy_d2h(st, tab, st_kv_table_dev(kv), sizeof tab);
    CHECK(tab[40 + 16] == -1 && tab[40 + 5] == c5, "the device table follows the truncation");
    CHECK(st_kv_cell(kv, 0, 32) >= 0, "the freed page serves another sequence");
    st_tensor k = st_kv_k(kv, 1);
    CHECK(k.ne[0] == 32 && k.ne[1] == 2 && k.ne[2] == 64 && k.nb[1] == 64 && k.nb[2] == 128, "K view");
    st_kv_clear(kv);
    CHECK(st_kv_cells_free(kv) == 64 && st_kv_seq_len(kv, 0) == 0, "clear");
    st_kv_free(kv);
    /* Q8_0 needs head_dim % 32 == 0 */
    p.type = ST_TYPE_Q8_0;
    p.head_dim = 16;
    kv = st_kv_create(&door, st, &p, err, sizeof err);
    CHECK(!kv && strstr(err, "multiple of 32"), "Q8_0 with head dim 16: '%s'", err);
    p.head_dim = 64;
    kv = st_kv_create(&door, st, &p, err, sizeof err);
    CHECK(kv && st_kv_k(kv, 0).nb[1] == 2 * 34, "Q8_0 rows of 2 blocks");
    st_kv_free(kv);
    CHECK(st_kv_type_from_name("Q8_0") == ST_TYPE_Q8_0 && st_kv_type_from_name("bf16") == -1, "names");
    api->stream_destroy(st);
    api->device_close(dev);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("kv: all checks passed\n");
    return 0;
}
