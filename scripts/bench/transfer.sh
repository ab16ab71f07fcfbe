#!/usr/bin/env bash
# Transfer benchmark (issue 3): push and pull a bundle of about 200 MB to a local CNCF
# Distribution (Debian's `docker-registry`, started here on 127.0.0.1), beside
# `skopeo copy` of the same content, in the same run; our peak memory; then the bytes
# sent when a new version changes one small file.
#
#   scripts/bench/transfer.sh        # 200 MB
#   scripts/bench/transfer.sh 400    # another size, in MB
#
# Figures are printed, never asserted.

source "$(dirname "$0")/common.sh"
need_tools docker-registry skopeo git column python3
build_release

MB=${1:-200}
WORK=$(mktemp -d)
REGISTRY_PID=""
cleanup() {
  [ -z "$REGISTRY_PID" ] || kill "$REGISTRY_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
HOST=127.0.0.1:$PORT
cat >"$WORK/registry.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $WORK/storage
http:
  addr: $HOST
EOF
docker-registry serve "$WORK/registry.yml" >/dev/null 2>&1 &
REGISTRY_PID=$!
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done

"$STACKPACK" keygen --out "$WORK/key" >/dev/null 2>&1
repo=$WORK/repo
echo "generating a ${MB} MB stack…" >&2
make_repo "$repo" "$MB"
LAYOUT=$WORK/layout
RESULTS=$(mktemp)

# Build alone first, so the push figure can be read without the packing time.
measure "stackpack build (pack only)" "$(tree_bytes "$repo/stacks/bench")" \
  "$STACKPACK" build --quiet --repo "$repo" --key "$WORK/key.key" --out "$WORK/build-only"
layer_bytes=$(find "$WORK/build-only/blobs/sha256" -type f -size +1M -printf '%s\n' | sort -n | tail -1)

measure "stackpack publish (pack + push)" "$layer_bytes" \
  "$STACKPACK" publish --quiet --repo "$repo" --key "$WORK/key.key" --out "$LAYOUT" \
  --registry "$HOST/ours" --insecure --no-modules
measure "skopeo copy layout -> registry (push)" "$layer_bytes" \
  skopeo copy --quiet --dest-tls-verify=false \
  "oci:$LAYOUT:stacks/bench:0.1.0" "docker://$HOST/theirs/stacks/bench:0.1.0"
measure "stackpack export --registry (pull + tar)" "$layer_bytes" \
  "$STACKPACK" export --quiet --registry "$HOST/ours" --insecure bench@0.1.0 -o "$WORK/pulled.tar"
measure "skopeo copy registry -> layout (pull)" "$layer_bytes" \
  skopeo copy --quiet --src-tls-verify=false \
  "docker://$HOST/theirs/stacks/bench:0.1.0" "oci:$WORK/skopeo-layout:bench"

# A new version in which one small file changed.
printf '\n# one small change\n' >>"$repo/stacks/bench/v1.tf"
git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -am "small change"
report=$("$STACKPACK" publish --quiet --json --repo "$repo" --key "$WORK/key.key" --out "$LAYOUT" \
  --registry "$HOST/ours" --insecure --no-modules)
sent=$(printf '%s' "$report" | python3 -c 'import json,sys; r=json.load(sys.stdin)["stacks"][0]; print(r["bytesSent"], r["blobsSkipped"], r["version"])')

echo
echo "== a $((layer_bytes / 1048576)) MiB bundle layer, to CNCF Distribution on $HOST, $(nproc) cores =="
print_results
awk -F'\t' -v b="$layer_bytes" 'NR == 1 { build = $2 } NR == 2 { push = $2 - build
  if (push > 0) printf "our push alone (publish - build): %.2f s, %.0f MB/s\n", push, (b / 1048576) / push }' "$RESULTS"
read -r bytes skipped version <<<"$sent"
echo
echo "new version $version after one small .tf change: $bytes bytes sent ($((bytes / 1048576)) MiB), $skipped blob(s) skipped"
echo "(the stack layer is one tar+gzip of the whole stack and the config names the version,"
echo " so a change to any file re-sends the whole layer: there is no unchanged layer to skip;"
echo " a blob the registry already has is never sent again, e.g. on a re-run or a retry)"
rm -f "$RESULTS"
