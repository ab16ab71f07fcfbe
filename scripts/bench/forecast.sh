#!/usr/bin/env bash
# Forecasts, measured (never asserted), on the example's `environment` release (four
# stacks: network → cluster → GPU pools, model storage) in the AWS API emulator
# (moto), from the state a demo run leaves (`target/demo`: the registry's ledger,
# the vendor repository, the provider mirror; `scripts/demo.sh` runs first when it
# is missing). The customers of channel `stable` run the release's newest version;
# the forecast of that version plans, for each, its running version applied and the
# candidate planned on top (hooli's inputs live only on its side: skipped).
#
# Printed beside the floor: one customer's bare engine work, by hand
# (`forecast_floor.py`: per stack in order `init`, `apply` with its inputs and wired
# outputs, then `plan`), nothing of Stackpack around it. Then `stackpack forecast`
# from an empty cache with `--parallel 1` and `2` (customers per minute), and once
# more from the cache.
#
#   scripts/bench/forecast.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
demo=${STACKPACK_DEMO_DIR:-$target/demo}
if [ ! -d "$demo/registry" ] || [ ! -d "$demo/acme-infra/.stackpack/providers" ]; then
  echo "forecast.sh: no demo state in $demo: running scripts/demo.sh first (about 15 minutes)" >&2
  scripts/demo.sh > /dev/null
fi
bin=$target/debug
terraform=$(scripts/terraform-path.sh)
work=$(mktemp -d)
registry_pid=""
cleanup() {
  [ -z "$registry_pid" ] || kill "$registry_pid" 2> /dev/null || true
  "$root/scripts/moto.sh" stop "$work/moto" > /dev/null 2>&1 || true
  "$root/scripts/moto.sh" stop "$work/moto-floor" > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
seconds() { python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }

# The demo's registry, on a copy of its data (the bench sends nothing to it).
cp -r "$demo/registry" "$work/registry"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/stackpack-registry" serve --data "$work/registry" --listen "127.0.0.1:$port" > "$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.1; done
token=$("$bin/stackpack-registry" token create --data "$work/registry" --role publisher --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
endpoint=$("$root/scripts/moto.sh" start "$work/moto")
version=$("$bin/stackpack-registry" rollout status --release environment --data "$work/registry" --json | python3 -c 'import json,sys; print(max(json.load(sys.stdin), key=lambda r: r["id"])["version"])')
echo "environment@$version, customers of channel stable, emulator $endpoint" >&2

echo "floor: globex's four stacks by hand (init, apply, outputs wired, plan), in an emulator of its own…" >&2
# Its own: bucket names are global, and the forecasts create globex's too.
floor_endpoint=$("$root/scripts/moto.sh" start "$work/moto-floor")
mkdir -p "$work/floor"
floor=$(python3 scripts/bench/forecast_floor.py "$demo/acme-infra" environment globex "$terraform" \
  "$demo/acme-infra/.stackpack/providers" "$floor_endpoint" "$work/floor")
"$root/scripts/moto.sh" stop "$work/moto-floor" > /dev/null 2>&1 || true

run_forecast() { # PARALLEL COPY: wall seconds; the forecast JSON in COPY.json
  local parallel=$1 copy=$2 start
  start=$(seconds)
  (cd "$copy" && STACKPACK_REGISTRY_TOKEN=$token STACKPACK_WITNESS_ENDPOINT=$endpoint CHECKPOINT_DISABLE=1 \
    "$bin/stackpack" forecast "environment@$version" --channel stable --registry "127.0.0.1:$port/acme" \
    --insecure --no-send --json --parallel "$parallel" > "$copy.json")
  python3 -c "print(f'{$(seconds) - $start:.1f}')"
}
forecasted() { python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); print(sum(1 for c in f["customers"] if c["outcome"] not in ("skipped","not-forecast")))' "$1"; }
per_customer() { python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); s=[c["seconds"] for c in f["customers"] if c["outcome"] not in ("skipped","not-forecast")]; print(f"{sum(s)/max(len(s),1):.1f}")' "$1"; }

rows=()
for parallel in 1 2; do
  copy=$work/repo-$parallel
  git clone -q "$demo/acme-infra" "$copy"
  cp -r "$demo/acme-infra/.stackpack/providers" "$copy/.stackpack-providers"
  echo "stackpack forecast --parallel $parallel (empty cache)…" >&2
  wall=$(STACKPACK_PROVIDER_MIRROR=$copy/.stackpack-providers run_forecast "$parallel" "$copy")
  rows+=("$parallel|$wall|$(forecasted "$copy.json")|$(per_customer "$copy.json")")
done
echo "stackpack forecast again (from the cache)…" >&2
cached=$(STACKPACK_PROVIDER_MIRROR=$work/repo-2/.stackpack-providers run_forecast 2 "$work/repo-2")

printf '\n| run | wall s | customers | s per customer | customers per minute | vs floor |\n|---|---|---|---|---|---|\n'
printf '| floor: one customer by hand | %s | 1 | %s | %.2f | 1.00× |\n' "$floor" "$floor" "$(python3 -c "print(60/$floor)")"
for row in "${rows[@]}"; do
  IFS='|' read -r parallel wall n each <<< "$row"
  printf '| forecast --parallel %s | %s | %s | %s | %.2f | %.2f× per customer |\n' "$parallel" "$wall" "$n" "$each" \
    "$(python3 -c "print(60*$n/$wall)")" "$(python3 -c "print($each/$floor)")"
done
printf '| forecast again (cache) | %s | %s | 0 | – | – |\n' "$cached" "$(forecasted "$work/repo-2.json")"
