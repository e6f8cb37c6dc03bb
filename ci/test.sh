#!/usr/bin/env bash
# The whole test suite, as CI runs it: install, build every backend the machine can build
# (-Werror), run ctest, then the sanitizer build, the ppc64le cross build under qemu and a
# short fuzz run. Prints ctest's summary of each stage. Usage: ci/test.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
bash ci/install-deps.sh || { echo "test: dependency installation failed"; exit 1; }
export PATH="/usr/local/cuda/bin:$PATH"
status=0
stage() { echo; echo "=== $* ==="; }

stage "llama.cpp reference (npm packages, into a cache outside the tree)"
if ! bash ci/fetch-llama-ref.sh; then
  echo "test: WARNING: the llama.cpp reference could not be fetched; the model-vs-llama.cpp tests are NOT run"
fi

stage "licence headers (scripts/spdx.sh --check)"
bash scripts/spdx.sh --check || status=1

stage "build (Release, -Werror, every backend the toolchains allow)"
cmake -S . -B build-ci -DSTRATA_WERROR=ON -DSTRATA_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release || exit 1
cmake --build build-ci -j"$jobs" || exit 1

stage "ctest"
(cd build-ci && ctest --output-on-failure -j"$jobs" --timeout 900) || status=1

stage "ASan/UBSan build of the core and its tests"
cmake -S . -B build-asan -DSTRATA_WERROR=ON -DSTRATA_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug \
      -DSTRATA_BACKEND_CUDA=OFF -DSTRATA_BACKEND_HIP=OFF -DSTRATA_BACKEND_VULKAN=OFF >/dev/null || exit 1
cmake --build build-asan -j"$jobs" || exit 1
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 STRATA_TEST_QUICK=1 ctest --output-on-failure -j"$jobs" -LE "slow|nosan" --timeout 900) || status=1

if [ -x ci/ppc64le.sh ] || [ -f ci/ppc64le.sh ]; then
  stage "ppc64le cross build (core + vsx + sim) and conformance under qemu"
  bash ci/ppc64le.sh || status=1
fi
if [ -f ci/windows.sh ]; then
  stage "Windows cross build (mingw-w64) under wine: version, backends, a run, conformance"
  bash ci/windows.sh build-ci || status=1
fi
if [ -f ci/fuzz.sh ]; then
  stage "fuzzing (short)"
  bash ci/fuzz.sh || status=1
fi
echo
[ $status = 0 ] && echo "test: ALL STAGES PASSED" || echo "test: SOME STAGES FAILED"
exit $status
