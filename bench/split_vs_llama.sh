#!/usr/bin/env bash
# The layer split CUDA + CPU against llama.cpp's llama-bench -ngl N, same GPU, same run, at equal
# MEASURED VRAM. For each model (a dense one and a MoE one, both larger than the VRAM allowed) and
# each budget B:
#   Strata  bench --backend cuda -ngl N --vram-budget B: the largest N whose plan fits B (the first
#           L-N layers on the CPU module, read in place; the last N and the output on the GPU);
#   llama-bench -ngl M: the largest M whose measured peak VRAM (nvidia-smi, sampled every 0.1 s)
#           is at most Strata's measured peak.
# Same prefill/decode lengths and threads on both sides, random decode tokens (llama-bench's way).
# Writes a Markdown report with the ratios (decode and prefill; the target is >= 1.0x).
# Usage: bench/split_vs_llama.sh DENSE.gguf MOE.gguf LLAMA_BIN_DIR OUT.md
# Environment: STRATA (default build/bin/strata), BUDGETS_DENSE ("3GiB"), BUDGETS_MOE ("8GiB"),
#   THREADS (cores), REPS (2), NPROMPT (512), NGEN (128)
set -euo pipefail
[ $# -eq 4 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
dense=$1 moe=$2 lbin=$3 out=$4
here=$(cd "$(dirname "$0")/.." && pwd)
strata=${STRATA:-$here/build/bin/strata}
threads=${THREADS:-$(nproc)} reps=${REPS:-2}
np=${NPROMPT:-512} ng=${NGEN:-128}
BENCH_NAME=split_vs_llama
# shellcheck source=bench/vram_measure.sh
. "$here/bench/vram_measure.sh"
layers() { "$strata" gguf "$1" 2>/dev/null | sed -n 's/^ *[a-z0-9_-]*\.block_count *u32 *\([0-9]*\).*/\1/p' | head -1; }
sbench() { measured "$strata" bench -m "$1" --backend cuda -ngl "$2" --vram-budget "$3" -p "$np" -n "$ng" -r "$reps" \
             --threads "$threads" --json; }
lbench() { measured env LD_LIBRARY_PATH="$lbin" "$lbin/llama-bench" -m "$1" -ngl "$2" -fa 1 -p "$np" -n "$ng" -r "$reps" \
             -t "$threads" -o json; }
idle=$(smi)
{
  echo "# Layer split CUDA + CPU vs llama.cpp llama-bench -ngl ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); idle memory used ${idle} MiB"
  echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), threads $threads on both sides"
  echo "- commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null); prefill $np tokens, decode $ng random tokens, $reps repetitions"
  echo "- Strata: \`strata bench --backend cuda -ngl N --vram-budget B\`, N the largest that fits B;"
  echo "  llama.cpp: \`llama-bench -ngl M -fa 1\`, M the largest whose measured peak VRAM is at most Strata's"
  echo
  echo "| model | budget | Strata -ngl | Strata peak MiB | llama -ngl | llama peak MiB | prefill Strata | prefill llama | prefill ratio | decode Strata | decode llama | decode ratio |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} >>"$out"
for model in "$dense" "$moe"; do
  budgets=${BUDGETS_DENSE:-3GiB}
  [ "$model" = "$moe" ] && budgets=${BUDGETS_MOE:-8GiB}
  L=$(layers "$model")
  [ -n "$L" ] || { echo "split_vs_llama: no block_count in $model" >&2; continue; }
  for b in $budgets; do
    n=$((L - 1)) speak="" # below L: the CPU takes layers (at L the single-device path would offload experts instead)
    while [ "$n" -ge 0 ]; do
      if sbench "$model" "$n" "$b"; then speak=$(cat "$T/peak"); cp "$T/out" "$T/s.json"; break; fi
      n=$((n - 1))
    done
    [ -n "$speak" ] || { echo "split_vs_llama: $model does not fit $b at any -ngl" >&2; tail -5 "$T/err" >&2; continue; }
    grep -E 'layer split over|^  (cpu|cuda)' "$T/err" | head -4 || true
    m=$n lpeak=""
    while [ "$m" -ge 0 ]; do
      lbench "$model" "$m" || { m=$((m - 1)); continue; }
      lpeak=$(cat "$T/peak")
      [ "$lpeak" -le "$speak" ] && { cp "$T/out" "$T/l.json"; break; }
      m=$((m - 1))
    done
    [ -s "$T/l.json" ] || { echo "split_vs_llama: llama-bench found no -ngl within ${speak} MiB" >&2; continue; }
    py '
import json,sys
s=json.load(open(sys.argv[1])); l=json.load(open(sys.argv[2]))
lp=[x["avg_ts"] for x in l if x["n_prompt"]>0][0]; lg=[x["avg_ts"] for x in l if x["n_gen"]>0][0]
name,b,n,sp,m,lpk=sys.argv[3:9]
print("| %s | %s | %s | %s | %s | %s | %.1f | %.1f | %.2fx | %.2f | %.2f | %.2fx |" % (name,b,n,sp,m,lpk,
      s["prefill_tok_s"],lp,s["prefill_tok_s"]/lp,s["decode_tok_s"],lg,s["decode_tok_s"]/lg))
' "$T/s.json" "$T/l.json" "$(basename "$model")" "$b" "$n" "$speak" "$m" "$lpeak" >>"$out"
    rm -f "$T/l.json"
    tail -n 1 "$out"
  done
done
echo "split_vs_llama: wrote $out"
