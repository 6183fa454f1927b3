#!/usr/bin/env bash
# Configures and builds instance-guard in build/ (the tool: build/instance-guard),
# with warnings as errors. Usage: build.sh [TARGET...] (default: everything).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINSTANCE_WERROR=ON
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
