#!/usr/bin/env bash
# The benchmark harness: measures every store in bench/stores.sh in every
# mode and writes the tables and the plot of BENCHMARKS.md.
#
#   bench/run.sh            the full run (about 10 minutes): rewrites the
#                           tables in BENCHMARKS.md and bench/stale_claims.png
#   bench/run.sh --short    a short pass of everything (CTest bench.short):
#                           request counts checked exactly, timings only
#                           reported; output in --out, BENCHMARKS.md untouched
# Options: --build DIR (default build/), --out DIR (default build/bench-full,
# or build/bench-short), --stores a,b (only these).
#
# What it measures (per store; per mode where it applies):
#   requests   store calls per claim, renewal, release (harness: store)
#   latency    claim / one bare request, with 0..1000 stale records (store)
#   handover   `run --wait`: next child's start - previous child's exit
#   takeover   SIGKILLed holder: kill -> next child's start, seen from
#              another host (hostname in a UTS namespace) and the same host
#   idle       `run -- sleep`: peak RSS, CPU per renewal, wake-ups between
#              renewals (harness: idle)
#   micro      record/key/listing micro-benchmarks (instance-guard-micro)
# Fails when a request count differs from what the protocol must cost, or a
# measurement could not be made; never because of a timing.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

SHORT=0 BUILD=$ROOT/build OUT="" ONLY=""
while (($#)); do
  case $1 in
  --short) SHORT=1 ;;
  --build) BUILD=$(cd "$2" && pwd); shift ;;
  --out) OUT=$2; shift ;;
  --stores) ONLY=$2; shift ;;
  *) echo "usage: bench/run.sh [--short] [--build DIR] [--out DIR] [--stores a,b]" >&2; exit 64 ;;
  esac
  shift
done
[[ -n $OUT ]] || OUT=$BUILD/bench-$([[ $SHORT == 1 ]] && echo short || echo full)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH=$BUILD/bench/instance-guard-bench
MICRO=$BUILD/bench/instance-guard-micro
for exe in "$BUILD/instance-guard" "$BENCH" "$MICRO"; do
  [[ -x $exe ]] || { echo "bench: $exe is missing; build it first (scripts/build.sh)" >&2; exit 1; }
done

# Sizes: the short run keeps the suite fast; the full run is for the tables.
if ((SHORT)); then
  ROUNDS=3 STALE=0,1,10 HANDOVER_N=3 IDLE_SECONDS=2 IDLE_STORES=directory
  TAKEOVER_STORES=directory MICRO_TIME=0.01
else
  ROUNDS=20 STALE=0,1,10,100,1000 HANDOVER_N=6 IDLE_SECONDS=60 IDLE_STORES=all
  TAKEOVER_STORES=all MICRO_TIME=0.5
fi

export INSTANCE_GUARD_BIN=$BUILD/instance-guard INSTANCE_TESTS_DIR=$ROOT/tests
# Scratch folder, cleanup, start_guard, wait_until, sleeper...; servers.
source "$ROOT/tests/e2e/lib.sh"
source "$ROOT/tests/e2e/webdav_lib.sh"

RESULTS=$OUT/results.jsonl
: >"$RESULTS"
FAILED=()
note() { echo "bench: $*" >&2; }
problem() { note "FAILED: $*"; FAILED+=("$*"); }
emit() { jq -cn "$@" >>"$RESULTS"; }

# ---- The registry ---------------------------------------------------------
NAMES=()
declare -A S_START S_URL S_MODES S_FLAGS
bench_store() {
  local name=$1 start=$2 url=$3 modes=$4
  shift 4
  NAMES+=("$name")
  S_START[$name]=$start S_URL[$name]=$url S_MODES[$name]=$modes S_FLAGS[$name]="$*"
}
source "$HERE/stores.sh"

# start_store NAME: starts its server (if any) and sets STORE_URL. Returns 77
# when the server is absent.
start_store() {
  local name=$1 start=${S_START[$1]} attempt rc
  local DIR=$WORK/$name SERVER_URL="" HOSTPORT="" PORT=""
  mkdir -p "$DIR"
  case $start in
  - | inproc) ;;
  *)
    local runner=()
    if [[ $start == *.sh ]]; then runner=(bash "$SERVERS/$start"); else runner=("$start"); fi
    for attempt in 1 2 3; do
      PORT=$(free_port)
      rc=0
      SERVER_URL=$(env WATCH_PID=$$ "${runner[@]}" start "$DIR/server" "$PORT" 2>"$DIR/start.err") || rc=$?
      if ((rc == 0)); then break; fi
      if ((rc == 77)); then note "$name skipped: $(cat "$DIR/start.err")"; return 77; fi
    done
    ((rc == 0)) || { cat "$DIR/start.err" >&2; return 1; }
    STOPS+=("${runner[*]} stop $DIR/server")
    HOSTPORT=127.0.0.1:$PORT
    ;;
  esac
  if declare -F "bench_env_$name" >/dev/null; then "bench_env_$name"; fi
  STORE_URL=$(eval "echo \"${S_URL[$name]}\"")
}
STOPS=()
stop_stores() {
  local s
  for s in "${STOPS[@]}"; do eval "$s" >/dev/null 2>&1 || true; done
  STOPS=()
}
trap 'stop_stores; stop_servers; cleanup' EXIT

# ---- Process-level measurements -------------------------------------------

# handover NAME URL MODE: a first guard starts; once its child runs,
# HANDOVER_N - 1 more start with --wait; each child runs ~0.2 s. Measures the
# gaps between one child's exit and the next one's start, and counts
# overlaps (a child starting while another runs: announce is not a lock).
handover() {
  local name=$1 url=$2 mode=$3 i pids=() log=$WORK/$name-$mode.handover
  local child='echo "start $(date +%s%3N)" >>"$LOG"; sleep 0.2; echo "stop $(date +%s%3N)" >>"$LOG"'
  : >"$log"
  export LOG=$log
  for ((i = 1; i <= HANDOVER_N; i++)); do
    start_guard "h-$name-$mode-$i" run --wait --ttl 10s --mode "$mode" --store "$url" \
      --id "h$i" ${S_FLAGS[$name]} -- bash -c "$child"
    pids+=("$LAST_PID")
    if ((i == 1)); then
      wait_until 10 grep -q start "$log" || { problem "$name $mode handover: the first child did not start"; return; }
    fi
  done
  for i in "${!pids[@]}"; do
    wait_exit "${pids[i]}" 60
    ((EXIT_CODE == 0)) || { problem "$name $mode handover: guard exited $EXIT_CODE: $(tail -2 "$WORK/h-$name-$mode-$((i + 1)).err")"; return; }
  done
  local gaps overlaps
  gaps=$(awk '$1 == "start" && !open && s {printf "%d,", $2 - s} $1 == "start" {open++} $1 == "stop" {open--; s = $2}' "$log")
  overlaps=$(awk '$1 == "start" && open {n++} $1 == "start" {open++} $1 == "stop" {open--} END {print n + 0}' "$log")
  gaps="[${gaps%,}]"
  emit --arg s "$name" --arg m "$mode" --argjson g "$gaps" --argjson o "$overlaps" \
    '{store: $s, mode: $m, kind: "handover", gaps_ms: $g, overlaps: $o, max_ms: ($g | max), median_ms: ($g | sort | .[length / 2 | floor])}'
  note "$name $mode hand-over gaps (ms): $gaps, overlaps: $overlaps"
}

# takeover NAME URL MODE WHERE: a holder is SIGKILLed while a --wait guard
# waits; the time from the kill to the waiting guard's child starting.
# WHERE=other runs the holder under another host name (a UTS namespace), so
# only the ttl (or the store's own lock) frees the claim; WHERE=same: on this
# host, where a dead pid is stale at once.
TAKEOVER_TTL=2s
takeover() {
  local name=$1 url=$2 mode=$3 where=$4 tag=t-$1-$3-$4 holder waiter started
  rm -f "$WORK/$tag.started" "$WORK/$tag.b"
  if [[ $where == other ]]; then
    unshare -u true 2>/dev/null || { note "$name $mode takeover (other host): skipped, needs unshare -u (root)"; return; }
    set -m
    unshare -u bash -c 'hostname bench-other-host && exec "$0" "$@"' "$BIN" run --store "$url" \
      --mode "$mode" --ttl $TAKEOVER_TTL --id "$tag-a" ${S_FLAGS[$name]} -- bash -c "$(sleeper "$tag")" \
      >"$WORK/$tag-a.out" 2>"$WORK/$tag-a.err" &
    holder=$!
    set +m
    BG_PIDS+=("$holder")
  else
    start_guard "$tag-a" run --store "$url" --mode "$mode" --ttl $TAKEOVER_TTL --id "$tag-a" \
      ${S_FLAGS[$name]} -- bash -c "$(sleeper "$tag")"
    holder=$LAST_PID
  fi
  wait_until 10 test -f "$WORK/$tag.started" || { problem "$name $mode takeover: the holder's child did not start: $(tail -2 "$WORK/$tag-a.err")"; return; }
  start_guard "$tag-b" run --wait --store "$url" --mode "$mode" --ttl $TAKEOVER_TTL --id "$tag-b" \
    ${S_FLAGS[$name]} -- bash -c "date +%s%3N >\"$WORK/$tag.b.tmp\"; mv \"$WORK/$tag.b.tmp\" \"$WORK/$tag.b\"; exec sleep 300"
  waiter=$LAST_PID
  wait_until 10 grep -q 'waiting for the holder' "$WORK/$tag-b.err" || { problem "$name $mode takeover: the second guard did not wait: $(tail -2 "$WORK/$tag-b.err")"; return; }
  sleep 0.3  # somewhere in the holder's renewal period
  local killed_at
  killed_at=$(now_ms)
  kill -KILL "$holder"
  wait_until 15 test -f "$WORK/$tag.b" || { problem "$name $mode takeover ($where host): no take-over within 15 s"; return; }
  started=$(cat "$WORK/$tag.b")
  kill -TERM "$waiter"
  wait_exit "$waiter" 10
  # The killed holder's record stays live for its ttl as seen from here when
  # it came from "another host": remove it, so the next case starts clean.
  "$BIN" release --store "$url" --id "$tag-a" --force >/dev/null 2>&1 || true
  emit --arg s "$name" --arg m "$mode" --arg w "$where" --arg ttl $TAKEOVER_TTL --argjson t $((started - killed_at)) \
    '{store: $s, mode: $m, kind: "takeover", where: $w, ttl: $ttl, ms: $t}'
  note "$name $mode take-over ($where host, ttl $TAKEOVER_TTL): $((started - killed_at)) ms"
}

wanted() { [[ $2 == all || ,$2, == *,$1,* ]]; }

# ---- Each store -----------------------------------------------------------
for name in "${NAMES[@]}"; do
  [[ -z $ONLY ]] || wanted "$name" "$ONLY" || continue
  rc=0
  start_store "$name" || rc=$?
  if ((rc == 77)); then emit --arg s "$name" '{store: $s, kind: "skipped", why: "server absent"}'; continue; fi
  ((rc == 0)) || { problem "$name: the server did not start"; continue; }
  note "$name: $STORE_URL"

  rc=0
  "$BENCH" store --name "$name" --url "$STORE_URL" --modes "${S_MODES[$name]}" --stale "$STALE" \
    --rounds $ROUNDS --check >>"$RESULTS" 2>"$OUT/$name.log" || rc=$?
  cat "$OUT/$name.log" >&2
  if ((rc == 78)); then
    emit --arg s "$name" '{store: $s, kind: "skipped", why: "not in this build"}'
    stop_stores
    continue
  fi
  ((rc == 0)) || problem "$name: harness exit $rc (see $OUT/$name.log)"
  # Connection reuse: Apache's access log (servers/apache.sh) ends each line
  # with the client's port, so distinct ports = TCP connections opened.
  log=$WORK/$name/server/logs/access.log
  if [[ ${S_START[$name]} == apache.sh && -s $log ]]; then
    emit --arg s "$name" --argjson r "$(wc -l <"$log")" --argjson c "$(awk '{print $NF}' "$log" | sort -u | wc -l)" \
      '{store: $s, kind: "connections", requests: $r, connections: $c}'
  fi

  if [[ ${S_START[$name]} != inproc ]]; then
    modes=$(jq -r --arg s "$name" 'select(.store == $s and .kind == "mode" and .supported) | .mode' "$RESULTS")
    for mode in $modes; do handover "$name" "$STORE_URL" "$mode"; done
    if wanted "$name" "$TAKEOVER_STORES"; then
      for mode in $modes; do
        takeover "$name" "$STORE_URL" "$mode" other
        takeover "$name" "$STORE_URL" "$mode" same
      done
    fi
    if wanted "$name" "$IDLE_STORES"; then
      # auto (the default), and on the directory store announce too: one
      # write per renewal, against exclusive's lock refresh and two writes.
      idle_modes=auto
      [[ $name == directory ]] && idle_modes="auto announce"
      for mode in $idle_modes; do
        "$BENCH" idle --bin "$BIN" --store "$STORE_URL" --ttl 3s --seconds $IDLE_SECONDS --name "$name" \
          --mode $mode >>"$RESULTS" 2>"$OUT/$name.idle.log" ||
          problem "$name: idle measurement ($mode) failed (see $OUT/$name.idle.log)"
        tail -1 "$OUT/$name.idle.log" >&2
      done
    fi
  fi
  stop_stores
done

# ---- Micro-benchmarks -------------------------------------------------------
"$MICRO" --benchmark_min_time=$MICRO_TIME --benchmark_format=json --benchmark_out="$OUT/micro.json" \
  --benchmark_out_format=json >/dev/null 2>"$OUT/micro.log" || problem "micro-benchmarks failed (see $OUT/micro.log)"

# ---- Tables and plot ------------------------------------------------------------
bash "$HERE/report.sh" "$OUT" || problem "report failed"

if ((${#FAILED[@]})); then
  note "${#FAILED[@]} problem(s):"
  printf '  %s\n' "${FAILED[@]}" >&2
  exit 1
fi
if ((!SHORT)) && [[ -z $ONLY ]]; then
  bash "$HERE/report.sh" "$OUT" --update "$ROOT/BENCHMARKS.md" "$HERE/stale_claims.png"
  note "BENCHMARKS.md and bench/stale_claims.png rewritten"
fi
note "done: $OUT/tables.md"
