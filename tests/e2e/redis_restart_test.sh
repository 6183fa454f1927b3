#!/usr/bin/env bash
# redis-server restarted in the middle of a claim (`run --ttl 6s`: renewals
# every 2 s, each retried for 1.5 s, self-fencing 5.4 s after the last
# success; a redis-server takes up to 2 s to stop and start again here):
#   appendonly yes + appendfsync always: a stop (SIGTERM) and a crash
#   (SIGKILL) keep the lease; the holder renews on the restarted server, keeps
#   its child and its epoch, and a second run is still refused.
#   no persistence: the restart empties the server; the holder's next refresh
#   finds its lease gone, it stops its child and exits 75; the store is left
#   readable and the next run claims it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_lib.sh"

lock=instance-guard:lock:instances.lock
record=instance-guard:doc:instances/holder

renewed_at() { rcli "$1" HGET "$record" data | jq -r '.renewed_at // empty'; }
renewed_since() { local now; now=$(renewed_at "$1"); [[ -n $now && $now != "$2" ]]; }

# survive NAME HOW: HOW is stop_redis or crash_redis.
survive() {
  local name=$1 how=$2 holder token before
  start_redis "$name" PERSIST=aof
  start_guard "$name-holder" run --ttl 6s --store "$REDIS_URL" --id holder -- bash -c "$(sleeper "$name")"
  holder=$LAST_PID
  wait_until 10 test -f "$WORK/$name.started" || fail "$name: the child did not start: $(cat "$WORK/$name-holder.err")"
  token=$(rcli "$name" GET "$lock")

  "$how" "$name"
  restart_redis "$name"
  [[ $(rcli "$name" GET "$lock") == "$token" ]] || fail "$name: the lease did not survive the ${how%_redis}"
  before=$(renewed_at "$name")
  wait_until 8 renewed_since "$name" "$before" ||
    fail "$name: no renewal after the restart: $(cat "$WORK/$name-holder.err")"
  running "$holder" || fail "$name: the holder stopped: $(cat "$WORK/$name-holder.err")"
  kill -0 "$(cut -d' ' -f1 "$WORK/$name.started")" || fail "$name: the child stopped"
  [[ $(rcli "$name" GET "$lock") == "$token" ]] || fail "$name: the lease changed hands"
  ! grep -q 'claim lost' "$WORK/$name-holder.err" || fail "$name: the claim was lost"

  run_guard run --store "$REDIS_URL" --id second -- bash -c 'echo second ran'
  expect_exit 75 "$name: a second run after the restart"
  kill -TERM "$holder"
  wait_exit "$holder" 10
  [[ $EXIT_CODE == 143 ]] || fail "$name: the holder exited $EXIT_CODE, expected 143"
  ok "$name: after a ${how%_redis} the holder renewed (lease ${token%%:*}:..., same epoch), its child ran on, a second run was refused"
}

survive persistent-stop stop_redis
survive persistent-crash crash_redis

# Without persistence the restart ends the lease.
start_redis volatile PERSIST=none
child='echo $$ >>"$WORK/pgids"; trap "touch \"\$WORK/volatile.term\"; exit 0" TERM; touch "$WORK/volatile.started"; sleep 300 & wait $!'
start_guard volatile-holder run --ttl 6s --store "$REDIS_URL" --id holder -- bash -c "$child"
holder=$LAST_PID
wait_until 10 test -f "$WORK/volatile.started" || fail "volatile: the child did not start: $(cat "$WORK/volatile-holder.err")"
grep -q 'without append-only persistence' "$WORK/volatile-holder.err" ||
  fail "volatile: no warning about the missing persistence: $(cat "$WORK/volatile-holder.err")"
stop_redis volatile
restart_redis volatile
restarted=$(now_ms)
wait_until 10 test -f "$WORK/volatile.term" || fail "volatile: the child got no SIGTERM: $(cat "$WORK/volatile-holder.err")"
wait_exit "$holder" 10
[[ $EXIT_CODE == 75 ]] || { cat "$WORK/volatile-holder.err" >&2; fail "volatile: the holder exited $EXIT_CODE, expected 75"; }
grep -q 'claim lost' "$WORK/volatile-holder.err" || fail "volatile: no 'claim lost' line"
grep -q 'lock is gone' "$WORK/volatile-holder.err" || fail "volatile: the loss does not say the lease is gone: $(cat "$WORK/volatile-holder.err")"
ok "volatile: the restart ended the lease; the holder stopped its child $(($(now_ms) - restarted)) ms later and exited 75"

run_guard status --store "$REDIS_URL" --json
expect_exit 0 "volatile: status after the loss"
jq -e 'all(.readable)' "$WORK/last.out" >/dev/null || fail "volatile: an unreadable record: $(cat "$WORK/last.out")"
run_guard run --store "$REDIS_URL" --id next -- bash -c 'echo "next ran epoch=$INSTANCE_GUARD_EPOCH"'
expect_exit 0 "volatile: the next run"
grep -q 'next ran' "$WORK/last.out" || fail "volatile: the next command did not run"
ok "volatile: the store is readable and the next run claimed it ($(cat "$WORK/last.out"))"
