#!/usr/bin/env bash
# Per-request expert statistics of `strata serve` on a simulated device: with an expert cache,
# each request's log line ends with "experts: hit H% (belady B%) of N lookups in S steps,
# D dev / H host / U upload, cpu C ms, S streamed, router sync R ms"; the numbers are checked against /metrics (a request
# alone: its lookups and hit rate are the cache's totals gained meanwhile), Belady is never below
# the real hit rate, and requests running together say they shared steps. /metrics carries a hit
# rate per layer. Without a cache (every expert resident) the line has no summary.
# usage: test_serve_request_stats.sh path/to/strata   (exit 77 when curl or python3 is missing)
set -euo pipefail
STRATA=$1
command -v curl >/dev/null && command -v python3 >/dev/null || { echo "SKIP: needs curl and python3"; exit 77; }
T=$(mktemp -d)
pid=""
stop() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  pid=""
}
cleanup() { stop; rm -rf "$T"; }
trap cleanup EXIT
export STRATA_SIM=devices=1,mem=256MiB STRATA_LOG=error
fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; cat "$T/serve.log" >&2 || true; exit 1; }

"$STRATA" gen-model --out "$T/m.gguf" --arch qwen3moe --preset demo --type F32 --router-skew 1 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start() { # extra serve options...
  "$STRATA" serve -m "$T/m.gguf" --port "$port" --backend sim --ctx 256 --parallel 2 --report-dir "$T" "$@" \
      >"$T/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "the server did not come up"
}
complete() { # prompt max_tokens
  curl -sf "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
      -d "{\"prompt\":\"$1\",\"max_tokens\":$2,\"temperature\":0}" >/dev/null || fail "no completion for '$1'"
}
# the request's log line (the front writes it after the answer: wait a little for it)
req_line() {
  for _ in $(seq 1 50); do
    grep -q "^strata serve: request $1 " "$T/serve.log" && break
    sleep 0.1
  done
  grep "^strata serve: request $1 " "$T/serve.log" || fail "no log line for request $1"
}
metric() { sed -n "s/^$1 //p" "$T/metrics.txt"; }

# --- with an expert cache of 12 of the 64 experts
start --expert-cache 12
complete "hello world" 12
curl -sf "http://127.0.0.1:$port/metrics" >"$T/metrics.txt" || fail "no /metrics"
hits=$(metric 'strata_expert_hits_total{device="0"}')
miss=$(metric 'strata_expert_misses_total{device="0"}')
up=$(metric 'strata_expert_bytes_total{device="0",tier="upload"}')
streamed=$(metric 'strata_expert_streamed_total')
line=$(req_line 1)
echo "$line"
python3 - "$line" "$hits" "$miss" "$up" "$streamed" <<'EOF' || fail "request 1's expert summary is wrong"
import re, sys
line, hits, miss, up, streamed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
m = re.search(r"experts: hit ([0-9.]+)% \(belady ([0-9.]+)%\) of (\d+) lookups in (\d+) steps, "
              r"([0-9.]+) (B|KiB|MiB|GiB) dev / ([0-9.]+) (B|KiB|MiB|GiB) host / ([0-9.]+) (B|KiB|MiB|GiB) upload, "
              r"cpu ([0-9.]+) ms, (\d+) streamed, router sync ([0-9.]+) ms", line)
if not m:
    sys.exit("no expert summary (with Belady) at the end of: " + line)
hr, bel, n, steps = float(m[1]), float(m[2]), int(m[3]), int(m[4])
unit = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
dev, host, upl = (float(m[5]) * unit[m[6]], float(m[7]) * unit[m[8]], float(m[9]) * unit[m[10]])
g = re.search(r"prompt (\d+) tokens = (\d+) reused \+ (\d+) read, (\d+) generated", line)
read, gen = int(g[3]), int(g[4])
errs = []
if not 0 <= hr <= 100: errs.append(f"hit rate {hr} outside [0, 100]")
if not hr <= bel <= 100: errs.append(f"belady {bel} below the hit rate {hr} or above 100")
# alone on the engine: its lookups are every lookup the cache counted so far
if n != hits + miss: errs.append(f"{n} lookups, /metrics counted {hits} + {miss}")
if abs(hr - 100.0 * hits / (hits + miss)) > 0.051: errs.append(f"hit rate {hr}, /metrics says {hits}/{hits + miss}")
# every forward routes each of its tokens: read prompt tokens and all generated but the last
if (read + gen - 1) == 0 or n % (read + gen - 1): errs.append(f"{n} lookups for {read + gen - 1} tokens")
if not 1 <= steps <= read + gen: errs.append(f"{steps} steps for {read} prompt + {gen} generated tokens")
if not (dev > 0 and host > 0): errs.append(f"bytes: dev {dev}, host {host} (12 of 64 experts: both tiers serve)")
if abs(upl - up) > max(0.06 * up, 1024): errs.append(f"upload {upl} B, /metrics says {up} B")
if float(m[11]) < 0: errs.append("negative cpu time")
# alone on the engine: the copy pipe's experts are every one /metrics counted
if int(m[12]) != streamed: errs.append(f"{m[12]} streamed, /metrics says {streamed}")
if errs: sys.exit("; ".join(errs) + "\n" + line)
EOF

# two requests at once: each has its summary, Belady >= hit rate, and says it shared steps
complete "the quick brown fox jumps over the lazy dog" 24 &
c1=$!
complete "once upon a time there was" 24
wait "$c1" || fail "the concurrent completion failed"
shared=0
for id in 2 3; do
  line=$(req_line "$id")
  echo "$line"
  python3 - "$line" <<'EOF' || fail "request $id's expert summary is wrong"
import re, sys
m = re.search(r"experts: hit ([0-9.]+)% \(belady ([0-9.]+)%\) of (\d+) lookups", sys.argv[1])
if not m or not (0 <= float(m[1]) <= float(m[2]) <= 100) or int(m[3]) == 0:
    sys.exit("bad or missing summary: " + sys.argv[1])
EOF
  case "$line" in *"steps shared with up to 1 other request"*) shared=$((shared + 1));; esac
done
[ "$shared" -ge 1 ] || fail "requests that ran together do not say they shared steps"

curl -sf "http://127.0.0.1:$port/metrics" >"$T/metrics.txt" || fail "no /metrics"
nl=$(grep -c '^strata_expert_hit_rate{device="0",layer="[0-9]*"} ' "$T/metrics.txt" || true)
[ "$nl" -ge 1 ] || fail "/metrics has no per-layer hit rate"
python3 - "$T/metrics.txt" <<'EOF' || fail "per-layer hit rates of /metrics are wrong"
import re, sys
t = open(sys.argv[1]).read()
c = lambda k, l: int(re.search(r'^strata_expert_%s_total\{device="0",layer="%s"\} (\d+)$' % (k, l), t, re.M)[1])
for l, v in re.findall(r'^strata_expert_hit_rate\{device="0",layer="(\d+)"\} ([0-9.]+)$', t, re.M):
    h, m = c("hits", l), c("misses", l)
    if abs(float(v) - h / (h + m)) > 1e-5:
        sys.exit(f"layer {l}: hit rate {v}, counters {h}/{h + m}")
EOF
stop

# --- every expert resident (no --expert-cache: the plan fits them all): no expert summary
start
complete "hello world" 4
line=$(req_line 1)
echo "$line"
case "$line" in *experts:*) fail "a model without an expert cache has an expert summary";; esac
grep -q "strata_expert_hits_total" <(curl -sf "http://127.0.0.1:$port/metrics") && fail "/metrics has expert lines without a cache"
echo "per-request expert statistics: all checks passed"
