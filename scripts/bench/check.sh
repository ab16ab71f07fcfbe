#!/usr/bin/env bash
# Customer impact benchmark (issue 11): `stackpack check` on a vendor repository with
# many customers, each with an inputs file for each of 3 stacks (the example's two and
# a copy of the control plane), beside the same check with no customers (what the
# customers add) and reading every inputs file with `cat` (the floor).
#
#   scripts/bench/check.sh             # 1000 customers x 3 stacks
#   scripts/bench/check.sh 200 1000    # other counts
#   STACKPACK_BIN=target/debug/stackpack scripts/bench/check.sh   # another build
#
# Figures are printed, never asserted.

source "$(dirname "$0")/common.sh"
need_tools git column
build_release

COUNTS=("$@")
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(1000)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# make_customers REPO N: N customers, each with inputs for the three stacks; ranges are
# /20s, distinct for customers sharing a control-plane region.
make_customers() {
  local repo=$1 n=$2 i
  local regions=(us-east-1 eu-central-1 ap-southeast-2)
  for ((i = 0; i < n; i++)); do
    local id; id=$(printf 'c%04d' "$i")
    local dir=$repo/customers/$id
    mkdir -p "$dir"
    cat >"$dir/data-plane.tfvars" <<EOF
customer_id          = "$id"
account_id           = "$(printf '%012d' "$i")"
region               = "${regions[i % 3]}"
vpc_cidr             = "10.$((i / 16)).$(((i % 16) * 16)).0/20"
kubernetes_version   = "1.30"
gpu_families         = ["a100"]
control_plane_region = "${regions[i % 3]}"
EOF
    printf 'customer_id = "%s"\nregion      = "%s"\n' "$id" "${regions[i % 3]}" >"$dir/control-plane.tfvars"
    printf 'customer_id = "%s"\nregion      = "%s"\n' "$id" "${regions[i % 3]}" >"$dir/edge.tfvars"
  done
}

# make_check_repo DIR: the example repository with a third stack, no customers, committed.
make_check_repo() {
  local repo=$1
  cp -r "$ROOT/examples/acme-infra" "$repo"
  rm -rf "$repo/customers" "$repo/.stackpack"
  # No registry to ask: releases come from the (empty) local layout.
  sed -i '/^registry = /d' "$repo/stackpack.toml"
  cp -r "$repo/stacks/control-plane" "$repo/stacks/edge"
  printf 'description = "Edge: a copy of the control plane, for the benchmark"\n' >"$repo/stacks/edge/stack.toml"
  printf '.stackpack/\n' >"$repo/.gitignore"
  git -C "$repo" init -q -b main
  git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m bench
}

# `--against HEAD`: nothing changed, so the time is the lints and the customers.
CHECK=(check --against HEAD --json --repo)

for n in "${COUNTS[@]}"; do
  RESULTS=$(mktemp)
  empty=$WORK/empty-$n
  full=$WORK/full-$n
  make_check_repo "$empty"
  make_check_repo "$full"
  echo "generating $n customers x 3 stacks…" >&2
  make_customers "$full" "$n"
  bytes=$(tree_bytes "$full/customers")
  files=$(find "$full/customers" -type f | wc -l)
  cat $(find "$full" -type f -not -path '*/.git/*') >/dev/null

  checked=$("$STACKPACK" "${CHECK[@]}" "$full" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["customers"]), sum(c["breaks"] for c in d["customers"]))')
  measure "check, no customers" 0 "$STACKPACK" "${CHECK[@]}" "$empty"
  measure "check, $n customers x 3 stacks" "$bytes" "$STACKPACK" "${CHECK[@]}" "$full"
  measure "cat every inputs file" "$bytes" bash -c "find '$full/customers' -type f -print0 | xargs -0 cat"

  echo
  echo "== $n customers x 3 stacks: $files inputs files, $((bytes / 1024)) KiB, on $(nproc) cores =="
  echo "customer reports, of which breaking: $checked"
  print_results
  rm -f "$RESULTS"
  rm -rf "$empty" "$full"
done
