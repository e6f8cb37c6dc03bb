#!/usr/bin/env bash
# One model-vs-llama.cpp case: generate a model of ARCH with TYPE weights, run a 32-token
# prompt through Strata and llama.cpp (F32 KV cache, flash attention off, one thread), compare
# the logits at every position, and check Strata reproduces llama.cpp's 64 greedy tokens.
# Usage: compare.sh STRATA LLAMA_REF CMP VOCAB_GGUF WORKDIR ARCH TYPE LIMIT [gen-model args...]
set -euo pipefail
strata=$1 ref=$2 cmp=$3 vocab=$4 work=$5 arch=$6 type=$7 limit=$8
shift 8
mkdir -p "$work"
m="$work/$arch-$type.gguf"
"$strata" gen-model --arch "$arch" --preset tiny --type "$type" --vocab-from "$vocab" --seed 7 --out "$m" "$@" >/dev/null
n_vocab=$("$strata" gguf "$m" | sed -n 's/.*tokenizer.ggml.tokens *\[string x \([0-9]*\)\].*/\1/p' | head -1)
[ -n "$n_vocab" ] || n_vocab=32000
prompt=$(seq -s, 100 131)
gen=$("$ref" generate -m "$m" --tokens "$prompt" -n 64 -t 1 2>/dev/null | tr ' ' ',')
all="$prompt,$(echo "$gen" | cut -d, -f1-63)"
"$strata" logits -m "$m" --tokens "$all" --all --out "$work/s.f32" --threads 1 --kv-type f32 >/dev/null
"$ref" logits -m "$m" --tokens "$all" --all --out "$work/l.f32" -t 1 2>/dev/null
echo "$arch $type:"
"$cmp" "$work/s.f32" "$work/l.f32" "$n_vocab" "$limit" --greedy 31 "$gen"
