#!/usr/bin/env bash
# Attestations (SBOM, SLSA provenance, Sigstore bundles), measured (never asserted),
# on the example with the real AWS provider 3.39.0, side by side in one run:
#
#   - `publish` with attestations beside the baseline without them: the Stackpack of
#     commit BASELINE (default a152280, the last before attestations), built once
#     into target/bench-baseline; same repository, same registry (CNCF Distribution
#     on loopback), three runs each, the median;
#   - bytes the attestations add per bundle (the referrers' manifests and layers);
#   - `stackpack-runner verify` of one bundle with signature + provenance + SBOM
#     beside the baseline runner's signature alone, on the same bundle;
#   - with KEY_URI set (`awskms:///alias/…`, against moto's KMS when AWS_ENDPOINT_URL
#     points at it), a publish signed through KMS beside one signed with a file key.
#
#   scripts/bench/attestations.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
BASELINE=${BASELINE:-a152280}
scripts/install-test-deps.sh
echo "==> building this Stackpack, and the baseline $BASELINE once (target/bench-baseline)" >&2
cargo build -q --bin stackpack --bin stackpack-runner
target_dir=${CARGO_TARGET_DIR:-target}
case $target_dir in /*) ;; *) target_dir=$root/$target_dir ;; esac
work=$(mktemp -d)
mkdir -p "$work/bin" "$work/base"
cp "$target_dir/debug/stackpack" "$target_dir/debug/stackpack-runner" "$work/bin/"
if [ ! -x "$root/target/bench-baseline/debug/stackpack" ] || [ "$(cat "$root/target/bench-baseline/commit" 2>/dev/null)" != "$BASELINE" ]; then
  git worktree add -f -q "$work/baseline-src" "$BASELINE"
  (cd "$work/baseline-src" && CARGO_TARGET_DIR="$root/target/bench-baseline" cargo build -q --bin stackpack --bin stackpack-runner)
  git worktree remove --force "$work/baseline-src"
  echo "$BASELINE" > "$root/target/bench-baseline/commit"
fi
cp "$root/target/bench-baseline/debug/stackpack" "$root/target/bench-baseline/debug/stackpack-runner" "$work/base/"
terraform=$(scripts/terraform-path.sh)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/distribution"
printf 'version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' "$work/distribution/data" "$port" > "$work/distribution/config.yml"
docker-registry serve "$work/distribution/config.yml" > /dev/null 2>&1 &
registry_pid=$!
trap 'kill $registry_pid 2> /dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/v2/" > /dev/null && break; sleep 0.1; done

now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$(now)"; }
median() { python3 -c "import statistics, sys; print(f'{statistics.median(map(float, sys.argv[1:])):.3f}')" "$@"; }
row() { printf "%-70s %16s\n" "$1" "$2"; }
sent() { python3 -c 'import json,sys; print(sum(s["bytesSent"] or 0 for s in json.load(sys.stdin)["stacks"]))'; }

"$work/bin/stackpack" keygen --out "$work/vendor" > /dev/null 2>&1
# One fresh copy of the example per publish: each publishes 0.1.0 of every stack
# into a namespace of its own, so every run sends the same.
fresh_repo() {
  rm -rf "$work/repo"
  cp -r examples/acme-infra "$work/repo"
  (cd "$work/repo" && printf '.stackpack/\n' > .gitignore \
    && "$root/scripts/provider-mirror.sh" .stackpack/providers 3.39.0 > /dev/null \
    && git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm bench)
}
publish_with() {  # BIN NAMESPACE KEY -> "seconds bytes"
  fresh_repo
  local start out
  start=$(now)
  out=$(cd "$work/repo" && "$1" publish --registry "127.0.0.1:$port/$2" --insecure --key "$3" --no-modules --json 2> /dev/null)
  echo "$(since "$start") $(echo "$out" | sent)"
}

echo "attestations ($(nproc) cores; the baseline is $BASELINE)"
declare -a with_s base_s
for run in 1 2 3; do
  read -r s with_bytes < <(publish_with "$work/bin/stackpack" "with$run" "$work/vendor.key"); with_s+=("$s")
  read -r s base_bytes < <(publish_with "$work/base/stackpack" "base$run" "$work/vendor.key"); base_s+=("$s")
done
bundles=$(find "$work/repo/stacks" -name stack.toml | wc -l)
row "publish, every stack of the example, baseline (no attestations)" "$(median "${base_s[@]}") s"
row "publish, the same with SBOM + provenance + Sigstore signature" "$(median "${with_s[@]}") s"
row "bytes sent, baseline" "$base_bytes B"
row "bytes sent, with attestations" "$with_bytes B"
row "bytes the attestations add in all ($bundles bundles, their release, the statements)" "$(( with_bytes - base_bytes )) B"
row "  per bundle (each bundle's are also in the release's repository)" "$(( (with_bytes - base_bytes) / bundles )) B"

# Verify one bundle: the same export, imported by each runner.
"$work/bin/stackpack" export --registry "127.0.0.1:$port/with1" --insecure data-plane@0.1.0 -o "$work/bundle.tar" > /dev/null 2>&1
for side in bin base; do
  home=$work/runner-$side
  "$work/$side/stackpack-runner" --home "$home" init --customer globex --engine-path "$terraform" > /dev/null 2>&1
  "$work/$side/stackpack-runner" --home "$home" trust add "$work/vendor.pub" > /dev/null 2>&1
  "$work/$side/stackpack-runner" --home "$home" import "$work/bundle.tar" > /dev/null 2>&1
  times=()
  for _ in 1 2 3 4 5; do
    start=$(now); "$work/$side/stackpack-runner" --home "$home" verify data-plane@0.1.0 > /dev/null 2>&1; times+=("$(since "$start")")
  done
  declare "verify_$side=$(median "${times[@]}")"
done
row "runner verify, signature alone (baseline runner)" "$verify_base s"
row "runner verify, signature + provenance + SBOM" "$verify_bin s"

if [ -n "${KEY_URI:-}" ]; then
  declare -a kms_s file_s
  for run in 1 2 3; do
    read -r s _ < <(publish_with "$work/bin/stackpack" "kms$run" "$KEY_URI"); kms_s+=("$s")
    read -r s _ < <(publish_with "$work/bin/stackpack" "file$run" "$work/vendor.key"); file_s+=("$s")
  done
  row "publish signed with a file key" "$(median "${file_s[@]}") s"
  row "publish signed through KMS ($KEY_URI)" "$(median "${kms_s[@]}") s"
fi
