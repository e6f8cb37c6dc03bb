#!/usr/bin/env bash
# `strata run` over two simulated devices (STRATA_SIM): the split's start-up table and the time
# per device, and the text of a single device (--split-mode none); -ngl 1 puts three of the four
# layers on the CPU module, with the same text. Usage: test_split_cli.sh STRATA MODEL_PATH
set -u
S=$1 model=$2
fail() { echo "FAIL: $*"; exit 1; }
"$S" gen-model --out "$model" --arch qwen3moe --preset tiny --layers 4 >/dev/null || fail "gen-model"
run() { "$S" run -m "$model" --backend sim -p Hello -n 24 --temp 0 "$@"; }
one=$(run --split-mode none 2>/dev/null) || fail "single device"
two=$(run 2>"$model.err") || { cat "$model.err"; fail "split over two devices"; }
grep -q 'layer split over 2 devices' "$model.err" || fail "no start-up table: $(cat "$model.err")"
grep -Eq '^  sim0 .* 0-1 ' "$model.err" && grep -Eq '^  sim1 .* 2-3 ' "$model.err" || fail "layers: $(cat "$model.err")"
grep -Eq 'time per device: sim0 [0-9.]+ ms, sim1 [0-9.]+ ms' "$model.err" || fail "no time per device"
[ "$one" = "$two" ] || fail "the split's text differs: '$two' vs '$one'"
cpu=$(run -ngl 1 2>"$model.err") || { cat "$model.err"; fail "-ngl 1"; }
grep -Eq '^  cpu0 .* 0-2 ' "$model.err" && grep -Eq '^  sim0 .* 3-3 ' "$model.err" || fail "-ngl 1 layers: $(cat "$model.err")"
[ "$one" = "$cpu" ] || fail "-ngl 1 text differs: '$cpu' vs '$one'"
rm -f "$model" "$model.err"
echo "model.split_cli: the split's text equals one device's (2 sim devices; CPU + sim with -ngl 1)"
