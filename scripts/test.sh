#!/usr/bin/env bash
# Runs the whole test suite from a fresh machine: installs what the tests need, checks
# formatting and lints, builds every binary, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh
STACKPACK_TEST_TERRAFORM="$(scripts/terraform-path.sh)"
chmod +x "$STACKPACK_TEST_TERRAFORM"
export STACKPACK_TEST_TERRAFORM
export CHECKPOINT_DISABLE=1
# A test whose tool (skopeo, docker-registry, oras, mount) is missing fails instead of skipping.
export STACKPACK_REQUIRE_TOOLS=1
# A fresh clone gains nothing from incremental artifacts, and they cost gigabytes of disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step() { echo "==> $*" >&2; }

step "cargo fmt --check"
cargo fmt --all -- --check
# One HCL parser at one version: two versions of hcl-edit read the same file
# differently (a conditional inside a binary operation, for one).
if cargo tree -d -e normal --workspace | grep -E '^hcl-(edit|rs|primitives) v'; then
  echo "error: two versions of an HCL parser are linked (see above); keep one" >&2
  exit 1
fi
# Every declared dependency is used (cargo-machete reads the sources; it is small and
# builds in about a minute the first time).
if ! command -v cargo-machete >/dev/null 2>&1; then
  step "installing cargo-machete (first run only, about a minute)"
  cargo install --locked --quiet cargo-machete
fi
step "rooms that do one job: no file circles, no function in src/ over 100 lines"
for check in "scripts/file-circles.py ." "scripts/long-functions.py ."; do
  found="$(python3 $check)"
  if [ -n "$found" ]; then
    echo "$found" >&2
    echo "error: \`$check\` found the above; split the function or move the shared piece to the module that owns it" >&2
    exit 1
  fi
done
step "cargo machete: no unused dependencies"
cargo machete
step "cargo clippy -D warnings (a clean machine builds every dependency first: about 6 minutes on 2 cores)"
cargo clippy --workspace --all-targets -- -D warnings
step "cargo doc --no-deps with warnings denied (broken intra-doc links fail)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# The cross-program scenarios in `tests/` run the built binaries.
step "building the three programs"
cargo build --workspace --bins

step "running every test"
if cargo nextest --version >/dev/null 2>&1; then
  # Half as many tests again as cores: the scenarios wait on the engine's plugins,
  # the AWS emulator and their own servers, so two at a time kept two cores only
  # two-thirds busy (the runner's suite: 972 s of CPU over 1,443 test-seconds).
  threads=$(( $(nproc) * 3 / 2 ))
  cargo nextest run --workspace --no-fail-fast --failure-output final --test-threads "$threads"
else
  cargo test --workspace --no-fail-fast
fi
