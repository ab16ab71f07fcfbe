#!/usr/bin/env bash
# Alert fan-out benchmark (issue 29): RECEIPTS (1,000) customers each post one signed
# receipt that changes their state (a failed apply), CLIENTS (8) at a time, over
# HTTP as runners post them; once with no webhook (the baseline) and once with a
# webhook that wants `failed` (a local HTTP server that records each event's
# arrival), each on a fresh copy of the same seeded registry, ROUNDS (3) rounds in
# turns. Printed: receipts/s and POST p50/p99 with alerts off and on, and how long
# after the first receipt was sent the last of the events reached the webhook.
#
#   scripts/bench/alerts.sh
#   RECEIPTS=200 ROUNDS=1 scripts/bench/alerts.sh     # a quick pass
#   TICK_MS=100 scripts/bench/alerts.sh               # a shorter `--alert-tick-ms`
#
# Figures are printed, never asserted.

set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
RECEIPTS=${RECEIPTS:-1000}
CLIENTS=${CLIENTS:-8}
ROUNDS=${ROUNDS:-3}
# The registry's default look at the outbox, once a second, unless given.
TICK_MS=${TICK_MS:-1000}
WAIT_SECS=${WAIT_SECS:-300}

echo "building stackpack-registry and alertbench (release)…" >&2
(cd "$ROOT" && cargo build --release --quiet -p stackpack-registry --bin stackpack-registry --example alertbench)
REGISTRY=${REGISTRY:-$CARGO_TARGET_DIR/release/stackpack-registry}
BENCH=$CARGO_TARGET_DIR/release/examples/alertbench

WORK=$(mktemp -d)
SERVER_PID=""
HOOK_PID=""
stop() {
  [ -z "$SERVER_PID" ] || { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
  [ -z "$HOOK_PID" ] || { kill "$HOOK_PID" 2>/dev/null || true; wait "$HOOK_PID" 2>/dev/null || true; }
  SERVER_PID="" HOOK_PID=""
}
cleanup() {
  stop
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The webhook: answers 200 to every POST and appends `ARRIVAL_UNIX_S CUSTOMER` to
# its file. Threads, and a listen queue deep enough for a fleet's deliveries at once.
cat >"$WORK/hook.py" <<'EOF'
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, path = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()
out = open(path, "a", buffering=1)

class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        arrived = time.time()
        try:
            customer = json.loads(body).get("customer", "?")
        except ValueError:
            customer = "?"
        with lock:
            out.write(f"{arrived:.3f} {customer}\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

class Server(ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True

Server(("127.0.0.1", port), Hook).serve_forever()
EOF

SEED=$WORK/seed
"$REGISTRY" init --data "$SEED" >/dev/null
"$BENCH" seed "$SEED" "$RECEIPTS" "$WORK/tokens"

# run MODE ROUND: one pass on a fresh copy; appends `MODE rate p50 p99 arrived_s`.
run() {
  local mode=$1 round=$2 data=$WORK/data-$1-$2 port url alert=() events=$WORK/events-$1-$2
  cp -r "$SEED" "$data"
  if [ "$mode" = on ]; then
    local hook_port
    hook_port=$(free_port)
    : >"$events"
    python3 "$WORK/hook.py" "$hook_port" "$events" &
    HOOK_PID=$!
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$hook_port") 2>/dev/null && break; sleep 0.05; done
    alert=(--alert "failed=http://127.0.0.1:$hook_port/hook")
  fi
  port=$(free_port)
  url=http://127.0.0.1:$port
  "$REGISTRY" serve --data "$data" --listen "127.0.0.1:$port" --alert-tick-ms "$TICK_MS" \
    "${alert[@]}" >/dev/null 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do curl -fs "$url/healthz" >/dev/null && break; sleep 0.1; done
  local line
  line=$("$BENCH" post "$url" "$WORK/tokens" "$CLIENTS")
  read -r _ posted _ rate p50 p99 started <<<"$line"
  local arrived="-"
  if [ "$mode" = on ]; then
    local deadline=$((SECONDS + WAIT_SECS))
    while [ "$(wc -l <"$events")" -lt "$posted" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    local got
    got=$(wc -l <"$events")
    if [ "$got" -ge "$posted" ]; then
      arrived=$(sort -n "$events" | tail -1 | awk -v s="$started" '{ printf "%.2f", $1 - s }')
    else
      arrived="only-$got-in-${WAIT_SECS}s"
    fi
  fi
  stop
  rm -rf "$data"
  echo "$mode $rate $p50 $p99 $arrived" >>"$WORK/results"
}

for round in $(seq "$ROUNDS"); do
  echo "round $round of $ROUNDS: $RECEIPTS receipts, alerts off then on…" >&2
  run off "$round"
  run on "$round"
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }
column_of() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$WORK/results" | median; }
off_rate=$(column_of off 2)
on_rate=$(column_of on 2)
{
  printf "alerts\treceipts/s\tPOST p50 ms\tPOST p99 ms\tlast event at the webhook after\n"
  printf "off (baseline)\t%s\t%s\t%s\t-\n" "$off_rate" "$(column_of off 3)" "$(column_of off 4)"
  printf "on (failed → webhook)\t%s\t%s\t%s\t%s s\n" "$on_rate" "$(column_of on 3)" "$(column_of on 4)" "$(column_of on 5)"
} | column -t -s $'\t'
echo
echo "$RECEIPTS receipts, $CLIENTS clients, medians of $ROUNDS rounds; --alert-tick-ms $TICK_MS;" \
  "ingestion with alerts on at $(awk -v a="$on_rate" -v b="$off_rate" 'BEGIN { printf "%.2f", a / b }')× the rate without"
