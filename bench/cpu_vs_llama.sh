#!/usr/bin/env bash
# The CPU alone against llama.cpp's own llama-bench, same model, same threads, same run:
#   Strata:    strata bench --backend cpu -t T (prefill -p P; decode -d D -p 0 -n N)
#   llama.cpp: llama-bench -ngl 0 -t T (-p P -n 0; -d D -p 0 -n N), with every GPU hidden
#              (CUDA_VISIBLE_DEVICES= and -ngl 0), so a CUDA build measures its CPU path
# Random decode tokens on both sides (llama-bench's way, Strata's default). The decode run's
# routing statistics are printed with the result (a router that repeats itself flatters nothing
# on the CPU, but it is reported all the same). Appends a Markdown table to OUT.md.
# Usage: bench/cpu_vs_llama.sh MODEL.gguf LLAMA_BIN_DIR OUT.md
# Environment: STRATA (default build/bin/strata), THREADS (cores), REPS (2), PROMPTS ("128 512"),
#   DEPTHS ("0 2048"), NGEN (64)
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
model=$1 lbin=$2 out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
strata=${STRATA:-$here/build/bin/strata}
threads=${THREADS:-$(nproc)} reps=${REPS:-2} prompts=${PROMPTS:-"128 512"} depths=${DEPTHS:-"0 2048"} ng=${NGEN:-64}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
sb() { "$strata" bench -m "$model" --backend cpu -t "$threads" -r "$reps" --json "$@" 2>"$T/serr" ||
         { echo "cpu_vs_llama: strata bench $* failed" >&2; tail -n 5 "$T/serr" >&2; return 1; }; }
lb() { env CUDA_VISIBLE_DEVICES= LD_LIBRARY_PATH="$lbin" "$lbin/llama-bench" -m "$model" -ngl 0 -t "$threads" \
         -r "$reps" -o json "$@" 2>"$T/lerr" ||
         { echo "cpu_vs_llama: llama-bench $* failed" >&2; tail -n 5 "$T/lerr" >&2; return 1; }; }
csv() { echo "$*" | tr ' ' ','; }
lb -p "$(csv $prompts)" -n 0 >"$T/lp.json"
lb -p 0 -n "$ng" -d "$(csv $depths)" >"$T/lg.json"
: >"$T/s.jsonl"
for p in $prompts; do sb -p "$p" -n 0 | sed "s/^/pp $p 0 /" >>"$T/s.jsonl"; done
for d in $depths; do sb -d "$d" -p 0 -n "$ng" | sed "s/^/tg $ng $d /" >>"$T/s.jsonl"; done
{
  echo "# CPU only: Strata vs llama.cpp llama-bench ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; threads $threads on both sides"
  echo "- model: $(basename "$model") ($(du -h "$model" | cut -f1)); Strata commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null)"
  echo "- $reps repetitions each, mean tok/s; random decode tokens; llama.cpp with -ngl 0 and no GPU visible"
  echo "- commands: \`strata bench --backend cpu -t $threads -p P -n 0\`, \`strata bench --backend cpu -t $threads -d D -p 0 -n $ng\`;"
  echo "  \`llama-bench -ngl 0 -t $threads -p $(csv $prompts) -n 0\`, \`llama-bench -ngl 0 -t $threads -p 0 -n $ng -d $(csv $depths)\`"
  echo
  python3 - "$T/s.jsonl" "$T/lp.json" "$T/lg.json" <<'EOF'
import json, sys
rows = []
for line in open(sys.argv[1]):
    kind, n, d, js = line.split(" ", 3)
    rows.append((kind, int(n), int(d), json.loads(js)))
l = json.load(open(sys.argv[2])) + json.load(open(sys.argv[3]))
def ref(kind, n, d):
    for x in l:
        if kind == "pp" and x["n_prompt"] == n and x["n_gen"] == 0 and x.get("n_depth", 0) == d: return x["avg_ts"]
        if kind == "tg" and x["n_gen"] == n and x["n_prompt"] == 0 and x.get("n_depth", 0) == d: return x["avg_ts"]
    return None
print("| test | Strata tok/s | llama.cpp tok/s | ratio | Strata GB/s of weights |")
print("|---|---|---|---|---|")
for kind, n, d, s in rows:
    v = s["prefill_tok_s"] if kind == "pp" else s["decode_tok_s"]
    gbs = s["prefill_gb_s"] if kind == "pp" else s["decode_gb_s"]
    r = ref(kind, n, d)
    name = ("pp%d" % n) + (" @ d%d" % d if d else "") if kind == "pp" else ("tg%d @ d%d" % (n, d))
    print("| %s | %.2f | %s | %s | %.1f |" % (name, v, "%.2f" % r if r else "-", "%.2fx" % (v / r) if r else "-", gbs))
for kind, n, d, s in rows:
    if kind == "tg" and "decode_routing" in s:
        r = s["decode_routing"]
        print("\nDecode routing (d%d): %d tokens, %d of %d pairs used, top half %.1f%% of uses, adjacent overlap %.1f%% (uniform %.1f%%)"
              % (d, r["tokens"], r["pairs_used"], r["pairs_total"], 100 * r["top_half_share"], 100 * r["adjacent_overlap"], 100 * r["uniform_overlap"]))
        break
EOF
  echo
} >>"$out"
cat "$out"
