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
# Depth is matched: Strata's `bench -p NPROMPT -n NGEN` decodes at positions NPROMPT..NPROMPT+NGEN-1,
# so llama-bench's decode row is `-p 0 -n NGEN -d NPROMPT`; its prefill rows (`-p NPROMPT,NPROMPT2
# -n 0`) and Strata's are at depth 0. Prefill of NPROMPT2 tokens is a separate Strata run (-n 0).
# Usage: bench/offload_vs_llama.sh MODEL.gguf LLAMA_BIN_DIR OUT.md
# Environment: STRATA (default build/bin/strata), BACKEND (cuda), BUDGETS ("4GiB 8GiB"), THREADS (cores), REPS (2),
#   NPROMPT (512), NPROMPT2 (2048; empty = none), NGEN (128), PARALLEL (4; 1 = no batched rows),
#   DIAG (1: two more static-split rows, one with the resident-layer fast path off (routing traced),
#   one with the CPU module's repacking off (STRATA_CPU_REPACK=0), to place a difference between them)
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
model=$1 lbin=$2 out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
strata=${STRATA:-$here/build/bin/strata}
budgets=${BUDGETS:-"4GiB 8GiB"} threads=${THREADS:-$(nproc)} reps=${REPS:-2}
np=${NPROMPT:-512} np2=${NPROMPT2-2048} ng=${NGEN:-128} par=${PARALLEL:-4}
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
  local fmt='import json,sys; d=json.load(open(sys.argv[1])); x=d["experts_decode"]; print("%.2f (hit %.3f, CPU %.2f ms/step)" % (d["decode_tok_s"],x["hit_rate"],x["cpu_ms_per_token"]))'
  sbench1 && sd=$(py "$fmt" "$T/out")
  sbench1 --n-cpu-moe "$n" --no-routing-trace &&
    ss=$(py "$fmt" "$T/out")
  measured env LD_LIBRARY_PATH="$lbin" "$lbin/llama-batched-bench" -m "$model" -ngl 99 -ncmoe "$n" -fa on \
    -c $((par * 256)) -npp 128 -ntg 64 -npl "$par" -t "$threads" --output-format jsonl &&
    lt=$(grep '^{' "$T/out" | tail -n 1 | py 'import json,sys; print("%.2f" % json.loads(sys.stdin.read())["speed_tg"])')
  {
    echo "Decode of $par sequences (prompt 128, 64 tokens each; aggregate tok/s): Strata default $sd, Strata --n-cpu-moe $n $ss, llama-batched-bench -ncmoe $n $lt$( [ "$lt" != - ] && [ "$ss" != - ] && [ "$sd" != - ] && py 'import sys; print(" (default %.2fx, static %.2fx)" % (float(sys.argv[1].split()[0]) / float(sys.argv[3]), float(sys.argv[2].split()[0]) / float(sys.argv[3])))' "$sd" "$ss" "$lt")."
    echo
  } >>"$out"
  tail -n 2 "$out"
}
sbench() { measured "$strata" bench -m "$model" --backend "${BACKEND:-cuda}" -p "$np" -n "$ng" -r "$reps" --threads "$threads" \
             --cpu-threads "$threads" --decode-tokens random --json "$@"; }
# lbench N: llama-bench's prefill rows at depth 0, then its decode row at Strata's decode depth;
# the two JSON arrays joined in $T/out, the larger peak in $T/peak
lbench() {
  local lb=(env LD_LIBRARY_PATH="$lbin" "$lbin/llama-bench" -m "$model" -ngl 99 -ncmoe "$1" -fa 1 -r "$reps" -t "$threads" -o json)
  measured "${lb[@]}" -p "$np${np2:+,$np2}" -n 0 || return 1
  cp "$T/out" "$T/lp.json"; cp "$T/peak" "$T/lpeak"
  measured "${lb[@]}" -p 0 -n "$ng" -d "$np" || return 1
  py 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])) + json.load(open(sys.argv[2]))))' "$T/lp.json" "$T/out" >"$T/lj"
  mv "$T/lj" "$T/out"; sort -n "$T/lpeak" "$T/peak" | tail -1 >"$T/pk"; mv "$T/pk" "$T/peak"
}
# diag_rows B N: the static split's decode with the fast path off, and with repacking off
diag_rows() {
  local f='import json,sys; d=json.load(open(sys.argv[1])); x=d["experts_decode"]; print("%.2f tok/s, CPU %.2f ms/token, hit %.3f" % (d["decode_tok_s"],x["cpu_ms_per_token"],x["hit_rate"]))'
  local a=- r=-
  sbench --vram-budget "$1" --n-cpu-moe "$2" && a=$(py "$f" "$T/out")
  STRATA_CPU_REPACK=0 sbench --vram-budget "$1" --n-cpu-moe "$2" --no-routing-trace && r=$(py "$f" "$T/out")
  printf 'Static split, diagnosis: fast path off (routing traced) %s; CPU repacking off %s.\n\n' "$a" "$r" >>"$out"
}
# prefill2 ARGS...: Strata's prefill of NPROMPT2 tokens (-n 0, one repetition); tok/s or -
prefill2() {
  [ -n "$np2" ] && measured "$strata" bench -m "$model" --backend "${BACKEND:-cuda}" -p "$np2" -n 0 -r 1 --threads "$threads" \
    --cpu-threads "$threads" --json "$@" && py 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["prefill_tok_s"])' "$T/out" || echo -
}
{
  echo "# Expert offload vs llama.cpp llama-bench -ncmoe ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); idle memory used ${idle} MiB"
  echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), threads $threads on both sides"
  echo "- model: $(basename "$model") ($(du -h "$model" | cut -f1)); commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null)"
  echo "- prefill $np${np2:+ and $np2} tokens at depth 0; decode $ng random tokens at depth $np on both sides (llama-bench -d $np); $reps repetitions; peak = nvidia-smi maximum during the run"
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
  p2d=$(prefill2 --vram-budget "$b"); p2s=$(prefill2 --vram-budget "$b" --n-cpu-moe "$n" --no-routing-trace)
  [ "${DIAG:-0}" = 1 ] && diag_rows "$b" "$n"
  py '
import json,sys
s=json.load(open(sys.argv[1])); st=json.load(open(sys.argv[2])) if sys.argv[3]!="-" else None
l=json.load(open(sys.argv[4]))
np=int(sys.argv[10]); lp=[x["avg_ts"] for x in l if x["n_prompt"]==np and x["n_gen"]==0][0]
lg=[x["avg_ts"] for x in l if x["n_gen"]>0][0]; lp2=[x["avg_ts"] for x in l if x["n_prompt"]>np and x["n_gen"]==0]
b,n,sp,stp,lpk=sys.argv[5:10]; p2d,p2s=sys.argv[11:13]
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
def rat(a,b): return "%.2fx" % (float(a)/b) if a!="-" else "-"
print("Prefill %d (depth 0): Strata default %.1f (%s), static %s (%s), llama.cpp %.1f." % (np,s["prefill_tok_s"],rat(s["prefill_tok_s"],lp),
      "%.1f" % st["prefill_tok_s"] if st else "-", rat(st["prefill_tok_s"],lp) if st else "-", lp))
if lp2: print("Prefill %s (depth 0): Strata default %s (%s), static %s (%s), llama.cpp %.1f." % (sys.argv[13],p2d,rat(p2d,lp2[0]),p2s,rat(p2s,lp2[0]),lp2[0]))
print()
print("Strata slots %d of %d, policy %s." % (e["slots"], e["experts_total"], e["policy"]))
def pipes(name,d):
    x=d["experts"]
    print("Pipes (%s, prefill and decode together): %.2f GiB of the file pinned, %d staging slots, upload per expert %.3f ms, %d experts staged for %d rows, CPU %.2f ms/token over %d rows, router sync %.3f ms/token." % (
      name,x["pinned_bytes"]/2**30,x["stage_slots"],x["upload_ms_per_expert"],x["staged_experts"],x["staged_assignments"],x["cpu_ms_per_token"],x["cpu_assignments"],x["route_sync_ms_per_token"]))
pipes("default",s)
if st: pipes("static",st)
print("Decode routing (Strata default run): %d tokens, %d of %d pairs used, top half %.1f%% of uses, adjacent overlap %.1f%% (uniform %.1f%%); same lookups: static split would hit %.3f, best fixed set %.3f, Belady %.3f; reuse histogram %s\n" % (
  r["tokens"],r["pairs_used"],r["pairs_total"],100*r["top_half_share"],100*r["adjacent_overlap"],100*r["uniform_overlap"],
  r["static_layers_hit_rate"],r["static_best_hit_rate"],r["belady_hit_rate"],json.dumps(r["reuse"])))
' "$T/s.json" "$T/st.json" "$stpeak" "$T/l.json" "$b" "$n" "$speak" "$stpeak" "$lpeak" "$np" "$p2d" "$p2s" "${np2:-0}" >>"$out"
  tail -14 "$out"
  [ "$par" -gt 1 ] && parallel_rows "$b" "$n"
done
echo "offload_vs_llama: wrote $out"
