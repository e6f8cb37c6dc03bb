#!/usr/bin/env bash
# Expert offload benchmark: a MoE model larger than the VRAM it is allowed, Strata with
# --vram-budget 4GiB and 8GiB (expert cache on the GPU, misses on the CPU) against llama.cpp with
# --n-cpu-moe N (the MoE weights of the FIRST N layers stay in host memory, the rest on the GPU),
# N chosen so that llama.cpp's VRAM use is no more than Strata's. Decode at batch 1 and with 4
# concurrent sequences, in the same run on the same GPU; writes a Markdown report.
#
# Usage: bench/h200_offload.sh MODEL.gguf LLAMA_REF OUT.md
#   MODEL.gguf  e.g. the generated qwen3-30b-a3b Q4_K model of bench/cuda_h200.sh
#   LLAMA_REF   llama-ref built against llama.cpp with CUDA (bench/cuda_llama_build.sh)
#   OUT.md      the report (appended)
# Environment: STRATA (the strata executable; default build/bin/strata next to this script's
#   checkout, else `strata` on PATH), REPS (2), NPROMPT (128), NGEN (64), THREADS (the CPU
#   threads of both sides; default: the number of cores), BUDGETS ("4GiB 8GiB"), BACKEND (cuda).
#
# llama.cpp's VRAM for a given N is estimated from Strata's plan of the same model, context and
# sequences: non-expert weights + the experts of the (MoE layers - N) layers it keeps on the GPU
# + the same KV and work buffers as Strata's; N is the smallest whose estimate is <= what Strata
# allocates. When nvidia-smi is present, the peak memory of each run is measured as well and the
# report says whether llama.cpp's peak stayed at or below Strata's.
set -euo pipefail

if [ $# -ne 3 ]; then
  sed -n '2,22p' "$0" >&2
  exit 2
fi
model=$1 ref=$2 out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
strata=${STRATA:-$here/build/bin/strata}
if [ ! -x "$strata" ]; then strata=$(command -v strata || true); fi
[ -x "$strata" ] || { echo "h200_offload: no strata executable (set STRATA=path/to/strata)" >&2; exit 2; }
[ -s "$model" ] || { echo "h200_offload: no model at $model" >&2; exit 2; }
[ -x "$ref" ] || { echo "h200_offload: llama-ref is not executable: $ref" >&2; exit 2; }
reps=${REPS:-2}
np=${NPROMPT:-128}
ng=${NGEN:-64}
threads=${THREADS:-$(nproc)}
budgets=${BUDGETS:-"4GiB 8GiB"}
backend=${BACKEND:-cuda} # Strata's module (sim for a dry run of this script)

say() { echo "+ $*" >&2; }
# JSON value of a unique key (numbers and strings; the objects are flat enough for this)
j() { echo "$1" | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$2\": *//p" | head -1 | tr -d '"'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "") printf "%.2f", a / b; else printf "-" }'; }
mib() { awk -v b="$1" 'BEGIN { if (b != "") printf "%.0f", b / 1048576; else printf "-" }'; }

# Runs a command (its stderr to /dev/null when the first argument is "quiet", else shown), echoing
# it, while sampling the GPU's used memory; prints the command's stdout and leaves the peak (MiB,
# or "-") in the file $peakf (a command substitution cannot set the caller's variables).
peakf=$(mktemp)
trap 'rm -f "$peakf"' EXIT
run_measured() {
  local quiet=0
  if [ "$1" = quiet ]; then quiet=1; shift; fi
  say "$@"
  local log smi="" spid="" rc=0
  log=$(mktemp)
  if command -v nvidia-smi >/dev/null 2>&1; then
    smi=$(mktemp)
    ( while :; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 >>"$smi"; sleep 0.2; done ) &
    spid=$!
  fi
  if [ $quiet = 1 ]; then "$@" >"$log" 2>/dev/null || rc=$?; else "$@" >"$log" || rc=$?; fi
  echo - >"$peakf"
  if [ -n "$spid" ]; then
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    local p
    p=$(sort -n "$smi" | tail -1)
    echo "${p:--}" >"$peakf"
    rm -f "$smi"
  fi
  cat "$log"
  rm -f "$log"
  if [ $rc != 0 ]; then echo "h200_offload: the command above failed (exit $rc)" >&2; fi
  return $rc
}

idle=-
if command -v nvidia-smi >/dev/null 2>&1; then
  idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | head -1)
  say "GPU memory used before the runs: $idle MiB"
fi

{
  echo "## Expert offload: $(basename "$model") ($(du -h "$model" | cut -f1)), $(date -u +%Y-%m-%d)"
  echo
  echo "Strata: \`--vram-budget B\` (the plan fills what is left with expert slots; misses on the CPU module),"
  echo "llama.cpp: \`--ngl 99 --ncmoe N\` (experts of the first N layers in host memory), N from Strata's plan."
  echo "Prompt $np tokens, $ng decoded, best of $reps; $threads CPU threads each. GPU memory in MiB (peak of"
  echo "nvidia-smi during the run, the idle $idle MiB included; '-' when not measured)."
  echo
  echo "| budget | sequences | Strata decode tok/s | llama.cpp decode tok/s | ratio | prefill tok/s Strata / llama.cpp | N | Strata VRAM planned / peak | llama.cpp VRAM estimated / peak | hit rate: run (Belady) / decode | CPU ms per decoded token |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} >>"$out"

raw=""
for b in $budgets; do
  for par in 1 4; do
    sj=$(run_measured "$strata" bench -m "$model" --backend "$backend" -p "$np" -n "$ng" -r "$reps" --parallel "$par" \
           --vram-budget "$b" --cpu-threads "$threads" --json)
    speak=$(cat "$peakf")
    alloc=$(j "$sj" allocated)
    nonexp=$(j "$sj" nonexpert_weight_bytes)
    other=$(j "$sj" other_buffer_bytes)
    layers=$(j "$sj" moe_layers)
    per=$(j "$sj" expert_bytes_per_layer)
    if [ -z "$alloc" ] || [ -z "$per" ] || [ "$per" = 0 ]; then
      echo "h200_offload: Strata's bench printed no plan (is the model MoE, is the CUDA module there?)" >&2
      echo "$sj" >&2
      exit 1
    fi
    # smallest N with nonexp + (layers - N) * per + other <= alloc
    n=$(awk -v a="$alloc" -v w="$nonexp" -v o="$other" -v L="$layers" -v p="$per" 'BEGIN {
          need = w + L * p + o - a; n = need > 0 ? int((need + p - 1) / p) : 0;
          if (n > L) n = L; printf "%d", n }')
    est=$(awk -v w="$nonexp" -v o="$other" -v L="$layers" -v p="$per" -v n="$n" 'BEGIN { printf "%.0f", w + (L - n) * p + o }')
    lj=$(run_measured quiet "$ref" bench -m "$model" --ngl 99 --ncmoe "$n" -p "$np" -n "$ng" -r "$reps" -t "$threads" \
           --kv f16 --flash --parallel "$par")
    lpeak=$(cat "$peakf")
    sd=$(j "$sj" decode_tok_s)
    ld=$(j "$lj" decode_tok_s)
    # the decode part of Strata's expert statistics
    dec=$(echo "$sj" | sed -n 's/.*"experts_decode":{\([^}]*\)}.*/\1/p')
    hrd=$(j "{$dec}" hit_rate)
    hr=$(j "$sj" hit_rate) # the first one: the whole measured run, the trace Belady saw
    cpu=$(j "{$dec}" cpu_ms_per_token)
    bel=$(j "$sj" belady_hit_rate)
    note=""
    if [ "$speak" != - ] && [ "$lpeak" != - ] && [ "$lpeak" -gt "$speak" ]; then note=" (llama.cpp above Strata)"; fi
    echo "| $b | $par | $sd | $ld | $(ratio "$sd" "$ld") | $(j "$sj" prefill_tok_s) / $(j "$lj" prefill_tok_s) | $n | $(mib "$alloc") / $speak | $(mib "$est") / $lpeak$note | ${hr:--} (${bel:--}) / ${hrd:--} | ${cpu:--} |" >>"$out"
    raw="$raw"$'\n'"- Strata $b x$par: \`$sj\`"$'\n'"- llama.cpp --ncmoe $n x$par: \`$lj\`"
  done
done
{
  echo
  echo "Target (issue 6): Strata at least 1.3x llama.cpp at batch 1 under both budgets."
  echo
  echo "Raw results:"
  echo "$raw"
  echo
} >>"$out"
say "report appended to $out"
