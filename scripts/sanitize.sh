#!/usr/bin/env bash
# The test suite under sanitizers, each in its own build folder:
#   build-asan: AddressSanitizer + UndefinedBehaviorSanitizer (with leak
#               checking) over the whole suite, end-to-end tests included;
#   build-tsan: ThreadSanitizer over the renewal, loss-detection and
#               scheduler paths and the races (the code with threads).
# Part of ./scripts/test.sh; exits nonzero at the first report.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINSTANCE_WERROR=ON \
  -DINSTANCE_SANITIZE=address,undefined
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2

cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINSTANCE_WERROR=ON \
  -DINSTANCE_SANITIZE=thread
cmake --build build-tsan -j"$jobs" --target unit_tests race_tests
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
build-tsan/tests/unit_tests \
  --gtest_filter='GuardTest.*:ModesTest.*:NativeLeaseTest.*:ThreadScheduler.*:ManualScheduler.*:Fault*:Guard*'
build-tsan/tests/race_tests --gtest_filter='*memory*:*directory_exclusive_2*:*directory_verify_2*'
echo "sanitizers: ASan+UBSan suite and TSan threads suite clean"
