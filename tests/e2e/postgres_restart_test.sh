#!/usr/bin/env bash
# A PostgreSQL server restart in the middle of a claim. A short restart: the
# holder reconnects, renews its lease (judged on the server's clock) and its
# child keeps running; a second guard is still refused. An outage longer
# than the ttl: the holder stops its child and exits 75 before the lease
# could pass to anyone; once the server is back, nothing is corrupt (status
# reads every record) and a waiting successor takes over when the server's
# lease expires.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/postgres_lib.sh"
pg_start
store="$PG_URL?table=restart_test"
lease_expiry() { pg_sql "SELECT extract(epoch FROM expires_at) FROM restart_test WHERE kind = 'l'"; }

# A short restart: ttl 9s, renewals every 3s.
start_guard holder run --store "$store" --ttl 9s --id holder -- bash -c "$(sleeper holder)"
holder=$LAST_PID
wait_until 10 test -f "$WORK/holder.started" || fail "the holder's child did not start: $(cat "$WORK/holder.err")"
child=$(awk '{print $1}' "$WORK/holder.started")
pg_stop
stopped_at=$(date +%s.%N)
pg_start
renewed_after_restart() {
  local e; e=$(lease_expiry 2>/dev/null) || return 1
  [[ -n $e ]] && awk -v e="$e" -v s="$stopped_at" 'BEGIN { exit !(e > s + 9) }'
}
wait_until 15 renewed_after_restart || fail "the holder did not renew after the restart: $(cat "$WORK/holder.err")"
running "$holder" || fail "the holder exited: $(cat "$WORK/holder.err")"
running "$child" || fail "the holder's child was stopped"
grep -q 'reconnected to PostgreSQL' "$WORK/holder.err" || fail "no reconnection logged: $(cat "$WORK/holder.err")"
run_guard run --store "$store" --id other -- bash -c 'echo other ran'
expect_exit 75 "a second guard after the restart"
ok "after a restart the holder reconnected and renewed; its child runs; others are refused"
kill -TERM "$holder"
wait_exit "$holder" 10
[[ $EXIT_CODE == 143 ]] || fail "the holder exited $EXIT_CODE, expected 143"

# An outage longer than the ttl: ttl 3s.
start_guard cut run --store "$store" --ttl 3s --id cut -- bash -c "$(sleeper cut)"
cut=$LAST_PID
wait_until 10 test -f "$WORK/cut.started" || fail "the guard's child did not start: $(cat "$WORK/cut.err")"
child=$(awk '{print $1}' "$WORK/cut.started")
pg_stop
wait_exit "$cut" 15
[[ $EXIT_CODE == 75 ]] || fail "the cut-off holder exited $EXIT_CODE, expected 75: $(cat "$WORK/cut.err")"
wait_until 5 not_running "$child" || fail "the cut-off holder's child still runs"
grep -qi 'lost' "$WORK/cut.err" || fail "the holder did not say the claim was lost: $(cat "$WORK/cut.err")"
ok "cut off past its ttl, the holder stopped its child and exited 75"

pg_start
run_guard status --store "$store" --json
expect_exit 0 "status after the outage"
jq -e 'all(.[]; .readable)' "$WORK/last.out" >/dev/null || fail "an unreadable record: $(cat "$WORK/last.out")"
run_guard run --store "$store" --wait=20s --id next -- bash -c 'echo next ran'
expect_exit 0 "a waiting successor after the outage"
grep -q 'next ran' "$WORK/last.out" || fail "the successor did not run"
ok "after the outage every record reads and a successor took over in ${ELAPSED_MS} ms"
