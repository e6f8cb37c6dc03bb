#!/usr/bin/env bash
# Builds llama.cpp with CUDA (one architecture) from the source that ci/fetch-llama-ref.sh
# fetched, and llama-ref (tests/llama_ref/llama_ref.c) against it, for the GPU benchmarks.
# The CPU backend is built as loadable variants (GGML_BACKEND_DL, GGML_CPU_ALL_VARIANTS; the
# x86 ones from Haswell up) so llama.cpp picks its best one for the machine at run time, as
# its release packages do: the expert-offload benchmark runs experts on llama.cpp's CPU code.
# Set LLAMA_REF_LIBDIR to the printed library folder when running llama-ref.
# LLAMA_CPU_FLAGS, when set, replaces the variants with one static CPU backend of those cmake
# flags (for example "-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON ..."), which builds faster.
# Usage: bench/cuda_llama_build.sh LLAMA_SRC_DIR OUT_DIR [CUDA_ARCH=90]
set -euo pipefail
src=$1 out=$2 arch=${3:-90}
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$out"
cpu_flags=(-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON)
targets=(llama ggml-cuda ggml-cpu-haswell ggml-cpu-skylakex ggml-cpu-icelake ggml-cpu-cooperlake ggml-cpu-zen4
         ggml-cpu-sapphirerapids)
if [ -n "${LLAMA_CPU_FLAGS:-}" ]; then
  read -r -a cpu_flags <<<"$LLAMA_CPU_FLAGS"
  targets=(llama)
fi
cmake -S "$src" -B "$out/build" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" -DGGML_NATIVE=OFF "${cpu_flags[@]}" \
  -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_APP=OFF \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=Release >"$out/configure.log" 2>&1
cmake --build "$out/build" -j"$(nproc)" --target "${targets[@]}" >"$out/build.log" 2>&1
lib=$(dirname "$(find "$out/build" -name 'libllama.so' | head -1)")
cc -O2 -std=c11 -D_GNU_SOURCE -o "$out/llama-ref" "$root/tests/llama_ref/llama_ref.c" -I"$src/include" -I"$src/ggml/include" \
  -L"$lib" -lllama -lggml -lggml-base -Wl,-rpath,"$lib"
echo "llama.cpp CUDA build: $out/llama-ref (libraries in $lib)"
