#!/usr/bin/env bash
# check_version.sh STRATA VERSION COMMIT ABI [MODULE...]
#   Runs `STRATA --version` and checks each field: the version line equals VERSION, the commit
#   line equals COMMIT (what CMake detected), the ABI line equals ABI (from strata/backend.h),
#   the module count is at least 1, and each MODULE file name is listed as usable.
set -u
exe=$1 version=$2 commit=$3 abi=$4
shift 4
out=$("$exe" --version) || { echo "FAIL: '$exe --version' exited $?"; exit 1; }
printf '%s\n' "$out"
fail=0
expect() { # regex, what
  if ! printf '%s\n' "$out" | grep -Eq -- "$1"; then echo "FAIL: no line matching /$1/ ($2)"; fail=1; fi
}
expect_line() { # exact line, what
  if ! printf '%s\n' "$out" | grep -Fxq -- "$1"; then echo "FAIL: no line '$1' ($2)"; fail=1; fi
}
expect_line "strata $version" "version"
expect_line "commit: $commit" "git commit"
expect '^commit: ([0-9a-f]{7,40}(\+dirty)?|unknown)$' "commit format"
expect_line "backend ABI: $abi" "backend ABI"
expect '^modules: [1-9][0-9]* found$' "at least one module"
for m in "$@"; do
  l=$(printf '%s\n' "$out" | grep -F -- "  $m: " | head -n 1)
  case "$l" in
    "  $m: "*", ABI $abi, /"*) ;;
    *) echo "FAIL: module $m not listed as usable with ABI $abi (line: '$l')"; fail=1 ;;
  esac
done
[ $fail -eq 0 ] && echo "PASS: version, commit, ABI and modules present"
exit $fail
