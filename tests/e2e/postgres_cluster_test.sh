#!/usr/bin/env bash
# `run` on a PostgreSQL primary with a streaming standby, started here on
# loopback ports (tests/integration/servers/postgres_cluster.sh), the store
# URL naming both hosts. The primary crashes during the claim and the
# standby is promoted: libpq finds the new primary (target_session_attrs
# read-write), the holder renews its lease there, its child keeps running
# and another run is refused. Once with synchronous replication (the
# guarantee line promises that a promoted standby keeps the claim), once
# with asynchronous replication (the line says a failover may lose the
# lease row; here it was written seconds before the crash, so it is on the
# standby, and the claim is kept). `run` and `status` name the replication.
# Figures for RELIABILITY.md are the `ok` lines.
source "$(dirname "$0")/lib.sh"
SERVERS=${INSTANCE_TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/integration/servers
chmod a+x "$WORK"  # as root, the clusters run as the postgres user, which must traverse it
trap 'for m in sync async; do bash "$SERVERS/postgres_cluster.sh" stop "$WORK/$m" >/dev/null 2>&1 || true; done; cleanup' EXIT
psql_at() { "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)/psql" -X -q -At -h 127.0.0.1 -p "$1" -U postgres -d guard -c "$2"; }

failover() { # failover MODE WORDS: one round; WORDS the guarantee line must hold
  local mode=$1 words=$2 p1 p2 rc=0
  p1=$(free_port) p2=$(free_port)
  WATCH_PID=$$ bash "$SERVERS/postgres_cluster.sh" start "$WORK/$mode" "$p1" "$p2" "$mode" \
    >"$WORK/$mode.start.out" 2>&1 || rc=$?
  ((rc != 77)) || { echo "SKIP: $(cat "$WORK/$mode.start.out")"; exit 0; }
  ((rc == 0)) || fail "could not start the $mode cluster: $(cat "$WORK/$mode.start.out")"
  local store="postgres://127.0.0.1:$p1,127.0.0.1:$p2/guard?table=ha_$mode"
  # ttl 6 s: renewals every 2 s.
  start_watched "$mode" --log-level debug run --ttl 6s --store "$store" --id "holder-$mode"
  local holder=$LAST_PID
  grep -q "$words" "$WORK/$mode.err" ||
    fail "run's guarantee line does not name $mode replication: $(grep -m1 claimed "$WORK/$mode.err")"
  run_guard status --store "$store"
  expect_exit 0 "status on the $mode cluster"
  grep -q "^mode: exclusive (auto): .*$words" "$WORK/last.out" ||
    fail "status does not name $mode replication: $(cat "$WORK/last.out")"

  local expiry="SELECT (extract(epoch FROM expires_at) * 1000)::bigint FROM ha_$mode WHERE kind = 'l'"
  # Asynchronous replication sends the lease row a little later (with
  # synchronous_commit off, once the primary's WAL writer flushed it): up to
  # 5 s for the standby to have it. A crash before then is the failover that
  # loses it, which the guarantee line names.
  local before="" until=$(($(now_ms) + 5000))
  while before=$(psql_at "$p2" "$expiry" 2>/dev/null); [[ -z $before ]]; do
    (($(now_ms) < until)) || fail "the standby has no lease row after 5 s ($mode)"
    sleep 0.05
  done
  bash "$SERVERS/postgres_cluster.sh" crash "$WORK/$mode" primary
  local crashed; crashed=$(now_ms)
  bash "$SERVERS/postgres_cluster.sh" promote "$WORK/$mode"
  local deadline=$((crashed + 8000)) now
  while now=$(psql_at "$p2" "$expiry" 2>/dev/null); [[ -z $now || $now == "$before" ]]; do
    (($(now_ms) < deadline)) || fail "no renewal on the promoted standby within 8 s ($mode): $(tail -5 "$WORK/$mode.err")"
    [[ ! -e $WORK/$mode.term ]] || fail "the claim was lost in the $mode failover: $(tail -5 "$WORK/$mode.err")"
    sleep 0.05
  done
  local renew_ms=$(($(now_ms) - crashed))
  run_guard run --ttl 6s --store "$store" --id "other-$mode" -- bash -c 'echo other ran'
  expect_exit 75 "another run while the holder holds ($mode)"
  [[ ! -s $WORK/last.out ]] || fail "the other guard's command ran beside the holder's ($mode)"
  running "$holder" || fail "the holder exited after the $mode failover: $(cat "$WORK/$mode.err")"
  [[ ! -e $WORK/$mode.term ]] || fail "the child was stopped after the $mode failover"
  ! grep -q 'claim lost' "$WORK/$mode.err" || fail "the claim was lost after the $mode failover"
  ok "$mode replication: primary crashed, standby promoted; the holder renewed on the new primary ${renew_ms} ms after the crash (renewals every 2 s), child kept running, another run refused"
  kill -TERM "$holder"
  wait_exit "$holder" 10
  # The watched child exits 0 on SIGTERM, and the guard with it.
  [[ $EXIT_CODE == 0 ]] || fail "the holder exited $EXIT_CODE on SIGTERM, expected 0 (its child's)"
  bash "$SERVERS/postgres_cluster.sh" stop "$WORK/$mode" >/dev/null 2>&1 || true
}

failover sync 'synchronous replication (synchronous_standby_names'
failover async 'asynchronous replication (synchronous_commit off): a failover can lose'
