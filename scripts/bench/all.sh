#!/usr/bin/env bash
# The benchmark suite: every scenario, ours beside what a user would script, in one
# table, written with the machine and the date to docs/benchmarks.md.
#
#   scripts/bench/all.sh             # 100 MB stack, 3 runs each, scaling to 1 GB
#   scripts/bench/all.sh --quick     # 30 MB, 1 run, scaling to 100 MB (for iterating)
#   scripts/bench/all.sh --no-write  # print only
#   PROFILE=dist scripts/bench/all.sh   # measure the shipped build (slower to compile)
#
# It builds the programs, starts CNCF Distribution (Debian's `docker-registry`) and
# our registry on 127.0.0.1, and runs each scenario several times, interleaving ours
# and the baselines so that noise hits both alike (scripts/bench/suite.py). Figures
# are printed, never asserted. The fleet scenario runs scripts/bench/fleet.sh on a
# registry seeded with 10,000 customers × 30 stacks × 20 versions (1,000 with
# --quick), seeded once and kept under the target folder. The rollout scenario runs
# scripts/bench/rollout.sh: the assignment poll of 10,000 runners (1,000 with --quick)
# at 3/s and 300/s beside support's queries, and a rollout of 100 emulated customers
# in three waves, beside a bare `GET /healthz` and the configured soak times. The
# alerts scenario runs scripts/bench/alerts.sh: 1,000 receipts (200 with --quick)
# that each change a customer's state, ingested with a webhook told of each and
# without, and when the last event reached it.
# scripts/bench/state.sh: plan and apply of the example with its state in the
# account's bucket beside the local backend, and preflight beside the plan.
# scripts/bench/scaleout.sh: three replicas behind haproxy with blobs in moto's S3
# and metadata in one SQLite database they share on this host, beside Distribution's
# S3 driver on the same moto and the embedded default.
#
#   scripts/bench/all.sh --only scaleout [--quick]   # just the scale-out rows, printed
#   scripts/bench/all.sh --only transfers            # just build, publish, push, pull
#   scripts/bench/all.sh --only fixed                # just check of a module tree and a 10 MB build
#
# With --only nothing is written unless `--out FILE` names where: a partial run must
# not replace the whole suite's figures in docs/benchmarks.md.
# scripts/bench/providers.sh measures the provider packages and offline plans of the
# real example separately.

source "$(dirname "$0")/common.sh"
need_tools pigz openssl git skopeo docker-registry wrk curl python3 haproxy

PROFILE=${PROFILE:-release}
QUICK=false ONLY=
previous=
for arg in "$@"; do
  [ "$arg" != --quick ] || QUICK=true
  [ "$previous" != --only ] || ONLY=$arg
  case "$arg" in --only=*) ONLY=${arg#--only=} ;; esac
  previous=$arg
done

# The scale-out rows build and start what they need themselves (scaleout.sh): no
# packager, runner or SHA-256 preamble.
if [ "$ONLY" = scaleout ]; then
  exec python3 "$ROOT/scripts/bench/suite.py" --bin "$CARGO_TARGET_DIR/release" "$@"
fi

echo "building the programs ($PROFILE)…" >&2
(cd "$ROOT" && cargo build --quiet --profile "$PROFILE" \
  -p stackpack-packager -p stackpack-runner -p stackpack-registry)
(cd "$ROOT" && cargo build --quiet --release -p stackpack-bundle --example sha_floor)
BIN=$CARGO_TARGET_DIR/$PROFILE

PREAMBLE=$(mktemp)
SAMPLE=$(mktemp)
trap 'rm -f "$PREAMBLE" "$SAMPLE"' EXIT

{
  echo "## Program sizes"
  echo
  echo "| program | $PROFILE |$( [ "$PROFILE" = dist ] || [ ! -x "$CARGO_TARGET_DIR/dist/stackpack" ] || echo " dist (\`cargo build --profile dist\`) |")"
  echo "|---|---|$( [ "$PROFILE" = dist ] || [ ! -x "$CARGO_TARGET_DIR/dist/stackpack" ] || echo "---|")"
  for program in stackpack stackpack-runner stackpack-registry; do
    size=$(stat -c %s "$BIN/$program")
    row="| \`$program\` | $(( size / 1048576 )) MiB |"
    if [ "$PROFILE" != dist ] && [ -x "$CARGO_TARGET_DIR/dist/$program" ]; then
      row="$row $(( $(stat -c %s "$CARGO_TARGET_DIR/dist/$program") / 1048576 )) MiB |"
    fi
    echo "$row"
  done
  echo
  if (cd "$ROOT" && cargo tree -q -e normal -i aws-lc-sys -p stackpack-packager -p stackpack-runner >/dev/null 2>&1); then
    echo "aws-lc-sys is still in the packager's or the runner's dependencies."
  else
    echo "\`cargo tree -i aws-lc-sys -p stackpack-packager -p stackpack-runner\`: not a dependency (TLS is rustls with ring)."
  fi
  echo
  echo "## SHA-256 at the hardware floor"
  echo
  mb=$($QUICK && echo 128 || echo 512)
  head -c $(( mb * 1048576 )) /dev/urandom >"$SAMPLE"
  ours=() theirs=()
  for _ in 1 2 3; do
    start=$(date +%s.%N); "$CARGO_TARGET_DIR/release/examples/sha_floor" "$SAMPLE" >"$SAMPLE.out"; end=$(date +%s.%N)
    ours+=("$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }')")
    start=$(date +%s.%N); openssl dgst -sha256 "$SAMPLE" >/dev/null; end=$(date +%s.%N)
    theirs+=("$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }')")
  done
  median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
  echo "$mb MiB of random bytes, hashed whole, 3 runs in turns (medians):"
  echo "our SHA-256 (\`sha2\`, $(sed -n 2p "$SAMPLE.out" | cut -d, -f1)): $(median "${ours[@]}") s;" \
    "\`openssl dgst -sha256\`: $(median "${theirs[@]}") s;" \
    "ratio $(awk -v a="$(median "${ours[@]}")" -v b="$(median "${theirs[@]}")" 'BEGIN { printf "%.2f", a / b }')× openssl's time."
  rm -f "$SAMPLE.out"
} >"$PREAMBLE"
rm -f "$SAMPLE"
cat "$PREAMBLE" >&2

python3 "$ROOT/scripts/bench/suite.py" --bin "$BIN" --preamble "$PREAMBLE" "$@"
