#!/usr/bin/env bash
# Provider packages inside bundles, measured (never asserted), on the example with the
# real AWS provider 3.39.0 (a 38 MB registry zip):
#
#   - the bundle's size with its provider layer, and the stack layer alone;
#   - bytes `publish` sends for the first version, and for a second version after a
#     one-line `.tf` change (only the stack layer, config and manifests should move);
#   - `stackpack-runner verify` of that bundle beside `openssl dgst -sha256` and
#     `sha256sum` of the same bytes (the floor: every byte hashed once);
#   - import + `init` offline (the runner's `plan` with the provider from the bundle)
#     against the AWS API emulator, cold (provider unpacked) and warm (cached).
#
#   scripts/bench/providers.sh                 # debug binaries (dependencies optimised)
#   PROFILE=release scripts/bench/providers.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
PROFILE=${PROFILE:-debug}
scripts/install-test-deps.sh
if [ "$PROFILE" = release ]; then
  cargo build --release -q --bins
else
  cargo build -q --bins
fi
# Where cargo put them (CARGO_TARGET_DIR relative or absolute), copied into this
# run's own folder below: a build by another run must not replace them mid-run.
target_dir=${CARGO_TARGET_DIR:-target}
case $target_dir in /*) ;; *) target_dir=$root/$target_dir ;; esac
built=$target_dir/$PROFILE
terraform=$(scripts/terraform-path.sh)
work=$(mktemp -d)
bin=$work/bin
mkdir -p "$bin"
for program in stackpack stackpack-runner stackpack-registry; do
  if [ -x "$built/$program" ]; then cp "$built/$program" "$bin/"; fi
done
moto_dir=$work/moto
trap '"$root/scripts/moto.sh" stop "$moto_dir" > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(now)"; }
row() { printf "%-66s %14s\n" "$1" "$2"; }

cp -r examples/acme-infra "$work/repo"
cd "$work/repo"
printf '.stackpack/\n' > .gitignore
"$root/scripts/provider-mirror.sh" .stackpack/providers 3.39.0 > /dev/null
git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm bench
"$bin/stackpack" keygen --out "$work/vendor" > /dev/null 2>&1

# A registry to publish to: CNCF Distribution on loopback.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/distribution"
printf 'version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' "$work/distribution/data" "$port" > "$work/distribution/config.yml"
docker-registry serve "$work/distribution/config.yml" > /dev/null 2>&1 &
registry_pid=$!
trap '"$root/scripts/moto.sh" stop "$moto_dir" > /dev/null 2>&1 || true; kill $registry_pid 2> /dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/v2/" > /dev/null && break; sleep 0.1; done
sent() { python3 -c 'import json,sys; print(sum(s["bytesSent"] or 0 for s in json.load(sys.stdin)["stacks"]))'; }
publish() { "$bin/stackpack" publish --registry "127.0.0.1:$port/acme" --insecure --key "$work/vendor.key" --no-modules --json 2> /dev/null; }

echo "provider packages in bundles ($PROFILE binaries, $(nproc) cores)"
first_bytes=$(publish | sent)
echo '# a comment' >> stacks/data-plane/main.tf
git -c user.name=b -c user.email=b@b commit -qam "a one-line change"
second_bytes=$(publish | sent)
"$bin/stackpack" export --registry "127.0.0.1:$port/acme" --insecure data-plane@0.1.1 -o "$work/bundle.tar" > /dev/null 2>&1
zip=.stackpack/providers/registry.terraform.io/hashicorp/aws/terraform-provider-aws_3.39.0_linux_amd64.zip
row "bundle tar (stack layer + provider + config, signature)" "$(stat -c %s "$work/bundle.tar") B"
row "provider layer (the registry's zip, stored as it is)" "$(stat -c %s "$zip") B"
row "publish, first version, both stacks (provider sent once)" "$first_bytes B"
row "publish, second version after a one-line .tf change" "$second_bytes B"

home=$work/runner
"$bin/stackpack-runner" --home "$home" init --customer globex --engine-path "$terraform" > /dev/null 2>&1
"$bin/stackpack-runner" --home "$home" trust add "$work/vendor.pub" > /dev/null 2>&1
start=$(now); "$bin/stackpack-runner" --home "$home" import "$work/bundle.tar" > /dev/null 2>&1; import_s=$(since "$start")
start=$(now); "$bin/stackpack-runner" --home "$home" verify data-plane@0.1.1 > /dev/null 2>&1; verify_s=$(since "$start")
start=$(now); openssl dgst -sha256 "$work/bundle.tar" > /dev/null; openssl_s=$(since "$start")
start=$(now); sha256sum "$work/bundle.tar" > /dev/null; sha_s=$(since "$start")
row "import (verify every blob, store)" "$import_s s"
row "stackpack-runner verify (signature, digests, archive)" "$verify_s s"
row "openssl dgst -sha256 of the same bytes (the floor)" "$openssl_s s"
row "sha256sum of the same bytes" "$sha_s s"

url=$("$root/scripts/moto.sh" start "$moto_dir")
export TF_VAR_aws_endpoint=$url AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
for run in cold warm; do
  start=$(now)
  "$bin/stackpack-runner" --home "$home" plan data-plane@0.1.1 --inputs customers/globex/data-plane.tfvars --quiet > /dev/null 2>&1
  row "plan offline: verify, providers from the bundle, init, plan ($run)" "$(since "$start") s"
done
