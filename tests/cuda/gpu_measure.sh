#!/bin/sh
# One measurement pass on a machine with an NVIDIA GPU, from the repository root:
#   tests/cuda/gpu_measure.sh BUILD_DIR OUT_DIR [LAYERS]
# Runs the module's op tests and the shared conformance cases, the GEMV/MoE/attention timings
# with the decode GEMV on and off, then generates a qwen3-30b-a3b-shaped Q4_K model with LAYERS
# layers (default 8) and runs `strata bench` with graphs on/off, plus a logits comparison of
# graph replay against direct runs, and the batched decode of 1-64 sequences (`--parallel`).
# Logs go to OUT_DIR; a summary to stdout.
B=${1:-build-cudaperf}
O=${2:-/tmp/strata-gpu}
L=${3:-8}
mkdir -p "$O"
SO=$B/lib/strata/backends/strata-cuda.so
export STRATA_BACKEND_PATH=$B/lib/strata/backends
# libraries the strata executable links that the machine may lack (copied beside the build)
[ -d "$B/rtlib" ] && export LD_LIBRARY_PATH="$B/rtlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
S=$B/bin/strata
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
t0=$(date +%s)
timeout 300 "$B/bin/test_cuda_ops" "$SO" > "$O/ops.log" 2>&1
echo "cuda_ops rc=$? $(tail -1 "$O/ops.log") ($(($(date +%s) - t0)) s)"
grep '^FAIL' "$O/ops.log" | head -15
t0=$(date +%s)
timeout 120 "$S" conformance --backend cuda > "$O/conformance.log" 2>&1
echo "conformance rc=$? $(tail -2 "$O/conformance.log" | tr '\n' ' ') ($(($(date +%s) - t0)) s)"
grep -i '^FAIL\|fail ' "$O/conformance.log" | head -10
[ -n "$BASELINE" ] && { echo "== bench, decode GEMV off"
STRATA_CUDA_NO_FAST_GEMV=1 timeout 60 "$B/bin/test_cuda_ops" "$SO" bench 2>&1 | grep BENCH; }
echo "== bench, decode GEMV on"
timeout 60 "$B/bin/test_cuda_ops" "$SO" bench 2>&1 | grep BENCH
t0=$(date +%s)
M=/tmp/q3-$L.gguf
timeout 150 "$S" gen-model --preset qwen3-30b-a3b --type Q4_K --layers "$L" --out "$M" > "$O/gen.log" 2>&1
echo "gen-model rc=$? ($(($(date +%s) - t0)) s) $(ls -l "$M" | awk '{print $5}') bytes"
tail -2 "$O/gen.log"
for cfg in "" "STRATA_GRAPHS=0" "STRATA_GRAPHS=0 STRATA_CUDA_NO_FAST_GEMV=1"; do
  echo "== strata bench [$cfg]"
  env $cfg timeout 120 "$S" bench -m "$M" --backend cuda -p 512 -n 128 -r 2 --json 2>"$O/bench_err.log"
  echo " rc=$?"; tail -2 "$O/bench_err.log"
done
echo "== strata bench prefill 2048"
timeout 90 "$S" bench -m "$M" --backend cuda -p 2048 -n 0 -r 1 --json 2>>"$O/bench_err.log"; echo " rc=$?"
TOK=1,2,3,4,5,6,7,8,9,10,11,12
env timeout 60 "$S" logits -m "$M" --backend cuda -b 1 --tokens $TOK --out "$O/lg_graph.f32" > /dev/null 2>&1
env STRATA_GRAPHS=0 timeout 60 "$S" logits -m "$M" --backend cuda -b 1 --tokens $TOK --out "$O/lg_direct.f32" > /dev/null 2>&1
env STRATA_GRAPHS=0 STRATA_CUDA_NO_FAST_GEMV=1 timeout 60 "$S" logits -m "$M" --backend cuda -b 1 --tokens $TOK --out "$O/lg_base.f32" > /dev/null 2>&1
python3 - "$O" <<'PY'
import sys, struct, math
o = sys.argv[1]
def rd(n):
    try:
        b = open(f"{o}/{n}.f32", "rb").read()
    except OSError:
        return None
    return struct.unpack(f"<{len(b)//4}f", b)
g, d, b = rd("lg_graph"), rd("lg_direct"), rd("lg_base")
def rel(a, r):
    if a is None or r is None or len(a) != len(r):
        return "n/a"
    num = sum((x - y) ** 2 for x, y in zip(a, r)); den = sum(y * y for y in r)
    am = max(range(len(a)), key=a.__getitem__); bm = max(range(len(r)), key=r.__getitem__)
    return f"rel rms {math.sqrt(num / den) if den else 0:.3e}, argmax {am} vs {bm}"
print("logits graph vs direct:", rel(g, d))
print("logits fast GEMV vs generic:", rel(d, b))
PY
echo "== batched decode: P sequences, prompt 128, 64 steps (aggregate decode tok/s)"
for P in 1 4 8 12 16 32 64; do
  r=$(timeout 120 "$S" bench -m "$M" --backend cuda -p 128 -n 64 -r 2 --parallel "$P" --json 2>>"$O/bench_err.log")
  echo "P=$P rc=$? $(echo "$r" | grep -o '"decode_tok_s":[0-9.]*')"
done
echo "== batched decode, P=32, the former thresholds (no grouped expert GEMV, 8-row dense GEMV)"
env STRATA_CUDA_GROUPED_MAX=64 STRATA_CUDA_GEMV_COLS=8 timeout 120 "$S" bench -m "$M" --backend cuda -p 128 -n 64 -r 2 \
  --parallel 32 --json 2>>"$O/bench_err.log" | grep -o '"decode_tok_s":[0-9.]*'
