#!/usr/bin/env bash
# The guarded command in the multi-host harness: appends "start" to the event
# log ($HOSTS_EVENTS) with its host's name and its epoch, runs until SIGTERM,
# then appends "stop". Timestamps come from `hosts-check now`
# (CLOCK_MONOTONIC), run without libfaketime: the guard may run under it,
# the child never does.
unset LD_PRELOAD FAKETIME FAKETIME_DONT_FAKE_MONOTONIC

# The guard signals the child's whole group, so a signal can kill the clock
# read itself: it is then read again. A start time read again is late by
# that retry (milliseconds), and only for a child already being stopped.
now() {
  local t="" tries
  for ((tries = 0; tries < 100 && ${#t} == 0; tries++)); do t=$("$HOSTS_CHECK" now 2>/dev/null) || t=""; done
  echo "${t:-0}"
}
event() {
  printf '%s %s %s %s\n' "$(now)" "$1" "$HOSTNAME" "${INSTANCE_GUARD_EPOCH:--}" >>"$HOSTS_EVENTS"
}

# A signal only sets a flag; the loop below ends on it, and the stop line is
# written after the signal, so the stop time is never early.
stopping=0
trap 'stopping=1' TERM INT HUP
event start
while ((!stopping)); do
  sleep 1 &
  wait $! || true
done
event stop
exit 0
