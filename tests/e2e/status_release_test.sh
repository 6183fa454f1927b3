#!/usr/bin/env bash
# status shows every record (table and --json); release removes one, a live
# one only with --force.
source "$(dirname "$0")/lib.sh"

run_guard status --store "$STORE" --json
expect_exit 0 "status of an empty store"
[[ $(jq length "$WORK/last.out") == 0 ]] || fail "empty store does not list as []"

start_guard first run --store "$STORE" --ttl 90s --id first -- bash -c "$(sleeper first)"
first=$LAST_PID
wait_until 5 test -f "$WORK/first.started" || fail "the guarded child did not start"
# An unreadable record and an expired one in the original's shape.
printf 'not json' >"$STORE/instances/garbage"
printf '{"id":"old","started_at":"2020-01-01T00:00:00Z","expires_at":"2020-01-01T00:02:00Z"}' \
  >"$STORE/instances/old"

run_guard status --store "$STORE" --json
expect_exit 0 "status --json"
json=$WORK/last.out
[[ $(jq length "$json") == 3 ]] || fail "status --json lists $(jq length "$json") records, expected 3"
jq -e --arg pid "$first" --arg host "$(hostname)" '.[] | select(.id == "first")
  | .live == true and .readable == true and .host == $host and (.pid | tostring) == $pid
    and (.started_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"))
    and (.expires_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"))' "$json" >/dev/null ||
  fail "status --json does not show the live record of first: $(cat "$json")"
jq -e '.[] | select(.id == "old") | .live == false and .readable == true' "$json" >/dev/null ||
  fail "status --json does not show old as expired"
jq -e '.[] | select(.id == "garbage") | .live == true and .readable == false
  and (.problem | length > 0)' "$json" >/dev/null ||
  fail "status --json does not show garbage as unreadable and live"
ok "status --json shows live, expired and unreadable records"

run_guard status --store "$STORE"
expect_exit 0 "status"
grep -Eq "^first +$(hostname) +$first .* live" "$WORK/last.out" || fail "table: $(cat "$WORK/last.out")"
grep -Eq '^old .* expired' "$WORK/last.out" || fail "table does not show old as expired"
grep -Eq '^garbage .* unreadable' "$WORK/last.out" || fail "table does not show garbage as unreadable"
grep -q "^expiry judged by: the store's lock" "$WORK/last.out" || fail "status does not say whose clock judges expiry"
ok "status prints a table"

run_guard release --store "$STORE" --id first
expect_exit 75 "release of a live record without --force"
grep -q -- '--force' "$WORK/last.err" || fail "the refusal does not mention --force"
[[ -e $STORE/instances/first ]] || fail "release without --force removed a live record"
run_guard release --store "$STORE" --id garbage
expect_exit 75 "release of an unreadable record without --force"
ok "release refuses live and unreadable records without --force"

run_guard release --store "$STORE" --id old
expect_exit 0 "release of an expired record"
[[ ! -e $STORE/instances/old ]] || fail "the expired record is still there"
run_guard release --store "$STORE" --id old
expect_exit 66 "release of a record that is not there"
run_guard release --store "$STORE" --id first --force
expect_exit 0 "release --force of a live record"
[[ ! -e $STORE/instances/first ]] || fail "release --force left the record"
ok "release removes expired records, and live ones with --force"

# With no --store, status and release need a name (there is no command).
run_guard status
expect_exit 64 "status without a store or a name"
