#!/usr/bin/env bash
# Installs a verified Stackpack release: on a customer's bastion (offline, from a
# folder or a kit), in a vendor's CI, anywhere a program is wanted without compiling.
#
#   scripts/install.sh --from https://releases.example/stackpack/0.1.0 --key release.pub
#   scripts/install.sh --from /media/kit/stackpack --key release.pub --to /usr/local/bin
#
# It fetches (or copies) `SHA256SUMS`, `SHA256SUMS.sig` and the program's archive,
# checks the signature with the release key you trust (openssl) and the archive's
# sum (sha256sum), and only then unpacks the binary into --to. Nothing is installed
# when any check fails. Needs only bash, sha256sum, openssl, tar, gzip, and curl for
# an http(s) source.
set -euo pipefail

die() { echo "error: $1" >&2; [ -n "${2:-}" ] && echo "hint: $2" >&2; exit "${3:-2}"; }
refuse() { die "$1" "${2:-}" 1; }

from=""; key=""; to="${HOME:-/root}/.local/bin"; programs=(); version=""; pin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --from) [ $# -ge 2 ] || die "\`--from\` needs a URL or folder"; from="$2"; shift 2 ;;
    --key) [ $# -ge 2 ] || die "\`--key\` needs the release public key file"; key="$2"; shift 2 ;;
    --to) [ $# -ge 2 ] || die "\`--to\` needs a folder"; to="$2"; shift 2 ;;
    --program) [ $# -ge 2 ] || die "\`--program\` needs a name"; programs+=("$2"); shift 2 ;;
    --version) [ $# -ge 2 ] || die "\`--version\` needs a version"; version="$2"; shift 2 ;;
    --sha256) [ $# -ge 2 ] || die "\`--sha256\` needs a digest"; pin="$2"; shift 2 ;;
    -h|--help)
      sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
      cat <<'USAGE'

Options:
  --from URL|DIR     where the release is: an https URL or a folder holding
                     SHA256SUMS, SHA256SUMS.sig and the archives
  --key FILE         the release public key you trust (PEM)
  --to DIR           where the program goes (default ~/.local/bin)
  --program NAME     stackpack-runner (default), stackpack or stackpack-registry; repeatable
  --version V        the version to install (default: the only one SHA256SUMS lists)
  --sha256 HEX       also require the archive to have this digest (pin it in CI)
USAGE
      exit 0 ;;
    *) die "unknown option \`$1\`" "see \`scripts/install.sh --help\`" ;;
  esac
done
[ -n "$from" ] || die "no \`--from\`" "name the release's URL or folder"
[ -n "$key" ] || die "no \`--key\`: a release is only installed once its signature is checked" "pass the vendor's release public key, e.g. \`--key release.pub\`"
[ -f "$key" ] || die "no key file \`$key\`"
[ ${#programs[@]} -gt 0 ] || programs=(stackpack-runner)
for tool in sha256sum openssl tar gzip; do
  command -v "$tool" >/dev/null 2>&1 || die "\`$tool\` is not installed" "install it with the system's package manager"
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fetch() {
  case "$from" in
    http://*|https://*)
      command -v curl >/dev/null 2>&1 || die "\`curl\` is needed to download from \`$from\`"
      # Capped: a release file is never larger than 1 GiB.
      curl -fsSL --proto '=https,http' --max-filesize 1073741824 -o "$work/$1" "${from%/}/$1" \
        || refuse "cannot download \`${from%/}/$1\`" "check the URL and the version" ;;
    *)
      [ -f "$from/$1" ] || refuse "\`$from/$1\` is missing" "copy the whole release folder (SHA256SUMS, SHA256SUMS.sig and the archives)"
      cp "$from/$1" "$work/$1" ;;
  esac
}
fetch SHA256SUMS
fetch SHA256SUMS.sig
openssl pkeyutl -verify -pubin -inkey "$key" -rawin -in "$work/SHA256SUMS" -sigfile "$work/SHA256SUMS.sig" >/dev/null 2>&1 \
  || refuse "\`SHA256SUMS\` is not signed by the key in \`$key\`" "get the release again, or the right release key from your vendor; nothing was installed"

mkdir -p "$to"
for program in "${programs[@]}"; do
  pattern="^[0-9a-f]{64}  ${program}-${version:-[0-9][^ ]*}-x86_64-linux\.tar\.gz$"
  line="$(grep -E "$pattern" "$work/SHA256SUMS" || true)"
  [ -n "$line" ] || refuse "the signed \`SHA256SUMS\` lists no \`$program\` archive${version:+ for version \`$version\`}" "check --program and --version against SHA256SUMS"
  [ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ] || die "\`SHA256SUMS\` lists several versions of \`$program\`" "choose one with \`--version\`"
  archive="${line#*  }"
  fetch "$archive"
  (cd "$work" && printf '%s\n' "$line" | sha256sum -c --quiet -) >/dev/null 2>&1 \
    || refuse "\`$archive\` does not match the signed \`SHA256SUMS\`" "download it again; nothing was installed"
  if [ -n "$pin" ] && [ "${line%%  *}" != "$pin" ]; then
    refuse "\`$archive\` has digest \`${line%%  *}\`, not the pinned \`$pin\`" "update the pin only after reading the release notes"
  fi
  tar -xzf "$work/$archive" -C "$work"
  dir="$work/${archive%.tar.gz}"
  [ -x "$dir/$program" ] || refuse "\`$archive\` holds no \`$program\`"
  # Into place by rename, so a running copy is never half-overwritten.
  install -m 0755 "$dir/$program" "$to/.$program.new"
  mv -f "$to/.$program.new" "$to/$program"
  echo "installed $("$to/$program" --version) at $to/$program"
done
