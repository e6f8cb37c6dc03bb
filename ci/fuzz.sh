#!/usr/bin/env bash
# Builds the GGUF reader's libFuzzer target with clang (ASan + UBSan) and runs it.
# usage: ci/fuzz.sh [SECONDS]      (default 60)
# Environment: BUILD_DIR (default build-fuzz), JOBS (default 2).
# Installs clang with apt-get when it is absent (needs root or sudo).
# Exit status: 0 no crash found; non-zero on a build failure or a crash (the reproducer is
# left in $BUILD_DIR/fuzz-artifacts/).
set -euo pipefail
secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
jobs=${JOBS:-2}

if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz: clang not found, installing it with apt-get" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq clang
fi

CC=clang cmake -S "$root" -B "$build" -DSTRATA_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTRATA_SANITIZE=address,undefined >/dev/null
cmake --build "$build" --target fuzz_gguf test_gguf_corrupt gguf_write_sample -j"$jobs"

# Seed corpus: small valid files from the writer (the corrupt test's base sample, and a
# split-free MoE-shaped file) plus the real model's header when it is present.
corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
mkdir -p "$corpus" "$artifacts" "$build/fuzz-tmp"
"$build/bin/test_gguf_corrupt" "$build/fuzz-tmp" >/dev/null
cp "$build/fuzz-tmp/corrupt_base.gguf" "$corpus/base.gguf"
model="$root/../shared/models/stories260K.gguf"
if [ -f "$model" ]; then
  head -c 16384 "$model" > "$corpus/stories_head.gguf"
fi

"$build/bin/fuzz_gguf" -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus"
