# Sourced by the benchmarks that compare at equal measured VRAM (offload_vs_llama.sh,
# split_vs_llama.sh): py, smi (the GPU's used MiB) and `measured CMD...`, which runs CMD with
# stdout in $T/out and stderr in $T/err while sampling the GPU's memory every 0.1 s, and writes
# the peak MiB to $T/peak. Set BENCH_NAME to prefix its failure lines; $T is made here.
py() { python3 -c "$1" "${@:2}"; }
smi() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | head -1; }
T=$(mktemp -d)
measured() {
  ( while :; do smi >>"$T/smi"; sleep 0.1; done ) & local sp=$!
  : >"$T/smi"
  local rc=0
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  kill $sp; wait $sp 2>/dev/null || true
  sort -n "$T/smi" | tail -1 >"$T/peak"
  [ $rc = 0 ] || { echo "${BENCH_NAME:-bench}: failed ($rc): $*" >&2; tail -5 "$T/err" >&2; }
  return $rc
}
