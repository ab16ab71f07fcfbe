#!/usr/bin/env bash
# The main job, end to end, on the bundled example `examples/acme-infra`, all on
# this machine's loopback:
#
#   1. the vendor's CI: a signing key, the embedded registry, `stackpack publish`;
#   2. a second commit that adds an input: the packager computes a minor release;
#   3. a connected customer (globex): the runner pulls, verifies, checks inputs,
#      applies with real Terraform, and reports its receipt to the registry;
#   4. an airgapped customer (initech): the vendor exports a tar, the runner imports
#      it offline, applies, and the receipts travel back as a file;
#   5. support asks the registry which version every customer runs.
#
# Everything lives under `target/demo/` and is made afresh on each run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

scripts/install-test-deps.sh
terraform=$(scripts/terraform-path.sh)
chmod +x "$terraform"
export CHECKPOINT_DISABLE=1 NO_COLOR=${NO_COLOR:-}
cargo build --quiet --bins
bin=$root/target/debug
demo=$root/target/demo
rm -rf "$demo"
mkdir -p "$demo"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "the vendor's repository: a git repository with the example stacks"
cp -r examples/acme-infra "$demo/acme-infra"
cd "$demo/acme-infra"
printf '.stackpack/\n' > .gitignore
git init -q -b main
git add -A
git -c user.name=Acme -c user.email=ci@acme.example commit -qm "Acme infrastructure"
"$bin/stackpack" keygen --out "$demo/vendor"

step "the embedded registry on 127.0.0.1"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry_data=$demo/registry
token() { "$bin/stackpack-registry" token create --data "$registry_data" --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
publisher_token=$(token --role publisher)
globex_token=$(token --role customer --customer globex)
"$bin/stackpack-registry" serve --data "$registry_data" --listen "127.0.0.1:$port" > "$demo/registry.log" 2>&1 &
registry_pid=$!
trap 'kill $registry_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$port/healthz" > /dev/null && break
  sleep 0.1
done
echo "listening on 127.0.0.1:$port (data in target/demo/registry)"
registry=127.0.0.1:$port/acme

step "CI on main: check the interface contract, version, build, sign, publish"
"$bin/stackpack" check || true
STACKPACK_REGISTRY_TOKEN=$publisher_token "$bin/stackpack" publish --registry "$registry" --insecure --key "$demo/vendor.key"

step "a new input with a default: the packager computes a minor release"
cat >> stacks/data-plane/variables.tf <<'TF'

variable "log_retention_days" {
  type        = number
  default     = 30
  description = "Days to keep cluster logs."
}
TF
git -c user.name=Acme -c user.email=ci@acme.example commit -qam "data-plane: log retention"
"$bin/stackpack" version
STACKPACK_REGISTRY_TOKEN=$publisher_token "$bin/stackpack" publish --registry "$registry" --insecure --key "$demo/vendor.key"

step "globex (connected): pull, verify, check inputs, apply, report"
globex() { "$bin/stackpack-runner" --home "$demo/runner-globex" "$@"; }
globex init --customer globex --engine terraform --engine-path "$terraform"
globex trust add "$demo/vendor.pub"
STACKPACK_REGISTRY_TOKEN=$globex_token globex pull "$registry/stacks/data-plane:0.1.0" --insecure
globex check-inputs data-plane@0.1.0 --inputs customers/globex/data-plane.tfvars
globex apply data-plane@0.1.0 --inputs customers/globex/data-plane.tfvars --yes
globex status
globex report --registry "http://127.0.0.1:$port" --token "$globex_token"

step "initech (airgapped): export a tar, import offline, apply, carry receipts back"
STACKPACK_REGISTRY_TOKEN=$publisher_token "$bin/stackpack" export --registry "$registry" --insecure data-plane@0.2.0 -o "$demo/initech-bundles.tar"
initech() { "$bin/stackpack-runner" --home "$demo/runner-initech" "$@"; }
initech init --customer initech --engine terraform --engine-path "$terraform"
initech trust add "$demo/vendor.pub"
initech import "$demo/initech-bundles.tar"
initech apply data-plane@0.2.0 --inputs customers/initech/data-plane.tfvars --yes
initech receipts export -o "$demo/initech-receipts.json"
"$bin/stackpack-registry" receipts import "$demo/initech-receipts.json" --data "$registry_data"

step "support: which version every customer runs"
"$bin/stackpack-registry" fleet --data "$registry_data"
