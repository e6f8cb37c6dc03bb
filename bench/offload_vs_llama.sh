#!/usr/bin/env bash
# Expert offload against llama.cpp's own llama-bench, same GPU, same run: for each VRAM budget,
#   Strata --vram-budget B (default placement: the cache starts as the static split of the last
#          layers that fit, adapts on evidence of reuse; misses split between uploads and the CPU)
#   Strata --vram-budget B --n-cpu-moe N (the static split, misses still on both pipes; run with
#          --no-routing-trace, so its fully resident layers skip the host as in `strata serve`)
#   llama-bench -ngl 99 -ncmoe N (the static split, misses on the CPU)
# with N the smallest number of CPU layers whose MEASURED peak VRAM (nvidia-smi, sampled every
# 0.1 s) is at most Strata's default run's. Random decode tokens on both sides (llama-bench's
# way; `strata bench --decode-tokens random`), prefill of NPROMPT tokens, and the routing
# statistics of Strata's decode steps. Writes a Markdown report.
# Usage: bench/offload_vs_llama.sh MODEL.gguf LLAMA_BIN_DIR OUT.md
# Environment: STRATA (default build/bin/strata), BACKEND (cuda), BUDGETS ("4GiB 8GiB"), THREADS (cores), REPS (2),
#   NPROMPT (512), NGEN (128), PARALLEL (4; 1 = no batched rows)
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
model=$1 lbin=$2 out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
strata=${STRATA:-$here/build/bin/strata}
budgets=${BUDGETS:-"4GiB 8GiB"} threads=${THREADS:-$(nproc)} reps=${REPS:-2}
np=${NPROMPT:-512} ng=${NGEN:-128} par=${PARALLEL:-4}
BENCH_NAME=offload_vs_llama
# shellcheck source=bench/vram_measure.sh
. "$here/bench/vram_measure.sh"
idle=$(smi)
# parallel_rows B N: aggregate decode of PARALLEL sequences (prompt 128, 64 random tokens each):
# Strata default and --n-cpu-moe N against llama-batched-bench -ncmoe N (its S_TG)
parallel_rows() {
  local b=$1 n=$2 sd=- ss=- lt=-
  sbench1() { measured "$strata" bench -m "$model" --backend "${BACKEND:-cuda}" -p 128 -n 64 -r 1 --parallel "$par" \
               --threads "$threads" --cpu-threads "$threads" --json --vram-budget "$b" "$@"; }
  sbench1 && sd=$(py 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["decode_tok_s"])' "$T/out")
  sbench1 --n-cpu-moe "$n" --no-routing-trace &&
    ss=$(py 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["decode_tok_s"])' "$T/out")
  measured env LD_LIBRARY_PATH="$lbin" "$lbin/llama-batched-bench" -m "$model" -ngl 99 -ncmoe "$n" -fa on \
    -c $((par * 256)) -npp 128 -ntg 64 -npl "$par" -t "$threads" --output-format jsonl &&
    lt=$(grep '^{' "$T/out" | tail -n 1 | py 'import json,sys; print("%.2f" % json.loads(sys.stdin.read())["speed_tg"])')
  {
    echo "Decode of $par sequences (prompt 128, 64 tokens each; aggregate tok/s): Strata default $sd, Strata --n-cpu-moe $n $ss, llama-batched-bench -ncmoe $n $lt$( [ "$lt" != - ] && [ "$ss" != - ] && py 'import sys; print(" (static %.2fx)" % (float(sys.argv[1]) / float(sys.argv[2])))' "$ss" "$lt")."
    echo
  } >>"$out"
  tail -n 2 "$out"
}
sbench() { measured "$strata" bench -m "$model" --backend "${BACKEND:-cuda}" -p "$np" -n "$ng" -r "$reps" --threads "$threads" \
             --cpu-threads "$threads" --decode-tokens random --json "$@"; }
lbench() { measured env LD_LIBRARY_PATH="$lbin" "$lbin/llama-bench" -m "$model" -ngl 99 -ncmoe "$1" -fa 1 -p "$np" -n "$ng" \
             -r "$reps" -t "$threads" -o json; }
{
  echo "# Expert offload vs llama.cpp llama-bench -ncmoe ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); idle memory used ${idle} MiB"
  echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), threads $threads on both sides"
  echo "- model: $(basename "$model") ($(du -h "$model" | cut -f1)); commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null)"
  echo "- prefill $np tokens, decode $ng random tokens, $reps repetitions; peak = nvidia-smi maximum during the run"
  echo
} >>"$out"
for b in $budgets; do
  sbench --vram-budget "$b" || continue
  cp "$T/out" "$T/s.json"; speak=$(cat "$T/peak")
  # llama.cpp's N: from Strata's plan, the layers whose experts fit beside the non-expert weights
  n0=$(py 'import json,sys,math; d=json.load(open(sys.argv[1])); p=d["plan"]
room=(int(sys.argv[2])-int(sys.argv[3]))*1048576-p["nonexpert_weight_bytes"]-p["other_buffer_bytes"]
print(max(0,min(p["moe_layers"],p["moe_layers"]-int(room//p["expert_bytes_per_layer"]))))' "$T/s.json" "$speak" "$idle")
  n=$n0; lpeak=""; tries=0
  while [ $tries -lt 4 ]; do
    tries=$((tries + 1))
    lbench "$n" || break
    cp "$T/out" "$T/l.json"; lpeak=$(cat "$T/peak")
    [ "$lpeak" -le "$speak" ] && break
    n=$((n + 1))
  done
  sbench --vram-budget "$b" --n-cpu-moe "$n" --no-routing-trace && cp "$T/out" "$T/st.json" && stpeak=$(cat "$T/peak") || stpeak=-
  py '
import json,sys
s=json.load(open(sys.argv[1])); st=json.load(open(sys.argv[2])) if sys.argv[3]!="-" else None
l=json.load(open(sys.argv[4]))
lp=[x["avg_ts"] for x in l if x["n_prompt"]>0][0]; lg=[x["avg_ts"] for x in l if x["n_gen"]>0][0]
b,n,sp,stp,lpk=sys.argv[5:10]
r=s["decode_routing"]; e=s["experts"]
print("## budget %s (llama.cpp -ncmoe %s)\n" % (b,n))
print("| run | peak VRAM MiB | prefill tok/s | decode tok/s | decode vs llama.cpp | hit rate | streamed experts | CPU ms/token |")
print("|---|---|---|---|---|---|---|---|")
def row(name,d,pk):
    x=d["experts"]
    print("| %s | %s | %.1f | %.2f | %.2fx | %.3f | %d | %.2f |" % (name,pk,d["prefill_tok_s"],d["decode_tok_s"],d["decode_tok_s"]/lg,
          d["experts_decode"]["hit_rate"],x["staged_experts"],d["experts_decode"]["cpu_ms_per_token"]))
row("Strata --vram-budget %s" % b, s, sp)
if st: row("Strata --vram-budget %s --n-cpu-moe %s" % (b,n), st, stp)
print("| llama.cpp -ngl 99 -ncmoe %s | %s | %.1f | %.2f | 1.00x | - | - | - |" % (n,lpk,lp,lg))
print()
print("Prefill ratio (Strata default / llama.cpp): %.2fx. Strata slots %d of %d, policy %s." % (s["prefill_tok_s"]/lp, e["slots"], e["experts_total"], e["policy"]))
print("Decode routing (Strata default run): %d tokens, %d of %d pairs used, top half %.1f%% of uses, adjacent overlap %.1f%% (uniform %.1f%%); same lookups: static split would hit %.3f, best fixed set %.3f, Belady %.3f; reuse histogram %s\n" % (
  r["tokens"],r["pairs_used"],r["pairs_total"],100*r["top_half_share"],100*r["adjacent_overlap"],100*r["uniform_overlap"],
  r["static_layers_hit_rate"],r["static_best_hit_rate"],r["belady_hit_rate"],json.dumps(r["reuse"])))
' "$T/s.json" "$T/st.json" "$stpeak" "$T/l.json" "$b" "$n" "$speak" "$stpeak" "$lpeak" >>"$out"
  tail -12 "$out"
  [ "$par" -gt 1 ] && parallel_rows "$b" "$n"
done
echo "offload_vs_llama: wrote $out"
