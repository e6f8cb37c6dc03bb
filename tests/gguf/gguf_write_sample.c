/* SPDX-License-Identifier: Apache-2.0 */
/* Writes a MoE-shaped sample for the `strata gguf` command's tests: 40 layers, each with
 * attention (attn_v mixing F16 and Q8_0 over layers), a router and 8 experts,
 * Q8_0, F16 and F32 tensors (zero data). Usage: PATH. */
#include <stdio.h>
#include <stdlib.h>

#include "gguf/gguf.h"
#include "strata/backend.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gguf_write_sample PATH\n");
        return 2;
    }
    st_gguf_writer *w = st_gguf_writer_new();
    static const char *const toks[] = {"<unk>", "<s>", "</s>", "a", "b", "c", "d", "e", "f"};
    st_gguf_writer_set_str(w, "general.architecture", "qwen3moe");
    st_gguf_writer_set_u32(w, "qwen3moe.block_count", 40);
    st_gguf_writer_set_u32(w, "qwen3moe.expert_count", 8);
    st_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 9);
    int64_t emb[2] = {64, 9}, norm[1] = {64}, q[2] = {64, 64}, router[2] = {64, 8},
            exps[3] = {64, 32, 8};
    st_gguf_writer_add_tensor(w, "token_embd.weight", ST_TYPE_Q8_0, 2, emb);
    char name[64];
    for (int l = 0; l < 40; l++) {
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", l);
        st_gguf_writer_add_tensor(w, name, ST_TYPE_F32, 1, norm);
        snprintf(name, sizeof name, "blk.%d.attn_q.weight", l);
        st_gguf_writer_add_tensor(w, name, ST_TYPE_Q8_0, 2, q);
        snprintf(name, sizeof name, "blk.%d.attn_v.weight", l); /* a per-layer type mix */
        st_gguf_writer_add_tensor(w, name, l % 4 ? ST_TYPE_F16 : ST_TYPE_Q8_0, 2, q);
        snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", l);
        st_gguf_writer_add_tensor(w, name, ST_TYPE_F32, 2, router);
        snprintf(name, sizeof name, "blk.%d.ffn_up_exps.weight", l);
        st_gguf_writer_add_tensor(w, name, ST_TYPE_Q8_0, 3, exps);
    }
    st_gguf_writer_add_tensor(w, "output_norm.weight", ST_TYPE_F32, 1, norm);
    st_gguf_writer_add_tensor(w, "output.weight", ST_TYPE_Q8_0, 2, emb);
    int r = st_gguf_writer_begin(w, argv[1]);
    static const unsigned char zero[4096];
    for (int64_t i = 0; r == 0 && st_gguf_writer_tensor_nbytes(w, i); i++) {
        uint64_t left = st_gguf_writer_tensor_nbytes(w, i);
        while (r == 0 && left) {
            size_t k = left < sizeof zero ? (size_t)left : sizeof zero;
            r = st_gguf_writer_write(w, zero, k);
            left -= k;
        }
    }
    if (r == 0)
        r = st_gguf_writer_finish(w);
    if (r)
        fprintf(stderr, "gguf_write_sample: %s\n", st_gguf_writer_error(w));
    st_gguf_writer_free(w);
    return r ? 1 : 0;
}
