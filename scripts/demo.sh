#!/usr/bin/env bash
# The main job, end to end, on the bundled example `examples/acme-infra`: make a
# signing key, work out every stack's version, build and sign the bundles, and
# inspect and verify them. Everything goes under `target/demo/`.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --bins
bin=target/debug
demo=target/demo
mkdir -p "$demo"
[ -f "$demo/vendor.key" ] || $bin/stackpack keygen --out "$demo/vendor"

echo "== versions"
$bin/stackpack version --repo examples/acme-infra --branch main --out "$demo/bundles" --allow-dirty
echo "== build and sign"
$bin/stackpack build --repo examples/acme-infra --branch main --out "$demo/bundles" --key "$demo/vendor.key" --allow-dirty
echo "== bundles"
$bin/stackpack inspect "$demo/bundles"
echo "== verify data-plane"
version=$($bin/stackpack inspect "$demo/bundles" --json | python3 -c 'import json,sys; print(max((b for b in json.load(sys.stdin)["bundles"] if b["stack"]=="data-plane"), key=lambda b: b["version"])["version"])')
$bin/stackpack inspect "$demo/bundles:data-plane@$version" --trust "$demo/vendor.pub" | head -12
