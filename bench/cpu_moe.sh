#!/usr/bin/env bash
# The CPU suite of the CPU-path issue: a generated qwen3moe (bench-moe-1.5g: 24 layers, embd
# 1024, 64 experts with 8 used, expert ff 512, qwen2 vocabulary) with the balanced router, in
# Q4_0, Q4_K_M (made by llama.cpp's llama-quantize from the Q8_0 file) and Q8_0, each measured by
# bench/cpu_vs_llama.sh against llama.cpp's llama-bench in the same run: prefill 128 and 512,
# decode at depth 0 and 2048, random decode tokens, the same thread count on both sides.
# Writes one Markdown file with a table (and ratios) per format.
# Usage: bench/cpu_moe.sh LLAMA_BIN_DIR THREADS [OUT.md]
#   LLAMA_BIN_DIR holds llama-bench and llama-quantize (bench/llama_bench_build.sh SRC OUT cpu)
# Environment: STRATA (build/bin/strata), MODELS (~/.cache/strata/models), VOCAB (the qwen2
#   vocabulary GGUF; found under ~/.cache/strata/llama-ref), FORMATS ("Q4_0 Q4_K_M Q8_0"),
#   PRESET (bench-moe-1.5g), and REPS, PROMPTS, DEPTHS, NGEN as bench/cpu_vs_llama.sh takes them.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
lbin=$1 threads=$2
root=$(cd "$(dirname "$0")/.." && pwd)
strata=${STRATA:-$root/build/bin/strata}
models=${MODELS:-$HOME/.cache/strata/models}
formats=${FORMATS:-"Q4_0 Q4_K_M Q8_0"}
preset=${PRESET:-bench-moe-1.5g}
out=${3:-$root/bench/results/$(date -u +%Y-%m-%d)-cpu-moe-${threads}t.md}
vocab=${VOCAB:-$(find -L "$HOME/.cache/strata/llama-ref" -name ggml-vocab-qwen2.gguf 2>/dev/null | head -1)}
[ -x "$strata" ] || { echo "cpu_moe: $strata is not built" >&2; exit 1; }
[ -x "$lbin/llama-bench" ] || { echo "cpu_moe: no llama-bench in $lbin" >&2; exit 1; }
[ -f "$vocab" ] || { echo "cpu_moe: the qwen2 vocabulary GGUF was not found (set VOCAB)" >&2; exit 1; }
mkdir -p "$models" "$(dirname "$out")"

# The model file of one format, generated when missing.
model_of() {
  local f=$1 lower m
  lower=$(echo "$f" | tr 'A-Z' 'a-z')
  m=$models/$preset-balanced-$lower.gguf
  if [ ! -f "$m" ]; then
    case $f in
      Q4_K_M|Q5_K_M)
        local src
        src=$(model_of Q8_0)
        env LD_LIBRARY_PATH="$lbin" "$lbin/llama-quantize" --allow-requantize "$src" "$m" "$f" "$threads" \
          >"$m.log" 2>&1 || { echo "cpu_moe: llama-quantize $f failed (see $m.log)" >&2; rm -f "$m"; return 1; } ;;
      *)
        "$strata" gen-model --preset "$preset" --router balanced --type "$f" --vocab-from "$vocab" --out "$m" \
          >&2 || { rm -f "$m"; return 1; } ;;
    esac
  fi
  echo "$m"
}

{
  echo "# CPU MoE suite: Strata vs llama.cpp, $threads threads ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "- command: \`bench/cpu_moe.sh $lbin $threads\` (formats: $formats; preset $preset, balanced router)"
  echo "- host: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB;" \
       "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
} >"$out"
for f in $formats; do
  m=$(model_of "$f") || { echo "## $f: no model" >>"$out"; continue; }
  echo "## $f" >>"$out"
  THREADS=$threads STRATA=$strata bash "$root/bench/cpu_vs_llama.sh" "$m" "$lbin" "$out" >/dev/null ||
    echo "(the $f run failed)" >>"$out"
done
cat "$out"
