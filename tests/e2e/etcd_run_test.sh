#!/usr/bin/env bash
# `instance-guard run` on an etcd store behaves as on the directory store,
# against etcd started here on 127.0.0.1: a second run is refused (75) while
# the first runs, the record is in etcd in the original's shape, the child
# gets the server-assigned epoch, status names the store and says expiry is
# judged on the store's clock, standing down removes the record and the next
# run starts at once. With etcd auth: credentials from a file or the
# environment work, a wrong password exits 69 naming the store, and no
# password appears in any output at debug level.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

start_etcd plain
store="etcd://127.0.0.1:$ETCD_PORT/e2e"

start_guard first run --store "$store" --id first -- bash -c "$(sleeper first)"
first=$LAST_PID
wait_until 10 test -f "$WORK/first.started" || fail "the first guard's child did not start: $(cat "$WORK/first.err")"
grep -q 'claimed .*mode=exclusive' "$WORK/first.err" || fail "auto did not pick exclusive: $(cat "$WORK/first.err")"
grep -q "store's own lock" "$WORK/first.err" || fail "the claim does not use etcd's lease: $(cat "$WORK/first.err")"

run_guard run --store "$store" --id second -- bash -c 'echo second ran'
expect_exit 75 "second run beside a live first"
grep -q 'another instance of this service is running' "$WORK/last.err" || fail "no refusal message"
grep -q 'first' "$WORK/last.err" || fail "the refusal does not name the first: $(cat "$WORK/last.err")"
[[ ! -s $WORK/last.out ]] || fail "the second command ran"
ok "second run refused in ${ELAPSED_MS} ms"

record=$(etcd_get "$ETCD_URL" /e2e/instances/first)
jq -e '.id == "first" and (.started_at | test("Z$")) and (.expires_at | test("Z$"))' <<<"$record" \
  >/dev/null || fail "record not in the original's shape: $record"
ok "the record is in etcd in the original's shape"

run_guard status --store "$store"
expect_exit 0 "status"
grep -q "^expiry judged by: server clock" "$WORK/last.out" ||
  fail "status does not say whose clock judges expiry: $(cat "$WORK/last.out")"
grep -q '^mode: exclusive (auto)' "$WORK/last.out" || fail "status mode: $(cat "$WORK/last.out")"
grep -Eq '^first .* live' "$WORK/last.out" || fail "status does not list first: $(cat "$WORK/last.out")"
ok "status names the store and says expiry is judged on the store's clock"

kill -TERM "$first"
wait_exit "$first" 10
[[ $EXIT_CODE == 143 ]] || fail "first guard exited $EXIT_CODE, expected 143"
[[ -z $(etcd_get "$ETCD_URL" /e2e/instances/first) ]] || fail "the first's record is still there"

run_guard run --store "$store" --id second -- bash -c 'echo "epoch=$INSTANCE_GUARD_EPOCH"'
expect_exit 0 "second run after the first stood down"
epoch1=$(sed -n 's/^epoch=//p' "$WORK/last.out")
[[ $epoch1 =~ ^[0-9]+$ ]] || fail "no INSTANCE_GUARD_EPOCH: $(cat "$WORK/last.out")"
((ELAPSED_MS < 2000)) || fail "second run took ${ELAPSED_MS} ms after the first exited"
ok "next run started at once (${ELAPSED_MS} ms) after the first exited"
run_guard run --store "$store" --id third -- bash -c 'echo "epoch=$INSTANCE_GUARD_EPOCH"'
expect_exit 0 "third run"
epoch2=$(sed -n 's/^epoch=//p' "$WORK/last.out")
((epoch2 > epoch1)) || fail "the epoch did not grow: $epoch1 then $epoch2"
ok "every holder gets a larger epoch ($epoch1, then $epoch2)"

run_guard status --store "$store" --json
expect_exit 0 "status --json"
[[ $(jq length "$WORK/last.out") == 0 ]] || fail "records left: $(cat "$WORK/last.out")"

# etcd auth: user root; credentials from a file or the environment, never shown.
password='e2e-Etcd-Pw-3b7f'
start_etcd auth ETCD_ROOT_PASSWORD="$password"
auth_store="etcd://127.0.0.1:$ETCD_PORT/e2e"
printf '%s\n' "$password" >"$WORK/password"
printf '%s\n' 'not-the-Pw-8' >"$WORK/wrong"

run_guard --log-level debug run --store "$auth_store" --user root --password-file "$WORK/password" \
  --id a -- bash -c 'echo authorised'
expect_exit 0 "run with the right password file"
grep -q authorised "$WORK/last.out" || fail "the command did not run with the right password"
! grep -qF "$password" "$WORK/last.out" "$WORK/last.err" || fail "the password appears in the output"
ok "etcd auth with --password-file works; the password is not in the debug output"

INSTANCE_GUARD_USER=root INSTANCE_GUARD_PASSWORD=$password \
  run_guard --log-level debug run --store "$auth_store" --id a -- env
expect_exit 0 "run with credentials from the environment"
! grep -qF "$password" "$WORK/last.err" || fail "the password appears in the output"
expect_clean_child_env "$WORK/last.out" "$password"
ok "etcd auth from the environment works; the child's environment holds no credential"

run_guard --log-level debug run --store "$auth_store" --user root --password-file "$WORK/wrong" \
  --id a -- bash -c 'echo should-not-run'
expect_exit 69 "run with a wrong password"
grep -q 'authentication failed' "$WORK/last.err" || fail "the error does not say why: $(cat "$WORK/last.err")"
grep -qF "127.0.0.1:$ETCD_PORT" "$WORK/last.err" || fail "the error does not name the server"
! grep -qF 'not-the-Pw-8' "$WORK/last.err" "$WORK/last.out" || fail "the wrong password appears"
[[ ! -s $WORK/last.out ]] || fail "the command ran with a wrong password"
ok "a wrong password exits 69 naming the server, without the password"

run_guard run --store "etcd://root:InUrl-Pw-83@127.0.0.1:$ETCD_PORT/e2e" -- bash -c 'echo no'
expect_exit 78 "a password in the URL"
! grep -qF "InUrl-Pw-83" "$WORK/last.err" || fail "the password in the URL is echoed"
ok "a password in the URL is refused and not echoed"
