#!/usr/bin/env bash
# Interface check benchmark (issue 17): `stackpack check` of a stack that vendors a
# 500-file module tree (a root module and 24 submodules: inputs with object types and
# optional() defaults, gated resources, for_each over maps of objects, dynamic blocks),
# over a history of releases, once per release pair, beside `terraform validate` of
# the same tree in the same run (the engine reading the same files).
#
#   scripts/bench/check-tree.sh          # 500 files, 5 releases
#   FILES=1000 scripts/bench/check-tree.sh
#
# The resources are `terraform_data` (built into the engine), so `terraform validate`
# needs no provider and no network. Figures are printed, never asserted.

source "$(dirname "$0")/common.sh"
need_tools git column
build_release
TERRAFORM=$("$ROOT/scripts/terraform-path.sh")
export CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null

FILES=${FILES:-500}
SUBMODULES=24
PER_MODULE=$(( FILES / (SUBMODULES + 1) ))

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
repo=$WORK/repo
tree=$repo/modules/tree

# submodule DIR N: PER_MODULE files, a fifth each of inputs, resources, locals,
# outputs and dynamic blocks.
submodule() {
  local dir=$1 n=$2 i
  mkdir -p "$dir"
  for ((i = 0; i < PER_MODULE; i++)); do
    case $(( i % 5 )) in
      0) cat >"$dir/variables_$i.tf" <<TF
variable "settings_$i" {
  description = "Settings of part $i"
  type = object({
    name    = optional(string, "part-$i")
    size    = optional(number, $(( i + 1 )))
    enabled = optional(bool, true)
    tags    = optional(map(string), {})
  })
  default = {}
}

variable "items_$i" {
  type = map(object({
    value = string
    count = optional(number, 1)
  }))
  default = { a = { value = "x" } }
}

variable "create_$i" {
  type    = bool
  default = $([ $(( i % 2 )) -eq 0 ] && echo true || echo false)
}
TF
        ;;
      1) cat >"$dir/main_$i.tf" <<TF
resource "terraform_data" "part_$i" {
  count = var.create_$(( i - 1 )) && var.settings_$(( i - 1 )).enabled ? var.settings_$(( i - 1 )).size > 2 ? 2 : 1 : 0
  input = var.settings_$(( i - 1 )).name
}

resource "terraform_data" "items_$i" {
  for_each = var.items_$(( i - 1 ))
  input    = "\${each.key}-\${each.value.value}"
}
TF
        ;;
      2) cat >"$dir/locals_$i.tf" <<TF
locals {
  names_$i = [for k, v in var.items_$(( i - 2 )) : "\${k}-\${v.value}" if v.count > 0]
  total_$i = sum([for v in values(var.items_$(( i - 2 ))) : v.count])
  mode_$i  = var.create_$(( i - 2 )) ? length(local.names_$i) > 1 ? "many" : "one" : "none"
}
TF
        ;;
      3) cat >"$dir/outputs_$i.tf" <<TF
output "part_$i" {
  description = "Part $i"
  value       = terraform_data.part_$(( i - 2 ))[*].output
}

output "mode_$i" {
  value = local.mode_$(( i - 1 ))
}
TF
        ;;
      4) cat >"$dir/checks_$i.tf" <<TF
resource "terraform_data" "check_$i" {
  input = { for k, v in var.items_$(( i - 4 )) : k => v.count }

  lifecycle {
    precondition {
      condition     = local.total_$(( i - 2 )) >= 0
      error_message = "Counts cannot be negative."
    }
  }
}
TF
        ;;
    esac
  done
}

echo "generating a ${FILES}-file module tree…" >&2
mkdir -p "$repo/stacks/bench"
cat >"$repo/stackpack.toml" <<'EOF2'
stacks = ["stacks/*"]
modules = ["modules/*"]
EOF2
printf '.stackpack/\n.terraform/\n.terraform.lock.hcl\n' >"$repo/.gitignore"
echo 'description = "benchmark stack"' >"$repo/stacks/bench/stack.toml"
cat >"$repo/stacks/bench/main.tf" <<'EOF2'
module "tree" {
  source = "../../modules/tree"
}
EOF2
submodule "$tree" root
for ((s = 0; s < SUBMODULES; s++)); do
  submodule "$tree/sub-$s" "$s"
  cat >"$tree/call_$s.tf" <<TF
module "sub_$s" {
  source   = "./sub-$s"
  create_0 = var.create_0
}
TF
done
files=$(find "$tree" -name '*.tf' | wc -l)

commit() {
  git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m "$1"
  git -C "$repo" tag "$1"
}
git -C "$repo" init -q -b main
commit r0
# Each release changes something real modules change: an input added with a default
# (the module: minor; the stack: patch), an optional attribute's default (major for
# the stack, which does not set it), a gated data source (patch), a resource renamed
# with a `moved` block (patch).
cat >>"$tree/variables_0.tf" <<'TF'

variable "added_with_default" {
  type    = string
  default = "x"
}
TF
commit r1
sed -i 's/optional(number, 1)/optional(number, 2)/' "$tree/sub-7/variables_5.tf"
commit r2
cat >>"$tree/sub-11/main_1.tf" <<'TF'

data "terraform_remote_state" "shared" {
  count   = var.create_5 ? 1 : 0
  backend = "local"
  config  = { path = "shared.tfstate" }
}
TF
commit r3
sed -i 's/"terraform_data" "part_6"/"terraform_data" "renamed_6"/' "$tree/sub-2/main_6.tf"
sed -i 's/terraform_data.part_6\b/terraform_data.renamed_6/' "$tree/sub-2/outputs_8.tf"
printf '\nmoved {\n  from = terraform_data.part_6\n  to   = terraform_data.renamed_6\n}\n' >>"$tree/sub-2/main_6.tf"
commit r4

bytes=$(du -sb --exclude=.git "$tree" | cut -f1)
RESULTS=$(mktemp)
(cd "$tree" && "$TERRAFORM" init -backend=false -input=false >/dev/null)
for pair in "r0 r1" "r1 r2" "r2 r3" "r3 r4"; do
  set -- $pair
  git -C "$repo" checkout -q "$2"
  # The bump each checked unit needs, to show the check saw the change.
  bump=$("$STACKPACK" check --repo "$repo" --against "$1" --no-lint --json 2>/dev/null |
    python3 -c 'import json, sys; print(", ".join(u["path"].split("/")[-1] + " " + u["required"] for u in json.load(sys.stdin)["units"]))')
  measure "stackpack check $1→$2 ($bump)" "$bytes" \
    "$STACKPACK" check --repo "$repo" --against "$1" --no-lint --json
  measure "terraform validate at $2" "$bytes" \
    bash -c "cd '$tree' && '$TERRAFORM' validate -no-color"
done

echo
echo "== ${files} .tf files ($((bytes / 1024)) KiB), $(( SUBMODULES + 1 )) modules, on $(nproc) cores =="
print_results
rm -f "$RESULTS"
