#!/usr/bin/env bash
# Scale-out benchmark (issue 27), side by side in one run, all on 127.0.0.1:
#
#   production  the production layout: three `stackpack-registry serve` replicas
#               reading one `--config` file (`database = "postgres://…"`, `blobs =
#               "s3://…"`), each with a data folder of its own (nothing shared through
#               a file system), behind haproxy. The PostgreSQL is a throwaway cluster
#               this script starts (initdb and pg_ctl in a temporary folder, as the
#               current user, or as `postgres`/`nobody` when run as root; never the
#               system service; initdb's defaults, fsync on); the fleet's seed reaches
#               it through db::copy (registry/examples/copy_to_postgres.rs)
#   ours        the shared-folder layout: three replicas reading one `--config` file,
#               blobs in S3, metadata in one SQLite database in a data folder the
#               replicas share on this one host, behind haproxy
#   baseline    CNCF Distribution (Debian's `docker-registry`) with its own S3 driver
#               on the same S3 (its bucket listed at the end: it really stores there)
#   embedded    one `stackpack-registry serve` on a data folder: the default layout
#
# The S3 is moto in server mode, the S3 emulator: a Python process on this same
# machine. Its figures say what the S3 path costs here, sharing the cores with the
# registries, the balancer and the clients; they are not what a real bucket across a
# network gives (slower per request, but not contending for these CPUs).
#
# Rows: manifest GET req/s and p99 at 1 and 16 clients (wrk); blob GET and blob push
# MB/s of a SIZE_MIB blob (registry/examples/loadgen.rs: one GET; POST then one PUT);
# receipt ingestion per second (fleetbench ingest, 8 clients); support's queries on a
# fleet of CUSTOMERS customers × 30 stacks × 20 versions (fleet.sh's seed, kept under
# the target folder and copied for each of ours), each query's p50 and p99 taken as
# medians over the rounds, then the slowest query's p99 and the median query's p50.
# Every row is ROUNDS rounds with the contenders in turns, and their median.
# Distribution has no ledger: its receipt and support cells are "—". Each layout of
# ours gets its rows (beside Distribution and the embedded default), its `what`
# starting with the layout.
#
#   scripts/bench/scaleout.sh            # 10,000 customers, 64 MiB, 3 rounds, wrk 3 s
#   scripts/bench/scaleout.sh --quick    # 1,000 customers, 64 MiB, 1 round, wrk 2 s
#
# Distribution runs with `redirect: disable: true`, so its blob GETs stream through
# it as ours do (by default it answers 307 to a presigned URL of the bucket), and
# with Debian's packaged `cache: blobdescriptor: inmemory`. It keeps manifests and
# tags as objects in the bucket, so each manifest GET asks S3; ours answers from its
# database. The manifest rows measure that difference as much as the registries.
# Manifest GETs straight to one replica of each layout (no haproxy) are printed under
# the table, to tell the balancer's hop from the replica's own cost; so are receipts
# on the production layout started once more with one database connection per
# replica, one replica asked directly against three behind haproxy, which says
# whether writes grow with replicas where a replica's pool, not this host's two
# cores, is the limit.
# Lines `row<TAB>what<TAB>ours<TAB>baseline<TAB>embedded<TAB>speed<TAB>vs-embedded`
# on stdout are what scripts/bench/suite.py reads; progress goes to stderr. Every
# process it starts (moto, PostgreSQL, haproxy, the registries) is stopped on exit,
# Ctrl-C included. Figures are printed, never asserted.

source "$(dirname "$0")/common.sh"
cd "$ROOT"
need_tools docker-registry wrk curl python3
QUICK=false
for arg in "$@"; do [ "$arg" != --quick ] || QUICK=true; done
if $QUICK; then
  CUSTOMERS=${CUSTOMERS:-1000} ROUNDS=${ROUNDS:-1} WRK_SECS=${WRK_SECS:-2} RECEIPTS=${RECEIPTS:-2000} QUERY_ROUNDS=${QUERY_ROUNDS:-10}
else
  CUSTOMERS=${CUSTOMERS:-10000} ROUNDS=${ROUNDS:-3} WRK_SECS=${WRK_SECS:-3} RECEIPTS=${RECEIPTS:-10000} QUERY_ROUNDS=${QUERY_ROUNDS:-30}
fi
SIZE_MIB=${SIZE_MIB:-64}
REPLICAS=3
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
[ -x "$HAPROXY" ] || need_tools haproxy

say() { echo "scaleout: $*" >&2; }
# set -e stops at the first failure; this says where, as a silent exit would not.
trap 'say "failed at line $LINENO: $BASH_COMMAND"' ERR

say "building stackpack-registry, loadgen and fleetbench (release)…"
cargo build --release -q -p stackpack-registry --bin stackpack-registry --example loadgen --example fleetbench \
  --example copy_to_postgres
BIN=$CARGO_TARGET_DIR/release/stackpack-registry
COPY_TO_POSTGRES=$CARGO_TARGET_DIR/release/examples/copy_to_postgres
LOADGEN=$CARGO_TARGET_DIR/release/examples/loadgen
FLEETBENCH=$CARGO_TARGET_DIR/release/examples/fleetbench

WORK=$(mktemp -d)
PIDS=()
# The throwaway PostgreSQL cluster's folder, once made (outside $WORK: as root the
# cluster runs as another user, who cannot enter a folder only root may).
PG_DIR=
PG_AS=()
cleanup() {
  trap - ERR
  [ ${#PIDS[@]} -eq 0 ] || say "stopping the registries and haproxy (pids ${PIDS[*]}) and moto…"
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  # Each has 5 s to finish its requests and exit; then it is killed.
  local alive pid
  for _ in $(seq 50); do
    alive=false
    for pid in "${PIDS[@]}"; do ! kill -0 "$pid" 2>/dev/null || alive=true; done
    $alive || break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  scripts/moto.sh stop "$WORK/moto" >/dev/null 2>&1 || true
  if [ -n "$PG_DIR" ]; then
    say "stopping the throwaway PostgreSQL cluster…"
    "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
# Ctrl-C and kill end the script through its EXIT trap (bash skips that trap on a
# signal it does not catch). The servers started with `&` ignore the terminal's
# SIGINT, as a script's background children do: cleanup stops them.
trap 'say "interrupted"; exit 130' INT
trap 'exit 143' TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { # URL [LOG]: waits until URL answers; else prints LOG and fails
  for _ in $(seq 300); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "error: \`$1\` did not answer within 30 s" >&2
  [ -z "${2:-}" ] || tail -20 "$2" >&2
  exit 1
}

# The fleet, seeded once through the registry's own functions (fleet.sh's folder, so
# the suite's fleet rows and these share one seed), then copied for each of ours.
SEED=$CARGO_TARGET_DIR/bench-fleet-$CUSTOMERS
if [ ! -f "$SEED/registry.db" ]; then
  # Seeded beside and renamed when whole: an interrupted seed is not taken for a fleet.
  rm -rf "$SEED.partial"
  "$BIN" init --data "$SEED.partial" >/dev/null
  say "seeding $CUSTOMERS customers × 30 stacks × 20 versions into $SEED (once; kept for the next run)…"
  "$FLEETBENCH" seed "$SEED.partial" "$CUSTOMERS" 30 20
  mv "$SEED.partial" "$SEED"
fi
say "copying the seeded fleet ($(du -sh "$SEED" | cut -f1)) for each layout of ours and for the embedded default…"
cp -r "$SEED" "$WORK/cluster"
cp -r "$SEED" "$WORK/production-seed"
cp -r "$SEED" "$WORK/embedded"

say "starting moto (the S3 emulator)…"
MOTO=$(MOTO_OWNER_PID=$$ scripts/moto.sh start "$WORK/moto")
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
python3 -c 'import boto3, sys
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
for bucket in ("stackpack-blobs", "distribution"): s3.create_bucket(Bucket=bucket)' "$MOTO"

# Ours: the seeded copy's blobs moved into the bucket as an operator would (the
# database records where its blobs live and refuses a replica told otherwise), then
# three replicas reading one configuration file, each with its own --listen; haproxy
# in front (round robin, health-checked as registry/tests/it/replicas.rs configures it).
say "moving ours' blobs into s3://stackpack-blobs/registry (migrate --move-blobs-to)…"
"$BIN" migrate --data "$WORK/cluster" --move-blobs-to s3://stackpack-blobs/registry \
  --s3-endpoint "$MOTO" --s3-region us-east-1 >"$WORK/migrate.log" 2>&1 || { cat "$WORK/migrate.log" >&2; exit 1; }
cat >"$WORK/cluster.toml" <<EOF
data = "$WORK/cluster"
blobs = "s3://stackpack-blobs/registry"
s3-endpoint = "$MOTO"
s3-region = "us-east-1"
EOF
# start_cluster NAME CONFIG: REPLICAS replicas reading CONFIG, each with its own
# --listen (and, for production, its own --data), haproxy in front (round robin,
# health-checked as registry/tests/it/replicas.rs configures it). Sets URL[NAME] to
# the balancer and URL[NAME-replica] to the first replica.
declare -A URL
start_cluster() {
  local name=$1 config=$2 balancer_port r port data_flag=()
  balancer_port=$(free_port)
  {
    printf 'global\n    maxconn 2048\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 120s\n    timeout server 120s\n'
    printf '    retries 3\n    option redispatch\nfrontend registry\n    bind 127.0.0.1:%s\n    default_backend replicas\n' "$balancer_port"
    printf 'backend replicas\n    balance roundrobin\n    option httpchk GET /healthz\n    default-server inter 1s fall 2 rise 2\n'
  } >"$WORK/haproxy-$name.cfg"
  for r in $(seq 1 $REPLICAS); do
    port=$(free_port)
    case $name in production*) data_flag=(--data "$WORK/$name-r$r") ;; esac
    say "starting $name replica $r of $REPLICAS on 127.0.0.1:$port (serve --config $(basename "$config"))…"
    RUST_LOG=warn "$BIN" serve --config "$config" "${data_flag[@]}" --listen "127.0.0.1:$port" >"$WORK/$name-$r.log" 2>&1 &
    PIDS+=($!)
    wait_up "http://127.0.0.1:$port/healthz" "$WORK/$name-$r.log"
    printf '    server r%s 127.0.0.1:%s check\n' "$r" "$port" >>"$WORK/haproxy-$name.cfg"
    [ "$r" != 1 ] || URL[$name-replica]=http://127.0.0.1:$port
  done
  say "starting haproxy for $name on 127.0.0.1:$balancer_port…"
  "$HAPROXY" -c -q -f "$WORK/haproxy-$name.cfg"
  "$HAPROXY" -db -f "$WORK/haproxy-$name.cfg" >"$WORK/haproxy-$name.log" 2>&1 &
  PIDS+=($!)
  URL[$name]=http://127.0.0.1:$balancer_port
  wait_up "${URL[$name]}/healthz" "$WORK/haproxy-$name.log"
}
start_cluster ours "$WORK/cluster.toml"

# Production: a throwaway PostgreSQL cluster, as tests/support/src/servers.rs starts
# one: initdb in a temporary folder, pg_ctl on a free port of 127.0.0.1, never the
# system service; PostgreSQL refuses to run as root, so as root the cluster belongs
# to `postgres` (Debian's package makes it) or else `nobody`. Its settings are
# initdb's defaults (fsync on: each commit reaches the disk, as in production).
# scripts/postgres-watchdog.sh stops it should this script be killed outright.
PG_BIN=$(dirname "$(command -v initdb || ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 || true)")
[ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] || {
  echo "error: PostgreSQL's initdb and pg_ctl are neither on PATH nor in /usr/lib/postgresql/*/bin" >&2
  echo "hint: run scripts/install-test-deps.sh (Debian's postgresql)" >&2
  exit 1
}
PG_DIR=$(mktemp -d)
if [ "$(id -u)" = 0 ]; then
  pg_user=nobody
  ! id postgres >/dev/null 2>&1 || pg_user=postgres
  chown "$pg_user" "$PG_DIR"
  PG_AS=(runuser -u "$pg_user" --)
fi
PG_PORT=$(free_port)
say "starting a throwaway PostgreSQL $("$PG_BIN/initdb" --version | awk '{print $3}') cluster in $PG_DIR on 127.0.0.1:$PG_PORT…"
"${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U stackpack --auth=trust -E UTF8 >"$WORK/initdb.log" 2>&1 \
  || { cat "$WORK/initdb.log" >&2; exit 1; }
own_start=$(stat=$(cat /proc/$$/stat); echo "${stat##*) }" | cut -d' ' -f20)
setsid scripts/postgres-watchdog.sh $$ "$own_start" "$PG_DIR" </dev/null >/dev/null 2>&1 &
"${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w start \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1" >/dev/null || { cat "$PG_DIR/log" >&2; exit 1; }
PG_URL=postgres://stackpack@127.0.0.1:$PG_PORT/postgres

# The production layout's metadata: the fleet's copy with its blobs moved into the
# bucket (under a prefix of its own), its tokens made, then the whole SQLite
# database copied into PostgreSQL by db::copy (registry/examples/copy_to_postgres.rs)
# and left behind: each replica gets an empty data folder of its own.
say "moving production's blobs into s3://stackpack-blobs/production and copying its database into PostgreSQL (db::copy)…"
"$BIN" migrate --data "$WORK/production-seed" --move-blobs-to s3://stackpack-blobs/production \
  --s3-endpoint "$MOTO" --s3-region us-east-1 >"$WORK/migrate-production.log" 2>&1 \
  || { cat "$WORK/migrate-production.log" >&2; exit 1; }
PRODUCTION_TOKEN=$("$BIN" token create --role admin --data "$WORK/production-seed")
PRODUCTION_SUPPORT=$("$BIN" token create --role support --data "$WORK/production-seed")
"$COPY_TO_POSTGRES" "$WORK/production-seed/registry.db" "$PG_URL" >"$WORK/copy.log" 2>&1 \
  || { cat "$WORK/copy.log" >&2; exit 1; }
rm -rf "$WORK/production-seed"
cat >"$WORK/production.toml" <<EOF
database = "$PG_URL"
blobs = "s3://stackpack-blobs/production"
s3-endpoint = "$MOTO"
s3-region = "us-east-1"
EOF
start_cluster production "$WORK/production.toml"
# The same layout once more, each replica with one database connection, as a small
# replica's pool is: there the database is not the limit on this one host, so 1
# replica against 3 shows whether receipts grow with replicas or wait on one lock
# (issue 42). Only receipts are measured on it.
{ cat "$WORK/production.toml"; echo "database-connections = 1"; } >"$WORK/production-narrow.toml"
start_cluster production-narrow "$WORK/production-narrow.toml"

# Distribution on the same moto, its own bucket.
DIST_PORT=$(free_port)
say "starting Distribution (docker-registry, its S3 driver on moto) on 127.0.0.1:$DIST_PORT…"
cat >"$WORK/distribution.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  cache:
    blobdescriptor: inmemory
  s3:
    accesskey: test
    secretkey: test
    region: us-east-1
    regionendpoint: $MOTO
    bucket: distribution
    secure: false
    v4auth: true
    rootdirectory: /registry
  redirect:
    disable: true
http:
  addr: 127.0.0.1:$DIST_PORT
EOF
# Without AWS_CA_BUNDLE: Distribution's aws-sdk-go refuses to start with a custom CA
# bundle on its own HTTP transport ("LoadCustomCABundleError"); moto is plain HTTP.
env -u AWS_CA_BUNDLE docker-registry serve "$WORK/distribution.yml" >"$WORK/distribution.log" 2>&1 &
PIDS+=($!)
DIST=http://127.0.0.1:$DIST_PORT
wait_up "$DIST/v2/" "$WORK/distribution.log"

EMB_PORT=$(free_port)
say "starting the embedded default (one serve on a data folder) on 127.0.0.1:$EMB_PORT…"
RUST_LOG=warn "$BIN" serve --data "$WORK/embedded" --listen "127.0.0.1:$EMB_PORT" >"$WORK/embedded.log" 2>&1 &
PIDS+=($!)
EMBEDDED=http://127.0.0.1:$EMB_PORT
wait_up "$EMBEDDED/healthz" "$WORK/embedded.log"

OURS_TOKEN=$("$BIN" token create --role admin --data "$WORK/cluster")
OURS_SUPPORT=$("$BIN" token create --role support --data "$WORK/cluster")
EMB_TOKEN=$("$BIN" token create --role admin --data "$WORK/embedded")
EMB_SUPPORT=$("$BIN" token create --role support --data "$WORK/embedded")
# `production` and `ours` are the two layouts of ours: PostgreSQL, and one shared
# SQLite. `NAME-replica` is a layout's first replica asked directly: only for the
# manifest GETs.
NAMES=(production ours baseline embedded)
LAYOUTS=(production ours)
LEDGERS=(production ours embedded)
URL+=([baseline]=$DIST [embedded]=$EMBEDDED)
declare -A TOKEN=([production]=$PRODUCTION_TOKEN [ours]=$OURS_TOKEN [baseline]=- [embedded]=$EMB_TOKEN
  [production-replica]=$PRODUCTION_TOKEN [ours-replica]=$OURS_TOKEN)
declare -A SUPPORT=([production]=$PRODUCTION_SUPPORT [ours]=$OURS_SUPPORT [embedded]=$EMB_SUPPORT)
declare -A LABEL=(
  [production]="production layout: $REPLICAS replicas + haproxy, metadata in PostgreSQL, blobs in S3 (moto)"
  [ours]="shared folder: $REPLICAS replicas + haproxy, metadata in one SQLite on this host, blobs in S3 (moto)"
)

echo "scale-out: $REPLICAS replicas behind haproxy in each of two layouts, blobs in S3 for both: the production layout"
echo "(metadata in PostgreSQL $("$PG_BIN/initdb" --version | awk '{print $3}'), a throwaway cluster on this host, fsync on; each replica its own data folder) and"
echo "one SQLite database the replicas share in one data folder on this host; beside"
echo "CNCF Distribution $(docker-registry --version | awk '{print $3}') with its S3 driver on the same S3, and the embedded default (one process, SQLite + folder)."
echo "S3 is moto $(python3 -c 'import moto; print(moto.__version__)') in server mode, the S3 emulator: a Python process on this same $(nproc)-core machine,"
echo "sharing the cores with the registries, PostgreSQL, haproxy and the clients. These are not the figures a real bucket gives."
echo "$ROUNDS round(s) each, contenders in turns, medians; wrk ${WRK_SECS} s a run; blobs of $SIZE_MIB MiB; fleet of $CUSTOMERS customers."
echo

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A FIG

# Manifests: one small image per contender, then wrk on its manifest.
ACCEPT="Accept: application/vnd.oci.image.manifest.v1+json"
declare -A MANIFEST
say "pushing one small image to each contender…"
for name in "${NAMES[@]}"; do
  MANIFEST[$name]=$("$LOADGEN" seed "${URL[$name]}" "${TOKEN[$name]}" bench/app)
done
for name in "${LAYOUTS[@]}"; do MANIFEST[$name-replica]=${MANIFEST[$name]}; done
REPLICAS_ASKED=(production-replica ours-replica)
wrk_run() { # NAME CLIENTS: prints `rps p99_ms`
  local name=$1 clients=$2 auth=()
  [ "${TOKEN[$name]}" = - ] || auth=(-H "Authorization: Bearer ${TOKEN[$name]}")
  wrk --latency -t $(( clients < 2 ? clients : 2 )) -c "$clients" -d "${WRK_SECS}s" -H "$ACCEPT" "${auth[@]}" \
    "${URL[$name]}${MANIFEST[$name]}" | python3 -c '
import re, sys
out = sys.stdin.read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
v, unit = re.search(r"99%\s+([\d.]+)(\w+)", out).groups()
errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
p99 = float(v) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
print(f"{rps:.0f} {p99:.2f} {errors.group(1) if errors else 0}")'
}
for clients in 1 16; do
  declare -A RPS=() P99=()
  for round in $(seq "$ROUNDS"); do
    for name in "${NAMES[@]}" "${REPLICAS_ASKED[@]}"; do
      say "manifest GETs, $clients client(s), $name, round $round of $ROUNDS (wrk, $WRK_SECS s)…"
      out=$(wrk_run "$name" "$clients")
      read -r rps p99 errors <<<"$out"
      [ "$errors" = 0 ] || echo "warning: $name answered $errors manifest GETs with an error" >&2
      RPS[$name]+=" $rps"; P99[$name]+=" $p99"
    done
  done
  for name in "${NAMES[@]}" "${REPLICAS_ASKED[@]}"; do
    # shellcheck disable=SC2086
    FIG[manifest$clients-$name]="$(median ${RPS[$name]}) $(median ${P99[$name]})"
  done
done

# Blobs: push (POST, one PUT of the whole blob) and GET, one client.
for mode in push pull; do
  declare -A MBPS=()
  for round in $(seq "$ROUNDS"); do
    for name in "${NAMES[@]}"; do
      say "blob $mode, $SIZE_MIB MiB, $name, round $round of $ROUNDS…"
      MBPS[$name]+=" $("$LOADGEN" "$mode" "${URL[$name]}" "${TOKEN[$name]}" 1 "$SIZE_MIB" 1 \
        | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["mbps"], 1))')"
    done
  done
  for name in "${NAMES[@]}"; do
    # shellcheck disable=SC2086
    FIG[$mode-$name]=$(median ${MBPS[$name]})
  done
done

# Receipts and support's queries: both layouts of ours and the embedded default
# (Distribution has no ledger).
QUERIES=(
  "/api/v1/fleet?stack=stack-07&behind=true"
  "/api/v1/fleet?customer=customer-00042"
  "/api/v1/fleet?drifted=true"
  "/api/v1/fleet?silent=true"
  "/api/v1/fleet?after=customer-00500/stack-12"
  "/api/v1/support/versions?after=customer-00500/stack-12"
  "/api/v1/customers/customer-00042"
  "/api/v1/customers/customer-00042/history"
  "/api/v1/adoption?stack=stack-07"
  "/api/v1/customers"
)
# Each round ingests new receipts (their ids are salted with the time) and asks
# every query QUERY_ROUNDS times, the three in turns.
declare -A RATES=() INGEST_P99=()
for round in $(seq "$ROUNDS"); do
  for name in "${LEDGERS[@]}"; do
    say "receipt ingestion, $name, round $round of $ROUNDS: $RECEIPTS signed receipts from 8 clients…"
    out=$("$FLEETBENCH" ingest "${URL[$name]}" "${TOKEN[$name]}" 8 "$RECEIPTS")
    read -r rate p50 p99 errors <<<"$out"
    [ "$errors" = 0 ] || echo "warning: $name refused $errors receipts" >&2
    RATES[$name]+=" $rate"; INGEST_P99[$name]+=" $p99"
    if [ "$name" = production ]; then
      # The same 8 clients to one replica only: beside the row above it says
      # whether receipts grow with replicas (issue 42) or wait on one lock.
      say "receipt ingestion, production, one replica asked directly, round $round of $ROUNDS…"
      out=$("$FLEETBENCH" ingest "${URL[production-replica]}" "${TOKEN[production]}" 8 "$RECEIPTS")
      read -r rate p50 p99 errors <<<"$out"
      [ "$errors" = 0 ] || echo "warning: production's replica refused $errors receipts" >&2
      RATES[production-one]+=" $rate"; INGEST_P99[production-one]+=" $p99"
      for narrow in production-narrow-replica production-narrow; do
        say "receipt ingestion, $narrow (one database connection per replica), round $round of $ROUNDS…"
        out=$("$FLEETBENCH" ingest "${URL[$narrow]}" "${TOKEN[production]}" 8 "$RECEIPTS")
        read -r rate p50 p99 errors <<<"$out"
        [ "$errors" = 0 ] || echo "warning: $narrow refused $errors receipts" >&2
        RATES[$narrow]+=" $rate"; INGEST_P99[$narrow]+=" $p99"
      done
    fi
    say "support queries, $name, round $round of $ROUNDS: ${#QUERIES[@]} queries × $QUERY_ROUNDS…"
    "$FLEETBENCH" measure "${URL[$name]}" "${SUPPORT[$name]}" "$QUERY_ROUNDS" "${QUERIES[@]}" >"$WORK/queries-$name-$round"
  done
done
# shellcheck disable=SC2086
FIG[ingest-production-one]="$(median ${RATES[production-one]}) $(median ${INGEST_P99[production-one]})"
for narrow in production-narrow-replica production-narrow; do
  FIG[ingest-$narrow]="$(median ${RATES[$narrow]}) $(median ${INGEST_P99[$narrow]})"
done
for name in "${LEDGERS[@]}"; do
  # shellcheck disable=SC2086
  FIG[ingest-$name]="$(median ${RATES[$name]}) $(median ${INGEST_P99[$name]})"
  # Per query the median over the rounds of its p50 and of its p99; then the slowest
  # query's p99 and the median query's p50.
  python3 -c 'import statistics, sys
rounds = [[line.split() for line in open(path)] for path in sys.argv[1:]]
for i, row in enumerate(rounds[0]):
    p50 = statistics.median(float(r[i][1]) for r in rounds)
    p99 = statistics.median(float(r[i][2]) for r in rounds)
    print(row[0], f"{p50:.1f}", f"{p99:.1f}", row[3])' "$WORK/queries-$name-"* >"$WORK/queries-$name"
  FIG[support-$name]=$(python3 -c 'import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
worst = max(rows, key=lambda r: float(r[2]))
print(f"{float(worst[2]):.1f} {statistics.median(float(r[1]) for r in rows):.1f} {worst[0]}")' "$WORK/queries-$name")
done

# Where each one's bytes went: every object under each bucket and prefix.
say "listing the buckets…"
BUCKETS=$(python3 -c 'import boto3, sys
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
for bucket, prefix in (("stackpack-blobs", "production/"), ("stackpack-blobs", "registry/"), ("distribution", "")):
    n = size = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []): n += 1; size += o["Size"]
    print(f"s3://{bucket}/{prefix}: {n} objects, {size / 1048576:.0f} MiB")' "$MOTO")

ratio() { python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f"{a / b:.2f}×" if b else "—")' "$1" "$2"; }
row() { printf 'row\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; }
# One set of rows per layout of ours, each beside Distribution and the embedded
# default; a row's `what` starts with the layout, which scripts/bench/suite.py keeps.
for layout in "${LAYOUTS[@]}"; do
  for clients in 1 16; do
    read -r o_rps o_p99 <<<"${FIG[manifest$clients-$layout]}"
    read -r b_rps b_p99 <<<"${FIG[manifest$clients-baseline]}"
    read -r e_rps e_p99 <<<"${FIG[manifest$clients-embedded]}"
    row "${LABEL[$layout]}: manifest GET, $clients client(s): requests/s (p99)" "$o_rps/s ($o_p99 ms)" "$b_rps/s ($b_p99 ms)" \
      "$e_rps/s ($e_p99 ms)" "$(ratio "$o_rps" "$b_rps")" "$(ratio "$o_rps" "$e_rps")"
  done
  row "${LABEL[$layout]}: blob GET, $SIZE_MIB MiB, 1 client: MB/s" "${FIG[pull-$layout]} MB/s" "${FIG[pull-baseline]} MB/s" \
    "${FIG[pull-embedded]} MB/s" "$(ratio "${FIG[pull-$layout]}" "${FIG[pull-baseline]}")" "$(ratio "${FIG[pull-$layout]}" "${FIG[pull-embedded]}")"
  row "${LABEL[$layout]}: blob push, $SIZE_MIB MiB, 1 client (POST + one PUT): MB/s" "${FIG[push-$layout]} MB/s" \
    "${FIG[push-baseline]} MB/s" "${FIG[push-embedded]} MB/s" \
    "$(ratio "${FIG[push-$layout]}" "${FIG[push-baseline]}")" "$(ratio "${FIG[push-$layout]}" "${FIG[push-embedded]}")"
  read -r o_rate o_p99 <<<"${FIG[ingest-$layout]}"
  read -r e_rate e_p99 <<<"${FIG[ingest-embedded]}"
  row "${LABEL[$layout]}: receipt ingestion, 8 clients, $RECEIPTS signed receipts: per second (p99)" "$o_rate/s ($o_p99 ms)" "—" \
    "$e_rate/s ($e_p99 ms)" "—" "$(ratio "$o_rate" "$e_rate")"
  if [ "$layout" = production ]; then
    read -r one_rate one_p99 <<<"${FIG[ingest-production-one]}"
    row "production layout: one replica asked directly (PostgreSQL + S3): receipt ingestion, 8 clients, $RECEIPTS signed receipts: per second (p99)" \
      "$one_rate/s ($one_p99 ms)" "—" "$e_rate/s ($e_p99 ms)" "—" "$(ratio "$one_rate" "$e_rate")"
  fi
  read -r o_worst o_p50 o_slowest <<<"${FIG[support-$layout]}"
  read -r e_worst e_p50 e_slowest <<<"${FIG[support-embedded]}"
  row "${LABEL[$layout]}: support queries at $CUSTOMERS customers × 30 stacks × 20 versions: slowest p99 (median p50)" \
    "$o_worst ms (\`$o_slowest\`; $o_p50 ms)" "—" "$e_worst ms (\`$e_slowest\`; $e_p50 ms)" "—" "$(ratio "$e_worst" "$o_worst")"
done

{
  printf 'measure\tproduction: %s replicas + haproxy, PostgreSQL + S3 (moto)\tshared folder: %s replicas + haproxy, SQLite + S3 (moto)\tDistribution, S3 (moto)\tembedded (SQLite + folder)\n' "$REPLICAS" "$REPLICAS"
  for clients in 1 16; do
    printf 'manifest GET, %s client(s) req/s (p99 ms)' "$clients"
    for name in "${NAMES[@]}"; do read -r rps p99 <<<"${FIG[manifest$clients-$name]}"; printf '\t%s (%s)' "$rps" "$p99"; done
    printf '\n'
  done
  printf 'blob GET %s MiB, MB/s' "$SIZE_MIB"
  for name in "${NAMES[@]}"; do printf '\t%s' "${FIG[pull-$name]}"; done
  printf '\nblob push %s MiB, MB/s' "$SIZE_MIB"
  for name in "${NAMES[@]}"; do printf '\t%s' "${FIG[push-$name]}"; done
  printf '\nreceipts/s, 8 clients (p99 ms)'
  for name in "${NAMES[@]}"; do
    if [ "$name" = baseline ]; then printf '\t—'; else read -r rate p99 <<<"${FIG[ingest-$name]}"; printf '\t%s (%s)' "$rate" "$p99"; fi
  done
  printf '\nsupport queries, slowest p99 ms'
  for name in "${NAMES[@]}"; do
    if [ "$name" = baseline ]; then printf '\t—'; else read -r worst _ <<<"${FIG[support-$name]}"; printf '\t%s' "$worst"; fi
  done
  printf '\n'
} | column -t -s $'\t'
echo
for layout in "${LAYOUTS[@]}"; do
  read -r r1_rps r1_p99 <<<"${FIG[manifest1-$layout-replica]}"
  read -r r16_rps r16_p99 <<<"${FIG[manifest16-$layout-replica]}"
  echo "manifest GET straight to replica 1 of $layout (no haproxy): 1 client $r1_rps/s ($r1_p99 ms p99), 16 clients $r16_rps/s ($r16_p99 ms p99)"
done
read -r n1_rate n1_p99 <<<"${FIG[ingest-production-narrow-replica]}"
read -r n3_rate n3_p99 <<<"${FIG[ingest-production-narrow]}"
echo "receipts, production layout, one database connection per replica: 1 replica asked directly $n1_rate/s ($n1_p99 ms p99), $REPLICAS replicas behind haproxy $n3_rate/s ($n3_p99 ms p99): $(ratio "$n3_rate" "$n1_rate")"
echo "$BUCKETS"
for name in "${LEDGERS[@]}"; do
  echo
  echo "support queries, $name (medians over the rounds of p50 ms and p99 ms, bytes):"
  column -t "$WORK/queries-$name"
done
