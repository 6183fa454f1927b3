#!/usr/bin/env bash
# Style and static checks, for contributors (the test command runs the
# format check as the CTest test lint.format):
#   lint.sh format   clang-format-16 --dry-run -Werror on every tracked C++ file
#   lint.sh tidy     clang-tidy-16 with .clang-tidy over src/, using
#                    build/compile_commands.json (run scripts/build.sh first)
#   lint.sh          both
# Exits nonzero on the first finding.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
((${#steps[@]})) || steps=(format tidy)

tidy() {
  [[ -f build/compile_commands.json ]] || { echo "lint: run scripts/build.sh first" >&2; exit 1; }
  mapfile -t files < <(git ls-files -- 'src/*.cpp')
  # The commands are GCC's: clang 16 spells C++23 gnu++2b, and with
  # libstdc++ 12 needs __cpp_concepts raised to see std::expected
  # (fuzz/run.sh explains why).
  printf '%s\n' "${files[@]}" |
    xargs -P "$(nproc)" -n 4 clang-tidy-16 -p build --quiet \
      --extra-arg=-std=gnu++2b --extra-arg=-U__cpp_concepts --extra-arg=-D__cpp_concepts=202002L
  echo "lint: clang-tidy clean on ${#files[@]} files"
}

for step in "${steps[@]}"; do
  case $step in
    format) bash tests/lint/format_test.sh ;;
    tidy) tidy ;;
    *) echo "lint.sh: unknown step '$step' (format or tidy)" >&2; exit 2 ;;
  esac
done
