#!/usr/bin/env bash
# CUDA against the CPU module and the scalar reference (--backend ref, double accumulation) on
# generated models (the model issue's architectures): for each architecture and weight type,
# 64 greedy tokens from the same prompt (CUDA vs CPU and vs the reference), and the logits of
# every position of a 96-token sequence (normalized error, cmp-logits) of CUDA vs CPU, CUDA vs
# ref and CPU vs ref. A case passes when CUDA's logits are within the format's limit of the
# reference and its greedy text equals the CPU module's or the reference's (the CPU module's
# 8-bit activations leave the reference on quantized models, and random models have near-tied
# tokens and router choices, so its text may differ where CUDA's equals the reference's).
# REAL (optional) is a trained model, e.g. ../shared/models/stories260K.gguf, checked the same
# way with its own vocabulary.
# Usage: bench/cuda_vs_cpu.sh STRATA CMP_LOGITS VOCAB.gguf WORKDIR [REAL.gguf]
set -euo pipefail
strata=$1 cmp=$2 vocab=$3 work=$4
mkdir -p "$work"
fail=0
toks=$(seq -s, 100 195)
# check NAME MODEL LIMIT PROMPT: one case (prints two lines; sets fail=1 when it does not pass)
check() {
  local name=$1 m=$2 limit=$3 prompt=$4 nv a b r gr cr gc ok=1 greedy greedy_ref
  nv=$("$strata" gguf "$m" | sed -n 's/.*tokenizer.ggml.tokens *\[string x \([0-9]*\)\].*/\1/p' | head -1)
  a=$("$strata" run -m "$m" --backend cuda -p "$prompt" -n 64 --temp 0 --ignore-eos 2>/dev/null)
  b=$("$strata" run -m "$m" --backend cpu -p "$prompt" -n 64 --temp 0 --ignore-eos 2>/dev/null)
  r=$("$strata" run -m "$m" --backend ref -p "$prompt" -n 64 --temp 0 --ignore-eos 2>/dev/null)
  "$strata" logits -m "$m" --backend cuda --tokens "$toks" --all --out "$work/g.f32" >/dev/null
  "$strata" logits -m "$m" --backend cpu --tokens "$toks" --all --out "$work/c.f32" >/dev/null
  "$strata" logits -m "$m" --backend ref --tokens "$toks" --all --out "$work/r.f32" >/dev/null
  gr=$("$cmp" "$work/g.f32" "$work/r.f32" "$nv" "$limit" 2>&1) || ok=0
  cr=$("$cmp" "$work/c.f32" "$work/r.f32" "$nv" "$limit" 2>&1) || true
  gc=$("$cmp" "$work/g.f32" "$work/c.f32" "$nv" "$limit" 2>&1) || true
  if [ "$a" = "$b" ]; then greedy="64 greedy tokens identical"; else greedy="greedy text differs"; fi
  if [ "$a" = "$r" ]; then greedy_ref="64 greedy tokens identical"; else greedy_ref="greedy text differs"; fi
  [ "$a" = "$b" ] || [ "$a" = "$r" ] || ok=0
  [ $ok = 1 ] || fail=1
  echo "$name: $([ $ok = 1 ] && echo ok || echo FAIL); cuda-cpu: $greedy, $(echo "$gc" | tail -1 | sed 's/, limit.*//')"
  echo "    cuda-ref: $greedy_ref, $(echo "$gr" | tail -1 | sed 's/, limit.*//'); cpu-ref: $(echo "$cr" | tail -1 | sed 's/, limit.*//')"
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
exit $fail
