#!/usr/bin/env bash
# `run` on a three-member etcd cluster started here on loopback ports, the
# store URL naming all three members (the leader first). The member the
# holder talks to crashes: the holder renews through another member, its
# child keeps running and a second guard is refused. A second member stops,
# leaving no majority: the holder stops its child before its ttl has run
# out and exits 75, and no other guard gets in. Once the members are back, a
# new guard claims with a larger epoch. Figures for RELIABILITY.md are the
# `ok` lines.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

start_etcd_cluster c
leader=$(etcd_leader c) || fail "the cluster has no leader"
order=("$leader")
for i in 1 2 3; do ((i == leader)) || order+=("$i"); done
authority() { local i out=""; for i in "$@"; do out+="${out:+,}${ETCD_MEMBERS[$i]#http://}"; done; echo "$out"; }
store="etcd://$(authority "${order[@]}")/e2e"
others="etcd://$(authority "${order[1]}" "${order[2]}")/e2e"
# The record as a live member shows it.
renewed_at() { etcd_get "${ETCD_MEMBERS[${order[2]}]}" /e2e/instances/holder | jq -r '.renewed_at // empty'; }

# ttl 6 s: renewals every 2 s, each given 2 s to find a member that answers.
start_watched holder --log-level debug run --ttl 6s --store "$store" --id holder
holder=$LAST_PID
epoch1=$(cat "$WORK/holder.epoch")
grep -q 'etcd cluster (3 members, 3 in the store URL): a majority (2) must agree' "$WORK/holder.err" ||
  fail "the guarantee line does not name the cluster: $(grep -m1 claimed "$WORK/holder.err")"
run_guard status --store "$store"
expect_exit 0 "status on the cluster"
grep -q '^mode: exclusive (auto): .*a majority (2) must agree' "$WORK/last.out" ||
  fail "status does not name the cluster's guarantee: $(cat "$WORK/last.out")"
ok "run and status name the cluster's guarantee (a majority of 3 members)"

# The holder's member (the leader) crashes: a new leader is elected and the
# next renewal goes to another member, keeping the same lease.
before=$(renewed_at)
[[ -n $before ]] || fail "no record of the holder in etcd"
etcd_member c crash "${order[0]}"
crashed=$(now_ms)
deadline=$((crashed + 6000))
# A read fails (prints nothing) while the cluster elects a new leader.
while now=$(renewed_at); [[ -z $now || $now == "$before" ]]; do
  (($(now_ms) < deadline)) || fail "no renewal within 6 s of the member's crash: $(tail -5 "$WORK/holder.err")"
  sleep 0.05
done
renew_ms=$(($(now_ms) - crashed))
grep -q 'trying the next one' "$WORK/holder.err" || fail "the holder did not switch members: $(tail -5 "$WORK/holder.err")"
run_guard run --ttl 6s --store "$others" --id other -- bash -c 'echo other ran'
expect_exit 75 "another run while the holder holds"
[[ ! -s $WORK/last.out ]] || fail "the other guard's command ran"
running "$holder" || fail "the holder exited after one member crashed: $(cat "$WORK/holder.err")"
[[ ! -e $WORK/holder.term ]] || fail "the child was stopped after one member crashed"
! grep -q 'claim lost' "$WORK/holder.err" || fail "the claim was lost after one member crashed"
ok "member ${order[0]} (the leader) crashed: the next renewal went through another member ${renew_ms} ms after the crash (renewals every 2 s), child kept running, another run refused"

# A second member stops: one of three is left, no majority.
etcd_member c stop "${order[1]}"
stopped=$(now_ms)
expect_fenced holder "$holder" "$stopped" 6000 "losing the majority (ttl 6 s)"
ok "no majority: the child got SIGTERM after $TERM_MS ms (ttl 6 s), the holder exited 75"

run_guard run --ttl 6s --startup-timeout 4s --store "$store" --id intruder -- bash -c 'echo intruder ran'
((EXIT_CODE != 0)) || fail "a guard claimed without a majority"
[[ ! -s $WORK/last.out ]] || fail "a command ran without a majority"
ok "no majority: another run was refused (exit $EXIT_CODE) in ${ELAPSED_MS} ms"

# The members come back: the next run claims once the old lease has run out.
etcd_member c start "${order[1]}"
etcd_member c start "${order[0]}"
run_guard run --ttl 6s --wait=30s --store "$store" --id next -- bash -c 'echo "epoch=$INSTANCE_GUARD_EPOCH"'
expect_exit 0 "a run after the majority came back"
epoch2=$(sed -n 's/^epoch=//p' "$WORK/last.out")
((epoch2 > epoch1)) || fail "the epoch did not grow: $epoch1 then $epoch2"
ok "the majority came back: another run started in ${ELAPSED_MS} ms, epoch $epoch1 -> $epoch2"
