#!/usr/bin/env bash
# Builds Stackpack's release artifacts for any x86_64 Linux (glibc 2.17 and newer):
# per program `<program>-<version>-x86_64-linux.tar.gz` (the binary, LICENSE, a short
# README and the CycloneDX SBOM of the crates it links), each program as an OCI image
# in the layout `oci/` (non-root user 65532, the same binary, licence and SBOM;
# `images.txt` lists each image's manifest digest), then `SHA256SUMS` (archives and
# `images.txt`) and `SHA256SUMS.sig` (ed25519 over SHA256SUMS, verifiable with
# `openssl pkeyutl`): the signature covers each image through its digest.
#
#   scripts/dist.sh --key release.key [--out dist]        # the three programs, `dist` profile
#   scripts/dist.sh --key env:STACKPACK_RELEASE_KEY        # the variable holds the PEM or a path
#   scripts/dist.sh --quick --key k.key                    # one program (stackpack), fast profile
#
# Two runs on one commit write byte-identical archives: the build is from the
# committed tree (a dirty tree is refused unless --allow-dirty), times come from the
# commit (SOURCE_DATE_EPOCH), paths are remapped, and tar and gzip store no owner,
# clock or name. arm64 (Graviton) is built by this same script on an arm64 host
# (`--target aarch64-unknown-linux-gnu.2.17`): only the x86_64 standard library is
# installed here, so nothing arm64 is claimed as tested.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

usage() {
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'USAGE'

Options:
  --key PATH|env:VAR   the release signing key (PKCS#8 PEM from `stackpack keygen`);
                       env:VAR holds the PEM itself or a path
  --unsigned           write SHA256SUMS without a signature (local trials only)
  --out DIR            where the archives go (default: dist/)
  --quick              fast profile (`dist-quick`: unoptimised, not for shipping),
                       `stackpack` only unless --program is given: the path the
                       test suite checks
  --program NAME       build only this program (repeatable): stackpack,
                       stackpack-runner, stackpack-registry
  --target TRIPLE      default x86_64-unknown-linux-gnu.2.17
  --allow-dirty        build a tree with uncommitted changes (version says +dirty)
  --no-images          archives only, no OCI images
  -h, --help           this help
USAGE
}

die() { echo "error: $1" >&2; [ -n "${2:-}" ] && echo "hint: $2" >&2; exit 2; }
step() { echo "==> $*" >&2; }

profile=dist; out=dist; key=""; unsigned=0; allow_dirty=0; quick=0; images=1
target=x86_64-unknown-linux-gnu.2.17
programs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --key) [ $# -ge 2 ] || die "\`--key\` needs a value" "--key release.key or --key env:VAR"; key="$2"; shift 2 ;;
    --unsigned) unsigned=1; shift ;;
    --out) [ $# -ge 2 ] || die "\`--out\` needs a folder"; out="$2"; shift 2 ;;
    --quick) quick=1; profile=dist-quick; shift ;;
    --program) [ $# -ge 2 ] || die "\`--program\` needs a name"; programs+=("$2"); shift 2 ;;
    --target) [ $# -ge 2 ] || die "\`--target\` needs a triple"; target="$2"; shift 2 ;;
    --allow-dirty) allow_dirty=1; shift ;;
    --no-images) images=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option \`$1\`" "see \`scripts/dist.sh --help\`" ;;
  esac
done
if [ ${#programs[@]} -eq 0 ]; then
  if [ $quick -eq 1 ]; then programs=(stackpack); else programs=(stackpack stackpack-runner stackpack-registry); fi
fi
for p in "${programs[@]}"; do
  case "$p" in stackpack|stackpack-runner|stackpack-registry) ;;
    *) die "no program \`$p\`" "the programs are \`stackpack\`, \`stackpack-runner\` and \`stackpack-registry\`" ;;
  esac
done

# The signing key, read before minutes of building, never printed.
keyfile=""
cleanup() { [ -n "${tmpkey:-}" ] && rm -f "$tmpkey"; return 0; }
trap cleanup EXIT
if [ $unsigned -eq 0 ]; then
  [ -n "$key" ] || die "no release key" "pass \`--key release.key\` (make one with \`stackpack keygen --out release\`, outside the repository) or \`--unsigned\` for a local trial"
  if [ "${key#env:}" != "$key" ]; then
    var="${key#env:}"
    value="${!var:-}"
    [ -n "$value" ] || die "\`$var\` is not set" "set it to the key's PEM or path"
    if [ "${value#-----BEGIN}" != "$value" ]; then
      tmpkey="$(mktemp)"; chmod 600 "$tmpkey"; printf '%s\n' "$value" > "$tmpkey"; keyfile="$tmpkey"
    else
      keyfile="$value"
    fi
  else
    keyfile="$key"
  fi
  [ -f "$keyfile" ] || die "no key file \`$keyfile\`" "make one with \`stackpack keygen --out release\`"
  openssl pkey -in "$keyfile" -noout 2>/dev/null || die "\`$keyfile\` is not a PEM private key" "use the \`.key\` file \`stackpack keygen\` wrote"
fi

# The tools: cargo-zigbuild links against glibc 2.17 with zig (both from PyPI).
need_pip=()
command -v cargo-zigbuild >/dev/null 2>&1 || need_pip+=(cargo-zigbuild)
python3 -c "import ziglang" 2>/dev/null || need_pip+=(ziglang)
if [ ${#need_pip[@]} -gt 0 ]; then
  step "installing ${need_pip[*]} from PyPI (first run only)"
  python3 -m pip install -q --disable-pip-version-check "${need_pip[@]}"
fi

commit="$(git rev-parse HEAD)"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  [ $allow_dirty -eq 1 ] || die "the work tree has uncommitted changes" "commit them (a release is built from a commit), or pass \`--allow-dirty\` for a trial"
  commit="${commit}+dirty"
fi
metadata="$(cargo metadata --format-version 1 --no-deps --locked)"
version="$(printf '%s' "$metadata" | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="stackpack-runner"))')"
source_url="$(printf '%s' "$metadata" | python3 -c 'import json,sys; print(next(p["repository"] or "" for p in json.load(sys.stdin)["packages"] if p["name"]=="stackpack-runner"))')"
export SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"
export STACKPACK_COMMIT="$commit" STACKPACK_COMMIT_DATE="$(git log -1 --format=%cs)"
glibc="${target##*-gnu.}"; [ "$glibc" != "$target" ] || glibc=""
export STACKPACK_GLIBC="$glibc"
triple="${target%.2.*}"
arch="${triple%%-*}"

# Paths that would differ between machines are remapped, so the binary is the same
# wherever it is built. Its own target folder: other RUSTFLAGS would rebuild the
# developer's everyday one.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
sysroot="$(rustc --print sysroot)"
export RUSTFLAGS="--remap-path-prefix=$ROOT=/stackpack --remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$sysroot=/rust"
export CARGO_TARGET_DIR="${STACKPACK_DIST_TARGET_DIR:-$ROOT/target/dist-zig}"
export CARGO_INCREMENTAL=0

packages=()
for p in "${programs[@]}"; do
  case "$p" in stackpack) packages+=(-p stackpack-packager) ;; *) packages+=(-p "$p") ;; esac
done
started=$(date +%s)
step "building ${programs[*]} $version ($profile profile) for $target: a clean dist build takes many minutes on 2 cores"
cargo zigbuild --locked --profile "$profile" --target "$target" --bins "${packages[@]}"
step "built in $(( $(date +%s) - started )) s"
bindir="$CARGO_TARGET_DIR/$triple/$profile"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$(mktemp -d)"
trap 'cleanup; rm -rf "$stage"' EXIT
archives=()
for p in "${programs[@]}"; do
  bin="$bindir/$p"
  newest="$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
  if [ -n "$glibc" ] && [ "$(printf '%s\n%s\n' "$newest" "$glibc" | sort -V | tail -1)" != "$glibc" ]; then
    die "\`$p\` needs GLIBC_$newest, newer than the $glibc it is built for" "build through \`cargo zigbuild --target $target\` (this script), not plain cargo"
  fi
  name="$p-$version-$arch-linux"
  dir="$stage/$name"
  mkdir -p "$dir"
  install -m 0755 "$bin" "$dir/$p"
  install -m 0644 LICENSE "$dir/LICENSE"
  package="$p"; [ "$p" = stackpack ] && package=stackpack-packager
  python3 scripts/dist/sbom.py "$package" "$triple" > "$dir/$p.cdx.json"
  chmod 0644 "$dir/$p.cdx.json"
  sed -e "s/@PROGRAM@/$p/g" -e "s/@VERSION@/$version/g" -e "s/@COMMIT@/$commit/g" \
      -e "s/@TARGET@/$target/g" -e "s/@GLIBC@/${newest:-none}/g" scripts/dist/README.in > "$dir/README.md"
  chmod 0644 "$dir/README.md"
  chmod 0755 "$dir"
  # No owner, no clock, sorted names, no gzip name or time: the same bytes every run.
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
      --format=gnu -C "$stage" -cf - "$name" | gzip -9 -n > "$out/$name.tar.gz"
  archives+=("$name.tar.gz")
  echo "$out/$name.tar.gz  (glibc needed: ${newest:-none}; $(stat -c %s "$bin") bytes unpacked)"
  if [ $images -eq 1 ]; then
    # The same binary, licence and SBOM as an OCI image (non-root, reproducible) in
    # one image layout; `images.txt` names each image's manifest digest and is
    # itself summed and signed below.
    python3 scripts/dist/image.py --layout "$out/oci" --program "$p" --binary "$bin" \
      --version "$version" --commit "$commit" --source "$source_url" \
      --license LICENSE --sbom "$dir/$p.cdx.json" >> "$stage/images.txt"
  fi
done
if [ $images -eq 1 ]; then
  touch "$out/images.txt"
  # This run's images replace an earlier run's of the same name.
  cat "$stage/images.txt" "$out/images.txt" | awk '!seen[$1]++' | LC_ALL=C sort > "$stage/images.sorted"
  install -m 0644 "$stage/images.sorted" "$out/images.txt"
  step "images in \`$out/oci\` (OCI layout); push one with: skopeo copy oci:$out/oci:stackpack-runner-$version docker://REGISTRY/stackpack-runner:$version"
fi

cd "$out"
# Every archive this folder holds for this version, so a second program built later
# is summed with the first.
{ ls -1 ./*-"$version"-"$arch"-linux.tar.gz; [ -f images.txt ] && echo ./images.txt; } \
  | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS
rm -f SHA256SUMS.sig
if [ $unsigned -eq 0 ]; then
  openssl pkeyutl -sign -inkey "$keyfile" -rawin -in SHA256SUMS -out SHA256SUMS.sig
  step "signed SHA256SUMS; a customer checks it with:"
  echo "  openssl pkeyutl -verify -pubin -inkey release.pub -rawin -in SHA256SUMS -sigfile SHA256SUMS.sig && sha256sum -c SHA256SUMS" >&2
else
  echo "warning: SHA256SUMS is not signed (--unsigned): nothing proves who built these archives" >&2
fi
echo "$out/SHA256SUMS"
