#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each: the GGUF reader, and,
# when the server is part of the build (libmicrohttpd and cJSON found), the OpenAI JSON mapping
# (fuzz_oai) and the server's HTTP layer over a socket (fuzz_http).
# usage: ci/fuzz.sh [SECONDS]      (default 60, per target)
# FUZZ_TARGETS limits the run (e.g. "fuzz_oai fuzz_http").
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
targets=${FUZZ_TARGETS:-fuzz_gguf fuzz_oai fuzz_http}
if [[ " $targets " == *" fuzz_gguf "* ]]; then
  cmake --build "$build" --target fuzz_gguf test_gguf_corrupt gguf_write_sample -j"$jobs"
fi

# A GGUF with a tokenizer for fuzz_http (only its vocabulary is read): STRATA_FUZZ_MODEL, else the
# shared stories260K model, else a vocabulary file of the llama.cpp reference (ci/fetch-llama-ref.sh).
fuzz_model() {
  local m=${STRATA_FUZZ_MODEL:-$root/../shared/models/stories260K.gguf}
  [ -s "$m" ] || m=$(find -L "${STRATA_LLAMA_REF_DIR:-${STRATA_CACHE:-$HOME/.cache/strata}/llama-ref}" \
                       -name ggml-vocab-llama-spm.gguf 2>/dev/null | head -1)
  echo "$m"
}

run_server_fuzz() { # target: seed corpus of requests, then run
  local t=$1 c=$build/fuzz-corpus-$1
  cmake --build "$build" --target "$t" -j"$jobs" || { echo "fuzz: $t not built (no server in this build?)"; return 1; }
  mkdir -p "$c" "$artifacts"
  local chat='{"model":"m","messages":[{"role":"user","content":"hi <|im_end|>"}],"max_tokens":3,"stop":["a","bc"]}'
  local cmpl='{"prompt":"x\u0000","stream":true,"stream_options":{"include_usage":true},"a":1,"a":2}'
  if [ "$t" = fuzz_oai ]; then
    printf '\001%s' "$chat" > "$c/chat"
    printf '\000%s' "$cmpl" > "$c/cmpl"
  else
    printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-fuzz\r\nContent-Length: %d\r\n\r\n%s' \
      "${#chat}" "$chat" > "$c/chat"
    printf 'GET /health HTTP/1.1\r\nHost: x\r\n\r\nPUT /v1/models HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}' > "$c/pipelined"
    printf 'POST /v1/completions HTTP/1.0\r\nauthorization: bearer sk-fuzz\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"pro\r\n0\r\n\r\n' > "$c/chunked"
  fi
  STRATA_FUZZ_MODEL=$(fuzz_model) \
    "$build/bin/$t" -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/$t-" -print_final_stats=1 "$c"
}
artifacts=$build/fuzz-artifacts
for t in fuzz_oai fuzz_http; do
  [[ " $targets " == *" $t "* ]] || continue
  if [ "$t" = fuzz_http ] && [ -z "$(fuzz_model)" ]; then
    echo "fuzz: fuzz_http NOT RUN: no GGUF with a tokenizer (set STRATA_FUZZ_MODEL or run ci/fetch-llama-ref.sh)"
    continue
  fi
  run_server_fuzz "$t"
done
[[ " $targets " == *" fuzz_gguf "* ]] || exit 0

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
