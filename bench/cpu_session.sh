#!/usr/bin/env bash
# The CPU suite (bench/cpu_moe.sh) from a bare machine: builds Strata's CPU modules and
# llama.cpp's llama-bench/llama-quantize (CPU only, GGML_NATIVE, from a tarball of the npm
# package's source bundle) side by side, then runs the suite once per thread count.
# Usage: bench/cpu_session.sh LLAMA_SRC.tgz VOCAB.gguf OUTDIR "THREADS..." [PHASES]
#   PHASES: "build suite" (default both); a later call with "suite" reuses the builds.
# Environment: WORK (/tmp/strata-cpu), and what bench/cpu_moe.sh reads (REPS, FORMATS, ...).
set -uo pipefail
[ $# -ge 4 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
tgz=$1 vocab=$2 outd=$3 threads=$4 phases=${5:-"build suite"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/strata-cpu}
cores=$(nproc)
mkdir -p "$work/llsrc" "$outd"
say() { echo "[$(date -u +%T)] $*"; }
for p in $phases; do
  case $p in
    build)
      tar xzf "$tgz" -C "$work/llsrc" || exit 1
      ( bash "$root/bench/llama_bench_build.sh" "$work/llsrc" "$work/ll" cpu $((cores * 5 / 8)) >/dev/null ) &
      lpid=$!
      { cmake -S "$root" -B "$root/build-cpu-session" -DCMAKE_BUILD_TYPE=Release -DSTRATA_BACKEND_CUDA=OFF &&
        cmake --build "$root/build-cpu-session" -j$((cores * 3 / 8)) --target strata strata-cpu-avx2 strata-cpu-avx512
      } >"$work/strata-build.log" 2>&1 || { say "strata build failed"; tail -n 20 "$work/strata-build.log"; }
      wait $lpid || { say "llama.cpp build failed"; tail -n 20 "$work/ll/build.log"; }
      say "builds done"
      "$root/build-cpu-session/bin/strata" backends 2>&1 | head -8 ;;
    suite)
      for t in $threads; do
        say "suite, $t threads"
        STRATA=$root/build-cpu-session/bin/strata MODELS=$work/models VOCAB=$vocab \
          bash "$root/bench/cpu_moe.sh" "$work/ll/build/bin" "$t" "$outd/cpu-moe-${t}t.md" >/dev/null 2>"$outd/cpu-moe-${t}t.err" ||
          say "suite at $t threads failed"
        cat "$outd/cpu-moe-${t}t.md"
      done ;;
  esac
done
say "done"
