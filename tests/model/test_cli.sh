#!/usr/bin/env bash
# End-to-end checks of the model commands: gen-model for every family, tokenize, logits
# (file size, CPU vs reference), run (seeded reproducibility, statistics line), bench --json,
# and, when llama.cpp's reference tool is built, logits against llama.cpp.
# usage: test_cli.sh STRATA CMP_LOGITS [LLAMA_REF]
set -u
STRATA=$1
CMP=$2
# f32cmp A B TOL: the largest difference relative to the largest |B| over the whole files
f32cmp() { "$CMP" "$1" "$2" 0 "$3"; }
LLAMA_REF=${3:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-cli-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
check() { # message, command...
  local msg=$1; shift
  if ! "$@"; then echo "FAIL: $msg"; fail=1; fi
}
export STRATA_SIM=devices=1,mem=1GiB

for a in llama qwen2 qwen3 qwen2moe qwen3moe olmoe mixtral; do
  if [ $a = mixtral ]; then # llama with routed experts (Mixtral layout)
    check "$a: gen-model" "$STRATA" gen-model --arch llama --experts 4 --experts-used 2 --expert-ff 64 --type f32 --out "$T/$a.gguf" --seed 3
  else
    check "$a: gen-model" "$STRATA" gen-model --arch $a --type f32 --out "$T/$a.gguf" --seed 3
  fi
  [ -f "$T/$a.gguf" ] || continue
  V=$("$STRATA" tokenize -m "$T/$a.gguf" --text "hello world" | wc -w)
  check "$a: tokenize gives ids" test "$V" -ge 2
  check "$a: logits (cpu)" "$STRATA" logits -m "$T/$a.gguf" --tokens 1,2,3,40,50 --all --out "$T/$a.cpu.f32" --threads 1
  check "$a: logits (ref)" "$STRATA" logits -m "$T/$a.gguf" --tokens 1,2,3,40,50 --all --out "$T/$a.ref.f32" --backend ref
  SZ=$(stat -c %s "$T/$a.ref.f32" 2>/dev/null || echo 0)
  NV=$("$STRATA" logits -m "$T/$a.gguf" --tokens 1 --out "$T/one.f32" --backend ref 2>&1 | sed -n 's/.* x \([0-9]*\) logits.*/\1/p')
  check "$a: --all writes 5 x n_vocab floats ($SZ bytes, vocab $NV)" test "$SZ" -eq $((5 * 4 * NV))
  check "$a: cpu logits match the reference" f32cmp "$T/$a.cpu.f32" "$T/$a.ref.f32" 1e-4
  # the sim device offers the fused ops (ATTN_PREP, MOE_GATE_UP, MOE_DOWN): the fused path must
  # give the same logits as the unfused one, bit for bit (the sim's ops are the reference's)
  check "$a: logits (sim, fused)" "$STRATA" logits -m "$T/$a.gguf" --tokens 1,2,3,40,50 --all --out "$T/$a.simf.f32" --backend sim
  check "$a: logits (sim, unfused)" env STRATA_NO_FUSED=1 "$STRATA" logits -m "$T/$a.gguf" --tokens 1,2,3,40,50 --all --out "$T/$a.simu.f32" --backend sim
  check "$a: fused and unfused paths agree" cmp -s "$T/$a.simf.f32" "$T/$a.simu.f32"
  check "$a: sim logits match the reference" f32cmp "$T/$a.simf.f32" "$T/$a.ref.f32" 1e-5
  if [ -n "$LLAMA_REF" ] && [ -x "$LLAMA_REF" ]; then
    check "$a: llama.cpp loads the generated file" "$LLAMA_REF" logits -m "$T/$a.gguf" --tokens 1,2,3,40,50 --all --out "$T/$a.llama.f32"
    check "$a: logits match llama.cpp" f32cmp "$T/$a.ref.f32" "$T/$a.llama.f32" 1e-4
  fi
done

# rope scaling (YaRN) past the original context
check "yarn: gen-model" "$STRATA" gen-model --arch qwen3 --type f32 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32 --out "$T/yarn.gguf"
TOK=$(seq -s, 1 5 300)
check "yarn: logits (ref)" "$STRATA" logits -m "$T/yarn.gguf" --tokens "$TOK" --all --out "$T/yarn.ref.f32" --backend ref
check "yarn: logits (cpu)" "$STRATA" logits -m "$T/yarn.gguf" --tokens "$TOK" --all --out "$T/yarn.cpu.f32" --threads 1
check "yarn: cpu matches the reference" f32cmp "$T/yarn.cpu.f32" "$T/yarn.ref.f32" 1e-4
if [ -n "$LLAMA_REF" ] && [ -x "$LLAMA_REF" ]; then
  check "yarn: llama.cpp" "$LLAMA_REF" logits -m "$T/yarn.gguf" --tokens "$TOK" --all --out "$T/yarn.llama.f32"
  check "yarn: logits match llama.cpp" f32cmp "$T/yarn.ref.f32" "$T/yarn.llama.f32" 1e-4
fi
# KV cache types
check "kv q8_0: logits" "$STRATA" logits -m "$T/qwen3.gguf" --tokens 1,2,3,40,50 --all --out "$T/q8.f32" --kv-type q8_0 --backend ref
check "kv q8_0: close to f32" f32cmp "$T/q8.f32" "$T/qwen3.ref.f32" 5e-2
check "kv q8_0: not identical to f32" bash -c "! cmp -s '$T/q8.f32' '$T/qwen3.ref.f32'"

M="$T/qwen3moe.gguf"
"$STRATA" run -m "$M" -p "hello" -n 24 --seed 42 --threads 1 >"$T/r1.txt" 2>"$T/r1.err"
check "run exits 0" test $? -eq 0
"$STRATA" run -m "$M" -p "hello" -n 24 --seed 42 --backend ref >"$T/r2.txt" 2>/dev/null
check "run: same seed, same text on cpu and ref" cmp -s "$T/r1.txt" "$T/r2.txt"
check "run: statistics line" grep -q "prompt: [0-9]* tokens, .* tok/s | generated: 24 tokens" "$T/r1.err"
"$STRATA" run -m "$M" -p "hello" -n 24 --seed 43 --threads 1 >"$T/r3.txt" 2>/dev/null
check "run: another seed changes the text" bash -c "! cmp -s '$T/r1.txt' '$T/r3.txt'"
"$STRATA" run -m "$M" -p "hello" -n 16 --temp 0 --threads 1 >"$T/g1.txt" 2>/dev/null
"$STRATA" run -m "$M" -p "hello" -n 16 --temp 0 --backend sim >"$T/g2.txt" 2>/dev/null
check "run: greedy is the same on cpu and sim" cmp -s "$T/g1.txt" "$T/g2.txt"

"$STRATA" bench -m "$M" -p 32 -n 8 -r 1 --json --threads 1 >"$T/b.json"
check "bench --json" grep -q '"decode_tok_s":[0-9]' "$T/b.json"
check "bench reports bytes per token" grep -q '"experts":[1-9]' "$T/b.json"
"$STRATA" bench -m "$M" -p 16 -n 4 -r 1 --parallel 3 --json --threads 1 >"$T/bp.json"
check "bench --parallel" grep -q '"parallel":3,.*"decode_tok_s":[0-9]' "$T/bp.json"

# the new families (F32: the CPU module computes misses as exactly as the sim computes hits)
# on a simulated GPU: every expert resident, an expert cache of 4 slots (misses
# on the CPU module) and the static split all give the same greedy text (leading dense layers,
# shared experts, selection biases through the offload path); gpt-oss's expert biases are
# refused by offload, by name
for a in deepseek2 glm4moe; do
  check "$a: gen-model" "$STRATA" gen-model --arch $a --preset demo --type f32 --out "$T/$a.gguf" --seed 5
  "$STRATA" run -m "$T/$a.gguf" -p "hello" -n 16 --temp 0 --backend sim >"$T/$a.g0.txt" 2>/dev/null
  "$STRATA" run -m "$T/$a.gguf" -p "hello" -n 16 --temp 0 --backend sim --expert-cache 4 >"$T/$a.g1.txt" 2>/dev/null
  "$STRATA" run -m "$T/$a.gguf" -p "hello" -n 16 --temp 0 --backend sim --n-cpu-moe 2 >"$T/$a.g2.txt" 2>/dev/null
  check "$a: greedy text not empty" test -s "$T/$a.g0.txt"
  check "$a: expert cache gives the resident greedy text" cmp -s "$T/$a.g0.txt" "$T/$a.g1.txt"
  check "$a: --n-cpu-moe 2 gives the resident greedy text" cmp -s "$T/$a.g0.txt" "$T/$a.g2.txt"
  # the fixed placement's fully resident layers decode with no router sync (and still agree)
  check "$a: --n-cpu-moe 2 decodes resident layers without a sync" \
    bash -c "'$STRATA' run -m '$T/$a.gguf' -p hello -n 16 --temp 0 --backend sim --n-cpu-moe 2 2>&1 >/dev/null | grep -Eq ', [1-9][0-9]* layer steps without a router sync'"
done
check "gpt-oss: gen-model" "$STRATA" gen-model --arch gpt-oss --preset demo --type q8_0 --out "$T/oss.gguf"
check "gpt-oss: offload refused by name" bash -c "! '$STRATA' run -m '$T/oss.gguf' -p x -n 2 --backend sim --expert-cache 4 2>'$T/e.txt' && grep -q 'expert biases' '$T/e.txt'"
check "gguf --check of a generated model" bash -c "'$STRATA' gguf --check '$T/oss.gguf' | grep -q 'verdict: Strata loads'"

check "refusal: unsupported arch" bash -c "! '$STRATA' gen-model --arch mamba --out '$T/x.gguf' 2>'$T/e.txt' && grep -q mamba '$T/e.txt'"
check "refusal: a missing model" bash -c "! '$STRATA' run -m '$T/none.gguf' -p x 2>/dev/null"
exit $fail
