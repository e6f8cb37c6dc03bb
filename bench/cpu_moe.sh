#!/usr/bin/env bash
# CPU benchmark of the model issue: a generated qwen3moe of about 1.5 GB at Q4_K (24 layers,
# embd 1024, 64 experts, 8 used, expert ff 512, qwen2 vocabulary), decode at batch 1 and a
# 512-token prefill, Strata against llama.cpp's library (its best CPU variant, same threads)
# in the same run. Writes a Markdown report to bench/results/.
# Usage: bench/cpu_moe.sh [BUILD_DIR] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
threads=${2:-$(nproc)}
strata=$build/bin/strata
ref=$build/bin/llama-ref
[ -x "$ref" ] || { echo "bench: $ref missing: run ci/fetch-llama-ref.sh, then re-run cmake" >&2; exit 1; }
cache=${STRATA_CACHE:-$HOME/.cache/strata}
vocab=$(find -L "$cache/llama-ref" -name ggml-vocab-qwen2.gguf | head -1)
model=$cache/models/bench-moe-1.5g-q4_k.gguf
mkdir -p "$cache/models" bench/results
[ -f "$model" ] || "$strata" gen-model --preset bench-moe-1.5g --type Q4_K --vocab-from "$vocab" --router-skew 1 --out "$model"
reps=${REPS:-3}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== Strata" >&2
s_json=$("$strata" bench -m "$model" -p 512 -n 128 -r "$reps" --threads "$threads" --json)
echo "$s_json" >&2
echo "== llama.cpp" >&2
l_json=$("$ref" bench -m "$model" -p 512 -n 128 -r "$reps" -t "$threads" --kv f16)
echo "$l_json" >&2
get() { echo "$1" | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$2\": *//p" | head -1; }
# best of the repetitions on both sides (llama-ref reports its best)
s_pp=$(get "$s_json" prefill_tok_s_best); s_tg=$(get "$s_json" decode_tok_s_best)
l_pp=$(get "$l_json" prefill_tok_s); l_tg=$(get "$l_json" decode_tok_s)
bpt=$(get "$s_json" total); bw=$(get "$s_json" decode_gb_s)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
out=bench/results/$(date -u +%Y-%m-%d)-cpu-moe-q4k.md
{
  echo "# CPU decode and prefill: generated qwen3moe ~1.5 GB Q4_K"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "- commit: $(git rev-parse --short HEAD)"
  echo "- threads: $threads (both engines), repetitions: $reps (best of)"
  echo "- command: \`bench/cpu_moe.sh $build $threads\`"
  echo
  echo "| engine | prefill 512 tok/s | decode tok/s |"
  echo "|---|---|---|"
  echo "| Strata | $s_pp | $s_tg |"
  echo "| llama.cpp (npm @node-llama-cpp/linux-x64@3.21.1, best CPU variant) | $l_pp | $l_tg |"
  echo "| ratio Strata / llama.cpp | $(ratio "$s_pp" "$l_pp") | $(ratio "$s_tg" "$l_tg") |"
  echo
  echo "Strata's accounting: $bpt bytes of weights and KV read per decoded token (non-expert weights,"
  echo "the 8 routed experts of every layer, and the KV cache), $bw GB/s achieved in decode."
  echo "Load average when the run started: $load0 (other work on the machine slows both engines;"
  echo "llama.cpp's spinning thread pool suffers more from it than Strata's task-claiming pool)."
  echo
  echo "Raw: \`$s_json\`"
  echo
  echo "Raw: \`$l_json\`"
} > "$out"
cat "$out"
