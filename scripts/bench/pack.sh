#!/usr/bin/env bash
# Packing benchmark (issue 2): `stackpack build` of a stack with many small `.tf`
# files and a few large random binaries, beside what a user could script with the
# usual tools on the same tree, in the same run. Repeated at a larger size to show
# that peak memory stays flat (the layer is streamed, never held whole).
#
#   scripts/bench/pack.sh            # 100 MB, then 400 MB
#   scripts/bench/pack.sh 50 200     # other sizes, in MB
#   SMALL_MB=10 scripts/bench/pack.sh 100 400   # the same 10 MB of .tf, more binaries
#
# Peak memory follows the `.tf` files (they are parsed for the interface), not the
# binaries (streamed); SMALL_MB separates the two.
#
# Figures are printed, never asserted.

source "$(dirname "$0")/common.sh"
need_tools pigz openssl git column
build_release

SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(100 400)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$STACKPACK" keygen --out "$WORK/key" >/dev/null 2>&1

for mb in "${SIZES[@]}"; do
  repo=$WORK/repo-$mb
  echo "generating a ${mb} MB stack…" >&2
  make_repo "$repo" "$mb"
  tree=$repo/stacks/bench
  bytes=$(tree_bytes "$tree")
  files=$(find "$tree" -type f | wc -l)
  RESULTS=$(mktemp)
  # Warm the page cache so every contender reads from memory alike.
  cat $(find "$tree" -type f) >/dev/null

  measure "stackpack build" "$bytes" \
    "$STACKPACK" build --quiet --repo "$repo" --key "$WORK/key.key" --out "$WORK/layout-$mb"
  measure "tar -czf + sha256sum" "$bytes" \
    bash -c "tar -C '$repo' -czf '$WORK/out.tgz' stacks/bench && sha256sum '$WORK/out.tgz'"
  measure "tar -cf - | pigz + sha256sum" "$bytes" \
    bash -c "tar -C '$repo' -cf - stacks/bench | pigz > '$WORK/out-pigz.tgz' && sha256sum '$WORK/out-pigz.tgz'"
  measure "openssl dgst -sha256 (hash only)" "$bytes" \
    bash -c "find '$tree' -type f -print0 | xargs -0 openssl dgst -sha256"

  echo
  echo "== ${mb} MB stack: $((bytes / 1048576)) MiB in ${files} files, on $(nproc) cores =="
  print_results
  layer=$(find "$WORK/layout-$mb/blobs/sha256" -type f -size +1M -printf '%s\n' | sort -n | tail -1)
  echo "bundle layer: $((layer / 1048576)) MiB; tar -czf: $(( $(stat -c %s "$WORK/out.tgz") / 1048576 )) MiB"
  rm -f "$RESULTS" "$WORK"/out*.tgz
  rm -rf "$repo" "$WORK/layout-$mb" 2>/dev/null || true
done
