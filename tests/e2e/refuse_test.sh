#!/usr/bin/env bash
# A second `run` on the same store exits 75 within a second while the first
# runs, and names the first (id, host, pid, expiry); once the first exits, the
# next starts at once.
source "$(dirname "$0")/lib.sh"

start_guard first run --store "$STORE" --id first -- bash -c "$(sleeper first)"
first=$LAST_PID
wait_until 5 test -f "$WORK/first.started" || fail "the first guard's child did not start"

run_guard run --store "$STORE" --id second -- bash -c 'echo second ran'
expect_exit 75 "second run beside a live first"
((ELAPSED_MS < 1000)) || fail "second run took ${ELAPSED_MS} ms to refuse"
grep -q 'another instance of this service is running' "$WORK/last.err" || fail "no refusal message"
grep -q 'holder_id=first' "$WORK/last.err" || fail "refusal does not name the first's id"
grep -q "holder_pid=$first" "$WORK/last.err" || fail "refusal does not name the first's pid $first"
grep -q "holder_host=$(hostname)" "$WORK/last.err" || fail "refusal does not name the host"
grep -Eq 'expires_at=[0-9]{4}-[0-9]{2}-[0-9]{2}T' "$WORK/last.err" || fail "refusal has no expiry"
[[ ! -s $WORK/last.out ]] || fail "the second command ran: $(cat "$WORK/last.out")"
running "$first" || fail "the first guard stopped"
ok "second run refused in ${ELAPSED_MS} ms, naming the first"

# The first ends (SIGTERM is forwarded, sleep dies): its record goes with it.
kill -TERM "$first"
wait_exit "$first" 5
[[ $EXIT_CODE == 143 ]] || fail "first guard exited $EXIT_CODE, expected 143"
[[ ! -e $STORE/instances/first ]] || fail "the first's record is still there"

run_guard run --store "$STORE" --id second -- bash -c 'echo second ran'
expect_exit 0 "second run after the first stood down"
grep -q 'second ran' "$WORK/last.out" || fail "the second command did not run"
((ELAPSED_MS < 1000)) || fail "second run took ${ELAPSED_MS} ms after the first exited"
ok "second run started at once (${ELAPSED_MS} ms) after the first exited"
