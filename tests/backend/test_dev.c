/* SPDX-License-Identifier: Apache-2.0 */
/* core/backend/dev.c, the one door to a device, on the reference device: a slot is present
 * only when the table's ABI minor, size and pointer say so; errors name the op and the device;
 * injected faults fire on the Nth call of a slot; a lost device fails every later call; the
 * loader's list of required slots comes from the header's slot table. */
#include <stdlib.h>
#include <string.h>

#include "backend/dev.h"
#include "check.h"
#include "model/ref_device.h"

static int g_fail;

/* A table like the reference's that claims ABI minor `minor` and an ops table of `ops_size`. */
static st_backend_api g_api;
static st_backend_ops g_ops;
static const st_backend_api *table_of(uint32_t minor, uint32_t ops_size) {
    g_api = *st_ref_device_api(1);
    g_ops = *g_api.ops;
    g_ops.size = ops_size;
    g_api.ops = &g_ops;
    g_api.abi_minor = minor;
    return &g_api;
}

static void presence(void) {
    st_dev d;
    /* ABI 1.0 table: the 1.1 fused op is not there even though its pointer is filled */
    st_dev_wrap(&d, table_of(0, sizeof g_ops), NULL, 0, 0);
    CHECK(g_ops.attn_prep != NULL, "the reference has ATTN_PREP (the test needs it)");
    CHECK(!st_dev_has_op(&d, ST_OP_ATTN_PREP), "ABI 1.0 table: ATTN_PREP (1.1) counted present");
    CHECK(st_dev_has_op(&d, ST_OP_MATMUL), "ABI 1.0 table: MATMUL (1.0) missing");
    st_attn_prep_args a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    st_status s = st_dev_attn_prep(&d, NULL, &a, "attention prologue");
    CHECK(s == ST_UNSUPPORTED, "absent op: status %d", (int)s);
    CHECK(strstr(st_dev_error(), "attn_prep") && strstr(st_dev_error(), "ref0") && strstr(st_dev_error(), "ABI 1.0"),
          "absent op error names op, device and ABI: '%s'", st_dev_error());
    /* a table of minor 2 whose ops table ends before the 1.2 slots */
    st_dev_wrap(&d, table_of(2, (uint32_t)offsetof(st_backend_ops, attention_ex)), NULL, 0, 0);
    CHECK(st_dev_has_op(&d, ST_OP_MOE_DOWN) && !st_dev_has_op(&d, ST_OP_ATTENTION_EX),
          "the ops table's size bounds the slots");
    /* a NULL slot is absent */
    st_dev_wrap(&d, table_of(ST_ABI_MINOR, sizeof g_ops), NULL, 0, 0);
    g_ops.topk = NULL;
    CHECK(!st_dev_has_op(&d, ST_OP_TOPK) && st_dev_has_op(&d, ST_OP_ARGMAX), "NULL slot absent");
    CHECK(st_op_minor(ST_OP_ROUTER_GROUPS) == 2 && st_op_minor(ST_OP_MOE_GATE_UP) == 1 && st_op_minor(ST_OP_ADD) == 0,
          "op minors from the slot table");
    /* the slot table is append-only: minors never decrease along op ids */
    for (uint32_t op = 1; op < ST_OP_COUNT; op++)
        CHECK(st_op_minor(op) >= st_op_minor(op - 1), "op %s (1.%u) after %s (1.%u)", st_op_name(op), st_op_minor(op),
              st_op_name(op - 1), st_op_minor(op - 1));
}

static void faults_and_loss(void) {
    st_dev d;
    char err[256];
    CHECK(st_dev_open(&d, st_ref_device_api(1), 0) == ST_OK, "open: %s", st_dev_error());
    CHECK(!strcmp(d.name, "ref0"), "device name '%s'", d.name);
    st_stream *s = NULL;
    CHECK(st_dev_stream_create(&d, &s) == ST_OK, "stream: %s", st_dev_error());
    float *buf = NULL;
    CHECK(st_dev_alloc(&d, 64 * sizeof(float), (void **)&buf) == ST_OK, "alloc");
    st_binary_args a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.s = 2.0f;
    a.a = (st_tensor){.data = buf, .type = ST_TYPE_F32, .ne = {64, 1, 1, 1}, .nb = {4, 256, 256, 256}};
    a.out = a.a;
    /* the 3rd scale on ref0 fails, the others pass */
    CHECK(st_dev_fault_set("ref0:scale:3", err, sizeof err) == 0, "fault spec: %s", err);
    CHECK(st_dev_fault_set("ref0:scale", err, sizeof err) == -1 && strstr(err, "DEVICE:SLOT:N"), "bad spec refused");
    CHECK(st_dev_fault_set("ref0:scale:3", err, sizeof err) == 0, "fault spec again");
    st_status r[4];
    for (int i = 0; i < 4; i++) r[i] = st_dev_scale(&d, s, &a, "test");
    CHECK(r[0] == ST_OK && r[1] == ST_OK && r[2] == ST_INTERNAL && r[3] == ST_OK, "injected: %d %d %d %d", r[0], r[1],
          r[2], r[3]);
    /* a loss: the 2nd copy loses the device; everything after fails at once, naming it */
    d.fault_calls = 0;
    CHECK(st_dev_fault_set("ref0:copy_h2d:2:lost", err, sizeof err) == 0, "lost spec");
    float host[64] = {0};
    CHECK(st_dev_h2d(&d, s, buf, host, sizeof host) == ST_OK, "first copy");
    CHECK(st_dev_h2d(&d, s, buf, host, sizeof host) == ST_DEVICE_LOST, "second copy loses the device");
    CHECK(d.lost, "the door remembers the loss");
    st_status after = st_dev_scale(&d, s, &a, "after");
    CHECK(after == ST_DEVICE_LOST && strstr(st_dev_error(), "ref0") && strstr(st_dev_error(), "scale") &&
              strstr(st_dev_error(), "lost"),
          "later op: %d '%s'", (int)after, st_dev_error());
    st_dev_fault_set(NULL, err, sizeof err);
    /* releases still reach the module */
    CHECK(st_dev_free(&d, buf) == ST_OK, "free after loss");
    CHECK(st_dev_stream_destroy(&d, s) == ST_OK, "stream destroy after loss");
    CHECK(st_dev_close(&d) == ST_OK, "close");
}

/* The slot list's rows as docs/backends.md shows them: "| `slot` | table | required | 1.minor |". */
static int slot_row(char *buf, size_t len, const char *slot, const char *table, int req, unsigned minor) {
    return snprintf(buf, len, "| `%s` | %s | %s | 1.%u |", slot, table, req ? "required" : "optional", minor);
}

/* Every slot of the header's table has its row in the doc (the doc's list is derived from the
 * table: --print-slots writes it). */
static void doc_rows(const char *doc_path, int print) {
    char *doc = NULL;
    FILE *f = doc_path ? fopen(doc_path, "rb") : NULL;
    if (f) {
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        doc = calloc(1, (size_t)n + 1);
        if (doc && fread(doc, 1, (size_t)n, f) != (size_t)n) doc[0] = 0;
        fclose(f);
    }
    CHECK(print || doc, "cannot read %s", doc_path ? doc_path : "(no path)");
    char row[160];
#define CHECK_ROW_(slot, table, req, minor)                                                   \
    do {                                                                                     \
        slot_row(row, sizeof row, slot, table, req, minor);                                  \
        if (print) printf("%s\n", row);                                                      \
        else CHECK(doc && strstr(doc, row), "docs/backends.md lacks the row '%s'", row);      \
    } while (0);
#define API_FN_(slot, ret, params, req, minor) CHECK_ROW_(#slot, "st_backend_api", req, minor)
#define API_PTR_(slot, type, req, minor) CHECK_ROW_(#slot, "st_backend_api", req, minor)
#define OP_(ID, slot, A, minor) CHECK_ROW_(#slot, "st_backend_ops", 0, minor)
    ST_BACKEND_API_SLOTS(API_FN_, API_PTR_)
    ST_BACKEND_OP_SLOTS(OP_)
#undef API_FN_
#undef API_PTR_
#undef OP_
#undef CHECK_ROW_
    free(doc);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--print-slots")) {
        doc_rows(NULL, 1);
        return 0;
    }
    doc_rows(argc > 1 ? argv[1] : NULL, 0);
    presence();
    faults_and_loss();
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("backend.dev: ok\n");
    return 0;
}
