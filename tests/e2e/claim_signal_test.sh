#!/usr/bin/env bash
# A signal that arrives while the claim is still in progress ends the attempt
# cleanly (128+N, nothing of ours left in the store, the command never runs);
# a second signal ends the guard at once.
#
# To hold a claim in progress this test takes the directory store's write
# lock (<store>/lock~, flock'ed around every write): the claim's write then
# blocks until the lock is released.
source "$(dirname "$0")/lib.sh"

# flock holds the lock until its command (a sleep) ends; -o keeps the lock's
# descriptor away from the command.
hold_lock() {
  flock -o "$STORE/lock~" bash -c "echo \$\$ >>'$WORK/pgids'; echo \$\$ >'$WORK/locked'; exec sleep 300" &
  LOCK_PID=$!
  BG_PIDS+=("$LOCK_PID")
  wait_until 5 test -s "$WORK/locked" || fail "could not take the store's lock"
  read -r LOCK_SLEEPER <"$WORK/locked"
  rm -f "$WORK/locked"
}
release_lock() {
  kill -TERM "$LOCK_SLEEPER"
  wait "$LOCK_PID" 2>/dev/null || true
}
# The claim has reached the blocked write: the guard waits on the lock file.
claim_blocked() { grep -q "lock~" <(ls -l "/proc/$1/fd" 2>/dev/null); }

# One signal: the attempt ends once the store answers, nothing is left.
hold_lock
start_guard first run --store "$STORE" --id first -- bash -c 'touch "$WORK/ran"'
guard=$LAST_PID
wait_until 5 claim_blocked "$guard" || fail "the claim did not block on the store's lock"
kill -TERM "$guard"
wait_until 2 grep -q 'signal during the claim' "$WORK/first.err" || fail "the signal was not noticed"
running "$guard" || fail "the guard did not wait for the store to answer"
release_lock
wait_exit "$guard" 5
[[ $EXIT_CODE == 143 ]] || fail "guard exited $EXIT_CODE after SIGTERM during the claim, expected 143"
[[ ! -e $WORK/ran ]] || fail "the command ran although the claim was stopped"
[[ -z $(ls -A "$STORE/instances" 2>/dev/null) ]] || fail "record left: $(ls "$STORE/instances")"
ok "SIGTERM during the claim: exit 143, no record, command not run"

# A second signal: the guard exits at once, without waiting for the store.
hold_lock
start_guard second run --store "$STORE" --id second -- bash -c 'touch "$WORK/ran"'
guard=$LAST_PID
wait_until 5 claim_blocked "$guard" || fail "the claim did not block on the store's lock"
kill -INT "$guard"
wait_until 2 grep -q 'signal during the claim' "$WORK/second.err" || fail "the signal was not noticed"
kill -INT "$guard"
wait_exit "$guard" 2
[[ $EXIT_CODE == 130 ]] || fail "guard exited $EXIT_CODE after two SIGINTs, expected 130"
release_lock
[[ ! -e $WORK/ran ]] || fail "the command ran although the claim was stopped"
ok "a second SIGINT during the claim: exit 130 at once"
