#!/usr/bin/env bash
# `instance-guard run` on nginx (dav + dav_ext), which grants every LOCK its
# lock zone's own timeout (4 s here) whatever Timeout was asked:
# - at the default ttl (2m, max-skew 5s) a 4 s grant is too short to renew
#   safely: the claim is refused at the start (78) with a message saying so;
# - with --ttl 30s (ttl/3 = 10 s, longer than the zone) and --max-skew 1s the
#   guard renews on the grant: a second guard started after the zone would
#   have lapsed (had the holder renewed every ttl/3) is still refused, and the
#   holder's child runs to its end without a loss;
# - the directory-store behaviour (refusal, record, stand-down, next run).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"

start_server nginx nginx.sh NGINX_LOCK_TIMEOUT=4s
store="webdav://${URL#http://}/state"

run_guard run --store "$store" --id early -- bash -c 'echo should-not-run'
expect_exit 78 "default ttl on a 4 s lock zone"
grep -q 'granted its lock for only 4s' "$WORK/last.err" ||
  fail "no clear message: $(cat "$WORK/last.err")"
[[ ! -s $WORK/last.out ]] || fail "the command ran on a lock too short to hold"
ok "default ttl: a 4 s grant is refused at the start (78) with a clear message"

short=(--ttl 30s --max-skew 1s)
export WORK
start_guard holder run --store "$store" "${short[@]}" --id holder -- \
  bash -c 'touch "$WORK/holder.started"; sleep 7; echo holder done'
holder=$LAST_PID
wait_until 10 test -f "$WORK/holder.started" ||
  fail "the holder's child did not start: $(cat "$WORK/holder.err")"
sleep 5.5  # past the 4 s zone: the lock would have lapsed without a renewal on the grant
run_guard run --store "$store" "${short[@]}" --id second -- bash -c 'echo second ran'
expect_exit 75 "a second guard while the holder runs, after the zone's timeout"
[[ ! -s $WORK/last.out ]] || fail "the second command ran beside the holder"
wait_exit "$holder" 15
[[ $EXIT_CODE == 0 ]] || fail "the holder exited $EXIT_CODE: $(cat "$WORK/holder.err")"
grep -q 'holder done' "$WORK/holder.out" || fail "the holder's child did not finish"
! grep -q 'claim lost' "$WORK/holder.err" || fail "the holder lost its claim"
grep -q 'granted=4s' "$WORK/holder.err" || fail "the claim does not log the grant"
ok "ttl 30s on a 4 s zone: renewed on the grant, the second guard was refused after the zone"

check_run nginx "$WORK/nginx/root/state" "$store" "${short[@]}"
