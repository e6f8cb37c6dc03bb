/* SPDX-License-Identifier: Apache-2.0 */
/* strata gguf FILE [--all]: a GGUF file's version, metadata and tensor table.
 * Long arrays are summarized; per-layer tensors (blk.N.*) are collapsed over N into one line
 * per name pattern unless --all is given.
 * strata gguf --check FILE: what the file holds that Strata would not use (keys it does not
 * read, tensors loaded-unused as in the reference, and what makes it refuse the file). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "cli/commands.h"
#include "gguf/gguf.h"
#include "strata/backend.h"

#define ARRAY_PREVIEW 6
#define STRING_PREVIEW 120

static void human_bytes(char *buf, size_t cap, uint64_t b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", b);
    else
        snprintf(buf, cap, "%.2f %s", v, unit[u]);
}

/* Prints a string quoted with escapes, cut after `max` bytes (0 = whole). */
static void print_str(const char *s, uint64_t len, uint64_t max)
{
    putchar('"');
    uint64_t n = max && len > max ? max : len;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    if (n < len)
        printf("... (%" PRIu64 " bytes)", len);
}

static void print_scalar(const st_gguf_value *v, uint64_t max_str)
{
    switch (v->type) {
    case ST_GGUF_TYPE_U8: case ST_GGUF_TYPE_U16: case ST_GGUF_TYPE_U32: case ST_GGUF_TYPE_U64:
        printf("%" PRIu64, v->v.u64);
        break;
    case ST_GGUF_TYPE_I8: case ST_GGUF_TYPE_I16: case ST_GGUF_TYPE_I32: case ST_GGUF_TYPE_I64:
        printf("%" PRId64, v->v.i64);
        break;
    case ST_GGUF_TYPE_F32: {
        /* shortest of 6 or 9 significant digits that reads back as the same float */
        char b[40];
        snprintf(b, sizeof b, "%.6g", v->v.f64);
        if ((float)strtod(b, NULL) != (float)v->v.f64)
            snprintf(b, sizeof b, "%.9g", v->v.f64);
        fputs(b, stdout);
        break;
    }
    case ST_GGUF_TYPE_F64: printf("%.17g", v->v.f64); break;
    case ST_GGUF_TYPE_BOOL: fputs(v->v.u64 ? "true" : "false", stdout); break;
    case ST_GGUF_TYPE_STRING: print_str(v->v.str.ptr, v->v.str.len, max_str); break;
    default: fputs("?", stdout); break;
    }
}

static void print_metadata(const st_gguf *g, int all)
{
    int64_t n = st_gguf_kv_count(g);
    printf("\nmetadata: %" PRId64 " keys\n", n);
    for (int64_t i = 0; i < n; i++) {
        st_gguf_value v;
        st_gguf_kv_get(g, i, &v);
        const char *key = st_gguf_kv_key(g, i);
        if (v.type != ST_GGUF_TYPE_ARRAY) {
            printf("  %-40s %-7s ", key, st_gguf_type_name(v.type));
            print_scalar(&v, all ? 0 : STRING_PREVIEW);
            putchar('\n');
            continue;
        }
        char t[32];
        snprintf(t, sizeof t, "[%s x %" PRIu64 "]", st_gguf_type_name(v.v.arr.type), v.v.arr.len);
        printf("  %-40s %-7s ", key, t);
        if (v.v.arr.type == ST_GGUF_TYPE_ARRAY) {
            puts("(nested arrays)");
            continue;
        }
        /* never dump whole arrays: tokenizer tables hold 100k+ items */
        uint64_t show = v.v.arr.len < ARRAY_PREVIEW ? v.v.arr.len : ARRAY_PREVIEW;
        fputs("[", stdout);
        for (uint64_t j = 0; j < show; j++) {
            st_gguf_value e;
            if (st_gguf_arr_get(g, i, j, &e) != ST_GGUF_OK)
                break;
            if (j)
                fputs(", ", stdout);
            print_scalar(&e, 40);
        }
        if (show < v.v.arr.len)
            printf(", ... %" PRIu64 " more", v.v.arr.len - show);
        puts("]");
    }
}

static void shape_str(char *buf, size_t cap, const st_gguf_tensor *t, int expert)
{
    size_t o = 0;
    uint32_t nd = t->n_dims;
    if (expert && nd == 3) {
        o += (size_t)snprintf(buf, cap, "%" PRId64 " x ", t->ne[2]);
        nd = 2;
    }
    o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "[");
    for (uint32_t d = 0; d < nd && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
}

/* "blk.12.attn_q.weight" -> layer 12, rest "attn_q.weight"; 0 if not a layer tensor. */
static int split_layer(const char *name, long *layer, const char **rest)
{
    if (strncmp(name, "blk.", 4) != 0)
        return 0;
    char *end;
    long l = strtol(name + 4, &end, 10);
    if (end == name + 4 || *end != '.' || l < 0)
        return 0;
    *layer = l;
    *rest = end + 1;
    return 1;
}

typedef struct group {
    const char *rest;     /* pattern after "blk.N." */
    const st_gguf_tensor *first;
    long lo, hi;
    int64_t count;
    uint64_t bytes;
    int mixed_shape, mixed_type;
    uint64_t type_mask; /* bit per type id < 64 seen in the group */
} group;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int same_shape(const st_gguf_tensor *a, const st_gguf_tensor *b)
{
    return a->n_dims == b->n_dims && memcmp(a->ne, b->ne, sizeof a->ne) == 0;
}

static void print_row(const char *name, const st_gguf_tensor *t, const char *shape,
                      const char *type, uint64_t bytes)
{
    (void)t;
    char hb[32];
    human_bytes(hb, sizeof hb, bytes);
    printf("  %-44s %-24s %-10s %14" PRIu64 "  %s\n", name, shape, type, bytes, hb);
}

static int print_grouped(const st_gguf *g)
{
    int64_t n = st_gguf_tensor_count(g);
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2)
        cap <<= 1;
    int64_t *slots = calloc((size_t)cap, sizeof *slots);
    group *gr = calloc(n ? (size_t)n : 1, sizeof *gr);
    if (!slots || !gr) {
        free(slots);
        free(gr);
        fprintf(stderr, "strata gguf: out of memory\n");
        return -1;
    }
    int64_t ng = 0, n_layer_tensors = 0;
    for (int64_t i = 0; i < n; i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        long layer;
        const char *rest;
        if (!split_layer(t->name, &layer, &rest)) {
            char shape[64];
            shape_str(shape, sizeof shape, t, 0);
            print_row(t->name, t, shape, st_gguf_tensor_type_name(t->type), t->nbytes);
            continue;
        }
        n_layer_tensors++;
        uint64_t h = hash_str(rest) & (cap - 1);
        while (slots[h] && strcmp(gr[slots[h] - 1].rest, rest) != 0)
            h = (h + 1) & (cap - 1);
        if (!slots[h]) {
            gr[ng] = (group){.rest = rest, .first = t, .lo = layer, .hi = layer};
            slots[h] = ++ng;
        }
        group *q = &gr[slots[h] - 1];
        q->lo = layer < q->lo ? layer : q->lo;
        q->hi = layer > q->hi ? layer : q->hi;
        q->count++;
        q->bytes += t->nbytes;
        q->mixed_shape |= !same_shape(q->first, t);
        q->mixed_type |= q->first->type != t->type;
        if (t->type < 64)
            q->type_mask |= 1ull << t->type;
        else
            q->type_mask |= 1ull << 63;
    }
    if (ng)
        printf("  -- %" PRId64 " per-layer tensors in %" PRId64 " patterns (--all lists each) --\n",
               n_layer_tensors, ng);
    for (int64_t k = 0; k < ng; k++) {
        const group *q = &gr[k];
        char name[160], shape[64];
        if (q->count == q->hi - q->lo + 1)
            snprintf(name, sizeof name, "blk.[%ld-%ld].%s", q->lo, q->hi, q->rest);
        else
            snprintf(name, sizeof name, "blk.[%" PRId64 " of %ld-%ld].%s", q->count, q->lo, q->hi,
                     q->rest);
        int expert = strstr(q->rest, "_exps") != NULL;
        if (q->mixed_shape)
            snprintf(shape, sizeof shape, "(mixed shapes)");
        else
            shape_str(shape, sizeof shape, q->first, expert);
        char types[96] = "";
        if (q->mixed_type) {
            /* e.g. "Q4_K+Q6_K": quantization mixes differ per layer */
            size_t o = 0;
            for (uint32_t ty = 0; ty < 64 && o < sizeof types; ty++)
                if (q->type_mask >> ty & 1)
                    o += (size_t)snprintf(types + o, sizeof types - o, "%s%s", o ? "+" : "",
                                          ty < 63 ? st_gguf_tensor_type_name(ty) : "other");
        }
        print_row(name, q->first, shape, q->mixed_type ? types : st_gguf_tensor_type_name(q->first->type),
                  q->bytes);
    }
    free(slots);
    free(gr);
    return 0;
}

static void print_totals(const st_gguf *g)
{
    uint64_t bytes[ST_TYPE_COUNT + 1] = {0}, total = 0, elems = 0;
    int64_t counts[ST_TYPE_COUNT + 1] = {0};
    int64_t n = st_gguf_tensor_count(g);
    for (int64_t i = 0; i < n; i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        uint32_t k = t->type < ST_TYPE_COUNT ? t->type : ST_TYPE_COUNT;
        bytes[k] += t->nbytes;
        counts[k]++;
        total += t->nbytes;
        elems += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    }
    char hb[32];
    human_bytes(hb, sizeof hb, total);
    printf("\ntotal: %" PRId64 " tensors, %" PRIu64 " elements, %" PRIu64 " bytes (%s)\n", n,
           elems, total, hb);
    for (uint32_t k = 0; k <= ST_TYPE_COUNT; k++) {
        if (!counts[k])
            continue;
        human_bytes(hb, sizeof hb, bytes[k]);
        printf("  %-7s %8" PRId64 " tensors %16" PRIu64 " bytes (%s, %.1f%%)\n",
               k < ST_TYPE_COUNT ? st_gguf_tensor_type_name(k) : "other", counts[k], bytes[k], hb,
               total ? 100.0 * (double)bytes[k] / (double)total : 0.0);
    }
}

/* --check: the audit of the file against its family. 0 when Strata would load it, 1 not. */
static int check(const st_gguf *g, const char *path)
{
    static const char *const label[] = {"refused", "not read", "unused"};
    char err[1024];
    st_audit a;
    if (st_arch_audit(g, &a, err, sizeof err)) {
        printf("%s: refused: %s\n", path, err);
        return 1;
    }
    int32_t counts[3] = {0, 0, 0};
    for (int32_t i = 0; i < a.n; i++) counts[a.items[i].kind]++;
    printf("%s: %d refused, %d keys not read, %d tensors loaded-unused\n", path, counts[ST_AUDIT_REFUSED],
           counts[ST_AUDIT_NOT_READ], counts[ST_AUDIT_UNUSED]);
    for (int kind = 0; kind < 3; kind++)
        for (int32_t i = 0; i < a.n; i++)
            if ((int)a.items[i].kind == kind)
                printf("  %-9s %-48s %s\n", label[kind], a.items[i].name, a.items[i].why);
    int refused = a.n_refused > 0;
    printf("%s\n", refused ? "verdict: Strata refuses this file" : "verdict: Strata loads this file; everything "
                                                                   "it holds and does not use is listed above");
    st_audit_free(&a);
    return refused;
}

int st_cmd_gguf(int argc, char **argv)
{
    const char *path = NULL;
    int all = 0, do_check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--all")) {
            all = 1;
        } else if (!strcmp(argv[i], "--check")) {
            do_check = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: strata gguf FILE [--all] | strata gguf --check FILE\n"
                   "  Prints the version, metadata (long arrays summarized) and tensor table of\n"
                   "  a GGUF file (all shards of a split model when FILE is one of them).\n"
                   "  --all    list every tensor and print long strings whole\n"
                   "  --check  list what the file holds that Strata would not use: metadata keys\n"
                   "           it does not read, tensors loaded but unused (as in llama.cpp), and\n"
                   "           what makes it refuse the file; exit 1 when it would refuse it\n");
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "strata gguf: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "strata gguf: one FILE only\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: strata gguf FILE [--all]\n");
        return 2;
    }
    char err[1024];
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    if (!g) {
        fprintf(stderr, "strata gguf: %s\n", err);
        return 1;
    }
    if (do_check) {
        int rc = check(g, path);
        st_gguf_close(g);
        return rc;
    }
    printf("GGUF version %u, alignment %u, %u file%s\n", st_gguf_version(g), st_gguf_alignment(g),
           st_gguf_shard_count(g), st_gguf_shard_count(g) == 1 ? "" : "s");
    for (uint32_t s = 0; s < st_gguf_shard_count(g); s++) {
        const st_gguf_shard *sh = st_gguf_shard_at(g, s);
        printf("  %s: %" PRIu64 " bytes, data section at 0x%" PRIx64 "\n", sh->path, sh->size,
               sh->data_offset);
    }
    print_metadata(g, all);
    int64_t n = st_gguf_tensor_count(g);
    printf("\ntensors: %" PRId64 "\n", n);
    printf("  %-44s %-24s %-10s %14s\n", "name", "shape (ne0 first)", "type", "bytes");
    int rc = 0;
    if (all) {
        for (int64_t i = 0; i < n; i++) {
            const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
            char shape[64];
            shape_str(shape, sizeof shape, t, 0);
            print_row(t->name, t, shape, st_gguf_tensor_type_name(t->type), t->nbytes);
        }
    } else {
        rc = print_grouped(g);
    }
    print_totals(g);
    st_gguf_close(g);
    return rc ? 1 : 0;
}
