#!/usr/bin/env bash
# The release build, measured (never asserted): `scripts/dist.sh` for the three
# programs (zig, glibc 2.17, `dist` profile: fat LTO, one codegen unit) beside today's
# `cargo build --profile dist` (the machine's glibc), side by side in one run:
#
#   - each binary's size and the newest GLIBC_ symbol it needs;
#   - wall and CPU time of each build;
#   - reproducibility: a second `dist.sh` in another checkout folder and target
#     folder (nothing shared but the commit) gives byte-identical archives.
#
#   scripts/bench/dist.sh            # about an hour of CPU on 2 cores
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
source scripts/bench/common.sh
need_tools binutils
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/second" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
key_prefix="$work/release"
cargo build -q -p stackpack-packager --bin stackpack
"$CARGO_TARGET_DIR/debug/stackpack" keygen --out "$key_prefix" >/dev/null 2>&1

timed() { # timed LABEL command...: prints wall and CPU seconds
  local label=$1; shift
  /usr/bin/time -f "$label: %e s wall, %U+%S s CPU" "$@"
}

echo "== scripts/dist.sh (glibc 2.17 through zig), first checkout" >&2
timed "dist.sh, 3 programs" scripts/dist.sh --allow-dirty --key "$key_prefix.key" --out "$work/first" \
  2> >(grep -v '^ *Compiling' >&2)
echo "== cargo build --profile dist (today's: the machine's glibc)" >&2
timed "cargo --profile dist, 3 programs" cargo build -q --locked --profile dist --bins \
  -p stackpack-packager -p stackpack-runner -p stackpack-registry
echo "== scripts/dist.sh again, in another checkout and target folder" >&2
git worktree add -q --detach "$work/second" HEAD
(cd "$work/second" && STACKPACK_DIST_TARGET_DIR="$work/second-target" \
  timed "dist.sh again (clean)" scripts/dist.sh --allow-dirty --key "$key_prefix.key" --out "$work/again" \
  2> >(grep -v '^ *Compiling' >&2))

printf '\n| program | dist.sh (glibc 2.17) bytes | newest GLIBC_ | cargo --profile dist bytes | newest GLIBC_ |\n|---|---|---|---|---|\n'
newest() { objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1; }
for p in stackpack stackpack-runner stackpack-registry; do
  zig_bin="$root/target/dist-zig/x86_64-unknown-linux-gnu/dist/$p"
  native="$CARGO_TARGET_DIR/dist/$p"
  printf '| %s | %s | %s | %s | %s |\n' "$p" "$(stat -c %s "$zig_bin")" "$(newest "$zig_bin")" \
    "$(stat -c %s "$native")" "$(newest "$native")"
done
printf '\nreproducible (two checkouts, two target folders): '
if cmp -s "$work/first/SHA256SUMS" "$work/again/SHA256SUMS"; then echo yes; else echo NO; diff "$work/first/SHA256SUMS" "$work/again/SHA256SUMS" || true; fi
