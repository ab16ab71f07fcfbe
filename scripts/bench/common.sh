# Shared by the benchmarks in this folder: tools, and generated vendor repositories.
# Figures are measured and printed, never asserted.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

need_tools() {
  local missing=()
  [ -x /usr/bin/time ] || missing+=(time)
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}" >&2
    local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# make_tree DIR MB: a stack folder with many small `.tf` files (a tenth of the size,
# or SMALL_MB)
# and a few large random binary files (the rest), as a provider mirror would have.
make_tree() {
  local dir=$1 mb=$2
  mkdir -p "$dir/mirror"
  # SMALL_MB fixes the `.tf` share, to grow only the binaries.
  local small_mb=${SMALL_MB:-$(( mb / 10 ))} big=4
  local files=$(( small_mb * 1024 / 4 ))   # 4 KiB each
  local i
  local block; block=$(head -c 3000 /dev/urandom | base64 -w 76)
  for ((i = 0; i < files; i++)); do
    printf 'variable "v%d" {\n  description = "input %d"\n  type        = string\n  default     = "%d"\n}\n/*\n%s\n*/\n' "$i" "$i" "$i" "${block:0:3900}" >"$dir/v$i.tf"
  done
  local big_mb=$(( (mb - small_mb) / big ))
  for ((i = 0; i < big; i++)); do
    head -c $(( big_mb * 1048576 )) /dev/urandom >"$dir/mirror/provider-$i.zip"
  done
  cat >"$dir/stack.toml" <<'EOF'
description = "benchmark stack"
EOF
}

# make_repo DIR MB: a vendor repository with one stack of about MB megabytes, committed.
make_repo() {
  local repo=$1 mb=$2
  mkdir -p "$repo"
  cat >"$repo/stackpack.toml" <<'EOF'
stacks = ["stacks/*"]
modules = ["modules/*"]
EOF
  printf '.stackpack/\n' >"$repo/.gitignore"
  make_tree "$repo/stacks/bench" "$mb"
  git -C "$repo" init -q -b main
  git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m bench
}

# runner_bins: the folder holding `stackpack` and `stackpack-runner`: BIN_DIR when
# given (binaries already built), else built now in PROFILE (debug by default).
runner_bins() {
  if [ -n "${BIN_DIR:-}" ]; then
    (cd "$BIN_DIR" && pwd)
    return
  fi
  local profile=${PROFILE:-debug} flags=()
  [ "$profile" = release ] && flags+=(--release)
  cargo build "${flags[@]}" -q -p stackpack-runner -p stackpack-packager --bins >&2
  echo "$CARGO_TARGET_DIR/$profile"
}
