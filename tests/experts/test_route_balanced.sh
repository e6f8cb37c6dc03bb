#!/usr/bin/env bash
# gen-model's balanced router reaches the statistics of a trained router on a mixed text
# (tests/data/mixed-text.txt, about 2,200 tokens of prose, code, numbers and several scripts), as
# `strata profile-experts` measures them: every (layer, expert) pair used, the top half of the
# pairs at most 70% of the uses, adjacent tokens sharing at most 30% of their experts. The skewed
# router must miss them (the check can fail).
# usage: test_route_balanced.sh path/to/strata path/to/mixed-text.txt
set -euo pipefail
STRATA=$1 TEXT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export STRATA_LOG=error
fail() { echo "FAIL: $*" >&2; exit 1; }

# stats ROUTER: prints "used total top overlap" of a small qwen3moe with that router
stats() {
  "$STRATA" gen-model --out "$T/$1.gguf" --arch qwen3moe --layers 8 --embd 256 --heads 4 --kv-heads 2 \
    --head-dim 64 --ff 512 --experts 32 --experts-used 4 --expert-ff 64 --type Q8_0 --router "$1" >/dev/null
  "$STRATA" profile-experts -m "$T/$1.gguf" --prompts "$TEXT" -n 0 --backend cpu 2>"$T/$1.err" >/dev/null ||
    { cat "$T/$1.err" >&2; fail "profile-experts on the $1 model"; }
  grep '^routing' "$T/$1.err" >&2
  sed -n 's/^routing: \([0-9]*\) tokens; \([0-9]*\) of \([0-9]*\) (layer, expert) pairs used; the top half of the pairs took \([0-9.]*\)% of the uses; adjacent tokens share \([0-9.]*\)%.*/\1 \2 \3 \4 \5/p' "$T/$1.err"
}

read -r tok used total top ovl <<<"$(stats balanced)"
[ -n "${ovl:-}" ] || fail "no routing statistics line from profile-experts"
[ "$tok" -ge 1000 ] || fail "the mixed text gave only $tok tokens"
[ "$used" = "$total" ] || fail "balanced router: $used of $total pairs used"
awk -v t="$top" 'BEGIN { exit !(t <= 70.0) }' || fail "balanced router: top half took $top% (> 70%)"
awk -v o="$ovl" 'BEGIN { exit !(o <= 30.0) }' || fail "balanced router: adjacent overlap $ovl% (> 30%)"

read -r _ used total top ovl <<<"$(stats skewed)"
if [ "$used" = "$total" ] && awk -v t="$top" -v o="$ovl" 'BEGIN { exit !(t <= 70.0 && o <= 30.0) }'; then
  fail "the skewed router passed the balanced criteria: the check does not discriminate"
fi
echo "route_balanced: ok"
