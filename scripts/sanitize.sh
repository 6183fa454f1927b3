#!/usr/bin/env bash
# The test suite under sanitizers, each in its own build folder; part of
# ./scripts/test.sh, after the plain suite:
#   build-asan: AddressSanitizer + UndefinedBehaviorSanitizer (with leak
#               checking) over the whole suite, end-to-end tests included,
#               at a smaller size: 40 chaos cycles per mode instead of 200,
#               30 simulator seeds per scenario instead of 300, 50 rounds
#               per race case instead of 200. Left to the
#               plain pass: the spin model (no C++ of ours), the fuzz run
#               (fuzz/run.sh already builds it with ASan and UBSan) and the
#               packaging tests (install rules and .debs, not code).
#   build-tsan: ThreadSanitizer over the code with threads: the guard's
#               renewal, loss detection and fencing, the schedulers, the
#               fault sweep and the races on memory and directory stores.
# Exits nonzero at the first report.
# Usage: sanitize.sh [--build-only] [asan|tsan]... (default: both).
#   --build-only  configure and build, run nothing (scripts/test.sh builds
#                 this way in the background while the plain suite runs)
# Full size:
#   SANITIZE_SIM_SEEDS=300 CHAOS_CYCLES=200 RACE_ROUNDS=200 scripts/sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
build_only=false
if [[ ${1:-} == --build-only ]]; then
  build_only=true
  shift
fi
passes=("$@")
((${#passes[@]})) || passes=(asan tsan)

# -O1 with line tables only (-g1): the reports keep file:line stacks, and
# the build costs less than half of -O2 -g under the sanitizers. A unity
# build, as scripts/build.sh's.
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
       -DCMAKE_UNITY_BUILD=ON -DINSTANCE_WERROR=ON)

# Not under ASan: the multi-host harness (hosts.*: real time, timing-bound,
# and libfaketime preloaded before the ASan runtime would stop the guard).
asan() {
  cmake -S . -B build-asan "${flags[@]}" \
    -DINSTANCE_SANITIZE=address,undefined -DINSTANCE_SIM_SEEDS="${SANITIZE_SIM_SEEDS:-30}"
  cmake --build build-asan -j"$jobs"
  $build_only && return
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
  LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  CHAOS_CYCLES=${CHAOS_CYCLES:-40} RACE_ROUNDS=${RACE_ROUNDS:-50} \
    ctest --test-dir build-asan --output-on-failure -j2 \
      -E '^(model\.spin|fuzz\.short|packaging\..*|hosts\..*)$'
  echo "sanitizers: ASan+UBSan suite clean"
}

tsan() {
  # Only what the threaded tests below link: the core, the local stores and
  # the test executables; no remote store, benchmark or simulator.
  cmake -S . -B build-tsan "${flags[@]}" -DINSTANCE_SANITIZE=thread \
    -DINSTANCE_WITH_WEBDAV=OFF -DINSTANCE_WITH_ETCD=OFF -DINSTANCE_WITH_CS3=OFF \
    -DINSTANCE_WITH_POSTGRES=OFF -DINSTANCE_WITH_REDIS=OFF -DINSTANCE_BUILD_BENCH=OFF \
    -DINSTANCE_BUILD_SIM=OFF
  cmake --build build-tsan -j"$jobs" --target unit_tests race_tests
  $build_only && return
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  # The two at once: each keeps about one core busy (92 s one after the other).
  build-tsan/tests/unit_tests \
    --gtest_filter='GuardTest.*:ModesTest.*:NativeLeaseTest.*:ThreadScheduler.*:ManualScheduler.*:Fault*:Guard*' \
    >build-tsan/unit_tests.log 2>&1 &
  local unit=$!
  local races=0 units=0
  build-tsan/tests/race_tests --gtest_filter='*memory*:*directory_exclusive_2*:*directory_verify_2*' ||
    races=$?
  wait "$unit" || units=$?
  if ((units)); then
    cat build-tsan/unit_tests.log
  else
    tail -3 build-tsan/unit_tests.log
  fi
  ((races == 0 && units == 0)) || { echo "sanitizers: TSan found a problem (above)" >&2; exit 1; }
  echo "sanitizers: TSan threads suite clean"
}

for pass in "${passes[@]}"; do
  case $pass in
    asan) asan ;;
    tsan) tsan ;;
    *) echo "sanitize.sh: unknown pass '$pass' (asan or tsan)" >&2; exit 2 ;;
  esac
done
