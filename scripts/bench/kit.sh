#!/usr/bin/env bash
# Kits for airgapped customers, measured (never asserted), side by side in one run:
#
#   1. bytes: a whole kit (new customer), a kit `--for` a customer one release
#      behind, and `stackpack export` of the whole release (today's airgap tar);
#   2. `sh verify.sh` on a kit beside `sha256sum -c` alone;
#   3. kit to applied release inside `unshare -n` (verify, import with the kit's
#      engine, apply) beside today's `import` + `apply` of the export tar with an
#      engine the customer brought.
#
# The release `hello-env` carries its engine (Terraform 0.15, the one static engine
# binary here, 35 MB) and one provider-free stack; our registry on loopback holds
# it. The engine dominates the bytes, as it would a real kit beside small stacks;
# provider layers (not in this stack) are left out by `--for` the same way.
#
#   scripts/bench/kit.sh          # debug binaries; about a minute
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
source scripts/bench/common.sh
need_tools curl
echo "== building the programs (debug)" >&2
cargo build -q --workspace --bins
bin=$CARGO_TARGET_DIR/debug
engine=$(scripts/terraform-path.sh 0.15)
export CHECKPOINT_DISABLE=1 NO_COLOR=1
work=$(mktemp -d)
registry_pid=""
cleanup() { [ -n "$registry_pid" ] && kill "$registry_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

timed() { # timed LABEL command...: wall seconds, to stderr
  local label=$1; shift
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  printf '%s\t%.2f\n' "$label" "$(echo "$end - $start" | bc)"
}

echo "== a vendor with release hello-env carrying terraform 0.15.0, on our registry" >&2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin/stackpack-registry" serve --listen "127.0.0.1:$port" --data "$work/registry" >/dev/null 2>&1 &
registry_pid=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/v2/" && break; sleep 0.1; done
host=127.0.0.1:$port
publisher=$("$bin/stackpack-registry" token create --role publisher --json --data "$work/registry" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
initech=$("$bin/stackpack-registry" token create --role customer --customer initech --json --data "$work/registry" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
repo=$work/vendor
mkdir -p "$repo/stacks/hello" "$work/engines/terraform/0.15.0/linux_amd64"
cp "$engine" "$work/engines/terraform/0.15.0/linux_amd64/terraform"
cat >"$repo/stackpack.toml" <<'EOF'
repository = "https://git.acme.example/hello"
main-branch = "main"
stacks = ["stacks/*"]

[engines]
mirror = "../engines"

[releases.hello-env]
stacks = ["hello"]
engine = { name = "terraform", version = "0.15.0" }
EOF
printf '.stackpack/\n' >"$repo/.gitignore"
printf 'engine = "terraform"\n' >"$repo/stacks/hello/stack.toml"
cat >"$repo/stacks/hello/main.tf" <<'EOF'
terraform {
  required_version = ">= 0.15.0"
}
variable "name" {
  type        = string
  description = "Who to greet."
}
output "greeting" {
  value       = "hello, ${var.name}"
  description = "The greeting."
}
EOF
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m hello
"$bin/stackpack" keygen --out "$work/vendor" >/dev/null 2>&1
publish() { (cd "$repo" && STACKPACK_REGISTRY_TOKEN=$publisher "$bin/stackpack" publish --insecure --registry "$host/acme" --key "$work/vendor.key" >/dev/null 2>&1); }
publish
mkdir -p "$work/archive/stackpack-runner-0.1.0-x86_64-linux"
cp "$bin/stackpack-runner" "$work/archive/stackpack-runner-0.1.0-x86_64-linux/"
tar -czf "$work/runner.tar.gz" -C "$work/archive" stackpack-runner-0.1.0-x86_64-linux
mv "$work/runner.tar.gz" "$work/stackpack-runner-0.1.0-x86_64-linux.tar.gz"
kit() { # kit VERSION OUT [--for C]
  local version=$1 out=$2; shift 2
  STACKPACK_REGISTRY_TOKEN=$publisher "$bin/stackpack" kit "hello-env@$version" --insecure \
    --registry "$host/acme" --key "$work/vendor.key" \
    --runner "$work/stackpack-runner-0.1.0-x86_64-linux.tar.gz" -o "$out" "$@" >/dev/null 2>&1
}
mkdir -p "$work/inputs"
printf 'name = "initech"\n' >"$work/inputs/hello.tfvars"

echo "== initech runs 0.1.0 from a whole kit and reports" >&2
kit 0.1.0 "$work/v1.kit.tar"
runner() { # runner HOME args...
  local home=$1; shift
  env -i PATH=/usr/bin:/bin STACKPACK_RUNNER_HOME="$home" STACKPACK_REGISTRY_TOKEN="$initech" \
    NO_COLOR=1 CHECKPOINT_DISABLE=1 "$bin/stackpack-runner" "$@"
}
runner "$work/initech" init --customer initech >/dev/null
runner "$work/initech" trust add "$work/vendor.pub" >/dev/null
runner "$work/initech" import "$work/v1.kit.tar" >/dev/null
runner "$work/initech" apply hello-env@0.1.0 --inputs-dir "$work/inputs" --yes >/dev/null 2>&1
runner "$work/initech" report --insecure --registry "$host" >/dev/null

echo "== 0.1.1 changes the stack, not the engine" >&2
sed -i 's/The greeting./The greeting, said once./' "$repo/stacks/hello/main.tf"
git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -am once
publish
kit 0.1.1 "$work/whole.kit.tar"
kit 0.1.1 "$work/initech.kit.tar" --for initech
STACKPACK_REGISTRY_TOKEN=$publisher "$bin/stackpack" export --insecure --registry "$host/acme" hello-env@0.1.1 -o "$work/export.tar" >/dev/null 2>&1

printf '\n| what crosses the airgap for hello-env@0.1.1 | bytes |\n|---|---|\n'
printf '| whole kit (new customer: runner, release, engine, keys, sums) | %s |\n' "$(stat -c %s "$work/whole.kit.tar")"
printf '| kit `--for initech` (one release behind) | %s |\n' "$(stat -c %s "$work/initech.kit.tar")"
printf '| `stackpack export` of the release (today; engine inside) | %s |\n' "$(stat -c %s "$work/export.tar")"

mkdir -p "$work/unpacked"
tar -xf "$work/whole.kit.tar" -C "$work/unpacked"
printf '\n| check | seconds |\n|---|---|\n'
(cd "$work/unpacked" && timed '`sh verify.sh` (signature, then every sum)' sh verify.sh) | awk -F'\t' '{printf "| %s | %s |\n", $1, $2}'
(cd "$work/unpacked" && timed '`sha256sum -c` alone' sha256sum -c --quiet SHA256SUMS) | awk -F'\t' '{printf "| %s | %s |\n", $1, $2}'

echo "== kit to applied, offline, beside import + apply of the export tar" >&2
fresh() { # fresh HOME [--engine-path P]
  local home=$1; shift
  runner "$home" init --customer umbrella "$@" >/dev/null
  runner "$home" trust add "$work/vendor.pub" >/dev/null
}
kit_to_applied() {
  (cd "$work/unpacked" && sh verify.sh >/dev/null)
  unshare -n env -i PATH=/usr/bin:/bin STACKPACK_RUNNER_HOME="$work/k" CHECKPOINT_DISABLE=1 "$bin/stackpack-runner" import "$work/whole.kit.tar"
  unshare -n env -i PATH=/usr/bin:/bin STACKPACK_RUNNER_HOME="$work/k" CHECKPOINT_DISABLE=1 "$bin/stackpack-runner" apply hello-env@0.1.1 --inputs-dir "$work/inputs" --yes
}
export_to_applied() {
  unshare -n env -i PATH=/usr/bin:/bin STACKPACK_RUNNER_HOME="$work/e" CHECKPOINT_DISABLE=1 "$bin/stackpack-runner" import "$work/export.tar"
  unshare -n env -i PATH=/usr/bin:/bin STACKPACK_RUNNER_HOME="$work/e" CHECKPOINT_DISABLE=1 "$bin/stackpack-runner" apply hello-env@0.1.1 --inputs-dir "$work/inputs" --yes
}
fresh "$work/k"
fresh "$work/e" --engine-path "$engine"
printf '\n| inside `unshare -n` | seconds |\n|---|---|\n'
timed 'kit: verify.sh, import, apply with the kit'"'"'s engine' kit_to_applied 2>/dev/null | awk -F'\t' '{printf "| %s | %s |\n", $1, $2}'
timed 'today: import the export tar, apply with the customer'"'"'s engine' export_to_applied 2>/dev/null | awk -F'\t' '{printf "| %s | %s |\n", $1, $2}'
