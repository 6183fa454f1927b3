#!/usr/bin/env bash
# Every C++ file git tracks follows .clang-format: clang-format --dry-run
# -Werror reports each line that differs and fails. Fix with
#   clang-format-16 -i FILE...
# Exits 77 (skipped) only outside CI when clang-format-16 is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
fmt=${CLANG_FORMAT:-clang-format-16}
if ! command -v "$fmt" >/dev/null; then
  if [[ ${CI:-} == true ]]; then
    echo "format: $fmt not found (scripts/deps.sh installs clang-format-16)" >&2
    exit 1
  fi
  echo "format: $fmt not found; skipped (scripts/deps.sh installs clang-format-16)"
  exit 77
fi
mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cc')
((${#files[@]})) || { echo "format: no C++ files found (not a git checkout?)" >&2; exit 1; }
"$fmt" --dry-run -Werror "${files[@]}"
echo "format: ${#files[@]} files follow .clang-format"
