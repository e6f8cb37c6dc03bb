/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the GGUF reader: each input is written to an anonymous in-memory file
 * and opened by path; an input that opens is read completely (every value, array item and
 * tensor byte), so a validation gap shows up as a crash or a sanitizer report.
 * Built with -DSTRATA_FUZZ=ON and clang; ci/fuzz.sh runs it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gguf/gguf.h"

static uint64_t touch(const st_gguf *g)
{
    uint64_t sum = 0;
    for (int64_t i = 0; i < st_gguf_kv_count(g); i++) {
        st_gguf_value v;
        sum += strlen(st_gguf_kv_key(g, i));
        if (st_gguf_kv_get(g, i, &v) != ST_GGUF_OK)
            __builtin_trap(); /* in range: must succeed */
        if (v.type == ST_GGUF_TYPE_STRING && strlen(v.v.str.ptr) > v.v.str.len)
            __builtin_trap();
        if (v.type != ST_GGUF_TYPE_ARRAY)
            continue;
        for (uint64_t j = 0; j < v.v.arr.len; j++) {
            st_gguf_value e;
            if (st_gguf_arr_get(g, i, j, &e) != ST_GGUF_OK)
                break;
            sum += e.type == ST_GGUF_TYPE_STRING ? strlen(e.v.str.ptr) : e.v.u64;
        }
    }
    for (int64_t i = 0; i < st_gguf_tensor_count(g); i++) {
        const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
        const st_gguf_shard *sh = st_gguf_shard_at(g, t->shard);
        if (!sh || t->offset > sh->size || t->nbytes > sh->size - t->offset)
            __builtin_trap();
        if (st_gguf_tensor_find(g, t->name) != t)
            __builtin_trap();
        const uint8_t *p = t->data;
        for (uint64_t k = 0; k < t->nbytes; k++)
            sum += p[k];
    }
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz.gguf", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    char path[64], err[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    st_gguf *g = st_gguf_open(path, err, sizeof err);
    if (g) {
        volatile uint64_t s = touch(g);
        (void)s;
        st_gguf_close(g);
    } else if (err[0] == 0) {
        __builtin_trap(); /* every refusal carries a message */
    }
    close(fd);
    return 0;
}
