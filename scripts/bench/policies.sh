#!/usr/bin/env bash
# Policies on plans and the time to recover, measured (never asserted), with real
# Terraform and the real AWS provider against the AWS API emulator (moto):
#
#   - a 500-resource plan: `terraform plan` + `show -json` alone (the floor), then the
#     runner's whole `plan` (verify, unpack, init, plan, show) without policies and
#     with the example's four Rego policies: the difference is the policies' cost;
#   - the example's data plane: applying a version whose smoke checks fail, with
#     `on-failure = "rollback"`: the time from the failed smoke check being reported
#     to the rollback completed, beside the time of the first apply.
#
#   scripts/bench/policies.sh                 # debug binaries (dependencies optimised)
#   PROFILE=release scripts/bench/policies.sh
#   BIN_DIR=target/debug scripts/bench/policies.sh   # binaries already built
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
PROFILE=${PROFILE:-debug}
scripts/install-test-deps.sh > /dev/null
source scripts/bench/common.sh
bin=$(runner_bins)
terraform=$(scripts/terraform-path.sh)
export CHECKPOINT_DISABLE=1
work=$(mktemp -d)
moto_dir=$work/moto
trap '"$root/scripts/moto.sh" stop "$moto_dir" > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "${2:-$(now)}"; }
row() { printf "%-70s %10s\n" "$1" "$2"; }
commit() { git -c user.name=b -c user.email=b@b commit -qam "$1"; }

cp -r examples/acme-infra "$work/repo"
cd "$work/repo"
printf '.stackpack/\n' > .gitignore
"$root/scripts/provider-mirror.sh" .stackpack/providers 3.39.0 > /dev/null
# A stack of 500 buckets, with the data plane's provider and lock file.
mkdir -p stacks/bench
cp -r stacks/data-plane/provider.tf stacks/data-plane/.terraform.lock.hcl stacks/data-plane/policies stacks/bench/
sed -i 's/"data-plane"/"bench"/; s/-data-plane"/-bench"/' stacks/bench/provider.tf
printf 'description = "500 buckets"\nengine = "terraform"\n' > stacks/bench/stack.toml
cat > stacks/bench/main.tf <<'TF'
terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 3.39"
    }
  }
}

variable "customer_id" {
  type        = string
  description = "As the data plane's."
}

variable "account_id" {
  type        = string
  description = "As the data plane's."
}

variable "region" {
  type        = string
  description = "As the data plane's."
}

resource "aws_s3_bucket" "bench" {
  count  = 500
  bucket = "${var.customer_id}-bench-${count.index}"
}
TF
printf 'customer_id = "globex"\naccount_id = "111122223333"\nregion = "us-east-1"\n' > bench.tfvars
git init -q -b main && git add -A && commit "bench"
"$bin/stackpack" keygen --out "$work/vendor" > /dev/null 2>&1
build() { "$bin/stackpack" build --key "$work/vendor.key" --branch main --json 2> "$work/build.log" || { cat "$work/build.log" >&2; return 1; }; }
version_of() { python3 -c 'import json,sys; print([s["version"] for s in json.load(sys.stdin)["stacks"] if s["stack"] == sys.argv[1] and s["built"]][0])' "$1"; }
first_build=$(build)
with_policies=$(echo "$first_build" | version_of bench)
dp_v1=$(echo "$first_build" | version_of data-plane)
git rm -rq stacks/bench/policies && commit "no policies"
without_policies=$(build | version_of bench)

url=$("$root/scripts/moto.sh" start "$moto_dir")
export TF_VAR_aws_endpoint=$url AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1

home=$work/runner
runner() { "$bin/stackpack-runner" --home "$home" "$@"; }
runner init --customer globex --engine-path "$terraform" > /dev/null 2>&1
runner trust add "$work/vendor.pub" > /dev/null 2>&1
runner import .stackpack/bundles > /dev/null 2>&1

echo "policies and recovery ($PROFILE binaries, $(nproc) cores, Terraform $("$terraform" version -json | python3 -c 'import json,sys; print(json.load(sys.stdin)["terraform_version"])'))"
# The floor: the engine alone, providers from the same mirror, plugins cached.
mkdir -p "$work/floor" && cp stacks/bench/*.tf stacks/bench/.terraform.lock.hcl bench.tfvars "$work/floor/"
(cd "$work/floor" && "$terraform" init -input=false -plugin-dir="$work/repo/.stackpack/providers" > /dev/null)
start=$(now)
(cd "$work/floor" && "$terraform" plan -input=false -out=p -var-file=bench.tfvars > /dev/null && "$terraform" show -json p > /dev/null)
row "terraform plan + show -json, 500 resources (the floor)" "$(since "$start") s"
runner plan "bench@$without_policies" --inputs bench.tfvars --quiet > /dev/null 2>&1 # warm the provider cache
start=$(now); runner plan "bench@$without_policies" --inputs bench.tfvars > /dev/null 2> "$work/plan0.log"
without_s=$(since "$start")
row "stackpack-runner plan, 500 resources, no policies" "$without_s s"
start=$(now); runner plan "bench@$with_policies" --inputs bench.tfvars 2> "$work/plan.log" > /dev/null
with_s=$(since "$start")
row "stackpack-runner plan, 500 resources, the example's 4 policies" "$with_s s"
# The runner times the evaluation itself (plan JSON in, verdict out).
row "  of which evaluating the policies (as the runner reports it)" "$(sed -n 's/.*evaluated in \([0-9]*\) ms.*/\1/p' "$work/plan.log") ms"

# Recovery: the data plane applied, then a version whose smoke check fails.
sed -i 's/^\[policy\]$/[policy]\non-failure = "rollback"/' "$home/runner.toml"
start=$(now)
runner apply "data-plane@$dp_v1" --inputs customers/globex/data-plane.tfvars --yes --quiet > /dev/null 2>&1
row "first apply of the data plane (37 resources)" "$(since "$start") s"
cat >> stacks/data-plane/main.tf <<'TF'

resource "aws_s3_bucket" "canary" {
  bucket = "${var.customer_id}-canary"
}

check "canary_is_versioned" {
  assert {
    condition     = aws_s3_bucket.canary.versioning[0].enabled
    error_message = "The canary bucket is not versioned."
  }
}
TF
commit "a canary that fails its check"
dp_v2=$(build | version_of data-plane)
runner import .stackpack/bundles > /dev/null 2>&1
# Each line of the runner's progress with the time it was printed.
runner apply "data-plane@$dp_v2" --inputs customers/globex/data-plane.tfvars --yes 2>&1 >/dev/null \
  | while IFS= read -r line; do printf '%s %s\n' "$(now)" "$line"; done > "$work/recovery.log" || true
end=$(now)
applied=$(awk '/smoke checks: / {print $1; exit}' "$work/recovery.log")
failed=$(awk '/smoke checks failed: rolling back/ {print $1; exit}' "$work/recovery.log")
apply_started=$(awk '/terraform apply/ {print $1; exit}' "$work/recovery.log")
if [ -z "$failed" ]; then
  echo "the failing version was not rolled back; its log:" >&2
  cat "$work/recovery.log" >&2
  exit 1
fi
row "apply of the failing version, engine apply to smoke checks read" "$(since "$apply_started" "$applied") s"
row "failed smoke check to rollback completed" "$(since "$failed" "$end") s"
