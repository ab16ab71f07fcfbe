#!/usr/bin/env bash
# The main job, end to end, on the bundled example `examples/acme-infra`, all on
# this machine's loopback, building real AWS resources in an emulated AWS account:
#
#   1. the vendor's CI: a signing key, a provider mirror, the embedded registry,
#      `stackpack publish` (each bundle carries the AWS provider it locks);
#   2. a connected customer (globex): its engine state in a bucket of its own
#      account; the runner pulls, verifies, applies real resources, reports; then an upgrade changes a resource in place, a change
#      made by hand is found by `drift`, `rollback` puts the earlier version back;
#   3. a changed default that would replace a resource: the contract says major,
#      and the plan shows the replacement;
#   4. releases: globex moves from the one-stack data plane to the `environment`
#      release (network → cluster → gpu-pools, model-storage, wired by outputs, and
#      the inference service pinned by digest): destroyed, then applied as one,
#      timed; its service mirrored into globex's own registry; a second release that
#      changes only the GPU pools re-applies only them; rollback returns the whole
#      environment;
#   5. an airgapped customer (initech): the vendor exports the release as one tar;
#      inside a network namespace with no network at all (root only), the runner
#      imports it and applies every stack in order, and `init` installs the provider
#      from the bundles; receipts travel back as a file;
#   6. a rollout: the `stable` channel in three waves (canary, early, general);
#      the vendor promotes the release with its key; each customer's runner (its
#      own home, its own emulated account) reconciles with `sync`; a canary's
#      failed apply halts the rollout and the next wave is not assigned; after the
#      customer's fix and `resume`, every wave converges; a release that replaces
#      GPU node groups is forecast for each customer from the version it runs
#      (promote reads the forecast; each real plan is held against it), then waits
#      for globex's approval of the exact plan;
#   7. support asks the registry which version every customer runs, what exactly
#      the release they run holds, and where each rollout stands.
#
# The customer's AWS account is moto, an emulator of the AWS APIs on 127.0.0.1
# (`scripts/moto.sh`): the only stand-in here, since no cloud is reachable.
# Everything lives under `target/demo/` (cargo's target folder, wherever
# `CARGO_TARGET_DIR` puts it) and is made afresh on each run.
#
# Each command is shown before its output (`$ stackpack publish …`, on stderr), as a
# user would type it: the programs by name, paths relative to the demo's folder.
# At the end the registry keeps serving, with a support token to sign in to its
# pages: until Enter on a terminal, until Ctrl-C with `--keep`; otherwise the last
# lines say how to serve the demo's data again.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ "${1:-}" = "--airgapped-customer" ]; then
  # Run by ourselves under `unshare -n` (step 5): no network but a loopback.
  shift
  demo=$1 bin=$2 terraform=$3 release=$4
  ip link set lo up
  if python3 -c 'import socket; socket.create_connection(("pypi.org", 443), timeout=3)' 2> /dev/null; then
    echo "demo.sh: the namespace reaches the network" >&2
    exit 1
  fi
  echo "inside a network namespace: no network but 127.0.0.1"
  url=$("$root"/scripts/moto.sh start "$demo/moto-initech")
  trap '"$root/scripts/moto.sh" stop "$demo/moto-initech"' EXIT
  export TF_VAR_aws_endpoint=$url AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
  shown() {
    local line="$*"
    printf '$ %s\n' "${line//$demo\//}" >&2
  }
  initech() { shown stackpack-runner --home "$demo/runner-initech" "$@"; "$bin/stackpack-runner" --home "$demo/runner-initech" "$@"; }
  initech init --customer initech --engine terraform --engine-path "$terraform"
  initech trust add "$demo/vendor.pub"
  initech import "$demo/initech-release.tar"
  initech apply "environment@$release" --inputs-dir "$demo/acme-infra/customers/initech" --yes
  initech status
  initech receipts export -o "$demo/initech-receipts.json"
  exit 0
fi

keep=0
case "${1:-}" in
  --keep) keep=1 ;;
  "") ;;
  -h | --help)
    echo "usage: scripts/demo.sh [--keep]   (--keep: the registry serves until Ctrl-C, also with no terminal)"
    exit 0
    ;;
  *)
    echo "demo.sh: unknown option \`$1\`; it takes only \`--keep\`" >&2
    exit 2
    ;;
esac

# Colour only on a terminal, and never with NO_COLOR (https://no-color.org).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  bold=$'\033[1m' dim=$'\033[2m' plain=$'\033[0m'
else
  bold='' dim='' plain=''
fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }

scripts/install-test-deps.sh
terraform=$(scripts/terraform-path.sh)
export CHECKPOINT_DISABLE=1 NO_COLOR=${NO_COLOR:-}
# Cargo shows its progress on a terminal; the first build compiles every dependency.
echo "==> building stackpack, stackpack-runner and stackpack-registry (a first build compiles every dependency: minutes; cargo shows its progress)" >&2
built_from=$(date +%s)
cargo build --bins
echo "==> built in $(($(date +%s) - built_from)) s" >&2
# Where cargo put them: `CARGO_TARGET_DIR` or `build.target-dir` may move `target/`.
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
bin=$target_dir/debug
demo=${STACKPACK_DEMO_DIR:-$target_dir/demo}
rm -rf "$demo"
mkdir -p "$demo"
# `$ command`, as a user would type it: program names, paths inside the demo's
# folder relative to it, the registry token left in the environment it came from.
shown() {
  local line="$*"
  line=${line//$demo\//}
  line=${line//$root\//}
  printf '%s$ %s%s\n' "$dim" "$line" "$plain" >&2
}
stackpack() { shown stackpack "$@"; "$bin/stackpack" "$@"; }
registry_cli() { shown stackpack-registry "$@"; "$bin/stackpack-registry" "$@"; }
# The engine's own output (init, plan, apply: thousands of lines) goes to one log;
# the runners print their summaries, and an engine error is still shown.
export STACKPACK_ENGINE_LOG=$demo/engine.log
echo "the engine's own output is kept in $STACKPACK_ENGINE_LOG"
seconds() { python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for account in globex umbrella hooli forecast; do
    "$root"/scripts/moto.sh stop "$demo/moto-$account" 2> /dev/null || true
  done
}
trap cleanup EXIT

step "the vendor's repository: the example stacks, their lock files, a provider mirror"
cp -r examples/acme-infra "$demo/acme-infra"
cd "$demo/acme-infra"
printf '.stackpack/\n' > .gitignore
# What CI does before publishing: fill the mirror `stackpack.toml` names
# (`terraform providers mirror` does the same with a network).
"$root/scripts/provider-mirror.sh" .stackpack/providers 3.39.0 > /dev/null
git init -q -b main
git add -A
git -c user.name=Acme -c user.email=ci@acme.example commit -qm "Acme infrastructure"
key_id=$(stackpack keygen --out "$demo/vendor")
echo "the vendor's signing key \`$key_id\`: vendor.key stays with CI, vendor.pub goes to every customer"
commit() { git -c user.name=Acme -c user.email=ci@acme.example commit -qam "$1"; }

step "the embedded registry on 127.0.0.1"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry_data=$demo/registry
registry_cli init --data "$registry_data" > /dev/null
token() { "$bin/stackpack-registry" token create --data "$registry_data" --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
publisher_token=$(token --role publisher)
globex_token=$(token --role customer --customer globex)
# Rollouts move on a tick of a second here (5 s by default), so the waves' soak shows.
shown stackpack-registry serve --data "$registry_data" --listen "127.0.0.1:$port" --rollout-tick-secs 1
"$bin/stackpack-registry" serve --data "$registry_data" --listen "127.0.0.1:$port" --rollout-tick-secs 1 > "$demo/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$port/healthz" > /dev/null && break
  sleep 0.1
done
echo "listening on 127.0.0.1:$port (data in $registry_data)"
registry=127.0.0.1:$port/acme

step "the inference service's image (umoci), pushed with skopeo, pinned in the release"
# What the vendor's service pipeline does: build an OCI image and push it. The release
# names it by tag; publish pins the digest the tag points at.
umoci init --layout "$demo/inference-api"
umoci new --image "$demo/inference-api:1.0.0"
umoci unpack --rootless --image "$demo/inference-api:1.0.0" "$demo/inference-api-rootfs" > /dev/null
printf '#!/bin/sh\necho "acme inference-api 1.0.0"\n' > "$demo/inference-api-rootfs/rootfs/serve"
chmod +x "$demo/inference-api-rootfs/rootfs/serve"
umoci repack --image "$demo/inference-api:1.0.0" "$demo/inference-api-rootfs"
umoci config --image "$demo/inference-api:1.0.0" --config.cmd /serve
skopeo copy --quiet --dest-tls-verify=false --dest-registry-token "$publisher_token" \
  "oci:$demo/inference-api:1.0.0" "docker://$registry/services/inference-api:1.0.0"
cat >> stackpack.toml <<TOML

[releases.environment.services]
inference-api = "$registry/services/inference-api:1.0.0"
TOML
commit "environment: the inference service"
echo "pushed $registry/services/inference-api:1.0.0"

# Publishes, shows what went out (with the bytes sent), and sets $version to the
# data plane's version and $release to the environment release's, when published.
publishes=0
publish() {
  publishes=$((publishes + 1))
  local report=$demo/publish-$publishes.json
  STACKPACK_REGISTRY_TOKEN=$publisher_token stackpack publish --registry "$registry" --insecure --key "$demo/vendor.key" --json > "$report"
  version=$(python3 - "$report" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for stack in report["stacks"]:
    state = "published" if stack["published"] else "unchanged"
    print(f"  {stack['stack']:<14} {stack['version'] or '-':<10} {state:<10} {stack['bytesSent'] or 0:>12,} bytes sent  {stack['reason'] or ''}", file=sys.stderr)
for release in report.get("releases", []):
    state = "published" if release["published"] else "unchanged"
    why = f"bump {release['bump']}" if release["changes"] else "first release"
    print(f"  release {release['release']:<6} {release['version'] or '-':<10} {state:<10} {release['bytesSent'] or 0:>12,} bytes sent  {why if release['published'] else ''}", file=sys.stderr)
    for change in release.get("changes", []):
        print(f"      {change['part']}: {change['kind']} ({change['bump']}) {change['detail']}", file=sys.stderr)
print(next(s["version"] for s in report["stacks"] if s["stack"] == "data-plane"))
print(next((r["version"] for r in report.get("releases", []) if r["release"] == "environment" and r["published"]), ""))
PY
)
  local published_release
  published_release=$(printf '%s\n' "$version" | sed -n 2p)
  version=$(printf '%s\n' "$version" | sed -n 1p)
  [ -z "$published_release" ] || release=$published_release
}

step "CI on main: check the interface contract, version, build, sign, publish"
STACKPACK_REGISTRY_TOKEN=$publisher_token stackpack check --registry "$registry" --insecure || true
publish
first=$version

step "globex's AWS account (the emulator) and runner: pull, verify, apply real resources, report"
url=$("$root"/scripts/moto.sh start "$demo/moto-globex")
echo "the AWS API emulator answers on $url"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
globex() { shown stackpack-runner --home "$demo/runner-globex" "$@"; TF_VAR_aws_endpoint=$url "$bin/stackpack-runner" --home "$demo/runner-globex" "$@"; }
# Its engine state lives in its own account: a bucket the runner makes versioned,
# encrypted and private (`--s3-endpoint` points at the emulator; a real account
# leaves it out). The runner home keeps no state file then.
globex init --customer globex --engine terraform --engine-path "$terraform" \
  --backend s3 --bucket globex-tf-state --create-bucket --s3-endpoint "$url"
globex trust add "$demo/vendor.pub"
# Globex's security team takes only what the vendor's repository built on `main`, with
# its provenance and SBOM: checked on every pull and again before every apply.
shown "(runner.toml) [policy] require = [\"provenance\", \"sbom\"]; [policy.provenance] repository = \"https://git.acme.example/platform/acme-infra\", refs = [\"refs/heads/main\"]"
python3 - "$demo/runner-globex/runner.toml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read().replace("[policy]\n", '[policy]\nrequire = ["provenance", "sbom"]\n', 1)
text += '\n[policy.provenance]\nrepository = "https://git.acme.example/platform/acme-infra"\nrefs = ["refs/heads/main"]\n'
open(path, "w").write(text)
PY
STACKPACK_REGISTRY_TOKEN=$globex_token globex pull "$registry/stacks/data-plane:$first" --insecure
globex check-inputs "data-plane@$first" --inputs customers/globex/data-plane.tfvars
globex apply "data-plane@$first" --inputs customers/globex/data-plane.tfvars --yes
python3 - "$url" <<'PY'
import sys, boto3
kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1")
ec2, eks, s3 = (boto3.client(s, **kw) for s in ("ec2", "eks", "s3"))
vpcs = ec2.describe_vpcs(Filters=[{"Name": "cidr", "Values": ["10.40.0.0/16"]}])["Vpcs"]
subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [v["VpcId"] for v in vpcs]}])["Subnets"]
clusters = eks.list_clusters()["clusters"]
groups = [g for c in clusters for g in eks.list_nodegroups(clusterName=c)["nodegroups"]]
buckets = [b["Name"] for b in s3.list_buckets()["Buckets"]]
print(f"in the account now: {len(vpcs)} VPC, {len(subnets)} subnets, clusters {clusters}, node groups {groups}, buckets {buckets}")
PY
# The state the apply wrote: an object in globex's bucket (listed through the S3 API),
# and no state file in the runner's home.
python3 - "$url" "$demo/runner-globex" <<'PY'
import json, os, sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
for o in s3.list_objects_v2(Bucket="globex-tf-state")["Contents"]:
    if o["Key"].endswith(".tfstate"):
        versions = [v for v in s3.list_object_versions(Bucket="globex-tf-state", Prefix=o["Key"])["Versions"] if v["Key"] == o["Key"]]
        print(f"state in globex's own bucket: s3://globex-tf-state/{o['Key']} ({o['Size']:,} bytes, {len(versions)} version{'s' * (len(versions) != 1)} kept)")
    elif o["Key"].endswith(".stackpack.json"):
        record = json.load(s3.get_object(Bucket="globex-tf-state", Key=o["Key"])["Body"])
        print(f"beside it, what runs (a new runner home reads it): s3://globex-tf-state/{o['Key']} ({record['stack']}@{record['version']})")
local = [f for _, _, files in os.walk(sys.argv[2]) for f in files if f.endswith(".tfstate")]
print(f"state files in the runner's home: {len(local)}")
PY
globex report --registry "$registry" --insecure --token "$globex_token"
# What the runner verified before it applied, link by link; then the same proofs,
# found as referrers in the registry, checked with a security team's own tools
# (Sigstore's verifier, securesystemslib and in-toto, CycloneDX's validator).
globex verify "data-plane@$first" --explain
shown python3 scripts/verify/attestations.py --registry "http://127.0.0.1:$port" --repository acme/stacks/data-plane --reference "$first" --key vendor.pub --text
REGISTRY_TOKEN=$globex_token python3 "$root/scripts/verify/attestations.py" --registry "http://127.0.0.1:$port" \
  --repository acme/stacks/data-plane --reference "$first" --key "$demo/vendor.pub" --text

step "an upgrade that changes a resource in place: model weights kept 30 days, not 90"
cat >> stacks/data-plane/variables.tf <<'TF'

variable "model_retention_days" {
  type        = number
  default     = 30
  description = "Days to keep old versions of model weights."
}
TF
sed -i 's|^  region      = var.region$|  region      = var.region\n\n  retention_days = var.model_retention_days|' stacks/data-plane/main.tf
commit "data-plane: model retention"
STACKPACK_REGISTRY_TOKEN=$publisher_token stackpack version --registry "$registry" --insecure
publish
second=$version
echo "the new version moved only what changed: the provider layer was already there"
STACKPACK_REGISTRY_TOKEN=$globex_token globex pull "$registry/stacks/data-plane:$second" --insecure
globex apply "data-plane@$second" --inputs customers/globex/data-plane.tfvars --yes

step "a change made by hand in globex's account is found by drift"
python3 - "$url" <<'PY'
import sys, boto3
ec2 = boto3.client("ec2", endpoint_url=sys.argv[1], region_name="us-east-1")
vpc = ec2.describe_vpcs(Filters=[{"Name": "cidr", "Values": ["10.40.0.0/16"]}])["Vpcs"][0]["VpcId"]
ec2.create_tags(Resources=[vpc], Tags=[{"Key": "changed-by", "Value": "hand"}])
print(f"tagged {vpc} changed-by=hand through the emulator's API")
PY
drift_status=0
globex drift data-plane || drift_status=$?
[ "$drift_status" -eq 3 ] || { echo "drift should have been found (exit 3), got exit $drift_status" >&2; exit 1; }
echo "drift found (exit 3)"
globex report --registry "$registry" --insecure --token "$globex_token"

step "rollback: the previous version's resources come back"
globex rollback data-plane --yes
globex status

step "a changed default that would replace a resource: the contract says major"
sed -i 's|default     = "m6i.large"|default     = "m6i.xlarge"|' modules/cluster/variables.tf
commit "cluster: larger system nodes"
STACKPACK_REGISTRY_TOKEN=$publisher_token stackpack check --registry "$registry" --insecure || echo "check: a major release is needed (exit $?)"
publish
third=$version
STACKPACK_REGISTRY_TOKEN=$globex_token globex pull "$registry/stacks/data-plane:$third" --insecure
# The engine's own plan shows which resource is replaced and why.
STACKPACK_ENGINE_LOG= globex plan "data-plane@$third" --inputs customers/globex/data-plane.tfvars 2>&1 | grep -E "must be replaced|^Plan:|planned" || true

step "releases: globex moves from the one-stack data plane to the environment release (timed)"
start=$(seconds)
globex destroy data-plane --confirm globex
middle=$(seconds)
STACKPACK_REGISTRY_TOKEN=$globex_token globex pull "$registry/releases/environment:$release" --insecure
# The plan shows what it can: stacks whose upstream is not applied yet wait for it.
globex plan "environment@$release" --inputs-dir customers/globex
applying=$(seconds)
globex apply "environment@$release" --inputs-dir customers/globex --yes
end=$(seconds)
python3 -c "import sys; a,b,c,d = map(float, sys.argv[1:]); print(f'one-stack data plane destroyed in {b-a:.1f} s; the release (four stacks, in order, outputs wired) applied in {d-c:.1f} s')" "$start" "$middle" "$applying" "$end"
globex status

step "the release's service, mirrored into globex's own registry (Distribution, on loopback)"
customer_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$demo/globex-registry"
cat > "$demo/globex-registry/config.yml" <<YAML
version: 0.1
storage:
  filesystem:
    rootdirectory: $demo/globex-registry/data
http:
  addr: 127.0.0.1:$customer_port
YAML
docker-registry serve "$demo/globex-registry/config.yml" > "$demo/globex-registry/log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$customer_port/v2/" > /dev/null && break
  sleep 0.1
done
globex mirror-services "environment@$release" --to "127.0.0.1:$customer_port/globex" --insecure
echo "globex's registry now holds: $(curl -fs "http://127.0.0.1:$customer_port/v2/_catalog")"
globex report --registry "$registry" --insecure --token "$globex_token"

step "a second release that changes only the GPU pools: only that stack is applied"
sed -i 's|  cluster_name = var.cluster_name|  cluster_name       = var.cluster_name\n  max_nodes_per_pool = 6|' stacks/gpu-pools/main.tf
commit "gpu-pools: six nodes per pool"
first_release=$release
publish
STACKPACK_REGISTRY_TOKEN=$globex_token globex pull "$registry/releases/environment:$release" --insecure
globex apply "environment@$release" --inputs-dir customers/globex --yes
globex report --registry "$registry" --insecure --token "$globex_token"

step "rollback: the whole environment back to the release before ($first_release)"
globex rollback environment --yes
globex status
globex apply "environment@$release" --inputs-dir customers/globex --yes
globex report --registry "$registry" --insecure --token "$globex_token"

step "initech (airgapped): the release as one tar; import, verify and apply it with no network at all"
STACKPACK_REGISTRY_TOKEN=$publisher_token stackpack export --registry "$registry" --insecure "environment@$release" -o "$demo/initech-release.tar"
ls -l "$demo/initech-release.tar" | awk '{printf "one tar: %s bytes (the release, four bundles with their providers, the service image; each blob once)\n", $5}'
if [ "$(id -u)" -eq 0 ] && command -v unshare > /dev/null && command -v ip > /dev/null; then
  unshare -n "$root/scripts/demo.sh" --airgapped-customer "$demo" "$bin" "$terraform" "$release"
else
  echo "(not root, or no unshare/ip: initech runs on this machine's network instead of a namespace)"
  (cd "$root" && unset TF_VAR_aws_endpoint && scripts/demo.sh --airgapped-customer "$demo" "$bin" "$terraform" "$release") || true
fi
registry_cli customer add initech --name "Initech (airgapped)" --data "$registry_data"
registry_cli receipts import "$demo/initech-receipts.json" --customer initech --data "$registry_data"

step "rollout: the stable channel in three waves; the vendor promotes, runners reconcile with sync"
registry_cli channel set stable --waves canary,early,general --soak 5s --data "$registry_data"
umbrella_token=$(token --role customer --customer umbrella)
hooli_token=$(token --role customer --customer hooli)
for placement in globex:canary umbrella:canary hooli:early; do
  registry_cli customer set "${placement%%:*}" --channel stable --wave "${placement#*:}" --data "$registry_data"
done
# Each customer's inputs live on its side: umbrella's operator mistyped its network
# range (a /8, which AWS refuses); hooli is a new customer on its own range.
mkdir -p "$demo/inputs-umbrella" "$demo/inputs-hooli"
cp customers/umbrella/*.tfvars "$demo/inputs-umbrella/"
for file in customers/umbrella/*.tfvars; do
  sed -e 's/umbrella/hooli/g; s/777788889999/444455556666/; s/10\.80\./10.90./' "$file" > "$demo/inputs-hooli/$(basename "$file")"
done
sed -i 's|^vpc_cidr           = "10.80.0.0/16"|vpc_cidr           = "10.80.0.0/8"|' "$demo/inputs-umbrella/network.tfvars"
# A runner that reconciles: `[sync]` in its runner.toml says where the registry and
# the inputs are, which channel it follows, and what it applies without a person.
sync_settings() {
  cat >> "$1/runner.toml" <<TOML

[sync]
registry = "$registry"
insecure = true
inputs = "$2"
channel = "stable"
approve = "auto-unless-destructive"
TOML
}
sync_settings "$demo/runner-globex" "$demo/acme-infra/customers/globex"
umbrella_url=$("$root"/scripts/moto.sh start "$demo/moto-umbrella")
hooli_url=$("$root"/scripts/moto.sh start "$demo/moto-hooli")
umbrella() { shown stackpack-runner --home "$demo/runner-umbrella" "$@"; TF_VAR_aws_endpoint=$umbrella_url STACKPACK_REGISTRY_TOKEN=$umbrella_token "$bin/stackpack-runner" --home "$demo/runner-umbrella" "$@"; }
hooli() { shown stackpack-runner --home "$demo/runner-hooli" "$@"; TF_VAR_aws_endpoint=$hooli_url STACKPACK_REGISTRY_TOKEN=$hooli_token "$bin/stackpack-runner" --home "$demo/runner-hooli" "$@"; }
for customer in umbrella hooli; do
  $customer init --customer "$customer" --engine terraform --engine-path "$terraform" > /dev/null
  $customer trust add "$demo/vendor.pub" > /dev/null
  sync_settings "$demo/runner-$customer" "$demo/inputs-$customer"
done
echo "umbrella and hooli: runner homes made, each with its own emulated AWS account"
rollout_id() { "$bin/stackpack-registry" rollout status --release environment --data "$registry_data" --json | python3 -c 'import json,sys; print(max(r["id"] for r in json.load(sys.stdin)))'; }
# Syncs until the customer's wave is open and its pass applied (the soak is 5 s).
sync_until_applied() {
  local customer=$1 state
  for _ in $(seq 1 30); do
    state=$($customer sync --json 2>> "$demo/sync-$customer.log" | python3 -c 'import json,sys; print(" ".join(r["state"] for r in json.load(sys.stdin)["report"]["releases"]) or "nothing-assigned")' || true)
    if [ "$state" = applied ]; then
      echo "$customer: its wave opened; the pass applied environment"
      return 0
    fi
    sleep 2
  done
  echo "$customer was never assigned (last pass: $state; see $demo/sync-$customer.log)" >&2
  return 1
}

echo "the vendor promotes environment@$release to stable (signed with its key; the registry cannot approve anything itself)"
promote() {
  local statement
  statement=$(STACKPACK_REGISTRY_TOKEN=$publisher_token stackpack promote "environment@$release" --channel stable --registry "$registry" --insecure --key "$demo/vendor.key")
  echo "the vendor's signed channel statement \`$statement\` is in the registry: each runner on stable verifies it before it runs anything"
}
promote
STACKPACK_REGISTRY_TOKEN=$globex_token globex sync
umbrella sync || echo "umbrella's pass failed (exit $?): the rollout halts"
registry_cli rollout status --release environment --data "$registry_data"
hooli sync
echo "hooli (early wave) is assigned nothing while the rollout is halted"

echo "umbrella's operator fixes the range; its next pass applies; the vendor resumes"
sed -i 's|"10.80.0.0/8"|"10.80.0.0/16"|' "$demo/inputs-umbrella/network.tfvars"
umbrella sync
registry_cli rollout resume "$(rollout_id)" --data "$registry_data"
sync_until_applied hooli
registry_cli rollout status --release environment --data "$registry_data"

step "a release that replaces GPU node groups: forecast for each customer, then it waits for globex's approval of the exact plan"
sed -i 's|  node_group_name = "gpu-${each.key}"|  node_group_name = "${each.value.cluster}-gpu-${each.key}"|' modules/gpu-pool/node-groups.tf
commit "gpu-pool: node groups named after their cluster"
publish
# Before promoting, the vendor forecasts each customer's plan from the version it
# really runs (the registry's ledger) to this one, in an emulated account of its own
# (a separate emulator: bucket names are global, as in AWS). hooli's inputs live only
# on its side, so it is skipped and named. The registry keeps the forecast; promote
# reads it, and every real plan is held against it.
forecast_url=$("$root"/scripts/moto.sh start "$demo/moto-forecast")
printf '\n[witness]\nengine = "%s"\nparallel = 2\n' "$terraform" >> stackpack.toml
commit "witness and forecast: this machine's engine"
echo "forecasting environment@$release for the stable channel (each customer: its running version applied, then this one planned; a few minutes)"
STACKPACK_REGISTRY_TOKEN=$publisher_token STACKPACK_WITNESS_ENDPOINT=$forecast_url stackpack forecast "environment@$release" --channel stable --registry "$registry" --insecure
"$root"/scripts/moto.sh stop "$demo/moto-forecast"
echo "(hooli's skip above is expected: its inputs live only on its side, so the vendor has none to forecast it with; when hooli syncs, its runner plans for real and holds anything destructive for a person)"
promote
echo "(promote warns of hooli for the same reason: with no forecast, hooli's own runner plans for real and holds anything destructive for a person)"
STACKPACK_REGISTRY_TOKEN=$globex_token globex sync
globex pending
pending=$(globex pending --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pending"][0]["id"])')
echo "globex's operator reviews the plan (in $demo/runner-globex/pending/$pending/review.md) and approves it"
STACKPACK_REGISTRY_TOKEN=$globex_token globex approve "$pending"
umbrella sync
sync_until_applied hooli
registry_cli rollout status --release environment --data "$registry_data"

step "support: which version every customer runs"
registry_cli fleet --data "$registry_data"
registry_cli customer show globex --data "$registry_data"
registry_cli fleet --release environment --data "$registry_data"
# What exactly does globex run: every stack, the release, its services, in one answer.
registry_cli customer show globex --data "$registry_data"
registry_cli release show "environment@$release" --data "$registry_data"
registry_cli rollout show "$(rollout_id)" --data "$registry_data"

step "the support pages: the same answers in a browser"
support_token=$(token --role support --name demo-support)
echo "support token (sign in at http://127.0.0.1:$port/ui/login): $support_token"
echo "then: http://127.0.0.1:$port/ui/customers/globex, http://127.0.0.1:$port/ui/releases/environment/$release and http://127.0.0.1:$port/ui/rollouts"
serve_again="$bin/stackpack-registry serve --data $registry_data --listen 127.0.0.1:$port"
if [ "$keep" = 1 ]; then
  echo "the registry keeps serving until Ctrl-C (--keep)"
  trap 'cleanup; exit 0' INT TERM
  wait "${pids[0]}"
elif [ -t 0 ]; then
  read -r -p "the registry keeps serving until you press Enter " _ || true
  echo "stopped; to serve the demo's data again: $serve_again"
else
  echo "no terminal to wait on: the registry stops with the demo; to serve its data again: $serve_again"
fi
