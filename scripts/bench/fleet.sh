#!/usr/bin/env bash
# Fleet benchmark (issue 12): a registry seeded with CUSTOMERS × STACKS × VERSIONS
# (10,000 × 30 × 20 by default) and a history of applies, failures, rollbacks, drift
# and prereleases, written through the registry's own functions; then p50 and p99 of
# every support query through the HTTP API, and of the support pages with a filter,
# printed beside the figures issue 12 measured before this work.
#
#   scripts/bench/fleet.sh                     # 10,000 × 30 × 20
#   CUSTOMERS=1000 scripts/bench/fleet.sh      # a smaller fleet
#   FLEET_DATA=/tmp/fleet scripts/bench/fleet.sh   # keep (and reuse) the seeded data
#   REGISTRY=/old/stackpack-registry FLEET_DATA=/tmp/fleet-v4 scripts/bench/fleet.sh
#                                              # the same queries against another build
#
# Every list answer is one page (`limit`, 500 by default); the `after=` rows ask for
# a page in the middle of the fleet. The last section measures `/v2/` manifest GETs
# idle and while 4 clients loop on support queries (LOAD_CLIENTS, LOAD_GETS).
#
# Figures are printed, never asserted.

set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
CUSTOMERS=${CUSTOMERS:-10000}
STACKS=${STACKS:-30}
VERSIONS=${VERSIONS:-20}
ROUNDS=${ROUNDS:-30}
# Builds that answer the whole fleet at once (hundreds of megabytes) take seconds a
# round: WHOLE_ROUNDS=1 for them. Paged answers are one page and take ROUNDS.
WHOLE_ROUNDS=${WHOLE_ROUNDS:-$ROUNDS}

echo "building stackpack-registry and fleetbench (release)…" >&2
(cd "$ROOT" && cargo build --release --quiet -p stackpack-registry --bin stackpack-registry --example fleetbench)
REGISTRY=${REGISTRY:-$CARGO_TARGET_DIR/release/stackpack-registry}
BENCH=$CARGO_TARGET_DIR/release/examples/fleetbench
LOAD_CLIENTS=${LOAD_CLIENTS:-4}
LOAD_GETS=${LOAD_GETS:-2000}
# `queries`, `adoption`, `load`, `indexes`, or several: what to measure. `adoption`
# times adoption alone (one stack per day and per week, every stack),
# ADOPTION_ROUNDS rounds, for comparing builds quickly (`SECTIONS=adoption
# REGISTRY=…`); `indexes` only issue 29's index pages and search (part of
# `queries`).
SECTIONS=${SECTIONS:-queries adoption load}
ADOPTION_ROUNDS=${ADOPTION_ROUNDS:-$ROUNDS}

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  [ -z "$SERVER_PID" ] || kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

DATA=${FLEET_DATA:-$WORK/data}
if [ ! -f "$DATA/registry.db" ]; then
  "$REGISTRY" init --data "$DATA" >/dev/null
  echo "seeding $CUSTOMERS customers × $STACKS stacks × $VERSIONS versions…" >&2
  "$BENCH" seed "$DATA" "$CUSTOMERS" "$STACKS" "$VERSIONS"
fi
echo "registry.db: $(du -h "$DATA/registry.db" | cut -f1)" >&2

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
TOKEN=$("$REGISTRY" token create --role support --data "$DATA")
PUBLISHER=$("$REGISTRY" token create --role publisher --data "$DATA")
"$REGISTRY" serve --data "$DATA" --listen "127.0.0.1:$PORT" 2>/dev/null &
SERVER_PID=$!
for _ in $(seq 100); do curl -fs "$URL/healthz" >/dev/null && break; sleep 0.1; done

RESULTS=$WORK/results
touch "$RESULTS" "$WORK/load"
# Issue 29's index pages and search: who runs a version, the stacks index, a stack.
INDEX_PAGES=(
  "/ui/customers"
  "/ui/customers?q=customer-0004"
  "/ui/customers?q=1.19.0"
  "/ui/customers?q=stack-07"
  "/ui/stacks"
  "/ui/stacks/stack-07"
  "/ui/releases"
)
[[ " $SECTIONS " != *" queries "* ]] || {
  "$BENCH" measure "$URL" "$TOKEN" "$ROUNDS" \
    "/api/v1/fleet?stack=stack-07&behind=true" \
    "/api/v1/fleet?customer=customer-00042" \
    "/api/v1/fleet?prerelease=true&environment=production" \
    "/api/v1/fleet?drifted=true" \
    "/api/v1/fleet?failed=true" \
    "/api/v1/fleet?silent=true" \
    "/api/v1/fleet?stack=stack-07&below=1.16.0" \
    "/api/v1/fleet?module=network&moduleBelow=1.3.0" \
    "/api/v1/fleet?after=customer-05000/stack-12" \
    "/api/v1/fleet?silent=true&after=customer-05000/" \
    "/api/v1/support/versions?after=customer-05000/stack-12" \
    "/api/v1/customers/customer-00042" \
    "/api/v1/customers/customer-00042/history" \
    "/api/v1/adoption?stack=stack-07" \
    "/api/v1/customers"
  "$BENCH" measure "$URL" "$TOKEN" "$WHOLE_ROUNDS" \
    "/api/v1/fleet" \
    "/api/v1/fleet?limit=2000" \
    "/api/v1/support/versions" \
    "/api/v1/support/behind" \
    "/api/v1/support/prerelease" \
    "/api/v1/support/drifted"
  "$BENCH" page "$URL" "$TOKEN" "$ROUNDS" \
    "/ui?stack=stack-07&behind=true" \
    "/ui/customers/customer-00042" \
    "/ui/stacks/stack-07/1.19.0" \
    "${INDEX_PAGES[@]}"
} >"$RESULTS"
[[ " $SECTIONS " != *" indexes "* ]] || "$BENCH" page "$URL" "$TOKEN" "$ROUNDS" \
  "${INDEX_PAGES[@]}" >>"$RESULTS"
[[ " $SECTIONS " != *" adoption "* ]] || "$BENCH" measure "$URL" "$TOKEN" "$ADOPTION_ROUNDS" \
  "/api/v1/adoption?stack=stack-07&bucket=day" \
  "/api/v1/adoption?stack=stack-07&bucket=week" \
  "/api/v1/adoption?bucket=day" >>"$RESULTS"
[[ " $SECTIONS " != *" load "* ]] || "$BENCH" load "$URL" "$TOKEN" "$PUBLISHER" "$LOAD_GETS" "$LOAD_CLIENTS" \
  "/api/v1/fleet?prerelease=true&environment=production" \
  "/api/v1/fleet?silent=true" \
  "/api/v1/support/versions" \
  "/api/v1/fleet?stack=stack-07&behind=true" \
  "/api/v1/fleet" >"$WORK/load"

# Issue 12's figures before this work (10,000 customers, 14,334 receipts).
baseline() {
  case "$1" in
    /api/v1/support/versions) echo "128 / 156" ;;
    /api/v1/support/behind | /api/v1/support/drifted | /api/v1/support/prerelease) echo "– / 122–170" ;;
    /api/v1/customers/customer-00042) echo "65 (one customer)" ;;
    /api/v1/adoption?stack=stack-07*) echo "20 / 79 (v5, replaying every change)" ;;
    *) echo "–" ;;
  esac
}
{
  printf "query\tp50 ms\tp99 ms\tbytes\tbefore (p50 / p99 ms)\n"
  while read -r path p50 p99 bytes; do
    printf "%s\t%s\t%s\t%s\t%s\n" "$path" "$p50" "$p99" "$bytes" "$(baseline "$path")"
  done <"$RESULTS"
} | column -t -s $'\t'
echo
{
  printf "while\tp50 ms\tp99 ms\tsupport answers/s\n"
  tr ' ' '\t' <"$WORK/load"
} | column -t -s $'\t'
