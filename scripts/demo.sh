#!/usr/bin/env bash
# The main job on a built-in default: install, build, write a demo model with
# `strata gen-model`, serve it on 127.0.0.1 and stream one chat request.
# Usage: scripts/demo.sh [port]   (STRATA_BUILD=dir to choose the build folder)
set -euo pipefail
cd "$(dirname "$0")/.."
port=${1:-8080}
build=${STRATA_BUILD:-build}
bash ci/install-deps.sh --minimal
# CUDA kernels for every architecture take long on a small machine: the demo builds them for
# this machine's GPU only, and not at all without one (STRATA_DEMO_CMAKE adds cmake options)
cuda=()
if cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1) && [ -n "$cc" ] &&
  [ "${cc//./}" -ge 75 ] 2>/dev/null; then
  cuda=(-DSTRATA_CUDA_ARCHS="${cc//./}")
else
  cuda=(-DSTRATA_BACKEND_CUDA=OFF)
fi
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" ${STRATA_DEMO_CMAKE:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
strata="$build/bin/strata"
mkdir -p "$build/models"
model="$build/models/demo.gguf"
[ -f "$model" ] || "$strata" gen-model --preset demo --out "$model"
"$strata" backends || true
log="$build/demo-serve.log"
"$strata" serve -m "$model" --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { echo "demo: the server exited; its log:"; cat "$log"; exit 1; }
  sleep 0.2
done
echo "demo: streaming one chat completion from http://127.0.0.1:$port/v1/chat/completions"
curl -sN "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"model":"demo","stream":true,"max_tokens":32,"messages":[{"role":"user","content":"Tell me a story."}]}'
echo
echo "demo: done (server log: $log)"
