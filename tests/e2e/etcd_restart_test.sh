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
start_watched holder --log-level debug run --ttl 6s --store "$store" --id holder
holder=$LAST_PID
epoch1=$(cat "$WORK/holder.epoch")

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
[[ ! -e $WORK/holder.term ]] || fail "the child was stopped during a short outage"
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
start_watched long run --ttl 3s --store "$store" --id long
long=$LAST_PID
stop_etcd db
stopped=$(now_ms)
expect_fenced long "$long" "$stopped" 3000 "etcd went away (ttl 3 s)"
ok "etcd stopped for good: child got SIGTERM after $TERM_MS ms, guard exited 75"

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
