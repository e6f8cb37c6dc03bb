#!/usr/bin/env bash
# GPU benchmark of the CUDA issue: a generated qwen3-30b-a3b-shaped model (48 layers, embd
# 2048, 128 experts, 8 used, expert ff 768, 32 heads, 4 KV heads, head dim 128, qwen2
# vocabulary), fully resident, Strata against llama.cpp's CUDA build on the same GPU in the
# same run: decode at batch 1 and with 8 sequences, prefill of a 2048-token prompt.
# Usage: bench/cuda_h200.sh STRATA_BUILD LLAMA_REF VOCAB.gguf MODEL_DIR TYPE [OUT.md]
#   LLAMA_REF: llama-ref built against llama.cpp with CUDA (bench/cuda_llama_build.sh)
set -euo pipefail
build=$1 ref=$2 vocab=$3 mdir=$4 type=$5 out=${6:-/dev/stdout}
strata=$build/bin/strata
reps=${REPS:-2}
model=$mdir/qwen3-30b-a3b-$type.gguf
mkdir -p "$mdir"
if [ ! -s "$model" ]; then
  t0=$(date +%s)
  "$strata" gen-model --preset qwen3-30b-a3b --type "$type" --vocab-from "$vocab" --router-skew 1 --out "$model" >&2
  echo "gen-model: $(( $(date +%s) - t0 )) s" >&2
fi
j() { echo "$1" | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$2\": *//p" | head -1; }
s1=$("$strata" bench -m "$model" --backend cuda -p 2048 -n 128 -r "$reps" --json)
# the same prompt as one 2048-token step (-b 2048); llama.cpp's steps stay at its 512
sb=$("$strata" bench -m "$model" --backend cuda -p 2048 -n 16 -r "$reps" -b 2048 --json)
l1=$("$ref" bench -m "$model" --ngl 99 -p 2048 -n 128 -r "$reps" -t 8 --kv f16 --flash 2>/dev/null)
l8=$("$ref" bench -m "$model" --ngl 99 -p 128 -n 64 -r "$reps" -t 8 --kv f16 --flash --parallel 8 2>/dev/null)
s8=""
if "$strata" bench --help 2>&1 | grep -q -- --parallel; then
  s8=$("$strata" bench -m "$model" --backend cuda -p 128 -n 64 -r "$reps" --parallel 8 --json)
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "") printf "%.2f", a / b; else printf "-" }'; }
{
  echo "## $type: $(du -h "$model" | cut -f1) generated model"
  echo
  echo "| measure | Strata | llama.cpp | ratio |"
  echo "|---|---|---|---|"
  echo "| prefill 2048 tok/s (512-token steps) | $(j "$s1" prefill_tok_s) | $(j "$l1" prefill_tok_s) | $(ratio "$(j "$s1" prefill_tok_s)" "$(j "$l1" prefill_tok_s)") |"
  echo "| prefill 2048 tok/s (Strata in one 2048-token step) | $(j "$sb" prefill_tok_s) | $(j "$l1" prefill_tok_s) | $(ratio "$(j "$sb" prefill_tok_s)" "$(j "$l1" prefill_tok_s)") |"
  echo "| decode batch 1 tok/s | $(j "$s1" decode_tok_s) | $(j "$l1" decode_tok_s) | $(ratio "$(j "$s1" decode_tok_s)" "$(j "$l1" decode_tok_s)") |"
  echo "| decode 8 sequences, aggregate tok/s | $( [ -n "$s8" ] && j "$s8" decode_tok_s || echo "not measured") | $(j "$l8" decode_tok_s) | $( [ -n "$s8" ] && ratio "$(j "$s8" decode_tok_s)" "$(j "$l8" decode_tok_s)" || echo -) |"
  echo
  echo "Strata bytes per decoded token: $(j "$s1" total); achieved $(j "$s1" decode_gb_s) GB/s."
  echo
  echo "Raw Strata: \`$s1\`"
  echo
  echo "Raw Strata -b 2048: \`$sb\`"
  [ -n "$s8" ] && echo && echo "Raw Strata x8: \`$s8\`"
  echo
  echo "Raw llama.cpp: \`$l1\`"
  echo
  echo "Raw llama.cpp x8: \`$l8\`"
  echo
} >> "$out"
