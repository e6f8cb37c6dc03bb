#!/usr/bin/env bash
# The latent KV cache against an expanded K/V computation: a generated deepseek2 model in the
# latent layout runs in Strata (one [kv_lora + rope] row cached per token); the same weights
# rewritten by mla-expand in the expanded layout (attn_kv_b, full per-head K and V) run in
# llama.cpp as plain multi-head attention. Logits at every position and 64 greedy tokens.
# Usage: mla_vs_expanded.sh STRATA LLAMA_REF CMP MLA_EXPAND VOCAB_GGUF WORKDIR LIMIT [gen-model args...]
set -euo pipefail
strata=$1 ref=$2 cmp=$3 expand=$4 vocab=$5 work=$6 limit=$7
shift 7
mkdir -p "$work"
m="$work/latent.gguf" e="$work/expanded.gguf"
"$strata" gen-model --arch deepseek2 --preset tiny --type F32 --vocab-from "$vocab" --seed 7 --out "$m" "$@" >/dev/null
"$expand" "$m" "$e"
prompt=$(seq -s, 100 131)
gen=$("$ref" generate -m "$e" --tokens "$prompt" -n 64 -t 1 2>/dev/null | tr ' ' ',')
all="$prompt,$(echo "$gen" | cut -d, -f1-63)"
"$strata" logits -m "$m" --tokens "$all" --all --out "$work/s.f32" --threads 1 --kv-type f32 >/dev/null
"$ref" logits -m "$e" --tokens "$all" --all --out "$work/l.f32" -t 1 2>/dev/null
echo "deepseek2 latent (Strata) vs expanded K/V (llama.cpp):"
"$cmp" "$work/s.f32" "$work/l.f32" 32000 "$limit" --greedy 31 "$gen"
