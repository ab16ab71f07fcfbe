#!/usr/bin/env bash
# Measures `stackpack check` on a generated repository (200 modules, 20 stacks by
# default) beside `terraform fmt -check -recursive` on the same tree. Measured, never
# asserted. Usage: packager/benches/check.sh [MODULES] [STACKS]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run --quiet --release -p stackpack-packager --example check_bench -- "${1:-200}" "${2:-20}"
