#!/usr/bin/env bash
# A holder cut off from its store stops its child before another instance can
# take over: Apache WebDAV is stopped under a running `run --ttl 3s`; the
# child must get SIGTERM and the guard exit 75 before the ttl has run out
# since the last renewal (the self-fencing deadline is ttl - max-skew after
# it, and renewals come every ttl/3, so within ttl of the stop at the latest).
# After Apache comes back, another run starts.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"

start_server apache apache.sh
port=$PORT
store="webdav://${URL#http://}/state"

child='echo $$ >>"$WORK/pgids"; trap "date +%s%3N >\"\$WORK/lost.term\"; exit 0" TERM; touch "$WORK/lost.started"; sleep 300 & wait $!'
start_guard holder run --ttl 3s --store "$store" --id holder -- bash -c "$child"
holder=$LAST_PID
wait_until 10 test -f "$WORK/lost.started" || fail "the child did not start: $(cat "$WORK/holder.err")"
grep -q 'claimed' "$WORK/holder.err" || fail "no claimed line: $(cat "$WORK/holder.err")"
# Let a renewal or two go through first.
sleep 1.2

stop_server apache apache.sh
stopped=$(now_ms)
wait_until 10 test -f "$WORK/lost.term" || fail "the child got no SIGTERM within 10 s: $(cat "$WORK/holder.err")"
term_ms=$(($(cat "$WORK/lost.term") - stopped))
wait_exit "$holder" 10
exit_ms=$(($(now_ms) - stopped))
[[ $EXIT_CODE == 75 ]] || { cat "$WORK/holder.err" >&2; fail "the guard exited $EXIT_CODE after the loss, expected 75"; }
grep -q 'claim lost' "$WORK/holder.err" || fail "no 'claim lost' line: $(cat "$WORK/holder.err")"
grep -q 'reason=' "$WORK/holder.err" || fail "the loss line gives no reason"
# Deadline: at most ttl - max-skew (2.7 s) after the last renewal, which was
# before the stop; 300 ms slack for the SIGTERM to reach bash's trap.
((term_ms < 3000)) || fail "the child got SIGTERM $term_ms ms after the store went away (ttl is 3 s)"
ok "store stopped: child got SIGTERM after $term_ms ms, guard exited 75 after $exit_ms ms"

start_server apache apache.sh "$port"
run_guard run --ttl 3s --wait=20s --store "$store" --id next -- bash -c 'echo next ran'
expect_exit 0 "a run after Apache came back"
grep -q 'next ran' "$WORK/last.out" || fail "the next command did not run"
ok "after Apache came back another run started (${ELAPSED_MS} ms)"
