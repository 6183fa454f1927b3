#!/usr/bin/env bash
# The multi-host fault harness's long run (tests/hosts/README.md): COUNT
# fault cycles per store and mode (verify, exclusive, auto), going round
# every fault kind (partition, oneway, delay, stall, pause, reset, restart),
# and SKEW_COUNT partition cycles per clock-skew phase; each phase's
# checker report (JSON) is kept in RESULTS.
#   scripts/hosts-long.sh [COUNT [STORE...]]     default: 100, etcd redis postgres webdav cs3
# Environment: BUILD_DIR [build], RESULTS [build/hosts-results], SKEW_COUNT [10],
# HOSTS_MODES (a subset of the modes). Needs root (namespaces); about 3.5 s a
# cycle, so 100 cycles x 3 modes take about 20 minutes per store.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
COUNT=${1:-100}
shift || true
STORES=("$@")
((${#STORES[@]})) || STORES=(etcd redis postgres webdav cs3)
RESULTS=${RESULTS:-$BUILD_DIR/hosts-results}
cmake --build "$BUILD_DIR" --target instance-guard hosts-check hosts-fault-proxy cs3-gateway-double >/dev/null
status=0
for store in "${STORES[@]}"; do
  echo "== $store: $COUNT cycles per mode"
  INSTANCE_GUARD_BIN=$BUILD_DIR/instance-guard HOSTS_LONG=1 HOSTS_CYCLES=$COUNT \
    HOSTS_SKEW_CYCLES=${SKEW_COUNT:-10} HOSTS_RESULTS=$RESULTS \
    bash "$ROOT/tests/hosts/run.sh" "$store" || status=1
done
bash "$ROOT/tests/hosts/summary.sh" "$RESULTS"
echo "checker reports: $RESULTS (hosts-check's JSON; tables: tests/hosts/summary.sh $RESULTS)"
exit $status
