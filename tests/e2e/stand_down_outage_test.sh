#!/usr/bin/env bash
# Standing down while the store does not answer (a redis-server stopped with
# SIGSTOP after the claim: its requests hang) ends within the stand-down
# budget, and a second signal during it ends the guard at once, with the
# child's status in both cases; the record is left to expire.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_lib.sh"

start_redis main
server_pid=$(cat "$WORK/main/server.pid")
resume_server() { kill -CONT "$server_pid" 2>/dev/null || true; }
trap 'resume_server; stop_all_redis; cleanup' EXIT

# hold NAME ARGS...: a guard (on a key prefix of its own) whose child has started.
hold() {
  local name=$1
  shift
  start_guard "$name" run --store "$REDIS_URL?prefix=$name%3A" --ttl 60s --id "$name" "$@" -- bash -c "$(sleeper "$name")"
  wait_until 10 test -f "$WORK/$name.started" || fail "$name's child did not start: $(cat "$WORK/$name.err")"
}

# term_during_outage NAME [ARGS...]: a holder gets SIGTERM once its store is
# stopped; its child stops and it stands down. Sets ELAPSED_MS, from the
# signal to the guard's end; the guard must exit with the child's 143.
term_during_outage() {
  local name=$1 guard start
  hold "$@"
  guard=$LAST_PID
  kill -STOP "$server_pid"
  start=$(now_ms)
  kill -TERM "$guard"
  wait_exit "$guard" 14
  ELAPSED_MS=$(($(now_ms) - start))
  resume_server
  [[ $EXIT_CODE == 143 ]] || fail "$name exited $EXIT_CODE, expected the child's 143: $(cat "$WORK/$name.err")"
}

# 1. The first SIGTERM: the child stops, stand-down hangs, the budget ends it.
term_during_outage budget --stand-down-timeout 2s
grep -q 'stand-down did not finish within --stand-down-timeout' "$WORK/budget.err" ||
  fail "no word of the budget: $(cat "$WORK/budget.err")"
((ELAPSED_MS >= 2000 && ELAPSED_MS < 3000)) || fail "stand-down ended after ${ELAPSED_MS} ms, budget 2 s"
ok "with the store stopped, stand-down gave up after ${ELAPSED_MS} ms (budget 2 s), exit 143"

# The default budget is 10 s, within the examples' 60 s stop timeouts.
term_during_outage default
((ELAPSED_MS < 11000)) || fail "stand-down with the default budget took ${ELAPSED_MS} ms"
ok "the default budget: the guard ended ${ELAPSED_MS} ms after SIGTERM with the store stopped"

# 2. A second SIGTERM during the stand-down ends the guard within a second.
hold second --stand-down-timeout 60s
guard=$LAST_PID
kill -STOP "$server_pid"
kill -TERM "$guard"
wait_until 5 grep -q 'child exited; standing down' "$WORK/second.err" ||
  fail "the child did not stop: $(cat "$WORK/second.err")"
sleep 0.3  # stand-down is now waiting for the stopped server
running "$guard" || fail "the guard ended before the second signal: $(cat "$WORK/second.err")"
start=$(now_ms)
kill -TERM "$guard"
wait_exit "$guard" 3
elapsed=$(($(now_ms) - start))
resume_server
[[ $EXIT_CODE == 143 ]] || fail "the guard exited $EXIT_CODE, expected 143"
grep -q 'signal during stand-down' "$WORK/second.err" || fail "no word of the signal: $(cat "$WORK/second.err")"
((elapsed < 1000)) || fail "the second SIGTERM took ${elapsed} ms to end the guard"
ok "a second SIGTERM during the stand-down ended the guard in ${elapsed} ms"

# 3. The same during a claim that hangs on the stopped server.
kill -STOP "$server_pid"
start_guard claiming run --store "$REDIS_URL?prefix=claiming%3A" --ttl 60s --id claiming -- bash -c 'echo ran'
guard=$LAST_PID
sleep 0.3
kill -TERM "$guard"
sleep 0.2
start=$(now_ms)
kill -TERM "$guard"
wait_exit "$guard" 3
elapsed=$(($(now_ms) - start))
resume_server
[[ $EXIT_CODE == 143 ]] || fail "the claiming guard exited $EXIT_CODE, expected 143: $(cat "$WORK/claiming.err")"
[[ ! -s $WORK/claiming.out ]] || fail "the command ran"
((elapsed < 1000)) || fail "the second SIGTERM during the claim took ${elapsed} ms"
ok "a second SIGTERM during a hanging claim ended the guard in ${elapsed} ms"
