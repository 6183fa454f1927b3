#!/usr/bin/env bash
# A holder on ZooKeeper killed with SIGKILL cannot close its session: its
# lease (an ephemeral znode) ends when the server expires the session, one
# session timeout (the ttl asked) after the holder's last heartbeat, and the
# successor starts then, not a ttl after that. On the same host the dead
# pid makes the holder's record stale at once, so the session alone decides.
# Then a server restart mid-claim: the holder's session survives it, the
# claim is kept and nobody else gets in. That holder's ttl is 30 s: the
# claim is only kept if the server is back within ttl - max-skew of the last
# renewal, and a JVM's start takes seconds (over 7 s seen in CI, at -j2
# beside the sanitizer builds), so the ttl leaves room for a loaded machine.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zookeeper_lib.sh"

start_zk main
store=$ZK_URL/svc
ttl_ms=4000

start_guard first run --store "$store" --ttl 4s --id first -- bash -c "$(sleeper first)"
first=$LAST_PID
wait_until 10 test -f "$WORK/first.started" || fail "the first guard's child did not start: $(cat "$WORK/first.err")"
read -r child _ <"$WORK/first.started"

killed_at=$(now_ms)
kill -KILL "$first"
wait_exit "$first" 5
wait_until 2 not_running "$child" || fail "the child $child outlived its SIGKILLed guard"

run_guard run --store "$store" --ttl 4s --id second -- true
expect_exit 75 "a run while the dead holder's session lives"
ok "refused while the killed holder's session lives"

second_ran() { "$BIN" run --store "$store" --ttl 4s --id second -- true 2>"$WORK/last.err"; }
wait_until 15 second_ran || fail "no takeover within 15 s of a 4 s session"
took=$(($(now_ms) - killed_at))
((took >= ttl_ms - 1500)) || fail "took over after ${took} ms, before the session could expire"
((took <= ttl_ms + 2500)) || fail "took over after ${took} ms: more than the session timeout (${ttl_ms} ms) after the kill"
ok "took over ${took} ms after the SIGKILL: when the 4 s session ended"

# A restart mid-claim: the session and its lease survive; the holder keeps on.
start_guard holder run --store "$store" --ttl 30s --id holder -- bash -c "$(sleeper holder)"
holder=$LAST_PID
wait_until 10 test -f "$WORK/holder.started" || fail "the holder's child did not start: $(cat "$WORK/holder.err")"
expires() { "$BIN" status --store "$store" --json 2>/dev/null | jq -r '.[] | select(.id == "holder") | .expires_at'; }
before=$(expires)
[[ -n $before ]] || fail "status does not list the holder"
restart_at=$(now_ms)
stop_zk main
restart_zk main
restart_took=$(($(now_ms) - restart_at))
run_guard run --store "$store" --ttl 10s --id other -- true
expect_exit 75 "a run after the restart, beside the holder"
renewed() { local now; now=$(expires); [[ -n $now && $now != "$before" ]]; }
wait_until 35 renewed || fail "the holder did not renew on the restarted server: $(cat "$WORK/holder.err")"
running "$holder" || fail "the holder exited after the restart: $(cat "$WORK/holder.err")"
! grep -q 'lost' "$WORK/holder.err" || fail "the holder lost its claim: $(cat "$WORK/holder.err")"
kill -TERM "$holder"
wait_exit "$holder" 10
[[ $EXIT_CODE == 143 ]] || fail "holder exited $EXIT_CODE, expected 143"
ok "a server restart mid-claim (${restart_took} ms): the holder kept its claim and nobody else got in"
