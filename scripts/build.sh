#!/usr/bin/env bash
# Configures and builds instance-guard in build/ (the tool: build/instance-guard),
# with warnings as errors. Usage: build.sh [TARGET...] (default: everything).
set -euo pipefail
cd "$(dirname "$0")/.."
# Optimised (-O2) with line tables only (-g1): stacks and sanitizer reports
# keep file:line, and the compiler does about half the work of full -g. A
# unity build (a few sources per compiler run, sharing their headers' parse)
# cuts as much again; for many small edits, a folder of your own without it
# rebuilds less per change (docs/development.md).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  -DCMAKE_UNITY_BUILD=ON -DINSTANCE_WERROR=ON
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
