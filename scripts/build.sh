#!/usr/bin/env bash
# Configures and builds instance-guard in build/ (the binary: build/instance-guard).
# Extra arguments go to the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINSTANCE_WERROR=ON "$@"
cmake --build build -j"$(nproc)"
