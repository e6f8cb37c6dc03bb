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
bash tests/windows/check_wine.sh build-win $strata || exit 1
# the ZIP package, unzipped elsewhere: its strata.exe finds its modules there (and no simulated one)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd build-win && cpack -G ZIP -B "$tmp/out" >/dev/null) || { echo "FAIL: cpack -G ZIP"; exit 1; }
zip=$(ls "$tmp"/out/strata-*-Windows-*.zip) && (cd "$tmp" && unzip -q "$zip") || { echo "FAIL: no zip"; exit 1; }
exe=$(ls "$tmp"/strata-*/bin/strata.exe)
export WINEPREFIX=${WINEPREFIX:-$PWD/build-win/wineprefix} WINEDEBUG=-all
out=$({ command -v wine64 || command -v wine; } | head -n 1)
out=$(env -u STRATA_BACKEND_PATH "$out" "$exe" backends 2>&1 | tr -d '\r')
echo "$out" | grep -E 'executable-relative|Usable devices' | sed 's/^/zip backends: /'
echo "$out" | grep -Eq '^Usable devices: [1-9]' || { echo "FAIL: the unzipped strata.exe has no usable device"; exit 1; }
echo "$out" | grep -q 'strata-sim' && { echo "FAIL: the zip holds the simulated device"; exit 1; }
echo "PASS: $(basename "$zip") runs where it is unzipped"
