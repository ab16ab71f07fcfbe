# Shared by the benchmarks in this folder: tools, a release build, measuring.
# Figures are measured and printed, never asserted.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
# `STACKPACK_BIN=path` measures another build (and skips the release build).
STACKPACK=${STACKPACK_BIN:-$CARGO_TARGET_DIR/release/stackpack}

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

build_release() {
  [ -z "${STACKPACK_BIN:-}" ] || return 0
  echo "building stackpack (release)…" >&2
  (cd "$ROOT" && cargo build --release --quiet -p stackpack-packager)
}

# measure LABEL BYTES COMMAND...: runs COMMAND under /usr/bin/time -v, timing it with
# `date +%s.%N`, and appends `LABEL seconds MB/s peak-RSS-MB` to $RESULTS.
measure() {
  local label=$1 bytes=$2; shift 2
  local timing; timing=$(mktemp)
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -v -o "$timing" "$@" >/dev/null
  end=$(date +%s.%N)
  local rss_kb
  rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$timing")
  rm -f "$timing"
  awk -v l="$label" -v s="$start" -v e="$end" -v b="$bytes" -v r="$rss_kb" 'BEGIN {
    t = e - s; printf "%s\t%.2f\t%.0f\t%.1f\n", l, t, (b / 1048576) / t, r / 1024 }' >>"$RESULTS"
}

print_results() {
  { printf "what\tseconds\tMB/s\tpeak RSS (MB)\n"; cat "$RESULTS"; } | column -t -s $'\t'
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
    printf 'variable "v%d" {\n  type    = string\n  default = "%d"\n}\n/*\n%s\n*/\n' "$i" "$i" "${block:0:3900}" >"$dir/v$i.tf"
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

tree_bytes() {
  du -sb "$1" | cut -f1
}
