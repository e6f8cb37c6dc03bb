#!/usr/bin/env bash
# `strata plan --load` loads the way run, bench and serve do, cached plans included: on a
# simulated device (exact memory) a plan with an expert cache (asked, and left by a budget) is
# loaded with the cache, one forward runs, and the table of what each consumer took is within
# the plan, with the device's taken memory equal to the plan's allocation; an all-resident plan
# too; options the commands do not have are refused with --load.
# usage: test_plan_load.sh path/to/strata   (exit 77 when python3 is missing)
set -euo pipefail
STRATA=$1
command -v python3 >/dev/null || { echo "SKIP: needs python3"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export STRATA_SIM=devices=1,mem=64MiB STRATA_LOG=error
fail() { echo "FAIL: $*" >&2; cat "$T/out.txt" "$T/err.txt" >&2 2>/dev/null || true; exit 1; }
"$STRATA" gen-model --out "$T/m.gguf" --arch qwen3moe --preset demo --type F32 --router-skew 1 >/dev/null

check() { # expected_slots ("all" = every expert resident, "any" = a cache of some slots) plan options...
  local want=$1
  shift
  "$STRATA" plan -m "$T/m.gguf" --backend sim --parallel 2 --ctx 256 --load "$@" >"$T/out.txt" 2>"$T/err.txt" ||
    fail "plan $* --load: exit $?"
  python3 - "$T/out.txt" "$want" <<'PY' || fail "plan $*: the load report is wrong"
import re, sys
t, want = open(sys.argv[1]).read(), sys.argv[2]
errs = []
if "refuses" in t or "checks all-resident plans only" in t: errs.append("refused")
rows = re.findall(r"^  (\w+) +([0-9.]+|-) +([0-9.]+) +([0-9.]+)( +OVER THE PLAN)?$", t, re.M)
names = [r[0] for r in rows]
for need in ("weights", "kv", "work", "logits", "expert_table", "expert_cache", "allocated"):
    if need not in names: errs.append(f"no row {need}")
for name, mine, plan, used, over in rows:
    if over or float(used) > float(plan): errs.append(f"{name}: used {used} MiB over the plan's {plan}")
m = re.search(r"device: ([0-9.]+) MiB taken since the probe \(the loaded plan: ([0-9.]+) MiB allocated \+ ([0-9.]+) MiB runtime\)", t)
if not m: errs.append("no device line")
elif abs(float(m[1]) - float(m[2])) > 0.05: errs.append(f"the device gave {m[1]} MiB, the plan allocates {m[2]}")
if not re.search(r"^loaded inside the plan: the model took [0-9.]+ MiB of the [0-9.]+ MiB planned for it; one forward ran \(argmax \d+\)$", t, re.M):
    errs.append("no forward line")
x = re.search(r"experts: a cache of (\d+) of (\d+) experts and (\d+) staging slots", t)
if want == "all":
    if x or "every expert resident" not in t: errs.append("expected every expert resident")
elif not x: errs.append("expected an expert cache")
else:
    slots, total, stage = int(x[1]), int(x[2]), int(x[3])
    if not 0 < slots < total: errs.append(f"cache of {slots} of {total}")
    if want != "any" and slots + stage != int(want): errs.append(f"{slots} + {stage} staging slots, asked {want}")
if errs: sys.exit("; ".join(errs))
PY
  echo "ok: plan $* --load ($(grep -E '^  experts:' "$T/out.txt"))"
}
check 12 --expert-cache 12
check any --vram-budget 20MiB
check all
# the commands have no --extra (nor --verify-window, --draft-bytes, --layers, --runtime-overhead)
set +e
"$STRATA" plan -m "$T/m.gguf" --backend sim --extra late:0:1MiB --load >"$T/out.txt" 2>"$T/err.txt"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "leave them out with --load" "$T/err.txt" || fail "--extra with --load: exit $rc"
echo "plan --load through the commands' path: all checks passed"
