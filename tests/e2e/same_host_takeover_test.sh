#!/usr/bin/env bash
# A holder SIGKILLed on this host, in exclusive mode at the default ttl (2m),
# on the stores whose lock lasts its ttl whoever holds it: etcd, Redis,
# PostgreSQL and CS3 (the gateway double). The store would keep the dead
# holder's lock for two minutes; the lease document names a process on this
# host that is gone (its liveness lock free), so the successor, already
# waiting with --wait, ends that lock by its exact token and starts at once.
# The bound asserted is the ttl's, not a speed target (the benchmark
# measures it); the time taken is reported.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_lib.sh"
source "$(dirname "$0")/etcd_lib.sh"
source "$(dirname "$0")/postgres_lib.sh"
trap 'stop_all_redis; stop_all_etcd; pg_stop; cleanup' EXIT

# takeover NAME URL: a holds, b waits, a is SIGKILLed; b must start well
# within the 2m ttl and say whose lock it ended.
takeover() {
  local name=$1 url=$2
  start_guard "$name-a" run --store "$url" --mode exclusive --id "$name-a" -- bash -c "$(sleeper "$name-a")"
  local a=$LAST_PID
  wait_until 15 test -f "$WORK/$name-a.started" || fail "$name: the holder's child did not start: $(cat "$WORK/$name-a.err")"
  read -r child _ <"$WORK/$name-a.started"
  start_guard "$name-b" run --wait --store "$url" --mode exclusive --id "$name-b" -- bash -c "$(sleeper "$name-b")"
  local b=$LAST_PID
  wait_until 15 grep -q 'waiting for the holder' "$WORK/$name-b.err" ||
    fail "$name: the successor did not wait: $(cat "$WORK/$name-b.err")"
  local killed_at
  killed_at=$(now_ms)
  kill -KILL "$a"
  wait_exit "$a" 5
  wait_until 20 test -f "$WORK/$name-b.started" ||
    fail "$name: no take-over within 20 s of the SIGKILL (the ttl is 2m): $(tail -3 "$WORK/$name-b.err")"
  local took=$(($(now_ms) - killed_at))
  not_running "$child" || fail "$name: the dead holder's child $child still runs beside its successor"
  grep -q "ended the store's lock of a holder whose process on this host is gone.*holder=$name-a" "$WORK/$name-b.err" ||
    fail "$name: the successor did not say it ended the dead holder's lock: $(cat "$WORK/$name-b.err")"
  kill -TERM "$b"
  wait_exit "$b" 15
  ok "$name: a successor waiting on this host started ${took} ms after the holder's SIGKILL (ttl 2m)"
}

start_redis takeover
takeover redis "$REDIS_URL/0?prefix=takeover:"
start_etcd takeover
takeover etcd "etcd://127.0.0.1:$ETCD_PORT/takeover"
pg_start
takeover postgres "$PG_URL?table=takeover"

DOUBLE=${CS3_GATEWAY_DOUBLE:-$(dirname "$BIN")/cs3-gateway-double}
if [[ -x $DOUBLE ]]; then
  printf '%s\n' 'e2e-Takeover-Secret-7' >"$WORK/secret"
  mkdir -p "$WORK/cs3"
  "$DOUBLE" --root "$WORK/cs3" --client-id guard-sa --secret-file "$WORK/secret" \
    >"$WORK/double.out" 2>"$WORK/double.err" &
  BG_PIDS+=("$!")
  wait_until 10 grep -q '^grpc_port=' "$WORK/double.out" ||
    fail "the gateway double did not start: $(cat "$WORK/double.err")"
  read -r grpc _ space <"$WORK/double.out"
  export INSTANCE_GUARD_CS3_ID=guard-sa INSTANCE_GUARD_CS3_SECRET_FILE=$WORK/secret
  takeover cs3 "cs3://127.0.0.1:${grpc#grpc_port=}/${space#space=}/takeover"
else
  echo "SKIP (cs3 part): $DOUBLE not built"
fi
