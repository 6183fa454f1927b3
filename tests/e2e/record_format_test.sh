#!/usr/bin/env bash
# Records stay in the original Go guard's shape (id, started_at, expires_at as
# RFC 3339), and records in that shape written by the original are honoured.
source "$(dirname "$0")/lib.sh"

rfc3339_utc='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$'

start_guard first run --store "$STORE" --ttl 90s --id first -- bash -c "$(sleeper first)"
first=$LAST_PID
wait_until 5 test -f "$WORK/first.started" || fail "the guarded child did not start"
record=$STORE/instances/first
jq -e --arg re "$rfc3339_utc" '
  .id == "first"
  and (.started_at | type == "string" and test($re))
  and (.expires_at | type == "string" and test($re))
  and (.expires_at | test("0Z$") | not)' "$record" >/dev/null ||
  fail "record not in the original's shape: $(cat "$record")"
# Go's RFC3339Nano drops trailing zeros; a whole second has no fraction.
jq -e '[.started_at, .expires_at] | all(test("\\.[0-9]*0Z$") | not)' "$record" >/dev/null ||
  fail "fractional seconds with trailing zeros: $(cat "$record")"
ttl=$(jq -r '[.started_at, .expires_at] | map(sub("\\.[0-9]+"; "") | fromdate) | .[1] - .[0]' "$record")
[[ $ttl == 90 ]] || fail "expires_at - started_at is ${ttl}s, expected the 90s ttl"
ok "written record: $(cat "$record")"
kill -TERM "$first"
wait_exit "$first" 5

# A live record written by the original (offset, 9 fractional digits, keys
# in another case, unknown fields): honoured, and named in the refusal.
future=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%S)
printf '{"ID":"go-1","Started_At":"2026-03-01T12:00:00.123456789+02:00","expires_at":"%s.858966496Z","extra":1}' \
  "$future" >"$STORE/instances/go-1"
run_guard run --store "$STORE" --id c-1 -- true
expect_exit 75 "beside a live record written by the original"
grep -q 'holder_id=go-1' "$WORK/last.err" || fail "the refusal does not name go-1"
ok "a live Go-written record is honoured"

# An expired one is taken over and deleted.
printf '{"id":"go-1","started_at":"2026-03-01T12:00:00Z","expires_at":"2026-03-01T12:02:00Z"}' \
  >"$STORE/instances/go-1"
run_guard run --store "$STORE" --id c-1 -- true
expect_exit 0 "over an expired record written by the original"
[[ ! -e $STORE/instances/go-1 ]] || fail "the expired Go record was not deleted"
ok "an expired Go-written record is taken over and deleted"

# An unreadable record counts as live.
printf '{"id":' >"$STORE/instances/broken"
run_guard run --store "$STORE" --id c-1 -- true
expect_exit 75 "beside an unreadable record"
ok "an unreadable record refuses"
