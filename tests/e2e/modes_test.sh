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
grep -q "^expiry judged by: the store's lock" "$WORK/last.out" || fail "status does not say the directory's lock decides: $(cat "$WORK/last.out")"
ok "status says which mode and guarantee are in force, and whose clock judges expiry"
