#!/usr/bin/env bash
# The chaos test (chaos_lib.sh) on two server stores, Redis and etcd, in
# exclusive mode (their native leases): three `run --wait` loops, guards
# SIGKILLed at random, no two children at once (a kernel flock proves it),
# and the store's tenure history read back by `instance-guard history`
# with no overlap and every epoch larger than the last. Fewer cycles than
# the folder's chaos test: each cycle waits on a server round trip.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_lib.sh"
source "$(dirname "$0")/etcd_lib.sh"
trap 'stop_all_redis; stop_all_etcd; cleanup' EXIT
source "$(dirname "$0")/chaos_lib.sh"
CYCLES=${CHAOS_CYCLES:-60}

start_redis chaos
chaos_run "$REDIS_URL/0?prefix=chaos:" exclusive "$CYCLES"
mv "$WORK/chaos-exclusive" "$WORK/chaos-redis"
start_etcd chaos
chaos_run "etcd://127.0.0.1:$ETCD_PORT/chaos" exclusive "$CYCLES"
