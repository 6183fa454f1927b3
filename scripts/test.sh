#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (unit,
# contract, integration, end-to-end, simulator, model, fuzz, chaos, benchmark
# and packaging tests), then the same suite again under AddressSanitizer and
# UndefinedBehaviorSanitizer and the threaded paths under ThreadSanitizer
# (scripts/sanitize.sh, at a smaller size). Exits nonzero when any fails.
#
# The plain suite spends most of its time waiting (on servers, leases and
# timers), so the sanitizer builds run meanwhile, in the background at the
# lowest CPU and I/O priority: they use what the tests leave idle and never
# take a core from a test that wants one. Their log: build/sanitize-build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh

# setsid: a session of its own, so that stopping its process group stops its
# compilers too. With the scheduler's autogroups (kernel.sched_autogroup_enabled,
# on by default) a new session is a new group that gets as much CPU as this
# whole test run, whatever its processes' nice: the group itself is set to
# nice 19 first (/proc/self/autogroup), then the processes.
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true
                exec nice -n 19 ionice -c 3 ./scripts/sanitize.sh --build-only' \
  >build/sanitize-build.log 2>&1 &
background=$!
trap 'kill -- -"$background" 2>/dev/null || true' EXIT

ctest --test-dir build --output-on-failure -j2

if ! wait "$background"; then
  # Shown by the foreground build below, which starts again where it stopped.
  echo "test.sh: the background sanitizer build failed; building in the foreground" >&2
fi
trap - EXIT
./scripts/sanitize.sh
