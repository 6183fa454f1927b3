#!/usr/bin/env bash
# The guarded command in the multi-host harness: appends "start" to the event
# log ($HOSTS_EVENTS) with its host's name and its epoch, runs until SIGTERM,
# then appends "stop". Timestamps come from `hosts-check emit`
# (CLOCK_MONOTONIC), run without libfaketime: the guard may run under it,
# the child never does.
unset LD_PRELOAD FAKETIME FAKETIME_DONT_FAKE_MONOTONIC

# event KIND: one line, written by hosts-check itself. The guard signals
# the child's whole group, which can kill hosts-check before it wrote: it is
# then run again (a start time read again is late by that retry, and only
# for a child already being stopped).
event() {
  local tries
  for ((tries = 0; tries < 100; tries++)); do
    "$HOSTS_CHECK" emit "$HOSTS_EVENTS" "$1" "$HOSTNAME" "${INSTANCE_GUARD_EPOCH:--}" && return
  done
  return 1
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
