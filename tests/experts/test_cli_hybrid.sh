#!/usr/bin/env bash
# The expert cache through the commands: `strata run` on a simulated device gives the same
# greedy text with every expert resident, with an explicit cache, with a --vram-budget that
# leaves room for part of the experts, and with a fixed cache from `strata profile-experts`;
# the plan's table is printed first; `strata bench --json` reports expert statistics. F32 weights:
# the CPU module and the simulated device then agree to float rounding (quantized weights go
# through the CPU module's 8-bit activations, which may change a token; test_hybrid.c bounds that).
# usage: test_cli_hybrid.sh path/to/strata
set -euo pipefail
STRATA=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export STRATA_SIM=devices=1,mem=256MiB STRATA_LOG=error
fail() { echo "FAIL: $*" >&2; exit 1; }

"$STRATA" gen-model --out "$T/m.gguf" --arch qwen3moe --preset demo --type F32 --router-skew 1 >/dev/null
run() { "$STRATA" run -m "$T/m.gguf" -p "hello world" -n 32 --temp 0 --backend sim --ctx 256 "$@"; }

run >"$T/all.txt" 2>"$T/all.err"
grep -q "memory plan:" "$T/all.err" || fail "no plan table printed for the simulated device"
grep -q "all 64 experts of layers 0-3 resident" "$T/all.err" || fail "the plan should hold every expert"
if grep -q '^\[experts:' "$T/all.err"; then fail "an expert cache with every expert resident"; fi

run --expert-cache 12 >"$T/c12.txt" 2>"$T/c12.err"
cmp -s "$T/all.txt" "$T/c12.txt" || fail "--expert-cache 12 changed the greedy text"
grep -q '^\[experts: [0-9]* of 64 slots, hit rate' "$T/c12.err" || fail "no expert statistics line with a cache"

run --expert-cache 0 >"$T/c0.txt" 2>"$T/c0.err"
cmp -s "$T/all.txt" "$T/c0.txt" || fail "--expert-cache 0 changed the greedy text"
grep -q '^\[experts: 0 of 64 slots, hit rate 0.000' "$T/c0.err" || fail "0 slots must give hit rate 0"

# a budget between the fixed consumers and the whole model: the plan decides a partial cache
run --vram-budget 25MiB >"$T/b.txt" 2>"$T/b.err"
cmp -s "$T/all.txt" "$T/b.txt" || fail "--vram-budget 25MiB changed the greedy text"
grep -q "misses run on the CPU" "$T/b.err" || fail "the 25MiB plan should cache part of the experts"

printf 'hello world\nthe quick brown fox\n\none more prompt\n' >"$T/prompts.txt"
"$STRATA" profile-experts -m "$T/m.gguf" --backend sim --ctx 256 -n 8 --prompts "$T/prompts.txt" \
    --out "$T/prof.txt" 2>"$T/prof.err"
head -1 "$T/prof.txt" | grep -q "^strata-expert-profile 1 4 16$" || fail "profile header"
run --expert-cache 24 --expert-policy profile --expert-profile "$T/prof.txt" >"$T/p.txt" 2>"$T/p.err"
cmp -s "$T/all.txt" "$T/p.txt" || fail "a profile-seeded cache changed the greedy text"
grep -q ', 0 uploaded)' "$T/p.err" || fail "a fixed profile cache must admit nothing while running"

if run --expert-cache 8 --expert-policy profile >/dev/null 2>"$T/np.err"; then
    fail "--expert-policy profile without a profile must be refused"
fi
grep -q "expert-profile" "$T/np.err" || fail "the refusal should name --expert-profile"

"$STRATA" bench -m "$T/m.gguf" --backend sim -p 16 -n 8 -r 1 --parallel 2 --expert-cache 20 --json \
    >"$T/bench.json" 2>/dev/null
for k in '"experts":{"slots":' '"hit_rate":' '"belady_hit_rate":' '"bytes":{"device":' '"cpu_ms_per_token":' \
         '"experts_decode":' '"plan":{'; do
    grep -qF "$k" "$T/bench.json" || fail "bench --json lacks $k"
done
echo "expert cache CLI: all checks passed"
