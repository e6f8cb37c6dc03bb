#!/usr/bin/env bash
# Cross-build Strata for ppc64le (POWER9) and run its tests under qemu-user.
#   ci/ppc64le.sh [build-dir]     (default: build-ppc in the repository root)
# Installs the cross toolchain, qemu-user and cmake when missing (Debian/Ubuntu, apt-get),
# configures with -Werror, builds everything, then runs `strata conformance --backend cpu`
# (when this build has the command) and the ctest suite, each test under qemu-ppc64le.
# Exit status: 0 only when the build and every test passed.
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-ppc}"
SYSROOT=/usr/powerpc64le-linux-gnu
JOBS="${STRATA_JOBS:-$(nproc)}"
CTEST_TIMEOUT="${STRATA_CTEST_TIMEOUT:-900}"

declare -a SUMMARY=() FAILED_TESTS=()
FAILED=0
step() { # step NAME CMD... : run, time and record one step
    local name="$1"; shift
    local t0=$SECONDS
    echo "=== ppc64le: $name"
    if "$@"; then
        SUMMARY+=("PASS  $name ($((SECONDS - t0)) s)")
        return 0
    fi
    SUMMARY+=("FAIL  $name ($((SECONDS - t0)) s)")
    FAILED=1
    return 1
}
finish() {
    echo
    echo "=== ppc64le summary (build: $BUILD)"
    local l
    for l in "${SUMMARY[@]}"; do echo "  $l"; done
    [ ${#FAILED_TESTS[@]} = 0 ] || echo "  failed tests: ${FAILED_TESTS[*]}"
    if [ "$FAILED" = 0 ]; then echo "=== ppc64le: ALL PASSED"; else echo "=== ppc64le: FAILED"; fi
    exit "$FAILED"
}

install_tools() {
    local need=()
    command -v powerpc64le-linux-gnu-gcc >/dev/null || need+=(gcc-powerpc64le-linux-gnu)
    [ -f "$SYSROOT/include/stdio.h" ] || need+=(libc6-dev-ppc64el-cross) # the compiler does not pull it in
    command -v qemu-ppc64le >/dev/null || need+=(qemu-user)
    command -v cmake >/dev/null || need+=(cmake)
    [ ${#need[@]} = 0 ] && { echo "toolchain present"; return 0; }
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${need[@]}"
}

# The ppc64le build is core + vsx + sim: GPU backends are not cross-built here.
configure() {
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchain-ppc64le.cmake" \
        -DSTRATA_WERROR=ON -DCMAKE_BUILD_TYPE=Release -DSTRATA_BACKEND_VSX=ON \
        -DSTRATA_BACKEND_CUDA=OFF -DSTRATA_BACKEND_HIP=OFF -DSTRATA_BACKEND_VULKAN=OFF
}

# Keep going past a failed target so the tests of everything that did build still run.
build() {
    local keep=(-k)
    [ -f "$BUILD/build.ninja" ] && keep=(-k 0)
    cmake --build "$BUILD" -j"$JOBS" -- "${keep[@]}"
}

# The conformance command runs every op of every loaded backend against the scalar oracle.
# --quick: fewer and smaller shapes; under qemu the reference quantizers that build the inputs
# dominate the time.
HAVE_CONFORMANCE=0
conformance() {
    local exe="$BUILD/bin/strata"
    if [ ! -x "$exe" ]; then
        echo "bin/strata was not built (see the build step); ctest's vsx_conformance_* tests run the harness"
        return 1
    fi
    # grep reads all of nm's output (with -q an early exit would fail the pipeline under pipefail)
    if ! powerpc64le-linux-gnu-nm "$exe" 2>/dev/null | grep -E ' [TW] st_cmd_conformance$' >/dev/null; then
        echo "strata conformance is not part of this build; ctest's vsx_conformance_* tests run the same harness"
        return 0
    fi
    HAVE_CONFORMANCE=1
    STRATA_BACKEND_PATH="$BUILD/lib/strata/backends" \
        qemu-ppc64le -cpu power9 -L "$SYSROOT" "$exe" conformance --backend cpu --quick --seed 1
}

# The real host's module search and CPU-variant choice: on a POWER9 model the VSX module serves
# the CPU; on a POWER8 model it is skipped before dlopen.
backends_smoke() {
    local exe="$BUILD/bin/strata" out
    [ -x "$exe" ] || { echo "bin/strata was not built"; return 1; }
    out="$(qemu-ppc64le -cpu power9 -L "$SYSROOT" "$exe" backends 2>&1)" || { echo "$out"; return 1; }
    echo "$out" | grep -q "Host CPU (POWER9 VSX)" || { echo "$out"; echo "power9: no VSX CPU device"; return 1; }
    out="$(qemu-ppc64le -cpu power8 -L "$SYSROOT" "$exe" backends 2>&1)"
    echo "$out" | grep -q "not loaded: CPU lacks" || { echo "$out"; echo "power8: VSX module not refused"; return 1; }
    echo "power9: VSX module serves the CPU; power8: refused before loading"
}

# Every test of the build under qemu; the harness's per-group tests are left out when the
# conformance command above already ran it.
run_ctest() {
    local skip=()
    [ "$HAVE_CONFORMANCE" = 1 ] && skip=(-E '^vsx_conformance_')
    local rc=0
    (cd "$BUILD" && ctest --output-on-failure --timeout "$CTEST_TIMEOUT" -j"$JOBS" "${skip[@]}") || rc=1
    local failed="$BUILD/Testing/Temporary/LastTestsFailed.log"
    if [ "$rc" != 0 ] && [ -f "$failed" ]; then
        local t
        while IFS= read -r t; do FAILED_TESTS+=("${t#*:}"); done <"$failed"
    fi
    return "$rc"
}

step "install toolchain" install_tools || finish
step "configure (-Werror)" configure || finish
step "build (-Werror)" build
step "strata backends: variant choice (qemu power9/power8)" backends_smoke
step "strata conformance --backend cpu (qemu)" conformance
step "ctest (qemu)" run_ctest
finish
