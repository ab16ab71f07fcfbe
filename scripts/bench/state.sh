#!/usr/bin/env bash
# Remote state and preflight, measured (never asserted), with real Terraform and the
# real AWS provider against the AWS API emulator (moto), on the example's data plane
# (36 resources):
#
#   - plan (first: the engine's `init` included), apply, and plan again (nothing to
#     change) with the state in a bucket of the account (`init --backend s3`, the
#     bucket in the emulator's S3, locked with `use_lockfile`) beside the `local`
#     backend in the runner's home: the difference is what remote state costs;
#   - `stackpack-runner preflight` alone beside the plan that follows the apply (the
#     plan runs the same checks too, on what it creates).
#
# Each run starts from an emptied emulator and fresh runner homes; the two backends
# run in turns (local, s3; s3, local; ...) so that noise hits both alike; figures
# are medians. The last lines (`median STEP BACKEND SECONDS`) are what
# scripts/bench/suite.py reads.
#
#   scripts/bench/state.sh                    # 3 runs, debug binaries
#   RUNS=1 scripts/bench/state.sh
#   BIN_DIR=target/release scripts/bench/state.sh   # binaries already built
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
PROFILE=${PROFILE:-debug}
RUNS=${RUNS:-3}
scripts/install-test-deps.sh > /dev/null
source scripts/bench/common.sh
bin=$(runner_bins)
terraform=$(scripts/terraform-path.sh)
export CHECKPOINT_DISABLE=1
work=$(mktemp -d)
moto_dir=$work/moto
trap '"$root/scripts/moto.sh" stop "$moto_dir" > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(now)"; }

cp -r examples/acme-infra "$work/repo"
cd "$work/repo"
printf '.stackpack/\n' > .gitignore
"$root/scripts/provider-mirror.sh" .stackpack/providers 3.39.0 > /dev/null
git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm bench
"$bin/stackpack" keygen --out "$work/vendor" > /dev/null 2>&1
version=$("$bin/stackpack" build --key "$work/vendor.key" --branch main --json 2> "$work/build.log" \
  | python3 -c 'import json,sys; print([s["version"] for s in json.load(sys.stdin)["stacks"] if s["stack"] == "data-plane"][0])') \
  || { cat "$work/build.log" >&2; exit 1; }

url=$("$root/scripts/moto.sh" start "$moto_dir")
export TF_VAR_aws_endpoint=$url AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
inputs=customers/globex/data-plane.tfvars
times=$work/times

# One run of BACKEND (local or s3) in a fresh home on an emptied emulator.
measure() {
  local backend=$1 run=$2 home=$work/runner-$1-$2 start
  local log=$work/$backend-$run.log
  "$root/scripts/moto.sh" reset "$moto_dir"
  runner() { "$bin/stackpack-runner" --home "$home" "$@"; }
  if [ "$backend" = s3 ]; then
    runner init --customer globex --engine-path "$terraform" \
      --backend s3 --bucket globex-tf-state --create-bucket --s3-endpoint "$url" > /dev/null 2>> "$log"
  else
    runner init --customer globex --engine-path "$terraform" > /dev/null 2>> "$log"
  fi
  runner trust add "$work/vendor.pub" > /dev/null 2>> "$log"
  runner import .stackpack/bundles > /dev/null 2>> "$log"
  start=$(now); runner plan "data-plane@$version" --inputs "$inputs" --quiet > /dev/null 2>> "$log"
  echo "plan-first $backend $(since "$start")" >> "$times"
  start=$(now); runner apply "data-plane@$version" --inputs "$inputs" --yes --quiet > /dev/null 2>> "$log"
  echo "apply $backend $(since "$start")" >> "$times"
  start=$(now); runner plan "data-plane@$version" --inputs "$inputs" --quiet > /dev/null 2>> "$log"
  echo "plan-unchanged $backend $(since "$start")" >> "$times"
  start=$(now); runner preflight "data-plane@$version" --inputs "$inputs" > /dev/null 2>> "$log"
  echo "preflight $backend $(since "$start")" >> "$times"
  rm -rf "$home"
}

echo "remote state and preflight: data-plane@$version, 36 resources ($PROFILE binaries, $(nproc) cores, $RUNS run(s) each)"
for run in $(seq 1 "$RUNS"); do
  if [ $((run % 2)) -eq 1 ]; then order="local s3"; else order="s3 local"; fi
  for backend in $order; do
    measure "$backend" "$run" || { echo "state.sh: the $backend run $run failed; its log:" >&2; cat "$work/$backend-$run.log" >&2; exit 1; }
  done
done

python3 - "$times" <<'PY'
import collections, statistics, sys
seen = collections.defaultdict(list)
for line in open(sys.argv[1]):
    step, backend, seconds = line.split()
    seen[(step, backend)].append(float(seconds))
median = {key: statistics.median(values) for key, values in seen.items()}
names = {
    "plan-first": "plan, first (engine init included)",
    "apply": "apply (36 resources created)",
    "plan-unchanged": "plan after the apply (nothing to change)",
    "preflight": "preflight alone",
}
print(f"{'':44} {'local':>9} {'s3':>9} {'s3 overhead':>14}")
for step, name in names.items():
    local, s3 = median[(step, "local")], median[(step, "s3")]
    print(f"{name:44} {local:8.2f}s {s3:8.2f}s {s3 - local:+8.2f}s {100 * (s3 - local) / local:+4.0f}%")
plan = median[("plan-unchanged", "local")]
pre = median[("preflight", "local")]
print(f"preflight alone is {pre:.2f} s beside {plan:.2f} s for the plan after the apply ({100 * pre / plan:.0f}% of it)")
for (step, backend), value in sorted(median.items()):
    print(f"median {step} {backend} {value:.3f}")
PY
