#!/usr/bin/env bash
# Load benchmark: stackpack-registry against CNCF Distribution (`docker-registry`),
# same machine, same run, same data, 127.0.0.1 only. Measured, never asserted.
#
#   manifest GET       wrk, 2 threads, 32 connections: requests/s and p99 latency
#   blob push / pull   examples/loadgen.rs, 1 and 16 clients: MB/s (16 MiB blobs),
#                      16 clients pulling 200 MiB blobs, 16 clients pushing 4 KiB ones
#
# Usage: registry/bench/load.sh [seconds-per-wrk-run]   (needs wrk and docker-registry)
set -euo pipefail

SECONDS_PER_RUN="${1:-8}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
for tool in wrk docker-registry; do
  command -v "$tool" >/dev/null || { echo "error: \`$tool\` is not on PATH" >&2; exit 2; }
done

cargo build --release -q -p stackpack-registry --bin stackpack-registry --example loadgen
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
OURS_BIN="$TARGET/release/stackpack-registry"
LOADGEN="$TARGET/release/examples/loadgen"

WORK="$(mktemp -d)"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "error: $1 did not come up" >&2; exit 1; }

OURS_PORT=$(free_port)
"$OURS_BIN" init --data "$WORK/ours" 2>/dev/null
TOKEN=$("$OURS_BIN" token create --role admin --data "$WORK/ours" 2>/dev/null)
RUST_LOG=warn "$OURS_BIN" serve --data "$WORK/ours" --listen "127.0.0.1:$OURS_PORT" >/dev/null 2>&1 &
PIDS+=($!)

DIST_PORT=$(free_port)
cat >"$WORK/dist.yml" <<YAML
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $WORK/dist
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: 127.0.0.1:$DIST_PORT
YAML
docker-registry serve "$WORK/dist.yml" >/dev/null 2>&1 &
PIDS+=($!)
wait_up "http://127.0.0.1:$OURS_PORT/healthz"
wait_up "http://127.0.0.1:$DIST_PORT/v2/"

OURS="http://127.0.0.1:$OURS_PORT"
DIST="http://127.0.0.1:$DIST_PORT"
OURS_PATH=$("$LOADGEN" seed "$OURS" "$TOKEN" bench/app)
DIST_PATH=$("$LOADGEN" seed "$DIST" - bench/app)

wrk_run() { # url [auth header]
  local out
  if [ -n "${2:-}" ]; then
    out=$(wrk -t2 -c32 -d"${SECONDS_PER_RUN}s" --latency -H "Accept: application/vnd.oci.image.manifest.v1+json" -H "$2" "$1")
  else
    out=$(wrk -t2 -c32 -d"${SECONDS_PER_RUN}s" --latency -H "Accept: application/vnd.oci.image.manifest.v1+json" "$1")
  fi
  local rps p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  echo "$rps $p99"
}

to_ms() { # 1.23ms | 850.00us | 1.2s -> milliseconds
  python3 -c 'import sys,re; v=sys.argv[1]; m=re.match(r"([0-9.]+)(us|ms|s)",v); f={"us":0.001,"ms":1,"s":1000}[m.group(2)]; print(round(float(m.group(1))*f,3))' "$1"
}

read -r OURS_RPS OURS_P99 < <(wrk_run "$OURS$OURS_PATH" "Authorization: Bearer $TOKEN")
read -r DIST_RPS DIST_P99 < <(wrk_run "$DIST$DIST_PATH")

mbps() { python3 -c 'import json,sys; print(round(json.loads(sys.stdin.read())["mbps"],1))'; }
declare -A R
for mode in push pull; do
  for clients in 1 16; do
    if [ "$clients" = 1 ]; then count=8; else count=2; fi
    R[ours_${mode}_$clients]=$("$LOADGEN" "$mode" "$OURS" "$TOKEN" "$clients" 16 "$count" | mbps)
    R[dist_${mode}_$clients]=$("$LOADGEN" "$mode" "$DIST" - "$clients" 16 "$count" | mbps)
  done
done

# Large blobs under concurrency: 16 clients each pull their own 200 MiB blob.
R[ours_large]=$("$LOADGEN" pull "$OURS" "$TOKEN" 16 200 1 | mbps)
R[dist_large]=$("$LOADGEN" pull "$DIST" - 16 200 1 | mbps)

# Small objects: each push is two commits (session, blob), each synced (FULL).
ops() { python3 -c 'import json,sys; print(round(json.loads(sys.stdin.read())["objectsPerSecond"]))'; }
R[ours_small]=$("$LOADGEN" push "$OURS" "$TOKEN" 16 4k 50 | ops)
R[dist_small]=$("$LOADGEN" push "$DIST" - 16 4k 50 | ops)

ratio() { python3 -c 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f"{a/b:.2f}x" if b else "n/a")' "$1" "$2"; }
inv_ratio() { python3 -c 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f"{b/a:.2f}x" if a else "n/a")' "$1" "$2"; }

OURS_P99_MS=$(to_ms "$OURS_P99"); DIST_P99_MS=$(to_ms "$DIST_P99")
printf '%-34s %14s %14s %10s\n' "measure (higher is better)" "stackpack" "distribution" "ratio"
printf '%-34s %14s %14s %10s\n' "manifest GET req/s" "$OURS_RPS" "$DIST_RPS" "$(ratio "$OURS_RPS" "$DIST_RPS")"
printf '%-34s %14s %14s %10s\n' "manifest GET p99 ms (lower better)" "$OURS_P99_MS" "$DIST_P99_MS" "$(inv_ratio "$OURS_P99_MS" "$DIST_P99_MS")"
for mode in push pull; do
  for clients in 1 16; do
    printf '%-34s %14s %14s %10s\n' "blob $mode MB/s, $clients client(s)" "${R[ours_${mode}_$clients]}" "${R[dist_${mode}_$clients]}" "$(ratio "${R[ours_${mode}_$clients]}" "${R[dist_${mode}_$clients]}")"
  done
done
printf '%-34s %14s %14s %10s\n' "200 MiB blob pull MB/s, 16 clients" "${R[ours_large]}" "${R[dist_large]}" "$(ratio "${R[ours_large]}" "${R[dist_large]}")"
printf '%-34s %14s %14s %10s\n' "4 KiB blob pushes/s, 16 clients" "${R[ours_small]}" "${R[dist_small]}" "$(ratio "${R[ours_small]}" "${R[dist_small]}")"
echo "(ratio > 1 means stackpack is better; blobs are 16 MiB; stackpack fsyncs every blob and every database commit (synchronous=FULL) before acknowledging it, Distribution does not)"
