#!/usr/bin/env bash
# Builds llama.cpp's own benchmark tools (llama-bench, llama-batched-bench, llama-quantize) from
# the source that ci/fetch-llama-ref.sh fetched (the npm package's source bundle), for the
# comparisons in bench/: with CUDA for one architecture, or CPU only. The CPU code is built for
# the machine it runs on (GGML_NATIVE), as a user building llama.cpp there would.
# Usage: bench/llama_bench_build.sh LLAMA_SRC_DIR OUT_DIR [CUDA_ARCH|cpu] [JOBS]
# Prints the folder holding the binaries.
set -euo pipefail
src=$1 out=$2 arch=${3:-90} jobs=${4:-$(nproc)}
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$out"
gpu=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" -DGGML_CUDA_NCCL=OFF)
[ "$arch" = cpu ] && gpu=(-DGGML_CUDA=OFF)
cmake -S "$src" -B "$out/build" "${gpu[@]}" -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=Release >"$out/configure.log" 2>&1
cmake --build "$out/build" -j"$jobs" --target llama-bench llama-batched-bench llama-quantize >"$out/build.log" 2>&1
echo "$out/build/bin"
