#!/usr/bin/env bash
# While the child runs, the guard's main thread sleeps in the kernel: no
# periodic wake-ups (its context-switch count does not move).
source "$(dirname "$0")/lib.sh"

start_guard guard run --store "$STORE" -- bash -c "$(sleeper idle)"
guard=$LAST_PID
wait_until 5 test -f "$WORK/idle.started" || fail "the guarded child did not start"
switches() { awk '/^(non)?voluntary_ctxt_switches/ {n += $2} END {print n}' "/proc/$guard/task/$guard/status"; }
# Let the start-up settle, then watch the main thread for a second.
sleep 0.2
before=$(switches)
sleep 1
after=$(switches)
[[ $before == "$after" ]] || fail "the main thread woke up $((after - before)) times in 1 s"
ok "main thread idle: $before context switches, unchanged over 1 s"
