/* SPDX-License-Identifier: Apache-2.0 */
/* strata gen-model --out F.gguf [--arch A] [--preset P] [shape options]: writes a GGUF model
 * with random weights (core/model/gen.h), streamed to disk tensor by tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "model/gen.h"
#include "quant/quant.h"

static void help(FILE *f) {
    fprintf(f,
            "usage: strata gen-model --out F.gguf [--arch A] [--preset P] [options]\n"
            "  --arch A              llama, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, deepseek2,\n"
            "                        glm4moe, gpt-oss (default llama)\n"
            "  --preset P            %s (default demo: a few MB)\n"
            "  --layers N --embd N --ff N --heads N --kv-heads N --head-dim N\n"
            "  --experts N --experts-used N --expert-ff N --shared-expert-ff N\n"
            "  --vocab-from V.gguf   copy the tokenizer (every tokenizer.* key) of V.gguf;\n"
            "                        default: a built-in small byte-level vocabulary\n"
            "  --vocab-size N        pad the built-in vocabulary to N tokens (output matrix size)\n"
            "  --type T              weight type of the matrices (F32, F16, Q8_0, Q4_K, ...); rows\n"
            "                        that do not fit T's blocks fall back to Q8_0 or F16\n"
            "  --seed S              random seed (default 1)\n"
            "  --router MODE         balanced: token-dependent routing spread over every expert, as a\n"
            "                        trained router's (the model to judge expert offload on);\n"
            "                        skewed: --router-skew 1 unless given (a few experts dominate and\n"
            "                        the choice barely changes between tokens: a cache looks perfect)\n"
            "  --router-skew X       plain router rows scaled by rank^(-X/2); 0 = equal rows\n"
            "  --ctx-train N         <arch>.context_length written (default 4096)\n"
            "  --rope-base X         rope.freq_base (default 10000; qwen3-30b-a3b 1e6)\n"
            "  --rope-scaling T      none, linear or yarn, with --rope-factor X and\n"
            "                        --rope-orig-ctx N (original training context)\n"
            "  deepseek2: --q-lora N (0: one attn_q matrix) --dense-lead N --gating softmax|sigmoid\n"
            "                        (sigmoid adds the exp_probs_b selection bias, renormalizes and\n"
            "                        scales by 2.5; softmax does neither) --merged-gate-up\n"
            "                        --expert-groups N --groups-used M (group-limited routing)\n"
            "  glm4moe: --nextn N (NextN layers after the trunk, default 1) --no-qk-norm\n"
            "  gpt-oss: --swa N (sliding window, default 8) --expert-type T (e.g. MXFP4)\n"
            "  --saver-extras        also write what llama.cpp's model saver writes for every family:\n"
            "                        Q/K/V biases, every weight's .scale and .input_scale, and keys\n"
            "                        at values the family ignores or holds neutral\n",
            st_gen_preset_names());
}

int st_cmd_gen_model(int argc, char **argv) {
    const char *out = NULL, *arch = NULL, *preset = "demo";
    /* first pass: the preset and arch decide the defaults the other options override */
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if ((r = st_cli_opt(argc, argv, &i, "--preset", NULL, &v)) > 0) preset = v;
        else if ((r = st_cli_opt(argc, argv, &i, "--arch", NULL, &v)) > 0) arch = v;
        if (r < 0) return 2;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            return 0;
        }
    }
    st_gen_params p;
    if (arch && st_arch_from_name(arch) < 0) {
        fprintf(stderr, "strata gen-model: unsupported architecture '%s' (llama, qwen2, qwen3, qwen2moe, "
                        "qwen3moe, olmoe)\n", arch);
        return 2;
    }
    if (st_gen_preset(preset, arch, &p)) {
        fprintf(stderr, "strata gen-model: unknown preset '%s' (%s)\n", preset, st_gen_preset_names());
        return 2;
    }
    if (arch && st_arch_from_name(arch) != (int)p.hp.arch) {
        fprintf(stderr, "strata gen-model: preset '%s' is a %s model; --arch %s does not apply\n", preset,
                st_arch_name(p.hp.arch), arch);
        return 2;
    }
    int head_dim_given = 0, shape_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        long n;
        double x;
        int r;
        if ((r = st_cli_opt(argc, argv, &i, "--preset", NULL, &v)) || (r = st_cli_opt(argc, argv, &i, "--arch", NULL, &v))) {
            if (r < 0) return 2;
            continue;
        }
#define IOPT(name, lo, hi, field)                                                                   \
    if ((r = st_cli_opt(argc, argv, &i, name, NULL, &v))) {                                         \
        if (r < 0 || st_cli_int("gen-model", name, v, lo, hi, &n)) return 2;                        \
        field = (int32_t)n;                                                                         \
        continue;                                                                                   \
    }
        IOPT("--layers", 1, 4096, p.hp.n_layer)
        if (!strcmp(argv[i], "--embd") || !strncmp(argv[i], "--embd=", 7) || !strcmp(argv[i], "--heads") ||
            !strncmp(argv[i], "--heads=", 8))
            shape_given = 1;
        IOPT("--embd", 2, 1 << 20, p.hp.n_embd)
        IOPT("--ff", 0, 1 << 22, p.hp.n_ff)
        IOPT("--heads", 1, 4096, p.hp.n_head)
        IOPT("--kv-heads", 1, 4096, p.hp.n_head_kv)
        IOPT("--experts", 0, 1 << 16, p.hp.n_expert)
        IOPT("--experts-used", 0, 1 << 16, p.hp.n_expert_used)
        IOPT("--expert-ff", 0, 1 << 22, p.hp.n_ff_exp)
        IOPT("--shared-expert-ff", 0, 1 << 22, p.hp.n_ff_shexp)
        IOPT("--ctx-train", 1, 1 << 24, p.hp.n_ctx_train)
        IOPT("--vocab-size", 0, 1 << 24, p.vocab_size)
        IOPT("--q-lora", 0, 1 << 16, p.hp.n_lora_q)
        IOPT("--dense-lead", 0, 4096, p.hp.n_dense_lead)
        IOPT("--nextn", 0, 16, p.hp.n_nextn)
        IOPT("--expert-groups", 0, 1 << 16, p.hp.n_expert_groups)
        IOPT("--groups-used", 0, 1 << 16, p.hp.n_group_used)
        IOPT("--swa", 1, 1 << 20, p.hp.n_swa)
#undef IOPT
        if ((r = st_cli_opt(argc, argv, &i, "--head-dim", NULL, &v))) {
            if (r < 0 || st_cli_int("gen-model", "--head-dim", v, 2, 1 << 16, &n)) return 2;
            p.hp.head_dim = (int32_t)n;
            head_dim_given = 1;
        } else if ((r = st_cli_opt(argc, argv, &i, "--out", "-o", &v))) {
            if (r < 0) return 2;
            out = v;
        } else if ((r = st_cli_opt(argc, argv, &i, "--vocab-from", NULL, &v))) {
            if (r < 0) return 2;
            p.vocab_from = v;
        } else if ((r = st_cli_opt(argc, argv, &i, "--type", NULL, &v))) {
            int t = r < 0 ? -1 : st_type_from_name(v);
            if (t < 0 || !st_type_get((uint32_t)t) || st_type_get((uint32_t)t)->block_size <= 0) {
                fprintf(stderr, "strata gen-model: unknown --type '%s'\n", v);
                return 2;
            }
            p.wtype = (uint32_t)t;
        } else if ((r = st_cli_opt(argc, argv, &i, "--seed", NULL, &v))) {
            char *end;
            if (r < 0) return 2;
            p.seed = strtoull(v, &end, 10);
            if (end == v || *end) {
                fprintf(stderr, "strata gen-model: bad --seed '%s'\n", v);
                return 2;
            }
        } else if ((r = st_cli_opt(argc, argv, &i, "--rope-scaling", NULL, &v))) {
            if (r < 0) return 2;
            if (!strcmp(v, "yarn")) p.hp.rope_scaling = ST_ROPE_SCALING_YARN;
            else if (!strcmp(v, "linear")) p.hp.rope_scaling = ST_ROPE_SCALING_LINEAR;
            else if (!strcmp(v, "none")) p.hp.rope_scaling = ST_ROPE_SCALING_NONE;
            else {
                fprintf(stderr, "strata gen-model: --rope-scaling must be none, linear or yarn\n");
                return 2;
            }
        } else if ((r = st_cli_opt(argc, argv, &i, "--rope-factor", NULL, &v))) {
            if (r < 0 || st_cli_float("gen-model", "--rope-factor", v, &x) || x <= 0) return 2;
            p.hp.rope_freq_scale = (float)(1.0 / x);
        } else if ((r = st_cli_opt(argc, argv, &i, "--rope-orig-ctx", NULL, &v))) {
            if (r < 0 || st_cli_int("gen-model", "--rope-orig-ctx", v, 1, 1 << 24, &n)) return 2;
            p.hp.n_ctx_orig = (int32_t)n;
        } else if ((r = st_cli_opt(argc, argv, &i, "--rope-base", NULL, &v))) {
            if (r < 0 || st_cli_float("gen-model", "--rope-base", v, &x) || x <= 0) return 2;
            p.hp.rope_freq_base = (float)x;
        } else if ((r = st_cli_opt(argc, argv, &i, "--expert-type", NULL, &v))) {
            int t = r < 0 ? -1 : st_type_from_name(v);
            if (t < 0 || !st_type_get((uint32_t)t) || st_type_get((uint32_t)t)->block_size <= 0) {
                fprintf(stderr, "strata gen-model: unknown --expert-type '%s'\n", v);
                return 2;
            }
            p.expert_type = (uint32_t)t;
        } else if (!strcmp(argv[i], "--no-qk-norm")) {
            p.hp.qk_norm = ST_QK_NORM_NONE;
        } else if (!strcmp(argv[i], "--merged-gate-up")) {
            p.merged_gate_up = 1;
        } else if ((r = st_cli_opt(argc, argv, &i, "--gating", NULL, &v))) {
            if (r < 0 || (strcmp(v, "softmax") && strcmp(v, "sigmoid"))) {
                fprintf(stderr, "strata gen-model: --gating must be softmax or sigmoid\n");
                return 2;
            }
            const int sig = !strcmp(v, "sigmoid");
            p.hp.expert_gating = sig ? ST_ROUTER_SIGMOID : ST_ROUTER_SOFTMAX;
            p.hp.expert_weights_norm = sig;
            p.hp.expert_weights_scale = sig ? 2.5f : 1.0f;
        } else if (!strcmp(argv[i], "--saver-extras")) {
            p.saver_extras = 1;
        } else if ((r = st_cli_opt(argc, argv, &i, "--router-skew", NULL, &v))) {
            if (r < 0 || st_cli_float("gen-model", "--router-skew", v, &x)) return 2;
            p.router_skew = (float)x;
            p.router = ST_GEN_ROUTER_PLAIN;
        } else if ((r = st_cli_opt(argc, argv, &i, "--router", NULL, &v))) {
            if (r < 0 || (strcmp(v, "balanced") && strcmp(v, "skewed"))) {
                fprintf(stderr, "strata gen-model: bad value '%s' for --router (balanced or skewed)\n", r < 0 ? "" : v);
                return 2;
            }
            p.router = strcmp(v, "balanced") ? ST_GEN_ROUTER_PLAIN : ST_GEN_ROUTER_BALANCED;
            if (p.router == ST_GEN_ROUTER_PLAIN && p.router_skew == 0) p.router_skew = 1.0f;
        } else {
            fprintf(stderr, "strata gen-model: unknown option '%s'\n", argv[i]);
            help(stderr);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "strata gen-model: no --out file given\n");
        help(stderr);
        return 2;
    }
    if (p.hp.arch == ST_ARCH_DEEPSEEK2) {
        p.hp.head_dim = p.hp.n_rot; /* the head sizes are the preset's MLA sizes */
    } else {
        if (shape_given && !head_dim_given && p.hp.n_head > 0)
            p.hp.head_dim = p.hp.n_embd / p.hp.n_head; /* follow --embd/--heads */
        /* glm4moe rotates half of each head (partial rope) */
        p.hp.n_rot = p.hp.arch == ST_ARCH_GLM4MOE ? p.hp.head_dim / 2 : p.hp.head_dim;
    }
    if (p.hp.n_head_kv > p.hp.n_head) p.hp.n_head_kv = p.hp.n_head;
    p.progress = 1;
    char err[1024];
    if (st_gen_model(&p, out, err, sizeof err)) {
        fprintf(stderr, "strata gen-model: %s\n", err);
        return 1;
    }
    /* read it back: the file must describe itself */
    st_gguf *g = st_gguf_open(out, err, sizeof err);
    st_model_desc *d = g ? st_arch_describe(g, err, sizeof err) : NULL;
    if (!d) {
        fprintf(stderr, "strata gen-model: the written file does not load back: %s\n", err);
        st_gguf_close(g);
        return 1;
    }
    char sum[512];
    st_model_desc_summary(d, sum, sizeof sum);
    printf("wrote %s: %s, %s weights\n", out, sum, st_type_name(p.wtype));
    st_model_desc_free(d);
    st_gguf_close(g);
    return 0;
}
