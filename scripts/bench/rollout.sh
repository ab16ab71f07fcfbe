#!/usr/bin/env bash
# Rollout benchmark (issue 25), two parts, each printed beside a baseline:
#
# 1. The assignment poll of a fleet: CUSTOMERS (10,000) customers in channel `stable`
#    (waves canary 1 %, early 9 %, general 90 %), each with its own token, seeded
#    through the registry's own functions; release `platform@1.0.0` pushed and
#    promoted over HTTP, the canary and early runners' succeeded receipts posted, so
#    the general wave is open and every customer is assigned. Then
#    `GET /api/v1/customers/{id}/assignment`, open-loop, each request with the next
#    customer's token: at 3/s (one poll per runner per hour), and at 300/s with and
#    without SUPPORT_CLIENTS (4) support clients looping on `/api/v1/fleet`,
#    `/api/v1/rollouts` and `/ui/rollouts`. Baseline: a bare `GET /healthz` at the
#    same rate, beside the same support load (the best the registry could answer).
# 2. A rollout of ROLLOUT_CUSTOMERS (100) emulated runners, three waves, soak SOAK
#    (2 s): each polls every 200 ms and, once assigned, posts a signed release
#    receipt (apply, succeeded, its own installation key) and a sync report. Time
#    from the statement's manifest PUT to the rollout `completed`, beside the
#    configured soak total (2 × SOAK) plus one `--rollout-tick-secs` TICK (1 s): the
#    best a scheduler could do.
#
#   scripts/bench/rollout.sh
#   CUSTOMERS=1000 POLL_SECS=5 scripts/bench/rollout.sh     # a quick pass
#
# Latency counts from each request's scheduled time, so a slow answer delays no
# later measurement (no coordinated omission). Figures are printed, never asserted.

set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
CUSTOMERS=${CUSTOMERS:-10000}
POLL_SECS=${POLL_SECS:-20}
SLOW_SECS=${SLOW_SECS:-60}
SUPPORT_CLIENTS=${SUPPORT_CLIENTS:-4}
ROLLOUT_CUSTOMERS=${ROLLOUT_CUSTOMERS:-100}
SOAK=${SOAK:-2}
TICK=${TICK:-1}

echo "building stackpack-registry and rolloutbench (release)…" >&2
(cd "$ROOT" && cargo build --release --quiet -p stackpack-registry --bin stackpack-registry --example rolloutbench)
REGISTRY=${REGISTRY:-$CARGO_TARGET_DIR/release/stackpack-registry}
BENCH=$CARGO_TARGET_DIR/release/examples/rolloutbench

WORK=$(mktemp -d)
SERVER_PID=""
stop_server() {
  [ -z "$SERVER_PID" ] || { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
  SERVER_PID=""
}
cleanup() {
  stop_server
  rm -rf "$WORK"
}
trap cleanup EXIT

# serve DATA [ARGS…]: starts the registry on a free port; sets URL.
serve() {
  local data=$1
  shift
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  URL=http://127.0.0.1:$port
  "$REGISTRY" serve --data "$data" --listen "127.0.0.1:$port" "$@" >/dev/null 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do curl -fs "$URL/healthz" >/dev/null && break; sleep 0.1; done
}

# --- 1. the assignment poll -------------------------------------------------------
DATA=$WORK/poll
"$REGISTRY" init --data "$DATA" >/dev/null
echo "seeding $CUSTOMERS customers with their tokens…" >&2
started=$(date +%s.%N)
"$BENCH" seed "$DATA" "$CUSTOMERS" 0 "$WORK/poll-tokens"
SUPPORT=$("$REGISTRY" token create --role support --data "$DATA" 2>/dev/null)
PUBLISHER=$("$REGISTRY" token create --role publisher --data "$DATA" 2>/dev/null)
serve "$DATA" --rollout-tick-secs "$TICK"
echo "promoting platform@1.0.0 and reporting the canary and early runners…" >&2
"$BENCH" promote "$URL" "$PUBLISHER" "$SUPPORT" "$WORK/poll-tokens"
echo "seeded and promoted in $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }') s; registry.db $(du -h "$DATA/registry.db" | cut -f1)" >&2

POLLS=$WORK/polls
: >"$POLLS"
# poll RATE SECS CLIENTS: the assignment poll, then the /healthz baseline, alike.
poll() {
  echo "polling at $1/s for $2 s beside $3 support clients…" >&2
  "$BENCH" poll "$URL" "$WORK/poll-tokens" "$1" "$2" "$3" "$SUPPORT" >>"$POLLS"
  "$BENCH" poll "$URL" "$WORK/poll-tokens" "$1" "$2" "$3" "$SUPPORT" /healthz >>"$POLLS"
}
poll 3 "$SLOW_SECS" 0
poll 300 "$POLL_SECS" 0
poll 300 "$POLL_SECS" "$SUPPORT_CLIENTS"
stop_server

# --- 2. a rollout of emulated customers --------------------------------------------
DATA=$WORK/rollout
"$REGISTRY" init --data "$DATA" >/dev/null
"$BENCH" seed "$DATA" "$ROLLOUT_CUSTOMERS" "$SOAK" "$WORK/rollout-tokens" 2>/dev/null
SUPPORT=$("$REGISTRY" token create --role support --data "$DATA" 2>/dev/null)
PUBLISHER=$("$REGISTRY" token create --role publisher --data "$DATA" 2>/dev/null)
serve "$DATA" --rollout-tick-secs "$TICK"
echo "rolling out to $ROLLOUT_CUSTOMERS emulated runners (soak $SOAK s, tick $TICK s)…" >&2
"$BENCH" rollout "$URL" "$PUBLISHER" "$SUPPORT" "$WORK/rollout-tokens" "$ROLLOUT_CUSTOMERS" "$SOAK" "$TICK" >"$WORK/rollout-result"
stop_server

echo
{
  printf "GET at rate, beside support clients\tsent\tp50 ms\tp99 ms\tmax ms\terrors\tsupport answers/s\n"
  tr ' ' '\t' <"$POLLS"
} | column -t -s $'\t'
echo
cat "$WORK/rollout-result"
