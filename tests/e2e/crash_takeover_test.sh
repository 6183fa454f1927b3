#!/usr/bin/env bash
# A guard killed with SIGKILL takes its child with it (PR_SET_PDEATHSIG).
# Seen from another host, its record keeps others out until the ttl runs out;
# then the next starts. On the same host, its dead pid makes it stale at once.
source "$(dirname "$0")/lib.sh"

# Part 1: the first guard runs under another host name (a UTS namespace), so
# the second cannot tell that its process is gone and must wait out the ttl.
# In --mode verify: the records decide. (In auto, which is exclusive on a local
# directory, the claim is also an OFD lock that the kernel drops when the
# holder dies, so the next guard would start at once.)
unshare -u true 2>/dev/null || { echo "SKIP: needs unshare -u (root)"; exit 0; }
set -m
unshare -u bash -c 'hostname other-host && exec "$0" "$@"' "$BIN" run --store "$STORE" \
  --mode verify --ttl 2s --id first -- bash -c "$(sleeper first)" >"$WORK/first.out" 2>"$WORK/first.err" &
first=$!
set +m
BG_PIDS+=("$first")
wait_until 5 test -f "$WORK/first.started" || fail "the first guard's child did not start"
read -r child _ <"$WORK/first.started"
running "$child" || fail "child $child is not running"

killed_at=$(now_ms)
kill -KILL "$first"
wait_exit "$first" 5
wait_until 2 not_running "$child" || fail "the child $child outlived its SIGKILLed guard"
ok "the child died $(($(now_ms) - killed_at)) ms after its guard was killed"

run_guard run --store "$STORE" --mode verify --ttl 2s --id second -- true
expect_exit 75 "a run while the dead guard's record is still live"
ok "refused while the record is live"

second_ran() {
  "$BIN" run --store "$STORE" --mode verify --ttl 2s --id second -- true 2>"$WORK/last.err"
}
wait_until 6 second_ran || fail "no takeover within 6 s of a 2 s ttl"
takeover_ms=$(($(now_ms) - killed_at))
((takeover_ms >= 1000)) || fail "took over after ${takeover_ms} ms, before the 2 s record could expire"
[[ ! -e $STORE/instances/first ]] || fail "the expired record of first was not deleted"
ok "took over ${takeover_ms} ms after the SIGKILL (ttl 2s); the expired record was deleted"

# Part 2: same host. The dead guard's record names this host, its boot and a
# pid that no longer exists: the next guard starts at once.
start_guard third run --store "$STORE" --ttl 1m --id third -- bash -c "$(sleeper third)"
third=$LAST_PID
wait_until 5 test -f "$WORK/third.started" || fail "the third guard's child did not start"
killed_at=$(now_ms)
kill -KILL "$third"
wait_exit "$third" 5
run_guard run --store "$STORE" --ttl 1m --id fourth -- true
expect_exit 0 "a run after a same-host guard died"
took=$(($(now_ms) - killed_at))
# The record was live for another minute; the guard removed it because its
# process is gone, and says so. The bound is the ttl's, not a speed target:
# under a sanitizer on a loaded machine, starting the guard alone can take a
# second (it took 1115 ms once in CI), and the alternative is waiting 60 s.
grep -q 'removed a stale record key=instances/third' "$WORK/last.err" ||
  fail "the dead holder's record was not removed as stale: $(cat "$WORK/last.err")"
((ELAPSED_MS < 10000)) || fail "the same-host takeover ran ${ELAPSED_MS} ms, as if it waited on the 1m ttl"
ok "same host: took over ${took} ms after the SIGKILL (the run itself ${ELAPSED_MS} ms), without waiting for the 1m ttl"

# Part 3: same host, but the dead guard's child had started a process of its
# own (a grandchild: PDEATHSIG does not reach it). While it runs, the old
# instance still works on the state, so its record stays live although the
# guard's pid is gone (the liveness lock the grandchild inherited); once it
# ends, the next guard starts at once.
start_guard fifth run --store "$STORE" --mode verify --ttl 1m --id fifth -- \
  bash -c 'sleep 60 & echo $! >"$0/fifth.grandchild"; wait' "$WORK"
fifth=$LAST_PID
wait_until 5 test -s "$WORK/fifth.grandchild" || fail "the fifth guard's child did not start"
grandchild=$(cat "$WORK/fifth.grandchild")
BG_PIDS+=("$grandchild")
kill -KILL "$fifth"
wait_exit "$fifth" 5
running "$grandchild" || fail "the grandchild $grandchild did not outlive its guard"
run_guard run --store "$STORE" --mode verify --ttl 1m --id sixth -- true
expect_exit 75 "a run while a process the dead guard started still runs"
ok "refused while the dead guard's grandchild runs"
kill -KILL "$grandchild"
wait_until 2 not_running "$grandchild" || fail "the grandchild $grandchild did not die"
killed_at=$(now_ms)
run_guard run --store "$STORE" --mode verify --ttl 1m --id sixth -- true
expect_exit 0 "a run once the dead guard's last process ended"
ok "took over $(($(now_ms) - killed_at)) ms after the grandchild ended, without waiting for the 1m ttl"
