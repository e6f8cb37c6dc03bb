#!/usr/bin/env bash
# Optional CI stage: cross-builds strata.exe and the CPU modules for Windows with mingw-w64
# (cmake/toolchain-mingw64.cmake) and runs them under wine (tests/windows/check_wine.sh:
# --version, backends, a missing DLL named, a greedy run equal to the Linux build's, the CPU
# module's conformance). Skipped, with a line saying so, when gcc-mingw-w64-x86-64 or wine64
# is not installed. Usage: ci/windows.sh [LINUX_BUILD_DIR]   (for the greedy-text comparison)
set -uo pipefail
cd "$(dirname "$0")/.."
if ! command -v x86_64-w64-mingw32-gcc >/dev/null || ! { command -v wine64 || command -v wine; } >/dev/null; then
  echo "windows: NOT RUN (apt-get install gcc-mingw-w64-x86-64 wine64)"
  exit 0
fi
linux=${1:-build-ci}
cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-mingw64.cmake -DCMAKE_BUILD_TYPE=Release \
      -DSTRATA_WERROR=ON -DSTRATA_TESTS=OFF >/dev/null || exit 1
cmake --build build-win -j"$(nproc)" --target strata strata-cpu-avx2 strata-cpu-avx512 || exit 1
strata=""
[ -x "$linux/bin/strata" ] && strata=$linux/bin/strata
bash tests/windows/check_wine.sh build-win $strata
