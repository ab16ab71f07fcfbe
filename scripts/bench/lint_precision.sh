#!/usr/bin/env bash
# Lint precision (issue 30): every lint over real module code, as a new user would
# run it: the module laid into `modules/` of a repository with the example's
# `environments` and customers, then `stackpack check --json`. Prints, per module (or
# per tag), how many findings are errors and warnings, and every error, so each can
# be judged a true problem or a false alarm.
#
#   scripts/bench/lint_precision.sh                       # the corpus the repository ships
#   scripts/bench/lint_precision.sh GIT_DIR [TAG...]      # every tag (or those named) of a module's repository
#   STACKPACK_BIN=target/release/stackpack scripts/bench/lint_precision.sh   # another build
#
# Figures are printed, never asserted (the test `community::every_lint_over_the_community_corpus_raises_no_error`
# asserts the shipped corpus's).

source "$(dirname "$0")/common.sh"
need_tools git jq

BIN=$(realpath "${STACKPACK_BIN:-$CARGO_TARGET_DIR/debug/stackpack}")
if [ -z "${STACKPACK_BIN:-}" ]; then
  (cd "$ROOT" && CARGO_INCREMENTAL=0 cargo build -q -p stackpack-packager)
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# lint_one NAME SOURCE_DIR: prints `NAME errors warnings`, then each error.
lint_one() {
  local name=$1 source=$2 repo=$WORK/repo
  rm -rf "$repo"
  mkdir -p "$repo/modules" "$repo/stacks"
  cp -r "$source" "$repo/modules/$name"
  for customer in globex initech umbrella; do mkdir -p "$repo/customers/$customer"; done
  cat >"$repo/stackpack.toml" <<'EOF'
stacks = ["stacks/*"]
modules = ["modules/*"]
environments = ["production", "staging", "sandbox"]
EOF
  git -C "$repo" init -q -b main
  git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m bench
  local json
  json=$(cd "$repo" && "$BIN" check --json --against HEAD 2>/dev/null || true)
  if [ -z "$json" ]; then
    echo "$name  check-failed"
    return
  fi
  local errors warnings
  errors=$(jq '[.lints[] | select(.severity == "error")] | length' <<<"$json")
  warnings=$(jq '[.lints[] | select(.severity == "warning")] | length' <<<"$json")
  printf '%s  %s errors  %s warnings\n' "$name" "$errors" "$warnings"
  jq -r '.lints[] | select(.severity == "error") | "    \(.rule) \(.item) \(.file):\(.line)"' <<<"$json"
  TOTAL_ERRORS=$((TOTAL_ERRORS + errors))
}

TOTAL_ERRORS=0
if [ $# -eq 0 ]; then
  for dir in "$ROOT"/packager/tests/fixtures/community/*/; do
    lint_one "$(basename "$dir")" "$dir"
  done
else
  git_dir=$1
  shift
  name=$(basename "$(cd "$git_dir/.." && pwd)")
  tags=("$@")
  [ ${#tags[@]} -gt 0 ] || mapfile -t tags < <(git -C "$git_dir" tag | sort -V)
  for tag in "${tags[@]}"; do
    mkdir -p "$WORK/tag"
    rm -rf "$WORK/tag/m"
    mkdir -p "$WORK/tag/m"
    # Only files under 1 MiB: a snapshot may list a large binary (an example's backup
    # zip) without holding its contents, and no lint reads one.
    git -C "$git_dir" ls-tree -r -l "$tag" |
      awk '$2 == "blob" && $4 < 1048576 { print substr($0, index($0, "\t") + 1) }' >"$WORK/files"
    mapfile -t files <"$WORK/files"
    git -C "$git_dir" archive "$tag" -- "${files[@]}" | tar -x -C "$WORK/tag/m"
    lint_one "m" "$WORK/tag/m" >"$WORK/out"
    sed "1s|^m|$name@$tag|" "$WORK/out"
  done
fi
echo "error-level findings in all: $TOTAL_ERRORS"
