#!/usr/bin/env bash
# One GPU session of the offload comparison, from a fresh machine: builds Strata (CUDA sm_90) and
# llama.cpp's tools (bench/llama_bench_build.sh, from a tarball of the npm source bundle) side by
# side, writes the generated qwen3-30b-a3b-shaped Q4_0 model with the balanced router, and runs
# bench/offload_vs_llama.sh. Usage: bench/h200_offload_run.sh LLAMA_SRC.tgz VOCAB.gguf OUTDIR
set -uo pipefail
tgz=$1 vocab=$2 outd=$3
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p /tmp/llsrc "$outd"
tar xzf "$tgz" -C /tmp/llsrc
jobs=$(( $(nproc) / 2 ))
( bash "$root/bench/llama_bench_build.sh" /tmp/llsrc /tmp/ll 90 "$jobs" >"$outd/llama-build.txt" 2>&1 ) &
lpid=$!
export PATH=/usr/local/cuda/bin:$PATH
cmake -S "$root" -B "$root/build-h200" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA_ARCHS=90 >"$outd/strata-build.txt" 2>&1 &&
  cmake --build "$root/build-h200" -j"$jobs" --target strata strata-cuda strata-cpu-avx2 strata-cpu-avx512 \
    >>"$outd/strata-build.txt" 2>&1 || { echo "strata build failed"; tail -20 "$outd/strata-build.txt"; }
S=$root/build-h200/bin/strata
model=/tmp/q3-30b-q4_0-balanced.gguf
/usr/bin/time -f "gen-model %e s" "$S" gen-model --preset qwen3-30b-a3b --type Q4_0 --router balanced \
  --vocab-from "$vocab" --out "$model" 2>&1 | tail -2
"$S" backends 2>&1 | head -20
wait $lpid
tail -3 "$outd/llama-build.txt"
echo "build done $(date -u +%T)"
STRATA=$S bash "$root/bench/offload_vs_llama.sh" "$model" /tmp/ll/build/bin "$outd/offload.md"
echo "all done $(date -u +%T)"
