#!/usr/bin/env bash
# On WebDAV servers whose locks outlive their holder (chezdav: never expire;
# sabre/dav's stock lock backend: 1800 s whatever was asked), a holder killed
# with SIGKILL keeps the store's lock; the next claim ends that lock once the
# holder's lease and record expired by more than max-skew (at --ttl 10s the
# default max-skew is 1 s), and not before. On chezdav, `status` shows the
# held lock and whether its lease expired, `release --id` ends a dead
# holder's lock (a live one's only with --force, which the live holder learns
# at its next renewal: exit 75). On both, a holder that renews is never taken
# over. Every holder runs under another host name (a UTS namespace), so no
# guard can tell that its process is gone: its lease has to expire.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"
unshare -u true 2>/dev/null || { echo "SKIP: needs unshare -u (root)"; exit 0; }

TTL_MS=10000
SKEW_MS=1000  # the default max-skew at --ttl 10s: min(5s, ttl/10)
POLL_MS=313   # --wait's longest pause: WaitOptions::poll_max (250 ms) plus its jitter (5/4)
SLACK_MS=2000 # starting a guard and its child, and the claim's requests, on a loaded machine

now_ns() { date +%s%N; }
# seconds MS: MS milliseconds as seconds with two decimals.
seconds() { printf '%d.%02d' $(($1 / 1000)) $(($1 % 1000 / 10)); }
reached() { (($(now_ms) >= $1)); }

# start_elsewhere NAME ARGS...: like start_guard, but the guard runs under the
# host name other-host, as on another machine (crash_takeover_test.sh).
start_elsewhere() {
  local name=$1
  shift
  set -m
  unshare -u bash -c 'hostname other-host && exec "$0" "$@"' "$BIN" "$@" \
    >"$WORK/$name.out" 2>"$WORK/$name.err" &
  LAST_PID=$!
  set +m
  BG_PIDS+=("$LAST_PID")
}

# start_holder NAME STORE: a holder `first` at --ttl 10s elsewhere, its child
# a sleeper; returns once the child runs. Sets $HOLDER (the guard's pid) and
# $CHILD (the child's).
start_holder() {
  local name=$1 store=$2
  start_elsewhere "$name" run --store "$store" --ttl 10s --id first -- bash -c "$(sleeper "$name")"
  HOLDER=$LAST_PID
  wait_until 10 test -f "$WORK/$name.started" ||
    fail "$name: the holder's child did not start: $(cat "$WORK/$name.err")"
  read -r CHILD _ <"$WORK/$name.started"
}

# kill_holder NAME: SIGKILLs $HOLDER; its child must die with it.
kill_holder() {
  kill -KILL "$HOLDER"
  wait_exit "$HOLDER" 5
  wait_until 2 not_running "$CHILD" || fail "$1: the child $CHILD outlived its SIGKILLed guard"
}

start_server chezdav chezdav.sh
chezdav="webdav://${URL#http://}"
start_server sabredav sabredav.sh SABRE_STOCK_LOCKS=1
sabredav="webdav://${URL#http://}"
declare -A stores=([chezdav]=$chezdav [sabredav]=$sabredav)

# 1. A killed holder's lock is ended by its successor, once the holder's
# lease (ttl) and max-skew have passed since it claimed, and no earlier.
for server in chezdav sabredav; do
  store=${stores[$server]}/killed
  t0=$(now_ns)
  start_holder "$server-killed" "$store"
  killed=$(now_ns)
  kill_holder "$server"
  start_guard "$server-second" run --store "$store" --ttl 10s --wait=40s --id second -- \
    bash -c 'date +%s%N >"$WORK/$0.tmp" && mv "$WORK/$0.tmp" "$WORK/$0"' "$server-second.started"
  second=$LAST_PID
  wait_until 30 test -f "$WORK/$server-second.started" ||
    fail "$server: the successor did not start within 30 s of the kill: $(cat "$WORK/$server-second.err")"
  started=$(cat "$WORK/$server-second.started")
  wait_exit "$second" 10
  expect_exit 0 "$server: the successor"
  after_t0=$(((started - t0) / 1000000))
  after_kill=$(((started - killed) / 1000000))
  echo "measured: $server: successor started $(seconds "$after_kill") s after the kill" \
    "($(seconds "$after_t0") s after the holder was started)"
  ((after_t0 >= TTL_MS + SKEW_MS)) || fail "$server: the successor started $after_t0 ms after" \
    "the holder, before its lease (10 s) and max-skew (1 s) could pass"
  ((after_kill <= TTL_MS + SKEW_MS + POLL_MS + SLACK_MS)) || fail "$server: the successor started" \
    "$after_kill ms after the kill, later than ttl + max-skew + one poll + ${SLACK_MS} ms"
  log=$WORK/$server-second.err
  grep -q "ended the store's lock of a holder that stopped renewing holder=first" "$log" ||
    fail "$server: the successor does not say it ended the lock: $(cat "$log")"
  grep -q 'reason="its lease and record expired"' "$log" ||
    fail "$server: the lock was not ended because the lease expired: $(cat "$log")"
  ok "$server: the killed holder's lock was ended; its successor started $after_kill ms after" \
    "the kill, $after_t0 ms after the holder"
done

# 2. status and release agree (chezdav). A killed holder: status shows its
# record expired and the lock it holds; release ends both.
store=$chezdav/admin
t0=$(now_ms)
start_holder admin-killed "$store"
kill_holder admin
wait_until 20 reached $((t0 + TTL_MS + SKEW_MS + 500)) || fail "the clock did not reach the holder's expiry"
run_guard status --store "$store"
expect_exit 0 "status beside a dead holder's lock"
grep -Eq '^first +other-host .* expired$' "$WORK/last.out" ||
  fail "status does not list first as expired: $(cat "$WORK/last.out")"
grep -q '^store lock: held by first, its lease expired' "$WORK/last.out" ||
  fail "status does not show the dead holder's lock: $(cat "$WORK/last.out")"
ok "status lists the dead holder's record as expired and its lock as held, its lease expired"
run_guard release --store "$store" --id first
expect_exit 0 "release of the dead holder"
grep -q 'released id=first' "$WORK/last.err" ||
  fail "release does not say it released: $(cat "$WORK/last.err")"
grep -q 'lock="ended' "$WORK/last.err" ||
  fail "release does not say it ended the lock: $(cat "$WORK/last.err")"
[[ ! -e $WORK/chezdav/root/admin/instances/first ]] || fail "release left the record of first"
run_guard run --store "$store" --ttl 10s --id third -- true
expect_exit 0 "a run after the dead holder was released"
ok "release removed the dead holder's record and ended its lock;" \
  "the next run started at once (${ELAPSED_MS} ms)"

# A live holder: release refuses; --force ends its lock, and the holder finds
# out at its next renewal (ttl/3), losing its claim.
start_holder admin-live "$store"
run_guard status --store "$store"
grep -q '^store lock: held by first, its lease live until' "$WORK/last.out" ||
  fail "status does not show the live holder's lock: $(cat "$WORK/last.out")"
run_guard release --store "$store" --id first
expect_exit 75 "release of a live holder without --force"
grep -q -- '--force' "$WORK/last.err" || fail "the refusal does not mention --force: $(cat "$WORK/last.err")"
run_guard run --store "$store" --ttl 10s --id third -- true
expect_exit 75 "a run after release refused"
ok "release of a live holder is refused (75) and the holder keeps the store"
run_guard release --store "$store" --id first --force
expect_exit 0 "release --force of a live holder"
grep -q 'lock="ended' "$WORK/last.err" ||
  fail "release --force does not say it ended the lock: $(cat "$WORK/last.err")"
forced=$(now_ms)
run_guard run --store "$store" --ttl 10s --id third -- true
expect_exit 0 "a run after release --force"
wait_exit "$HOLDER" 7
[[ $EXIT_CODE == 75 ]] ||
  fail "the forced-out holder exited $EXIT_CODE, expected 75: $(cat "$WORK/admin-live.err")"
grep -q 'claim lost; stopping the child' "$WORK/admin-live.err" ||
  fail "the forced-out holder does not say it lost its claim: $(cat "$WORK/admin-live.err")"
ok "release --force ended the live holder's lock, the next run started, and the holder lost" \
  "its claim (75) $(($(now_ms) - forced)) ms later"

# 3. A holder that renews is never taken over: a second run, every 3 s for
# 25 s (past two ttls of 10 s), is refused each time on both servers.
declare -A holders=()
t0=$(now_ms)
for server in chezdav sabredav; do
  start_holder "$server-live" "${stores[$server]}/live"
  holders[$server]=$HOLDER
done
for round in $(seq 0 8); do
  wait_until 10 reached $((t0 + round * 3000)) || fail "the clock did not reach round $round"
  for server in chezdav sabredav; do
    run_guard run --store "${stores[$server]}/live" --ttl 10s --id intruder -- bash -c 'echo intruder ran'
    expect_exit 75 "$server: round $round, a run beside a renewing holder"
    [[ ! -s $WORK/last.out ]] || fail "$server: round $round: the intruder's command ran"
  done
done
for server in chezdav sabredav; do
  running "${holders[$server]}" ||
    fail "$server: the renewing holder stopped: $(cat "$WORK/$server-live.err")"
  expires=$(jq -r .expires_at "$WORK/$server/root/live/instances/first")
  (($(date -d "$expires" +%s%3N) > t0 + 2 * TTL_MS)) ||
    fail "$server: the holder's record expires at $expires: it did not renew"
  kill -TERM "${holders[$server]}"
  wait_exit "${holders[$server]}" 10
  [[ $EXIT_CODE == 143 ]] || fail "$server: the holder exited $EXIT_CODE, expected 143"
  ok "$server: a renewing holder was never taken over (9 runs over $(seconds $(($(now_ms) - t0))) s refused)"
done
