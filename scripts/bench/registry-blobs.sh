#!/usr/bin/env bash
# Blob push and pull through stackpack-registry with its blobs in the data folder
# (the default) and in S3 (`--blobs s3://…`, against moto's S3 in server mode, the
# S3 emulator: on this machine, so the figures say what the S3 path costs in the
# registry and the emulator, not what a real S3 bucket across a network gives).
# One client pushes (POST, then PUT with the whole blob) and pulls SIZE_MIB blobs,
# ROUNDS of each; MB/s as registry/examples/loadgen.rs measures them.
#
#   scripts/bench/registry-blobs.sh              # 100 MiB, 3 rounds
#   SIZE_MIB=16 ROUNDS=8 scripts/bench/registry-blobs.sh
#
# Figures are printed, never asserted.

set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
SIZE_MIB=${SIZE_MIB:-100}
ROUNDS=${ROUNDS:-3}

cargo build --release -q -p stackpack-registry --bin stackpack-registry --example loadgen
BIN="$CARGO_TARGET_DIR/release/stackpack-registry"
LOADGEN="$CARGO_TARGET_DIR/release/examples/loadgen"

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  scripts/moto.sh stop "$WORK/moto" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "error: $1 did not come up" >&2; exit 1; }

MOTO=$(MOTO_OWNER_PID=$$ scripts/moto.sh start "$WORK/moto")
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
python3 -c 'import boto3, sys; boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1").create_bucket(Bucket="bench-blobs")' "$MOTO"

# serve NAME [serve flags...]: starts one registry on its own data folder; prints its URL.
serve() {
  local name=$1; shift
  local port; port=$(free_port)
  "$BIN" init --data "$WORK/$name" >/dev/null 2>&1
  RUST_LOG=warn "$BIN" serve --data "$WORK/$name" --listen "127.0.0.1:$port" "$@" >/dev/null 2>&1 &
  PIDS+=($!)
  wait_up "http://127.0.0.1:$port/healthz"
  echo "http://127.0.0.1:$port"
}

FS_URL=$(serve fs)
S3_URL=$(serve s3 --blobs s3://bench-blobs/registry --s3-endpoint "$MOTO")
FS_TOKEN=$("$BIN" token create --role admin --data "$WORK/fs" 2>/dev/null)
S3_TOKEN=$("$BIN" token create --role admin --data "$WORK/s3" 2>/dev/null)

mbps() { python3 -c 'import json,sys; print(round(json.loads(sys.stdin.read())["mbps"],1))'; }
printf '%-36s %12s %12s\n' "measure (MB/s, 1 client)" "data folder" "S3 (moto)"
for mode in push pull; do
  fs=$("$LOADGEN" "$mode" "$FS_URL" "$FS_TOKEN" 1 "$SIZE_MIB" "$ROUNDS" | mbps)
  s3=$("$LOADGEN" "$mode" "$S3_URL" "$S3_TOKEN" 1 "$SIZE_MIB" "$ROUNDS" | mbps)
  printf '%-36s %12s %12s\n' "blob $mode, $SIZE_MIB MiB × $ROUNDS" "$fs" "$s3"
done
