#!/usr/bin/env bash
# spdx.sh [--check] [--license ID]
#   Puts "/* SPDX-License-Identifier: <ID> */" as the first line of every git-tracked
#   .c/.h/.cu/.cuh file that has no SPDX-License-Identifier in its first 5 lines.
#   Idempotent: a second run changes nothing.
#   --check    change nothing; list the files lacking the line; exit 1 when any does.
#   --license  the identifier (default Apache-2.0, the licence in LICENSE).
# Run from anywhere inside the work tree; only tracked files are touched.
set -euo pipefail

check=0
id=Apache-2.0
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1 ;;
    --license) shift; id="${1:?--license needs an identifier}" ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "spdx.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
case "$id" in
  *[!A-Za-z0-9.+-]*|"") echo "spdx.sh: '$id' is not an SPDX identifier" >&2; exit 2 ;;
esac

top=$(git rev-parse --show-toplevel)
cd "$top"
line="/* SPDX-License-Identifier: $id */"
missing=0
changed=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue  # deleted in the work tree
  if head -n 5 -- "$f" | grep -q 'SPDX-License-Identifier:'; then
    continue
  fi
  missing=$((missing + 1))
  if [ $check -eq 1 ]; then
    echo "$f"
    continue
  fi
  tmp=$(mktemp "${f}.spdx.XXXXXX")
  { printf '%s\n' "$line"; cat -- "$f"; } > "$tmp"
  chmod --reference="$f" "$tmp"
  mv -- "$tmp" "$f"
  changed=$((changed + 1))
done < <(git ls-files -z -- '*.c' '*.h' '*.cu' '*.cuh')

if [ $check -eq 1 ]; then
  if [ $missing -gt 0 ]; then
    echo "spdx.sh: $missing file(s) lack an SPDX-License-Identifier line" >&2
    exit 1
  fi
  echo "spdx.sh: every tracked C/CUDA source has an SPDX-License-Identifier line"
  exit 0
fi
echo "spdx.sh: added the line to $changed file(s)"
