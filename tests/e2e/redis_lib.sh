# Helpers for e2e tests that need a loopback redis-server (from
# tests/integration/servers/redis.sh). Source after lib.sh; it replaces the
# EXIT trap so the servers are stopped before the scratch folder goes.
#   start_redis NAME [PORT] [VAR=VALUE...]  starts one in $WORK/NAME (PERSIST=aof
#                                           by default; PERSIST=none,
#                                           REDIS_PASSWORD_FILE=...); sets
#                                           $REDIS_URL and $REDIS_PORT
#   stop_redis NAME / crash_redis NAME      SIGTERM / SIGKILL
#   rcli NAME ARGS...                       redis-cli against it (a password
#                                           file's content goes through
#                                           REDISCLI_AUTH, never argv)
#   redis_server start DIR PORT | stop DIR  redis.sh itself, but exiting 77
#                                           (not 3) when redis-server is
#                                           absent: the server contract of
#                                           bench/stores.sh
REDIS_SH=${INSTANCE_TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/integration/servers/redis.sh
REDIS_STARTED=()
declare -A REDIS_PORTS REDIS_ENV
stop_all_redis() {
  local name
  for name in "${REDIS_STARTED[@]}"; do bash "$REDIS_SH" stop "$WORK/$name" >/dev/null 2>&1 || true; done
}
trap 'stop_all_redis; cleanup' EXIT

start_redis() {
  local name=$1 port="" attempt rc
  shift
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    port=$1
    shift
  fi
  [[ $# -gt 0 ]] && REDIS_ENV[$name]="$*"
  for attempt in 1 2 3; do
    REDIS_PORT=${port:-${REDIS_PORTS[$name]:-$(free_port)}}
    rc=0
    REDIS_URL=$(env WATCH_PID=$$ ${REDIS_ENV[$name]:-} bash "$REDIS_SH" start "$WORK/$name" "$REDIS_PORT" \
      2>"$WORK/$name.start.err") || rc=$?
    if ((rc == 0)); then
      REDIS_PORTS[$name]=$REDIS_PORT
      REDIS_STARTED+=("$name")
      return 0
    fi
    ((rc == 3)) && break
  done
  cat "$WORK/$name.start.err" >&2
  fail "could not start redis-server $name (Debian package redis-server; scripts/deps.sh installs it)"
}

stop_redis() { bash "$REDIS_SH" stop "$WORK/$1" >/dev/null 2>&1; }
crash_redis() { bash "$REDIS_SH" crash "$WORK/$1" >/dev/null 2>&1; }
restart_redis() { start_redis "$1" "${REDIS_PORTS[$1]}"; }

rcli() {
  local name=$1 auth=""
  shift
  if [[ ${REDIS_ENV[$name]:-} =~ REDIS_PASSWORD_FILE=([^ ]+) ]]; then auth=$(head -n1 "${BASH_REMATCH[1]}"); fi
  (
    [[ -z $auth ]] || export REDISCLI_AUTH=$auth
    redis-cli -p "${REDIS_PORTS[$name]}" "$@"
  )
}

redis_server() {
  local rc=0
  bash "$REDIS_SH" "$@" || rc=$?
  return $((rc == 3 ? 77 : rc))
}
