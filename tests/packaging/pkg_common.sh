# Sourced by check_packages.sh and check_rpm.sh (after they set src version commit abi tmp).
# bad MESSAGE: prints FAIL and makes the script fail (its exit status is $fail).
# run_tree ROOT LABEL: from a tree unpacked from a package or archive (ROOT/bin/strata), runs
# `strata backends` (modules found executable-relative in ROOT, a usable device, no simulated
# device), `strata --version` (check_version.sh), a request (gen-model, then 8 greedy tokens on
# the CPU module, text in $tmp/LABEL.out), and checks the sonames of libstrata and the modules.
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run_tree() { # root label: run strata backends and --version from an unpacked tree
  local root=$1 label=$2 exe=$1/bin/strata
  [ -x "$exe" ] || { bad "$label: no executable $exe"; return; }
  out=$(env -u STRATA_BACKEND_PATH STRATA_LOG=error "$exe" backends 2>&1)
  rc=$?
  echo "$out" | sed "s|^|$label backends: |"
  [ $rc -eq 0 ] || bad "$label: strata backends exited $rc"
  echo "$out" | grep -Eq "executable-relative +$root/lib/strata/backends: [1-9]" ||
    bad "$label: modules not found executable-relative in $root/lib/strata/backends"
  echo "$out" | grep -Eq '^Usable devices: [1-9]' || bad "$label: no usable device"
  echo "$out" | grep -q 'strata-sim' && bad "$label: the simulated device is present"
  env -u STRATA_BACKEND_PATH STRATA_LOG=error "$src/tests/packaging/check_version.sh" "$exe" "$version" "$commit" "$abi" |
    sed "s|^|$label --version: |"
  [ "${PIPESTATUS[0]}" -eq 0 ] || bad "$label: strata --version fields"
  # a request: a generated model, 8 greedy tokens on the CPU module of the unpacked tree
  if "$exe" gen-model --arch qwen3moe --preset tiny --type Q8_0 --seed 1 --out "$tmp/$label.gguf" >/dev/null 2>&1; then
    env -u STRATA_BACKEND_PATH STRATA_LOG=error "$exe" run -m "$tmp/$label.gguf" -p hello -n 8 --temp 0 --threads 1 \
      --backend cpu >"$tmp/$label.out" 2>"$tmp/$label.err" || bad "$label: strata run exited $?: $(cat "$tmp/$label.err")"
    grep -q 'generated: 8 tokens' "$tmp/$label.err" || bad "$label: strata run did not generate 8 tokens: $(cat "$tmp/$label.err")"
    grep -q "on cpu device" "$tmp/$label.err" || bad "$label: strata run did not run on the CPU module"
    echo "$label run: $(head -n 1 "$tmp/$label.err")"
  else
    bad "$label: strata gen-model failed"
  fi
  if [ -e "$root/lib/libstrata.so.1" ]; then
    readelf -d "$root/lib/libstrata.so.1" | grep -q 'SONAME.*\[libstrata\.so\.1\]' || bad "$label: libstrata.so.1 has no soname libstrata.so.1"
  else
    bad "$label: no lib/libstrata.so.1"
  fi
  for so in "$root"/lib/strata/backends/*.so; do
    readelf -d "$so" | grep -q SONAME && bad "$label: module $(basename "$so") has a soname"
  done
}
