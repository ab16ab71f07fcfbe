#!/usr/bin/env bash
# Releases, measured (never asserted), with real Terraform (1.15.5), the real AWS
# provider (3.39.0) and the example's `environment` release (network → cluster →
# gpu-pools, model-storage: 36 resources) applied against the AWS API emulator (moto),
# each run in a fresh emulator:
#
#   1. the best a user could script: `terraform init` + `terraform apply` of the four
#      stacks one after another, each stack's outputs copied into the next one's
#      inputs by a script (the baseline);
#   2. `stackpack-runner apply environment@V --inputs-dir …` (verify every bundle,
#      unpack, init from the bundles' providers, plan, policies, apply, outputs
#      wired), with `--parallel 1` and `--parallel 2`, and where its time goes (each
#      status line the runner prints, timed);
#   3. a second release that changes only the GPU pools: the runner applies one stack,
#      beside the baseline's re-apply of all four;
#   4. the release's airgap tar beside the sum of its bundles' sizes.
#
#   scripts/bench/release.sh                 # debug binaries (dependencies optimised)
#   PROFILE=release scripts/bench/release.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
PROFILE=${PROFILE:-debug}
echo "== installing what is missing and building the programs ($PROFILE)" >&2
scripts/install-test-deps.sh > /dev/null
if [ "$PROFILE" = release ]; then
  cargo build --release -q --workspace --bins
else
  cargo build -q --workspace --bins
fi
# Where cargo put them (CARGO_TARGET_DIR relative or absolute), copied into this
# run's own folder below: a build by another run must not replace them mid-run.
target_dir=${CARGO_TARGET_DIR:-target}
case $target_dir in /*) ;; *) target_dir=$root/$target_dir ;; esac
built=$target_dir/$PROFILE
terraform=$(scripts/terraform-path.sh)
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
work=$(mktemp -d)
bin=$work/bin
mkdir -p "$bin"
for program in stackpack stackpack-runner stackpack-registry; do
  if [ -x "$built/$program" ]; then cp "$built/$program" "$bin/"; fi
done
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  "$root/scripts/moto.sh" stop "$work/moto" > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "${2:-$(now)}"; }
row() { printf "%-78s %8s\n" "$1" "$2"; }
fresh_moto() {
  "$root/scripts/moto.sh" stop "$work/moto" > /dev/null 2>&1 || true
  rm -rf "$work/moto"
  url=$("$root/scripts/moto.sh" start "$work/moto")
  export TF_VAR_aws_endpoint=$url
}
commit() { git -c user.name=b -c user.email=b@b commit -qam "$1"; }
stacks_in_order="network cluster model-storage gpu-pools"

echo "== the vendor: the example, a provider mirror, an embedded registry, publish" >&2
cp -r examples/acme-infra "$work/repo"
cd "$work/repo"
printf '.stackpack/\n' > .gitignore
"$root/scripts/provider-mirror.sh" .stackpack/providers 3.39.0 > /dev/null
git init -q -b main && git add -A && commit "example"
"$bin/stackpack" keygen --out "$work/vendor" > /dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/stackpack-registry" init --data "$work/registry" > /dev/null
token() { "$bin/stackpack-registry" token create --data "$work/registry" --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
publisher=$(token --role publisher)
customer=$(token --role customer --customer globex)
"$bin/stackpack-registry" serve --data "$work/registry" --listen "127.0.0.1:$port" > "$work/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.1; done
registry=127.0.0.1:$port/acme
publish() {
  STACKPACK_REGISTRY_TOKEN=$publisher "$bin/stackpack" publish --registry "$registry" --insecure --key "$work/vendor.key" --json |
    python3 -c 'import json,sys; print(next(r["version"] for r in json.load(sys.stdin)["releases"] if r["release"] == "environment" and r["published"]))'
}
first=$(publish)

# The baseline: what a user scripts by hand, wiring outputs with a few lines of Python.
mirror=$work/repo/.stackpack/providers
cat > "$work/terraformrc" <<EOF
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.terraform.io/*/*"]
  }
  direct {
    exclude = ["*/*/*"]
  }
}
EOF
bare() { # apply every stack in order, wiring outputs by hand
  local stack
  for stack in $stacks_in_order; do
    (
      cd "$work/bare/stacks/$stack"
      export TF_CLI_CONFIG_FILE=$work/terraformrc
      [ -d .terraform ] || "$terraform" init -input=false -no-color -lockfile=readonly > init.log
      extra=()
      [ -f wired.tfvars.json ] && extra=(-var-file=wired.tfvars.json)
      "$terraform" apply -auto-approve -input=false -no-color -var-file="../../customers/globex/$stack.tfvars" "${extra[@]}" > apply.log ||
        { tail -20 apply.log >&2; exit 1; }
      "$terraform" output -json > outputs.json
      python3 - "$stack" <<'PY'
import json, os, sys, tomllib
outputs = {k: v["value"] for k, v in json.load(open("outputs.json")).items()}
for other in os.listdir(".."):
    config = tomllib.load(open(os.path.join("..", other, "stack.toml"), "rb"))
    wired = {i: w for i, w in config.get("inputs", {}).get("from", {}).items() if w.split(".")[0] == sys.argv[1]}
    if not wired:
        continue
    path = os.path.join("..", other, "wired.tfvars.json")
    values = json.load(open(path)) if os.path.exists(path) else {}
    values.update({i: outputs[w.split(".")[1]] for i, w in wired.items()})
    json.dump(values, open(path, "w"))
PY
    )
  done
}

echo "== 1. the baseline: terraform init + apply, four stacks one after another" >&2
fresh_moto
rm -rf "$work/bare" && cp -r "$work/repo" "$work/bare"
t0=$(now)
bare
baseline=$(since "$t0")
# The same change as step 3's release, by hand: without knowing what changed, the
# script re-applies all four (each `apply` plans and finds no change but gpu-pools).
sed -i 's|  cluster_name = var.cluster_name|  cluster_name       = var.cluster_name\n  max_nodes_per_pool = 6|' "$work/bare/stacks/gpu-pools/main.tf"
t0=$(now)
bare
second_baseline=$(since "$t0")

runner_apply() { # HOME_DIR VERSION PARALLEL LOG
  local home=$1 version=$2 parallel=$3 log=$4
  python3 - "$log" "$bin/stackpack-runner" --home "$home" apply "environment@$version" \
    --inputs-dir "$work/repo/customers/globex" --yes --parallel "$parallel" <<'PY'
# Runs the command, timing each line it prints on stderr.
import subprocess, sys, time
log = open(sys.argv[1], "w")
start = time.monotonic()
process = subprocess.Popen(sys.argv[2:], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
for line in process.stderr:
    log.write(f"{time.monotonic() - start:8.2f} {line}")
sys.exit(process.wait())
PY
}
new_runner() { # HOME_DIR
  local home=$1
  rm -rf "$home"
  "$bin/stackpack-runner" --home "$home" init --customer globex --engine terraform --engine-path "$terraform" > /dev/null
  "$bin/stackpack-runner" --home "$home" trust add "$work/vendor.pub" > /dev/null
  STACKPACK_REGISTRY_TOKEN=$customer "$bin/stackpack-runner" --home "$home" pull "$registry/releases/environment:$first" --insecure > /dev/null
}

echo "== 2. stackpack-runner apply of the release (--parallel 1, then 2)" >&2
fresh_moto
new_runner "$work/runner1"
t0=$(now)
runner_apply "$work/runner1" "$first" 1 "$work/apply-1.log"
serial=$(since "$t0")
fresh_moto
new_runner "$work/runner2"
t0=$(now)
runner_apply "$work/runner2" "$first" 2 "$work/apply-2.log"
parallel=$(since "$t0")

echo "== 3. a second release that changes only the GPU pools" >&2
sed -i 's|  cluster_name = var.cluster_name|  cluster_name       = var.cluster_name\n  max_nodes_per_pool = 6|' stacks/gpu-pools/main.tf
commit "gpu-pools: six nodes per pool"
second=$(publish)
STACKPACK_REGISTRY_TOKEN=$customer "$bin/stackpack-runner" --home "$work/runner2" pull "$registry/releases/environment:$second" --insecure > /dev/null
t0=$(now)
runner_apply "$work/runner2" "$second" 2 "$work/apply-second.log"
second_runner=$(since "$t0")

echo "== 4. the airgap tar beside its bundles" >&2
STACKPACK_REGISTRY_TOKEN=$publisher "$bin/stackpack" export --registry "$registry" --insecure "environment@$second" -o "$work/release.tar" > /dev/null
bundles=0
for stack in $stacks_in_order; do
  version=$(python3 - "$work/repo/.stackpack/bundles" "$stack" <<'PY'
import json, sys
index = json.load(open(f"{sys.argv[1]}/index.json"))
versions = [m["annotations"]["org.opencontainers.image.version"] for m in index["manifests"]
            if m.get("annotations", {}).get("dev.stackpack.stack") == sys.argv[2] and m["annotations"].get("dev.stackpack.kind") == "bundle"]
print(versions[-1])
PY
)
  "$bin/stackpack" export "$stack@$version" -o "$work/$stack.tar" > /dev/null
  bundles=$((bundles + $(stat -c %s "$work/$stack.tar")))
done
tar_size=$(stat -c %s "$work/release.tar")

echo
echo "Releases: the example's environment (4 stacks, 36 resources) on the AWS API emulator"
row "what" "seconds"
row "baseline: terraform init + apply, 4 stacks in order, outputs wired by a script" "$baseline"
row "stackpack-runner apply environment@$first --parallel 1" "$serial"
row "stackpack-runner apply environment@$first --parallel 2" "$parallel"
python3 -c "import sys; b,s,p = map(float, sys.argv[1:]); print(f'overhead over the baseline: {s/b:.2f}x serial, {p/b:.2f}x with --parallel 2 (target: <= 1.1x)')" "$baseline" "$serial" "$parallel"
row "a second release changing only gpu-pools: stackpack-runner (applies 1 stack)" "$second_runner"
row "the same change, baseline re-applying all 4 stacks" "$second_baseline"
echo
printf "%-78s %12s\n" "the release's airgap tar (bundles, providers once, release, signatures)" "$tar_size"
printf "%-78s %12s\n" "the four bundles exported one by one (the provider four times)" "$bundles"
echo
echo "Where the runner's time went (--parallel 1), by the phase its status lines name:"
python3 - "$work/apply-1.log" <<'PY'
import re, sys
phases = [  # a status line that starts a phase, and the phase's name
    (r"^verifying release", "verify the release (signature, description, pins)"),
    (r"^verifying `", "verify the bundle (signature, digests, archive)"),
    (r"^verified `", "after verifying: inputs, receipt, work folder"),
    (r"^provider .* from the bundle", "unpack, providers from the bundle"),
    (r"^(terraform|tofu) init", "engine init"),
    (r"^(terraform|tofu) plan", "engine plan (and show -json)"),
    (r"^evaluating .* polic", "policies"),
    (r"^(terraform|tofu) apply", "engine apply (then outputs, receipt)"),
]
spent, phase, last = {}, "start", 0.0
for line in open(sys.argv[1]):
    time, _, text = line.strip().partition(" ")
    time = float(time)
    for pattern, name in phases:
        if re.search(pattern, text):
            spent[phase] = spent.get(phase, 0.0) + time - last
            phase, last = name, time
            break
spent[phase] = spent.get(phase, 0.0) + time - last
total = sum(spent.values())
for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
    print(f"  {seconds:7.2f} s  {100 * seconds / total:4.1f} %  {name}")
PY
