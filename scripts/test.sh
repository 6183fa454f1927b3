#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (unit,
# contract, integration and end-to-end tests). Exits nonzero when any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j2
