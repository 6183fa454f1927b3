#!/usr/bin/env bash
# The guarded command in the multi-host harness: appends "start" to the event
# log ($HOSTS_EVENTS) with its host's name and its epoch, runs until SIGTERM,
# then appends "stop". Timestamps come from `hosts-check now`
# (CLOCK_MONOTONIC), run without libfaketime: the guard may run under it,
# the child never does.
unset LD_PRELOAD FAKETIME FAKETIME_DONT_FAKE_MONOTONIC
event() {
  printf '%s %s %s %s\n' "$("$HOSTS_CHECK" now)" "$1" "$HOSTNAME" "${INSTANCE_GUARD_EPOCH:--}" \
    >>"$HOSTS_EVENTS"
}
# Signals ignored from here on, so a group-wide SIGTERM cannot kill the
# clock read that the stop line waits for.
trap 'trap "" TERM INT HUP; event stop; exit 0' TERM INT HUP
event start
while :; do
  sleep 1 &
  wait $! || true
done
