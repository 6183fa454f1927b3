#!/usr/bin/env bash
# etcd stopped in the middle of a claim. A short outage: etcd keeps leases
# across a restart, so the holder renews once it is back, its child keeps
# running, others are still refused, and it stands down cleanly. A long
# outage: the holder stops its child before its ttl has run out, exits 75,
# and once etcd is back another run starts; nothing is left corrupt (status
# reads every record, the next holder's epoch is larger).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

start_etcd db
port=$ETCD_PORT
store="etcd://127.0.0.1:$port/e2e"

renewed_at() { etcd_get "$ETCD_URL" /e2e/instances/holder | jq -r '.renewed_at // empty'; }

# Short outage, within the ttl (6 s: renewals every 2 s, fenced 5.4 s after the last one).
child='echo $$ >>"$WORK/pgids"; trap "touch \"\$WORK/short.term\"; exit 0" TERM; echo "$INSTANCE_GUARD_EPOCH" >"$WORK/short.epoch"; touch "$WORK/short.started"; sleep 300 & wait $!'
start_guard holder --log-level debug run --ttl 6s --store "$store" --id holder -- bash -c "$child"
holder=$LAST_PID
wait_until 10 test -f "$WORK/short.started" || fail "the child did not start: $(cat "$WORK/holder.err")"
epoch1=$(cat "$WORK/short.epoch")

stop_etcd db
stopped=$(now_ms)
start_etcd db "$port"
down_ms=$(($(now_ms) - stopped))
before=$(renewed_at)
# A renewal after the restart rewrites the record (polled, bounded by the ttl).
deadline=$(($(now_ms) + 6000))
while [[ $(renewed_at) == "$before" ]]; do
  (($(now_ms) < deadline)) || fail "no renewal within 6 s after etcd came back: $(tail -5 "$WORK/holder.err")"
  sleep 0.05
done
running "$holder" || fail "the holder exited during a short outage: $(cat "$WORK/holder.err")"
[[ ! -e $WORK/short.term ]] || fail "the child was stopped during a short outage"
grep -q 'claim lost' "$WORK/holder.err" && fail "the claim was lost during a short outage"
ok "etcd down for ${down_ms} ms: the holder renewed after the restart and its child kept running"

run_guard run --store "$store" --id other -- bash -c 'echo other ran'
expect_exit 75 "another run after the restart"
ok "after the restart others are still refused"

kill -TERM "$holder"
wait_exit "$holder" 10
[[ $EXIT_CODE == 0 ]] || fail "the holder exited $EXIT_CODE, expected 0 (its child's status)"
[[ -z $(etcd_get "$ETCD_URL" /e2e/instances/holder) ]] || fail "the holder's record is still there"
ok "the holder stood down cleanly after the restart"

# Long outage: the holder must stop its child before the ttl (3 s) runs out.
child='echo $$ >>"$WORK/pgids"; trap "date +%s%3N >\"\$WORK/long.term\"; exit 0" TERM; touch "$WORK/long.started"; sleep 300 & wait $!'
start_guard long run --ttl 3s --store "$store" --id long -- bash -c "$child"
long=$LAST_PID
wait_until 10 test -f "$WORK/long.started" || fail "the child did not start: $(cat "$WORK/long.err")"
stop_etcd db
stopped=$(now_ms)
wait_until 10 test -f "$WORK/long.term" || fail "the child got no SIGTERM within 10 s: $(cat "$WORK/long.err")"
term_ms=$(($(cat "$WORK/long.term") - stopped))
wait_exit "$long" 10
[[ $EXIT_CODE == 75 ]] || { cat "$WORK/long.err" >&2; fail "the guard exited $EXIT_CODE after the loss, expected 75"; }
grep -q 'claim lost' "$WORK/long.err" || fail "no 'claim lost' line: $(cat "$WORK/long.err")"
((term_ms < 3000)) || fail "the child got SIGTERM $term_ms ms after etcd went away (ttl is 3 s)"
ok "etcd stopped for good: child got SIGTERM after $term_ms ms, guard exited 75"

start_etcd db "$port"
run_guard run --ttl 3s --wait=20s --store "$store" --id next -- bash -c 'echo "epoch=$INSTANCE_GUARD_EPOCH"'
expect_exit 0 "a run after etcd came back"
epoch2=$(sed -n 's/^epoch=//p' "$WORK/last.out")
((epoch2 > epoch1)) || fail "the epoch did not grow across the outages: $epoch1 then $epoch2"
ok "after etcd came back another run started (${ELAPSED_MS} ms), epoch $epoch1 -> $epoch2"

run_guard status --store "$store" --json
expect_exit 0 "status after the outages"
jq -e 'all(.[]; .readable)' "$WORK/last.out" >/dev/null || fail "unreadable records: $(cat "$WORK/last.out")"
ok "status reads every record after the outages"
