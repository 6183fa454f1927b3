#!/usr/bin/env bash
# `run` against Redis behind Sentinel: a master, a replica and three
# Sentinels started here on loopback ports (redis_sentinel.sh), the store
# URL naming the Sentinels. `status` and the claim's guarantee line name
# Sentinel and say what a failover may lose. The master crashes during the
# claim; the Sentinels promote the replica and the holder either keeps its
# claim there (its child runs on, a second guard is refused) or loses it
# cleanly (its child is stopped, exit 75). The epoch on the new master never
# went below the holder's when the claim was kept. Figures for
# RELIABILITY.md are the `ok` lines.
source "$(dirname "$0")/lib.sh"
SENTINEL_SH=${INSTANCE_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/integration/servers/redis_sentinel.sh
trap 'bash "$SENTINEL_SH" stop "$WORK/s" >/dev/null 2>&1 || true; cleanup' EXIT
rc=0
store=$(WATCH_PID=$$ bash "$SENTINEL_SH" start "$WORK/s" 2>"$WORK/start.err") || rc=$?
((rc == 3)) && { echo "skipped: redis-sentinel is not installed"; exit 77; }
((rc == 0)) || fail "could not start the Sentinel cluster: $(cat "$WORK/start.err")"
master() { bash "$SENTINEL_SH" master "$WORK/s"; }

run_guard status --store "$store"
expect_exit 0 "status behind Sentinel"
grep -q '^mode: exclusive.*Redis Sentinel (master mymaster): replication is asynchronous, so a failover may lose the latest lock write' "$WORK/last.out" ||
  fail "status does not say what a failover may lose: $(cat "$WORK/last.out")"
ok "status names Sentinel and what a failover may lose"

run_guard status --store "${store%/mymaster}/nosuch"
[[ $EXIT_CODE != 0 ]] || fail "status with an unknown master name succeeded"
grep -q 'no Sentinel named the master nosuch' "$WORK/last.err" || fail "no clear message for an unknown master: $(cat "$WORK/last.err")"
ok "an unknown master name exits $EXIT_CODE naming it"

# ttl 3 s: renewals every second.
start_watched holder run --ttl 3s --store "$store" --id holder
holder=$LAST_PID
epoch1=$(cat "$WORK/holder.epoch")
grep 'claimed' "$WORK/holder.err" | grep -q 'Redis Sentinel (master mymaster)' ||
  fail "the guarantee line does not name Sentinel: $(grep -m1 claimed "$WORK/holder.err")"
old=$(master)
crashed=$(now_ms)
bash "$SENTINEL_SH" crash "$WORK/s"
wait_until 15 bash -c "[[ \$(bash '$SENTINEL_SH' master '$WORK/s') != $old ]]" || fail "no failover within 15 s"
promoted_ms=$(($(now_ms) - crashed))
new=$(master)
# Resolved: the holder renewed on the new master (the lock's PTTL is above
# the ttl's two thirds again) or it stood down.
renewed() { local t; t=$(redis-cli -p "$new" PTTL instance-guard:lock:instances.lock 2>/dev/null); [[ $t =~ ^[0-9]+$ ]] && ((t > 2000)); }
wait_until 15 bash -c "$(declare -f renewed); new=$new; renewed || ! kill -0 $holder" || fail "neither a renewal on the new master nor a stand-down within 15 s"
resolved_ms=$(($(now_ms) - crashed))
if kill -0 "$holder" 2>/dev/null && renewed; then
  run_guard run --store "$store" --id second -- bash -c 'echo second ran'
  expect_exit 75 "a second guard beside the kept claim"
  epoch_now=$(redis-cli -p "$new" GET instance-guard:epoch:instances.lock)
  ((epoch_now >= epoch1)) || fail "the epoch went back: $epoch_now after $epoch1"
  ok "failover: kept; promoted in $promoted_ms ms, renewed on the new master $resolved_ms ms after the crash; epoch $epoch1 -> $epoch_now; double holders 0"
  kill -TERM "$holder"
  wait_exit "$holder" 10
else
  expect_fenced holder "$holder" "$crashed" 10000 "the failover"
  ok "failover: lost cleanly; promoted in $promoted_ms ms, child stopped $TERM_MS ms after the crash"
fi
