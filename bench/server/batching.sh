#!/usr/bin/env bash
# Continuous batching of `strata serve` on the CPU module: aggregate greedy decode rate with 4
# concurrent streams against 1 stream, on a generated dense model of about 500 MB at Q4_K.
# usage: bench/server/batching.sh [BUILD_DIR] [THREADS] [MAX_TOKENS]
# Prints the numbers and the exact commands; the model is written once into
# ${STRATA_CACHE:-$HOME/.cache/strata}/bench/.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
threads=${2:-2}
gen=${3:-48}
strata=$(cd "$build" && pwd)/bin/strata
cache=${STRATA_CACHE:-$HOME/.cache/strata}/bench
model=$cache/dense-q4k-56l.gguf
mkdir -p "$cache"
gen_cmd="$strata gen-model --preset dense-500m --type Q4_K --layers 56 --out $model"
if [ ! -s "$model" ]; then
  echo "+ $gen_cmd"
  $gen_cmd.tmp >/dev/null && mv "$model.tmp" "$model"
fi
echo "model: $model ($(du -m "$model" | cut -f1) MiB)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
serve_cmd="$strata serve -m $model --port $port --parallel 4 --ctx 512 --backend cpu --threads $threads"
echo "+ $serve_cmd"
log=$(mktemp)
$serve_cmd 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.2
done
grep -E 'engine \(pid|listening' "$log"
node "$here/batching.mjs" "http://127.0.0.1:$port" 1 8 >/dev/null # warm-up (page in the weights)
# interleaved, so that load from elsewhere on the machine hits both alike
for n in 1 4 1 4 1 4; do
  echo "+ node bench/server/batching.mjs http://127.0.0.1:$port $n $gen"
  node "$here/batching.mjs" "http://127.0.0.1:$port" "$n" "$gen"
done
metrics=$(curl -s "http://127.0.0.1:$port/metrics")
echo "$metrics" | grep -E '^strata_engine_(max_slots_in_step|steps_total|decode_tokens_total|forward_seconds|sample_seconds|decode_step)'
# the engine's own clock: decode-only steps by rows; aggregate rate = rows / mean step time
echo "$metrics" | awk -F'[{}" ]+' '
  /^strata_engine_decode_step_seconds_sum/   { s[$3] = $NF }
  /^strata_engine_decode_step_seconds_count/ { c[$3] = $NF }
  END {
    for (r in s) if (c[r] > 0) { m = s[r] / c[r]; printf "engine: %s row(s): %d steps, mean %.1f ms/step, %.2f tok/s aggregate\n", r, c[r], m * 1000, r / m; rate[r] = r / m }
    if (rate[1] > 0 && rate[4] > 0) printf "engine: 4 slots / 1 slot aggregate decode = %.2fx\n", rate[4] / rate[1]
  }'
grep 'request' "$log" | tail -6
