#!/usr/bin/env bash
# `instance-guard run` on a PostgreSQL store behaves as on the other stores,
# against a private cluster started here on 127.0.0.1: a second run is
# refused (75) while the first runs, the record is in the table in the
# original's shape, status says the store's clock judges expiry, standing
# down removes the record, the next run starts at once with a larger fencing
# epoch. Credentials: a password from a file or the environment works, a
# wrong one exits 69 naming the server, one in the URL is refused (78), and
# no password appears in any output at debug level or in `ps`.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/postgres_lib.sh"
pg_start
store="$PG_URL?table=run_test"

start_guard first run --store "$store" --id first -- bash -c "echo \$INSTANCE_GUARD_EPOCH >\"\$WORK/first.epoch\"; $(sleeper first)"
first=$LAST_PID
wait_until 10 test -f "$WORK/first.started" || fail "the first guard's child did not start: $(cat "$WORK/first.err")"
grep -q 'mode=exclusive' "$WORK/first.err" || fail "auto did not pick exclusive: $(cat "$WORK/first.err")"

run_guard run --store "$store" --id second -- bash -c 'echo second ran'
expect_exit 75 "second run beside a live first"
grep -q 'another instance of this service is running' "$WORK/last.err" || fail "no refusal message"
grep -q 'holder_id=first' "$WORK/last.err" || fail "the refusal does not name the first: $(cat "$WORK/last.err")"
[[ ! -s $WORK/last.out ]] || fail "the second command ran"
ok "second run refused in ${ELAPSED_MS} ms"

record=$(pg_sql "SELECT convert_from(data, 'UTF8') FROM run_test WHERE kind = 'd' AND key = 'instances/first'")
jq -e '.id == "first" and (.started_at | test("Z$")) and (.expires_at | test("Z$"))' <<<"$record" \
  >/dev/null || fail "record not in the original's shape: $record"
[[ $(pg_sql "SELECT count(*) FROM run_test WHERE kind = 'l' AND expires_at > now()") == 1 ]] ||
  fail "no live lease row in the table"
ok "the record is in the table in the original's shape, beside a live lease"

run_guard status --store "$store"
expect_exit 0 "status"
grep -q "^mode: exclusive (auto): " "$WORK/last.out" || fail "status mode line: $(cat "$WORK/last.out")"
grep -q "^expiry judged by: server clock" "$WORK/last.out" || fail "status does not say the store's clock judges: $(cat "$WORK/last.out")"
grep -Eq '^first .* live' "$WORK/last.out" || fail "status does not list first: $(cat "$WORK/last.out")"
ok "status says the server's clock judges expiry"

kill -TERM "$first"
wait_exit "$first" 10
[[ $EXIT_CODE == 143 ]] || fail "first guard exited $EXIT_CODE, expected 143"
[[ $(pg_sql "SELECT count(*) FROM run_test WHERE kind = 'd' AND key = 'instances/first'") == 0 ]] ||
  fail "the first's record is still there"

run_guard run --store "$store" --id second -- bash -c 'echo "second ran $INSTANCE_GUARD_EPOCH"'
expect_exit 0 "second run after the first stood down"
grep -q 'second ran' "$WORK/last.out" || fail "the second command did not run"
((ELAPSED_MS < 3000)) || fail "second run took ${ELAPSED_MS} ms after the first exited"
first_epoch=$(cat "$WORK/first.epoch")
second_epoch=$(awk '{print $3}' "$WORK/last.out")
((second_epoch > first_epoch)) || fail "epoch $second_epoch is not above the first's $first_epoch"
[[ $second_epoch == $(pg_sql "SELECT last_value FROM run_test_epoch") ]] ||
  fail "the epoch $second_epoch is not the sequence's"
ok "next run started at once (${ELAPSED_MS} ms) with epoch $second_epoch > $first_epoch, from the sequence"

run_guard status --store "$store" --json
expect_exit 0 "status --json"
[[ $(jq length "$WORK/last.out") == 0 ]] || fail "records left: $(cat "$WORK/last.out")"

# Credentials: the role guard must give its password.
auth_store="$PG_URL?table=auth_test"
run_guard --log-level debug run --store "$auth_store" --user guard --password-file "$PG_PASSWORD_FILE" \
  --id a -- bash -c 'echo authorised'
expect_exit 0 "run with the right password file"
grep -q authorised "$WORK/last.out" || fail "the command did not run with the right password"
! grep -qF "$PG_PASSWORD" "$WORK/last.out" "$WORK/last.err" || fail "the password appears in the output"
ok "a password from --password-file works; it is not in the debug output"

export INSTANCE_GUARD_USER=guard INSTANCE_GUARD_PASSWORD=$PG_PASSWORD
start_guard env-run --log-level debug run --store "$auth_store" --id env -- bash -c "$(sleeper env-run)"
env_guard=$LAST_PID
wait_until 10 test -f "$WORK/env-run.started" || fail "the run with credentials from the environment did not start: $(cat "$WORK/env-run.err")"
! grep -qF "$PG_PASSWORD" "/proc/$env_guard/cmdline" || fail "the password is in the guard's command line"
processes=$(ps -eo args)  # read before grep runs: grep's own arguments hold the password
! grep -qF "$PG_PASSWORD" <<<"$processes" || fail "the password shows in ps"
kill -TERM "$env_guard"
wait_exit "$env_guard" 10
! grep -qF "$PG_PASSWORD" "$WORK/env-run.out" "$WORK/env-run.err" || fail "the password appears in the output"
run_guard run --store "$auth_store" --id env -- env
expect_exit 0 "run env with credentials from the environment"
expect_clean_child_env "$WORK/last.out" "$PG_PASSWORD"
unset INSTANCE_GUARD_USER INSTANCE_GUARD_PASSWORD
PGPASSWORD=$PG_PASSWORD run_guard run --store "$auth_store" --user guard --id pg -- env
expect_exit 0 "run with libpq's PGPASSWORD"
expect_clean_child_env "$WORK/last.out" "$PG_PASSWORD"
! grep -q '^PGPASSWORD=' "$WORK/last.out" || fail "the child sees PGPASSWORD"
ok "a password from the environment works and is not in ps nor in the child's environment"

printf '%s\n' 'not-the-Pg-pw-2' >"$WORK/wrong"
run_guard --log-level debug run --store "$auth_store" --user guard --password-file "$WORK/wrong" \
  --id a -- bash -c 'echo should-not-run'
expect_exit 69 "run with a wrong password"
grep -q 'password authentication failed' "$WORK/last.err" || fail "the error does not say why: $(cat "$WORK/last.err")"
grep -qF "127.0.0.1:$PG_PORT/guard" "$WORK/last.err" || fail "the error does not name the server"
! grep -qF 'not-the-Pg-pw-2' "$WORK/last.err" "$WORK/last.out" || fail "the wrong password appears"
[[ ! -s $WORK/last.out ]] || fail "the command ran with a wrong password"
ok "a wrong password exits 69 naming the server, without the password"

run_guard run --store "postgres://guard:InUrl-Pw-83@127.0.0.1:$PG_PORT/guard" -- bash -c 'echo no'
expect_exit 78 "a password in the URL"
! grep -qF "InUrl-Pw-83" "$WORK/last.err" || fail "the password in the URL is echoed"
ok "a password in the URL is refused and not echoed"
