#!/usr/bin/env bash
# `run --wait`: several guards started at the same moment run their children
# one after another, never two at once, and each hand-over (the next child's
# start minus the previous child's exit) takes under one second. On the
# directory store, then on Apache WebDAV (--settle 0 on loopback).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"

N=4
# The child: "start <ms> <id>", ~0.3 s of work, "stop <ms> <id>".
child='echo "start $(date +%s%3N) $INSTANCE_GUARD_ID" >>"$LOG"; sleep 0.3; echo "stop $(date +%s%3N) $INSTANCE_GUARD_ID" >>"$LOG"'

# handover NAME STORE [FLAGS...]: starts N guards together and checks the log.
handover() {
  local name=$1 store=$2 i pids=()
  shift 2
  export LOG=$WORK/$name.log
  : >"$LOG"
  for ((i = 1; i <= N; i++)); do
    start_guard "$name-$i" run --wait --ttl 5s --store "$store" --id "$name-$i" "$@" -- bash -c "$child"
    pids+=("$LAST_PID")
  done
  for ((i = 1; i <= N; i++)); do
    wait_exit "${pids[i - 1]}" 30
    [[ $EXIT_CODE == 0 ]] || { cat "$WORK/$name-$i.err" >&2; fail "$name: guard $i exited $EXIT_CODE"; }
  done
  grep -q 'waiting for the holder' "$WORK"/"$name"-*.err || fail "$name: no guard said it was waiting"
  grep -h "waiting for the holder" "$WORK"/"$name"-*.err | grep -q "holder_id=" ||
    fail "$name: no waiting line names the holder: $(grep -h 'waiting for the holder' "$WORK"/"$name"-*.err)"

  # Lines come in append order: start/stop pairs of one id, never interleaved.
  local kind ms id prev_stop="" open="" gaps=() max=0 starts=0
  while read -r kind ms id; do
    case $kind in
    start)
      [[ -z $open ]] || fail "$name: $id started while $open ran: $(cat "$LOG")"
      if [[ -n $prev_stop ]]; then
        ((ms >= prev_stop)) || fail "$name: $id started before the previous child stopped"
        gaps+=($((ms - prev_stop)))
        ((ms - prev_stop > max)) && max=$((ms - prev_stop))
      fi
      open=$id
      starts=$((starts + 1))
      ;;
    stop)
      [[ $open == "$id" ]] || fail "$name: $id stopped but $open was running: $(cat "$LOG")"
      open=""
      prev_stop=$ms
      ;;
    esac
  done <"$LOG"
  ((starts == N)) || fail "$name: $starts children ran, expected $N: $(cat "$LOG")"
  ((max < 1000)) || fail "$name: a hand-over took $max ms (gaps: ${gaps[*]} ms)"
  ok "$name: $N children ran one after another; hand-over gaps ${gaps[*]} ms (max $max ms)"
}

handover directory "$STORE"

start_server apache apache.sh
handover apache "webdav://${URL#http://}/state" --settle 0
