#!/usr/bin/env bash
# The multi-host fault harness (tests/hosts/README.md) for one store:
#   run.sh etcd|redis|postgres|webdav|cs3
# Two hosts (HOSTS_N) run `instance-guard run --wait` in a loop against the
# store server in its own namespace; a fault is put on the host that holds
# (or on the server), held until the fault has played out, and undone; the
# checker (hosts-check) then reads what the children really did. Per mode
# it fails on two children running at once (beyond a paused holder's last
# moments, which its smaller epoch fences), on an epoch that did not
# increase, and when a cut-off holder's child was not stopped or nobody
# took over. Then clock skew: one host under libfaketime, ahead by less
# than and by more than --max-skew, with partitions of whoever holds.
# Environment (defaults in brackets):
#   HOSTS_CYCLES   fault cycles per mode, going round its fault kinds [one round]
#   HOSTS_LONG     1: every fault kind in every mode (scripts/hosts-long.sh) [0: the
#                  test suite's share, every kind once per store, spread over the modes]
#   HOSTS_MODES    modes [verify exclusive auto]; "none": only the skew phases
#   HOSTS_FAULTS   fault kinds for every mode (overrides the above)
#   HOSTS_SKEW_CYCLES  partition cycles per skew phase [2]
#   HOSTS_SKEW     1: the skew phases, 0: not [1]
#   HOSTS_TTL      --ttl [2s]
#   HOSTS_RESULTS  a folder to keep each phase's checker report in (JSON)
#   HOSTS_KEEP     keep the scratch folder (logs, event logs)
# Exit status 0, 1 on a finding, 77 when namespaces cannot be made (1 under CI=true).
source "$(dirname "$0")/hosts_lib.sh"

STORE_KIND=${1:?usage: run.sh etcd|redis|postgres|webdav|cs3}
HOSTS_TTL=${HOSTS_TTL:-2s}
TTL_MS=$((${HOSTS_TTL%s} * 1000))
MAX_SKEW_MS=$((TTL_MS / 10))  # the guard's default --max-skew at this ttl (under 5 s)
MODES=(${HOSTS_MODES:-verify exclusive auto})
N=${HOSTS_N:-2}
ALL_FAULTS=(partition oneway delay stall pause reset restart)
# The test suite's share: every fault kind once per store, spread over the modes.
declare -A SUITE_FAULTS=([verify]="partition pause restart" [exclusive]="oneway stall reset"
  [auto]="delay partition")
FAULTLOG=$WORK/faults.txt

case $STORE_KIND in
etcd | redis | postgres | webdav | cs3) ;;
*) fail "unknown store $STORE_KIND: etcd, redis, postgres, webdav or cs3" ;;
esac
hosts_require
hosts_make "$N"

# The server, in the server namespace; SERVER_PORTS are what the hosts reach.
port=$((20000 + RANDOM % 20000))
case $STORE_KIND in
etcd) start_store etcd etcd.sh "$port"; SERVER=(etcd etcd.sh) ;;
redis) start_store redis redis.sh "$port"; SERVER=(redis redis.sh) ;;
postgres) start_store postgres postgres.sh "$port"; SERVER=(postgres postgres.sh) ;;
webdav) start_store lighttpd lighttpd.sh "$port"; SERVER=(lighttpd lighttpd.sh) ;;
cs3)
  start_store cs3 cs3.sh 0 CS3_GATEWAY_DOUBLE="${CS3_GATEWAY_DOUBLE:-$(dirname "$BIN")/cs3-gateway-double}" \
    INSTANCE_GUARD_BIN="$BIN"
  SERVER=(cs3 cs3.sh)
  export INSTANCE_GUARD_CS3_ID=guard-sa INSTANCE_GUARD_CS3_SECRET_FILE=$WORK/cs3/secret
  ;;
esac
server_ports() {
  if [[ $STORE_KIND == cs3 ]]; then
    local grpc http _
    read -r grpc http _ <"$WORK/cs3/ports"
    echo "${grpc#grpc_port=} ${http#http_port=}"
  else
    echo "$port"
  fi
}
# shellcheck disable=SC2046
hosts_connect $(server_ports)
case $STORE_KIND in
etcd) BASE_URL=etcd://${STORE_URL#http://} ;;
webdav) BASE_URL=webdav://${STORE_URL#http://} ;;
postgres) BASE_URL=$STORE_URL/guard ;;
*) BASE_URL=$STORE_URL ;;
esac

# store_url MODE: a key space of its own per phase, so epochs start afresh.
store_url() {
  case $STORE_KIND in
  etcd | webdav | cs3) echo "$BASE_URL/hosts-$1" ;;
  redis) echo "$BASE_URL/0?prefix=hosts-$1" ;;
  postgres) echo "$BASE_URL?table=hosts_${1//-/_}" ;;
  esac
}

# --- faults -----------------------------------------------------------------
nft_in() { ip netns exec "$TAG-$1" nft "${@:2}"; }
apply_fault() {
  local fault=$1 h=$2
  case $fault in
  partition)
    nft_in "$h" add rule inet fault out oifname eth0 drop
    nft_in "$h" add rule inet fault in iifname eth0 drop
    ;;
  oneway) nft_in "$h" add rule inet fault out oifname eth0 drop ;;
  delay) proxy "$h" "delay $TTL_MS" ;;
  stall) proxy "$h" stall ;;
  reset) proxy "$h" reset ;;
  pause)
    # shellcheck disable=SC2046
    kill -STOP $(host_pids "$h") 2>/dev/null || true
    event pause "$h" -
    return
    ;;
  restart) ;;
  esac
  if [[ $fault == restart ]]; then
    event fault '*' restart
    ip netns exec "$NS_SRV" bash "$SERVERS/${SERVER[1]}" stop "$WORK/${SERVER[0]}" >/dev/null 2>&1
    start_store "${SERVER[0]}" "${SERVER[1]}" "$port"
  else
    event fault "$h" "$fault"
  fi
}
heal_fault() {
  local fault=$1 h=$2 pids
  case $fault in
  partition | oneway)
    nft_in "$h" flush chain inet fault out
    nft_in "$h" flush chain inet fault in
    ;;
  delay | stall | reset) proxy "$h" pass ;;
  pause)
    pids=$(host_pids "$h")
    event resume "$h" -
    # shellcheck disable=SC2086
    kill -CONT $pids 2>/dev/null || true
    return
    ;;
  restart) event heal '*' restart; return ;;
  esac
  event heal "$h" "$fault"
}

# A fault that cuts the holder off (a successor must take over) or one it
# must ride out (it keeps renewing).
cuts_off() { [[ $1 != reset && $1 != restart ]]; }
# After a fault on $1 (the log had $2 lines): its guard exited, or one child runs.
settled() { exited_since "$1" "$2" || (($(holders | wc -l) == 1)); }
exited_since() { tail -n +"$(($2 + 1))" "$EVENTS" | awk -v h="$1" '$2 == "exit" && $3 == h { f = 1 } END { exit !f }'; }

# diagnose: the last events and each host's last guard log lines, on stderr.
diagnose() {
  local h
  {
    echo "last events:"
    tail -6 "$EVENTS"
    for h in "${HOSTS[@]}"; do
      echo "$h's guard ($(cat "$WORK/$h.log")):"
      tail -4 "$(cat "$WORK/$h.log")" 2>/dev/null | cut -c1-300
      echo "$h's processes: $(host_pids "$h" | tr '\n' ' ')"
    done
  } >&2
}

# run_cycle FAULT: one fault on the holder (or the server), played out, undone.
run_cycle() {
  local fault=$1 h lines r
  wait_until 30 pick_holder || { diagnose; fail "$PHASE: no holder within 30 s"; }
  h=$PICKED
  lines=$(wc -l <"$EVENTS")
  if cuts_off "$fault"; then
    apply_fault "$fault" "$h"
    # A successor waits out the ttl; 4 ttl and 10 s more is far past it.
    wait_until $((TTL_MS * 4 / 1000 + 10)) successor_started "$h" "$lines" ||
      echo "note: $PHASE: $fault on $h: no successor within the bound" >>"$FAULTLOG"
    heal_fault "$fault" "$h"
    wait_until 15 settled "$h" "$lines" ||
      echo "note: $PHASE: $fault on $h: still two holders 15 s after the fault was undone" >>"$FAULTLOG"
  else
    r=$(renewals "$h")
    apply_fault "$fault" "$h"
    heal_fault "$fault" "$h"
    wait_until $((TTL_MS * 3 / 1000 + 5)) renewed_since "$h" "$r" ||
      echo "note: $PHASE: $fault: the holder on $h did not renew afterwards" >>"$FAULTLOG"
  fi
}

# run_phase NAME MODE FAULT...: host loops on NAME's key space in MODE,
# $PHASE_CYCLES fault cycles going round the FAULTs, the loops stopped; then the checker (extra arguments
# in CHECK_ARGS). Its verdict in $CHECK_STATUS, its JSON in $WORK/NAME.json.
run_phase() {
  local name=$1 mode=$2 h pid c fault url
  shift 2
  PHASE="$STORE_KIND/$name"
  PHASE_NAME=$name
  EVENTS=$WORK/$name.events
  export HOSTS_EVENTS=$EVENTS
  : >"$EVENTS"
  rm -f "$WORK/stop"
  url=$(store_url "$name")
  local loops=()
  for h in "${HOSTS[@]}"; do
    host_loop "$h" "$mode" "$url" &
    loops+=("$!")
    BG_PIDS+=("$!")
  done
  local faults=("$@") cycles=${PHASE_CYCLES:-$#}
  for ((c = 0; c < cycles; c++)); do run_cycle "${faults[c % ${#faults[@]}]}"; done
  touch "$WORK/stop"
  event end '*' -
  for h in "${HOSTS[@]}"; do
    for pid in $(host_pids "$h"); do kill -CONT "$pid" 2>/dev/null || true; done
    for pid in $(host_guard "$h"); do kill -TERM "$pid" 2>/dev/null || true; done
  done
  local deadline=$(($(now_ms) + 20000))
  for pid in "${loops[@]}"; do
    while kill -0 "$pid" 2>/dev/null && (($(now_ms) < deadline)); do sleep 0.05; done
    kill -0 "$pid" 2>/dev/null && fail "$PHASE: a host loop did not end within 20 s"
    wait "$pid" 2>/dev/null || true
  done
  CHECK_STATUS=0
  "$HOSTS_CHECK" "$EVENTS" --json "$WORK/$name.json" "${CHECK_ARGS[@]}" >"$WORK/$name.check" ||
    CHECK_STATUS=$?
  sed "s|^|  $PHASE: |" "$WORK/$name.check" | grep -v '^  [^:]*: fault .*not the holder$' || true
  if [[ -n ${HOSTS_RESULTS:-} ]]; then
    mkdir -p "$HOSTS_RESULTS"
    cp "$WORK/$name.json" "$HOSTS_RESULTS/$STORE_KIND-$name.json"
  fi
}

# The faults each phase of MODE runs.
faults_for() {
  if [[ -n ${HOSTS_FAULTS:-} ]]; then
    echo "$HOSTS_FAULTS"
  elif [[ ${HOSTS_LONG:-0} == 1 ]]; then
    echo "${ALL_FAULTS[*]}"
  else
    echo "${SUITE_FAULTS[$1]}"
  fi
}
without_restart() { local f; for f in "$@"; do [[ $f == restart ]] || echo "$f"; done; }

# Every cut-off holder was fenced, and someone took over.
expect_resolved() {
  local unresolved
  unresolved=$(jq '[.faults[] | select(.hit_holder and .fault != "reset" and .fault != "restart"
    and (.fenced_ms == null or .takeover_ms == null))] | length' "$WORK/$1.json")
  ((unresolved == 0)) || fail "$PHASE: $unresolved cut-off holders were not fenced or not succeeded"
}

[[ ${MODES[*]} != none ]] || MODES=()
for mode in "${MODES[@]}"; do
  # shellcheck disable=SC2046
  faults=($(faults_for "$mode"))
  # The CS3 double picks new ports when restarted: no restart there.
  [[ $STORE_KIND != cs3 ]] || faults=($(without_restart "${faults[@]}"))
  CHECK_ARGS=(--max-pause-overlap 1000)
  PHASE_CYCLES=${HOSTS_CYCLES:-${#faults[@]}}
  run_phase "$mode" "$mode" "${faults[@]}"
  ((CHECK_STATUS == 0)) || fail "$PHASE: the checker found children running at once or an epoch that did not increase"
  expect_resolved "$mode"
  ok "$PHASE: $(jq -r '"\(.children) children, \(.overlaps) overlaps, \(.epoch_regressions) epoch regressions"' "$WORK/$mode.json") in $PHASE_CYCLES fault cycles ($(jq -r '[.by_fault | to_entries[] | "\(.key) \(.value.cycles)"] | join(", ")' "$WORK/$mode.json"))"
done

# Clock skew: h2's guard under libfaketime (its wall clock only: monotonic
# time stays true, as after a wrong NTP step), partitions of whoever holds,
# so h2 is in turn the standby judging h1's record and the holder whose
# record h1 judges.
FAKETIME_LIB=""
for lib in /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 /usr/lib/*/faketime/libfaketimeMT.so.1; do
  [[ -f $lib ]] && FAKETIME_LIB=$lib && break
done
if [[ ${HOSTS_SKEW:-1} == 1 && -z $FAKETIME_LIB ]]; then
  [[ ${CI:-} != true ]] || fail "libfaketime is missing (Debian package libfaketime; scripts/deps.sh)"
  echo "SKIP (skew phases): libfaketime is missing (Debian package libfaketime; scripts/deps.sh)"
elif [[ ${HOSTS_SKEW:-1} == 1 ]]; then
  CLOCK_WARNING="warn: the [^;]*'s clock"
  skew_phase() {  # NAME MODE OFFSET_MS
    local name=$1 mode=$2 offset_ms=$3 sign=+ c
    ((offset_ms >= 0)) || sign=-
    local abs=${offset_ms#-}
    export HOSTS_ENV_h2="LD_PRELOAD=$FAKETIME_LIB FAKETIME=$sign$((abs / 1000)).$(printf %03d $((abs % 1000))) FAKETIME_DONT_FAKE_MONOTONIC=1"
    CHECK_ARGS=(--max-pause-overlap 0)
    PHASE_CYCLES=${HOSTS_SKEW_CYCLES:-2}
    run_phase "$name" "$mode" partition
    unset HOSTS_ENV_h2
  }
  # Less than --max-skew: nothing may change (the suite runs it in verify,
  # where each guard's own clock judges expiry; the long run in both).
  small_modes=(verify)
  [[ ${HOSTS_LONG:-0} != 1 ]] || small_modes=(verify exclusive)
  for mode in "${small_modes[@]}"; do
    skew_phase "skew-small-$mode" "$mode" $((MAX_SKEW_MS / 2))
    ((CHECK_STATUS == 0)) || fail "$PHASE: h2 $((MAX_SKEW_MS / 2)) ms ahead (under --max-skew) broke exclusion"
    # Redis and PostgreSQL ask the server for its time; WebDAV, etcd and CS3
    # read a reply's Date, which has whole seconds, may be cached by the server
    # and is stale when the reply was held up (a partition): a warning there
    # under the allowed skew is counted, not failed (RELIABILITY.md).
    false_warnings=$(cat "$WORK/skew-small-$mode".h2.*.err | grep -c "$CLOCK_WARNING" || true)
    if [[ $STORE_KIND == redis || $STORE_KIND == postgres ]]; then
      ((false_warnings == 0)) || fail "$PHASE: a clock warning for a skew under the allowed one"
    elif ((false_warnings > 0)); then
      echo "note: $PHASE: $false_warnings clock warnings for a skew of $((MAX_SKEW_MS / 2)) ms (under the allowed $MAX_SKEW_MS ms)" >>"$FAULTLOG"
    fi
    ok "$PHASE: h2 $((MAX_SKEW_MS / 2)) ms ahead: $(jq -r '"\(.overlaps) overlaps"' "$WORK/skew-small-$mode.json")"
  done
  # More than --max-skew (3/4 ttl ahead or behind): the server-clock stores'
  # exclusive mode is immune; verify (record expiry on each guard's own
  # clock) is not, and with h2 ahead the checker must see it. Behind, h2's
  # own records and (CS3) lock expirations are early for everyone else.
  # verify ahead runs 3/2 ttl ahead: h2 then judges every record of h1's
  # expired as soon as it is written and claims beside a running holder, so
  # the overlap the checker must see happens in every phase. At 3/4 ttl it
  # needed a standby's poll to land in the last twelfth of a renewal period,
  # or a cut-off holder to be slower to stop than the standby to start: in
  # two cycles, a coin toss once the stores' request timeouts followed the
  # ttl (the holder stops about 1 s after a partition).
  big=$((TTL_MS * 3 / 4))
  large=("ahead verify" "ahead exclusive" "behind exclusive")
  [[ ${HOSTS_LONG:-0} != 1 ]] || large+=("behind verify")
  for phase in "${large[@]}"; do
    read -r direction mode <<<"$phase"
    name=skew-$direction-$mode
    offset=$big
    [[ $direction$mode != aheadverify ]] || offset=$((TTL_MS * 3 / 2))
    [[ $direction == ahead ]] || offset=-$big
    skew_phase "$name" "$mode" "$offset"
    overlaps=$(jq .overlaps "$WORK/$name.json")
    if [[ $mode == exclusive && $STORE_KIND =~ ^(etcd|redis|postgres)$ ]]; then
      ((CHECK_STATUS == 0)) || fail "$PHASE: the server's clock should make exclusive immune to skew"
      ok "$PHASE: h2 $big ms $direction: $overlaps overlaps (the server's clock judges expiry)"
    elif [[ $direction == ahead && $mode == verify ]]; then
      # The standby 3/2 ttl ahead sees the holder's records expired as they
      # are written: the checker must see two children at once.
      ((overlaps > 0)) || fail "$PHASE: h2 $offset ms ahead in verify, yet no overlap: the checker missed it"
      ok "$PHASE: h2 $offset ms ahead (past --max-skew): $overlaps overlaps, as expected (the guards' own clocks judge expiry)"
    else
      ok "$PHASE: h2 $big ms $direction (past --max-skew): $overlaps overlaps"
    fi
    # What the guard says about it: every store sees the server's clock
    # (WebDAV, etcd and CS3 in the Date header, Redis and PostgreSQL from the
    # server) and warns.
    warned=$(cat "$WORK/$name".h2.*.err | grep -c "$CLOCK_WARNING" || true)
    ((warned > 0)) || fail "$PHASE: the guard ${offset#-} ms $direction never warned about its clock"
    ok "$PHASE: the skewed guard warned: $(cat "$WORK/$name".h2.*.err |
      grep -m1 "$CLOCK_WARNING" | sed 's/.* warn: //' | cut -c1-110)..."
  done
fi
[[ ! -s $FAULTLOG ]] || cat "$FAULTLOG"
