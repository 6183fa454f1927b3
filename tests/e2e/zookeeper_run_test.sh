#!/usr/bin/env bash
# `instance-guard run --store zk://127.0.0.1:PORT/svc` against a ZooKeeper
# started here: a second run is refused (75) while the first runs, the lease
# is an ephemeral znode of the first's session, standing down removes it and
# the record, the next run starts at once with a larger fencing epoch (a
# creation zxid), and `status` says expiry is judged by the server's clock.
# Every mode runs. With digest credentials from a file or the environment:
# never in ps, logs or errors; a password in the URL is refused (78) without
# echo; a wrong one exits 69. A server that is down exits 69 saying what to
# check.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zookeeper_lib.sh"

start_zk main
store=$ZK_URL/svc

start_guard first run --store "$store" --id first -- bash -c "$(sleeper first)"
first=$LAST_PID
wait_until 10 test -f "$WORK/first.started" || fail "the first guard's child did not start: $(cat "$WORK/first.err")"

run_guard run --store "$store" --id second -- bash -c 'echo second ran'
expect_exit 75 "second run beside a live first"
grep -q 'another instance of this service is running' "$WORK/last.err" || fail "no refusal message"
grep -q 'holder_id=first' "$WORK/last.err" || fail "refusal does not name the first: $(cat "$WORK/last.err")"
[[ ! -s $WORK/last.out ]] || fail "the second command ran"
ok "second run refused in ${ELAPSED_MS} ms"

zk_dump main >"$WORK/dump"
grep -q '/svc/locks/instances.lock' "$WORK/dump" || fail "the lease is not an ephemeral znode: $(cat "$WORK/dump")"
ok "the lease is an ephemeral znode of the holder's session"

run_guard status --store "$store"
expect_exit 0 "status"
grep -q '^mode: exclusive (auto): ' "$WORK/last.out" || fail "status: $(cat "$WORK/last.out")"
grep -q '^expiry judged by: server clock' "$WORK/last.out" || fail "status does not say the server's clock judges: $(cat "$WORK/last.out")"
grep -q '^first ' "$WORK/last.out" || fail "status does not list first: $(cat "$WORK/last.out")"
ok "status: exclusive on the store's lease, expiry judged by the server clock"
run_guard status --store "$store" --json
[[ $(jq -r '.[0].id' "$WORK/last.out") == first ]] || fail "status --json: $(cat "$WORK/last.out")"

child='echo "epoch=$INSTANCE_GUARD_EPOCH"'
kill -TERM "$first"
wait_exit "$first" 10
[[ $EXIT_CODE == 143 ]] || fail "first guard exited $EXIT_CODE, expected 143"
! zk_dump main | grep -q '/svc/locks/instances.lock' || fail "the lease is still held"
run_guard status --store "$store" --json
[[ $(jq length "$WORK/last.out") == 0 ]] || fail "the first's record is still there: $(cat "$WORK/last.out")"

run_guard run --store "$store" --id second -- bash -c "$child"
expect_exit 0 "second run after the first stood down"
((ELAPSED_MS < 3000)) || fail "second run took ${ELAPSED_MS} ms after the first exited"
epoch=$(sed -n 's/^epoch=//p' "$WORK/last.out")
[[ $epoch =~ ^[0-9]+$ ]] || fail "no epoch: $(cat "$WORK/last.out")"
run_guard run --store "$store" --id third -- bash -c "$child"
expect_exit 0 "third run"
next=$(sed -n 's/^epoch=//p' "$WORK/last.out")
((next > epoch)) || fail "the epochs do not grow: $epoch then $next"
ok "next runs started at once (${ELAPSED_MS} ms), epochs $epoch then $next (creation zxids)"

for mode in announce verify exclusive auto; do
  run_guard run --store "$ZK_URL/modes" --mode "$mode" --id "m-$mode" -- bash -c 'echo ran'
  expect_exit 0 "--mode $mode"
  grep -q '^ran$' "$WORK/last.out" || fail "--mode $mode: the child did not run"
done
run_guard status --store "$ZK_URL/modes" --json
[[ $(jq length "$WORK/last.out") == 0 ]] || fail "records left by the modes: $(cat "$WORK/last.out")"
ok "every mode runs on ZooKeeper and leaves no record"

# A server that is down: 69, naming the store and what to check.
expect_down_store "zk://127.0.0.1:$(free_port)/svc" 'check that ZooKeeper runs'

# ---- digest credentials ---------------------------------------------------------
password='e2e-Zk-Digest-7f3a'
printf '%s\n' "$password" >"$WORK/password"
chmod 600 "$WORK/password"
auth_store=$ZK_URL/authed

start_guard authed --log-level debug run --store "$auth_store" --user guard --password-file "$WORK/password" \
  --id a -- bash -c "$(sleeper authed)"
authed=$LAST_PID
wait_until 10 test -f "$WORK/authed.started" || fail "no run with the password file: $(cat "$WORK/authed.err")"
! grep -qaF "$password" "/proc/$authed/cmdline" "/proc/$authed/environ" || fail "the password shows in ps"
kill -TERM "$authed"
wait_exit "$authed" 10
! grep -qF "$password" "$WORK/authed.out" "$WORK/authed.err" || fail "the password appears in the output"
ok "a password file works; the password is not in ps nor in the debug output"

INSTANCE_GUARD_USER=guard INSTANCE_GUARD_PASSWORD=$password run_guard --log-level debug run --store "$auth_store" --id a -- env
expect_exit 0 "run with the credential in the environment"
! grep -qF "$password" "$WORK/last.err" || fail "the password appears in the output"
expect_clean_child_env "$WORK/last.out" "$password"
ok "INSTANCE_GUARD_USER and INSTANCE_GUARD_PASSWORD work; the child's environment holds no credential"

printf '%s\n' 'not-the-Pw-9' >"$WORK/wrong"
run_guard --log-level debug run --store "$auth_store" --user guard --password-file "$WORK/wrong" -- bash -c 'echo no'
expect_exit 69 "a wrong password"
grep -qF "127.0.0.1:${ZK_PORTS[main]}" "$WORK/last.err" || fail "the error does not name the server"
grep -q 'ZNOAUTH' "$WORK/last.err" || fail "the error does not say why: $(cat "$WORK/last.err")"
! grep -qF 'not-the-Pw-9' "$WORK/last.err" "$WORK/last.out" || fail "the wrong password appears"
ok "a wrong password exits 69 naming the server, without the password"

expect_url_password_refused "zk://guard:InUrl-Pw-31@127.0.0.1:${ZK_PORTS[main]}/authed" InUrl-Pw-31
