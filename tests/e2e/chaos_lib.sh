# The chaos test (sourced by chaos_*_test.sh after lib.sh): three
# `instance-guard run --wait` loops on one store, and a killer that SIGKILLs
# a random loop's guard at random moments; each loop restarts its guard.
# Every child takes an exclusive flock on one file for its whole life and
# logs OVERLAP when it cannot: the kernel drops that lock only when the child
# really died, so two children running at once is seen whatever the timing.
# chaos_run STORE_URL MODE CYCLES [EXTRA FLAGS...]: fails on any overlap, on
# fewer than CYCLES child starts, and on an unreadable record left behind.

chaos_child='
exec 9>>"$CHAOS_DIR/critical"
flock -n 9 || echo "OVERLAP $(date +%s%N) $INSTANCE_GUARD_ID" >>"$CHAOS_DIR/log"
echo "start $(date +%s%N) $INSTANCE_GUARD_ID $INSTANCE_GUARD_EPOCH" >>"$CHAOS_DIR/log"
sleep "0.0$((RANDOM % 6 + 2))" 9>&-
echo "stop $(date +%s%N) $INSTANCE_GUARD_ID" >>"$CHAOS_DIR/log"
'

chaos_loop() {  # chaos_loop N URL MODE FLAGS...: restarts its guard until told to stop
  local n=$1 url=$2 mode=$3
  shift 3
  while [[ ! -e $CHAOS_DIR/stop ]]; do
    "$BIN" run --store "$url" --mode "$mode" --ttl 3s --id "chaos-$n" --wait "$@" \
      -- bash -c "$chaos_child" >>"$CHAOS_DIR/guard-$n.out" 2>>"$CHAOS_DIR/guard-$n.err" &
    echo $! >"$CHAOS_DIR/loop-$n.pid"
    wait $! || true
  done
}

chaos_run() {
  local url=$1 mode=$2 cycles=$3
  shift 3
  CHAOS_DIR=$WORK/chaos-$mode
  export CHAOS_DIR
  mkdir -p "$CHAOS_DIR"
  : >"$CHAOS_DIR/log"
  local loops=() n
  for n in 1 2 3; do
    chaos_loop "$n" "$url" "$mode" "$@" &
    loops+=($!)
    BG_PIDS+=($!)
  done
  local kills=0 deadline=$(($(now_ms) + 240000))
  while (($(grep -c '^start' "$CHAOS_DIR/log") < cycles)); do
    (($(now_ms) < deadline)) || fail "$mode: only $(grep -c '^start' "$CHAOS_DIR/log") cycles in 240 s"
    sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
    n=$((RANDOM % 3 + 1))
    if [[ -s $CHAOS_DIR/loop-$n.pid ]] && kill -KILL "$(cat "$CHAOS_DIR/loop-$n.pid")" 2>/dev/null; then
      kills=$((kills + 1))
    fi
  done
  touch "$CHAOS_DIR/stop"
  for n in 1 2 3; do kill -TERM "$(cat "$CHAOS_DIR/loop-$n.pid")" 2>/dev/null || true; done
  for n in "${loops[@]}"; do wait "$n" 2>/dev/null || true; done
  local starts overlaps
  starts=$(grep -c '^start' "$CHAOS_DIR/log")
  overlaps=$(grep -c '^OVERLAP' "$CHAOS_DIR/log" || true)
  ((overlaps == 0)) || { grep -B2 -A2 OVERLAP "$CHAOS_DIR/log" | head -20 >&2; fail "$mode: $overlaps overlaps in $starts cycles"; }
  # Nothing left unreadable: every record status lists must decode.
  "$BIN" status --store "$url" --json >"$CHAOS_DIR/status.json" 2>"$CHAOS_DIR/status.err" ||
    { cat "$CHAOS_DIR/status.err" >&2; fail "$mode: status failed after the chaos"; }
  jq -e 'all(.[]; .readable)' "$CHAOS_DIR/status.json" >/dev/null ||
    fail "$mode: an unreadable record was left: $(cat "$CHAOS_DIR/status.json")"
  # The store's own history agrees: no two tenures at once, every epoch
  # larger than the last, a tenure for every child start (of the newest 200
  # the history keeps).
  "$BIN" history --store "$url" --json >"$CHAOS_DIR/history.json" 2>"$CHAOS_DIR/history.err" ||
    { cat "$CHAOS_DIR/history.err" >&2; jq -c '.overlaps, .epochs_not_increasing' "$CHAOS_DIR/history.json" >&2
      fail "$mode: history found an overlap or an epoch that did not grow (or failed)"; }
  local tenures crashed keep=200
  tenures=$(jq '.tenures | length' "$CHAOS_DIR/history.json")
  crashed=$(jq '[.tenures[] | select(.end == "crashed" or .end == "unknown")] | length' "$CHAOS_DIR/history.json")
  ((tenures >= (starts < keep ? starts : keep))) || fail "$mode: $tenures tenures in the history for $starts child starts"
  jq -e '.unreadable == []' "$CHAOS_DIR/history.json" >/dev/null || fail "$mode: an unreadable tenure"
  # Its timeline: valid SVG, a bar per tenure. CHAOS_SVG_DIR keeps a copy
  # (the README's picture comes from one).
  "$BIN" history --store "$url" --svg "$CHAOS_DIR/timeline.svg" >/dev/null 2>&1 ||
    fail "$mode: history --svg failed"
  xmllint --noout "$CHAOS_DIR/timeline.svg" || fail "$mode: the timeline is not well-formed XML"
  (($(grep -c '<g class="tenure">' "$CHAOS_DIR/timeline.svg") == tenures)) ||
    fail "$mode: the timeline does not have a bar per tenure"
  if [[ -n ${CHAOS_SVG_DIR:-} ]]; then cp "$CHAOS_DIR/timeline.svg" "$CHAOS_SVG_DIR/chaos-$mode.svg"; fi
  ok "$mode: $starts cycles, $kills guards SIGKILLed, 0 overlaps, every record readable; history: $tenures tenures ($crashed ended by a successor), 0 overlaps, epochs growing"
}
