#!/usr/bin/env bash
# --mode: each mode runs the child and the "claimed" line (at the default log
# level) names it; exclusive (and auto, which is exclusive on the directory
# store) hands the child INSTANCE_GUARD_EPOCH, growing with every run; an
# unknown mode is a usage error (64), also from INSTANCE_GUARD_MODE (78).
source "$(dirname "$0")/lib.sh"

child='echo "epoch=${INSTANCE_GUARD_EPOCH:-none} id=$INSTANCE_GUARD_ID"'
for mode in announce verify exclusive auto; do
  run_guard run --store "$STORE" --mode "$mode" -- bash -c "$child"
  expect_exit 0 "--mode $mode"
  want=$mode
  [[ $mode == auto ]] && want=exclusive
  grep -q "info: claimed .*mode=$want " "$WORK/last.err" || fail "--mode $mode: no claimed line naming mode=$want: $(cat "$WORK/last.err")"
  grep -q 'guarantee=' "$WORK/last.err" || fail "--mode $mode: the claimed line gives no guarantee"
  reason=requested
  [[ $mode == auto ]] && reason='"the store has its own locks"'
  grep -q "info: claimed .*requested=$mode mode_reason=$reason" "$WORK/last.err" ||
    fail "--mode $mode: the claimed line does not say why the mode runs: $(cat "$WORK/last.err")"
  grep -q '^epoch=' "$WORK/last.out" || fail "--mode $mode: the child did not run"
done
ok "announce, verify, exclusive and auto run the child and log their mode"

run_guard run --store "$STORE" --mode announce -- bash -c "$child"
grep -q '^epoch=none ' "$WORK/last.out" || fail "announce gave an epoch: $(cat "$WORK/last.out")"

epochs=()
for mode in exclusive auto exclusive; do
  run_guard run --store "$STORE" --mode "$mode" -- bash -c "$child"
  expect_exit 0 "--mode $mode (epoch)"
  epoch=$(sed -n 's/^epoch=\([0-9][0-9]*\) .*/\1/p' "$WORK/last.out")
  [[ -n $epoch ]] || fail "--mode $mode: no INSTANCE_GUARD_EPOCH: $(cat "$WORK/last.out")"
  epochs+=("$epoch")
done
((epochs[1] == epochs[0] + 1 && epochs[2] == epochs[1] + 1)) || fail "epochs do not grow by one: ${epochs[*]}"
ok "INSTANCE_GUARD_EPOCH grows across runs: ${epochs[*]}"

INSTANCE_GUARD_MODE=exclusive run_guard run --store "$STORE" -- bash -c "$child"
expect_exit 0 "INSTANCE_GUARD_MODE=exclusive"
grep -q 'mode=exclusive ' "$WORK/last.err" || fail "INSTANCE_GUARD_MODE not used"

run_guard run --store "$STORE" --mode bogus -- bash -c "$child"
expect_exit 64 "--mode bogus"
[[ ! -s $WORK/last.out ]] || fail "the child ran with a bad --mode"
INSTANCE_GUARD_MODE=bogus run_guard run --store "$STORE" -- bash -c "$child"
expect_exit 78 "INSTANCE_GUARD_MODE=bogus"
ok "an unknown mode exits 64 (flag) or 78 (environment) without running the child"

run_guard status --store "$STORE" --mode verify
expect_exit 0 "status --mode verify"
grep -q '^mode: verify: ' "$WORK/last.out" || fail "status does not say the mode: $(cat "$WORK/last.out")"
grep -q '^expiry judged by: client clocks' "$WORK/last.out" || fail "status does not say whose clock judges verify: $(cat "$WORK/last.out")"
run_guard status --store "$STORE"
grep -q '^mode: exclusive (auto): ' "$WORK/last.out" || fail "status does not say auto's mode: $(cat "$WORK/last.out")"
grep -q '^chosen because: the store has its own locks$' "$WORK/last.out" || fail "status does not say why: $(cat "$WORK/last.out")"
grep -q "^expiry judged by: the store's lock" "$WORK/last.out" || fail "status does not say the directory's lock decides: $(cat "$WORK/last.out")"
ok "status says which mode and guarantee are in force, and whose clock judges expiry"

# verify under contention: five guards started at once, five rounds. Each
# child holds for 300 ms and notes its start and end; in every round at least
# one runs, and no two overlap. The others exit 75 naming a holder that ran.
race_store=$WORK/race-store
for round in 1 2 3 4 5; do
  pids=()
  for g in 1 2 3 4 5; do
    "$BIN" run --store "$race_store" --mode verify --id "r$round-g$g" -- \
      bash -c "echo \"start \$(date +%s%N) $g\" >>\"$WORK/round$round\"; sleep 0.3; echo \"end \$(date +%s%N) $g\" >>\"$WORK/round$round\"" \
      >/dev/null 2>"$WORK/round$round-g$g.err" &
    pids+=($!)
    BG_PIDS+=($!)
  done
  ran=0
  refusals=()
  for i in "${!pids[@]}"; do
    rc=0
    wait "${pids[$i]}" || rc=$?
    if ((rc == 0)); then
      ran=$((ran + 1))
    elif ((rc == 75)); then
      holder=$(grep -o 'holder_id=r[0-9]*-g[0-9]*' "$WORK/round$round-g$((i + 1)).err" | head -1 | cut -d= -f2)
      [[ -n $holder ]] || fail "round $round: a refusal names no holder: $(cat "$WORK/round$round-g$((i + 1)).err")"
      refusals+=("${holder##*-g}")
    else
      fail "round $round: guard $((i + 1)) exited $rc: $(cat "$WORK/round$round-g$((i + 1)).err")"
    fi
  done
  ((ran >= 1)) || fail "round $round: nobody ran"
  for g in "${refusals[@]}"; do
    grep -qE "^start [0-9]+ $g\$" "$WORK/round$round" || fail "round $round: a refusal named g$g, which never ran"
  done
  # No overlap: sorted by time, starts and ends alternate.
  sort -k2,2n "$WORK/round$round" | awk '{print $1}' | paste -sd' ' |
    grep -qxE '(start end ?)+' || fail "round $round: two children overlapped: $(sort -k2,2n "$WORK/round$round")"
done
ok "verify: five guards started at once, five rounds: someone ran in every round, never two at once"
