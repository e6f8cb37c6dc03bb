#!/usr/bin/env bash
# check_installed.sh BUILD_DIR EXAMPLE.c MODEL.gguf GREEDY.txt CC
#   Installs the build into a temporary prefix, builds the example as an outside project would
#   (pkg-config strata from that prefix only), once against libstrata.so and once against
#   libstrata.a, and runs both on MODEL: each must find the CPU module by itself and print the
#   same greedy text as `strata run` (GREEDY.txt). The static program must hold no global st_*
#   symbol (the library's internals stay local).
set -u
build=$1 example=$2 model=$3 greedy=$4 cc=$5
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cmake --install "$build" --prefix "$d/p" >/dev/null || { echo "FAIL: cmake --install"; exit 1; }
export PKG_CONFIG_PATH="$d/p/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "pkg-config strata: $(pkg-config --modversion strata) | $(pkg-config --cflags --libs strata)"
pkg-config --exists strata || { echo "FAIL: no strata.pc in $d/p/lib/pkgconfig"; exit 1; }
[ -f "$d/p/include/strata/strata.h" ] || bad "no installed strata/strata.h"
# shared: the soname is what the program records
"$cc" -std=c11 -Wall -Wextra -Werror "$example" $(pkg-config --cflags --libs strata) -Wl,-rpath,"$d/p/lib" \
  -o "$d/p/bin/gen-shared" || bad "building against libstrata.so"
readelf -d "$d/p/bin/gen-shared" | grep -q 'NEEDED.*\[libstrata\.so\.1\]' || bad "gen-shared does not record libstrata.so.1"
# static: the archive and its private dependencies
libs=$(pkg-config --static --libs-only-l strata | sed 's/-lstrata\b//')
"$cc" -std=c11 -Wall -Wextra -Werror "$example" $(pkg-config --cflags strata) -L"$d/p/lib" -l:libstrata.a $libs \
  -o "$d/p/bin/gen-static" || bad "building against libstrata.a"
readelf -d "$d/p/bin/gen-static" 2>/dev/null | grep -q 'libstrata' && bad "gen-static links libstrata dynamically"
leaked=$(nm -g --defined-only "$d/p/bin/gen-static" 2>/dev/null | awk '$3 ~ /^st_/' | head -n 3)
[ -z "$leaked" ] || bad "libstrata.a exports internal symbols: $leaked"
for kind in shared static; do
  exe="$d/p/bin/gen-$kind"
  [ -x "$exe" ] || continue
  env -u STRATA_BACKEND_PATH "$exe" -m "$model" -p hello -n 8 --temp 0 --ignore-eos --backend cpu --threads 1 \
    >"$d/$kind.out" 2>"$d/$kind.err" || { bad "gen-$kind exited $?: $(cat "$d/$kind.err")"; continue; }
  echo "gen-$kind: $(tail -n 1 "$d/$kind.err")"
  cmp -s "$d/$kind.out" "$greedy" || bad "gen-$kind's text differs from strata run's: '$(cat "$d/$kind.out")' vs '$(cat "$greedy")'"
  grep -q 'generated: 8 tokens' "$d/$kind.err" || bad "gen-$kind did not generate 8 tokens"
done
[ $fail -eq 0 ] && echo "PASS: an outside program builds against the installed libstrata (shared and static) and generates"
exit $fail
