#!/usr/bin/env bash
# `instance-guard history` over what real runs leave in a local folder:
# hand-overs with growing epochs and their gaps (exit 0); a SIGKILLed holder
# whose tenure its successor closes at its last renewal; an overlap that
# announce lets happen (its guard paused past its ttl while its child runs
# on) found and flagged (exit 1), also as JSON; --since; the timeline SVG,
# valid XML with one bar per tenure; --no-history; bad flags.
source "$(dirname "$0")/lib.sh"

# Three hand-overs in exclusive mode.
for n in 1 2 3; do
  run_guard run --store "$STORE" --mode exclusive --id "ex-$n" -- true
  expect_exit 0 "run ex-$n"
done
run_guard history --store "$STORE"
expect_exit 0 "history after three clean hand-overs"
[[ $(grep -c ' stood down$' "$WORK/last.out") == 3 ]] || fail "three stood-down tenures expected: $(cat "$WORK/last.out")"
grep -q '^overlaps: none$' "$WORK/last.out" || fail "no 'overlaps: none': $(cat "$WORK/last.out")"
run_guard history --store "$STORE" --json
expect_exit 0 "history --json"
jq -e '[.tenures[].epoch] == [1, 2, 3] and ([.tenures[1:][].gap_before_ms] | all(. != null and . >= 0))' \
  "$WORK/last.out" >/dev/null || fail "epochs 1, 2, 3 and a gap before each later one: $(cat "$WORK/last.out")"
ok "three hand-overs: epochs 1, 2, 3, gaps $(jq -c '[.tenures[1:][].gap_before_ms]' "$WORK/last.out") ms, exit 0"

# A holder SIGKILLed with its child: the next claim closes its tenure.
start_guard killed run --store "$STORE" --mode exclusive --ttl 3s --id killed -- bash -c "$(sleeper killed)"
killed=$LAST_PID
wait_until 10 test -f "$WORK/killed.started" || fail "the child did not start: $(cat "$WORK/killed.err")"
kill -KILL "$killed"
wait_exit "$killed" 5
read -r child _ <"$WORK/killed.started"
wait_until 5 not_running "$child" || fail "the child outlived its SIGKILLed guard"
run_guard run --store "$STORE" --mode exclusive --id after-kill -- true
expect_exit 0 "the run after the SIGKILL"
run_guard history --store "$STORE" --json
expect_exit 0 "history after the SIGKILL"
jq -e '.tenures[] | select(.id == "killed") | .end == "crashed" and .ended_at != null' "$WORK/last.out" >/dev/null ||
  fail "the killed holder's tenure is not closed as crashed: $(jq -c '.tenures[] | select(.id == "killed")' "$WORK/last.out")"
ok "the SIGKILLed holder's tenure was closed by its successor: $(jq -r '.tenures[] | select(.id == "killed") | "crashed, held \(.held_ms) ms"' "$WORK/last.out")"

# --since: only what was held within the last minute (all of it), then
# nothing older than now can be cut (a duration is required).
run_guard history --store "$STORE" --since 1m --json
expect_exit 0 "history --since 1m"
[[ $(jq '.tenures | length' "$WORK/last.out") == 5 ]] || fail "--since 1m lost tenures: $(jq -c '[.tenures[].id]' "$WORK/last.out")"
run_guard history --store "$STORE" --since yesterday
expect_exit 64 "history --since yesterday"
grep -q 'positive duration' "$WORK/last.err" || fail "no clear --since error: $(cat "$WORK/last.err")"

# The timeline of those five tenures.
run_guard history --store "$STORE" --svg "$WORK/timeline.svg"
expect_exit 0 "history --svg"
xmllint --noout "$WORK/timeline.svg" || fail "the timeline is not well-formed XML"
[[ $(xmllint --xpath 'name(/*)' "$WORK/timeline.svg") == svg ]] || fail "the timeline's root is not <svg>"
bars=$(grep -c '<g class="tenure">' "$WORK/timeline.svg")
((bars == 5)) || fail "$bars bars for 5 tenures"
ok "the timeline is valid SVG with a bar per tenure ($bars)"

# Announce's known hole: its guard paused past the ttl, its child runs on;
# a second announce guard sees the record expired and starts. History
# flags the overlap (exit 1).
ANNOUNCE=$WORK/announce
start_guard paused run --store "$ANNOUNCE" --mode announce --ttl 2s --id paused -- bash -c "$(sleeper paused)"
paused=$LAST_PID
wait_until 10 test -f "$WORK/paused.started" || fail "the child did not start: $(cat "$WORK/paused.err")"
kill -STOP "$paused"
expired() { "$BIN" status --store "$ANNOUNCE" --json 2>/dev/null | jq -e '.[0].live == false' >/dev/null; }
wait_until 10 expired || fail "the paused guard's record did not expire"
run_guard run --store "$ANNOUNCE" --mode announce --ttl 2s --id second -- true
expect_exit 0 "the second announce guard (the first's record expired)"
# It resumes, renews its record and runs on: it held all along.
kill -CONT "$paused"
live_again() { "$BIN" status --store "$ANNOUNCE" --json 2>/dev/null | jq -e '.[0].live == true' >/dev/null; }
wait_until 10 live_again || fail "the resumed guard did not renew its record"
run_guard history --store "$ANNOUNCE"
expect_exit 1 "history of an overlap"
grep -q '^OVERLAP: paused on .* and second on .* held at once for ' "$WORK/last.out" ||
  fail "no OVERLAP line: $(cat "$WORK/last.out")"
run_guard history --store "$ANNOUNCE" --json
expect_exit 1 "history --json of an overlap"
jq -e '.clean == false and (.overlaps | length) == 1 and .overlaps[0].first == "paused" and .overlaps[0].second == "second"' \
  "$WORK/last.out" >/dev/null || fail "the JSON does not name the overlap: $(jq -c .overlaps "$WORK/last.out")"
run_guard history --store "$ANNOUNCE" --svg "$WORK/overlap.svg"
grep -q '<g class="overlap">' "$WORK/overlap.svg" || fail "the timeline does not mark the overlap"
kill -TERM "$paused"
wait_exit "$paused" 10
# Stood down at last, it wrote its real end over the "crashed" its
# successor had written: the overlap stays on record.
run_guard history --store "$ANNOUNCE" --json
expect_exit 1 "history of the overlap after the paused guard stood down"
jq -e '(.overlaps | length) == 1 and (.tenures[] | select(.id == "paused") | .end == "stood_down")' \
  "$WORK/last.out" >/dev/null || fail "after its stand-down: $(jq -c '.overlaps, [.tenures[].end]' "$WORK/last.out")"
ok "announce's overlap found: the two held at once for $(jq -r '.overlaps[0].amount_ms' "$WORK/last.out") ms (exit 1, before and after the paused guard stood down)"

# --no-history writes nothing under history/.
NONE=$WORK/none
run_guard run --store "$NONE" --no-history -- true
expect_exit 0 "run --no-history"
[[ ! -e $NONE/history ]] || fail "--no-history wrote $(ls "$NONE/history")"
run_guard history --store "$NONE"
expect_exit 0 "history of a store without any"
grep -q '0 tenures' "$WORK/last.out" || fail "an empty history says so: $(cat "$WORK/last.out")"
run_guard run --store "$NONE" --history-keep 0 -- true
expect_exit 64 "--history-keep 0"
ok "--no-history writes nothing; --history-keep 0 is refused"
