#!/usr/bin/env bash
# `run --wait` hand-over, side by side: for each round and each build given,
# one guard holds while five more wait; every gap from one child's exit to
# the next child's start (ms, `date +%s%3N`), then per build the median, the
# fastest and the slowest. Rounds alternate the builds, so a busy machine
# slows them alike. On a local folder by default; --store URL runs on any
# store the builds can open (a server you started, on loopback), each round
# and build in a namespace of its own where the URL has "{n}" (replaced by
# a fresh word of [a-z0-9_], e.g. in a Redis prefix or a PostgreSQL table).
# Credentials come as the tool reads them (INSTANCE_GUARD_PASSWORD, ...).
#   bench/handover.sh [--rounds N] [--store URL] BIN [BIN...]
#   e.g. bench/handover.sh /tmp/before/instance-guard build/instance-guard
#        bench/handover.sh --store 'redis://127.0.0.1:6390?prefix=ho_{n}:' OLD NEW
set -euo pipefail
ROUNDS=5
STORE=""
while [[ ${1:-} == --* ]]; do
  case $1 in
    --rounds) ROUNDS=$2 ;;
    --store) STORE=$2 ;;
    *) break ;;
  esac
  shift 2
done
(($#)) || { echo "usage: bench/handover.sh [--rounds N] [--store URL] BIN [BIN...]" >&2; exit 64; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export LOG
child='echo "start $(date +%s%3N)" >>"$LOG"; sleep 0.2; echo "stop $(date +%s%3N)" >>"$LOG"'

# measure BIN DIR N: the gaps of one round, one per line.
measure() {
  local bin=$1 dir=$2 pids=() i store
  rm -rf "$dir" && mkdir -p "$dir"
  LOG=$dir/log && : >"$LOG"
  store=${STORE:-$dir/store}
  store=${store//\{n\}/r$3}
  "$bin" run --wait --ttl 10s --store "$store" --id h1 -- bash -c "$child" 2>/dev/null &
  pids+=($!)
  for ((i = 0; i < 250; i++)); do grep -q start "$LOG" && break; sleep 0.02; done
  for i in 2 3 4 5 6; do
    "$bin" run --wait --ttl 10s --store "$store" --id "h$i" -- bash -c "$child" 2>/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  awk '$1 == "start" && !open && s {print $2 - s} $1 == "start" {open++} $1 == "stop" {open--; s = $2}' "$LOG"
}

for ((r = 0; r < ROUNDS; r++)); do
  for ((b = 1; b <= $#; b++)); do measure "${!b}" "$WORK/$b" "${r}_${b}_$$" >>"$WORK/gaps-$b"; done
done
for ((b = 1; b <= $#; b++)); do
  sort -n "$WORK/gaps-$b" | awk -v bin="${!b}" '{a[NR] = $1}
    END {printf "%s: %d hand-overs, median %d ms, fastest %d ms, slowest %d ms\n", bin, NR, a[int((NR + 1) / 2)], a[1], a[NR]}'
done
