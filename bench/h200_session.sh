#!/usr/bin/env bash
# One GPU-machine session of the offload and CPU comparisons, from a bare machine, every figure
# against llama.cpp's own tools in the same run:
#   1. builds Strata (CUDA for one architecture) and llama.cpp's llama-bench/llama-quantize
#      (bench/llama_bench_build.sh, from a tarball of the npm package's source bundle) side by side;
#   2. writes the generated qwen3-30b-a3b-shaped Q4_0 model with the balanced router;
#   3. expert offload at 4 and 8 GiB (bench/offload_vs_llama.sh)            -> OUTDIR/offload.md
#   4. the CPU alone, every core, GPU hidden from llama.cpp (bench/cpu_vs_llama.sh) -> OUTDIR/cpu.md
#   5. a Q4_K_M file made by llama-quantize from the Q4_0 one, offload at 8 GiB -> OUTDIR/offload-q4km.md
# Each phase's log goes to OUTDIR/session.log; a phase that fails does not stop the later ones.
# Usage: bench/h200_session.sh LLAMA_SRC.tgz VOCAB.gguf OUTDIR [CUDA_ARCH=90]
# Environment: PHASES (default "offload cpu q4km"), WORK (/tmp/strata-session), CPU_REPS (1),
#   SAVE_LLAMA=DIR writes llama.cpp's built tools there (llama-bin.txz.aa, .ab, ...: xz parts of
#   15 MiB) for a later run on the same kind of machine; LLAMA_TAR=DIR takes them from there
#   instead of building llama.cpp again
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
tgz=$1 vocab=$2 outd=$3 arch=${4:-90}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/strata-session}
phases=${PHASES:-"offload cpu q4km"}
mkdir -p "$work/llsrc" "$outd"
exec > >(tee -a "$outd/session.log") 2>&1
say() { echo "[$(date -u +%T)] $*"; }
export PATH=/usr/local/cuda/bin:$PATH
cores=$(nproc)

# llama_tools: llama.cpp's tools in $work/ll/build/bin, built from the tarball or unpacked from LLAMA_TAR
llama_tools() {
  if [ -n "${LLAMA_TAR:-}" ]; then
    mkdir -p "$work/ll/build/bin" && cat "$LLAMA_TAR"/llama-bin.txz.* | tar xJf - -C "$work/ll/build/bin"
    return
  fi
  tar xzf "$tgz" -C "$work/llsrc" && bash "$root/bench/llama_bench_build.sh" "$work/llsrc" "$work/ll" "$arch" $((cores * 5 / 8))
}

save_llama() {
  mkdir -p "$SAVE_LLAMA" && (cd "$work/ll/build/bin" && tar cf - llama-bench llama-batched-bench llama-quantize ./*.so*) |
    xz -T0 -4 | split -b 15m - "$SAVE_LLAMA/llama-bin.txz." && say "llama.cpp tools saved: $(du -sh "$SAVE_LLAMA" | cut -f1)"
}

build_all() {
  ( llama_tools ) &
  local lpid=$! rc=0
  cmake -S "$root" -B "$root/build-session" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA_ARCHS="$arch" \
    >"$work/strata-build.log" 2>&1 &&
    cmake --build "$root/build-session" -j$((cores * 3 / 8)) --target strata strata-cuda strata-cpu-avx2 \
      strata-cpu-avx512 >>"$work/strata-build.log" 2>&1 || { say "strata build failed"; tail -n 30 "$work/strata-build.log"; rc=1; }
  wait $lpid || { say "llama.cpp build failed"; tail -n 30 "$work/ll/configure.log" "$work/ll/build.log"; rc=1; }
  return $rc
}

say "building on $cores cores"
build_all || exit 1
S=$root/build-session/bin/strata L=$work/ll/build/bin
say "builds done"; "$S" backends 2>&1 | sed -n '1,12p'
[ -n "${SAVE_LLAMA:-}" ] && [ -z "${LLAMA_TAR:-}" ] && save_llama
model=$work/q3-30b-a3b-q4_0-balanced.gguf
/usr/bin/time -f "gen-model %e s" "$S" gen-model --preset qwen3-30b-a3b --type Q4_0 --router balanced \
  --vocab-from "$vocab" --out "$model" 2>&1 | tail -n 2
for p in $phases; do
  say "phase $p"
  case $p in
    offload) STRATA=$S bash "$root/bench/offload_vs_llama.sh" "$model" "$L" "$outd/offload.md" ;;
    cpu) REPS=${CPU_REPS:-1} STRATA=$S bash "$root/bench/cpu_vs_llama.sh" "$model" "$L" "$outd/cpu.md" ;;
    q4km)
      env LD_LIBRARY_PATH="$L" "$L/llama-quantize" --allow-requantize "$model" "$work/q3-q4_k_m.gguf" Q4_K_M "$cores" \
        >"$work/quantize.log" 2>&1 || { say "llama-quantize failed"; tail -n 5 "$work/quantize.log"; continue; }
      BUDGETS=8GiB STRATA=$S bash "$root/bench/offload_vs_llama.sh" "$work/q3-q4_k_m.gguf" "$L" "$outd/offload-q4km.md" ;;
  esac || say "phase $p failed"
done
say "all done"
