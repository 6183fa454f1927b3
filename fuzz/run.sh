#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build-fuzz/ (configured once,
# then reused) and runs each for SECONDS (default 10) on a fresh copy of its
# seed corpus (fuzz/corpus/<target>/), with ASan and UBSan.
#
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
#   fuzz/run.sh              10 s per target (what `ctest -R fuzz.short` runs)
#   fuzz/run.sh 3600         a long run: an hour per target
#   fuzz/run.sh 600 key_fuzz one target
# Environment: FUZZ_CXX (default clang++-16), FUZZ_BUILD_DIR (default
# build-fuzz), FUZZ_JOBS (build parallelism, default nproc).
#
# Exits nonzero when a target finds a crash, a leak, a timeout or a broken
# invariant; the input that did it is kept as build-fuzz/artifacts/<target>/crash-*
# (rerun it with build-fuzz/fuzz/<target> FILE).
#
# Why clang 16 and not the default clang 14: libstdc++ 12's <expected> needs
# conditionally trivial destructors (P0848), which clang 14 lacks (every
# std::expected<std::string, E> fails with "attempt to use a deleted
# function"). Clang 16 implements P0848 but still reports __cpp_concepts as
# 201907L, so libstdc++ hides std::expected; the build defines
# __cpp_concepts=202002L (the value the standard gives for P0848) to unhide it.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
seconds=${1:-10}
shift || true
targets=("$@")
all_targets=(record_fuzz record_go_fuzz key_fuzz duration_fuzz rfc3339_fuzz store_url_fuzz webdav_listing_fuzz)
((${#targets[@]})) || targets=("${all_targets[@]}")

cxx=${FUZZ_CXX:-clang++-16}
cc=${FUZZ_CC:-${cxx/clang++/clang}}
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (scripts/deps.sh installs clang-16)" >&2; exit 1; }

mkdir -p "$build"
# One run at a time per build folder (ctest and a developer may both call this).
exec 9>"$build/.run.lock"
flock 9

sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_CXX_FLAGS="-D__cpp_concepts=202002L -Wno-macro-redefined -fsanitize=fuzzer-no-link $sanitize -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="$sanitize" \
    -DINSTANCE_BUILD_TESTS=OFF -DINSTANCE_BUILD_BENCH=OFF -DINSTANCE_BUILD_SIM=OFF \
    -DINSTANCE_WITH_CS3=OFF -DINSTANCE_WITH_ETCD=OFF -DINSTANCE_WITH_POSTGRES=OFF \
    -DINSTANCE_FUZZ=ON -DINSTANCE_WERROR=OFF >"$build/configure.log" ||
    { cat "$build/configure.log"; exit 1; }
fi
build_args=()
for t in "${targets[@]}"; do build_args+=(--target "$t"); done
cmake --build "$build" -j"$jobs" "${build_args[@]}" >"$build/build.log" 2>&1 ||
  { tail -50 "$build/build.log"; echo "fuzz: build failed (full log: $build/build.log)" >&2; exit 1; }

failed=()
printf '%-22s %8s %10s %9s %12s %6s\n' target seconds execs exec/s corpus cov
for t in "${targets[@]}"; do
  seeds="$root/fuzz/corpus/$t"
  work="$build/run/$t"
  artifacts="$build/artifacts/$t"
  rm -rf "$work"
  mkdir -p "$work" "$artifacts"
  [[ -d $seeds ]] && cp -r "$seeds/." "$work/"
  log="$build/run/$t.log"
  status=0
  "$build/fuzz/$t" "$work" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  corpus=$(sed -n 's/.*corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$done_line")
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  printf '%-22s %8s %10s %9s %12s %6s\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "${corpus:-?}" "${cov:-?}"
  if ((status != 0)); then
    failed+=("$t")
    echo "---- $t failed (exit $status); log: $log" >&2
    grep -E 'invariant broken|ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|Test unit written|SUMMARY' "$log" | head -20 >&2 || true
  fi
done

if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all targets ran ${seconds}s without a finding"
