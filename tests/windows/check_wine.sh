#!/usr/bin/env bash
# check_wine.sh BUILD_WIN [LINUX_STRATA]
#   Runs a mingw-w64 build (cmake/toolchain-mingw64.cmake) under wine:
#   - `strata.exe --version` names the version, the backend ABI and the CPU module (a .dll);
#   - `strata.exe backends` finds the modules executable-relative and has a usable device;
#   - a module whose dependency DLL is absent is reported with that DLL's name;
#   - `gen-model` and `run` of 8 greedy tokens on the CPU module, the same text as LINUX_STRATA's
#     (a Linux build of the same tree) when given;
#   - the CPU module's conformance (--quick) against the scalar reference.
#   WINEPREFIX defaults to BUILD_WIN/wineprefix (created on first use, a few seconds).
set -u
win=$(cd "$1" && pwd) linux=${2:-}
exe=$win/bin/strata.exe
export WINEPREFIX=${WINEPREFIX:-$win/wineprefix} WINEDEBUG=${WINEDEBUG:--all}
WINE=$(command -v wine64 || command -v wine) || { echo "NOT RUN: no wine (apt-get install wine64)"; exit 77; }
[ -f "$exe" ] || { echo "FAIL: no $exe"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
w() { "$WINE" "$exe" "$@" 2>&1 | tr -d '\r'; }
"$WINE" wineboot -i >/dev/null 2>&1 # a new prefix is made now, not inside the first check

out=$(w --version)
echo "$out" | sed 's/^/--version: /'
echo "$out" | grep -Eq '^strata [0-9]+\.[0-9]+\.[0-9]+' || bad "--version: no version line"
echo "$out" | grep -Eq '^backend ABI: [0-9]+\.[0-9]+' || bad "--version: no ABI line"
echo "$out" | grep -Eq '^  strata-cpu-avx2\.dll: cpu ' || bad "--version: the CPU module strata-cpu-avx2.dll is not loaded"

out=$(env -u STRATA_BACKEND_PATH "$WINE" "$exe" backends 2>&1 | tr -d '\r')
echo "$out" | grep -E 'executable-relative|Usable devices' | sed 's/^/backends: /'
echo "$out" | grep -Eq 'executable-relative +[A-Z]:/.*lib/strata/backends: [1-9]' || bad "backends: no module found executable-relative"
echo "$out" | grep -Eq '^Usable devices: [1-9]' || bad "backends: no usable device"

# a module that imports from a DLL that is not there: the reason names that DLL
cc=$(sed -n 's/^STRATA_MINGW_CC:[A-Z]*=//p' "$win/CMakeCache.txt")
src=$(sed -n 's/^strata_SOURCE_DIR:[A-Z]*=//p' "$win/CMakeCache.txt")
mkdir -p "$tmp/mods" "$tmp/dep"
if "$cc" -shared -o "$tmp/dep/strata_test_absent_dep.dll" "$src/tests/backend/modules/absent_dep.c" \
     -Wl,--out-implib,"$tmp/dep/libabsent.a" &&
   "$cc" -shared -I"$src/include" -o "$tmp/mods/strata-needsdep.dll" "$src/tests/backend/modules/mod_needsdep.c" \
     "$tmp/dep/libabsent.a"; then
  out=$(STRATA_BACKEND_PATH="$(winepath -w "$tmp/mods" 2>/dev/null)" "$WINE" "$exe" backends 2>&1 | tr -d '\r')
  echo "$out" | grep -A1 'strata-needsdep' | sed 's/^/missing DLL: /'
  echo "$out" | grep -q 'needs strata_test_absent_dep.dll, not found' || bad "the missing DLL is not named"
else
  bad "cannot build the test module with $cc"
fi

# a request
if w gen-model --arch qwen3moe --preset tiny --type Q8_0 --seed 1 --out "$(winepath -w "$tmp/tiny.gguf")" >/dev/null; then
  "$WINE" "$exe" run -m "$(winepath -w "$tmp/tiny.gguf")" -p hello -n 8 --temp 0 --ignore-eos --backend cpu --threads 1 \
    2>"$tmp/run.err" | tr -d '\r' >"$tmp/run.out"
  tr -d '\r' <"$tmp/run.err" | grep -q 'generated: 8 tokens' || bad "run did not generate 8 tokens: $(cat "$tmp/run.err")"
  echo "run: $(tr -d '\r' <"$tmp/run.err" | tail -n 1)"
  if [ -n "$linux" ]; then
    "$linux" run -m "$tmp/tiny.gguf" -p hello -n 8 --temp 0 --ignore-eos --backend cpu --threads 1 >"$tmp/linux.out" 2>/dev/null
    cmp -s "$tmp/run.out" "$tmp/linux.out" && echo "run: the same greedy text as the Linux build" ||
      bad "greedy text differs from the Linux build's: '$(cat "$tmp/run.out")' vs '$(cat "$tmp/linux.out")'"
  fi
else
  bad "gen-model failed"
fi

out=$(w conformance --backend cpu --quick --threads 2)
echo "$out" | tail -n 2 | sed 's/^/conformance: /'; echo
echo "$out" | grep -Eq '^[1-9][0-9]* passed, 0 failed$' || bad "conformance under wine"

[ $fail -eq 0 ] && echo "PASS: strata.exe and its CPU modules run under wine"
exit $fail
