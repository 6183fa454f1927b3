#!/usr/bin/env bash
# `run --wait` hand-over on a local folder, side by side: for each round and
# each build given, one guard holds while five more wait; every gap from one
# child's exit to the next child's start (ms, `date +%s%3N`), then per build
# the median, the fastest and the slowest. Rounds alternate the builds, so a
# busy machine slows them alike.
#   bench/handover.sh [--rounds N] BIN [BIN...]
#   e.g. bench/handover.sh /tmp/before/instance-guard build/instance-guard
set -euo pipefail
ROUNDS=5
if [[ ${1:-} == --rounds ]]; then ROUNDS=$2; shift 2; fi
(($#)) || { echo "usage: bench/handover.sh [--rounds N] BIN [BIN...]" >&2; exit 64; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export LOG
child='echo "start $(date +%s%3N)" >>"$LOG"; sleep 0.2; echo "stop $(date +%s%3N)" >>"$LOG"'

# measure BIN DIR: the gaps of one round, one per line.
measure() {
  local bin=$1 dir=$2 pids=() i
  rm -rf "$dir" && mkdir -p "$dir"
  LOG=$dir/log && : >"$LOG"
  "$bin" run --wait --ttl 10s --store "$dir/store" --id h1 -- bash -c "$child" 2>/dev/null &
  pids+=($!)
  for ((i = 0; i < 250; i++)); do grep -q start "$LOG" && break; sleep 0.02; done
  for i in 2 3 4 5 6; do
    "$bin" run --wait --ttl 10s --store "$dir/store" --id "h$i" -- bash -c "$child" 2>/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  awk '$1 == "start" && !open && s {print $2 - s} $1 == "start" {open++} $1 == "stop" {open--; s = $2}' "$LOG"
}

for ((r = 0; r < ROUNDS; r++)); do
  for ((b = 1; b <= $#; b++)); do measure "${!b}" "$WORK/$b" >>"$WORK/gaps-$b"; done
done
for ((b = 1; b <= $#; b++)); do
  sort -n "$WORK/gaps-$b" | awk -v bin="${!b}" '{a[NR] = $1}
    END {printf "%s: %d hand-overs, median %d ms, fastest %d ms, slowest %d ms\n", bin, NR, a[int((NR + 1) / 2)], a[1], a[NR]}'
done
