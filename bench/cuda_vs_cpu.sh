#!/usr/bin/env bash
# CUDA against the CPU module and the scalar reference (--backend ref, double accumulation) on
# generated models (the model issue's architectures). For each architecture and weight type:
# - 64 greedy tokens from the same prompt on CUDA, on the CPU module and on the reference;
# - the logits of every position of a 96-token sequence on the decode path (`-b 8`: steps of
#   8 tokens, the GEMVs that multiply 8-bit activations) of CUDA against the CPU module, within
#   DEC_LIMIT (default 1e-3; normalized error, cmp-logits);
# - the same sequence in one prefill step (CUDA's tensor-core tiles, F16 activations) against
#   the reference, within the format's limit; the CPU module's distance from the reference too.
# A case passes when CUDA's greedy text equals the CPU module's and its decode-path logits are
# within DEC_LIMIT of the CPU module's (the CUDA issue's proof); the prefill comparison with the
# reference is reported, and counted at the end, but does not fail a case (F16 activations can
# flip a near-tied router choice of a random router, see bench/results). Both modules quantize decode activations the same way (backends/cuda/cuda_gemv.cuh),
# so they differ by float summation order only; the reference does not quantize activations, so
# its greedy text may part from both on these random models (near-tied tokens and router
# choices) and is reported, not required.
# REAL (optional) is a trained model, e.g. ../shared/models/stories260K.gguf, checked the same
# way with its own vocabulary.
# Usage: bench/cuda_vs_cpu.sh STRATA CMP_LOGITS VOCAB.gguf WORKDIR [REAL.gguf]
set -euo pipefail
strata=$1 cmp=$2 vocab=$3 work=$4
dec_limit=${DEC_LIMIT:-1e-3}
mkdir -p "$work"
fail=0 n_ok=0 n_all=0 n_pre=0
toks=$(seq -s, 100 195)
# check NAME MODEL LIMIT PROMPT: one case (prints two lines; sets fail=1 when it does not pass)
check() {
  local name=$1 m=$2 limit=$3 prompt=$4 nv a b r gr cr gc ok=1 greedy greedy_ref
  nv=$("$strata" gguf "$m" | sed -n 's/.*tokenizer.ggml.tokens *\[string x \([0-9]*\)\].*/\1/p' | head -1)
  a=$("$strata" run -m "$m" --backend cuda -p "$prompt" -n 64 --temp 0 --ignore-eos 2>/dev/null)
  b=$("$strata" run -m "$m" --backend cpu -p "$prompt" -n 64 --temp 0 --ignore-eos 2>/dev/null)
  r=$("$strata" run -m "$m" --backend ref -p "$prompt" -n 64 --temp 0 --ignore-eos 2>/dev/null)
  "$strata" logits -m "$m" --backend cuda --tokens "$toks" --all --out "$work/g.f32" >/dev/null 2>&1
  "$strata" logits -m "$m" --backend cpu --tokens "$toks" --all --out "$work/c.f32" >/dev/null 2>&1
  "$strata" logits -m "$m" --backend ref --tokens "$toks" --all --out "$work/r.f32" >/dev/null 2>&1
  "$strata" logits -m "$m" --backend cuda -b 8 --tokens "$toks" --all --out "$work/g8.f32" >/dev/null 2>&1
  "$strata" logits -m "$m" --backend cpu -b 8 --tokens "$toks" --all --out "$work/c8.f32" >/dev/null 2>&1
  local pre="within the limit"
  gr=$("$cmp" "$work/g.f32" "$work/r.f32" "$nv" "$limit" 2>&1) || { pre="OUTSIDE the limit"; n_pre=$((n_pre + 1)); }
  cr=$("$cmp" "$work/c.f32" "$work/r.f32" "$nv" "$limit" 2>&1) || true
  gc=$("$cmp" "$work/g8.f32" "$work/c8.f32" "$nv" "$dec_limit" 2>&1) || ok=0
  if [ "$a" = "$b" ]; then greedy="64 greedy tokens identical"; else greedy="greedy text DIFFERS"; ok=0; fi
  if [ "$a" = "$r" ]; then greedy_ref="64 greedy tokens identical"; else greedy_ref="greedy text differs"; fi
  [ $ok = 1 ] || fail=1
  n_all=$((n_all + 1)); [ $ok = 1 ] && n_ok=$((n_ok + 1))
  echo "$name: $([ $ok = 1 ] && echo ok || echo FAIL); cuda-cpu: $greedy, decode path $(echo "$gc" | tail -1 | sed 's/, limit.*//')"
  echo "    prefill cuda-ref: $(echo "$gr" | tail -1 | sed 's/, limit.*//') ($pre $limit); cpu-ref: $(echo "$cr" | tail -1 | sed 's/, limit.*//'); greedy cuda-ref: $greedy_ref"
}
if [ -n "${5:-}" ]; then
  check "$(basename "$5")" "$5" 1e-2 "Once upon a time"
fi
# the tiny preset of every architecture, plus a qwen3moe with head dim 128 and 512-wide rows
# (the shapes of the tensor-core prefill and decode attention paths)
for arch in llama qwen2 qwen3 qwen2moe qwen3moe olmoe qwen3moe-hd128; do
  for type in F16 Q8_0 Q4_K Q6_K; do
    m="$work/$arch-$type.gguf"
    shape=(--arch "$arch" --preset tiny)
    [ "$arch" = qwen3moe-hd128 ] && shape=(--arch qwen3moe --preset tiny --layers 2 --embd 512 --heads 8 --kv-heads 2 --head-dim 128 --experts 16 --experts-used 4 --expert-ff 256)
    "$strata" gen-model "${shape[@]}" --type "$type" --vocab-from "$vocab" --seed 7 --router-skew 1 --out "$m" >/dev/null
    limit=5e-2; [ "$type" = F16 ] && limit=1e-2
    check "$arch $type" "$m" "$limit" "The quick brown fox"
  done
done
echo "$n_ok of $n_all cases pass; prefill logits outside the reference limit in $n_pre"
exit $fail
