#!/usr/bin/env bash
# `strata serve` with an expert cache on a simulated device: the engine plans before loading,
# answers a completion, and /metrics carries the plan (strata_plan_*) and the expert cache
# (strata_expert_*) as the engine sent them.
# usage: test_serve_hybrid.sh path/to/strata   (exit 77 when curl or python3 is missing)
set -euo pipefail
STRATA=$1
command -v curl >/dev/null && command -v python3 >/dev/null || { echo "SKIP: needs curl and python3"; exit 77; }
T=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
export STRATA_SIM=devices=1,mem=256MiB STRATA_LOG=error
fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; cat "$T/serve.log" >&2 || true; exit 1; }

"$STRATA" gen-model --out "$T/m.gguf" --arch qwen3moe --preset demo --type F32 --router-skew 1 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$STRATA" serve -m "$T/m.gguf" --port "$port" --backend sim --ctx 256 --parallel 2 --expert-cache 12 \
    --report-dir "$T" >"$T/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":"hello world","max_tokens":12,"temperature":0}' >"$T/c.json" || fail "no completion"
grep -q '"completion_tokens":12' "$T/c.json" || fail "completion: $(cat "$T/c.json")"
curl -sf "http://127.0.0.1:$port/metrics" >"$T/metrics.txt" || fail "no /metrics"
for k in 'strata_plan_ok 1' 'strata_plan_bytes{device="0",consumer="expert_cache"' 'strata_expert_hits_total{device="0"}' \
         'strata_expert_misses_total{device="0"}' 'strata_expert_slots{device="0"}' 'strata_expert_cpu_seconds_total'; do
  grep -qF "$k" "$T/metrics.txt" || fail "/metrics lacks $k"
done
# every routed expert of the completion was a hit or a miss: 4 layers x 4 experts per token
hits=$(sed -n 's/^strata_expert_hits_total{device="0"} //p' "$T/metrics.txt")
miss=$(sed -n 's/^strata_expert_misses_total{device="0"} //p' "$T/metrics.txt")
[ $((hits + miss)) -gt 0 ] || fail "no expert access counted"
grep -q "memory plan:" "$T/serve.log" || fail "the engine did not log its plan"
echo "serve with an expert cache: all checks passed ($hits hits, $miss misses)"
