#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (unit,
# contract, integration, end-to-end, simulator, model, fuzz, chaos, benchmark
# and packaging tests), then the same suite again under AddressSanitizer and
# UndefinedBehaviorSanitizer and the threaded paths under ThreadSanitizer
# (scripts/sanitize.sh, at a smaller size). Exits nonzero when any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j2
./scripts/sanitize.sh
