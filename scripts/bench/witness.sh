#!/usr/bin/env bash
# The outcome witness, measured (never asserted): `stackpack check --witness` on the
# example's data-plane stack against the AWS API emulator (moto), with N generated
# customers (shaped like the example's three, in turn), after a one-line body change
# (a tag on the VPC) so that every plan has something to say.
#
# Prints, per customer count: the wall time of the whole check, the mean time per
# customer (apply the last release + plan the new one, as the witness reports it),
# customers per minute, and peak RSS of `stackpack` itself (the engines are separate
# processes). The baseline is one customer alone: the floor any customer costs.
#
# Measured 2026-12-01 (debug binary, 2 cores shared with other builds, load ~12):
#   1 customer 54 s (baseline); 10 customers 177 s (60.8 s each, 3.4/min);
#   50 customers 993 s (78.1 s each, 3.0/min); stackpack's peak RSS 169-205 MB.
# Growth is linear in customers: about 20 s of wall time each once the cores are
# busy; per-customer time rises as engines share the cores.
#
#   scripts/bench/witness.sh                  # 1, 10, 25, 50 customers, 4 at once
#   COUNTS="1 50" PARALLEL=2 scripts/bench/witness.sh
#   PROFILE=release scripts/bench/witness.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
PROFILE=${PROFILE:-debug}
COUNTS=${COUNTS:-"1 10 25 50"}
PARALLEL=${PARALLEL:-4}
[ -x /usr/bin/time ] || { echo "witness.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
if [ "$PROFILE" = release ]; then
  cargo build --release -q -p stackpack-packager
else
  cargo build -q -p stackpack-packager
fi
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$root/$target ;; esac
bin=$target/$PROFILE
terraform=$(scripts/terraform-path.sh)
work=$(mktemp -d)
moto_dir=$work/moto
trap '"$root/scripts/moto.sh" stop "$moto_dir" > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
endpoint=$("$root/scripts/moto.sh" start "$moto_dir")

mirror=${STACKPACK_PROVIDER_MIRROR:-$work/mirror}
[ -d "$mirror/registry.terraform.io" ] || "$root/scripts/provider-mirror.sh" "$mirror" 3.39.0 > /dev/null
export STACKPACK_PROVIDER_MIRROR=$mirror STACKPACK_WITNESS_ENDPOINT=$endpoint CHECKPOINT_DISABLE=1

cp -r examples/acme-infra "$work/repo"
cd "$work/repo"
sed -i '/^registry = /d' stackpack.toml
printf '\n[witness]\nengine = "%s"\nparallel = %s\n' "$terraform" "$PARALLEL" >> stackpack.toml
printf '.stackpack/\n' > .gitignore
max=0
for n in $COUNTS; do
  if [ "$n" -gt "$max" ]; then max=$n; fi
done
shapes=(globex initech umbrella)
for ((i = 1; i <= max; i++)); do
  id=$(printf 'bench%03d' "$i")
  shape=${shapes[$(( (i - 1) % 3 ))]}
  mkdir -p "customers/$id"
  sed -e "s/^customer_id .*/customer_id          = \"$id\"/" "customers/$shape/data-plane.tfvars" > "customers/$id/data-plane.tfvars"
done
rm -rf customers/globex customers/initech customers/umbrella
git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm bench
"$bin/stackpack" keygen --out "$work/vendor" > /dev/null 2>&1
"$bin/stackpack" build --key "$work/vendor.key" --stack data-plane > /dev/null 2>&1
sed -i 's/    Name = var.name$/    Name = var.name\n    Tier = "data"/' modules/network/vpc.tf

echo "outcome witness, data-plane (36 resources per customer), $PROFILE binary, $(nproc) cores, $PARALLEL customers at once"
printf "%-10s %10s %14s %12s %10s\n" customers "total (s)" "per customer" "per minute" "RSS (MB)"
for n in $COUNTS; do
  sed -i '/^sample = /d' stackpack.toml
  printf 'sample = %s\n' "$n" >> stackpack.toml
  timing=$(mktemp)
  start=$(date +%s.%N)
  /usr/bin/time -v -o "$timing" "$bin/stackpack" -q check --witness --no-lint --path stacks/data-plane --json > "$work/out.json" 2> "$work/err.log" || true
  end=$(date +%s.%N)
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$timing")
  python3 - "$work/out.json" "$start" "$end" "$n" "$rss" <<'EOF'
import json, sys
out = json.load(open(sys.argv[1]))
stack = out["witness"][0]
customers = stack["customers"]
failed = [c["customer"] for c in customers if c.get("error")]
total = float(sys.argv[3]) - float(sys.argv[2])
mean = sum(c["seconds"] for c in customers) / max(len(customers), 1)
print(f"{len(customers):<10} {total:>10.1f} {mean:>12.1f} s {60 * len(customers) / total:>12.1f} {sys.argv[5]:>10}"
      + (f"   ({len(failed)} failed: {', '.join(failed[:3])})" if failed else ""))
EOF
  rm -f "$timing"
done
echo "baseline: the 1-customer row (init, apply the release, plan, destroy; nothing in parallel)."
echo "growth: total ≈ customers × per-customer ÷ min(parallel, cores); per-customer time rises as engines share the cores."
