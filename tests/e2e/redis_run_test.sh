#!/usr/bin/env bash
# `instance-guard run --store redis://127.0.0.1:PORT` behaves as on the other
# stores, against a redis-server started here: a second run is refused (75)
# while the first runs, the record is in Redis in the original's shape, the
# lease is a key that expires on the server, standing down removes both, the
# next run starts at once with the next fencing epoch (Redis's INCR), and
# `status` says expiry is judged by the server's clock. Every mode runs.
# With a password: from a file or the environment, never in ps, logs or
# errors; a password in the URL is refused (78) without echo; a wrong one
# exits 69. A server that is down exits 69 with a message saying what to check.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_lib.sh"

start_redis main
store=$REDIS_URL
doc=instance-guard:doc:instances/first

start_guard first run --store "$store" --id first -- bash -c "$(sleeper first)"
first=$LAST_PID
wait_until 10 test -f "$WORK/first.started" || fail "the first guard's child did not start: $(cat "$WORK/first.err")"

run_guard run --store "$store" --id second -- bash -c 'echo second ran'
expect_exit 75 "second run beside a live first"
grep -q 'another instance of this service is running' "$WORK/last.err" || fail "no refusal message"
grep -q 'holder_id=first' "$WORK/last.err" || fail "refusal does not name the first: $(cat "$WORK/last.err")"
[[ ! -s $WORK/last.out ]] || fail "the second command ran"
ok "second run refused in ${ELAPSED_MS} ms"

rcli main HGET "$doc" data >"$WORK/record.json"
jq -e '.id == "first" and (.started_at | test("Z$")) and (.expires_at | test("Z$"))' "$WORK/record.json" \
  >/dev/null || fail "record not in the original's shape: $(cat "$WORK/record.json")"
pttl=$(rcli main PTTL instance-guard:lock:instances.lock)
((pttl > 0 && pttl <= 120000)) || fail "the lease key has no server-side expiry (PTTL $pttl)"
ok "the record is in Redis in the original's shape; the lease expires on the server (PTTL $pttl ms)"

run_guard status --store "$store"
expect_exit 0 "status"
grep -q '^mode: exclusive (auto): ' "$WORK/last.out" || fail "status: $(cat "$WORK/last.out")"
grep -q '^expiry judged by: server clock' "$WORK/last.out" || fail "status does not say the server's clock judges: $(cat "$WORK/last.out")"
grep -q '^first ' "$WORK/last.out" || fail "status does not list first: $(cat "$WORK/last.out")"
ok "status: exclusive on the store's lease, expiry judged by the server clock"

kill -TERM "$first"
wait_exit "$first" 10
[[ $EXIT_CODE == 143 ]] || fail "first guard exited $EXIT_CODE, expected 143"
[[ $(rcli main EXISTS "$doc") == 0 ]] || fail "the first's record is still there"
[[ $(rcli main EXISTS instance-guard:lock:instances.lock) == 0 ]] || fail "the lease is still held"

child='echo "epoch=$INSTANCE_GUARD_EPOCH"'
run_guard run --store "$store" --id second -- bash -c "$child"
expect_exit 0 "second run after the first stood down"
((ELAPSED_MS < 2000)) || fail "second run took ${ELAPSED_MS} ms after the first exited"
epoch=$(sed -n 's/^epoch=//p' "$WORK/last.out")
[[ $epoch == 2 && $(rcli main GET instance-guard:epoch:instances.lock) == 2 ]] ||
  fail "the second holder's epoch is '$epoch', Redis's counter $(rcli main GET instance-guard:epoch:instances.lock); expected 2"
ok "next run started at once (${ELAPSED_MS} ms) with epoch 2 from Redis's INCR"

for mode in announce verify exclusive auto; do
  run_guard run --store "$store?prefix=modes%3A" --mode "$mode" --id "m-$mode" -- bash -c 'echo ran'
  expect_exit 0 "--mode $mode"
  grep -q '^ran$' "$WORK/last.out" || fail "--mode $mode: the child did not run"
done
[[ $(rcli main --scan --pattern 'modes:doc:instances/*' | wc -l) == 0 ]] || fail "records left behind by the modes"
ok "every mode runs on Redis and leaves no record"

run_guard status --store "$store" --json
[[ $(jq length "$WORK/last.out") == 0 ]] || fail "records left: $(cat "$WORK/last.out")"

# A server that is down: 69, naming the store and what to check.
down="redis://127.0.0.1:$(free_port)"
run_guard run --ttl 4s --store "$down" -- bash -c 'echo should-not-run'
expect_exit 69 "run against a stopped server"
grep -q 'check that redis-server runs' "$WORK/last.err" || fail "no advice: $(cat "$WORK/last.err")"
[[ ! -s $WORK/last.out ]] || fail "the command ran without a store"
ok "a server that is down exits 69 in ${ELAPSED_MS} ms, saying what to check"

# ---- credentials -------------------------------------------------------------
password='e2e-Redis-Pw-5d2b'
printf '%s\n' "$password" >"$WORK/password"
chmod 600 "$WORK/password"
start_redis auth REDIS_PASSWORD_FILE="$WORK/password"
auth_store=$REDIS_URL

start_guard authed --log-level debug run --store "$auth_store" --password-file "$WORK/password" --id a \
  -- bash -c "$(sleeper authed)"
authed=$LAST_PID
wait_until 10 test -f "$WORK/authed.started" || fail "no run with the right password file: $(cat "$WORK/authed.err")"
! grep -qaF "$password" "/proc/$authed/cmdline" "/proc/$authed/environ" || fail "the password shows in ps"
kill -TERM "$authed"
wait_exit "$authed" 10
! grep -qF "$password" "$WORK/authed.out" "$WORK/authed.err" || fail "the password appears in the output"
ok "a password file works; the password is not in ps nor in the debug output"

INSTANCE_GUARD_PASSWORD=$password run_guard --log-level debug run --store "$auth_store" --id a -- env
expect_exit 0 "run with the password in the environment"
! grep -qF "$password" "$WORK/last.err" || fail "the password appears in the output"
expect_clean_child_env "$WORK/last.out" "$password"
ok "INSTANCE_GUARD_PASSWORD works; the child's environment holds no credential"

printf '%s\n' 'not-the-Pw-9' >"$WORK/wrong"
run_guard --log-level debug run --store "$auth_store" --password-file "$WORK/wrong" -- bash -c 'echo no'
expect_exit 69 "a wrong password"
grep -qF "127.0.0.1:${REDIS_PORTS[auth]}" "$WORK/last.err" || fail "the error does not name the server"
grep -q 'WRONGPASS' "$WORK/last.err" || fail "the error does not say why: $(cat "$WORK/last.err")"
! grep -qF 'not-the-Pw-9' "$WORK/last.err" "$WORK/last.out" || fail "the wrong password appears"
ok "a wrong password exits 69 naming the server, without the password"

run_guard run --store "redis://:InUrl-Pw-31@127.0.0.1:${REDIS_PORTS[auth]}" -- bash -c 'echo no'
expect_exit 78 "a password in the URL"
! grep -qF 'InUrl-Pw-31' "$WORK/last.err" || fail "the password in the URL is echoed"
grep -q 'INSTANCE_GUARD_PASSWORD' "$WORK/last.err" || fail "the refusal does not say where a password goes"
ok "a password in the URL is refused (78) and not echoed"
