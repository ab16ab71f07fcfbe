#!/usr/bin/env bash
# Verifies a 1 GB bundle with `stackpack-runner verify` and prints its time beside
# `sha256sum` and `openssl dgst -sha256` of the same layer bytes (the floor: a
# verifier must at least hash every byte once), and the runner's peak memory from
# `/usr/bin/time -v`. Measured, never asserted.
#
#   customer-bundle/bench/verify.sh              # 1024 MB, debug binaries (dependencies are optimised)
#   SIZE_MB=256 PROFILE=release customer-bundle/bench/verify.sh
#   SKIP_BUILD=1 …                               # use the binaries already built
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZE_MB="${SIZE_MB:-1024}"
PROFILE="${PROFILE:-debug}"

if [ -n "${SKIP_BUILD:-}" ]; then
  :
elif [ "$PROFILE" = release ]; then
  cargo build --release -q -p stackpack-packager -p stackpack-runner --bins
else
  cargo build -q -p stackpack-packager -p stackpack-runner --bins
fi
TARGET="${CARGO_TARGET_DIR:-target}/$PROFILE"
STACKPACK="$PWD/$TARGET/stackpack"
RUNNER="$PWD/$TARGET/stackpack-runner"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r examples/acme-infra "$work/repo"
rm -rf "$work/repo/.stackpack" "$work/repo/stacks/data-plane/.terraform"
cd "$work/repo"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
git init -q -b main && git add -A && git commit -qm initial
echo "making a ${SIZE_MB} MB incompressible payload" >&2
head -c "${SIZE_MB}M" /dev/urandom > stacks/data-plane/payload.bin
# Intent-to-add: tracked (so it is packed) without git hashing a gigabyte.
git add -N stacks/data-plane/payload.bin

"$STACKPACK" -q keygen --out "$work/vendor" >/dev/null
echo "building the bundle" >&2
"$STACKPACK" -q build --key "$work/vendor.key" --branch main --allow-dirty \
  --stack data-plane --out "$work/layout" --json > "$work/build.json"
version="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([s["version"] for s in d["stacks"] if s["stack"]=="data-plane"][0])' "$work/build.json")"

export STACKPACK_RUNNER_HOME="$work/home"
"$RUNNER" -q init --customer bench --engine-path /bin/true >/dev/null
"$RUNNER" -q trust add "$work/vendor.pub" >/dev/null
echo "importing (verifies once)" >&2
"$RUNNER" -q import "$work/layout" >/dev/null

layer="$(ls -S "$work/home/store/blobs/sha256/"* | head -1)"
bytes="$(stat -c %s "$layer")"
# Warm the page cache for every contender alike.
cat "$layer" > /dev/null

/usr/bin/time -v -o "$work/runner.time" "$RUNNER" -q verify "data-plane@$version" >/dev/null
/usr/bin/time -f '%e %M' -o "$work/sha256sum.time" sha256sum "$layer" >/dev/null
/usr/bin/time -f '%e %M' -o "$work/openssl.time" openssl dgst -sha256 "$layer" >/dev/null

runner_s="$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/runner.time")"
runner_kb="$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/runner.time")"
read -r sha_s sha_kb < "$work/sha256sum.time"
read -r ossl_s ossl_kb < "$work/openssl.time"

printf 'bundle  data-plane@%s, stack layer %s bytes (%s MB payload)\n' "$version" "$bytes" "$SIZE_MB"
printf '%-36s %14s %16s\n' "what" "wall time" "peak memory"
printf '%-36s %14s %13s kB\n' "stackpack-runner verify ($PROFILE)" "$runner_s" "$runner_kb"
printf '%-36s %14s %13s kB\n' "sha256sum" "${sha_s}s" "$sha_kb"
printf '%-36s %14s %13s kB\n' "openssl dgst -sha256" "${ossl_s}s" "$ossl_kb"
